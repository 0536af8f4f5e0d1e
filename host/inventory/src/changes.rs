//! The change queue of installed software.
//!
//! Triggers on `inventory_items` (migration 0009; on PostgreSQL per
//! statement since 0031) append the key (device, application, version) of
//! every row that is inserted, deleted, or whose matching fields change,
//! whichever code path wrote it. A consumer reads the queue, re-reads the
//! current rows of those keys, and deletes exactly the entries it read in
//! the transaction that records its result, so an entry added meanwhile is
//! kept for the next run.
//!
//! A tenant's queue is filled only once [`start_recording`] turned it on
//! (migration 0064): the matcher does so before its first whole match,
//! which reads everything anyway, so a tenant's first syncs queue nothing.

use sqlx::{Any, Row, Transaction};

use super::software::SoftwareKey;
use cairn_core::db::{Backend, Db};
use cairn_core::ids::TenantId;

/// Turns the tenant's queue on, if it is not yet. A consumer that reads
/// the whole inventory calls it before it reads the queue: once it returns,
/// every write that queued nothing (the queue was off) has committed, and
/// every later write queues its keys.
pub async fn start_recording(db: &Db, tenant: &TenantId) -> sqlx::Result<()> {
    let recording: Option<i64> =
        sqlx::query_scalar("SELECT 1 FROM inventory_changes_recording WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_optional(&db.pool)
            .await?;
    if recording.is_some() {
        return Ok(());
    }
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    if db.backend == Backend::Postgres {
        // Waits for every writer that looked while it was off to commit.
        sqlx::query("SELECT CAST(pg_advisory_xact_lock(9, hashtext($1)) AS TEXT)")
            .bind(tenant.as_str())
            .fetch_one(&mut *tx)
            .await?;
    }
    sqlx::query(
        "INSERT INTO inventory_changes_recording (tenant_id) VALUES ($1) \
         ON CONFLICT (tenant_id) DO NOTHING",
    )
    .bind(tenant.as_str())
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// Queue entries waiting for `tenant`.
pub async fn pending_count(db: &Db, tenant: &TenantId) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM inventory_changes WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_one(&db.pool)
        .await
}

/// The ids of the entries waiting for `tenant`: what a consumer that reads
/// everything anyway consumes.
pub async fn pending_ids(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar("SELECT id FROM inventory_changes WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_all(&db.pool)
        .await
}

/// The entries waiting for `tenant`: their ids and the distinct keys.
pub async fn pending(db: &Db, tenant: &TenantId) -> sqlx::Result<(Vec<i64>, Vec<SoftwareKey>)> {
    let rows = sqlx::query(
        "SELECT id, device_name, application_name, version FROM inventory_changes \
         WHERE tenant_id = $1",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    let mut ids = Vec::with_capacity(rows.len());
    let mut keys = Vec::with_capacity(rows.len());
    for r in rows {
        ids.push(r.try_get::<i64, _>("id")?);
        keys.push(SoftwareKey {
            device_name: r.try_get("device_name")?,
            application_name: r.try_get("application_name")?,
            version: r.try_get("version")?,
        });
    }
    keys.sort();
    keys.dedup();
    Ok((ids, keys))
}

/// Runs of consecutive ids, as (first, last). Only ids that were read
/// make a run, so a run never covers an entry the reader did not see (one
/// still uncommitted then, say); after a bulk load the million entries a
/// full read consumed are one run.
fn runs(ids: &[i64]) -> Vec<(i64, i64)> {
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut runs: Vec<(i64, i64)> = Vec::new();
    for id in sorted {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == id => *last = id,
            _ => runs.push((id, id)),
        }
    }
    runs
}

/// Deletes the entries a consumer read, inside its own transaction.
pub async fn consume(
    tx: &mut Transaction<'_, Any>,
    backend: cairn_core::db::Backend,
    tenant: &TenantId,
    ids: &[i64],
) -> sqlx::Result<()> {
    consume_from(tx, backend, Queue::Matcher, tenant, ids).await
}

/// The change queues the database fills from inventory writes.
#[derive(Debug, Clone, Copy)]
pub enum Queue {
    /// `inventory_changes`, read by the vulnerability matcher.
    Matcher,
    /// `rollup_changes`, read by the rollup.
    Rollup,
}

impl Queue {
    fn table(self) -> &'static str {
        match self {
            Queue::Matcher => "inventory_changes",
            Queue::Rollup => "rollup_changes",
        }
    }
}

/// Deletes the entries of `queue` a consumer read (by id), inside the
/// transaction that records what it made of them.
pub async fn consume_from(
    tx: &mut Transaction<'_, Any>,
    backend: cairn_core::db::Backend,
    queue: Queue,
    tenant: &TenantId,
    ids: &[i64],
) -> sqlx::Result<()> {
    let table = queue.table();
    let rows = cairn_core::db::json_array_rows(backend, 2);
    for chunk in runs(ids).chunks(5_000) {
        let chunk: Vec<[i64; 2]> = chunk.iter().map(|&(a, b)| [a, b]).collect();
        // Each run is a range scan of the primary key.
        sqlx::query(&format!(
            "DELETE FROM {table} WHERE tenant_id = $1 AND id IN \
             (SELECT c.id FROM {rows} CROSS JOIN {table} c \
             WHERE c.id BETWEEN CAST(value->>0 AS BIGINT) AND CAST(value->>1 AS BIGINT))"
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(&chunk).unwrap_or_default())
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The change topic ([`cairn_core::db::changes`]) counting every committed
/// write of rolled-up rows (`rollup::store::hold`); here, below both the
/// rollup that counts it and the tables whose kept pages read it.
pub const ROLLUP_TOPIC: &str = "rollup";

#[cfg(test)]
mod tests {
    use super::runs;

    #[test]
    fn runs_cover_only_the_ids_read() {
        assert_eq!(runs(&[]), vec![]);
        assert_eq!(
            runs(&[3, 1, 2, 2, 7, 9, 8, 11]),
            vec![(1, 3), (7, 9), (11, 11)]
        );
    }
}
