//! `/api/v1/devices`: inventory items, devices by name, the NetBIOS asset
//! view and its structured search.

use axum::extract::State;
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::assets::AssetView;
use super::directory_users::{self, Directory};
use super::storage::{self, DeviceStats, DeviceView};
use crate::assets::{self, AssetRow};
use crate::normalize;
use crate::search::{
    self, page_bounds, Combinator, ListParams, Operator, Page, QueryGroup, QueryNode, QueryRule,
    SearchRequest,
};
use crate::storage::ItemView;
use axum::Extension;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(device_items))
        .routes(routes!(unique_devices))
        .routes(routes!(search_assets))
        .routes(routes!(by_device_id))
        .routes(routes!(by_name))
        .routes(routes!(device_stats))
        .routes(routes!(by_application))
}

/// Inventory items of every source; `search` matches device, application
/// or vendor.
#[utoipa::path(get, path = "/items", tag = "devices",
    params(ListParams),
    responses((status = 200, body = Page<ItemView>), (status = 422, body = ErrorBody)))]
async fn device_items(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<ItemView>>> {
    let (skip, limit) = page_bounds(params.skip, params.limit)?;
    let (items, total) = crate::storage::items(
        &state.db,
        &caller.tenant_id,
        params.search.as_deref(),
        skip,
        limit,
    )
    .await?;
    Ok(Json(Page::new(items, total, (skip, limit))))
}

/// Unique device names across all sources (exact names, not merged), with
/// CSV device-enrichment records matched on the exact name or its first 15
/// characters, either way round (a register of full DNS names enriches the
/// NetBIOS names and the other way).
#[utoipa::path(get, path = "/devices", tag = "devices",
    params(ListParams),
    responses((status = 200, body = Page<DeviceView>), (status = 422, body = ErrorBody)))]
async fn unique_devices(
    State(state): State<AppState>,
    Extension(directory): Extension<Directory>,
    caller: Caller,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<DeviceView>>> {
    let (skip, limit) = page_bounds(params.skip, params.limit)?;
    let enrichment: Vec<String> = state
        .plugins()
        .csv_providers
        .iter()
        .filter(|p| p.descriptor.target == "device")
        .map(|p| p.descriptor.key.clone())
        .collect();
    let (mut items, total) = storage::devices(
        &state.db,
        &caller.tenant_id,
        params.search.as_deref(),
        &enrichment,
        skip,
        limit,
    )
    .await?;
    directory_users::attach(&state.db, &directory, &caller.tenant_id, &mut items).await?;
    Ok(Json(Page::new(items, total, (skip, limit))))
}

/// Structured search over assets (the NetBIOS view). Bare fields:
/// device_name (any name the asset was seen under), device_id,
/// os_platform, os_version, os_name, os_build, user_email, user_name,
/// application_name (any application on it), application_count (number),
/// source (any reporting integration), group_id (any RMM group its rows
/// name), tier, last_seen (date). Area fields read the shared device
/// record (the same for every product of an area): `mdm.` name, device_id,
/// serial_number, os_platform, os_version, user, managed_device_id,
/// compliance_state, ownership, tags; `edr.` name, device_id, os_platform,
/// os_version, user, agent_id, agent_version, infected (boolean),
/// active_threats (number), tags; `scan.` name, device_id, hostname,
/// os_platform, os_version, risk_score, critical_count, high_count,
/// medium_count, low_count (numbers), tags (any one tag).
/// For the list fields a rule matches when any element does and a negated
/// rule when none does. Default sort: device_name.
/// Text matches and text sorts ignore case under Unicode case folding
/// (`MÜLLER` finds `müller`, `STRASSE` finds `Straße`).
#[utoipa::path(post, path = "/devices/search", tag = "devices",
    request_body = SearchRequest,
    responses((status = 200, body = Page<AssetView>), (status = 422, body = ErrorBody)))]
async fn search_assets(
    State(state): State<AppState>,
    Extension(directory): Extension<Directory>,
    caller: Caller,
    Json(request): Json<SearchRequest>,
) -> ApiResult<Json<Page<AssetView>>> {
    let page: Page<AssetRow> =
        search::run(&state.db, &caller.tenant_id, &assets::table(), &request).await?;
    asset_page(&state, &directory, &caller, page).await
}

/// One asset by its managed-device UUID (or the device id a source
/// reported), with its applications.
#[utoipa::path(get, path = "/device/{device_id}", tag = "devices",
    params(("device_id" = String, Path)),
    responses((status = 200, body = AssetView), (status = 404, body = ErrorBody)))]
async fn by_device_id(
    State(state): State<AppState>,
    Extension(directory): Extension<Directory>,
    caller: Caller,
    Path(device_id): Path<String>,
) -> ApiResult<Json<AssetView>> {
    let row = storage::asset_where(&state.db, &caller.tenant_id, "a.device_id = $2", &device_id)
        .await?
        .ok_or(ApiError::NotFound("device"))?;
    one_asset(&state, &directory, &caller, row).await
}

/// A page of assets' views with their directory users.
async fn asset_page(
    state: &AppState,
    directory: &Directory,
    caller: &Caller,
    page: Page<AssetRow>,
) -> ApiResult<Json<Page<AssetView>>> {
    let mut page = page.map(|r| AssetView::from_row(r, false));
    directory_users::attach(&state.db, directory, &caller.tenant_id, &mut page.items).await?;
    Ok(Json(page))
}

/// One asset's view with its applications and its directory user.
async fn one_asset(
    state: &AppState,
    directory: &Directory,
    caller: &Caller,
    row: AssetRow,
) -> ApiResult<Json<AssetView>> {
    let mut views = [AssetView::from_row(row, true)];
    directory_users::attach(&state.db, directory, &caller.tenant_id, &mut views).await?;
    let [view] = views;
    Ok(Json(view))
}

/// One asset by any of its names: the full DNS name and its 15-character
/// NetBIOS form find the same asset.
#[utoipa::path(get, path = "/by-name/{device_name}", tag = "devices",
    params(("device_name" = String, Path)),
    responses((status = 200, body = AssetView), (status = 404, body = ErrorBody)))]
async fn by_name(
    State(state): State<AppState>,
    Extension(directory): Extension<Directory>,
    caller: Caller,
    Path(device_name): Path<String>,
) -> ApiResult<Json<AssetView>> {
    let key = normalize::netbios_key(Some(&device_name));
    if key.is_empty() {
        return Err(ApiError::NotFound("device"));
    }
    let row = storage::asset_where(&state.db, &caller.tenant_id, "a.asset_key = $2", &key)
        .await?
        .ok_or(ApiError::NotFound("device"))?;
    one_asset(&state, &directory, &caller, row).await
}

/// Devices and inventory items per reporting integration.
#[utoipa::path(get, path = "/stats", tag = "devices",
    responses((status = 200, body = DeviceStats)))]
async fn device_stats(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<DeviceStats>> {
    Ok(Json(storage::stats(&state.db, &caller.tenant_id).await?))
}

/// Assets with the application installed (its rollup name, any case).
#[utoipa::path(get, path = "/by-application/{application_name}", tag = "devices",
    params(("application_name" = String, Path), ListParams),
    responses((status = 200, body = Page<AssetView>), (status = 422, body = ErrorBody)))]
async fn by_application(
    State(state): State<AppState>,
    Extension(directory): Extension<Directory>,
    caller: Caller,
    Path(application_name): Path<String>,
    Query(params): Query<ListParams>,
) -> ApiResult<Json<Page<AssetView>>> {
    let request = SearchRequest {
        query: Some(QueryGroup {
            kind: None,
            combinator: Combinator::And,
            rules: vec![QueryNode::Rule(QueryRule::new(
                "application_name",
                Operator::Equals,
                Some(json!(application_name)),
            ))],
        }),
        search: params.search,
        skip: params.skip,
        limit: params.limit,
        sort: None,
        strict: false,
    };
    let page: Page<AssetRow> =
        search::run(&state.db, &caller.tenant_id, &assets::table(), &request).await?;
    asset_page(&state, &directory, &caller, page).await
}
