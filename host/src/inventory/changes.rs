//! The change queue of installed software.
//!
//! Triggers on `inventory_items` (migration 0009) append the key (device,
//! application, version) of every row that is inserted, deleted, or whose
//! matching fields change, whichever code path wrote it. A consumer reads
//! the queue, re-reads the current rows of those keys, and deletes exactly
//! the entries it read in the transaction that records its result, so an
//! entry added meanwhile is kept for the next run.

use sqlx::{Any, Row, Transaction};

use super::software::SoftwareKey;
use crate::auth::TenantId;
use crate::db::Db;

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
        ids.push(r.get::<i64, _>(0));
        keys.push(SoftwareKey {
            device_name: r.get(1),
            application_name: r.get(2),
            version: r.get(3),
        });
    }
    keys.sort();
    keys.dedup();
    Ok((ids, keys))
}

/// Deletes the entries a consumer read, inside its own transaction.
pub async fn consume(
    tx: &mut Transaction<'_, Any>,
    backend: crate::db::Backend,
    tenant: &TenantId,
    ids: &[i64],
) -> sqlx::Result<()> {
    let rows = crate::db::json_array_rows(backend, 2);
    for chunk in ids.chunks(20_000) {
        sqlx::query(&format!(
            "DELETE FROM inventory_changes WHERE tenant_id = $1 \
             AND id IN (SELECT CAST(value AS BIGINT) FROM {rows})"
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(&chunk).unwrap_or_default())
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}
