//! The worker pool: claims jobs, runs their handlers, keeps their leases
//! alive and records how they ended.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use futures::FutureExt;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::context::StopReason;
use super::finishes::Finishes;
use super::storage::{self, Enqueued, JobStatus};
use super::{JobContext, JobFailure, QueueTiming, Registry, RunningJobs, Wakeup};
use cairn_core::db::Db;
use cairn_core::ids::TenantId;

/// The queue as one process sees it: its handlers, its worker id, its timing.
pub struct Queue {
    pub db: Db,
    pub timing: QueueTiming,
    /// Unique to this process start; every claim carries it.
    pub worker_id: String,
    pub wakeup: Wakeup,
    pub running: RunningJobs,
    /// The blob store only this process (and those sharing its directory)
    /// can read, whose jobs it claims beside everyone's; empty when its
    /// files are in a store every process reads.
    pub holder: String,
    /// What runs query through (see [`Queue::running_on`]).
    run_db: Db,
    /// The handlers: set at `new`, or by `install` when the areas that
    /// define them are built from the state that holds this queue; replaced
    /// whole when the connectors are reloaded (a run keeps the handler it
    /// started with).
    handlers: ArcSwapOption<Handlers>,
    installed: AtomicBool,
}

struct Handlers {
    registry: Registry,
    /// The registry's kinds, the only ones this process claims.
    kinds: Vec<String>,
}

/// `Queue::install` was called a second time.
#[derive(Debug, thiserror::Error)]
#[error("the job handlers were already installed")]
pub struct AlreadyInstalled;

/// How one run of a job ended, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOutcome {
    Recorded(JobStatus),
    /// The lease was lost; the job belongs to another worker now.
    LeaseLost,
}

impl Queue {
    pub fn new(db: Db, registry: Registry, timing: QueueTiming) -> Queue {
        let queue = Queue::without_handlers(db, timing);
        queue
            .install(registry)
            .unwrap_or_else(|_| unreachable!("a new queue has no handlers"));
        queue
    }

    /// A queue whose handlers come later, through [`Queue::install`]; until
    /// then it claims nothing.
    pub fn without_handlers(db: Db, timing: QueueTiming) -> Queue {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".into());
        let worker_id = format!(
            "{host}-{}-{}",
            std::process::id(),
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        Queue {
            run_db: db.clone(),
            db,
            handlers: ArcSwapOption::empty(),
            installed: AtomicBool::new(false),
            timing,
            worker_id,
            wakeup: Wakeup::default(),
            running: RunningJobs::default(),
            holder: String::new(),
        }
    }

    /// The queue of a process holding the blob store `holder` (see
    /// [`Queue::holder`]).
    pub fn holding(mut self, holder: String) -> Queue {
        self.holder = holder;
        self
    }

    /// The queue whose runs query through `db` (the same database, with a
    /// pool of its own: `Db::with_pool_of_its_own`); enqueues, claims and
    /// the runs' bookkeeping stay on the queue's own handle.
    pub fn running_on(mut self, db: Db) -> Queue {
        self.run_db = db;
        self
    }

    /// Sets the handlers; once only, before the workers start.
    pub fn install(&self, registry: Registry) -> Result<(), AlreadyInstalled> {
        if self.installed.swap(true, Ordering::SeqCst) {
            return Err(AlreadyInstalled);
        }
        self.replace(registry);
        Ok(())
    }

    /// Replaces the handlers (the connectors were reloaded and the areas
    /// they serve changed). Runs in progress keep the handler they started
    /// with; the next claim takes only the new registry's kinds.
    pub fn replace(&self, registry: Registry) {
        let kinds = registry.kinds();
        self.handlers
            .store(Some(Arc::new(Handlers { registry, kinds })));
    }

    /// The handlers by kind (none before [`Queue::install`]).
    pub fn registry(&self) -> Registry {
        self.handlers
            .load_full()
            .map(|h| h.registry.clone())
            .unwrap_or_default()
    }

    fn kinds(&self) -> Vec<String> {
        self.handlers
            .load()
            .as_ref()
            .map(|h| h.kinds.clone())
            .unwrap_or_default()
    }

    fn lease_ms(&self) -> i64 {
        self.timing.lease.as_millis() as i64
    }

    /// Extends the lease every heartbeat interval and stops the run when
    /// the lease is lost, a cancel was asked for, or progress stalled.
    /// Never returns.
    async fn beat(db: Db, every: Duration, lease_ms: i64, ctx: JobContext, stall_ms: i64) {
        let mut heartbeat = tokio::time::interval(every);
        heartbeat.tick().await;
        loop {
            heartbeat.tick().await;
            match storage::heartbeat(&db, ctx.fence(), lease_ms).await {
                Ok(None) => ctx.stop(StopReason::LeaseLost),
                Ok(Some(true)) => ctx.stop(StopReason::Canceled),
                Ok(Some(false)) => {}
                Err(err) => tracing::warn!(error = %err, "heartbeat failed"),
            }
            if ctx.millis_since_progress() > stall_ms {
                ctx.stop(StopReason::Stalled);
            }
        }
    }

    /// Enqueues (deduplicated on tenant and kind) and wakes the workers.
    pub async fn enqueue(
        &self,
        tenant: &TenantId,
        kind: &str,
        args: &Value,
    ) -> sqlx::Result<Enqueued> {
        self.enqueue_held(tenant, kind, args, "").await
    }

    /// [`Queue::enqueue`] of a job that needs the blob store `affinity`
    /// (this process's [`Queue::holder`] for a file it just kept).
    pub async fn enqueue_held(
        &self,
        tenant: &TenantId,
        kind: &str,
        args: &Value,
        affinity: &str,
    ) -> sqlx::Result<Enqueued> {
        let enqueued = storage::enqueue_held(&self.db, tenant, kind, args, affinity).await?;
        if enqueued.created {
            self.wakeup.wake();
        }
        Ok(enqueued)
    }

    /// Claims one job and runs it to its end. For tests and tools; the pool
    /// does the same continuously.
    pub async fn run_one(self: &Arc<Self>) -> sqlx::Result<Option<(String, RunOutcome)>> {
        let Some(job) = storage::claim_holding(
            &self.db,
            (&self.worker_id, &self.holder),
            &self.kinds(),
            1,
            self.lease_ms(),
        )
        .await?
        .pop() else {
            return Ok(None);
        };
        let id = job.id.clone();
        let ctx = JobContext::new(self.run_db.clone(), &job, self.lease_ms());
        let outcome = self.run_in(ctx, &CancellationToken::new(), None).await;
        Ok(Some((id, outcome)))
    }

    /// Runs up to `slots` jobs at a time until `shutdown` fires. One loop
    /// claims for every free slot in a single statement (a round trip per
    /// batch, not per job) and starts each claimed job as a task of its own.
    /// On shutdown it stops claiming; running jobs hand themselves back to
    /// the queue.
    pub fn spawn_pool(
        self: &Arc<Self>,
        slots: usize,
        shutdown: CancellationToken,
    ) -> JoinHandle<()> {
        tokio::spawn(self.clone().dispatch(slots.max(1), shutdown))
    }

    /// [`Queue::spawn_pool`] on `runtime` (the service's: the process's job
    /// runtime, [`crate::runtime::handle`]): the pool, its runs and their
    /// heartbeats run there, apart from the requests.
    pub fn spawn_pool_on(
        self: &Arc<Self>,
        runtime: &tokio::runtime::Handle,
        slots: usize,
        shutdown: CancellationToken,
    ) -> JoinHandle<()> {
        runtime.spawn(self.clone().dispatch(slots.max(1), shutdown))
    }

    async fn dispatch(self: Arc<Self>, slots: usize, shutdown: CancellationToken) {
        // Alert rules read these as 0 before the first retry or loss.
        for kind in self.kinds() {
            use cairn_core::telemetry;
            metrics::counter!(telemetry::JOB_RETRIES, "kind" => kind.clone()).increment(0);
            metrics::counter!(telemetry::JOB_LEASE_LOSSES, "kind" => kind.clone()).increment(0);
        }
        let free = Arc::new(Semaphore::new(slots));
        let mut running = tokio::task::JoinSet::new();
        let (finishes, finishes_written) = Finishes::spawn(self.db.clone());
        while !shutdown.is_cancelled() {
            // Wait for one free slot, then take every other free one too.
            let first = tokio::select! {
                permit = free.clone().acquire_owned() => permit,
                _ = shutdown.cancelled() => break,
            };
            let Ok(first) = first else { break };
            let mut permits = vec![first];
            while let Ok(more) = free.clone().try_acquire_owned() {
                permits.push(more);
            }
            while running.try_join_next().is_some() {}
            let claimed = storage::claim_holding(
                &self.db,
                (&self.worker_id, &self.holder),
                &self.kinds(),
                permits.len() as i64,
                self.lease_ms(),
            )
            .await;
            match claimed {
                Ok(jobs) if !jobs.is_empty() => {
                    // A slot not filled goes back when `permits` drops.
                    for (job, permit) in jobs.into_iter().zip(permits.drain(..)) {
                        let queue = self.clone();
                        let shutdown = shutdown.clone();
                        let finishes = finishes.clone();
                        running.spawn(async move {
                            let ctx = JobContext::new(queue.run_db.clone(), &job, queue.lease_ms());
                            let slot = Slot {
                                permit,
                                finishes: &finishes,
                            };
                            queue.run_in(ctx, &shutdown, Some(slot)).await;
                        });
                    }
                }
                Ok(_) => {
                    drop(permits);
                    tokio::select! {
                        _ = self.wakeup.woken() => {}
                        _ = tokio::time::sleep(self.timing.poll_interval) => {}
                        _ = shutdown.cancelled() => {}
                    }
                }
                Err(err) => {
                    drop(permits);
                    tracing::warn!(error = %err, "claiming jobs failed");
                    tokio::select! {
                        _ = tokio::time::sleep(self.timing.poll_interval) => {}
                        _ = shutdown.cancelled() => {}
                    }
                }
            }
        }
        // Every running job saw the shutdown as well and is handing itself back.
        while running.join_next().await.is_some() {}
        drop(finishes);
        let _ = finishes_written.await;
    }

    /// Hands back every job this process still holds once its runs are
    /// over: a run whose hand-back failed, or one the process stopped
    /// waiting for. Without it such a job would wait out its lease (and the
    /// next process's reaper) although nothing runs it. Writes through
    /// `db`: the queue's own handle, or one reopened on the caller's
    /// runtime (`Db::reopened`). Returns how many.
    pub async fn hand_back_held(&self, db: &Db) -> sqlx::Result<usize> {
        let mut handed_back = 0;
        for fence in storage::held_by(db, &self.worker_id).await? {
            if storage::release(db, &fence).await? {
                tracing::warn!(job_id = %fence.job_id, "a job its run left running was handed back");
                handed_back += 1;
            }
        }
        Ok(handed_back)
    }

    #[tracing::instrument(skip_all, fields(job_id = %ctx.job_id(), kind = %ctx.kind(), tenant_id = %ctx.tenant_id().as_str(), attempt = ctx.attempt()))]
    async fn run_in(
        &self,
        ctx: JobContext,
        shutdown: &CancellationToken,
        slot: Option<Slot<'_>>,
    ) -> RunOutcome {
        let registration = self
            .handlers
            .load()
            .as_ref()
            .and_then(|h| h.registry.get(ctx.kind()).cloned());
        let Some(registration) = registration else {
            let message = format!("no handler for job kind {}", ctx.kind());
            return self.record_failure(&ctx, &message).await;
        };
        self.running.insert(&ctx);
        let started = std::time::Instant::now();
        tracing::info!("job run started");
        let handler = registration.handler.clone();
        let run_ctx = ctx.clone();
        // The heartbeat is a task of its own: polled in the handler's task,
        // it would wait out every stretch of computing the handler does
        // between awaits (a rollup building 100,000 applications) and the
        // lease would lapse under a live run. It is aborted with the run.
        let stall_ms = registration.stall_timeout.as_millis() as i64;
        let beats = tokio::spawn(Self::beat(
            self.db.clone(),
            self.timing.heartbeat,
            self.lease_ms(),
            ctx.clone(),
            stall_ms,
        ));
        let _stop_beats = AbortOnDrop(beats);
        let grace = self.timing.stop_grace;
        // The handler is polled in place (no task per job) inside this
        // block, so that it is dropped, with every lock and connection it
        // holds, before the run's end is written: a handler cut off at the
        // grace period may hold the SQLite write turn the release needs.
        // A panic is caught here and becomes the job's error.
        let result = {
            let mut handle = std::pin::pin!(async move {
                std::panic::AssertUnwindSafe(handler.run(&run_ctx))
                    .catch_unwind()
                    .await
            });
            loop {
                tokio::select! {
                    result = &mut handle => break Some(result),
                    _ = shutdown.cancelled(), if !ctx.stop_token().is_cancelled() => {
                        ctx.stop(StopReason::Shutdown);
                    }
                    _ = ctx.stop_token().cancelled() => {
                        break tokio::time::timeout(grace, &mut handle).await.ok();
                    }
                }
            }
        };
        self.running.remove(ctx.job_id());
        // The handler is done: its slot may take the next job while this
        // one's end is written, so claims and finishes overlap.
        let finishes = slot.map(|slot| {
            drop(slot.permit);
            slot.finishes
        });
        let outcome = match (ctx.stop_reason(), result) {
            (Some(StopReason::LeaseLost), _) => RunOutcome::LeaseLost,
            (Some(StopReason::Canceled), _) => self.record(
                &ctx,
                storage::finish_canceled(&self.db, ctx.fence()).await,
                JobStatus::Canceled,
            ),
            (Some(StopReason::Shutdown), _) => {
                match storage::release(&self.db, ctx.fence()).await {
                    Ok(true) => RunOutcome::Recorded(JobStatus::Queued),
                    Ok(false) => RunOutcome::LeaseLost,
                    Err(err) => {
                        // The job stays running until its lease lapses and
                        // a reaper hands it back.
                        tracing::warn!(error = %err, "handing the job back failed");
                        RunOutcome::LeaseLost
                    }
                }
            }
            (Some(StopReason::Stalled), _) => {
                let message = format!(
                    "no progress for {} s; stopped",
                    registration.stall_timeout.as_secs()
                );
                self.record_failure(&ctx, &message).await
            }
            (None, Some(Ok(Ok(())))) => {
                let written = match finishes {
                    Some(finishes) => finishes.success(ctx.fence()).await,
                    None => storage::finish_success(&self.db, ctx.fence()).await,
                };
                self.record(&ctx, written, JobStatus::Success)
            }
            (None, Some(Ok(Err(JobFailure::Failed(message))))) => {
                self.record_failure(&ctx, &message).await
            }
            (None, Some(Ok(Err(JobFailure::Permanent(message))))) => {
                self.record_failure_without_retry(&ctx, &message).await
            }
            (None, Some(Ok(Err(JobFailure::Reported(message))))) => {
                self.record_failed_run(&ctx, &message, false, false).await
            }
            (None, Some(Ok(Err(JobFailure::LeaseLost(_))))) => RunOutcome::LeaseLost,
            (None, Some(Err(panic))) => {
                let message = panic_message(panic);
                self.record_failure(&ctx, &message).await
            }
            (None, None) => {
                self.record_failure(&ctx, "handler did not stop in time")
                    .await
            }
        };
        // A job of this kind queued while this one ran may be claimed now;
        // the claim made when the slot freed ran before this end was written.
        if let RunOutcome::Recorded(status) = outcome {
            if status != JobStatus::Queued {
                self.wakeup.wake();
            }
        }
        let label = match (&outcome, ctx.stop_reason()) {
            (RunOutcome::Recorded(JobStatus::Success), _) => "succeeded",
            (RunOutcome::Recorded(JobStatus::Canceled), _) => "canceled",
            (RunOutcome::Recorded(JobStatus::Queued), Some(StopReason::Shutdown)) => "handed_back",
            (RunOutcome::Recorded(JobStatus::Queued), _) => "retried",
            (RunOutcome::Recorded(_), _) => "failed",
            (RunOutcome::LeaseLost, _) => "lease_lost",
        };
        let elapsed = started.elapsed();
        record_run(ctx.kind(), label, elapsed);
        let (phase, done, total, unit) = ctx.last_progress();
        tracing::info!(
            outcome = label,
            duration_ms = elapsed.as_millis() as u64,
            phase,
            done,
            total,
            unit,
            "job run ended"
        );
        outcome
    }

    fn record(
        &self,
        ctx: &JobContext,
        written: sqlx::Result<bool>,
        status: JobStatus,
    ) -> RunOutcome {
        match written {
            Ok(true) => RunOutcome::Recorded(status),
            Ok(false) => RunOutcome::LeaseLost,
            Err(err) => {
                tracing::error!(job_id = %ctx.job_id(), error = %err, "recording the job's end failed");
                RunOutcome::LeaseLost
            }
        }
    }

    async fn record_failure(&self, ctx: &JobContext, message: &str) -> RunOutcome {
        self.record_failed_run(ctx, message, true, true).await
    }

    async fn record_failure_without_retry(&self, ctx: &JobContext, message: &str) -> RunOutcome {
        self.record_failed_run(ctx, message, false, true).await
    }

    async fn record_failed_run(
        &self,
        ctx: &JobContext,
        message: &str,
        retry: bool,
        warn: bool,
    ) -> RunOutcome {
        let backoff =
            self.timing.retry_backoff.as_millis() as i64 * (1i64 << ctx.attempt().clamp(0, 10));
        match storage::finish_failure(&self.db, ctx.fence(), message, backoff, retry).await {
            Ok(Some(status)) => {
                let retried = status == JobStatus::Queued;
                if warn {
                    tracing::warn!(error = message, retried, "job run failed");
                } else {
                    tracing::debug!(error = message, retried, "job run failed");
                }
                RunOutcome::Recorded(status)
            }
            Ok(None) => RunOutcome::LeaseLost,
            Err(err) => {
                tracing::error!(job_id = %ctx.job_id(), error = %err, "recording the job's failure failed");
                RunOutcome::LeaseLost
            }
        }
    }
}

/// Counts and times a run by kind and outcome.
fn record_run(kind: &str, outcome: &'static str, elapsed: Duration) {
    use cairn_core::telemetry;
    let labels = [("kind", kind.to_string()), ("outcome", outcome.to_string())];
    metrics::counter!(telemetry::JOB_RUNS, &labels).increment(1);
    metrics::histogram!(telemetry::JOB_RUN_DURATION, &labels).record(elapsed.as_secs_f64());
    match outcome {
        "retried" => {
            metrics::counter!(telemetry::JOB_RETRIES, "kind" => kind.to_string()).increment(1)
        }
        "lease_lost" => {
            metrics::counter!(telemetry::JOB_LEASE_LOSSES, "kind" => kind.to_string()).increment(1)
        }
        _ => {}
    }
}

fn panic_message(panic: Box<dyn std::any::Any + Send>) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    format!("handler panicked: {text}")
}

/// A pool slot a job runs in, and the pool's batched finishes.
struct Slot<'p> {
    permit: OwnedSemaphorePermit,
    finishes: &'p Finishes,
}

/// Aborts a task when dropped: the heartbeat ends with its run, however the
/// run ends.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
