//! The change queue of installed software and the keyed reads an
//! incremental consumer needs.
//!
//! Triggers on `inventory_items` (migration 0009) append the key (device,
//! application, version) of every row that is inserted, deleted, or whose
//! matching fields change, whichever code path wrote it. A consumer reads
//! the queue, re-reads the current rows of those keys, and deletes exactly
//! the entries it read in the transaction that records its result, so an
//! entry added meanwhile is kept for the next run.

use std::collections::HashMap;

use serde_json::json;
use sqlx::{Any, Row, Transaction};

use super::storage::InstalledSoftware;
use crate::auth::TenantId;
use crate::db::Db;

/// The identity of installed software for matching: one device, one
/// application name as installed, one version (`""` when none).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SoftwareKey {
    pub device_name: String,
    pub application_name: String,
    pub version: String,
}

impl SoftwareKey {
    pub fn of(item: &InstalledSoftware) -> SoftwareKey {
        SoftwareKey {
            device_name: item.device_name.clone(),
            application_name: item.application_name.clone(),
            version: item.version.clone().unwrap_or_default(),
        }
    }
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

const SOFTWARE_COLUMNS: &str = "i.device_name, i.application_name, \
     COALESCE(i.publisher, i.vendor) AS publisher, i.version, i.os_platform";

/// The current rows of the given keys (none for a key that is gone).
pub async fn software_of_keys(
    db: &Db,
    tenant: &TenantId,
    keys: &[SoftwareKey],
) -> sqlx::Result<Vec<InstalledSoftware>> {
    let rows = crate::db::json_array_rows(db.backend, 2);
    let mut out = Vec::new();
    for chunk in keys.chunks(5_000) {
        let values: Vec<_> = chunk
            .iter()
            .map(|k| json!([k.device_name, k.application_name, k.version]))
            .collect();
        // The bound keys drive the join (CROSS JOIN fixes SQLite's order),
        // each one a lookup in the (tenant, device) index.
        let found: Vec<InstalledSoftware> = sqlx::query_as(&format!(
            "SELECT DISTINCT {SOFTWARE_COLUMNS} FROM {rows} CROSS JOIN inventory_items i \
             WHERE i.tenant_id = $1 AND i.device_name = value->>0 \
             AND i.application_name = value->>1 AND COALESCE(i.version, '') = value->>2"
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(&values).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
        out.extend(found);
    }
    Ok(out)
}

/// Every row of the given application names (as installed).
pub async fn software_of_applications(
    db: &Db,
    tenant: &TenantId,
    names: &[&str],
) -> sqlx::Result<Vec<InstalledSoftware>> {
    let values = crate::db::json_text_values(db.backend, 2);
    let mut out = Vec::new();
    for chunk in names.chunks(1_000) {
        let found: Vec<InstalledSoftware> = sqlx::query_as(&format!(
            "SELECT DISTINCT {SOFTWARE_COLUMNS} FROM inventory_items i \
             WHERE i.tenant_id = $1 AND i.device_name IS NOT NULL \
             AND i.application_name IN ({values})"
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
        out.extend(found);
    }
    Ok(out)
}

/// Distinct devices per application name (as installed), for the names
/// given; a name with no device is absent.
pub async fn devices_per_application(
    db: &Db,
    tenant: &TenantId,
    names: &[&str],
) -> sqlx::Result<HashMap<String, i64>> {
    let values = crate::db::json_text_values(db.backend, 2);
    let mut out = HashMap::new();
    for chunk in names.chunks(1_000) {
        let rows = sqlx::query(&format!(
            "SELECT application_name, COUNT(DISTINCT device_name) FROM inventory_items \
             WHERE tenant_id = $1 AND device_name IS NOT NULL \
             AND application_name IN ({values}) GROUP BY application_name"
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
        out.extend(
            rows.into_iter()
                .map(|r| (r.get::<String, _>(0), r.get::<i64, _>(1))),
        );
    }
    Ok(out)
}
