//! `/api/v1/automation`: rules, their dry runs, a run on request, the log
//! and the deliveries.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::evaluate::{Memory, Plan};
use super::rules::{self, Action, Conditions, Customers, RuleInput, RunState, StoredRule, Trigger};
use super::storage::{self, DeliveryView, LogFilter, LogRow};
use super::subscriptions::Subscriptions;
use axum::Extension;
use cairn_core::db::to_rfc3339;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_core::http::paging;
use cairn_core::ids::TenantId;
use cairn_platform::app::AppState;
use cairn_platform::auth::{AdminCaller, Caller};

pub fn router(subscriptions: Subscriptions) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_automation_rules, create_automation_rule))
        .routes(routes!(
            get_automation_rule,
            replace_automation_rule,
            delete_automation_rule
        ))
        .routes(routes!(dry_run_automation_rule))
        .routes(routes!(dry_run_automation_draft))
        .routes(routes!(run_automation))
        .routes(routes!(automation_log))
        .routes(routes!(automation_deliveries))
        .routes(routes!(retry_automation_delivery))
        // Dry runs of a subscription_match rule read the subscriptions.
        .layer(axum::Extension(subscriptions))
}

/// A rule as the API shows it (webhook secrets never).
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AutomationRule)]
pub struct RuleView {
    pub id: String,
    pub name: String,
    pub enabled: bool,
    pub trigger: Trigger,
    pub conditions: Conditions,
    pub actions: Vec<Action>,
    pub include_existing: bool,
    pub max_tickets_per_run: u32,
    pub max_actions_per_hour: u32,
    /// A partner's rule over its customers: which.
    pub customers: Option<Customers>,
    pub owner: String,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
    /// When the rule last ran (over any customer, for a partner's rule);
    /// absent until its first run.
    pub evaluated_at: Option<String>,
}

impl RuleView {
    fn of(rule: StoredRule, last_run: Option<i64>) -> RuleView {
        let input = rule.input;
        RuleView {
            id: rule.id,
            name: input.name,
            enabled: input.enabled,
            trigger: input.trigger,
            conditions: input.conditions,
            actions: input.actions.into_iter().map(Action::shown).collect(),
            include_existing: input.include_existing,
            max_tickets_per_run: input.max_tickets_per_run,
            max_actions_per_hour: input.max_actions_per_hour,
            customers: input.customers,
            owner: rule.owner_email,
            created_at: to_rfc3339(rule.created_at),
            updated_at: to_rfc3339(rule.updated_at),
            evaluated_at: last_run.map(to_rfc3339),
        }
    }
}

async fn view(state: &AppState, tenant: &TenantId, rule: StoredRule) -> ApiResult<RuleView> {
    let runs = rules::last_runs(&state.db, tenant).await?;
    let last = runs.get(&rule.id).copied();
    Ok(RuleView::of(rule, last))
}

/// Checks a rule beyond its shape: its own checks, its device query
/// against the device search's fields, each webhook URL against the
/// outbound rules (scheme, plain-http grants, private addresses), and the
/// customers of a partner's rule against the partner's.
async fn check(state: &AppState, tenant: &TenantId, input: &RuleInput) -> ApiResult<()> {
    check_shape(state, input)?;
    let Some(customers) = &input.customers else {
        return Ok(());
    };
    let partner = cairn_platform::partner::storage::customers(&state.db, tenant).await?;
    if partner.is_empty() {
        return Err(ApiError::validation(
            "customers",
            "only a partner (an organization with customers) has rules over customers",
        ));
    }
    let known = |id: &str| partner.iter().any(|c| c.id == id);
    if let Some(group) = &customers.group_id {
        if cairn_platform::partner::storage::group(&state.db, tenant, group)
            .await?
            .is_none()
        {
            return Err(ApiError::validation(
                "customers.group_id",
                "not one of your groups",
            ));
        }
    }
    if let Some(id) = customers
        .customer_ids
        .iter()
        .flatten()
        .find(|id| !known(id))
    {
        return Err(ApiError::validation(
            "customers.customer_ids",
            format!("{id} is not one of your customers"),
        ));
    }
    for (i, action) in input.actions.iter().enumerate() {
        if let Action::Ticket {
            companies: Some(companies),
            ..
        } = action
        {
            if let Some(id) = companies
                .iter()
                .map(|c| &c.customer_id)
                .find(|id| !known(id))
            {
                return Err(ApiError::validation(
                    &format!("actions[{i}].companies"),
                    format!("{id} is not one of your customers"),
                ));
            }
        }
    }
    Ok(())
}

fn check_shape(state: &AppState, input: &RuleInput) -> ApiResult<()> {
    input
        .check()
        .map_err(|e| ApiError::validation(&e.field, &e.message))?;
    if let Some(query) = &input.conditions.devices {
        cairn_inventory::devices::figures::query(query, "conditions.devices")?;
    }
    if input
        .actions
        .iter()
        .filter(|a| matches!(a, Action::Ticket { .. }))
        .count()
        > 1
    {
        return Err(ApiError::validation("actions", "at most one ticket action"));
    }
    for (i, action) in input.actions.iter().enumerate() {
        if let Action::Webhook { url, .. } = action {
            cairn_plugins::outbound::Outbound::for_host_feature(
                &state.settings,
                url,
                None,
                std::time::Duration::from_secs(1),
                1,
            )
            .map_err(|why| ApiError::validation(&format!("actions[{i}].url"), &why))?;
        }
    }
    Ok(())
}

async fn rule_of(state: &AppState, tenant: &TenantId, id: &str) -> ApiResult<StoredRule> {
    rules::get(&state.db, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("automation rule"))
}

/// The tenant's rules, oldest first.
#[utoipa::path(get, path = "/rules", tag = "automation",
    responses((status = 200, body = Vec<RuleView>)))]
async fn list_automation_rules(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<RuleView>>> {
    let rules = rules::list(&state.db, &caller.tenant_id).await?;
    let runs = rules::last_runs(&state.db, &caller.tenant_id).await?;
    Ok(Json(
        rules
            .into_iter()
            .map(|r| {
                let last = runs.get(&r.id).copied();
                RuleView::of(r, last)
            })
            .collect(),
    ))
}

/// Makes a rule (admins). Its first run takes the findings that match
/// then as its baseline (not acted on) unless `include_existing`. A
/// partner's rule with `customers` runs over those customers' findings
/// (each on its own: its tickets, messages and log lines name the
/// customer), its tickets through the partner's psa connector.
#[utoipa::path(post, path = "/rules", tag = "automation", request_body = RuleInput,
    responses((status = 201, body = RuleView),
              (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 409, body = ErrorBody, description = "The tenant has 100 rules already"),
              (status = 422, body = ErrorBody, description = "A value refused; `field` names it")))]
async fn create_automation_rule(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(input): Json<RuleInput>,
) -> ApiResult<(StatusCode, Json<RuleView>)> {
    check(&state, &caller.tenant_id, &input).await?;
    let seal = |secret: &str| state.secrets.seal(secret);
    let now = state.clock.now_ms();
    let id = rules::create(
        &state.db,
        &caller.tenant_id,
        &input,
        (caller.user_id.as_str(), &caller.email),
        &seal,
        now,
    )
    .await?
    .ok_or_else(|| {
        ApiError::Conflict(format!(
            "a tenant keeps at most {} automation rules; delete one first",
            rules::MAX_RULES
        ))
    })?;
    super::run_rules_of(&state, &caller.tenant_id).await?;
    let rule = rule_of(&state, &caller.tenant_id, &id).await?;
    Ok((
        StatusCode::CREATED,
        Json(view(&state, &caller.tenant_id, rule).await?),
    ))
}

#[utoipa::path(get, path = "/rules/{id}", tag = "automation",
    params(("id" = String, Path)),
    responses((status = 200, body = RuleView), (status = 404, body = ErrorBody)))]
async fn get_automation_rule(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<RuleView>> {
    let rule = rule_of(&state, &caller.tenant_id, &id).await?;
    Ok(Json(view(&state, &caller.tenant_id, rule).await?))
}

/// Replaces a rule (admins). A webhook given without `secret` keeps the
/// secret stored for the same URL. A changed trigger, conditions or
/// `include_existing` start the rule afresh: what matches at its next
/// run is its new baseline.
#[utoipa::path(put, path = "/rules/{id}", tag = "automation", request_body = RuleInput,
    params(("id" = String, Path)),
    responses((status = 200, body = RuleView),
              (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody, description = "A value refused; `field` names it")))]
async fn replace_automation_rule(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(id): Path<String>,
    Json(input): Json<RuleInput>,
) -> ApiResult<Json<RuleView>> {
    let before = rule_of(&state, &caller.tenant_id, &id).await?;
    let keeps_secret =
        |i: usize, url: &str| {
            before.input.actions.iter().any(
                |a| matches!(a, Action::Webhook { url: old, secret: Some(_), .. } if old == url),
            ) && matches!(
                input.actions.get(i),
                Some(Action::Webhook { secret: None, .. })
            )
        };
    // A kept secret is checked as stored: fill a stand-in for the check.
    let mut checked = input.clone();
    for (i, action) in checked.actions.iter_mut().enumerate() {
        if let Action::Webhook { url, secret, .. } = action {
            if keeps_secret(i, url) {
                *secret = Some("kept-secret-stand-in".into());
            }
        }
    }
    check(&state, &caller.tenant_id, &checked).await?;
    let seal = |secret: &str| state.secrets.seal(secret);
    let now = state.clock.now_ms();
    if !rules::replace(&state.db, &caller.tenant_id, &id, &input, &seal, now).await? {
        return Err(ApiError::NotFound("automation rule"));
    }
    super::run_rules_of(&state, &caller.tenant_id).await?;
    let rule = rule_of(&state, &caller.tenant_id, &id).await?;
    Ok(Json(view(&state, &caller.tenant_id, rule).await?))
}

/// Deletes a rule (admins); its log and deliveries stay.
#[utoipa::path(delete, path = "/rules/{id}", tag = "automation",
    params(("id" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_automation_rule(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    if rules::delete(&state.db, &caller.tenant_id, &id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("automation rule"))
    }
}

/// What a run would do over one tenant's findings.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AutomationDryRun)]
pub struct DryRun {
    /// The tenant (for a partner's rule, each customer it reaches).
    pub tenant_id: String,
    pub plan: Plan,
}

/// The tenants a rule runs over: its owner, or the customers it reaches.
async fn tenants_of(
    state: &AppState,
    owner: &TenantId,
    rule: &StoredRule,
) -> ApiResult<Vec<TenantId>> {
    let Some(customers) = &rule.input.customers else {
        return Ok(vec![owner.clone()]);
    };
    let groups = cairn_platform::partner::storage::group_members(&state.db, owner).await?;
    Ok(
        cairn_platform::partner::storage::customers(&state.db, owner)
            .await?
            .into_iter()
            .filter(|c| {
                let of: Vec<String> = groups
                    .iter()
                    .filter(|(_, customer)| *customer == c.id)
                    .map(|(group, _)| group.clone())
                    .collect();
                customers.reaches(&c.id, &of)
            })
            .map(|c| TenantId(c.id))
            .collect(),
    )
}

/// What the rule's next run would do against today's data, doing nothing:
/// the findings that would fire, those new since its last run it would
/// skip and why, and the deliveries it would queue; one answer per tenant
/// it runs over.
#[utoipa::path(post, path = "/rules/{id}/dry-run", tag = "automation",
    params(("id" = String, Path)),
    responses((status = 200, body = Vec<DryRun>), (status = 404, body = ErrorBody)))]
async fn dry_run_automation_rule(
    State(state): State<AppState>,
    Extension(subscriptions): Extension<Subscriptions>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Vec<DryRun>>> {
    let rule = rule_of(&state, &caller.tenant_id, &id).await?;
    let mut runs = vec![];
    for tenant in tenants_of(&state, &caller.tenant_id, &rule).await? {
        let run = rules::run_state(&state.db, &id, &tenant).await?;
        let memory = storage::memory(&state.db, &tenant, &id).await?;
        let now = state.clock.now_ms();
        let verdicts = super::verdicts_for(&state, &tenant, std::slice::from_ref(&rule), now)
            .await
            .map_err(ApiError::Internal)?;
        let over = super::Over {
            tenant: &tenant,
            run: &run,
            subscriptions: &subscriptions,
            verdicts: &verdicts,
        };
        runs.push(dry_run(&state, over, &rule, &memory).await?);
    }
    Ok(Json(runs))
}

/// What a rule not yet saved would do against today's data if every
/// finding it matches were new to it, doing nothing; one answer per
/// tenant it would run over.
#[utoipa::path(post, path = "/dry-run", tag = "automation", request_body = RuleInput,
    responses((status = 200, body = Vec<DryRun>),
              (status = 422, body = ErrorBody, description = "A value refused; `field` names it")))]
async fn dry_run_automation_draft(
    State(state): State<AppState>,
    Extension(subscriptions): Extension<Subscriptions>,
    caller: Caller,
    Json(input): Json<RuleInput>,
) -> ApiResult<Json<Vec<DryRun>>> {
    check(&state, &caller.tenant_id, &input).await?;
    let now = state.clock.now_ms();
    let rule = StoredRule {
        id: String::new(),
        tenant_id: caller.tenant_id.as_str().to_string(),
        input,
        owner_email: caller.email.clone(),
        created_at: now,
        updated_at: now,
        version: 0,
    };
    // As if it had run just before over nothing: every match fires, and no
    // skip is "new since the last run".
    let run = RunState {
        version: Some(0),
        evaluated_at: Some(now),
        seen_until: None,
        digest_period: None,
    };
    let memory = Memory {
        matches: Default::default(),
        tickets: Default::default(),
        noted: Default::default(),
    };
    let mut runs = vec![];
    for tenant in tenants_of(&state, &caller.tenant_id, &rule).await? {
        let now = state.clock.now_ms();
        let verdicts = super::verdicts_for(&state, &tenant, std::slice::from_ref(&rule), now)
            .await
            .map_err(ApiError::Internal)?;
        let over = super::Over {
            tenant: &tenant,
            run: &run,
            subscriptions: &subscriptions,
            verdicts: &verdicts,
        };
        runs.push(dry_run(&state, over, &rule, &memory).await?);
    }
    Ok(Json(runs))
}

async fn dry_run(
    state: &AppState,
    over: super::Over<'_>,
    rule: &StoredRule,
    memory: &Memory,
) -> ApiResult<DryRun> {
    let now = state.clock.now_ms();
    let tenant = over.tenant.clone();
    let findings = if rule.input.trigger.is_event() {
        vec![]
    } else {
        super::open_findings(state, &tenant, now).await?
    };
    let plan = super::plan_rule(state, over, rule, &findings, memory, now)
        .await
        .map_err(|e| ApiError::validation("conditions.devices", e.to_string()))?;
    Ok(DryRun {
        tenant_id: tenant.as_str().to_string(),
        plan,
    })
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AutomationRun)]
pub struct RunQueued {
    /// The `automation` job; follow it at `/api/v1/jobs/{id}`.
    pub job_id: String,
}

/// Runs the tenant's rules now, and a partner's over its customers (they
/// also run on their own whenever findings or reference data change, and
/// hourly for time triggers).
#[utoipa::path(post, path = "/run", tag = "automation",
    responses((status = 202, body = RunQueued)))]
async fn run_automation(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<(StatusCode, Json<RunQueued>)> {
    let job_id = super::run_rules_of(&state, &caller.tenant_id).await?;
    Ok((StatusCode::ACCEPTED, Json(RunQueued { job_id })))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct LogQuery {
    rule_id: Option<String>,
    /// Lines about this CVE.
    cve_id: Option<String>,
    /// Lines about this device (its name, ignoring case).
    device: Option<String>,
    /// RFC 3339; lines at or after.
    since: Option<String>,
    /// RFC 3339; lines at or before.
    until: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// 1 to 500; default 100.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// A page of the log, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AutomationLogPage)]
pub struct LogPage {
    items: Vec<LogRow>,
    /// Lines the filters keep, over every page.
    total: i64,
    skip: i64,
    limit: i64,
}

/// A page of deliveries, newest first.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = AutomationDeliveryPage)]
pub struct DeliveryPage {
    items: Vec<DeliveryView>,
    /// Deliveries the filters keep, over every page.
    total: i64,
    skip: i64,
    limit: i64,
}

/// Both lists' page size when none is asked for.
const DEFAULT_LIMIT: i64 = 100;

fn instant(field: &str, value: &Option<String>) -> ApiResult<Option<i64>> {
    value
        .as_deref()
        .map(|v| {
            chrono::DateTime::parse_from_rfc3339(v)
                .map(|t| t.timestamp_millis())
                .map_err(|_| {
                    ApiError::validation(
                        field,
                        "must be an RFC 3339 time, e.g. 2026-11-30T00:00:00Z",
                    )
                })
        })
        .transpose()
}

/// What the tenant's rules did and why (a partner's: over each customer,
/// named by `tenant_id`), newest first: fired, skipped (with
/// the condition that was false), baseline, stopped (a limit), queued,
/// delivered, failed (with the upstream's answer), dead, rate-limited.
#[utoipa::path(get, path = "/log", tag = "automation", params(LogQuery),
    responses((status = 200, body = LogPage), (status = 422, body = ErrorBody)))]
async fn automation_log(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<LogQuery>,
) -> ApiResult<Json<LogPage>> {
    let (skip, limit) = paging::bounds(query.skip, query.limit, DEFAULT_LIMIT)?;
    let cve = query
        .cve_id
        .as_deref()
        .map(|c| {
            cairn_vulnerabilities::reference::research::cve_id(c)
                .ok_or_else(|| ApiError::validation("cve_id", "not a CVE id (CVE-YYYY-NNNN)"))
        })
        .transpose()?;
    let filter = LogFilter {
        rule_id: query.rule_id.as_deref(),
        cve_id: cve.as_deref(),
        device_name: query.device.as_deref(),
        since: instant("since", &query.since)?,
        until: instant("until", &query.until)?,
    };
    let (items, total) =
        storage::read_log(&state.db, &caller.tenant_id, &filter, (skip, limit)).await?;
    Ok(Json(LogPage {
        items,
        total,
        skip,
        limit,
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct DeliveriesQuery {
    rule_id: Option<String>,
    /// `pending`, `sending`, `delivered` or `dead`.
    status: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// 1 to 500; default 100.
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// A delivery's states: waiting (or retrying), being sent, sent, or
/// given up after its attempts.
pub const DELIVERY_STATUSES: [&str; 4] = ["pending", "sending", "delivered", "dead"];

/// The tenant's deliveries with their attempts and the upstream's last
/// answer, newest first.
#[utoipa::path(get, path = "/deliveries", tag = "automation", params(DeliveriesQuery),
    responses((status = 200, body = DeliveryPage), (status = 422, body = ErrorBody)))]
async fn automation_deliveries(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<DeliveriesQuery>,
) -> ApiResult<Json<DeliveryPage>> {
    let (skip, limit) = paging::bounds(query.skip, query.limit, DEFAULT_LIMIT)?;
    if let Some(status) = &query.status {
        if !DELIVERY_STATUSES.contains(&status.as_str()) {
            return Err(ApiError::validation(
                "status",
                "must be pending, sending, delivered or dead",
            ));
        }
    }
    let (rows, total) = storage::deliveries(
        &state.db,
        &caller.tenant_id,
        query.rule_id.as_deref(),
        query.status.as_deref(),
        (skip, limit),
    )
    .await?;
    Ok(Json(DeliveryPage {
        items: rows.into_iter().map(DeliveryView::from).collect(),
        total,
        skip,
        limit,
    }))
}

/// Queues a dead delivery again (admins); its attempts start over.
#[utoipa::path(post, path = "/deliveries/{id}/retry", tag = "automation",
    params(("id" = String, Path)),
    responses((status = 202, body = RunQueued),
              (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody, description = "No dead delivery of that id")))]
async fn retry_automation_delivery(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(id): Path<String>,
) -> ApiResult<(StatusCode, Json<RunQueued>)> {
    let now = state.clock.now_ms();
    let whose = storage::retry(&state.db, &caller.tenant_id, &id, now)
        .await?
        .ok_or(ApiError::NotFound("dead delivery"))?;
    let job_id = super::run_soon(&state, &whose).await?;
    Ok((StatusCode::ACCEPTED, Json(RunQueued { job_id })))
}
