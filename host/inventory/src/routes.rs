//! `/api/v1/inventory`: the software rollup, its search, items, vendors
//! and counts. Uploads belong to the CSV area.

use std::sync::Arc;

use axum::extract::State;
use axum::Extension;
use serde::Deserialize;
use serde_json::json;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::applications::{self, ApplicationRow, ApplicationView};
use super::exposure::Exposure;
use super::search::{
    self, page_bounds, ListParams, Operator, Page, QueryGroup, QueryNode, QueryRule, SearchRequest,
};
use super::storage::{self, AppName, InventoryStats, ItemView, VendorView};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_applications))
        .routes(routes!(search_applications))
        .routes(routes!(application))
        .routes(routes!(inventory_stats))
        .routes(routes!(inventory_items))
        .routes(routes!(vendors))
        .routes(routes!(apps_list))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApplicationListParams {
    /// Substring of name, vendor or publisher (case-insensitive).
    search: Option<String>,
    /// Exact vendor (case-insensitive).
    vendor: Option<String>,
    /// Default 0.
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// Default 50, at most 500.
    #[param(minimum = 1)]
    limit: Option<i64>,
    /// An allow-listed field, `-` for descending; default `-device_count`.
    sort: Option<String>,
}

/// The software rollup, most installed first.
#[utoipa::path(get, path = "/applications", tag = "inventory",
    params(ApplicationListParams),
    responses((status = 200, body = Page<ApplicationView>), (status = 422, body = ErrorBody)))]
async fn list_applications(
    State(state): State<AppState>,
    Extension(exposure): Extension<Exposure>,
    caller: Caller,
    Query(params): Query<ApplicationListParams>,
) -> ApiResult<Json<Page<ApplicationView>>> {
    let query = params.vendor.map(|vendor| QueryGroup {
        kind: None,
        combinator: search::Combinator::And,
        rules: vec![QueryNode::Rule(QueryRule::new(
            "vendor",
            Operator::Equals,
            Some(json!(vendor)),
        ))],
    });
    let request = SearchRequest {
        query,
        search: params.search,
        skip: params.skip,
        limit: params.limit,
        sort: params.sort,
        strict: false,
    };
    let page: Page<ApplicationRow> = search::run(
        &state.db,
        &caller.tenant_id,
        &applications::table(),
        &request,
    )
    .await?;
    let cves = cve_counts(&state, &exposure, &caller).await?;
    Ok(Json(page.map(|row| view(row, &cves))))
}

/// Structured search over the software rollup. Allow-listed fields: name,
/// vendor, product, version (any installed version), device_count (number),
/// site, publisher, platform (any platform), size_bytes (number), category,
/// install_status. Rules on other fields are skipped and rules with unknown
/// operators dropped; gt/gte/lt/lte apply to numbers only and
/// contains/starts_with/ends_with to text only. A value that cannot be read
/// as its field's type is a 422.
/// Text matches and text sorts ignore case under Unicode case folding
/// (`MÜLLER` finds `müller`, `STRASSE` finds `Straße`).
#[utoipa::path(post, path = "/applications/search", tag = "inventory",
    request_body = SearchRequest,
    responses((status = 200, body = Page<ApplicationView>), (status = 422, body = ErrorBody)))]
async fn search_applications(
    State(state): State<AppState>,
    Extension(exposure): Extension<Exposure>,
    caller: Caller,
    Json(request): Json<SearchRequest>,
) -> ApiResult<Json<Page<ApplicationView>>> {
    let page: Page<ApplicationRow> = search::run(
        &state.db,
        &caller.tenant_id,
        &applications::table(),
        &request,
    )
    .await?;
    let cves = cve_counts(&state, &exposure, &caller).await?;
    Ok(Json(page.map(|row| view(row, &cves))))
}

/// One application of the rollup.
#[utoipa::path(get, path = "/applications/{app_id}", tag = "inventory",
    params(("app_id" = String, Path)),
    responses((status = 200, body = ApplicationView), (status = 404, body = ErrorBody)))]
async fn application(
    State(state): State<AppState>,
    Extension(exposure): Extension<Exposure>,
    caller: Caller,
    Path(app_id): Path<String>,
) -> ApiResult<Json<ApplicationView>> {
    let row: Option<ApplicationRow> = sqlx::query_as(&format!(
        "SELECT {} FROM applications a WHERE a.tenant_id = $1 AND a.id = $2",
        applications::COLUMNS
    ))
    .bind(caller.tenant_id.as_str())
    .bind(&app_id)
    .fetch_optional(&state.db.pool)
    .await?;
    let row = row.ok_or(ApiError::NotFound("application"))?;
    let cves = cve_counts(&state, &exposure, &caller).await?;
    Ok(Json(view(row, &cves)))
}

/// The tenant's open CVEs by rolled-up application name.
async fn cve_counts(
    state: &AppState,
    exposure: &Exposure,
    caller: &Caller,
) -> ApiResult<Arc<storage::CvesByApplication>> {
    Ok(storage::cves_by_rolled_up_name(&state.db, exposure, &caller.tenant_id).await?)
}

/// An application as clients read it, with its open CVEs counted.
fn view(row: ApplicationRow, cves: &storage::CvesByApplication) -> ApplicationView {
    let count = cves.get(row.name()).map_or(0, |c| c.len() as i64);
    row.into_view(count)
}

/// Counts of applications, devices (assets), vendors and vulnerabilities.
#[utoipa::path(get, path = "/stats", tag = "inventory",
    responses((status = 200, body = InventoryStats)))]
async fn inventory_stats(
    State(state): State<AppState>,
    Extension(exposure): Extension<Exposure>,
    caller: Caller,
) -> ApiResult<Json<InventoryStats>> {
    Ok(Json(
        storage::stats(&state.db, &exposure, &caller.tenant_id).await?,
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ItemParams {
    /// A device: every name sharing its NetBIOS key is included.
    device_name: Option<String>,
    /// An application of the rollup, by its normalized name.
    application: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// Inventory items of one device or one application (give exactly one).
#[utoipa::path(get, path = "/items", tag = "inventory",
    params(ItemParams),
    responses((status = 200, body = Page<ItemView>), (status = 422, body = ErrorBody)))]
async fn inventory_items(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<ItemParams>,
) -> ApiResult<Json<Page<ItemView>>> {
    let (skip, limit) = page_bounds(params.skip, params.limit)?;
    let db = &state.db;
    let tenant = &caller.tenant_id;
    let named = |field: &str, value: Option<String>| match value {
        Some(v) if v.trim().is_empty() => Err(ApiError::validation(field, "must not be empty")),
        other => Ok(other),
    };
    let device_name = named("device_name", params.device_name)?;
    let application = named("application", params.application)?;
    let (items, total) = match (device_name, application) {
        (Some(device), None) => storage::items_of_device(db, tenant, &device, skip, limit).await?,
        (None, Some(app)) => storage::items_of_application(db, tenant, &app, skip, limit).await?,
        _ => {
            return Err(ApiError::validation(
                "device_name",
                "give exactly one of device_name and application",
            ))
        }
    };
    Ok(Json(Page::new(items, total, (skip, limit))))
}

/// Vendors of the rollup with application, device and CVE counts, most
/// devices first.
#[utoipa::path(get, path = "/vendors", tag = "inventory",
    params(ListParams),
    responses((status = 200, body = Page<VendorView>), (status = 422, body = ErrorBody)))]
async fn vendors(
    State(state): State<AppState>,
    Extension(exposure): Extension<Exposure>,
    caller: Caller,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<VendorView>>> {
    let (skip, limit) = page_bounds(params.skip, params.limit)?;
    let (items, total) = storage::vendors(
        &state.db,
        &exposure,
        &caller.tenant_id,
        params.search.as_deref(),
        skip,
        limit,
    )
    .await?;
    Ok(Json(Page::new(items, total, (skip, limit))))
}

/// Application names with device and CVE counts for autocomplete: names
/// starting with `search` first, then names containing it.
#[utoipa::path(get, path = "/apps-list", tag = "inventory",
    params(ListParams),
    responses((status = 200, body = Vec<AppName>), (status = 422, body = ErrorBody)))]
async fn apps_list(
    State(state): State<AppState>,
    Extension(exposure): Extension<Exposure>,
    caller: Caller,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Vec<AppName>>> {
    let (skip, limit) = page_bounds(params.skip, params.limit)?;
    Ok(Json(
        storage::app_names(
            &state.db,
            &exposure,
            &caller.tenant_id,
            params.search.as_deref(),
            skip,
            limit,
        )
        .await?,
    ))
}
