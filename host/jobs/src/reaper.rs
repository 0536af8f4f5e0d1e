//! Requeues or fails jobs whose worker stopped heartbeating, and prunes old
//! finished jobs.

use std::sync::Arc;

use super::schedule::Schedule;
use super::storage;
use super::worker::Queue;
use cairn_core::db::now_ms;

/// Pruning is cheap but needs no minute-level precision.
const PRUNE_EVERY_N_PASSES: u64 = 60;

/// Every `reaper_interval`: jobs whose lease lapsed go back to the queue
/// or fail, and now and then finished jobs past their retention go.
pub fn schedule(queue: Arc<Queue>) -> Schedule {
    let every = queue.timing.reaper_interval;
    let mut passes: u64 = 0;
    Schedule::every("job reaper", every, move || {
        let queue = queue.clone();
        let prune_now = passes.is_multiple_of(PRUNE_EVERY_N_PASSES);
        passes += 1;
        async move {
            match storage::reap_expired(&queue.db).await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::warn!(jobs = n, "reaped jobs whose lease expired");
                    queue.wakeup.wake();
                }
                Err(err) => tracing::warn!(error = %err, "reaping expired jobs failed"),
            }
            if prune_now {
                prune(&queue).await;
            }
            Ok::<(), std::convert::Infallible>(())
        }
    })
}

pub async fn prune(queue: &Queue) {
    let cutoff = now_ms() - queue.timing.retention.as_millis() as i64;
    match storage::prune_finished(&queue.db, cutoff, queue.timing.history_keep).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(jobs = n, "pruned finished jobs"),
        Err(err) => tracing::warn!(error = %err, "pruning jobs failed"),
    }
}
