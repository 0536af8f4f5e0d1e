//! The routes connectors declare: views over their collections and typed
//! live actions, mounted concretely under `/api/v1/<area>/...` with their
//! OpenAPI operations built from the declarations.
//!
//! Several connectors may serve one area, so a route is mounted once per
//! (method, path) of the area and dispatched at request time to the
//! connector the caller's tenant uses; a tenant whose connector does not
//! declare the route gets a 404 saying so.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter};
use serde_json::{json, Map, Value};
use utoipa::openapi::path::{HttpMethod, Operation, Paths};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;
use utoipa_axum::router::OpenApiRouter;

use super::descriptor_docs::{self, Declared};
use super::{area_routes::call_error, areas, config::check_schema, storage, views};
use cairn_core::http::error::{ApiError, ApiResult};
use cairn_core::http::json::{Json, Path, Query};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_plugins::descriptor::route_shape;
use cairn_plugins::{Action, ActionCall, CallScope, ConnectorDescriptor, Plugins};

/// One mounted route of an area.
struct Route {
    area: String,
    method: String,
    path: String,
}

fn declared_at<'a>(
    descriptor: &'a ConnectorDescriptor,
    method: &str,
    path: &str,
) -> Option<Declared<'a>> {
    let shape = route_shape(path);
    if method == "GET" {
        if let Some(view) = descriptor
            .views
            .iter()
            .find(|v| route_shape(v.path()) == shape)
        {
            return Some(Declared::View(view));
        }
    }
    descriptor
        .actions
        .iter()
        .find(|a| {
            a.method == method && a.path.as_deref().map(route_shape).as_deref() == Some(&shape)
        })
        .map(Declared::Action)
}

/// Mounts every declared route of `area` on `router`.
pub fn mount(
    mut router: OpenApiRouter<AppState>,
    plugins: &Plugins,
    area: &str,
) -> OpenApiRouter<AppState> {
    // path -> method -> the operation of the first connector declaring it.
    let mut by_path: BTreeMap<String, BTreeMap<String, Operation>> = BTreeMap::new();
    // The record schemas the operations refer to; the first connector's
    // where two of an area name a collection alike.
    let mut records: BTreeMap<String, RefOr<Schema>> = BTreeMap::new();
    for connector in plugins.area_connectors(area) {
        let descriptor = &connector.descriptor;
        for (name, schema) in descriptor_docs::record_components(descriptor) {
            records.entry(name).or_insert(schema);
        }
        for (method, path) in descriptor.routes() {
            let Some(declared) = declared_at(descriptor, method, path) else {
                continue;
            };
            let operation = descriptor_docs::operation(descriptor, &declared);
            let methods = by_path.entry(path.to_string()).or_default();
            match methods.get_mut(method) {
                Some(first) => descriptor_docs::merge(first, operation),
                None => {
                    methods.insert(method.to_string(), operation);
                }
            }
        }
    }
    for (path, methods) in by_path {
        let full = format!("/{area}/{path}");
        let mut paths = Paths::new();
        let mut method_router: MethodRouter<AppState> = MethodRouter::new();
        for (method, operation) in methods {
            let route = Arc::new(Route {
                area: area.to_string(),
                method: method.clone(),
                path: path.clone(),
            });
            paths.add_path_operation(&full, vec![http_method(&method)], operation);
            method_router = method_router.merge(handler(method_filter(&method), route));
        }
        // The schemas go with the first route; the document keeps them.
        let schemas = std::mem::take(&mut records).into_iter().collect();
        router = router.routes((schemas, paths, method_router));
    }
    router
}

fn http_method(method: &str) -> HttpMethod {
    match method {
        "POST" => HttpMethod::Post,
        "PUT" => HttpMethod::Put,
        "PATCH" => HttpMethod::Patch,
        "DELETE" => HttpMethod::Delete,
        _ => HttpMethod::Get,
    }
}

fn method_filter(method: &str) -> MethodFilter {
    match method {
        "POST" => MethodFilter::POST,
        "PUT" => MethodFilter::PUT,
        "PATCH" => MethodFilter::PATCH,
        "DELETE" => MethodFilter::DELETE,
        _ => MethodFilter::GET,
    }
}

/// The handler of one route: with path parameters when its path has any
/// (axum refuses to extract them from a route without).
fn handler(filter: MethodFilter, route: Arc<Route>) -> MethodRouter<AppState> {
    if route.path.contains('{') {
        axum::routing::on(
            filter,
            move |State(state): State<AppState>,
                  caller: Caller,
                  Path(params): Path<Vec<(String, String)>>,
                  Query(query): Query<Vec<(String, String)>>,
                  body: Bytes| {
                let route = route.clone();
                async move { serve(state, caller, &route, params, query, body).await }
            },
        )
    } else {
        axum::routing::on(
            filter,
            move |State(state): State<AppState>,
                  caller: Caller,
                  Query(query): Query<Vec<(String, String)>>,
                  body: Bytes| {
                let route = route.clone();
                async move { serve(state, caller, &route, vec![], query, body).await }
            },
        )
    }
}

async fn serve(
    state: AppState,
    caller: Caller,
    route: &Route,
    params: Vec<(String, String)>,
    query: Vec<(String, String)>,
    body: Bytes,
) -> ApiResult<Response> {
    let area = route.area.as_str();
    // A view needs only which connector the tenant chose; an action reads
    // the whole config (secrets included) below.
    let choice = storage::area_choice(&state.db, &caller.tenant_id, area).await?;
    let connector = match &choice {
        Some(chosen) => areas::resolve(&state.plugins(), area, chosen.as_deref())?,
        // An unconfigured tenant has no synced data in the area: any
        // connector declaring the route says what the (empty) answer is.
        None => state
            .plugins()
            .area_connectors(area)
            .into_iter()
            .find(|c| declared_at(&c.descriptor, &route.method, &route.path).is_some())
            .cloned()
            .ok_or(ApiError::NotFound("route"))?,
    };
    let descriptor = &connector.descriptor;
    match declared_at(descriptor, &route.method, &route.path) {
        Some(Declared::View(view)) => {
            views::respond(
                &state.db,
                &caller.tenant_id,
                descriptor,
                view,
                &params,
                &query,
            )
            .await
        }
        Some(Declared::Action(action)) => {
            let Some(stored) =
                storage::config(&state.db, &state.secrets, &caller.tenant_id, area).await?
            else {
                return Err(ApiError::Conflict(format!(
                    "{area} is not configured for this tenant"
                )));
            };
            // Saved between the two reads: the action belongs to the other
            // product now.
            if areas::resolve(&state.plugins(), area, stored.connector.as_deref())?
                .descriptor
                .id
                != descriptor.id
            {
                return Err(ApiError::Conflict(format!(
                    "this tenant's {area} connector changed during the request; try again"
                )));
            }
            if action.admin_only() && !caller.role.can_administer() {
                return Err(ApiError::Forbidden(
                    "this action needs role admin or owner".into(),
                ));
            }
            let call = ActionCall {
                action: action.name.clone(),
                path_params: params,
                body: action_body(action, &body)?,
                query: checked_query(action, query)?,
            };
            let scope = CallScope {
                plugin: descriptor.id.clone(),
                tenant_id: Some(caller.tenant_id.as_str().to_string()),
                job_id: None,
            };
            state
                .plugins()
                .invoke(&connector, scope, &stored.full(), &call)
                .await
                .map(|answer| Json(answer).into_response())
                .map_err(call_error)
        }
        None => Err(ApiError::Missing(format!(
            "this tenant's {area} connector ({}) has no route {} {}",
            descriptor.id, route.method, route.path
        ))),
    }
}

/// The action's body, parsed and checked against its input schema; `null`
/// for an action that takes none.
fn action_body(action: &Action, body: &Bytes) -> ApiResult<Value> {
    let Some(schema) = &action.input_schema else {
        return Ok(Value::Null);
    };
    let value: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::BadRequest(format!("the body is not JSON: {e}")))?
    };
    check_schema(schema, &value, "body")?;
    Ok(value)
}

/// The query, checked against the action's query schema: values of
/// parameters typed `integer`, `number` or `boolean` there are read as
/// such; a parameter the schema does not know is refused when the schema
/// says `additionalProperties: false`.
fn checked_query(
    action: &Action,
    query: Vec<(String, String)>,
) -> ApiResult<Vec<(String, String)>> {
    let Some(schema) = &action.query_schema else {
        return Ok(query);
    };
    let mut object = Map::new();
    for (name, raw) in &query {
        let declared = schema["properties"][name.as_str()]["type"].as_str();
        let value = match declared {
            Some("integer") => raw.parse::<i64>().map(Value::from).ok(),
            Some("number") => raw.parse::<f64>().ok().map(|n| json!(n)),
            Some("boolean") => raw.parse::<bool>().map(Value::from).ok(),
            _ => Some(Value::String(raw.clone())),
        }
        .unwrap_or_else(|| Value::String(raw.clone()));
        object.insert(name.clone(), value);
    }
    check_schema(schema, &Value::Object(object), "query")?;
    Ok(query)
}
