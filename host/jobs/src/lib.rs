//! The durable job queue: sync and parse work stored in the database.
//!
//! - [`enqueue`] deduplicates on (tenant, kind) through a partial unique index.
//! - Workers ([`worker`]) claim oldest-first atomically, heartbeat, and fence
//!   every write on (id, running, worker_id, attempts): a write that changes
//!   no row means the lease was lost, and the handler is cancelled.
//! - The reaper ([`reaper`]) requeues or fails jobs whose lease passed, deciding
//!   inside the UPDATE itself.
//!
//! State lives in the `jobs` table only; progress and history are read from it.
//!
//! - Owns `jobs` and `schedule_leases`.
//! - Faces: `enqueue`, `Queue` (handlers installed once), `JobHandler`,
//!   `schedule::Schedule`; no HTTP (the routes are the platform's).
//! - Calls: the vocabulary only.
//!
//! The durable job queue. `storage.rs` holds every statement (enqueue with
//! dedupe, claim, fenced heartbeat/progress/checkpoint/finish, reaper,
//! prune, cancel); `worker.rs` the dispatcher (one loop claiming for every
//! free slot in one statement, each claimed job then a task of its own) and
//! the run of one job (heartbeat, stall guard, panic capture, how the run is
//! recorded); `finishes.rs` records the pool's successes in batches (one
//! statement for every run that ended while the previous batch was being
//! written); `context.rs` what a handler sees; `reaper.rs`, `wake.rs`
//! (in-process notify plus PostgreSQL LISTEN/NOTIFY); the `/api/v1/jobs`
//! routes are the platform's (`cairn_platform::jobs_routes`). Handlers are
//! registered by kind in a `Registry` and installed in the queue before
//! its workers start. The heartbeat runs as a task of its own beside the
//! handler, so a handler computing between awaits never lets its lease
//! lapse. A handler fails with `JobFailure::Failed` (retried with backoff
//! while attempts remain) or `JobFailure::Permanent` (a failure another
//! attempt would repeat, such as a plugin panic or its memory cap: `error`
//! at once).

mod context;
mod finishes;
pub mod reaper;
pub mod runtime;
pub mod schedule;
pub mod storage;
mod wake;
pub mod worker;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
pub use context::{JobContext, LeaseLost, StopReason};
pub use storage::{
    enqueue, enqueue_held, enqueue_held_unless_live, enqueue_unless_live, Enqueued, JobRow,
    JobStatus,
};
pub use wake::Wakeup;
pub use worker::{AlreadyInstalled, Queue, RunOutcome};

/// Why a handler stopped without success. The message is kept on the job.
#[derive(Debug, thiserror::Error)]
pub enum JobFailure {
    /// Another attempt may succeed (an upstream hiccup, a timeout): the job
    /// is retried while attempts remain.
    #[error("{0}")]
    Failed(String),
    /// Another attempt would fail the same way (a plugin panic, its memory
    /// cap, a broken answer, a config problem): the job ends in `error` now
    /// rather than repeating it.
    #[error("{0}")]
    Permanent(String),
    /// As `Permanent`, for a failure the handler has logged itself (once
    /// per change of state): the worker records it without a warning.
    #[error("{0}")]
    Reported(String),
    /// The worker lost its lease (or was asked to stop); nothing more may be
    /// written.
    #[error(transparent)]
    LeaseLost(#[from] LeaseLost),
}

impl From<anyhow::Error> for JobFailure {
    fn from(err: anyhow::Error) -> Self {
        JobFailure::Failed(format!("{err:#}"))
    }
}

impl From<cairn_core::db::fence::FencedError> for JobFailure {
    fn from(err: cairn_core::db::fence::FencedError) -> Self {
        match err {
            cairn_core::db::fence::FencedError::Lost => LeaseLost(StopReason::LeaseLost).into(),
            cairn_core::db::fence::FencedError::Db(err) => err.into(),
        }
    }
}

impl From<sqlx::Error> for JobFailure {
    fn from(err: sqlx::Error) -> Self {
        JobFailure::Failed(format!("database: {err}"))
    }
}

/// Work for one job kind.
#[async_trait]
pub trait JobHandler: Send + Sync + 'static {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure>;
}

/// A handler and its limits.
#[derive(Clone)]
pub struct Registration {
    pub handler: Arc<dyn JobHandler>,
    /// A run that reports no progress for this long fails (the stale guard).
    pub stall_timeout: Duration,
}

/// Handlers by kind, fixed before the workers start.
#[derive(Clone, Default)]
pub struct Registry {
    by_kind: HashMap<String, Registration>,
}

impl Registry {
    pub fn register(&mut self, kind: &str, handler: impl JobHandler, stall_timeout: Duration) {
        self.by_kind.insert(
            kind.to_string(),
            Registration {
                handler: Arc::new(handler),
                stall_timeout,
            },
        );
    }

    pub fn get(&self, kind: &str) -> Option<&Registration> {
        self.by_kind.get(kind)
    }

    /// Adds `other`'s handlers; a kind both define is an error naming it,
    /// since one would silently replace the other.
    pub fn merge(&mut self, other: Registry) -> Result<(), DuplicateKind> {
        for (kind, registration) in other.by_kind {
            if self.by_kind.contains_key(&kind) {
                return Err(DuplicateKind(kind));
            }
            self.by_kind.insert(kind, registration);
        }
        Ok(())
    }

    pub fn kinds(&self) -> Vec<String> {
        let mut kinds: Vec<String> = self.by_kind.keys().cloned().collect();
        kinds.sort();
        kinds
    }
}

/// Two areas define the same job kind.
#[derive(Debug, thiserror::Error)]
#[error("two areas define the job kind {0}")]
pub struct DuplicateKind(pub String);

/// Timing of the queue; defaults are the spec's (60 s lease, ~15 s heartbeat,
/// reaper about every minute, 3 attempts).
#[derive(Debug, Clone)]
pub struct QueueTiming {
    pub lease: Duration,
    pub heartbeat: Duration,
    pub reaper_interval: Duration,
    pub poll_interval: Duration,
    pub retry_backoff: Duration,
    pub retention: Duration,
    pub history_keep: i64,
    /// How long a job told to stop (shutdown, cancel, stall, lost lease)
    /// may take to hand itself back before its handler is dropped.
    pub stop_grace: Duration,
}

impl QueueTiming {
    pub fn from_settings(settings: &cairn_core::settings::Settings) -> QueueTiming {
        QueueTiming {
            lease: Duration::from_secs(settings.job_lease_secs.max(1)),
            heartbeat: Duration::from_secs(settings.job_heartbeat_secs.max(1)),
            reaper_interval: Duration::from_secs(settings.job_reaper_interval_secs.max(1)),
            poll_interval: Duration::from_millis(settings.job_poll_interval_ms.max(10)),
            retry_backoff: Duration::from_millis(settings.job_retry_backoff_ms),
            retention: Duration::from_secs(settings.job_retention_days * 86_400),
            history_keep: settings.job_history_keep,
            stop_grace: Duration::from_secs(settings.shutdown_grace_secs),
        }
    }
}

/// Jobs running in this process, so a cancel request reaches them at once
/// rather than at the next heartbeat.
#[derive(Clone, Default)]
pub struct RunningJobs(Arc<Mutex<HashMap<String, JobContext>>>);

impl RunningJobs {
    fn insert(&self, ctx: &JobContext) {
        self.0
            .lock()
            .expect("running jobs lock")
            .insert(ctx.job_id().to_string(), ctx.clone());
    }

    fn remove(&self, job_id: &str) {
        self.0.lock().expect("running jobs lock").remove(job_id);
    }

    pub fn cancel(&self, job_id: &str) {
        if let Some(ctx) = self.0.lock().expect("running jobs lock").get(job_id) {
            ctx.stop(context::StopReason::Canceled);
        }
    }
}
