//! Work the service does on a clock while it runs (sweeps, retention,
//! refresh schedules): each area hands [`Schedule`]s to the composition
//! root, and [`run`] drives them all, so no area writes its own tick and
//! cancel loop. Work that outlives a tick is a job: a schedule's tick
//! usually only enqueues. Several processes on one database run a shared
//! schedule's tick once per period between them (a lease per schedule);
//! a per-process schedule (in-memory upkeep) runs in each.

use std::fmt::Display;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use cairn_core::db::Db;

type Tick = Box<dyn FnMut() -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send>;

/// A task run every `every` until the service stops.
pub struct Schedule {
    name: &'static str,
    every: Duration,
    first_after: Duration,
    tick: Tick,
    /// Once per period across processes (the default), or in each.
    shared: bool,
}

/// Where shared schedules take their leases: the database every process
/// uses, and this process's name.
#[derive(Clone)]
pub struct Leases {
    pub db: Db,
    pub holder: String,
}

impl Schedule {
    /// Runs `tick` at start and then every `every`. A failed tick is
    /// logged with `name` and the next one comes as planned.
    pub fn every<F, Fut, E>(name: &'static str, every: Duration, mut tick: F) -> Schedule
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), E>> + Send + 'static,
        E: Display,
    {
        Schedule {
            name,
            every: every.max(Duration::from_millis(1)),
            first_after: Duration::ZERO,
            shared: true,
            tick: Box::new(move || {
                let run = tick();
                Box::pin(async move { run.await.map_err(|err| err.to_string()) })
            }),
        }
    }

    /// The first tick comes after `delay` instead of at start.
    pub fn first_after(mut self, delay: Duration) -> Schedule {
        self.first_after = delay;
        self
    }

    /// Runs in every process (upkeep of this process's own memory) rather
    /// than once per period across processes.
    pub fn per_process(mut self) -> Schedule {
        self.shared = false;
        self
    }

    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// Drives every schedule, each on a task of its own, until `shutdown`. A
/// tick in progress when `shutdown` fires is dropped: ticks enqueue or do
/// idempotent work, and a shutdown must not wait for a slow one.
///
/// With `leases`, a shared schedule's tick runs only in the process that
/// claims the period's lease (held for most of the period, so the next
/// tick of the same process usually claims it again, and a process that
/// died hands it on within a period).
pub fn run(
    schedules: Vec<Schedule>,
    leases: Option<Leases>,
    shutdown: CancellationToken,
) -> Vec<JoinHandle<()>> {
    schedules
        .into_iter()
        .map(|mut schedule| {
            let shutdown = shutdown.clone();
            let leases = leases.clone().filter(|_| schedule.shared);
            let lease_ms = (schedule.every.as_millis() as i64 * 9 / 10).max(1);
            tokio::spawn(async move {
                let start = tokio::time::Instant::now() + schedule.first_after;
                let mut clock = tokio::time::interval_at(start, schedule.every);
                loop {
                    tokio::select! {
                        _ = clock.tick() => {}
                        _ = shutdown.cancelled() => return,
                    }
                    if let Some(leases) = &leases {
                        match super::storage::claim_schedule(
                            &leases.db,
                            schedule.name,
                            &leases.holder,
                            lease_ms,
                        )
                        .await
                        {
                            Ok(true) => {}
                            Ok(false) => continue,
                            Err(error) => {
                                tracing::warn!(schedule = schedule.name, %error, "claiming a schedule's lease failed");
                                continue;
                            }
                        }
                    }
                    tokio::select! {
                        ticked = (schedule.tick)() => {
                            if let Err(error) = ticked {
                                tracing::warn!(schedule = schedule.name, %error, "a scheduled task failed");
                            }
                        }
                        _ = shutdown.cancelled() => return,
                    }
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn ticks_on_its_clock_goes_on_after_a_failure_and_stops_on_shutdown() {
        let ticks = Arc::new(AtomicUsize::new(0));
        let counted = ticks.clone();
        let schedule = Schedule::every("test", Duration::from_secs(10), move || {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                if n == 1 {
                    Err("the second tick fails")
                } else {
                    Ok(())
                }
            }
        })
        .first_after(Duration::from_secs(5));
        let shutdown = CancellationToken::new();
        let tasks = run(vec![schedule], None, shutdown.clone());
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(ticks.load(Ordering::SeqCst), 0, "waits its first delay");
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(ticks.load(Ordering::SeqCst), 1, "first tick after 5 s");
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(
            ticks.load(Ordering::SeqCst),
            3,
            "a failed tick stops nothing"
        );
        shutdown.cancel();
        for task in tasks {
            task.await.unwrap();
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(ticks.load(Ordering::SeqCst), 3, "no tick after shutdown");
    }
}
