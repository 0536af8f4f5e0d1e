//! Waking idle workers: in-process on enqueue, and across processes through
//! PostgreSQL LISTEN/NOTIFY. Workers also poll about every second, so a
//! missed wake-up only delays a job.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Default)]
pub struct Wakeup(Arc<Notify>);

impl Wakeup {
    pub fn wake(&self) {
        self.0.notify_waiters();
        self.0.notify_one();
    }

    pub async fn woken(&self) {
        self.0.notified().await
    }
}

impl Wakeup {
    /// Listens on `cairn_jobs` and wakes local workers, reconnecting on errors.
    pub fn spawn_postgres_listener(
        url: String,
        wakeup: Wakeup,
        shutdown: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            loop {
                let listened = async {
                    let mut listener = PgListener::connect(&url).await?;
                    listener.listen("cairn_jobs").await?;
                    loop {
                        listener.recv().await?;
                        wakeup.wake();
                    }
                    #[allow(unreachable_code)]
                    Ok::<(), sqlx::Error>(())
                };
                tokio::select! {
                    result = listened => {
                        if let Err(err) = result {
                            tracing::warn!(error = %err, "job wake-up listener failed; reconnecting");
                        }
                    }
                    _ = shutdown.cancelled() => return,
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                    _ = shutdown.cancelled() => return,
                }
            }
        })
    }
}
