//! Requeues or fails jobs whose worker stopped heartbeating, and prunes old
//! finished jobs.

use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::storage;
use super::worker::Queue;
use cairn_core::db::now_ms;

/// Pruning is cheap but needs no minute-level precision.
const PRUNE_EVERY_N_PASSES: u64 = 60;

pub fn spawn(queue: Arc<Queue>, shutdown: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(queue.timing.reaper_interval);
        let mut passes: u64 = 0;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = shutdown.cancelled() => return,
            }
            match storage::reap_expired(&queue.db).await {
                Ok(0) => {}
                Ok(n) => {
                    tracing::warn!(jobs = n, "reaped jobs whose lease expired");
                    queue.wakeup.wake();
                }
                Err(err) => tracing::warn!(error = %err, "reaping expired jobs failed"),
            }
            if passes.is_multiple_of(PRUNE_EVERY_N_PASSES) {
                prune(&queue).await;
            }
            passes += 1;
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
