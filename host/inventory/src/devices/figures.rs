//! Figures over a tenant's assets, optionally narrowed to those a device
//! search query matches: what dashboards read.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::search::{self, QueryGroup, SearchError};
use cairn_core::db::{json_text_values, Db};
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;

/// A device search query held in a widget or a report, read and checked
/// as the device search would check it: the same grammar, and the same 422 naming an
/// unknown field, operator or value (under `path`).
pub fn query(value: &Value, path: &str) -> Result<QueryGroup, ApiError> {
    let query: QueryGroup = cairn_core::http::json::from_value_at(value.clone(), path)?;
    crate::search::check(&crate::assets::AssetFields, &query, path)?;
    Ok(query)
}

/// Most assets a query may narrow a figure to.
const MAX_SCOPED_ASSETS: i64 = 100_000;

/// The assets a device search query matches: their keys, and every name
/// each was seen under (what findings name them by).
#[derive(Debug, Default)]
pub struct AssetScope {
    pub keys: Vec<String>,
    pub names: Vec<String>,
}

/// The assets `query` (the device search's query object) matches.
pub async fn scope(
    db: &Db,
    tenant: &TenantId,
    query: &QueryGroup,
) -> Result<AssetScope, SearchError> {
    let rows: Vec<(String, String)> = search::all_matching(
        db,
        tenant,
        &crate::assets::table(),
        query,
        "a.asset_key, a.names",
        MAX_SCOPED_ASSETS,
    )
    .await?;
    let mut scope = AssetScope::default();
    for (key, names) in rows {
        scope.keys.push(key);
        scope
            .names
            .extend(cairn_core::db::stored_json::<Vec<String>>("names", &names)?);
    }
    Ok(scope)
}

/// Narrows a figure to these asset keys; `None`: every asset.
pub struct Assets<'a>(pub Option<&'a [String]>);

impl Assets<'_> {
    fn bound(&self) -> Option<String> {
        self.0
            .map(|keys| serde_json::to_string(keys).unwrap_or_default())
    }

    /// The condition on `asset_key`, bound at `$n`; without keys a plain
    /// truth (the bound NULL), as [`cairn_vulnerabilities::findings::figures`] does.
    fn condition(&self, db: &Db, n: usize) -> String {
        match self.0 {
            None => format!("CAST(${n} AS TEXT) IS NULL"),
            Some(_) => format!("asset_key IN ({})", json_text_values(db.backend, n)),
        }
    }
}

/// Assets of the tenant (those narrowed to).
pub async fn count(db: &Db, tenant: &TenantId, assets: &Assets<'_>) -> sqlx::Result<i64> {
    sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM assets WHERE tenant_id = $1 AND {}",
        assets.condition(db, 2)
    ))
    .bind(tenant.as_str())
    .bind(assets.bound())
    .fetch_one(&db.pool)
    .await
}

/// Assets by OS platform (`unknown` when no source reported one).
pub async fn by_platform(
    db: &Db,
    tenant: &TenantId,
    assets: &Assets<'_>,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(&format!(
        "SELECT COALESCE(os_platform, 'unknown') AS platform, COUNT(*) AS n FROM assets \
         WHERE tenant_id = $1 AND {} GROUP BY COALESCE(os_platform, 'unknown') \
         ORDER BY n DESC, platform",
        assets.condition(db, 2)
    ))
    .bind(tenant.as_str())
    .bind(assets.bound())
    .fetch_all(&db.pool)
    .await
}

/// Assets per reporting source (an asset reported by two counts for
/// both).
pub async fn by_source(
    db: &Db,
    tenant: &TenantId,
    assets: &Assets<'_>,
) -> sqlx::Result<Vec<(String, i64)>> {
    let lists: Vec<String> = sqlx::query_scalar(&format!(
        "SELECT sources FROM assets WHERE tenant_id = $1 AND {}",
        assets.condition(db, 2)
    ))
    .bind(tenant.as_str())
    .bind(assets.bound())
    .fetch_all(&db.pool)
    .await?;
    let mut counts: BTreeMap<String, i64> = BTreeMap::new();
    for list in lists {
        for source in cairn_core::db::stored_json::<Vec<String>>("sources", &list)? {
            *counts.entry(source).or_default() += 1;
        }
    }
    let mut counts: Vec<(String, i64)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(counts)
}

/// Assets no source has reported since `before_ms`.
pub async fn stale(
    db: &Db,
    tenant: &TenantId,
    before_ms: i64,
    assets: &Assets<'_>,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM assets WHERE tenant_id = $1 AND {} AND last_seen < $3",
        assets.condition(db, 2)
    ))
    .bind(tenant.as_str())
    .bind(assets.bound())
    .bind(before_ms)
    .fetch_one(&db.pool)
    .await
}
