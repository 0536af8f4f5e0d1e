//! `/api/v1/weaknesses`: CWE entries with their CVE counts in the store
//! and in the tenant, and one weakness with its CVEs.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_inventory::search::{page_bounds, Page};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_vulnerabilities::findings::weaknesses::{
    self as store, cwe_id, WeaknessCve, WeaknessDetail, WeaknessSummary,
};

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WeaknessQuery {
    /// Part of the id or name, ignoring case.
    search: Option<String>,
    /// Only weaknesses of CVEs open on the tenant's devices.
    in_tenant: Option<bool>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// The weaknesses of the CWE catalog and every CWE id a stored CVE names,
/// each with the number of CVEs of the store naming it and of those open
/// on the tenant's devices; the most present in the tenant first.
#[utoipa::path(get, path = "/weaknesses/", tag = "weaknesses",
    params(WeaknessQuery),
    responses((status = 200, body = Page<WeaknessSummary>), (status = 422, body = ErrorBody)))]
pub(super) async fn list_weaknesses(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<WeaknessQuery>,
) -> ApiResult<Json<Page<WeaknessSummary>>> {
    let bounds = page_bounds(query.skip, query.limit)?;
    let (items, total) = store::weaknesses(
        &state.db,
        &caller.tenant_id,
        query.search.as_deref(),
        query.in_tenant.unwrap_or(false),
        bounds,
    )
    .await?;
    Ok(Json(Page::new(items, total, bounds)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WeaknessCvesQuery {
    /// Only CVEs open on the tenant's devices.
    in_tenant: Option<bool>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct WeaknessWithCves {
    #[serde(flatten)]
    weakness: WeaknessDetail,
    /// Its CVEs, those open on the most of the tenant's devices first,
    /// then the newest.
    cves: Page<WeaknessCve>,
}

/// One weakness: its catalog entry and counts, with its CVEs.
#[utoipa::path(get, path = "/weaknesses/{cwe_id}", tag = "weaknesses",
    params(("cwe_id" = String, Path, description = "`CWE-79` (any case)"),
           WeaknessCvesQuery),
    responses((status = 200, body = WeaknessWithCves),
              (status = 404, body = ErrorBody, description = "Neither the catalog nor any CVE names it"),
              (status = 422, body = ErrorBody)))]
pub(super) async fn weakness_detail(
    State(state): State<AppState>,
    caller: Caller,
    Path(text): Path<String>,
    Query(query): Query<WeaknessCvesQuery>,
) -> ApiResult<Json<WeaknessWithCves>> {
    let id = cwe_id(&text).ok_or_else(|| {
        ApiError::validation("cwe_id", format!("{text:?} is not a CWE id (CWE-<number>)"))
    })?;
    let bounds = page_bounds(query.skip, query.limit)?;
    let tenant = &caller.tenant_id;
    let weakness = store::weakness(&state.db, tenant, &id)
        .await?
        .ok_or(ApiError::NotFound("weakness"))?;
    let (items, total) = store::cves_of_weakness(
        &state.db,
        tenant,
        &id,
        query.in_tenant.unwrap_or(false),
        bounds,
    )
    .await?;
    Ok(Json(WeaknessWithCves {
        weakness,
        cves: Page::new(items, total, bounds),
    }))
}
