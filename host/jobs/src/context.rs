//! What a handler sees of its job: arguments, the last checkpoint, and
//! fenced ways to report progress and save checkpoints.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};
use sqlx::{Any, Transaction};
use tokio_util::sync::CancellationToken;

use super::storage::{self, Fence, JobRow};
use cairn_core::db::fence::WriteFence;
use cairn_core::db::{now_ms, Db};
use cairn_core::ids::TenantId;

/// Why a running job was told to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A fenced write changed nothing: another worker owns the job now.
    LeaseLost,
    /// A user canceled the job.
    Canceled,
    /// No progress within the kind's stall timeout.
    Stalled,
    /// This process is shutting down; the job goes back to the queue.
    Shutdown,
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StopReason::LeaseLost => "another worker holds it now",
            StopReason::Canceled => "it was canceled",
            StopReason::Stalled => "it made no progress",
            StopReason::Shutdown => "the process is shutting down",
        })
    }
}

/// Returned by the context's writes once the job must stop; handlers pass it
/// up with `?`.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the job stopped: {0}")]
pub struct LeaseLost(pub StopReason);

#[derive(Clone)]
pub struct JobContext {
    inner: Arc<Inner>,
}

struct Inner {
    job_id: String,
    tenant_id: TenantId,
    kind: String,
    affinity: String,
    args: Value,
    checkpoint: Option<Value>,
    attempt: i64,
    db: Db,
    fence: Fence,
    lease_ms: i64,
    token: CancellationToken,
    reason: OnceLock<StopReason>,
    last_progress_ms: AtomicI64,
    /// The last progress reported (for the log line that ends the run and
    /// the estimated end).
    last_progress: Mutex<LastProgress>,
}

#[derive(Default)]
struct LastProgress {
    phase: String,
    done: i64,
    total: i64,
    unit: String,
    /// When `phase` began.
    phase_started_ms: i64,
}

impl JobContext {
    pub(super) fn new(db: Db, job: &JobRow, lease_ms: i64) -> JobContext {
        // Written only by this crate's `serde_json::to_string`. Text that
        // did not parse (a hand-edited row) reads as null, which every
        // handler refuses with its own error: the claim itself goes on.
        let parse = |raw: &str| serde_json::from_str(raw).unwrap_or(Value::Null);
        JobContext {
            inner: Arc::new(Inner {
                job_id: job.id.clone(),
                tenant_id: TenantId(job.tenant_id.clone()),
                kind: job.kind.clone(),
                affinity: job.affinity.clone(),
                args: parse(&job.args),
                checkpoint: job.checkpoint.as_deref().map(parse),
                attempt: job.attempts,
                fence: Fence {
                    job_id: job.id.clone(),
                    worker_id: job.worker_id.clone().unwrap_or_default(),
                    attempts: job.attempts,
                },
                db,
                lease_ms,
                token: CancellationToken::new(),
                reason: OnceLock::new(),
                last_progress_ms: AtomicI64::new(now_ms()),
                last_progress: Mutex::new(LastProgress::default()),
            }),
        }
    }

    pub fn job_id(&self) -> &str {
        &self.inner.job_id
    }

    pub fn tenant_id(&self) -> &TenantId {
        &self.inner.tenant_id
    }

    pub fn kind(&self) -> &str {
        &self.inner.kind
    }

    /// The blob store the run needs ([`crate::storage::JobRow::affinity`]).
    pub fn affinity(&self) -> &str {
        &self.inner.affinity
    }

    pub fn args(&self) -> &Value {
        &self.inner.args
    }

    /// The checkpoint the last attempt saved, to resume from.
    pub fn checkpoint(&self) -> Option<&Value> {
        self.inner.checkpoint.as_ref()
    }

    /// 1 on the first run, 2 on the first retry, ...
    pub fn attempt(&self) -> i64 {
        self.inner.attempt
    }

    pub fn db(&self) -> &Db {
        &self.inner.db
    }

    /// Cancelled when the job must stop (lease lost, canceled, stalled,
    /// shutdown); long waits inside a handler should select on it.
    pub fn stop_token(&self) -> &CancellationToken {
        &self.inner.token
    }

    pub(super) fn fence(&self) -> &Fence {
        &self.inner.fence
    }

    pub(super) fn stop(&self, reason: StopReason) {
        let _ = self.inner.reason.set(reason);
        self.inner.token.cancel();
    }

    /// Why the job was told to stop, once it was: a handler between two
    /// batches of work returns `LeaseLost(reason)` then.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.inner.reason.get().copied()
    }

    pub(super) fn millis_since_progress(&self) -> i64 {
        now_ms() - self.inner.last_progress_ms.load(Ordering::Relaxed)
    }

    fn check_running(&self) -> Result<(), LeaseLost> {
        match self.stop_reason() {
            Some(reason) => Err(LeaseLost(reason)),
            None => Ok(()),
        }
    }

    fn lost(&self) -> LeaseLost {
        self.stop(StopReason::LeaseLost);
        LeaseLost(StopReason::LeaseLost)
    }

    /// The last progress reported: phase, done, total and unit.
    pub fn last_progress(&self) -> (String, i64, i64, String) {
        let last = self
            .inner
            .last_progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (last.phase.clone(), last.done, last.total, last.unit.clone())
    }

    /// Reports progress in one unit: `done` of `total` `unit`s in `phase`
    /// (`total` exact or an estimate in the same unit, never below
    /// `done`); `detail` says what is being worked on. Also extends the
    /// lease.
    pub async fn progress(
        &self,
        phase: &str,
        done: i64,
        total: i64,
        unit: &str,
        detail: &str,
    ) -> Result<(), LeaseLost> {
        self.check_running()?;
        let progress = self.progress_json(phase, done, total, unit, detail);
        match storage::set_progress(
            &self.inner.db,
            &self.inner.fence,
            &progress,
            self.inner.lease_ms,
        )
        .await
        {
            Ok(true) => {
                self.inner
                    .last_progress_ms
                    .store(now_ms(), Ordering::Relaxed);
                Ok(())
            }
            Ok(false) => Err(self.lost()),
            Err(err) => {
                // A failed write is not proof the lease is gone; the heartbeat
                // and the next write will tell.
                tracing::warn!(job_id = %self.inner.job_id, error = %err, "progress not recorded");
                Ok(())
            }
        }
    }

    /// [`JobContext::progress`] inside `tx`, with the work it reports: a
    /// writer that holds the database's one write turn (SQLite) records
    /// its progress without queueing for another. On `Err` roll back.
    pub async fn progress_in(
        &self,
        tx: &mut Transaction<'_, Any>,
        (phase, done, total, unit): (&str, i64, i64, &str),
        detail: &str,
    ) -> Result<(), super::JobFailure> {
        self.check_running()?;
        let progress = self.progress_json(phase, done, total, unit, detail);
        let (backend, fence, lease_ms) = self.fenced();
        let held = storage::set_progress_in(tx, backend, fence, &progress, lease_ms).await?;
        self.kept_lease(held)
    }

    /// What a fenced write of the run's own state needs: the engine, the
    /// fence and the lease to extend.
    fn fenced(&self) -> (cairn_core::db::Backend, &Fence, i64) {
        (
            self.inner.db.backend,
            &self.inner.fence,
            self.inner.lease_ms,
        )
    }

    /// After a fenced write of the run's own state: whether it still held
    /// the job (the write then counts as a heartbeat).
    fn kept_lease(&self, held: bool) -> Result<(), super::JobFailure> {
        if held {
            self.inner
                .last_progress_ms
                .store(now_ms(), Ordering::Relaxed);
            Ok(())
        } else {
            Err(self.lost().into())
        }
    }

    /// The progress document, kept as the last reported.
    fn progress_json(&self, phase: &str, done: i64, total: i64, unit: &str, detail: &str) -> Value {
        let total = total.max(done);
        let phase_started = {
            let mut last = self
                .inner
                .last_progress
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if last.phase != phase {
                last.phase = phase.to_string();
                last.phase_started_ms = now_ms();
            }
            last.done = done;
            last.total = total;
            last.unit = unit.to_string();
            last.phase_started_ms
        };
        json!({
            "phase": phase, "done": done, "total": total, "unit": unit, "detail": detail,
            "phase_started_at": phase_started,
        })
    }

    /// Saves a checkpoint inside `tx`, which should also hold the batch of
    /// work it describes: both commit or neither. On `Err` roll back.
    pub async fn save_checkpoint_in(
        &self,
        tx: &mut Transaction<'_, Any>,
        checkpoint: &Value,
    ) -> Result<(), super::JobFailure> {
        self.check_running()?;
        let (backend, fence, lease_ms) = self.fenced();
        let held = storage::set_checkpoint(tx, backend, fence, checkpoint, lease_ms).await?;
        self.kept_lease(held)
    }

    /// Fails unless this run still holds the job as `tx` sees it: for
    /// writes that belong to the run but not with its checkpoint (a sync
    /// writes several pages at once, and saves the checkpoint once every
    /// earlier page is in). It does not hold the job: a run that loses it
    /// while such a write commits has written rows it saw, stamped as its
    /// own, which the run that takes over rewrites or prunes.
    pub async fn check_lease_in(
        &self,
        tx: &mut Transaction<'_, Any>,
    ) -> Result<(), super::JobFailure> {
        self.check_running()?;
        if storage::fence_holds(tx, &self.inner.fence).await? {
            Ok(())
        } else {
            Err(self.lost().into())
        }
    }

    /// [`JobContext::check_lease_in`] inside a transaction on PostgreSQL's
    /// own driver (`Db::copy`, for writes with COPY).
    pub async fn check_lease_on_postgres(
        &self,
        conn: &mut sqlx::PgConnection,
    ) -> Result<(), super::JobFailure> {
        self.check_running()?;
        if storage::fence_holds_on_postgres(conn, &self.inner.fence).await? {
            Ok(())
        } else {
            Err(self.lost().into())
        }
    }

    /// Holds the job until `tx` ends, for writes a run makes to shared
    /// state outside its checkpoint (an upload's report): a run that lost
    /// its lease writes nothing, and no one takes the job over while `tx`
    /// commits. Unlike the other writes it works for a run told to stop
    /// (a canceled parse still marks its upload), as long as the run holds
    /// the job. On `Err` roll back.
    pub async fn hold_in(&self, tx: &mut Transaction<'_, Any>) -> Result<(), super::JobFailure> {
        if storage::hold(tx, &self.inner.fence).await? {
            Ok(())
        } else {
            Err(self.lost().into())
        }
    }

    /// Saves a checkpoint on its own.
    pub async fn save_checkpoint(&self, checkpoint: &Value) -> Result<(), super::JobFailure> {
        let _turn = self.inner.db.write_turn().await;
        let mut tx = self.inner.db.pool.begin().await?;
        self.save_checkpoint_in(&mut tx, checkpoint).await?;
        tx.commit().await?;
        Ok(())
    }
}

/// A run's context fences the writes its job makes through the areas'
/// storage functions, as [`JobContext::hold_in`] does.
#[async_trait::async_trait]
impl WriteFence for JobContext {
    async fn hold(&self, tx: &mut Transaction<'_, Any>) -> sqlx::Result<bool> {
        let held = self.inner.fence.hold(tx).await?;
        if !held {
            // Tells the rest of the run to stop, as the context's own
            // writes do.
            self.lost();
        }
        Ok(held)
    }
}
