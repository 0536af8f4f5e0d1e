//! `/api/v1/remediation`: plans (a draft is the dry run), their approval,
//! cancellation and progress.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::storage::{self, ItemRow, PlanRow};
use super::{Rmm, Scope};
use cairn_core::db::to_rfc3339;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_core::ids::TenantId;
use cairn_platform::app::AppState;
use cairn_platform::auth::{AdminCaller, Caller};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_remediation_plans, create_remediation_plan))
        .routes(routes!(get_remediation_plan))
        .routes(routes!(approve_remediation_plan))
        .routes(routes!(cancel_remediation_plan))
        .routes(routes!(remediation_settings, set_remediation_settings))
}

/// How the tenant's plans are approved.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RemediationSettings)]
pub struct Settings {
    /// After an admin approves a plan, the client approves it too, through
    /// the client portal (`POST /api/remediation-plans/{id}/decision`, with
    /// the key of a portal client linked to this tenant).
    pub client_approval: bool,
}

/// How the tenant's plans are approved.
#[utoipa::path(get, path = "/settings", tag = "remediation",
    responses((status = 200, body = Settings)))]
async fn remediation_settings(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Settings>> {
    Ok(Json(Settings {
        client_approval: storage::client_approval(&state.db, &caller.tenant_id).await?,
    }))
}

/// Sets how the tenant's plans are approved (admins; a partner's admin
/// acting in its customer). Plans approved before keep their status.
#[utoipa::path(put, path = "/settings", tag = "remediation", request_body = Settings,
    responses((status = 200, body = Settings),
              (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 422, body = ErrorBody)))]
async fn set_remediation_settings(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(settings): Json<Settings>,
) -> ApiResult<Json<Settings>> {
    storage::set_client_approval(
        &state.db,
        &caller.tenant_id,
        settings.client_approval,
        state.clock.now_ms(),
    )
    .await?;
    Ok(Json(settings))
}

/// What a plan should fix: a CVE's open findings, the open findings of the
/// devices a device search finds, or a CVE's on those devices.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = RemediationPlanRequest)]
pub struct PlanRequest {
    /// `CVE-YYYY-NNNN`.
    pub cve_id: Option<String>,
    /// A device search query (the query object of
    /// `POST /api/v1/devices/search`).
    pub devices: Option<Value>,
}

/// Counts of a plan's items by state.
#[derive(Debug, Default, Serialize, ToSchema)]
#[schema(as = RemediationCounts)]
pub struct Counts {
    /// Approved or waiting for approval, not started.
    pub planned: i64,
    /// Left out, each with its reason.
    pub skipped: i64,
    /// Started: the RMM has it (starting, pending or running).
    pub in_progress: i64,
    /// The RMM reported success; waiting for an inventory to confirm it.
    pub awaiting_inventory: i64,
    /// A later inventory shows the fix.
    pub fixed: i64,
    /// The RMM reported success but a later inventory still shows the
    /// vulnerable version.
    pub remediation_failed: i64,
    /// The RMM refused it or reported failure.
    pub failed: i64,
    pub cancelled: i64,
}

impl Counts {
    pub fn of(by_state: Option<&std::collections::HashMap<String, i64>>) -> Counts {
        let mut counts = Counts::default();
        for (state, n) in by_state.into_iter().flatten() {
            let slot = match state.as_str() {
                "planned" => &mut counts.planned,
                "skipped" => &mut counts.skipped,
                "starting" | "pending" | "running" => &mut counts.in_progress,
                "awaiting_inventory" => &mut counts.awaiting_inventory,
                "fixed" => &mut counts.fixed,
                "remediation_failed" => &mut counts.remediation_failed,
                "failed" => &mut counts.failed,
                _ => &mut counts.cancelled,
            };
            *slot += n;
        }
        counts
    }
}

/// A plan without its items.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RemediationPlanSummary)]
pub struct PlanSummary {
    pub id: String,
    pub cve_id: Option<String>,
    /// The device search the plan was made from.
    pub devices: Option<Value>,
    /// The rmm connector that carries it out.
    pub connector: String,
    /// `draft` (nothing sent: the dry run), `awaiting_client` (approved
    /// by an admin, waiting for the client's approval through the client
    /// portal), `approved`, `running`, `done`, `rejected` (by the client)
    /// or `cancelled`.
    pub status: String,
    pub created_by: String,
    /// RFC 3339.
    pub created_at: String,
    pub approved_by: Option<String>,
    pub approved_at: Option<String>,
    pub finished_at: Option<String>,
    /// The client's decision through the client portal, when it gave one.
    pub client_decided_by: Option<String>,
    pub client_decided_at: Option<String>,
    pub client_comment: Option<String>,
    pub counts: Counts,
}

impl PlanSummary {
    pub fn of(row: PlanRow, counts: Counts) -> PlanSummary {
        PlanSummary {
            id: row.id,
            cve_id: row.cve_id,
            devices: row.devices.and_then(|d| serde_json::from_str(&d).ok()),
            connector: row.connector_id,
            status: row.status,
            created_by: row.created_by,
            created_at: to_rfc3339(row.created_at),
            approved_by: row.approved_by,
            approved_at: row.approved_at.map(to_rfc3339),
            finished_at: row.finished_at.map(to_rfc3339),
            client_decided_by: row.client_decided_by,
            client_decided_at: row.client_decided_at.map(to_rfc3339),
            client_comment: row.client_comment,
            counts,
        }
    }
}

/// One device's vulnerable application version in a plan.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RemediationItem)]
pub struct ItemView {
    pub device_name: String,
    pub application_name: String,
    /// The installed, vulnerable version.
    pub version: String,
    /// The plan's CVEs this version has on the device.
    pub cve_ids: Vec<String>,
    /// The lowest version that fixes them all (from the findings' fix data).
    pub target_version: Option<String>,
    /// The connector's remediation it runs (absent when skipped).
    pub action: Option<String>,
    /// `planned`, `skipped`, `starting`, `pending`, `running`,
    /// `awaiting_inventory`, `fixed`, `remediation_failed`, `failed` or
    /// `cancelled`.
    pub state: String,
    /// Why it is skipped or failed, as a sentence; for
    /// `remediation_failed`, what the RMM said and what the inventory
    /// showed.
    pub reason: Option<String>,
    /// The RMM's own words about the job.
    pub upstream_report: Option<String>,
    pub started_at: Option<String>,
    pub reported_at: Option<String>,
    /// When the inventory that decided `fixed` or `remediation_failed`
    /// was synced.
    pub verified_at: Option<String>,
    /// When it reached `fixed`, `remediation_failed` or `failed`.
    pub decided_at: Option<String>,
}

impl From<ItemRow> for ItemView {
    fn from(row: ItemRow) -> ItemView {
        ItemView {
            cve_ids: row.cves(),
            device_name: row.device_name,
            application_name: row.application_name,
            version: row.version,
            target_version: row.target_version,
            action: row.action,
            state: row.state,
            reason: row.reason,
            upstream_report: row.upstream_report,
            started_at: row.started_at.map(to_rfc3339),
            reported_at: row.reported_at.map(to_rfc3339),
            verified_at: row.verified_at.map(to_rfc3339),
            decided_at: row.decided_at.map(to_rfc3339),
        }
    }
}

/// A plan and every item of it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RemediationPlan)]
pub struct PlanView {
    pub plan: PlanSummary,
    pub items: Vec<ItemView>,
}

#[derive(Debug, Serialize, ToSchema)]
#[schema(as = RemediationPlanPage)]
pub struct PlanPage {
    pub items: Vec<PlanSummary>,
    pub total: i64,
    pub skip: i64,
    pub limit: i64,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PlanListQuery {
    #[serde(default)]
    skip: i64,
    /// 1 to 500; default 100.
    limit: Option<i64>,
}

fn is_cve_id(id: &str) -> bool {
    let mut parts = id.splitn(3, '-');
    parts.next() == Some("CVE")
        && parts
            .next()
            .is_some_and(|y| y.len() == 4 && y.bytes().all(|b| b.is_ascii_digit()))
        && parts
            .next()
            .is_some_and(|n| n.len() >= 4 && n.len() <= 12 && n.bytes().all(|b| b.is_ascii_digit()))
}

async fn view(state: &AppState, tenant: &TenantId, row: PlanRow) -> ApiResult<PlanView> {
    let items = storage::items(&state.db, tenant, &row.id).await?;
    let counts = storage::state_counts(&state.db, tenant, std::slice::from_ref(&row.id)).await?;
    let counts = Counts::of(counts.get(&row.id));
    Ok(PlanView {
        plan: PlanSummary::of(row, counts),
        items: items.into_iter().map(ItemView::from).collect(),
    })
}

async fn plan_of(state: &AppState, tenant: &TenantId, id: &str) -> ApiResult<PlanRow> {
    storage::plan(&state.db, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("remediation plan"))
}

/// The tenant's plans, newest first.
#[utoipa::path(get, path = "/plans", tag = "remediation", params(PlanListQuery),
    responses((status = 200, body = PlanPage), (status = 422, body = ErrorBody)))]
async fn list_remediation_plans(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<PlanListQuery>,
) -> ApiResult<Json<PlanPage>> {
    let (skip, limit) = cairn_core::http::paging::bounds(Some(query.skip), query.limit, 100)?;
    let (rows, total) = storage::plans(&state.db, &caller.tenant_id, skip, limit).await?;
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let counts = storage::state_counts(&state.db, &caller.tenant_id, &ids).await?;
    Ok(Json(PlanPage {
        items: rows
            .into_iter()
            .map(|row| {
                let of = Counts::of(counts.get(&row.id));
                PlanSummary::of(row, of)
            })
            .collect(),
        total,
        skip,
        limit,
    }))
}

/// Makes a draft plan: for each device with an open finding of the CVE
/// (or of the devices the search finds), the rmm connector's package
/// update to the lowest fixed version, or why it will not be remediated.
/// A draft is the dry run: nothing is sent until an admin approves it.
#[utoipa::path(post, path = "/plans", tag = "remediation", request_body = PlanRequest,
    responses((status = 201, body = PlanView),
              (status = 409, body = ErrorBody, description = "rmm is not configured for this tenant"),
              (status = 422, body = ErrorBody, description = "A value refused; `field` names it")))]
async fn create_remediation_plan(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<PlanRequest>,
) -> ApiResult<(StatusCode, Json<PlanView>)> {
    if let Some(cve) = &request.cve_id {
        if !is_cve_id(cve) {
            return Err(ApiError::validation(
                "cve_id",
                "must be a CVE id such as CVE-2023-6345",
            ));
        }
    }
    let devices: Option<Vec<String>> = match &request.devices {
        None => None,
        Some(query) => {
            let query = cairn_inventory::devices::figures::query(query, "devices")?;
            let scope =
                cairn_inventory::devices::figures::scope(&state.db, &caller.tenant_id, &query)
                    .await
                    .map_err(|e| ApiError::validation("devices", e.to_string()))?;
            Some(scope.names)
        }
    };
    if request.cve_id.is_none() && devices.is_none() {
        return Err(ApiError::validation(
            "cve_id",
            "name a CVE, a device search (devices), or both",
        ));
    }
    let rmm = Rmm::of(&state, &caller.tenant_id).await?.ok_or_else(|| {
        ApiError::Conflict(
            "rmm is not configured for this tenant; remediation runs through its connector".into(),
        )
    })?;
    let scope = Scope {
        cve_id: request.cve_id.as_deref(),
        devices: devices.as_deref(),
    };
    let items = super::build(&state, &caller.tenant_id, &rmm, &scope).await?;
    let new = storage::NewPlan {
        cve_id: request.cve_id.as_deref(),
        devices: request.devices.as_ref(),
        connector_id: &rmm.connector.descriptor.id,
        created_by: &caller.email,
    };
    let id = storage::create(
        &state.db,
        &caller.tenant_id,
        &new,
        &items,
        state.clock.now_ms(),
    )
    .await?;
    let row = plan_of(&state, &caller.tenant_id, &id).await?;
    Ok((
        StatusCode::CREATED,
        Json(view(&state, &caller.tenant_id, row).await?),
    ))
}

/// A plan, its items and where each stands.
#[utoipa::path(get, path = "/plans/{id}", tag = "remediation",
    params(("id" = String, Path, description = "The plan's id")),
    responses((status = 200, body = PlanView), (status = 404, body = ErrorBody)))]
async fn get_remediation_plan(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<PlanView>> {
    let row = plan_of(&state, &caller.tenant_id, &id).await?;
    Ok(Json(view(&state, &caller.tenant_id, row).await?))
}

/// Approves a draft (admins): its planned items start now, each through
/// the rmm connector, and are then followed and verified by inventory.
#[utoipa::path(post, path = "/plans/{id}/approve", tag = "remediation",
    params(("id" = String, Path, description = "The plan's id")),
    responses((status = 200, body = PlanView),
              (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "The plan is not a draft")))]
async fn approve_remediation_plan(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(id): Path<String>,
) -> ApiResult<Json<PlanView>> {
    let row = plan_of(&state, &caller.tenant_id, &id).await?;
    let now = state.clock.now_ms();
    let to = if storage::client_approval(&state.db, &caller.tenant_id).await? {
        "awaiting_client"
    } else {
        "approved"
    };
    let Some(written) =
        storage::approve(&state.db, &caller.tenant_id, &id, &caller.email, to, now).await?
    else {
        return Err(ApiError::Conflict(format!(
            "this plan is {}; only a draft can be approved",
            row.status
        )));
    };
    // Its items read before the run is queued: the answer is what the
    // approval made, not whatever step the run has reached by then.
    let approved = view(&state, &caller.tenant_id, written).await?;
    if to == "approved" {
        super::run_soon(&state, &caller.tenant_id).await?;
    }
    Ok(Json(approved))
}

/// Cancels a plan (admins): items not started are cancelled; those the
/// RMM has already go on and are still verified.
#[utoipa::path(post, path = "/plans/{id}/cancel", tag = "remediation",
    params(("id" = String, Path, description = "The plan's id")),
    responses((status = 200, body = PlanView),
              (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "The plan is done or cancelled")))]
async fn cancel_remediation_plan(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(id): Path<String>,
) -> ApiResult<Json<PlanView>> {
    let row = plan_of(&state, &caller.tenant_id, &id).await?;
    if !storage::cancel(&state.db, &caller.tenant_id, &id, state.clock.now_ms()).await? {
        return Err(ApiError::Conflict(format!(
            "this plan is {}; it cannot be cancelled",
            row.status
        )));
    }
    let row = plan_of(&state, &caller.tenant_id, &id).await?;
    Ok(Json(view(&state, &caller.tenant_id, row).await?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn cve_ids() {
        for (id, ok) in [
            ("CVE-2023-6345", true),
            ("CVE-2021-1234567", true),
            ("cve-2023-6345", false),
            ("CVE-23-6345", false),
            ("CVE-2023-12", false),
            ("CVE-2023-6345; DROP", false),
        ] {
            assert_eq!(super::is_cve_id(id), ok, "{id}");
        }
    }
}
