//! The one owner of `connector_reloads`: the count of connector reloads all
//! processes on the database share. A process that reloads its connectors
//! advances it; every process reads it every [`POLL`] and reloads its own
//! directory when it moved.

use std::time::Duration;

use cairn_core::db::{now_ms, Db};

/// How often a process looks whether another one reloaded.
pub const POLL: Duration = Duration::from_secs(1);

/// The shared reload count.
pub async fn generation(db: &Db) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT generation FROM connector_reloads WHERE id = 1")
        .fetch_one(&db.pool)
        .await
}

/// Counts a reload by process `by`; answers the new count.
pub async fn advance(db: &Db, by: &str) -> sqlx::Result<i64> {
    let _turn = db.write_turn().await;
    sqlx::query_scalar(
        "UPDATE connector_reloads SET generation = generation + 1, reloaded_at = $1, \
         reloaded_by = $2 WHERE id = 1 RETURNING generation",
    )
    .bind(now_ms())
    .bind(by)
    .fetch_one(&db.pool)
    .await
}
