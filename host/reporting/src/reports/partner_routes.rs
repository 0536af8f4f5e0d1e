//! `/api/v1/partner/reports`: quarterly reviews for many customers at once,
//! each written in the customer's own tenant by its report job, and read
//! back by the partner without acting.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::content::{ReportType, Scope};
use super::render::Format;
use super::routes::{create, download};
use super::storage::{self, ReportView};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path};
use cairn_core::ids::TenantId;
use cairn_platform::app::AppState;
use cairn_platform::partner::PartnerCaller;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(generate_reviews))
        .routes(routes!(review_status))
        .routes(routes!(download_review))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewRequest {
    /// `pdf` or `xlsx`.
    format: Format,
    /// Days the review looks back over (7 to 730; default 90).
    period_days: Option<i64>,
    /// These customers; with `group_id` absent too, every customer the
    /// caller reaches.
    customer_ids: Option<Vec<String>>,
    /// The customers of this group.
    group_id: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ReviewStarted {
    customer_id: String,
    customer_name: String,
    report: ReportView,
}

/// Ask for a `customer_review` of each chosen customer (partner admins
/// and analysts), with the partner's branding. Follow each at
/// `GET /api/v1/partner/customers/{customer_id}/reports/{report_id}`.
#[utoipa::path(post, path = "/reports", tag = "partner", request_body = ReviewRequest,
    responses(
        (status = 202, body = Vec<ReviewStarted>),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No such group"),
        (status = 422, body = ErrorBody),
    ))]
async fn generate_reviews(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Json(body): Json<ReviewRequest>,
) -> ApiResult<(StatusCode, Json<Vec<ReviewStarted>>)> {
    if body.format == Format::Csv {
        return Err(ApiError::validation(
            "format",
            "a review is a pdf or an xlsx",
        ));
    }
    let scope = Scope {
        period_days: body.period_days,
        ..Scope::default()
    };
    scope.check(ReportType::CustomerReview)?;
    let customers = partner
        .chosen_customers(
            &state.db,
            body.customer_ids.as_deref(),
            body.group_id.as_deref(),
        )
        .await?;
    let mut started = vec![];
    for customer in customers {
        let report = create(
            &state,
            &TenantId(customer.id.clone()),
            partner.caller.user_id.as_str(),
            ReportType::CustomerReview,
            body.format,
            &scope,
            None,
        )
        .await?;
        started.push(ReviewStarted {
            customer_id: customer.id,
            customer_name: customer.name,
            report,
        });
    }
    Ok((StatusCode::ACCEPTED, Json(started)))
}

/// A report of a customer the caller reaches (any type: the customer's
/// own reports too).
#[utoipa::path(get, path = "/customers/{customer_id}/reports/{report_id}", tag = "partner",
    params(("customer_id" = String, Path), ("report_id" = String, Path)),
    responses((status = 200, body = ReportView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn review_status(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path((customer_id, report_id)): Path<(String, String)>,
) -> ApiResult<Json<ReportView>> {
    partner.customer(&state.db, &customer_id).await?;
    storage::one(&state.db, &TenantId(customer_id), &report_id)
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound("report"))
}

/// The file of a customer's report.
#[utoipa::path(get, path = "/customers/{customer_id}/reports/{report_id}/download", tag = "partner",
    params(("customer_id" = String, Path), ("report_id" = String, Path)),
    responses(
        (status = 200, description = "The file", content(
            (String = "application/pdf"),
            (String = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"))),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Not written yet, or it failed"),
        (status = 410, body = ErrorBody),
    ))]
async fn download_review(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path((customer_id, report_id)): Path<(String, String)>,
) -> ApiResult<Response> {
    partner.customer(&state.db, &customer_id).await?;
    download(&state, &TenantId(customer_id), &report_id).await
}
