//! Asset criticality: each device's tier (`critical`, `high`, `standard`,
//! `low`), which SLA policies weigh.
//!
//! A tier is set by hand on device names (`device_tiers`, one row per name
//! not `standard`), or by ordered rules, each a device search query
//! (`device_tier_rules`): the first rule whose query matches an asset gives
//! its tier. A tier set by hand wins over every rule; an asset neither
//! names is `standard`. The tier each asset has by these is written on the
//! asset (`assets.tier`) by [`reapply`], after every change of either and
//! after every rollup, so the device list, the device search (`tier`), the
//! dashboards and the SLA read one value. It is part of the rollup because
//! the rollup writes every asset: each rebuild ends by applying the tiers.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::store::{self, WriteError};
use crate::search::{self, QueryGroup, SearchError};
use cairn_core::db::{json_text_values, Db, StoredJson};
use cairn_core::ids::TenantId;

/// How much a device matters to its customer.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[schema(as = AssetTier)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    Critical,
    High,
    Standard,
    Low,
}

impl Tier {
    pub const ALL: [Tier; 4] = [Tier::Critical, Tier::High, Tier::Standard, Tier::Low];

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Critical => "critical",
            Tier::High => "high",
            Tier::Standard => "standard",
            Tier::Low => "low",
        }
    }

    pub fn parse(text: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|tier| tier.as_str() == text)
    }
}

/// SQL: an asset's tier is not `standard`, as equalities the index
/// `assets_by_tier` (migration 0051) answers without reading every asset.
fn not_standard() -> String {
    let others: Vec<String> = Tier::ALL
        .into_iter()
        .filter(|tier| *tier != Tier::Standard)
        .map(|tier| format!("'{}'", tier.as_str()))
        .collect();
    format!("tier IN ({})", others.join(", "))
}

/// The key a device's name is compared by (findings name devices as the
/// inventory rows do; a tier set by hand is looked up by it).
pub fn device_key(name: &str) -> String {
    name.trim().to_lowercase()
}

/// A device's tier as set by hand.
#[derive(Debug, Serialize, ToSchema, sqlx_macros::FromRow)]
#[schema(as = AssetTierView)]
pub struct DeviceTier {
    pub device_name: String,
    /// `critical`, `high` or `low` (a device without a row is `standard`).
    pub tier: String,
    /// The e-mail of who set it.
    pub set_by: String,
    /// Unix ms.
    pub set_at: i64,
}

/// Most devices one change may set by hand.
pub const MAX_DEVICES: usize = 100_000;

/// Sets `tier` on each of `devices` (names as the inventory holds them);
/// `standard` removes their rows. One transaction; then the assets show it.
pub async fn set_by_hand(
    db: &Db,
    tenant: &TenantId,
    devices: &[String],
    tier: Tier,
    by: &str,
    at: i64,
) -> sqlx::Result<()> {
    {
        let _turn = db.write_turn().await;
        let mut tx = db.pool.begin().await?;
        for device in devices {
            let key = device_key(device);
            if tier == Tier::Standard {
                sqlx::query("DELETE FROM device_tiers WHERE tenant_id = $1 AND device_key = $2")
                    .bind(tenant.as_str())
                    .bind(&key)
                    .execute(&mut *tx)
                    .await?;
                continue;
            }
            sqlx::query(
                "INSERT INTO device_tiers (tenant_id, device_key, device_name, tier, set_by, set_at) \
                 VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, device_key) DO UPDATE SET \
                 device_name = excluded.device_name, tier = excluded.tier, set_by = excluded.set_by, \
                 set_at = excluded.set_at",
            )
            .bind(tenant.as_str())
            .bind(&key)
            .bind(device.trim())
            .bind(tier.as_str())
            .bind(by)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
    }
    reapply_now(db, tenant).await
}

/// The tenant's devices with a tier set by hand, by name.
pub async fn set_by_hand_list(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<DeviceTier>> {
    sqlx::query_as(
        "SELECT device_name, tier, set_by, set_at FROM device_tiers WHERE tenant_id = $1 \
         ORDER BY device_key",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await
}

/// The names of the assets a device search query matches now (each
/// asset's display name), at most [`MAX_DEVICES`].
pub async fn devices_matching(
    db: &Db,
    tenant: &TenantId,
    query: &QueryGroup,
) -> Result<Vec<String>, SearchError> {
    let rows: Vec<(String,)> = search::all_matching(
        db,
        tenant,
        &crate::assets::table(),
        query,
        "a.device_name",
        MAX_DEVICES as i64 + 1,
    )
    .await?;
    Ok(rows.into_iter().map(|(name,)| name).collect())
}

/// One tier rule: the devices a device search query matches get `tier`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = AssetTierRule)]
#[serde(deny_unknown_fields)]
pub struct TierRule {
    /// What the rule is for, 1 to 100 characters.
    pub name: String,
    /// A device search query (the grammar and fields of
    /// `POST /api/v1/devices/devices/search`).
    #[schema(value_type = Object)]
    pub query: serde_json::Value,
    pub tier: Tier,
}

/// Most rules a tenant may hold.
pub const MAX_RULES: usize = 50;

#[derive(Debug, sqlx_macros::FromRow)]
struct RuleRow {
    name: String,
    query: StoredJson<serde_json::Value>,
    tier: String,
    set_by: String,
    set_at: i64,
}

/// The tenant's tier rules, in the order they are tried, with who set
/// them and when (Unix ms); all were set together.
pub async fn rules(
    db: &Db,
    tenant: &TenantId,
) -> sqlx::Result<(Vec<TierRule>, Option<(String, i64)>)> {
    let rows: Vec<RuleRow> = sqlx::query_as(
        "SELECT name, query, tier, set_by, set_at FROM device_tier_rules WHERE tenant_id = $1 \
         ORDER BY position",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    let set = rows.first().map(|row| (row.set_by.clone(), row.set_at));
    let rules = rows
        .into_iter()
        .filter_map(|row| {
            Some(TierRule {
                tier: Tier::parse(&row.tier)?,
                name: row.name,
                query: row.query.0,
            })
        })
        .collect();
    Ok((rules, set))
}

/// Replaces the tenant's tier rules (checked by the caller with
/// [`crate::devices::figures::query`]); then the assets show them.
pub async fn set_rules(
    db: &Db,
    tenant: &TenantId,
    rules: &[TierRule],
    by: &str,
    at: i64,
) -> sqlx::Result<()> {
    {
        let _turn = db.write_turn().await;
        let mut tx = db.pool.begin().await?;
        sqlx::query("DELETE FROM device_tier_rules WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .execute(&mut *tx)
            .await?;
        for (position, rule) in rules.iter().enumerate() {
            sqlx::query(
                "INSERT INTO device_tier_rules (tenant_id, position, name, query, tier, set_by, set_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(tenant.as_str())
            .bind(position as i64)
            .bind(&rule.name)
            .bind(rule.query.to_string())
            .bind(rule.tier.as_str())
            .bind(by)
            .bind(at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
    }
    reapply_now(db, tenant).await
}

#[derive(Debug, sqlx_macros::FromRow)]
struct AssetTierRow {
    asset_key: String,
    names: String,
    tier: String,
}

/// Writes on the tenant's assets the tier the hand-set tiers and rules
/// give them, under the rollup stamped `rollup_at` (as every write of
/// rolled-up rows, so kept search answers are not kept past it). Returns
/// how many assets changed tier. A rule whose stored query no longer
/// compiles (a field since removed) matches nothing.
pub async fn reapply(db: &Db, tenant: &TenantId, rollup_at: i64) -> Result<usize, WriteError> {
    let by_hand: HashMap<String, Tier> = set_by_hand_list(db, tenant)
        .await?
        .into_iter()
        .filter_map(|row| Some((device_key(&row.device_name), Tier::parse(&row.tier)?)))
        .collect();
    let (rules, _) = rules(db, tenant).await?;
    let assets: Vec<AssetTierRow> = if !by_hand.is_empty() || !rules.is_empty() {
        sqlx::query_as("SELECT asset_key, names, tier FROM assets WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_all(&db.pool)
            .await?
    } else {
        // Nothing set: only assets still showing an earlier tier change.
        sqlx::query_as(&format!(
            "SELECT asset_key, names, tier FROM assets WHERE tenant_id = $1 AND {}",
            not_standard()
        ))
        .bind(tenant.as_str())
        .fetch_all(&db.pool)
        .await?
    };
    if assets.is_empty() {
        return Ok(0);
    }
    let mut by_rule: HashMap<String, Tier> = HashMap::new();
    for rule in rules {
        let Ok(query) = serde_json::from_value::<QueryGroup>(rule.query) else {
            continue;
        };
        let keys: Vec<(String,)> = match search::all_matching(
            db,
            tenant,
            &crate::assets::table(),
            &query,
            "a.asset_key",
            i64::MAX,
        )
        .await
        {
            Ok(keys) => keys,
            Err(SearchError::Database(err)) => return Err(err.into()),
            Err(_) => continue,
        };
        for (key,) in keys {
            by_rule.entry(key).or_insert(rule.tier);
        }
    }
    let mut moves: BTreeMap<Tier, Vec<String>> = BTreeMap::new();
    for asset in assets {
        let names: Vec<String> = serde_json::from_str(&asset.names).unwrap_or_default();
        let tier = names
            .iter()
            .find_map(|name| by_hand.get(&device_key(name)).copied())
            .or_else(|| by_rule.get(&asset.asset_key).copied())
            .unwrap_or(Tier::Standard);
        if tier.as_str() != asset.tier {
            moves.entry(tier).or_default().push(asset.asset_key);
        }
    }
    let moved = moves.values().map(Vec::len).sum();
    if moved == 0 {
        return Ok(0);
    }
    let _turn = db.write_turn().await;
    let mut held = store::hold(db, tenant, rollup_at).await?;
    for (tier, keys) in &moves {
        for chunk in keys.chunks(10_000) {
            sqlx::query(&format!(
                "UPDATE assets SET tier = $2 WHERE tenant_id = $1 AND asset_key IN ({})",
                json_text_values(db.backend, 3)
            ))
            .bind(tenant.as_str())
            .bind(tier.as_str())
            .bind(serde_json::to_string(chunk).unwrap_or_default())
            .execute(&mut **held)
            .await?;
        }
    }
    held.commit().await?;
    Ok(moved)
}

/// [`reapply`] under the tenant's latest rollup; nothing to do before its
/// first. A rollup that begins meanwhile applies the tiers itself when it
/// has written.
async fn reapply_now(db: &Db, tenant: &TenantId) -> sqlx::Result<()> {
    let Some(rollup_at) = store::latest_rollup_at(db, tenant).await? else {
        return Ok(());
    };
    match reapply(db, tenant, rollup_at).await {
        Ok(_) | Err(WriteError::Superseded) => Ok(()),
        Err(WriteError::Db(err)) => Err(err),
    }
}

/// The tier of each device name the tenant's assets were seen under, by
/// [`device_key`]; a name not here is `standard`.
pub async fn by_device_name(db: &Db, tenant: &TenantId) -> sqlx::Result<HashMap<String, Tier>> {
    let rows: Vec<(String, String)> = sqlx::query_as(&format!(
        "SELECT names, tier FROM assets WHERE tenant_id = $1 AND {}",
        not_standard()
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    let mut out = HashMap::new();
    for (names, tier) in rows {
        let Some(tier) = Tier::parse(&tier) else {
            continue;
        };
        for name in cairn_core::db::stored_json::<Vec<String>>("names", &names)? {
            out.insert(device_key(&name), tier);
        }
    }
    Ok(out)
}

/// The tenant's assets per tier (every tier, zero included).
pub async fn counts(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<(Tier, i64)>> {
    let rows: Vec<(String, i64)> =
        sqlx::query_as("SELECT tier, COUNT(*) FROM assets WHERE tenant_id = $1 GROUP BY tier")
            .bind(tenant.as_str())
            .fetch_all(&db.pool)
            .await?;
    Ok(Tier::ALL
        .into_iter()
        .map(|tier| {
            let n = rows
                .iter()
                .find(|(t, _)| t == tier.as_str())
                .map_or(0, |(_, n)| *n);
            (tier, n)
        })
        .collect())
}

/// What each of `tenants`' asset tiers are current with: every write of
/// the assets (a rollup, a tier change) moves it. A tenant without a
/// rollup is 0.
pub async fn stamps(db: &Db, tenants: &[TenantId]) -> sqlx::Result<HashMap<String, i64>> {
    let ids = cairn_core::db::tenant_ids_json(tenants);
    sqlx::query_as(&format!(
        "SELECT tenant_id, writes FROM rollup_state WHERE tenant_id IN ({})",
        json_text_values(db.backend, 1)
    ))
    .bind(&ids)
    .fetch_all(&db.pool)
    .await
    .map(|rows: Vec<(String, i64)>| rows.into_iter().collect())
}
