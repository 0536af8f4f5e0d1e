//! Triage routes under `/api/v1/vulnerabilities` (beyond the spec): a
//! tenant's status for a CVE of one product, its history, and the list.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::findings::triage::{
    self, Change, TriageChange, TriageView, NOT_AFFECTED, RISK_ACCEPTED, STATUSES,
};
use crate::reference::research::cve_id;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_inventory::search::{page_bounds, Page};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(cve_triage, set_cve_triage))
        .routes(routes!(list_triage))
}

fn checked_cve(text: &str) -> Result<String, ApiError> {
    cve_id(text).ok_or_else(|| {
        ApiError::validation(
            "cve_id",
            format!("{text:?} is not a CVE id (CVE-YYYY-NNNN)"),
        )
    })
}

#[derive(Serialize, ToSchema)]
pub struct CveTriage {
    cve_id: String,
    /// The status per product of the tenant's findings of the CVE
    /// (`to_evaluate` for one never triaged).
    statuses: Vec<TriageView>,
    /// Every change, newest first.
    history: Vec<TriageChange>,
}

/// The tenant's triage of a CVE: the status per product its findings
/// name, and every change with who, when, from, to and why.
#[utoipa::path(get, path = "/cve/{cve_id}/triage", tag = "vulnerabilities",
    params(("cve_id" = String, Path)),
    responses((status = 200, body = CveTriage), (status = 422, body = ErrorBody)))]
async fn cve_triage(
    State(state): State<AppState>,
    caller: Caller,
    Path(text): Path<String>,
) -> ApiResult<Json<CveTriage>> {
    let id = checked_cve(&text)?;
    let tenant = &caller.tenant_id;
    let mut statuses = triage::of_cve(&state.db, tenant, &id).await?;
    for (vendor, product) in triage::products_of_cve(&state.db, tenant, &id).await? {
        if !statuses
            .iter()
            .any(|s| s.vendor == vendor && s.product == product)
        {
            statuses.push(TriageView {
                cve_id: id.clone(),
                vendor,
                product,
                status: triage::TO_EVALUATE.into(),
                justification: None,
                expires_at: None,
                assignee_id: None,
                suppressed: false,
                updated_by: None,
                updated_at: None,
            });
        }
    }
    Ok(Json(CveTriage {
        history: triage::history(&state.db, tenant, &id).await?,
        cve_id: id,
        statuses,
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TriageRequest {
    /// `to_evaluate`, `in_analysis`, `remediation_in_progress`,
    /// `resolved`, `not_affected`, `risk_accepted` or `false_positive`.
    status: String,
    /// The CPE vendor and product the status is for, as the CVE's findings
    /// name them (`GET .../triage` lists them); both may be left out when
    /// the findings name one product only. A scanner's findings name
    /// none: give both empty.
    vendor: Option<String>,
    product: Option<String>,
    /// Required for `not_affected`: why the product is not affected.
    justification: Option<String>,
    /// Required for `risk_accepted`: when the acceptance ends (RFC 3339,
    /// in the future).
    expires_at: Option<String>,
    /// A member of the tenant handling it.
    assignee_id: Option<String>,
    /// Recorded with the change.
    comment: Option<String>,
}

/// Set the tenant's status for a CVE of one product. It is keyed by
/// (vendor, product, CVE), so it holds across version upgrades. "Not
/// affected", "false positive" and "risk accepted" (until it expires)
/// take the product's findings of the CVE out of the open counts, lists
/// and figures (`status=accepted` lists them). Every change is recorded.
#[utoipa::path(put, path = "/cve/{cve_id}/triage", tag = "vulnerabilities",
    params(("cve_id" = String, Path)),
    request_body = TriageRequest,
    responses((status = 200, body = TriageView),
              (status = 404, body = ErrorBody, description = "The tenant has no finding of the CVE for that product"),
              (status = 422, body = ErrorBody)))]
async fn set_cve_triage(
    State(state): State<AppState>,
    caller: Caller,
    Path(text): Path<String>,
    Json(request): Json<TriageRequest>,
) -> ApiResult<Json<TriageView>> {
    let id = checked_cve(&text)?;
    let tenant = &caller.tenant_id;
    let status = STATUSES
        .iter()
        .find(|s| **s == request.status)
        .ok_or_else(|| {
            ApiError::validation("status", format!("must be one of {}", STATUSES.join(", ")))
        })?;
    let products = triage::products_of_cve(&state.db, tenant, &id).await?;
    let (vendor, product) = match (request.vendor, request.product) {
        (Some(vendor), Some(product)) => {
            let key = (vendor.trim().to_lowercase(), product.trim().to_lowercase());
            if !products.contains(&key) {
                return Err(ApiError::Missing(format!(
                    "the tenant has no finding of {id} for {}:{}",
                    key.0, key.1
                )));
            }
            key
        }
        (None, None) => match products.as_slice() {
            [only] => only.clone(),
            [] => {
                return Err(ApiError::Missing(format!(
                    "the tenant has no finding of {id}"
                )))
            }
            _ => {
                return Err(ApiError::validation(
                    "vendor",
                    "the CVE's findings name several products: give vendor and product",
                ))
            }
        },
        _ => {
            return Err(ApiError::validation(
                "vendor",
                "give vendor and product together",
            ))
        }
    };
    let Terms {
        justification,
        expires_at,
    } = checked_terms(
        status,
        request.justification.as_deref(),
        request.expires_at.as_deref(),
    )?;
    let assignee = request
        .assignee_id
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty());
    if let Some(assignee) = assignee {
        if !cairn_platform::tenancy::is_member(&state.db, tenant, assignee).await? {
            return Err(ApiError::validation(
                "assignee_id",
                "not a member of this tenant",
            ));
        }
    }
    let comment = request.comment.as_deref().unwrap_or("").trim();
    if comment.chars().count() > 2000 {
        return Err(ApiError::validation("comment", "at most 2000 characters"));
    }
    let change = Change {
        cve_id: &id,
        vendor: &vendor,
        product: &product,
        status,
        justification,
        expires_at,
        assignee_id: assignee,
        comment,
        by: caller.user_id.as_str(),
    };
    Ok(Json(triage::set(&state.db, tenant, &change).await?))
}

/// A triage decision's terms, checked.
pub struct Terms<'a> {
    /// Trimmed; required for `not_affected`.
    pub justification: Option<&'a str>,
    /// Kept for `risk_accepted` only, which requires it in the future.
    pub expires_at: Option<i64>,
}

/// Checks the justification (at most 2,000 characters, required for
/// `not_affected`) and the expiry (RFC 3339, in the future, required for
/// `risk_accepted`) of a change to `status`.
pub fn checked_terms<'a>(
    status: &str,
    justification: Option<&'a str>,
    expires_at: Option<&str>,
) -> Result<Terms<'a>, ApiError> {
    let justification = justification.map(str::trim).filter(|j| !j.is_empty());
    if status == NOT_AFFECTED && justification.is_none() {
        return Err(ApiError::validation(
            "justification",
            "not_affected needs a justification",
        ));
    }
    if justification.is_some_and(|j| j.chars().count() > 2000) {
        return Err(ApiError::validation(
            "justification",
            "at most 2000 characters",
        ));
    }
    let expires_at = match expires_at {
        None | Some("") => None,
        Some(text) => Some(
            chrono::DateTime::parse_from_rfc3339(text)
                .map_err(|e| ApiError::validation("expires_at", format!("not RFC 3339: {e}")))?
                .timestamp_millis(),
        ),
    };
    if status == RISK_ACCEPTED && expires_at.is_none_or(|at| at <= cairn_core::db::now_ms()) {
        return Err(ApiError::validation(
            "expires_at",
            "risk_accepted needs an expiry in the future",
        ));
    }
    Ok(Terms {
        justification,
        expires_at: expires_at.filter(|_| status == RISK_ACCEPTED),
    })
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TriageListParams {
    /// Only this status.
    status: Option<String>,
    /// Only this member's (`me` for the caller).
    assignee: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// The tenant's triaged CVEs, most recently changed first.
#[utoipa::path(get, path = "/triage", tag = "vulnerabilities",
    params(TriageListParams),
    responses((status = 200, body = Page<TriageView>), (status = 422, body = ErrorBody)))]
async fn list_triage(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<TriageListParams>,
) -> ApiResult<Json<Page<TriageView>>> {
    let bounds = page_bounds(params.skip, params.limit)?;
    let status = params.status.as_deref().filter(|s| !s.is_empty());
    if status.is_some_and(|s| !STATUSES.contains(&s)) {
        return Err(ApiError::validation(
            "status",
            format!("must be one of {}", STATUSES.join(", ")),
        ));
    }
    let assignee = match params.assignee.as_deref() {
        None | Some("") => None,
        Some("me") => Some(caller.user_id.as_str()),
        Some(other) => Some(other),
    };
    let (items, total) =
        triage::triaged(&state.db, &caller.tenant_id, status, assignee, bounds).await?;
    Ok(Json(Page::new(items, total, bounds)))
}
