//! `/api/v1/sla`: remediation SLA policies, device tiers, and the
//! tenant's findings against their due dates. Any member reads; admins
//! (partner admins for a partner's group and customer policies) change.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::exceptions::{self, ExceptionView};
use super::policy::{Policy, SlaState};
use super::storage::{self, PolicyChange, Scope};
use super::{Applied, Standing, TrackedFinding};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_core::http::paging;
use cairn_core::ids::TenantId;
use cairn_inventory::search::{Page, PageParams};
use cairn_inventory::tiers::{self, DeviceTier, Tier, TierRule};
use cairn_platform::app::AppState;
use cairn_platform::auth::{AdminCaller, Caller};
use cairn_platform::partner::PartnerCaller;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(applied_sla_policy))
        .routes(routes!(list_sla_policies))
        .routes(routes!(set_default_sla_policy, delete_default_sla_policy))
        .routes(routes!(set_group_sla_policy, delete_group_sla_policy))
        .routes(routes!(set_customer_sla_policy, delete_customer_sla_policy))
        .routes(routes!(sla_policy_changes))
        .routes(routes!(sla_findings))
        .routes(routes!(sla_standing))
        .routes(routes!(customers_sla_standing))
        .routes(routes!(list_asset_tiers, set_asset_tiers))
        .routes(routes!(set_asset_tiers_by_search))
        .routes(routes!(get_asset_tier_rules, set_asset_tier_rules))
        .routes(routes!(list_sla_exceptions, request_sla_exception))
        .routes(routes!(get_sla_exception))
        .routes(routes!(decide_sla_exception))
}

/// The policy that applies to the caller's tenant, and where it was set.
#[utoipa::path(get, path = "/policy", tag = "sla",
    responses((status = 200, body = Applied)))]
async fn applied_sla_policy(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Applied>> {
    Ok(Json(super::applied(&state.db, &caller.tenant_id).await?))
}

/// A policy the tenant set.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SlaPolicyView)]
pub struct PolicyView {
    /// `default`, `group` or `customer`.
    pub scope: String,
    /// The group's or customer's id; empty for the default.
    pub scope_id: String,
    pub policy: Policy,
    pub updated_by: String,
    /// Unix ms.
    pub updated_at: i64,
}

/// The policies the caller's tenant set: its default and, for a partner,
/// those of its groups and customers.
#[utoipa::path(get, path = "/policies", tag = "sla",
    responses((status = 200, body = Vec<PolicyView>)))]
async fn list_sla_policies(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<PolicyView>>> {
    let rows = storage::policies(&state.db, &caller.tenant_id).await?;
    Ok(Json(
        rows.into_iter()
            .map(|row| PolicyView {
                scope: row.scope,
                scope_id: row.scope_id,
                policy: row.rules.0,
                updated_by: row.updated_by,
                updated_at: row.updated_at,
            })
            .collect(),
    ))
}

/// What a policy change did.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SlaPolicyChanged)]
pub struct PolicyChanged {
    /// The policy now set; absent after a removal.
    pub policy: Option<Policy>,
    /// Open findings (of the tenant, or of the partner's customers) whose
    /// due date moved.
    pub moved: i64,
}

fn checked(policy: Policy) -> ApiResult<Policy> {
    policy
        .check()
        .map_err(|invalid| ApiError::validation(&invalid.field, invalid.message))?;
    Ok(Policy {
        name: policy.name.trim().to_string(),
        ..policy
    })
}

async fn change(
    state: &AppState,
    owner: &TenantId,
    scope: Scope,
    policy: Option<Policy>,
    by: &str,
) -> ApiResult<Json<PolicyChanged>> {
    let policy = policy.map(checked).transpose()?;
    let now = state.clock.now_ms();
    let moved = super::change_policy(&state.db, owner, &scope, policy.as_ref(), by, now).await?;
    Ok(Json(PolicyChanged { policy, moved }))
}

/// Set the tenant's default policy (admin or owner).
#[utoipa::path(put, path = "/policies/default", tag = "sla",
    request_body = Policy,
    responses((status = 200, body = PolicyChanged),
              (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn set_default_sla_policy(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(policy): Json<Policy>,
) -> ApiResult<Json<PolicyChanged>> {
    change(
        &state,
        &caller.tenant_id,
        Scope::Default,
        Some(policy),
        &caller.email,
    )
    .await
}

/// Remove the tenant's default policy (admin or owner).
#[utoipa::path(delete, path = "/policies/default", tag = "sla",
    responses((status = 200, body = PolicyChanged), (status = 403, body = ErrorBody)))]
async fn delete_default_sla_policy(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
) -> ApiResult<Json<PolicyChanged>> {
    change(
        &state,
        &caller.tenant_id,
        Scope::Default,
        None,
        &caller.email,
    )
    .await
}

/// The group, when it is the partner's.
async fn partner_group(state: &AppState, partner: &PartnerCaller, id: &str) -> ApiResult<Scope> {
    partner.require_admin()?;
    cairn_platform::partner::storage::group(&state.db, &partner.partner, id)
        .await?
        .ok_or(ApiError::NotFound("group"))?;
    Ok(Scope::Group(id.to_string()))
}

/// The customer, when it is the partner's and the caller reaches it.
async fn partner_customer(state: &AppState, partner: &PartnerCaller, id: &str) -> ApiResult<Scope> {
    partner.require_admin()?;
    let found = cairn_platform::partner::storage::customer(&state.db, &partner.partner, id).await?;
    if found.is_none() || !partner.scope.reaches(id) {
        return Err(ApiError::NotFound("customer"));
    }
    Ok(Scope::Customer(id.to_string()))
}

/// Set the policy of a partner's group of customers (partner admin).
#[utoipa::path(put, path = "/policies/groups/{group_id}", tag = "sla",
    params(("group_id" = String, Path)), request_body = Policy,
    responses((status = 200, body = PolicyChanged), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn set_group_sla_policy(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(group_id): Path<String>,
    Json(policy): Json<Policy>,
) -> ApiResult<Json<PolicyChanged>> {
    let scope = partner_group(&state, &partner, &group_id).await?;
    change(
        &state,
        &partner.partner,
        scope,
        Some(policy),
        &partner.caller.email,
    )
    .await
}

/// Remove a group's policy (partner admin).
#[utoipa::path(delete, path = "/policies/groups/{group_id}", tag = "sla",
    params(("group_id" = String, Path)),
    responses((status = 200, body = PolicyChanged), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
async fn delete_group_sla_policy(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(group_id): Path<String>,
) -> ApiResult<Json<PolicyChanged>> {
    let scope = partner_group(&state, &partner, &group_id).await?;
    change(&state, &partner.partner, scope, None, &partner.caller.email).await
}

/// Set the policy of one of the partner's customers (partner admin).
#[utoipa::path(put, path = "/policies/customers/{customer_id}", tag = "sla",
    params(("customer_id" = String, Path)), request_body = Policy,
    responses((status = 200, body = PolicyChanged), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn set_customer_sla_policy(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(customer_id): Path<String>,
    Json(policy): Json<Policy>,
) -> ApiResult<Json<PolicyChanged>> {
    let scope = partner_customer(&state, &partner, &customer_id).await?;
    change(
        &state,
        &partner.partner,
        scope,
        Some(policy),
        &partner.caller.email,
    )
    .await
}

/// Remove a customer's policy (partner admin).
#[utoipa::path(delete, path = "/policies/customers/{customer_id}", tag = "sla",
    params(("customer_id" = String, Path)),
    responses((status = 200, body = PolicyChanged), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody)))]
async fn delete_customer_sla_policy(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(customer_id): Path<String>,
) -> ApiResult<Json<PolicyChanged>> {
    let scope = partner_customer(&state, &partner, &customer_id).await?;
    change(&state, &partner.partner, scope, None, &partner.caller.email).await
}

/// Every change of the tenant's policies, newest first, a page at a
/// time: who, when, the policy before and after, and how many due dates
/// it moved (admin or owner).
#[utoipa::path(get, path = "/policies/changes", tag = "sla", params(PageParams),
    responses((status = 200, body = Page<PolicyChange>), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
async fn sla_policy_changes(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Query(page): Query<PageParams>,
) -> ApiResult<Json<Page<PolicyChange>>> {
    let bounds = page.bounds()?;
    let (items, total) = storage::changes(&state.db, &caller.tenant_id, bounds).await?;
    Ok(Json(Page::new(items, total, bounds)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct FindingsQuery {
    /// `within`, `due_soon` or `overdue`; every open finding when absent.
    state: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// 1 to 500; default 100.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// The tenant's open findings against their due dates.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = SlaFindingPage)]
pub struct TrackedPage {
    /// Soonest due first (overdue first of all), those without a due date
    /// last.
    pub items: Vec<TrackedFinding>,
    pub total: i64,
    pub skip: i64,
    pub limit: i64,
    /// The policy the due dates come from.
    pub policy: Applied,
}

/// The tenant's open findings with their due date, SLA state and days
/// left (negative once overdue).
#[utoipa::path(get, path = "/findings", tag = "sla", params(FindingsQuery),
    responses((status = 200, body = TrackedPage), (status = 422, body = ErrorBody)))]
async fn sla_findings(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<FindingsQuery>,
) -> ApiResult<Json<TrackedPage>> {
    let wanted = match query.state.as_deref() {
        None => None,
        Some("within") => Some(SlaState::Within),
        Some("due_soon") => Some(SlaState::DueSoon),
        Some("overdue") => Some(SlaState::Overdue),
        Some(_) => {
            return Err(ApiError::validation(
                "state",
                "must be within, due_soon or overdue",
            ))
        }
    };
    let (skip, limit) = paging::bounds(query.skip, query.limit, 100)?;
    let policy = super::applied(&state.db, &caller.tenant_id).await?;
    let now = state.clock.now_ms();
    let mut items: Vec<TrackedFinding> =
        super::tracked_with(&state.db, &caller.tenant_id, &policy.policy, now, i64::MAX)
            .await?
            .into_iter()
            .filter(|f| wanted.is_none() || f.sla_state == wanted)
            .collect();
    items.sort_by_key(|f| (f.due_at.is_none(), f.due_at));
    let (items, total) = paging::slice(items, (skip, limit));
    Ok(Json(TrackedPage {
        items,
        total,
        skip,
        limit,
        policy,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct PeriodQuery {
    /// The period fixes are counted over, in days back from now (1 to
    /// 366; default 30).
    days: Option<i64>,
}

fn period(query: &PeriodQuery) -> ApiResult<i64> {
    let days = query.days.unwrap_or(30);
    if !(1..=366).contains(&days) {
        return Err(ApiError::validation("days", "must be 1 to 366"));
    }
    Ok(days)
}

/// The tenant's open findings by SLA state, and the share of fixes in the
/// period that came by their due date.
#[utoipa::path(get, path = "/standing", tag = "sla", params(PeriodQuery),
    responses((status = 200, body = Standing), (status = 422, body = ErrorBody)))]
async fn sla_standing(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<PeriodQuery>,
) -> ApiResult<Json<Standing>> {
    let days = period(&query)?;
    let now = state.clock.now_ms();
    Ok(Json(
        super::standing_of(&state.db, &caller.tenant_id, now, days).await?,
    ))
}

/// One customer's standing.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = CustomerSlaStanding)]
pub struct CustomerStanding {
    pub customer_id: String,
    pub name: String,
    pub standing: Standing,
}

/// The standing of each customer the partner caller reaches, by name.
#[utoipa::path(get, path = "/customers", tag = "sla", params(PeriodQuery),
    responses((status = 200, body = Vec<CustomerStanding>), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
async fn customers_sla_standing(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Query(query): Query<PeriodQuery>,
) -> ApiResult<Json<Vec<CustomerStanding>>> {
    let days = period(&query)?;
    let now = state.clock.now_ms();
    let customers = partner.customers(&state.db).await?;
    let tenants: Vec<TenantId> = customers.iter().map(|c| TenantId(c.id.clone())).collect();
    let mut standings =
        super::kept::standings(&state.db, Some(&partner.partner), &tenants, now, days).await?;
    Ok(Json(
        customers
            .into_iter()
            .filter_map(|customer| {
                Some(CustomerStanding {
                    standing: standings.remove(&customer.id)?,
                    customer_id: customer.id,
                    name: customer.name,
                })
            })
            .collect(),
    ))
}

/// The tenant's devices whose tier was set by hand (a device without a
/// row takes its tier from the first tier rule that matches it, else
/// `standard`).
#[utoipa::path(get, path = "/tiers", tag = "sla",
    responses((status = 200, body = Vec<DeviceTier>)))]
async fn list_asset_tiers(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<DeviceTier>>> {
    Ok(Json(
        tiers::set_by_hand_list(&state.db, &caller.tenant_id).await?,
    ))
}

#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = AssetTierChange)]
#[serde(deny_unknown_fields)]
pub struct TierChange {
    /// Device names as the inventory shows them (compared ignoring case),
    /// 1 to 1,000.
    devices: Vec<String>,
    tier: Tier,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AssetTiersSet)]
pub struct TiersSet {
    /// Devices whose tier was set.
    pub updated: usize,
}

/// Sets `tier` by hand on `devices`, deduplicated by name.
async fn set_by_hand(
    state: &AppState,
    caller: &Caller,
    mut devices: Vec<String>,
    tier: Tier,
) -> ApiResult<Json<TiersSet>> {
    devices.sort_by_key(|d| tiers::device_key(d));
    devices.dedup_by_key(|d| tiers::device_key(d));
    let now = state.clock.now_ms();
    tiers::set_by_hand(
        &state.db,
        &caller.tenant_id,
        &devices,
        tier,
        &caller.email,
        now,
    )
    .await?;
    Ok(Json(TiersSet {
        updated: devices.len(),
    }))
}

/// Set the tier of devices by name, one or many (admin or owner);
/// `standard` clears what was set by hand. A tier set by hand wins over
/// the tier rules.
#[utoipa::path(put, path = "/tiers", tag = "sla", request_body = TierChange,
    responses((status = 200, body = TiersSet), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
async fn set_asset_tiers(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(change): Json<TierChange>,
) -> ApiResult<Json<TiersSet>> {
    let devices: Vec<String> = change
        .devices
        .iter()
        .map(|d| d.trim().to_string())
        .collect();
    if devices.is_empty() || devices.len() > 1000 {
        return Err(ApiError::validation(
            "devices",
            "must name 1 to 1000 devices",
        ));
    }
    if devices
        .iter()
        .any(|d| d.is_empty() || d.chars().count() > 255 || d.chars().any(char::is_control))
    {
        return Err(ApiError::validation(
            "devices",
            "each must be 1 to 255 printable characters",
        ));
    }
    set_by_hand(&state, &caller, devices, change.tier).await
}

#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = AssetTierSearchChange)]
#[serde(deny_unknown_fields)]
pub struct TierSearchChange {
    /// A device search query (as `POST /api/v1/devices/devices/search`
    /// takes): every device it matches now gets `tier`, by hand. Devices
    /// that match it later do not; a tier rule does that.
    #[schema(value_type = Object)]
    query: serde_json::Value,
    tier: Tier,
}

/// Set the tier of every device a device search matches (admin or
/// owner), at most 100,000.
#[utoipa::path(post, path = "/tiers/search", tag = "sla", request_body = TierSearchChange,
    responses((status = 200, body = TiersSet), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
async fn set_asset_tiers_by_search(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(change): Json<TierSearchChange>,
) -> ApiResult<Json<TiersSet>> {
    let query = cairn_inventory::devices::figures::query(&change.query, "query")?;
    let devices = tiers::devices_matching(&state.db, &caller.tenant_id, &query).await?;
    if devices.len() > tiers::MAX_DEVICES {
        return Err(ApiError::validation(
            "query",
            "matches more than 100000 devices; narrow it",
        ));
    }
    set_by_hand(&state, &caller, devices, change.tier).await
}

/// The tenant's tier rules, and where its assets stand by tier.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AssetTierRules)]
pub struct TierRules {
    /// Tried in order: the first whose query matches a device gives its
    /// tier, unless one was set by hand.
    pub rules: Vec<TierRule>,
    /// Who last set the rules, and when (Unix ms); absent when none are.
    pub set_by: Option<String>,
    pub set_at: Option<i64>,
    /// The tenant's assets per tier, as they stand now.
    pub assets_by_tier: Vec<TierCount>,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AssetTierCount)]
pub struct TierCount {
    pub tier: Tier,
    pub assets: i64,
}

async fn tier_rules_of(state: &AppState, tenant: &TenantId) -> ApiResult<Json<TierRules>> {
    let (rules, set) = tiers::rules(&state.db, tenant).await?;
    let counts = tiers::counts(&state.db, tenant).await?;
    Ok(Json(TierRules {
        rules,
        set_by: set.as_ref().map(|(by, _)| by.clone()),
        set_at: set.map(|(_, at)| at),
        assets_by_tier: counts
            .into_iter()
            .map(|(tier, assets)| TierCount { tier, assets })
            .collect(),
    }))
}

/// The tenant's tier rules.
#[utoipa::path(get, path = "/tier-rules", tag = "sla",
    responses((status = 200, body = TierRules)))]
async fn get_asset_tier_rules(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<TierRules>> {
    tier_rules_of(&state, &caller.tenant_id).await
}

#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = AssetTierRulesChange)]
#[serde(deny_unknown_fields)]
pub struct TierRulesChange {
    /// The whole ordered list (at most 50); an empty list removes them.
    rules: Vec<TierRule>,
}

/// Replace the tenant's tier rules (admin or owner): each a device search
/// query on any device field (a name pattern, the OS, a group or tag an
/// mdm or edr reports, their attributes) and the tier it gives. Every
/// asset's tier is recomputed at once, and after each rollup.
#[utoipa::path(put, path = "/tier-rules", tag = "sla", request_body = TierRulesChange,
    responses((status = 200, body = TierRules), (status = 403, body = ErrorBody),
              (status = 422, body = ErrorBody)))]
async fn set_asset_tier_rules(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(change): Json<TierRulesChange>,
) -> ApiResult<Json<TierRules>> {
    if change.rules.len() > tiers::MAX_RULES {
        return Err(ApiError::validation("rules", "at most 50 rules"));
    }
    let mut rules = Vec::with_capacity(change.rules.len());
    for (i, rule) in change.rules.into_iter().enumerate() {
        let name = rule.name.trim().to_string();
        if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
            return Err(ApiError::validation(
                &format!("rules[{i}].name"),
                "must be 1 to 100 printable characters",
            ));
        }
        cairn_inventory::devices::figures::query(&rule.query, &format!("rules[{i}].query"))?;
        rules.push(TierRule { name, ..rule });
    }
    let now = state.clock.now_ms();
    tiers::set_rules(&state.db, &caller.tenant_id, &rules, &caller.email, now).await?;
    tier_rules_of(&state, &caller.tenant_id).await
}

/// The tenant's exceptions, newest first, a page at a time.
#[utoipa::path(get, path = "/exceptions", tag = "sla", params(PageParams),
    responses((status = 200, body = Page<ExceptionView>), (status = 422, body = ErrorBody)))]
async fn list_sla_exceptions(
    State(state): State<AppState>,
    caller: Caller,
    Query(page): Query<PageParams>,
) -> ApiResult<Json<Page<ExceptionView>>> {
    let bounds = page.bounds()?;
    let now = state.clock.now_ms();
    let rows = exceptions::list(&state.db, &caller.tenant_id).await?;
    let (rows, total) = paging::slice(rows, bounds);
    Ok(Json(Page::new(
        rows.into_iter().map(|row| row.view(now)).collect(),
        total,
        bounds,
    )))
}

#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = SlaExceptionRequest)]
#[serde(deny_unknown_fields)]
pub struct ExceptionRequest {
    /// A CVE with an open finding in the tenant.
    cve_id: String,
    /// Devices (names as the inventory shows them) with an open finding
    /// of the CVE; every such device when absent or empty.
    #[serde(default)]
    devices: Vec<String>,
    /// Why, 1 to 2,000 characters.
    reason: String,
    /// What stands in for the fix meanwhile, at most 2,000 characters.
    compensating_control: Option<String>,
    /// RFC 3339; in the future, and at most the applied policy's
    /// `max_exception_days` away.
    expires_at: String,
}

fn text(value: &str, field: &str, required: bool) -> ApiResult<()> {
    let length = value.trim().chars().count();
    if (required && length == 0) || length > 2000 {
        let bounds = if required {
            "1 to 2000"
        } else {
            "at most 2000"
        };
        return Err(ApiError::validation(
            field,
            format!("must be {bounds} characters"),
        ));
    }
    Ok(())
}

/// Request an exception for a CVE's open findings (any member). It waits
/// for an admin other than the requester.
#[utoipa::path(post, path = "/exceptions", tag = "sla", request_body = ExceptionRequest,
    responses((status = 201, body = ExceptionView), (status = 422, body = ErrorBody)))]
async fn request_sla_exception(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<ExceptionRequest>,
) -> ApiResult<(StatusCode, Json<ExceptionView>)> {
    let tenant = &caller.tenant_id;
    let cve_id = cairn_vulnerabilities::reference::research::cve_id(&request.cve_id)
        .ok_or_else(|| ApiError::validation("cve_id", "is not a CVE id (CVE-YYYY-NNNN)"))?;
    text(&request.reason, "reason", true)?;
    if let Some(control) = &request.compensating_control {
        text(control, "compensating_control", false)?;
    }
    let now = state.clock.now_ms();
    let applied = super::applied(&state.db, tenant).await?;
    let expires_at = chrono::DateTime::parse_from_rfc3339(request.expires_at.trim())
        .map_err(|_| ApiError::validation("expires_at", "must be an RFC 3339 time"))?
        .timestamp_millis();
    if expires_at <= now {
        return Err(ApiError::validation("expires_at", "must be in the future"));
    }
    let max_days = applied.policy.max_exception_days;
    if expires_at > now + max_days * super::policy::DAY_MS {
        return Err(ApiError::validation(
            "expires_at",
            format!("must be at most {max_days} days away (the policy's maximum)"),
        ));
    }
    let open: Vec<String> = super::tracked_with(&state.db, tenant, &applied.policy, now, i64::MAX)
        .await?
        .into_iter()
        .filter(|f| f.cve_id == cve_id)
        .map(|f| storage::device_key(&f.device_name))
        .collect();
    if open.is_empty() {
        return Err(ApiError::validation(
            "cve_id",
            format!("{cve_id} has no open finding here"),
        ));
    }
    let mut devices: Vec<String> = request
        .devices
        .iter()
        .map(|d| d.trim().to_string())
        .collect();
    devices.dedup_by_key(|d| storage::device_key(d));
    if devices.len() > 1000 {
        return Err(ApiError::validation(
            "devices",
            "must name at most 1000 devices",
        ));
    }
    if let Some(missing) = devices
        .iter()
        .find(|d| !open.contains(&storage::device_key(d)))
    {
        return Err(ApiError::validation(
            "devices",
            format!("{missing:?} has no open finding of {cve_id}"),
        ));
    }
    let id = exceptions::request(
        &state.db,
        tenant,
        &exceptions::Request {
            cve_id: &cve_id,
            devices: &devices,
            reason: request.reason.trim(),
            compensating_control: request.compensating_control.as_deref().map(str::trim),
            expires_at,
            by_user: caller.user_id.as_str(),
            by_email: &caller.email,
            at: now,
        },
    )
    .await?;
    let row = exceptions::get(&state.db, tenant, &id)
        .await?
        .ok_or(ApiError::NotFound("exception"))?;
    Ok((StatusCode::CREATED, Json(row.view(now))))
}

/// One of the tenant's exceptions.
#[utoipa::path(get, path = "/exceptions/{exception_id}", tag = "sla",
    params(("exception_id" = String, Path)),
    responses((status = 200, body = ExceptionView), (status = 404, body = ErrorBody)))]
async fn get_sla_exception(
    State(state): State<AppState>,
    caller: Caller,
    Path(exception_id): Path<String>,
) -> ApiResult<Json<ExceptionView>> {
    let row = exceptions::get(&state.db, &caller.tenant_id, &exception_id)
        .await?
        .ok_or(ApiError::NotFound("exception"))?;
    Ok(Json(row.view(state.clock.now_ms())))
}

#[derive(Debug, Deserialize, ToSchema)]
#[schema(as = SlaExceptionDecision)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    approve: bool,
    /// Why, at most 2,000 characters.
    #[serde(default)]
    comment: String,
}

/// Approve or reject a pending exception (admin or owner, never its
/// requester).
#[utoipa::path(post, path = "/exceptions/{exception_id}/decision", tag = "sla",
    params(("exception_id" = String, Path)), request_body = Decision,
    responses((status = 200, body = ExceptionView), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "Already decided"),
              (status = 422, body = ErrorBody)))]
async fn decide_sla_exception(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(exception_id): Path<String>,
    Json(decision): Json<Decision>,
) -> ApiResult<Json<ExceptionView>> {
    text(&decision.comment, "comment", false)?;
    let now = state.clock.now_ms();
    let decided = exceptions::Decision {
        approve: decision.approve,
        by: &caller.email,
        user_id: Some(caller.user_id.as_str()),
        comment: decision.comment.trim(),
        at: now,
    };
    let row = exceptions::decide(&state.db, &caller.tenant_id, &exception_id, &decided).await?;
    Ok(Json(row.view(now)))
}
