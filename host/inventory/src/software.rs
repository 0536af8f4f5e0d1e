//! Installed software as vulnerability matching reads it: the whole
//! inventory of a tenant (or one application, vendor or device), or the
//! rows of given keys or application names.
//!
//! A tenant can have millions of rows that repeat a few thousand device,
//! application, publisher, version and platform strings: each read shares
//! one copy of each distinct string among its rows.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;
use serde_json::json;
use sqlx::Row;

use super::normalize;
use super::search::escape_like;
use super::storage::asset_names;
use cairn_core::db::Db;
use cairn_core::ids::TenantId;

/// One installed application on one device.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstalledSoftware {
    pub device_name: Arc<str>,
    pub application_name: Arc<str>,
    /// The publisher, else the vendor the source reported.
    pub publisher: Option<Arc<str>>,
    pub version: Option<Arc<str>>,
    pub os_platform: Option<Arc<str>>,
    /// The OS version or name a source gave (`Ubuntu 22.04.3 LTS`): which
    /// distribution release a Linux package belongs to.
    pub os_version: Option<Arc<str>>,
}

/// Which of a tenant's software to read.
#[derive(Debug, Clone, Default)]
pub struct SoftwareScope {
    /// Only the application whose rolled-up name is this.
    pub application: Option<String>,
    /// Only software whose vendor or publisher is this (case-insensitive).
    pub vendor: Option<String>,
    /// Only this asset (all its names).
    pub device_name: Option<String>,
    /// Only devices of this platform label (`linux`, as stored).
    pub platform: Option<String>,
}

/// The identity of installed software for matching: one device, one
/// application name as installed, one version (`""` when none).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SoftwareKey {
    pub device_name: String,
    pub application_name: String,
    pub version: String,
}

/// Builds rows sharing one copy of each distinct string.
#[derive(Default)]
struct Reader {
    strings: HashSet<Arc<str>>,
}

impl Reader {
    fn text(&mut self, value: &str) -> Arc<str> {
        if let Some(known) = self.strings.get(value) {
            return known.clone();
        }
        let fresh: Arc<str> = Arc::from(value);
        self.strings.insert(fresh.clone());
        fresh
    }

    fn optional(&mut self, value: Option<&str>) -> Option<Arc<str>> {
        value.map(|v| self.text(v))
    }

    /// Streams `query` (columns as `SOFTWARE_COLUMNS`) into `out`.
    async fn read<'q>(
        &mut self,
        db: &Db,
        query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
        out: &mut Vec<InstalledSoftware>,
    ) -> sqlx::Result<()> {
        let mut rows = query.fetch(&db.pool);
        while let Some(r) = rows.try_next().await? {
            out.push(InstalledSoftware {
                device_name: self.text(r.try_get::<&str, _>("device_name")?),
                application_name: self.text(r.try_get::<&str, _>("application_name")?),
                publisher: self.optional(r.try_get::<Option<&str>, _>("publisher")?),
                version: self.optional(r.try_get::<Option<&str>, _>("version")?),
                os_platform: self.optional(r.try_get::<Option<&str>, _>("os_platform")?),
                os_version: self.optional(r.try_get::<Option<&str>, _>("os_version")?),
            });
        }
        Ok(())
    }
}

/// Keys bound per keyed read: large, because PostgreSQL may answer each
/// statement with one pass over the tenant's rows rather than a lookup per
/// key, and that pass should come once, not once per few thousand keys.
pub const KEYS_PER_READ: usize = 50_000;

const SOFTWARE_COLUMNS: &str = "i.device_name, i.application_name, \
     COALESCE(i.publisher, i.vendor) AS publisher, i.version, i.os_platform, i.os_version";

/// Distinct (device, application, publisher, version, platform) of a
/// tenant's inventory, within `scope`.
pub async fn installed_software(
    db: &Db,
    tenant: &TenantId,
    scope: &SoftwareScope,
) -> sqlx::Result<Vec<InstalledSoftware>> {
    let names = match &scope.device_name {
        Some(device) => {
            Some(serde_json::to_string(&asset_names(db, tenant, device).await?).unwrap_or_default())
        }
        None => None,
    };
    let device_filter = format!(
        "i.device_name IN ({})",
        cairn_core::db::json_text_values(db.backend, 4)
    );
    let prefix = scope
        .application
        .as_deref()
        .map(|a| format!("{}%", escape_like(a)));
    let statement = format!(
        "SELECT DISTINCT {SOFTWARE_COLUMNS} FROM inventory_items i WHERE i.tenant_id = $1 \
         AND i.device_name IS NOT NULL AND i.application_name IS NOT NULL \
         AND (CAST($2 AS TEXT) IS NULL OR LOWER(i.application_name) LIKE LOWER($2) ESCAPE '\\') \
         AND (CAST($3 AS TEXT) IS NULL OR LOWER(i.vendor) = LOWER($3) OR LOWER(i.publisher) = LOWER($3)) \
         AND (CAST($4 AS TEXT) IS NULL OR {device_filter}) \
         AND (CAST($5 AS TEXT) IS NULL OR i.os_platform = $5)"
    );
    let query = sqlx::query(&statement)
        .bind(tenant.as_str())
        .bind(prefix.as_deref())
        .bind(scope.vendor.as_deref())
        .bind(names.as_deref())
        .bind(scope.platform.as_deref());
    let mut rows = Vec::new();
    Reader::default().read(db, query, &mut rows).await?;
    if let Some(name) = &scope.application {
        // The prefix narrows; the rollup's name rule decides.
        rows.retain(|r| {
            normalize::application_name(&r.application_name).is_some_and(|n| &n == name)
        });
    }
    Ok(rows)
}

/// The current rows of the given keys (none for a key that is gone).
pub async fn software_of_keys(
    db: &Db,
    tenant: &TenantId,
    keys: &[SoftwareKey],
) -> sqlx::Result<Vec<InstalledSoftware>> {
    let rows = cairn_core::db::json_array_rows(db.backend, 2);
    let mut out = Vec::new();
    let mut reader = Reader::default();
    for chunk in keys.chunks(KEYS_PER_READ) {
        let values: Vec<_> = chunk
            .iter()
            .map(|k| json!([k.device_name, k.application_name, k.version]))
            .collect();
        // The bound keys drive the join (CROSS JOIN fixes SQLite's order),
        // each one a lookup in the (tenant, device) index.
        let statement = format!(
            "SELECT DISTINCT {SOFTWARE_COLUMNS} FROM {rows} CROSS JOIN inventory_items i \
             WHERE i.tenant_id = $1 AND i.device_name = value->>0 \
             AND i.application_name = value->>1 AND COALESCE(i.version, '') = value->>2"
        );
        let query = sqlx::query(&statement)
            .bind(tenant.as_str())
            .bind(serde_json::to_string(&values).unwrap_or_default());
        reader.read(db, query, &mut out).await?;
    }
    Ok(out)
}

/// Every row of the given application names (as installed).
pub async fn software_of_applications(
    db: &Db,
    tenant: &TenantId,
    names: &[&str],
) -> sqlx::Result<Vec<InstalledSoftware>> {
    let values = cairn_core::db::json_text_values(db.backend, 2);
    let mut out = Vec::new();
    let mut reader = Reader::default();
    for chunk in names.chunks(1_000) {
        let statement = format!(
            "SELECT DISTINCT {SOFTWARE_COLUMNS} FROM inventory_items i \
             WHERE i.tenant_id = $1 AND i.device_name IS NOT NULL \
             AND i.application_name IN ({values})"
        );
        let query = sqlx::query(&statement)
            .bind(tenant.as_str())
            .bind(serde_json::to_string(chunk).unwrap_or_default());
        reader.read(db, query, &mut out).await?;
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
    let values = cairn_core::db::json_text_values(db.backend, 2);
    let mut out = HashMap::new();
    for chunk in names.chunks(1_000) {
        let rows = sqlx::query(&format!(
            "SELECT application_name, COUNT(DISTINCT device_name) AS devices FROM inventory_items \
             WHERE tenant_id = $1 AND device_name IS NOT NULL \
             AND application_name IN ({values}) GROUP BY application_name"
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
        out.extend(
            rows.into_iter()
                .map(|r| {
                    Ok((
                        r.try_get::<String, _>("application_name")?,
                        r.try_get::<i64, _>("devices")?,
                    ))
                })
                .collect::<sqlx::Result<Vec<_>>>()?,
        );
    }
    Ok(out)
}
