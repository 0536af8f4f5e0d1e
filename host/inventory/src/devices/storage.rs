//! Reads of the devices area outside structured search. Every query is
//! scoped by tenant.

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::normalize::NETBIOS_LEN;
use crate::search::escape_like;
use cairn_core::db::{to_rfc3339, Backend, Db};
use cairn_core::ids::TenantId;

use crate::assets::{AssetRow, COLUMNS};

pub async fn asset_where(
    db: &Db,
    tenant: &TenantId,
    condition: &str,
    value: &str,
) -> sqlx::Result<Option<AssetRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM assets a WHERE a.tenant_id = $1 AND {condition} \
         ORDER BY a.asset_key LIMIT 1"
    ))
    .bind(tenant.as_str())
    .bind(value)
    .fetch_optional(&db.pool)
    .await
}

#[derive(Debug, sqlx_macros::FromRow)]
struct DeviceGroup {
    device_name: String,
    device_id: Option<String>,
    os_platform: Option<String>,
    os_version: Option<String>,
    os_name: Option<String>,
    os_build: Option<String>,
    user_email: Option<String>,
    application_count: i64,
    sources: String,
    last_seen: i64,
}

/// One device name as the sources reported it, before NetBIOS merging.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceView {
    pub device_name: String,
    pub device_id: Option<String>,
    pub os_platform: Option<String>,
    pub os_version: Option<String>,
    /// The OS's name and edition, where a source gives it apart.
    pub os_name: Option<String>,
    /// The OS's build, where a source gives it apart.
    pub os_build: Option<String>,
    pub user_email: Option<String>,
    pub application_count: i64,
    pub sources: Vec<String>,
    pub last_seen: String,
    /// Device-enrichment records of CSV sources, by provider key, matched
    /// on the exact name or its first 15 characters.
    #[schema(value_type = Object)]
    pub enrichment: BTreeMap<String, Value>,
    /// The user as a directory area knows them, when one does.
    pub directory_user: Option<super::DirectoryUser>,
}

/// Unique device names across every source, with the enrichment of CSV
/// device sources (`enrichment_sources`) attached.
pub async fn devices(
    db: &Db,
    tenant: &TenantId,
    search: Option<&str>,
    enrichment_sources: &[String],
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<DeviceView>, i64)> {
    let sources = match db.backend {
        Backend::Sqlite => "group_concat(DISTINCT source)",
        Backend::Postgres => "string_agg(DISTINCT source, ',')",
    };
    let pattern = search.map(|s| format!("%{}%", escape_like(s)));
    let filter = "tenant_id = $1 AND device_name IS NOT NULL AND device_name <> '' \
                  AND (CAST($2 AS TEXT) IS NULL OR LOWER(device_name) LIKE LOWER($2) ESCAPE '\\')";
    let groups: Vec<DeviceGroup> = sqlx::query_as(&format!(
        "SELECT device_name, MAX(device_id) AS device_id, MAX(os_platform) AS os_platform, \
         MAX(os_version) AS os_version, MAX(os_name) AS os_name, MAX(os_build) AS os_build, \
         MAX(user_email) AS user_email, \
         COUNT(DISTINCT application_name) AS application_count, {sources} AS sources, \
         MAX(updated_at) AS last_seen FROM inventory_items WHERE {filter} \
         GROUP BY device_name ORDER BY device_name LIMIT $3 OFFSET $4"
    ))
    .bind(tenant.as_str())
    .bind(pattern.as_deref())
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar(&format!(
        "SELECT COUNT(DISTINCT device_name) FROM inventory_items WHERE {filter}"
    ))
    .bind(tenant.as_str())
    .bind(pattern.as_deref())
    .fetch_one(&db.pool)
    .await?;
    let enrichment = enrichment_for(db, tenant, &groups, enrichment_sources).await?;
    let completed_runs = crate::seen::completed_runs(db, tenant).await?;
    let devices = groups
        .into_iter()
        .map(|g| {
            let mut sources: Vec<String> = g.sources.split(',').map(str::to_string).collect();
            sources.sort();
            // A sync leaves rows it finds unchanged as they are: a device
            // was last reported by each of its sources' last complete runs.
            let last_seen = sources
                .iter()
                .filter_map(|source| completed_runs.get(source).copied())
                .fold(g.last_seen, i64::max);
            let matched = [g.device_name.to_lowercase(), truncated(&g.device_name)]
                .iter()
                .filter_map(|name| enrichment.get(name))
                .flat_map(|by_source| by_source.iter().map(|(k, v)| (k.clone(), v.clone())))
                .collect();
            DeviceView {
                device_name: g.device_name,
                device_id: g.device_id,
                os_platform: g.os_platform,
                os_version: g.os_version,
                os_name: g.os_name,
                os_build: g.os_build,
                user_email: g.user_email,
                application_count: g.application_count,
                sources,
                last_seen: to_rfc3339(last_seen),
                enrichment: matched,
                directory_user: None,
            }
        })
        .collect();
    Ok((devices, total))
}

fn truncated(name: &str) -> String {
    name.to_lowercase().chars().take(NETBIOS_LEN).collect()
}

/// Enrichment records for the page's names, by lowercased record name,
/// then by source.
async fn enrichment_for(
    db: &Db,
    tenant: &TenantId,
    groups: &[DeviceGroup],
    sources: &[String],
) -> sqlx::Result<BTreeMap<String, BTreeMap<String, Value>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
    if sources.is_empty() || groups.is_empty() {
        return Ok(out);
    }
    let wanted: HashSet<String> = groups
        .iter()
        .flat_map(|g| [g.device_name.to_lowercase(), truncated(&g.device_name)])
        .collect();
    let wanted_json = serde_json::to_string(&wanted).unwrap_or_default();
    let sources_json = serde_json::to_string(sources).unwrap_or_default();
    let condition = match db.backend {
        Backend::Sqlite => {
            "(LOWER(device_name) IN (SELECT value FROM json_each($2)) \
               OR SUBSTR(LOWER(device_name), 1, 15) IN (SELECT value FROM json_each($2))) \
             AND source IN (SELECT value FROM json_each($3))"
        }
        Backend::Postgres => {
            "(LOWER(device_name) IN (SELECT jsonb_array_elements_text(CAST($2 AS jsonb))) \
               OR SUBSTR(LOWER(device_name), 1, 15) IN (SELECT jsonb_array_elements_text(CAST($2 AS jsonb)))) \
             AND source IN (SELECT jsonb_array_elements_text(CAST($3 AS jsonb)))"
        }
    };
    let rows: Vec<(String, String, String)> = sqlx::query_as(&format!(
        "SELECT LOWER(device_name), source, body FROM source_records \
         WHERE tenant_id = $1 AND record_type = 'device' AND {condition} ORDER BY updated_at"
    ))
    .bind(tenant.as_str())
    .bind(wanted_json)
    .bind(sources_json)
    .fetch_all(&db.pool)
    .await?;
    // A record is found by its own name and by its NetBIOS form, so a
    // register listing full DNS names enriches the short names too.
    for (name, source, body) in rows {
        let body: Value = cairn_core::db::stored_json("body", &body)?;
        let short = truncated(&name);
        if short != name {
            out.entry(short)
                .or_default()
                .entry(source.clone())
                .or_insert_with(|| body.clone());
        }
        out.entry(name).or_default().insert(source, body);
    }
    Ok(out)
}

/// What one integration (or CSV source) reported.
#[derive(Debug, Serialize, ToSchema, sqlx_macros::FromRow)]
pub struct SourceDevices {
    pub source: String,
    /// Distinct device names.
    pub devices: i64,
    pub inventory_items: i64,
    #[serde(skip)]
    pub last_seen_ms: i64,
    #[sqlx(skip)]
    pub last_seen: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeviceStats {
    /// Assets after NetBIOS merging.
    pub assets: i64,
    /// Distinct device names before merging.
    pub device_names: i64,
    pub by_source: Vec<SourceDevices>,
}

pub async fn stats(db: &Db, tenant: &TenantId) -> sqlx::Result<DeviceStats> {
    let mut by_source: Vec<SourceDevices> = sqlx::query_as(
        "SELECT source, COUNT(DISTINCT device_name) AS devices, COUNT(*) AS inventory_items, \
         MAX(updated_at) AS last_seen_ms FROM inventory_items WHERE tenant_id = $1 \
         GROUP BY source ORDER BY source",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    // A sync leaves rows it finds unchanged as they are: a source's rows
    // were last reported when its last run completed, if that is later.
    let completed_runs = crate::seen::completed_runs(db, tenant).await?;
    for source in &mut by_source {
        if let Some(&completed) = completed_runs.get(&source.source) {
            source.last_seen_ms = source.last_seen_ms.max(completed);
        }
        source.last_seen = to_rfc3339(source.last_seen_ms);
    }
    let assets = sqlx::query_scalar("SELECT COUNT(*) FROM assets WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_one(&db.pool)
        .await?;
    let device_names = sqlx::query_scalar(
        "SELECT COUNT(DISTINCT device_name) FROM inventory_items WHERE tenant_id = $1",
    )
    .bind(tenant.as_str())
    .fetch_one(&db.pool)
    .await?;
    Ok(DeviceStats {
        assets,
        device_names,
        by_source,
    })
}
