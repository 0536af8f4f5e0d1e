//! IP address and file hash lookups through the tenant's connectors of the
//! `ip-reputation` and `file-reputation` areas, configured here, with each
//! answer kept for the tenant's cache time.

use std::net::IpAddr;

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use sqlx::Row;
use utoipa::{IntoParams, ToSchema};

use cairn_core::db::{now_ms, to_rfc3339, Db};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_core::ids::TenantId;
use cairn_integrations::{areas, ConfigView, Merge};
use cairn_platform::app::AppState;
use cairn_platform::auth::{AdminCaller, Caller};
use cairn_plugins::ActionCall;

/// The areas whose connectors answer the lookups, and their actions.
pub const IP_AREA: &str = "ip-reputation";
pub const HASH_AREA: &str = "file-reputation";
const IP_ACTION: &str = "check_ip";
const HASH_ACTION: &str = "check_hash";

/// How long an answer is reused when the tenant has not said.
const DEFAULT_CACHE_MINUTES: i64 = 60;
const MAX_CACHE_MINUTES: i64 = 7 * 24 * 60;

async fn cache_minutes(db: &Db, tenant: &TenantId) -> sqlx::Result<i64> {
    let stored: Option<i64> =
        sqlx::query_scalar("SELECT cache_minutes FROM threat_intel_settings WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_optional(&db.pool)
            .await?;
    Ok(stored.unwrap_or(DEFAULT_CACHE_MINUTES))
}

async fn set_cache_minutes(db: &Db, tenant: &TenantId, minutes: i64) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO threat_intel_settings (tenant_id, cache_minutes, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id) DO UPDATE SET cache_minutes = excluded.cache_minutes, \
         updated_at = excluded.updated_at",
    )
    .bind(tenant.as_str())
    .bind(minutes)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// A kept answer: connector, answer, when fetched.
async fn kept(
    db: &Db,
    tenant: &TenantId,
    lookup: &str,
    query: &str,
    newer_than: i64,
) -> sqlx::Result<Option<(String, Value, i64)>> {
    let row = sqlx::query(
        "SELECT connector, answer, fetched_at FROM threat_intel_answers \
         WHERE tenant_id = $1 AND lookup = $2 AND query = $3 AND fetched_at > $4",
    )
    .bind(tenant.as_str())
    .bind(lookup)
    .bind(query)
    .bind(newer_than)
    .fetch_optional(&db.pool)
    .await?;
    row.map(|r| {
        Ok((
            r.try_get("connector")?,
            cairn_core::db::stored_json("answer", r.try_get::<&str, _>("answer")?)?,
            r.try_get("fetched_at")?,
        ))
    })
    .transpose()
}

async fn keep(
    db: &Db,
    tenant: &TenantId,
    lookup: &str,
    query: &str,
    connector: &str,
    answer: &Value,
    at: i64,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO threat_intel_answers (tenant_id, lookup, query, connector, answer, fetched_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, lookup, query) DO UPDATE SET \
         connector = excluded.connector, answer = excluded.answer, fetched_at = excluded.fetched_at",
    )
    .bind(tenant.as_str())
    .bind(lookup)
    .bind(query)
    .bind(connector)
    .bind(answer.to_string())
    .bind(at)
    .execute(&db.pool)
    .await?;
    Ok(())
}

#[derive(Serialize, ToSchema)]
pub struct ThreatIntelConfig {
    /// The IP address provider (the `ip-reputation` area's config).
    ip: Option<ConfigView>,
    /// The file hash provider (the `file-reputation` area's config).
    hash: Option<ConfigView>,
    /// Connectors loaded for each lookup.
    available_ip: Vec<String>,
    available_hash: Vec<String>,
    /// How long an answer is reused.
    cache_minutes: i64,
}

async fn current(state: &AppState, tenant: &TenantId) -> ApiResult<ThreatIntelConfig> {
    let view = |area: &'static str| async move {
        let found =
            areas::tenant_connector(&state.db, &state.secrets, &state.plugins(), tenant, area)
                .await?;
        Ok::<_, ApiError>(found.map(|(connector, stored)| {
            cairn_integrations::redacted_view(area, Some(&connector), Some(&stored))
        }))
    };
    let available = |area: &str| -> Vec<String> {
        state
            .plugins()
            .area_connectors(area)
            .iter()
            .map(|c| c.descriptor.id.clone())
            .collect()
    };
    Ok(ThreatIntelConfig {
        ip: view(IP_AREA).await?,
        hash: view(HASH_AREA).await?,
        available_ip: available(IP_AREA),
        available_hash: available(HASH_AREA),
        cache_minutes: cache_minutes(&state.db, tenant).await?,
    })
}

/// The tenant's threat-intel providers (secrets read `********`) and its
/// cache time.
#[utoipa::path(get, path = "/config", tag = "threat-intel",
    responses((status = 200, body = ThreatIntelConfig)))]
pub(super) async fn get_threat_intel_config(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<ThreatIntelConfig>> {
    Ok(Json(current(&state, &caller.tenant_id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ThreatIntelConfigRequest {
    /// The IP address provider's config: `connector` (when several are
    /// loaded) and the connector's fields (`base_url`, `api_key`). It
    /// replaces the stored one; a secret sent as `********` is kept.
    #[schema(value_type = Option<Object>)]
    ip: Option<Map<String, Value>>,
    /// The file hash provider's config, likewise.
    #[schema(value_type = Option<Object>)]
    hash: Option<Map<String, Value>>,
    /// How long an answer is reused, 0 (never) to 10,080 (a week).
    cache_minutes: Option<i64>,
}

/// Configure the tenant's threat-intel providers (admins): a connector of
/// the `ip-reputation` area for IP addresses, one of the `file-reputation`
/// area for file hashes. Each config is checked against its connector's
/// schema and the outbound rules and stored with its secrets encrypted,
/// as an integration's config is.
#[utoipa::path(post, path = "/config", tag = "threat-intel",
    request_body = ThreatIntelConfigRequest,
    responses((status = 200, body = ThreatIntelConfig),
              (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 404, body = ErrorBody, description = "No connector of that lookup is loaded"),
              (status = 422, body = ErrorBody)))]
pub(super) async fn set_threat_intel_config(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(request): Json<ThreatIntelConfigRequest>,
) -> ApiResult<Json<ThreatIntelConfig>> {
    let tenant = &caller.tenant_id;
    if let Some(minutes) = request.cache_minutes {
        if !(0..=MAX_CACHE_MINUTES).contains(&minutes) {
            return Err(ApiError::validation(
                "cache_minutes",
                format!("must be between 0 and {MAX_CACHE_MINUTES}"),
            ));
        }
    }
    if request.ip.is_none() && request.hash.is_none() && request.cache_minutes.is_none() {
        return Err(ApiError::validation("ip", "give ip, hash or cache_minutes"));
    }
    // Each provider is checked in full before it is stored; a second one
    // refused leaves the first as given, which the answer shows.
    for (area, fields) in [(IP_AREA, request.ip), (HASH_AREA, request.hash)] {
        if let Some(fields) = fields {
            cairn_integrations::store_config(&state, &caller, area, fields, Merge::Replace).await?;
        }
    }
    if let Some(minutes) = request.cache_minutes {
        set_cache_minutes(&state.db, tenant, minutes).await?;
    }
    Ok(Json(current(&state, tenant).await?))
}

/// What a lookup is of: an IP address or a file hash.
pub const LOOKUPS: [&str; 2] = ["ip", "hash"];

#[derive(Serialize, ToSchema)]
pub struct LookupAnswer {
    /// `ip` or `hash`.
    lookup: &'static str,
    /// The address or hash asked for, normalized.
    query: String,
    /// The connector that answered.
    connector: String,
    /// Kept from an earlier lookup within the cache time.
    cached: bool,
    fetched_at: String,
    /// The connector's answer (an IP's abuse score and reports; a file's
    /// analysis statistics).
    #[schema(value_type = Object)]
    result: Value,
}

async fn look_up(
    state: &AppState,
    tenant: &TenantId,
    (lookup, area, action): (&'static str, &str, &str),
    query: String,
    body: Value,
) -> ApiResult<LookupAnswer> {
    let minutes = cache_minutes(&state.db, tenant).await?;
    let now = now_ms();
    if minutes > 0 {
        if let Some((connector, result, at)) =
            kept(&state.db, tenant, lookup, &query, now - minutes * 60_000).await?
        {
            return Ok(LookupAnswer {
                lookup,
                query,
                connector,
                cached: true,
                fetched_at: to_rfc3339(at),
                result,
            });
        }
    }
    let (connector, _) =
        areas::tenant_connector(&state.db, &state.secrets, &state.plugins(), tenant, area)
            .await?
            .ok_or_else(|| {
                ApiError::Conflict(format!(
            "no {area} provider is configured for this tenant (POST /api/v1/threat-intel/config)"
        ))
            })?;
    let result = areas::invoke(state, tenant, area, &ActionCall::with_body(action, body)).await?;
    keep(
        &state.db,
        tenant,
        lookup,
        &query,
        &connector.descriptor.id,
        &result,
        now,
    )
    .await?;
    Ok(LookupAnswer {
        lookup,
        query,
        connector: connector.descriptor.id.clone(),
        cached: false,
        fetched_at: to_rfc3339(now),
        result,
    })
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct IpParams {
    /// Reports of the last this many days (1 to 365, default 90).
    #[param(minimum = 1, maximum = 365)]
    max_age_days: Option<i64>,
}

/// Threat intel for an IP address from the tenant's `ip-reputation`
/// provider (its abuse confidence and reports). A malformed address is a
/// 422 before any upstream call; answers are reused for the tenant's cache
/// time.
#[utoipa::path(get, path = "/ip/{ip_address}", tag = "threat-intel",
    params(("ip_address" = String, Path, description = "IPv4 or IPv6"), IpParams),
    responses((status = 200, body = LookupAnswer),
              (status = 409, body = ErrorBody, description = "No provider configured"),
              (status = 422, body = ErrorBody),
              (status = 502, body = ErrorBody, description = "The provider refused the key or failed")))]
pub(super) async fn ip_threat_intel(
    State(state): State<AppState>,
    caller: Caller,
    Path(text): Path<String>,
    Query(params): Query<IpParams>,
) -> ApiResult<Json<LookupAnswer>> {
    let ip: IpAddr = text.trim().parse().map_err(|_| {
        ApiError::validation(
            "ip_address",
            format!("{text:?} is not an IPv4 or IPv6 address"),
        )
    })?;
    let days = params.max_age_days.unwrap_or(90);
    if !(1..=365).contains(&days) {
        return Err(ApiError::validation(
            "max_age_days",
            "must be between 1 and 365",
        ));
    }
    let answer = look_up(
        &state,
        &caller.tenant_id,
        ("ip", IP_AREA, IP_ACTION),
        format!("{ip}?max_age_days={days}"),
        json!({"ip_address": ip.to_string(), "max_age_days": days}),
    )
    .await?;
    Ok(Json(answer))
}

/// `text` as a file hash: 32 (MD5), 40 (SHA-1) or 64 (SHA-256) hex
/// digits, lower-cased.
fn file_hash(text: &str) -> Option<String> {
    let hash = text.trim().to_ascii_lowercase();
    (matches!(hash.len(), 32 | 40 | 64) && hash.bytes().all(|b| b.is_ascii_hexdigit()))
        .then_some(hash)
}

/// Threat intel for a file hash (MD5, SHA-1 or SHA-256) from the tenant's
/// `file-reputation` provider (its analysis statistics). A malformed hash
/// is a 422 before any upstream call; a hash the provider does not know is
/// a 404; answers are reused for the tenant's cache time.
#[utoipa::path(get, path = "/hash/{file_hash}", tag = "threat-intel",
    params(("file_hash" = String, Path)),
    responses((status = 200, body = LookupAnswer),
              (status = 404, body = ErrorBody, description = "The provider does not know the file"),
              (status = 409, body = ErrorBody, description = "No provider configured"),
              (status = 422, body = ErrorBody),
              (status = 502, body = ErrorBody, description = "The provider refused the key or failed")))]
pub(super) async fn hash_threat_intel(
    State(state): State<AppState>,
    caller: Caller,
    Path(text): Path<String>,
) -> ApiResult<Json<LookupAnswer>> {
    let hash = file_hash(&text).ok_or_else(|| {
        ApiError::validation("file_hash", "must be an MD5, SHA-1 or SHA-256 in hex")
    })?;
    let answer = look_up(
        &state,
        &caller.tenant_id,
        ("hash", HASH_AREA, HASH_ACTION),
        hash.clone(),
        json!({"file_hash": hash}),
    )
    .await?;
    Ok(Json(answer))
}

#[cfg(test)]
mod tests {
    use super::file_hash;

    #[test]
    fn file_hashes_are_hex_of_three_lengths() {
        assert_eq!(
            file_hash(" 44D88612FEA8A8F36DE82E1278ABB02F ").as_deref(),
            Some("44d88612fea8a8f36de82e1278abb02f")
        );
        for bad in [
            "",
            "xyz",
            "44d88612fea8a8f36de82e1278abb02",
            "g4d88612fea8a8f36de82e1278abb02f",
        ] {
            assert_eq!(file_hash(bad), None, "{bad}");
        }
    }
}
