//! `/api/v1/dashboards`: dashboards, their widgets, the catalog, and the
//! evaluation of a widget's data source.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::catalog::{self, Metric, WidgetType, METRICS, WIDGET_TYPES};
use super::metrics::{self, DataSource, MetricValue};
use super::storage::{
    self, Access, DashboardChanges, DashboardView, NewDashboard, NewWidget, Position, WidgetView,
};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, OptionalJson, Path};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_dashboards, create_dashboard))
        .routes(routes!(default_dashboard))
        .routes(routes!(get_dashboard, update_dashboard, delete_dashboard))
        .routes(routes!(clone_dashboard))
        .routes(routes!(add_widget))
        .routes(routes!(update_widget, delete_widget))
        .routes(routes!(widget_data))
        .routes(routes!(preview))
        .routes(routes!(metric_catalog))
        .routes(routes!(widget_type_catalog))
}

fn name(raw: &str, field: &str) -> ApiResult<String> {
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ApiError::validation(field, "give 1 to 100 characters"));
    }
    Ok(name.to_string())
}

fn layout(value: Option<Value>) -> ApiResult<Option<Value>> {
    match value {
        Some(Value::Object(map)) if Value::Object(map.clone()).to_string().len() > 20_000 => Err(
            ApiError::validation("layout", "at most 20,000 characters of JSON"),
        ),
        Some(Value::Object(map)) => Ok(Some(Value::Object(map))),
        Some(_) => Err(ApiError::validation("layout", "must be an object")),
        None => Ok(None),
    }
}

/// The dashboard as the caller sees it, else 404.
async fn visible(state: &AppState, caller: &Caller, id: &str) -> ApiResult<Json<DashboardView>> {
    storage::get(&state.db, &caller.tenant_id, caller.user_id.as_str(), id)
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound("dashboard"))
}

/// 404 when the caller does not see it, 403 when they see it but it is
/// not theirs.
async fn owned(state: &AppState, caller: &Caller, id: &str) -> ApiResult<()> {
    match storage::access(&state.db, &caller.tenant_id, caller.user_id.as_str(), id).await? {
        Access::Owner => Ok(()),
        Access::ReadOnly => Err(ApiError::Forbidden(
            "only its owner may change a dashboard; clone it to make your own".into(),
        )),
        Access::Hidden => Err(ApiError::NotFound("dashboard")),
    }
}

/// The caller's dashboards, then those shared in the tenant.
#[utoipa::path(get, path = "/", tag = "dashboards",
    responses((status = 200, body = Vec<DashboardView>)))]
async fn list_dashboards(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<DashboardView>>> {
    Ok(Json(
        storage::list(&state.db, &caller.tenant_id, caller.user_id.as_str()).await?,
    ))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDashboardRequest {
    #[schema(min_length = 1, max_length = 100)]
    name: String,
    /// Seen by every member of the tenant. Default false.
    #[serde(default)]
    shared: bool,
    #[schema(value_type = Option<Object>)]
    layout: Option<Value>,
}

/// Create an empty dashboard owned by the caller.
#[utoipa::path(post, path = "/", tag = "dashboards",
    request_body = NewDashboardRequest,
    responses((status = 201, body = DashboardView), (status = 422, body = ErrorBody)))]
async fn create_dashboard(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<NewDashboardRequest>,
) -> ApiResult<(StatusCode, Json<DashboardView>)> {
    let dashboard = NewDashboard {
        name: name(&request.name, "name")?,
        shared: request.shared,
        is_default: false,
        layout: layout(request.layout)?.unwrap_or_else(|| json!({})),
        widgets: vec![],
    };
    let id = storage::create(
        &state.db,
        &caller.tenant_id,
        caller.user_id.as_str(),
        dashboard,
    )
    .await?;
    Ok((StatusCode::CREATED, visible(&state, &caller, &id).await?))
}

/// The default dashboard: (title, widget type, metric, parameters as
/// JSON, position x, y, w, h), where to look first at the top.
const TEMPLATE: &[(&str, &str, &str, &str, [u32; 4])] = &[
    (
        "Known exploited (KEV) findings",
        "counter",
        "kev_findings",
        "{}",
        [0, 0, 3, 2],
    ),
    (
        "Stale devices (30 days)",
        "counter",
        "stale_devices",
        r#"{"days": 30}"#,
        [3, 0, 3, 2],
    ),
    (
        "Mean time to fix, days (90 days)",
        "counter",
        "mean_time_to_fix",
        r#"{"days": 90}"#,
        [6, 0, 3, 2],
    ),
    (
        "Applications without a CPE match",
        "counter",
        "applications_without_cpe",
        "{}",
        [9, 0, 3, 2],
    ),
    (
        "Open findings by severity",
        "pie",
        "open_findings_by_severity",
        "{}",
        [0, 2, 4, 4],
    ),
    (
        "Open findings, last 30 days",
        "line",
        "finding_trend",
        r#"{"days": 30}"#,
        [4, 2, 8, 4],
    ),
    (
        "Most vulnerable applications",
        "bar",
        "top_vulnerable_applications",
        r#"{"limit": 10}"#,
        [0, 6, 6, 4],
    ),
    (
        "High-risk CVEs (EPSS 0.5 and up)",
        "table",
        "epss_high_risk_cves",
        r#"{"threshold": 0.5, "limit": 10}"#,
        [6, 6, 6, 4],
    ),
    ("Devices by OS", "pie", "devices_by_os", "{}", [0, 10, 4, 4]),
    (
        "Devices by source",
        "bar",
        "devices_by_source",
        "{}",
        [4, 10, 8, 4],
    ),
    ("Sync health", "table", "sync_health", "{}", [0, 14, 12, 3]),
    (
        "Open findings by SLA state",
        "bar",
        "open_findings_by_sla_state",
        "{}",
        [0, 17, 5, 4],
    ),
    (
        "Fixed by their due date, % (30 days)",
        "counter",
        "sla_compliance",
        r#"{"days": 30}"#,
        [5, 17, 3, 2],
    ),
    (
        "Assets by tier",
        "pie",
        "assets_by_tier",
        "{}",
        [8, 17, 4, 4],
    ),
];

fn default_widgets() -> Vec<NewWidget> {
    TEMPLATE
        .iter()
        .map(
            |(title, widget_type, metric, params, [x, y, w, h])| NewWidget {
                title: title.to_string(),
                widget_type: widget_type.to_string(),
                data_source: DataSource {
                    metric: metric.to_string(),
                    // This file's literals, each JSON: the default
                    // dashboard's test reads every widget's params back.
                    params: serde_json::from_str(params).unwrap_or_default(),
                    filter: None,
                },
                position: Position {
                    x: *x,
                    y: *y,
                    w: *w,
                    h: *h,
                },
            },
        )
        .collect()
}

/// The caller's default dashboard, created on the first call from a
/// template (findings by severity, KEV, trend, top applications, EPSS,
/// devices, sync health, SLA states and compliance, assets by tier).
#[utoipa::path(get, path = "/default", tag = "dashboards",
    responses((status = 200, body = DashboardView)))]
async fn default_dashboard(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<DashboardView>> {
    let (tenant, user) = (&caller.tenant_id, caller.user_id.as_str());
    let id = match storage::default_of(&state.db, tenant, user).await? {
        Some(id) => id,
        None => {
            let dashboard = NewDashboard {
                name: "Overview".into(),
                shared: false,
                is_default: true,
                layout: json!({"columns": 12}),
                widgets: default_widgets(),
            };
            match storage::create(&state.db, tenant, user, dashboard).await {
                Ok(id) => id,
                // Another request created it meanwhile (one default per
                // user is a unique index).
                Err(err) => storage::default_of(&state.db, tenant, user)
                    .await?
                    .ok_or(err)?,
            }
        }
    };
    visible(&state, &caller, &id).await
}

/// One dashboard with its widgets.
#[utoipa::path(get, path = "/{dashboard_id}", tag = "dashboards",
    params(("dashboard_id" = String, Path)),
    responses((status = 200, body = DashboardView), (status = 404, body = ErrorBody)))]
async fn get_dashboard(
    State(state): State<AppState>,
    caller: Caller,
    Path(dashboard_id): Path<String>,
) -> ApiResult<Json<DashboardView>> {
    visible(&state, &caller, &dashboard_id).await
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct DashboardUpdate {
    #[schema(min_length = 1, max_length = 100)]
    name: Option<String>,
    shared: Option<bool>,
    #[schema(value_type = Option<Object>)]
    layout: Option<Value>,
}

/// Rename, share or unshare a dashboard, or change its layout (its owner).
#[utoipa::path(patch, path = "/{dashboard_id}", tag = "dashboards",
    params(("dashboard_id" = String, Path)),
    request_body = DashboardUpdate,
    responses((status = 200, body = DashboardView),
              (status = 403, body = ErrorBody, description = "Shared with the caller, not theirs"),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn update_dashboard(
    State(state): State<AppState>,
    caller: Caller,
    Path(dashboard_id): Path<String>,
    Json(request): Json<DashboardUpdate>,
) -> ApiResult<Json<DashboardView>> {
    let changes = DashboardChanges {
        name: request
            .name
            .as_deref()
            .map(|n| name(n, "name"))
            .transpose()?,
        shared: request.shared,
        layout: layout(request.layout)?,
    };
    owned(&state, &caller, &dashboard_id).await?;
    storage::update(
        &state.db,
        &caller.tenant_id,
        caller.user_id.as_str(),
        &dashboard_id,
        changes,
    )
    .await?;
    visible(&state, &caller, &dashboard_id).await
}

/// Delete a dashboard and its widgets (its owner). The default dashboard
/// is made again by the next `GET /dashboards/default`.
#[utoipa::path(delete, path = "/{dashboard_id}", tag = "dashboards",
    params(("dashboard_id" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_dashboard(
    State(state): State<AppState>,
    caller: Caller,
    Path(dashboard_id): Path<String>,
) -> ApiResult<StatusCode> {
    owned(&state, &caller, &dashboard_id).await?;
    storage::delete(
        &state.db,
        &caller.tenant_id,
        caller.user_id.as_str(),
        &dashboard_id,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct CloneRequest {
    /// Default: the original's name with " (copy)".
    #[schema(min_length = 1, max_length = 100)]
    name: Option<String>,
}

/// Copy a dashboard the caller sees, with its widgets, as a private
/// dashboard of theirs.
#[utoipa::path(post, path = "/{dashboard_id}/clone", tag = "dashboards",
    params(("dashboard_id" = String, Path)),
    request_body(content = Option<CloneRequest>, description = "Optional"),
    responses((status = 201, body = DashboardView), (status = 404, body = ErrorBody)))]
async fn clone_dashboard(
    State(state): State<AppState>,
    caller: Caller,
    Path(dashboard_id): Path<String>,
    OptionalJson(request): OptionalJson<CloneRequest>,
) -> ApiResult<(StatusCode, Json<DashboardView>)> {
    let Json(original) = visible(&state, &caller, &dashboard_id).await?;
    let copy_name = match request.name {
        Some(n) => name(&n, "name")?,
        None => format!("{} (copy)", original.name)
            .chars()
            .take(100)
            .collect(),
    };
    let dashboard = NewDashboard {
        name: copy_name,
        shared: false,
        is_default: false,
        layout: original.layout,
        widgets: original
            .widgets
            .unwrap_or_default()
            .into_iter()
            .map(|w| NewWidget {
                title: w.title,
                widget_type: w.widget_type,
                data_source: w.data_source,
                position: w.position,
            })
            .collect(),
    };
    let id = storage::create(
        &state.db,
        &caller.tenant_id,
        caller.user_id.as_str(),
        dashboard,
    )
    .await?;
    Ok((StatusCode::CREATED, visible(&state, &caller, &id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WidgetRequest {
    #[schema(min_length = 1, max_length = 100)]
    title: String,
    /// A type of `/dashboards/catalog/widget-types` that can show the
    /// metric's shape.
    widget_type: String,
    data_source: DataSource,
    /// Default: 4 × 4 at the top left.
    position: Option<Position>,
}

/// A widget checked: title, type against the metric's shape, data source,
/// position.
fn checked_widget(
    title: String,
    widget_type: String,
    data_source: DataSource,
    position: Position,
) -> ApiResult<NewWidget> {
    let title = name(&title, "title")?;
    let checked = metrics::check(&data_source, "data_source")?;
    catalog::check_widget_type(&widget_type, checked.metric, "widget_type")?;
    position
        .check()
        .map_err(|reason| ApiError::validation("position", reason))?;
    Ok(NewWidget {
        title,
        widget_type,
        data_source,
        position,
    })
}

/// Add a widget to a dashboard of the caller's.
#[utoipa::path(post, path = "/{dashboard_id}/widgets", tag = "dashboards",
    params(("dashboard_id" = String, Path)),
    request_body = WidgetRequest,
    responses((status = 201, body = WidgetView), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody, description = "Unknown metric or type, a bad parameter, or a type that cannot show the metric; `field` names it")))]
async fn add_widget(
    State(state): State<AppState>,
    caller: Caller,
    Path(dashboard_id): Path<String>,
    Json(request): Json<WidgetRequest>,
) -> ApiResult<(StatusCode, Json<WidgetView>)> {
    let widget = checked_widget(
        request.title,
        request.widget_type,
        request.data_source,
        request.position.unwrap_or(Position {
            x: 0,
            y: 0,
            w: 4,
            h: 4,
        }),
    )?;
    owned(&state, &caller, &dashboard_id).await?;
    let tenant = &caller.tenant_id;
    let id = storage::add_widget(
        &state.db,
        tenant,
        caller.user_id.as_str(),
        &dashboard_id,
        &widget,
    )
    .await?
    .ok_or(ApiError::NotFound("dashboard"))?;
    let stored = storage::widget(&state.db, tenant, &dashboard_id, &id)
        .await?
        .ok_or(ApiError::NotFound("widget"))?;
    Ok((StatusCode::CREATED, Json(stored)))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct WidgetUpdate {
    #[schema(min_length = 1, max_length = 100)]
    title: Option<String>,
    widget_type: Option<String>,
    data_source: Option<DataSource>,
    position: Option<Position>,
}

/// Change a widget's title, type, data source or position; the result is
/// checked as a whole (a new type must show the metric).
#[utoipa::path(patch, path = "/{dashboard_id}/widgets/{widget_id}", tag = "dashboards",
    params(("dashboard_id" = String, Path), ("widget_id" = String, Path)),
    request_body = WidgetUpdate,
    responses((status = 200, body = WidgetView), (status = 403, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn update_widget(
    State(state): State<AppState>,
    caller: Caller,
    Path((dashboard_id, widget_id)): Path<(String, String)>,
    Json(request): Json<WidgetUpdate>,
) -> ApiResult<Json<WidgetView>> {
    owned(&state, &caller, &dashboard_id).await?;
    let tenant = &caller.tenant_id;
    let current = storage::widget(&state.db, tenant, &dashboard_id, &widget_id)
        .await?
        .ok_or(ApiError::NotFound("widget"))?;
    let widget = checked_widget(
        request.title.unwrap_or(current.title),
        request.widget_type.unwrap_or(current.widget_type),
        request.data_source.unwrap_or(current.data_source),
        request.position.unwrap_or(current.position),
    )?;
    storage::replace_widget(&state.db, tenant, &dashboard_id, &widget_id, &widget).await?;
    storage::widget(&state.db, tenant, &dashboard_id, &widget_id)
        .await?
        .map(Json)
        .ok_or(ApiError::NotFound("widget"))
}

/// Remove a widget.
#[utoipa::path(delete, path = "/{dashboard_id}/widgets/{widget_id}", tag = "dashboards",
    params(("dashboard_id" = String, Path), ("widget_id" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_widget(
    State(state): State<AppState>,
    caller: Caller,
    Path((dashboard_id, widget_id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    owned(&state, &caller, &dashboard_id).await?;
    if !storage::delete_widget(&state.db, &caller.tenant_id, &dashboard_id, &widget_id).await? {
        return Err(ApiError::NotFound("widget"));
    }
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Serialize, ToSchema)]
pub struct WidgetData {
    pub metric: String,
    /// The parameters evaluated, defaults filled in.
    #[schema(value_type = Object)]
    pub params: Map<String, Value>,
    /// Whether a device query narrowed it.
    pub filtered: bool,
    pub data: MetricValue,
    pub evaluated_at: String,
}

async fn evaluate(state: &AppState, caller: &Caller, source: &DataSource) -> ApiResult<WidgetData> {
    let checked = metrics::check(source, "data_source")?;
    let data =
        metrics::evaluate(&state.db, &caller.tenant_id, &checked, state.clock.now_ms()).await?;
    Ok(WidgetData {
        metric: checked.metric.name.into(),
        params: checked.params.as_json(),
        filtered: checked.filter.is_some(),
        data,
        evaluated_at: cairn_core::db::to_rfc3339(cairn_core::db::now_ms()),
    })
}

/// Evaluate a saved widget's data source over the caller's tenant.
#[utoipa::path(post, path = "/widgets/{widget_id}/data", tag = "dashboards",
    params(("widget_id" = String, Path)),
    responses((status = 200, body = WidgetData), (status = 404, body = ErrorBody)))]
async fn widget_data(
    State(state): State<AppState>,
    caller: Caller,
    Path(widget_id): Path<String>,
) -> ApiResult<Json<WidgetData>> {
    let widget = storage::visible_widget(
        &state.db,
        &caller.tenant_id,
        caller.user_id.as_str(),
        &widget_id,
    )
    .await?
    .ok_or(ApiError::NotFound("widget"))?;
    Ok(Json(evaluate(&state, &caller, &widget.data_source).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PreviewRequest {
    data_source: DataSource,
    /// When given, checked against the metric's shape too.
    widget_type: Option<String>,
}

/// Evaluate a data source that is not saved (what a widget editor shows
/// before saving).
#[utoipa::path(post, path = "/widgets/preview", tag = "dashboards",
    request_body = PreviewRequest,
    responses((status = 200, body = WidgetData),
              (status = 422, body = ErrorBody, description = "Unknown metric, a bad parameter or filter, or a type that cannot show the metric; `field` names it")))]
async fn preview(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<PreviewRequest>,
) -> ApiResult<Json<WidgetData>> {
    if let Some(widget_type) = &request.widget_type {
        let metric = catalog::metric(&request.data_source.metric, "data_source.metric")?;
        catalog::check_widget_type(widget_type, metric, "widget_type")?;
    }
    Ok(Json(evaluate(&state, &caller, &request.data_source).await?))
}

/// The named metrics: parameters (type, default, bounds), the shape each
/// returns, and whether a device query can narrow it.
#[utoipa::path(get, path = "/catalog/metrics", tag = "dashboards",
    responses((status = 200, body = Vec<Metric>)))]
async fn metric_catalog(_caller: Caller) -> Json<&'static [Metric]> {
    Json(METRICS)
}

/// The widget types and the metric shapes each can show.
#[utoipa::path(get, path = "/catalog/widget-types", tag = "dashboards",
    responses((status = 200, body = Vec<WidgetType>)))]
async fn widget_type_catalog(_caller: Caller) -> Json<&'static [WidgetType]> {
    Json(WIDGET_TYPES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_dashboard_is_valid_and_its_widgets_do_not_overlap() {
        let widgets = default_widgets();
        assert_eq!(widgets.len(), METRICS.len(), "one widget per metric");
        for w in &widgets {
            checked_widget(
                w.title.clone(),
                w.widget_type.clone(),
                w.data_source.clone(),
                w.position,
            )
            .unwrap_or_else(|e| panic!("{}: {e}", w.title));
        }
        for (i, a) in widgets.iter().enumerate() {
            for b in &widgets[i + 1..] {
                let (a, b) = (a.position, b.position);
                let apart =
                    a.x + a.w <= b.x || b.x + b.w <= a.x || a.y + a.h <= b.y || b.y + b.h <= a.y;
                assert!(apart, "{a:?} overlaps {b:?}");
            }
        }
    }
}
