//! Reads of the inventory area beyond structured search: items, vendors,
//! autocomplete and counts. Every query is scoped by tenant.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use super::exposure::Exposure;
use super::normalize;
use super::search::{escape_like, fold};
use cairn_core::db::{stored_json, to_rfc3339, Db};
use cairn_core::ids::TenantId;

/// One inventory row as clients read it.
#[derive(Debug, Serialize, ToSchema, sqlx_macros::FromRow)]
pub struct ItemView {
    pub source: String,
    pub device_name: Option<String>,
    pub device_id: Option<String>,
    pub os_platform: Option<String>,
    pub os_version: Option<String>,
    /// The OS's name and edition, where the source gives it apart.
    pub os_name: Option<String>,
    /// The OS's build, where the source gives it apart.
    pub os_build: Option<String>,
    pub user_email: Option<String>,
    pub user_name: Option<String>,
    pub application_name: Option<String>,
    pub vendor: Option<String>,
    pub version: Option<String>,
    pub publisher: Option<String>,
    pub client_id: Option<String>,
    #[serde(skip)]
    pub updated_at: i64,
    /// When its source first reported this row or last reported it changed
    /// (a sync or upload that reports it unchanged leaves it).
    #[sqlx(skip)]
    pub changed_at: String,
}

const ITEM_COLUMNS: &str = "source, device_name, device_id, os_platform, os_version, os_name, \
    os_build, user_email, user_name, application_name, vendor, version, publisher, client_id, \
    updated_at";

fn with_time(mut items: Vec<ItemView>) -> Vec<ItemView> {
    for item in &mut items {
        item.changed_at = to_rfc3339(item.updated_at);
    }
    items
}

/// The asset's observed names: every spelling that shares its NetBIOS key.
pub async fn asset_names(
    db: &Db,
    tenant: &TenantId,
    device_name: &str,
) -> sqlx::Result<Vec<String>> {
    let names: Option<String> =
        sqlx::query_scalar("SELECT names FROM assets WHERE tenant_id = $1 AND asset_key = $2")
            .bind(tenant.as_str())
            .bind(normalize::netbios_key(Some(device_name)))
            .fetch_optional(&db.pool)
            .await?;
    // No asset yet (no rebuild since the first sync): no names but the one asked for.
    let mut names: Vec<String> = names
        .map(|n| cairn_core::db::stored_json("names", &n))
        .transpose()?
        .unwrap_or_default();
    // Rows synced since the last rebuild are found by the name asked for.
    if !names.iter().any(|n| n == device_name) {
        names.push(device_name.to_string());
    }
    Ok(names)
}

/// Devices whose inventory rows name one of `emails` (ignoring case) as
/// their user: (device name, source) pairs, by name.
pub async fn devices_of_users(
    db: &Db,
    tenant: &TenantId,
    emails: &[String],
) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(&format!(
        "SELECT DISTINCT device_name, source FROM inventory_items \
         WHERE tenant_id = $1 AND device_name IS NOT NULL AND LOWER(user_email) IN ({}) \
         ORDER BY device_name, source LIMIT 1000",
        cairn_core::db::json_text_values(db.backend, 2)
    ))
    .bind(tenant.as_str())
    .bind(cairn_core::db::lowered_json(emails))
    .fetch_all(&db.pool)
    .await
}

/// Items of one asset (all its names), by application then version.
pub async fn items_of_device(
    db: &Db,
    tenant: &TenantId,
    device_name: &str,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<ItemView>, i64)> {
    let names = asset_names(db, tenant, device_name).await?;
    let page = ItemsIn {
        column: "device_name",
        values: &names,
        order: "application_name, version",
    };
    page.read(db, tenant, skip, limit).await
}

/// A page of the tenant's items whose `column` is one of `values`, ordered
/// by `order` (then source and key, so pages never overlap), and its total.
struct ItemsIn<'a> {
    column: &'static str,
    values: &'a [String],
    order: &'static str,
}

impl ItemsIn<'_> {
    async fn read(
        &self,
        db: &Db,
        tenant: &TenantId,
        skip: i64,
        limit: i64,
    ) -> sqlx::Result<(Vec<ItemView>, i64)> {
        let values = serde_json::to_string(self.values).unwrap_or_default();
        let filter = format!(
            "tenant_id = $1 AND {} IN ({})",
            self.column,
            cairn_core::db::json_text_values(db.backend, 2)
        );
        let total = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM inventory_items WHERE {filter}"
        ))
        .bind(tenant.as_str())
        .bind(&values)
        .fetch_one(&db.pool)
        .await?;
        let items = sqlx::query_as(&format!(
            "SELECT {ITEM_COLUMNS} FROM inventory_items WHERE {filter} \
             ORDER BY {}, source, item_key LIMIT $3 OFFSET $4",
            self.order
        ))
        .bind(tenant.as_str())
        .bind(&values)
        .bind(limit)
        .bind(skip)
        .fetch_all(&db.pool)
        .await?;
        Ok((with_time(items), total))
    }
}

/// Items rolled up into the application `name`: raw names that normalize
/// to it (so `Teams ({guid})` rows belong to `Teams`).
pub async fn items_of_application(
    db: &Db,
    tenant: &TenantId,
    name: &str,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<ItemView>, i64)> {
    // Every raw spelling starts with the normalized name; the prefix
    // narrows the distinct names read, normalizing decides.
    let spellings: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT application_name FROM inventory_items WHERE tenant_id = $1 \
         AND application_name IS NOT NULL AND LOWER(application_name) LIKE LOWER($2) ESCAPE '\\'",
    )
    .bind(tenant.as_str())
    .bind(format!("{}%", escape_like(name)))
    .fetch_all(&db.pool)
    .await?;
    let matching: Vec<String> = spellings
        .into_iter()
        .filter(|raw| normalize::application_name(raw).is_some_and(|n| n == name))
        .collect();
    if matching.is_empty() {
        return Ok((vec![], 0));
    }
    let page = ItemsIn {
        column: "application_name",
        values: &matching,
        order: "device_name, version",
    };
    page.read(db, tenant, skip, limit).await
}

/// All items of the tenant, optionally narrowed by free text over device,
/// application and vendor.
pub async fn items(
    db: &Db,
    tenant: &TenantId,
    search: Option<&str>,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<ItemView>, i64)> {
    let pattern = search.map(|s| format!("%{}%", escape_like(s)));
    let filter = "tenant_id = $1 AND (CAST($2 AS TEXT) IS NULL \
                  OR LOWER(device_name) LIKE LOWER($2) ESCAPE '\\' \
                  OR LOWER(application_name) LIKE LOWER($2) ESCAPE '\\' \
                  OR LOWER(vendor) LIKE LOWER($2) ESCAPE '\\')";
    let items = sqlx::query_as(&format!(
        "SELECT {ITEM_COLUMNS} FROM inventory_items WHERE {filter} \
         ORDER BY device_name, application_name, version, source, item_key LIMIT $3 OFFSET $4"
    ))
    .bind(tenant.as_str())
    .bind(pattern.as_deref())
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM inventory_items WHERE {filter}"
    ))
    .bind(tenant.as_str())
    .bind(pattern.as_deref())
    .fetch_one(&db.pool)
    .await?;
    Ok((with_time(items), total))
}

#[derive(Debug, Serialize, ToSchema, sqlx_macros::FromRow)]
pub struct VendorView {
    pub name: String,
    /// Applications whose dominant vendor this is.
    pub application_count: i64,
    /// Distinct devices with any of those applications.
    pub device_count: i64,
    /// Distinct open CVEs across its applications.
    #[sqlx(default)]
    pub cve_count: i64,
}

pub async fn vendors(
    db: &Db,
    exposure: &Exposure,
    tenant: &TenantId,
    search: Option<&str>,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<VendorView>, i64)> {
    let pattern = search.map(|s| format!("%{}%", escape_like(&fold(s))));
    let filter = "tenant_id = $1 AND (CAST($2 AS TEXT) IS NULL OR sort_key LIKE $2 ESCAPE '\\')";
    let rows = sqlx::query_as(&format!(
        "SELECT name, application_count, device_count FROM vendors WHERE {filter} \
         ORDER BY device_count DESC, name LIMIT $3 OFFSET $4"
    ))
    .bind(tenant.as_str())
    .bind(pattern.as_deref())
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM vendors WHERE {filter}"))
        .bind(tenant.as_str())
        .bind(pattern.as_deref())
        .fetch_one(&db.pool)
        .await?;
    let mut rows: Vec<VendorView> = rows;
    if !rows.is_empty() {
        let by_app = cves_by_rolled_up_name(db, exposure, tenant).await?;
        if !by_app.is_empty() {
            let apps: Vec<(String, Option<String>)> = sqlx::query_as(
                "SELECT name, vendor FROM applications WHERE tenant_id = $1 AND vendor IS NOT NULL",
            )
            .bind(tenant.as_str())
            .fetch_all(&db.pool)
            .await?;
            for vendor in &mut rows {
                let cves: std::collections::HashSet<&String> = apps
                    .iter()
                    .filter(|(_, v)| v.as_deref() == Some(vendor.name.as_str()))
                    .filter_map(|(name, _)| by_app.get(name))
                    .flatten()
                    .collect();
                vendor.cve_count = cves.len() as i64;
            }
        }
    }
    Ok((rows, total))
}

/// Open CVE ids per application of the rollup, by rolled-up name.
pub type CvesByApplication = HashMap<String, HashSet<String>>;

/// Open CVE ids per application of the rollup (installed names folded the
/// way the rollup folds them). Folded once per answer of the exposure: kept
/// beside the answer it was folded from while the exposure hands out that
/// same answer.
pub async fn cves_by_rolled_up_name(
    db: &Db,
    exposure: &Exposure,
    tenant: &TenantId,
) -> sqlx::Result<Arc<CvesByApplication>> {
    type Folded = (Arc<HashMap<String, Vec<String>>>, Arc<CvesByApplication>);
    static FOLDED: Mutex<Option<HashMap<(u64, String), Folded>>> = Mutex::new(None);
    /// Tenants' folded answers kept at most (then it starts over).
    const MAX_TENANTS: usize = 10_000;

    let by_installed = exposure.open_cves_by_application(db, tenant).await?;
    let key = (db.instance(), tenant.as_str().to_string());
    {
        let folded = FOLDED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((from, folded)) = folded.as_ref().and_then(|f| f.get(&key)) {
            if Arc::ptr_eq(from, &by_installed) {
                return Ok(folded.clone());
            }
        }
    }
    let mut out = CvesByApplication::new();
    for (installed, cves) in by_installed.iter() {
        if let Some(name) = normalize::application_name(installed) {
            out.entry(name).or_default().extend(cves.iter().cloned());
        }
    }
    let out = Arc::new(out);
    let mut folded = FOLDED.lock().unwrap_or_else(|e| e.into_inner());
    let folded = folded.get_or_insert_with(HashMap::new);
    if folded.len() >= MAX_TENANTS {
        folded.clear();
    }
    folded.insert(key, (by_installed, out.clone()));
    Ok(out)
}

#[derive(Debug, Serialize, ToSchema, sqlx_macros::FromRow)]
pub struct AppName {
    pub name: String,
    pub device_count: i64,
    /// Distinct open CVEs of the application.
    #[sqlx(default)]
    pub cve_count: i64,
}

/// Application names starting with (then containing) `search`, most
/// installed first: what an autocomplete box wants.
pub async fn app_names(
    db: &Db,
    exposure: &Exposure,
    tenant: &TenantId,
    search: Option<&str>,
    skip: i64,
    limit: i64,
) -> sqlx::Result<Vec<AppName>> {
    let escaped = search.map(|s| escape_like(&fold(s))).unwrap_or_default();
    let names: Vec<AppName> = sqlx::query_as(
        "SELECT name, device_count FROM applications WHERE tenant_id = $1 \
         AND sort_key LIKE $2 ESCAPE '\\' \
         ORDER BY CASE WHEN sort_key LIKE $3 ESCAPE '\\' THEN 0 ELSE 1 END, \
         device_count DESC, name LIMIT $4 OFFSET $5",
    )
    .bind(tenant.as_str())
    .bind(format!("%{escaped}%"))
    .bind(format!("{escaped}%"))
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await
    .map(|names: Vec<AppName>| names)?;
    let by_app = cves_by_rolled_up_name(db, exposure, tenant).await?;
    Ok(names
        .into_iter()
        .map(|mut n| {
            n.cve_count = by_app.get(&n.name).map_or(0, |c| c.len() as i64);
            n
        })
        .collect())
}

#[derive(Debug, Serialize, ToSchema)]
pub struct InventoryStats {
    pub applications: i64,
    /// Assets of the NetBIOS view.
    pub devices: i64,
    pub vendors: i64,
    /// Distinct CVEs with an open finding on the tenant's devices.
    pub vulnerabilities: i64,
    /// When the rollup was last rebuilt; absent before the first rebuild.
    pub rollup_at: Option<String>,
}

pub async fn stats(
    db: &Db,
    exposure: &Exposure,
    tenant: &TenantId,
) -> sqlx::Result<InventoryStats> {
    let mut counts = [0i64; 3];
    for (i, table) in ["applications", "assets", "vendors"].iter().enumerate() {
        counts[i] = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {table} WHERE tenant_id = $1"
        ))
        .bind(tenant.as_str())
        .fetch_one(&db.pool)
        .await?;
    }
    let rollup_at: Option<Option<i64>> =
        sqlx::query_scalar("SELECT rollup_at FROM rollup_state WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_optional(&db.pool)
            .await?;
    Ok(InventoryStats {
        applications: counts[0],
        devices: counts[1],
        vendors: counts[2],
        vulnerabilities: exposure.open_cve_count(db, tenant).await?,
        rollup_at: rollup_at.flatten().map(to_rfc3339),
    })
}

/// What kind of name a [`NamedSoftware`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SoftwareNameKind {
    Application,
    Vendor,
}

/// An application or vendor of the rollup with its device count: what
/// text about software is matched against.
#[derive(Debug, Clone)]
pub struct NamedSoftware {
    pub name: String,
    pub kind: SoftwareNameKind,
    pub device_count: i64,
}

/// The tenant's applications and vendors, most installed first (at most
/// `limit` of each).
pub async fn named_software(
    db: &Db,
    tenant: &TenantId,
    limit: i64,
) -> sqlx::Result<Vec<NamedSoftware>> {
    let mut named = vec![];
    for (table, kind) in [
        ("applications", SoftwareNameKind::Application),
        ("vendors", SoftwareNameKind::Vendor),
    ] {
        let rows: Vec<(String, i64)> = sqlx::query_as(&format!(
            "SELECT name, device_count FROM {table} WHERE tenant_id = $1 \
             ORDER BY device_count DESC, name LIMIT $2"
        ))
        .bind(tenant.as_str())
        .bind(limit)
        .fetch_all(&db.pool)
        .await?;
        named.extend(rows.into_iter().map(|(name, device_count)| NamedSoftware {
            name,
            kind,
            device_count,
        }));
    }
    Ok(named)
}

/// The users inventory rows name on the devices named, ignoring case, one
/// of `device_names`: (device name, user e-mail, user name, source), each
/// once, at most 10,000.
pub async fn users_of_devices(
    db: &Db,
    tenant: &TenantId,
    device_names: &[String],
) -> sqlx::Result<Vec<(String, String, Option<String>, String)>> {
    if device_names.is_empty() {
        return Ok(vec![]);
    }
    sqlx::query_as(&format!(
        "SELECT DISTINCT device_name, user_email, user_name, source FROM inventory_items \
         WHERE tenant_id = $1 AND user_email IS NOT NULL AND user_email <> '' \
         AND LOWER(device_name) IN ({}) ORDER BY device_name, user_email, source LIMIT 10000",
        cairn_core::db::json_text_values(db.backend, 2)
    ))
    .bind(tenant.as_str())
    .bind(cairn_core::db::lowered_json(device_names))
    .fetch_all(&db.pool)
    .await
}

/// An application of the rollup as reports list it.
#[derive(Debug, Clone)]
pub struct ApplicationSummary {
    pub name: String,
    pub vendor: Option<String>,
    pub device_count: i64,
    pub newest_version: Option<String>,
    /// Devices per version, most first.
    pub versions: Vec<(String, i64)>,
}

/// The tenant's applications, most installed first.
pub async fn application_summaries(
    db: &Db,
    tenant: &TenantId,
) -> sqlx::Result<Vec<ApplicationSummary>> {
    #[derive(serde::Deserialize)]
    struct VersionCount {
        version: String,
        count: i64,
    }
    let rows = sqlx::query(
        "SELECT name, vendor, device_count, newest_version, version_counts FROM applications \
         WHERE tenant_id = $1 ORDER BY device_count DESC, name",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter()
        .map(|r| {
            let mut versions: Vec<(String, i64)> =
                stored_json::<Vec<VersionCount>>("version_counts", r.try_get("version_counts")?)?
                    .into_iter()
                    .map(|v| (v.version, v.count))
                    .collect();
            versions.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            Ok(ApplicationSummary {
                name: r.try_get("name")?,
                vendor: r.try_get("vendor")?,
                device_count: r.try_get("device_count")?,
                newest_version: r.try_get("newest_version")?,
                versions,
            })
        })
        .collect()
}
