//! Successful runs are recorded in batches. A process running many short
//! jobs would otherwise spend a round trip (and, on SQLite, a turn at the
//! single writer) per job on bookkeeping; while one batch is being written
//! the next collects, so a busy queue writes few statements and an idle one
//! still writes each success at once.

use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::storage::{self, Fence};
use cairn_core::db::Db;

/// Successes one statement records at most.
const MAX_BATCH: usize = 100;

type Request = (Fence, oneshot::Sender<sqlx::Result<bool>>);

/// The sending side: one per worker pool, shared by its running jobs.
#[derive(Clone)]
pub(super) struct Finishes {
    db: Db,
    requests: mpsc::UnboundedSender<Request>,
}

impl Finishes {
    /// The sender and the task writing its batches; the task ends once every
    /// sender is dropped and the last batch is written.
    pub fn spawn(db: Db) -> (Finishes, JoinHandle<()>) {
        let (requests, received) = mpsc::unbounded_channel();
        let writer = tokio::spawn(write_batches(db.clone(), received));
        (Finishes { db, requests }, writer)
    }

    /// Records the run as a success; false when the lease was lost.
    pub async fn success(&self, fence: &Fence) -> sqlx::Result<bool> {
        let (reply, answer) = oneshot::channel();
        if self.requests.send((fence.clone(), reply)).is_err() {
            return storage::finish_success(&self.db, fence).await;
        }
        match answer.await {
            Ok(written) => written,
            // The writer is gone (the runtime is shutting down): write alone.
            Err(_) => storage::finish_success(&self.db, fence).await,
        }
    }
}

async fn write_batches(db: Db, mut received: mpsc::UnboundedReceiver<Request>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while received.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let fences: Vec<&Fence> = batch.iter().map(|(fence, _)| fence).collect();
        match storage::finish_successes(&db, &fences).await {
            Ok(recorded) => {
                for (fence, reply) in batch.drain(..) {
                    let _ = reply.send(Ok(recorded.contains(&fence.job_id)));
                }
            }
            // sqlx errors cannot be cloned: each run learns its own fate.
            Err(_) => {
                for (fence, reply) in batch.drain(..) {
                    let _ = reply.send(storage::finish_success(&db, &fence).await);
                }
            }
        }
    }
}
