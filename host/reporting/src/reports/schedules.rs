//! Report schedules (`report_schedules`): a report asked for again every
//! `every_days`, optionally published to a portal client each time. A
//! sweep asks for each due one; claiming it moves its `next_at` first, so
//! two processes never ask twice.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::content::{ReportType, Scope};
use super::publish::Shelves;
use super::render::Format;
use cairn_core::db::{to_rfc3339, Db};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path};
use cairn_core::ids::TenantId;
use cairn_platform::app::AppState;
use cairn_platform::auth::{AdminCaller, Caller};

const DAY_MS: i64 = 86_400_000;
/// Schedules a tenant keeps at most.
const MAX_SCHEDULES: i64 = 50;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ReportScheduleRequest)]
pub struct ScheduleRequest {
    report_type: ReportType,
    format: Format,
    #[serde(default)]
    scope: Scope,
    /// Days between two reports (1 to 366); the first is written now.
    #[schema(minimum = 1, maximum = 366)]
    every_days: i64,
    /// One of the tenant's portal clients: each report joins its documents.
    #[serde(default)]
    publish_to_portal_client: Option<String>,
}

#[derive(Debug, Serialize, ToSchema, sqlx_macros::FromRow)]
#[schema(as = ReportSchedule)]
pub struct ScheduleView {
    pub id: String,
    pub report_type: String,
    pub format: String,
    #[schema(value_type = super::content::Scope)]
    pub scope: cairn_core::db::StoredJson,
    pub every_days: i64,
    #[sqlx(rename = "publish_to")]
    pub publish_to_portal_client: Option<String>,
    pub created_by: String,
    /// When the next report is asked for (RFC 3339).
    #[sqlx(skip)]
    pub next_at: String,
}

#[derive(sqlx_macros::FromRow)]
struct Due {
    id: String,
    tenant_id: String,
    report_type: String,
    format: String,
    scope: String,
    every_days: i64,
    publish_to: Option<String>,
    created_by: String,
    next_at: i64,
}

const COLUMNS: &str = "id, report_type, format, scope, every_days, publish_to, created_by, next_at";

async fn list(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<ScheduleView>> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM report_schedules WHERE tenant_id = $1 ORDER BY created_at, id"
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|row| {
            use sqlx::{FromRow, Row};
            let mut view = ScheduleView::from_row(row)?;
            view.next_at = to_rfc3339(row.try_get("next_at")?);
            Ok(view)
        })
        .collect()
}

/// The tenant's report schedules.
#[utoipa::path(get, path = "/schedules", tag = "reports",
    responses((status = 200, body = Vec<ScheduleView>)))]
pub(super) async fn list_report_schedules(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<ScheduleView>>> {
    Ok(Json(list(&state.db, &caller.tenant_id).await?))
}

/// Schedules a report (admins): the first is written now, then one every
/// `every_days`, each published to the portal client when one is named.
#[utoipa::path(post, path = "/schedules", tag = "reports", request_body = ScheduleRequest,
    responses((status = 201, body = ScheduleView),
              (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 409, body = ErrorBody, description = "The tenant has 50 schedules"),
              (status = 422, body = ErrorBody, description = "A value refused; `field` names it")))]
pub(super) async fn create_report_schedule(
    State(state): State<AppState>,
    axum::Extension(shelf): axum::Extension<Shelves>,
    AdminCaller(caller): AdminCaller,
    Json(request): Json<ScheduleRequest>,
) -> ApiResult<(StatusCode, Json<ScheduleView>)> {
    request.scope.check(request.report_type)?;
    if !(1..=366).contains(&request.every_days) {
        return Err(ApiError::validation("every_days", "must be 1 to 366"));
    }
    if let Some(client) = &request.publish_to_portal_client {
        super::routes::check_client(&shelf, &caller.tenant_id, client).await?;
    }
    let tenant = &caller.tenant_id;
    let count: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM report_schedules WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_one(&state.db.pool)
            .await?;
    if count >= MAX_SCHEDULES {
        return Err(ApiError::Conflict(format!(
            "a tenant keeps at most {MAX_SCHEDULES} report schedules; delete one first"
        )));
    }
    let id = uuid::Uuid::now_v7().to_string();
    let now = state.clock.now_ms();
    let name = |v: serde_json::Result<serde_json::Value>| {
        v.ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default()
    };
    sqlx::query(
        "INSERT INTO report_schedules (id, tenant_id, report_type, format, scope, every_days, \
         publish_to, created_by, created_at, next_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(name(serde_json::to_value(request.report_type)))
    .bind(name(serde_json::to_value(request.format)))
    .bind(serde_json::to_string(&request.scope).map_err(anyhow::Error::from)?)
    .bind(request.every_days)
    .bind(&request.publish_to_portal_client)
    .bind(caller.user_id.as_str())
    .bind(now)
    .execute(&state.db.pool)
    .await?;
    let view = list(&state.db, tenant)
        .await?
        .into_iter()
        .find(|s| s.id == id)
        .ok_or(ApiError::NotFound("report schedule"))?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Stops a schedule (admins); the reports it asked for stay.
#[utoipa::path(delete, path = "/schedules/{schedule_id}", tag = "reports",
    params(("schedule_id" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
pub(super) async fn delete_report_schedule(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(schedule_id): Path<String>,
) -> ApiResult<StatusCode> {
    let deleted = sqlx::query("DELETE FROM report_schedules WHERE tenant_id = $1 AND id = $2")
        .bind(caller.tenant_id.as_str())
        .bind(&schedule_id)
        .execute(&state.db.pool)
        .await?
        .rows_affected();
    match deleted {
        1 => Ok(StatusCode::NO_CONTENT),
        _ => Err(ApiError::NotFound("report schedule")),
    }
}

/// Asks for the report of every due schedule, each once.
pub async fn sweep(state: &AppState) -> anyhow::Result<()> {
    let now = state.clock.now_ms();
    let due: Vec<Due> = sqlx::query_as(
        "SELECT id, tenant_id, report_type, format, scope, every_days, publish_to, created_by, \
         next_at FROM report_schedules WHERE next_at <= $1 ORDER BY next_at LIMIT 100",
    )
    .bind(now)
    .fetch_all(&state.db.pool)
    .await?;
    for schedule in due {
        // Claimed by moving it on: a second process's update finds the old
        // `next_at` gone.
        let next =
            schedule.next_at.max(now - schedule.every_days * DAY_MS) + schedule.every_days * DAY_MS;
        let claimed =
            sqlx::query("UPDATE report_schedules SET next_at = $3 WHERE id = $1 AND next_at = $2")
                .bind(&schedule.id)
                .bind(schedule.next_at)
                .bind(next)
                .execute(&state.db.pool)
                .await?
                .rows_affected()
                == 1;
        if !claimed {
            continue;
        }
        let parsed = (
            serde_json::from_value::<ReportType>(serde_json::Value::String(schedule.report_type)),
            serde_json::from_value::<Format>(serde_json::Value::String(schedule.format)),
            serde_json::from_str::<Scope>(&schedule.scope),
        );
        let (Ok(report_type), Ok(format), Ok(scope)) = parsed else {
            tracing::warn!(schedule_id = %schedule.id, "a report schedule is unreadable; skipped");
            continue;
        };
        let tenant = TenantId(schedule.tenant_id);
        super::routes::create(
            state,
            &tenant,
            &schedule.created_by,
            report_type,
            format,
            &scope,
            schedule.publish_to.as_deref(),
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(())
}
