//! Figures over many tenants at once, for a partner's views across its
//! customers: each reads the tenants' kept counts or one index range per
//! tenant, never a whole table.

use std::collections::HashMap;

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use super::rollup::VersionCount;
use cairn_core::db::{json_text_values, stored_json, tenant_ids_json, Db};
use cairn_core::ids::TenantId;

/// A tenant's inventory in brief.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InventoryBrief {
    pub devices: i64,
    /// When the tenant's inventory was last rebuilt (ms); none before the
    /// first rebuild.
    pub rebuilt_at: Option<i64>,
}

/// Each tenant's device count (kept by its last rebuild, counted when it
/// has none yet) and last rebuild; tenants without an inventory are absent.
pub async fn briefs(
    db: &Db,
    tenants: &[TenantId],
) -> sqlx::Result<HashMap<String, InventoryBrief>> {
    let rows = sqlx::query(&format!(
        "SELECT r.tenant_id, r.rollup_at, CAST(COALESCE(r.assets_count, \
         (SELECT COUNT(*) FROM assets a WHERE a.tenant_id = r.tenant_id)) AS BIGINT) AS devices \
         FROM rollup_state r WHERE r.tenant_id IN ({})",
        json_text_values(db.backend, 1)
    ))
    .bind(tenant_ids_json(tenants))
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get("tenant_id")?,
                InventoryBrief {
                    devices: r.try_get("devices")?,
                    rebuilt_at: r.try_get("rollup_at")?,
                },
            ))
        })
        .collect()
}

/// An application of one tenant with its installed versions.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TenantApplication {
    pub tenant_id: String,
    pub name: String,
    pub vendor: Option<String>,
    pub device_count: i64,
    pub newest_version: Option<String>,
    /// Devices per installed version, most installed first.
    pub versions: Vec<VersionCount>,
}

/// The applications of `tenants` whose name contains `needle` (any case),
/// by tenant and name; at most `limit`.
pub async fn applications_named(
    db: &Db,
    tenants: &[TenantId],
    needle: &str,
    limit: i64,
) -> sqlx::Result<Vec<TenantApplication>> {
    let pattern = format!("%{}%", super::search::escape_like(needle));
    let rows = sqlx::query(&format!(
        "SELECT a.tenant_id, a.name, a.vendor, a.device_count, a.newest_version, a.version_counts \
         FROM applications a WHERE a.tenant_id IN ({}) AND LOWER(a.name) LIKE LOWER($2) ESCAPE '\\' \
         ORDER BY a.tenant_id, a.name LIMIT $3",
        json_text_values(db.backend, 1)
    ))
    .bind(tenant_ids_json(tenants))
    .bind(pattern)
    .bind(limit)
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(TenantApplication {
                tenant_id: r.try_get("tenant_id")?,
                name: r.try_get("name")?,
                vendor: r.try_get("vendor")?,
                device_count: r.try_get("device_count")?,
                newest_version: r.try_get("newest_version")?,
                versions: stored_json("version_counts", r.try_get("version_counts")?)?,
            })
        })
        .collect()
}
