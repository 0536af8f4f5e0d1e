//! Jobs' writes yield to requests. A job's write turn (`Db::write_turn` on
//! the handle jobs run on, `Db::paced`) waits, while requests are being
//! answered, so that the jobs' writes take at most a share of the time.
//! The database server does a write's work (PostgreSQL's backends are not
//! the job threads, so their niceness does not reach them): an upload or a
//! sync would otherwise take a core from the requests for as long as it
//! writes. With no request in flight, jobs write at full speed.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// The longest one turn waits, however long the writes before it took: a
/// job keeps moving, and its lease's heartbeats are never held up long.
pub const MAX_WAIT: Duration = Duration::from_secs(1);

/// Requests a process is answering now, shared by every clone of its
/// [`super::Db`].
#[derive(Debug, Clone, Default)]
pub struct InFlight(Arc<AtomicUsize>);

impl InFlight {
    /// Counts one request until the guard drops.
    pub fn start(&self) -> Serving {
        self.0.fetch_add(1, Ordering::Relaxed);
        Serving(self.0.clone())
    }

    pub fn now(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One request being answered; dropped when its answer is ready.
#[must_use]
pub struct Serving(Arc<AtomicUsize>);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The jobs' writes held to `share` of the time while requests are in
/// flight: a turn that held the writer for `t` makes the next turn (of any
/// job of the process) wait until `t × (1 − share) / share` after it.
#[derive(Debug)]
pub struct Pacing {
    share: f64,
    requests: InFlight,
    /// When the next turn may start if requests are in flight.
    ready_at: Mutex<Option<Instant>>,
}

impl Pacing {
    /// `share` between 0.01 and 1 (1: never waits).
    pub fn new(share: f64, requests: InFlight) -> Pacing {
        Pacing {
            share: if share.is_finite() {
                share.clamp(0.01, 1.0)
            } else {
                1.0
            },
            requests,
            ready_at: Mutex::new(None),
        }
    }

    /// How long a turn starting now waits.
    pub fn owed(&self) -> Duration {
        if self.share >= 1.0 || self.requests.now() == 0 {
            return Duration::ZERO;
        }
        let ready_at = *self.ready_at.lock().unwrap_or_else(|e| e.into_inner());
        ready_at
            .map_or(Duration::ZERO, |at| {
                at.saturating_duration_since(Instant::now())
            })
            .min(MAX_WAIT)
    }

    /// Waits what a turn starting now owes.
    pub async fn wait(&self) {
        let owed = self.owed();
        if !owed.is_zero() {
            tokio::time::sleep(owed).await;
        }
    }

    /// A turn that began at `began` has ended now.
    pub fn ended(&self, began: Instant) {
        if self.share >= 1.0 {
            return;
        }
        let now = Instant::now();
        let rest = (now - began).mul_f64((1.0 - self.share) / self.share);
        let mut ready_at = self.ready_at.lock().unwrap_or_else(|e| e.into_inner());
        // Turns of several jobs add up; the time owed never reaches further
        // than one wait from now.
        let from = ready_at.map_or(now, |at| at.max(now));
        *ready_at = Some((from + rest).min(now + MAX_WAIT));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A turn held for `held`, ended now.
    async fn turn(pacing: &Pacing, held: Duration) {
        pacing.wait().await;
        let began = Instant::now();
        tokio::time::advance(held).await;
        pacing.ended(began);
    }

    #[tokio::test(start_paused = true)]
    async fn a_turn_waits_for_its_share_only_while_requests_are_in_flight() {
        // (share, held by the turn before, requests in flight, owed)
        let cases = [
            (0.25, 100, 1, 300),
            (0.5, 100, 3, 100),
            (0.25, 100, 0, 0),
            (1.0, 100, 1, 0),
            (0.1, 500, 1, 1000),
            (0.2, 0, 1, 0),
        ];
        for (share, held, requests, owed) in cases {
            let in_flight = InFlight::default();
            let serving: Vec<Serving> = (0..requests).map(|_| in_flight.start()).collect();
            let pacing = Pacing::new(share, in_flight.clone());
            turn(&pacing, held * MS).await;
            assert_eq!(
                pacing.owed(),
                owed * MS,
                "share {share}, held {held} ms, {requests} requests"
            );
            drop(serving);
            assert_eq!(in_flight.now(), 0);
            assert_eq!(pacing.owed(), Duration::ZERO);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_time_owed_runs_out_as_time_passes_and_adds_up_over_turns() {
        let in_flight = InFlight::default();
        let _serving = in_flight.start();
        let pacing = Pacing::new(0.5, in_flight);
        turn(&pacing, 100 * MS).await;
        tokio::time::advance(40 * MS).await;
        assert_eq!(pacing.owed(), 60 * MS);

        // Two jobs' turns ending together: the second waits for both.
        let began = Instant::now();
        tokio::time::advance(60 * MS).await;
        pacing.ended(began);
        pacing.ended(began);
        assert_eq!(pacing.owed(), 120 * MS);

        let waited = Instant::now();
        pacing.wait().await;
        assert_eq!(waited.elapsed(), 120 * MS);
        assert_eq!(pacing.owed(), Duration::ZERO);
    }
}
