//! The one owner of `processes`: each serving process says it is alive (a
//! heartbeat every [`HEARTBEAT`]) and whether it keeps its files on a
//! local disk, so that a process sharing the database with others while
//! keeping files only it can read says so (docs: deployment): in its log
//! when it first sees another, and as `degraded` in `/health/ready`.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use cairn_core::db::{now_ms, Db};

/// How often a process says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(10);
/// A process not heard of for this long is gone (killed, cut off).
const ALIVE_FOR_MS: i64 = 30_000;

/// Says `id` is alive now; its first call registers it.
pub async fn beat(db: &Db, id: &str, local_files: bool, now: i64) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO processes (id, started_at, heartbeat_at, local_files) VALUES ($1, $2, $2, $3) \
         ON CONFLICT (id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
    )
    .bind(id)
    .bind(now)
    .bind(i64::from(local_files))
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// `id` leaves (a shutdown), and processes silent for long are forgotten.
async fn leave(db: &Db, id: &str) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query("DELETE FROM processes WHERE id = $1 OR heartbeat_at < $2")
        .bind(id)
        .bind(now_ms() - 10 * ALIVE_FOR_MS)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// How many other processes are alive on the database at `now`.
pub async fn others_alive(db: &Db, id: &str, now: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM processes WHERE id <> $1 AND heartbeat_at >= $2")
        .bind(id)
        .bind(now - ALIVE_FOR_MS)
        .fetch_one(&db.pool)
        .await
}

/// What a process keeping local files while others serve the database
/// risks, in words (the log's warning, the readiness check's detail).
pub fn sharing_warning(others: i64) -> String {
    format!(
        "{others} other {} this database, but this one keeps its files (uploads, reports, \
         portal documents) on a local disk the others cannot read: an upload parsed or a \
         file downloaded through another process fails. Give every process one bucket \
         (CAIRN_BLOB_STORE=s3; docs: deployment).",
        if others == 1 {
            "process serves"
        } else {
            "processes serve"
        }
    )
}

/// Beats for process `id` until `shutdown`, then leaves; warns once each
/// time other processes appear while `local_files`.
pub fn spawn(
    db: Db,
    id: String,
    local_files: bool,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut warned = false;
        loop {
            let now = now_ms();
            let seen = async {
                beat(&db, &id, local_files, now).await?;
                others_alive(&db, &id, now).await
            };
            match seen.await {
                Ok(others) if local_files && others > 0 => {
                    if !warned {
                        tracing::warn!("{}", sharing_warning(others));
                    }
                    warned = true;
                }
                Ok(_) => warned = false,
                Err(err) => tracing::warn!(error = %err, "the process heartbeat was not written"),
            }
            tokio::select! {
                _ = tokio::time::sleep(HEARTBEAT) => {}
                _ = shutdown.cancelled() => break,
            }
        }
        if let Err(err) = leave(&db, &id).await {
            tracing::warn!(error = %err, "the process could not say it left");
        }
    })
}
