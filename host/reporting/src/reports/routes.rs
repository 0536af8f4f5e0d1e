//! `/api/v1/reports`: ask for a report, follow it, download it, delete it.

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::content::{ReportType, Scope};
use super::generate::GENERATE_KIND;
use super::publish::Shelves;
use super::render::Format;
use super::storage::{self, NewReport, ReportView};
use cairn_core::blobs::StoreError;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_inventory::search::{Page, PageParams};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_reports))
        .routes(routes!(generate_report))
        .routes(routes!(report_status))
        .routes(routes!(download_report))
        .routes(routes!(delete_report))
        .routes(routes!(
            super::schedules::list_report_schedules,
            super::schedules::create_report_schedule
        ))
        .routes(routes!(super::schedules::delete_report_schedule))
}

/// The tenant's reports, newest first.
#[utoipa::path(get, path = "/", tag = "reports",
    params(PageParams),
    responses((status = 200, body = Page<ReportView>), (status = 422, body = ErrorBody)))]
async fn list_reports(
    State(state): State<AppState>,
    caller: Caller,
    Query(page): Query<PageParams>,
) -> ApiResult<Json<Page<ReportView>>> {
    let bounds = page.bounds()?;
    let (items, total) = storage::list(&state.db, &caller.tenant_id, bounds.0, bounds.1).await?;
    Ok(Json(Page::new(items, total, bounds)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GenerateRequest {
    report_type: ReportType,
    format: Format,
    /// Default: the whole tenant.
    #[serde(default)]
    scope: Scope,
    /// One of the tenant's portal clients: once written, the file also
    /// joins that client's documents in the client portal, for the client
    /// to download with its key.
    #[serde(default)]
    publish_to_portal_client: Option<String>,
}

/// Ask for a report. It is written in the background by a durable job;
/// follow it at `GET /reports/{report_id}/status`, then download it.
/// Reports older than `CAIRN_REPORT_RETENTION_DAYS` are deleted.
#[utoipa::path(post, path = "/generate", tag = "reports",
    request_body = GenerateRequest,
    responses((status = 202, body = ReportView),
              (status = 422, body = ErrorBody, description = "A bad type, format or scope; `field` names it")))]
async fn generate_report(
    State(state): State<AppState>,
    axum::Extension(shelf): axum::Extension<Shelves>,
    caller: Caller,
    Json(request): Json<GenerateRequest>,
) -> ApiResult<(StatusCode, Json<ReportView>)> {
    request.scope.check(request.report_type)?;
    let publish_to = request.publish_to_portal_client.as_deref();
    if let Some(client) = publish_to {
        check_client(&shelf, &caller.tenant_id, client).await?;
    }
    let view = create(
        &state,
        &caller.tenant_id,
        caller.user_id.as_str(),
        request.report_type,
        request.format,
        &request.scope,
        publish_to,
    )
    .await?;
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// 422 unless `client` is one of the tenant's portal clients.
pub(super) async fn check_client(
    shelf: &Shelves,
    tenant: &cairn_core::ids::TenantId,
    client: &str,
) -> ApiResult<()> {
    if shelf.knows(tenant, client).await? {
        Ok(())
    } else {
        Err(ApiError::validation(
            "publish_to_portal_client",
            "must be one of your portal clients",
        ))
    }
}

/// Records a report request of `tenant` and wakes its writing job; the
/// scope (and the portal client to publish to) was checked.
pub(super) async fn create(
    state: &AppState,
    tenant: &cairn_core::ids::TenantId,
    created_by: &str,
    report_type: ReportType,
    format: Format,
    scope: &Scope,
    publish_to: Option<&str>,
) -> ApiResult<ReportView> {
    let scope = serde_json::to_value(scope).map_err(anyhow::Error::from)?;
    let type_name = serde_json::to_value(report_type).map_err(anyhow::Error::from)?;
    let format_name = serde_json::to_value(format).map_err(anyhow::Error::from)?;
    let id = storage::create(
        &state.db,
        tenant,
        NewReport {
            report_type: type_name.as_str().unwrap_or_default(),
            format: format_name.as_str().unwrap_or_default(),
            scope: &scope,
            title: report_type.title(),
            created_by,
            publish_to,
        },
    )
    .await?;
    state
        .jobs
        .enqueue(tenant, GENERATE_KIND, &serde_json::json!({}))
        .await?;
    storage::one(&state.db, tenant, &id)
        .await?
        .ok_or(ApiError::NotFound("report"))
}

/// A report's status (`queued`, `running`, `success`, `error` with its
/// error) and, once written, its file's name and size.
#[utoipa::path(get, path = "/{report_id}/status", tag = "reports",
    params(("report_id" = String, Path)),
    responses((status = 200, body = ReportView), (status = 404, body = ErrorBody)))]
async fn report_status(
    State(state): State<AppState>,
    caller: Caller,
    Path(report_id): Path<String>,
) -> ApiResult<Json<ReportView>> {
    storage::one(&state.db, &caller.tenant_id, &report_id)
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound("report"))
}

/// The report's file, streamed with its content type and a file name
/// like `vulnerabilities-2026-11-24.pdf`.
#[utoipa::path(get, path = "/{report_id}/download", tag = "reports",
    params(("report_id" = String, Path)),
    responses((status = 200, description = "The file, in the report's format", content(
                  (String = "application/pdf"),
                  (String = "text/csv"),
                  (String = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"))),
              (status = 404, body = ErrorBody),
              (status = 409, body = ErrorBody, description = "Not written yet, or it failed"),
              (status = 410, body = ErrorBody, description = "The file is no longer in the store (retention, or an operator removed it)")))]
async fn download_report(
    State(state): State<AppState>,
    caller: Caller,
    Path(report_id): Path<String>,
) -> ApiResult<Response> {
    download(&state, &caller.tenant_id, &report_id).await
}

/// The file of `tenant`'s report, streamed.
pub(super) async fn download(
    state: &AppState,
    tenant: &cairn_core::ids::TenantId,
    report_id: &str,
) -> ApiResult<Response> {
    let (Some(stored), Some(file_name)) = storage::file_of(&state.db, tenant, report_id)
        .await?
        .ok_or(ApiError::NotFound("report"))?
    else {
        return Err(ApiError::Conflict(
            "the report is not written yet (or failed); see its status".into(),
        ));
    };
    let format = match stored.rsplit('.').next() {
        Some("pdf") => Format::Pdf,
        Some("csv") => Format::Csv,
        _ => Format::Xlsx,
    };
    let opened = state
        .blobs
        .reports
        .open(&stored)
        .await
        .map_err(|err| match err {
            StoreError::Missing => {
                ApiError::Gone("the report's file is gone; generate it again".into())
            }
            other => other.into(),
        })?;
    Ok((
        [
            (header::CONTENT_TYPE, format.content_type().to_string()),
            (header::CONTENT_LENGTH, opened.size.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{}\"", sanitized(&file_name)),
            ),
        ],
        Body::from_stream(opened.bytes),
    )
        .into_response())
}

/// A file name safe in a header: letters, digits, `-`, `_` and `.` only.
fn sanitized(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Delete a report and its file.
#[utoipa::path(delete, path = "/{report_id}", tag = "reports",
    params(("report_id" = String, Path)),
    responses((status = 204), (status = 404, body = ErrorBody)))]
async fn delete_report(
    State(state): State<AppState>,
    caller: Caller,
    Path(report_id): Path<String>,
) -> ApiResult<StatusCode> {
    let stored = storage::delete(&state.db, &caller.tenant_id, &report_id)
        .await?
        .ok_or(ApiError::NotFound("report"))?;
    if let Some(key) = stored {
        if let Err(err) = state.blobs.reports.remove(&key).await {
            tracing::warn!(report_id, error = %err, "removing a deleted report's file failed");
        }
    }
    Ok(StatusCode::NO_CONTENT)
}
