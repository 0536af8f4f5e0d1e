//! A fake Microsoft Graph (Intune) on 127.0.0.1 speaking its wire format:
//! `GET /v1.0/deviceManagement/managedDevices` paged by `@odata.nextLink`,
//! and `POST /beta/$batch` of at most 20 per-device detected-apps requests
//! (relative URLs), answered out of order, each device's apps paged inside
//! the batch. On request it throttles chosen sub-requests once (429 with a
//! lower-case `retry-after` of a fraction of a second), answers one device
//! page with a 503 once, or refuses everything with Graph's 403 error body.
//! Bearer tokens must come from the [`FakeOauth`] it is started with.
//! The tenant-wide `/v1.0/deviceManagement/detectedApps` lists each app id
//! once with the number of devices reporting it. For the directory: `/v1.0/users`, `/v1.0/groups` and
//! `/v1.0/groups/{id}/members`, paged the same way.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{json, Value};

use crate::fake_oauth::FakeOauth;

#[derive(Default)]
pub struct GraphData {
    /// Managed devices, in page order.
    pub devices: Vec<Value>,
    /// Detected apps by device id.
    pub apps: HashMap<String, Vec<Value>>,
    pub device_page_size: usize,
    /// Directory users, groups and each group's members.
    pub users: Vec<Value>,
    pub groups: Vec<Value>,
    pub members: HashMap<String, Vec<Value>>,
    /// Page size of users, groups and members (1 when unset).
    pub directory_page_size: usize,
    pub apps_page_size: usize,
    /// Device ids whose first apps sub-request is answered 429.
    pub throttle_once: HashSet<String>,
    /// The device page (by skip) answered 503 once.
    pub fail_page_once: Option<usize>,
    /// Every request answered 403 with Graph's error body.
    pub forbidden: bool,
    pub device_pages: u32,
    pub batch_calls: u32,
    pub sub_requests: u32,
    pub throttled: u32,
    pub page_failures: u32,
}

pub struct FakeGraph {
    pub base_url: String,
    pub data: Arc<Mutex<GraphData>>,
}

#[derive(Clone)]
struct Shared {
    base_url: String,
    data: Arc<Mutex<GraphData>>,
    oauth: FakeOauth,
}

impl FakeGraph {
    pub async fn start(oauth: &FakeOauth, data: GraphData) -> FakeGraph {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let data = Arc::new(Mutex::new(data));
        let shared = Shared {
            base_url: base_url.clone(),
            data: data.clone(),
            oauth: oauth.clone(),
        };
        let app = axum::Router::new()
            .route("/v1.0/deviceManagement/managedDevices", get(devices))
            .route("/v1.0/deviceManagement/detectedApps", get(detected_apps))
            .route("/beta/$batch", post(batch))
            .route("/v1.0/users", get(users))
            .route("/v1.0/groups", get(groups))
            .route("/v1.0/groups/{id}/members", get(members))
            .with_state(shared);
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeGraph { base_url, data }
    }
}

/// Graph's error body.
fn graph_error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error": {"code": code, "message": message,
            "innerError": {"date": "2026-11-24T10:00:00", "request-id": "5f0c-fake"}}})),
    )
        .into_response()
}

fn refused(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok());
    if !shared.oauth.issued(authorization) {
        return Some(graph_error(
            StatusCode::UNAUTHORIZED,
            "InvalidAuthenticationToken",
            "Access token is empty or invalid.",
        ));
    }
    if shared.data.lock().unwrap().forbidden {
        return Some(graph_error(
            StatusCode::FORBIDDEN,
            "Authorization_RequestDenied",
            "Insufficient privileges to complete the operation.",
        ));
    }
    None
}

async fn devices(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refusal) = refused(&shared, &headers) {
        return refusal;
    }
    let mut data = shared.data.lock().unwrap();
    data.device_pages += 1;
    let top: usize = query
        .get("$top")
        .and_then(|t| t.parse().ok())
        .unwrap_or(data.device_page_size)
        .min(data.device_page_size);
    let skip: usize = query
        .get("$skiptoken")
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    if data.fail_page_once == Some(skip) {
        data.fail_page_once = None;
        data.page_failures += 1;
        let mut response = graph_error(
            StatusCode::SERVICE_UNAVAILABLE,
            "serviceNotAvailable",
            "The service is temporarily unavailable.",
        );
        response
            .headers_mut()
            .insert("Retry-After", "0.2".parse().unwrap());
        return response;
    }
    let page: Vec<Value> = data.devices.iter().skip(skip).take(top).cloned().collect();
    let mut body = json!({
        "@odata.context": format!("{}/v1.0/$metadata#deviceManagement/managedDevices", shared.base_url),
        "value": page,
    });
    if skip + top < data.devices.len() {
        body["@odata.nextLink"] = json!(format!(
            "{}/v1.0/deviceManagement/managedDevices?$top={top}&$skiptoken={}",
            shared.base_url,
            skip + top
        ));
    }
    axum::Json(body).into_response()
}

async fn batch(
    State(shared): State<Shared>,
    headers: HeaderMap,
    axum::Json(envelope): axum::Json<Value>,
) -> Response {
    if let Some(refusal) = refused(&shared, &headers) {
        return refusal;
    }
    let requests = envelope["requests"].as_array().cloned().unwrap_or_default();
    let ids: HashSet<String> = requests
        .iter()
        .filter_map(|r| r["id"].as_str().map(str::to_lowercase))
        .collect();
    if requests.is_empty() || requests.len() > 20 || ids.len() != requests.len() {
        return graph_error(
            StatusCode::BAD_REQUEST,
            "BadRequest",
            "A batch holds 1 to 20 requests with unique ids.",
        );
    }
    let mut data = shared.data.lock().unwrap();
    data.batch_calls += 1;
    let mut responses = Vec::new();
    for request in &requests {
        data.sub_requests += 1;
        let id = request["id"].clone();
        let url = request["url"].as_str().unwrap_or_default();
        let url = url.strip_prefix('/').unwrap_or(url);
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let device = path
            .strip_prefix("deviceManagement/managedDevices/")
            .and_then(|rest| rest.strip_suffix("/detectedApps"));
        let Some(device) = device.filter(|_| request["method"] == "GET") else {
            responses.push(json!({"id": id, "status": 400, "headers": {},
                "body": {"error": {"code": "BadRequest", "message": "unsupported sub-request"}}}));
            continue;
        };
        if data.throttle_once.remove(device) {
            data.throttled += 1;
            responses.push(json!({"id": id, "status": 429,
                "headers": {"retry-after": "0.2", "Content-Type": "application/json"},
                "body": {"error": {"code": "TooManyRequests", "message": "Please retry again later."}}}));
            continue;
        }
        let Some(apps) = data.apps.get(device).cloned() else {
            responses.push(json!({"id": id, "status": 404, "headers": {},
                "body": {"error": {"code": "ResourceNotFound", "message": "no such device"}}}));
            continue;
        };
        let skip: usize = query
            .strip_prefix("$skiptoken=")
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let size = data.apps_page_size;
        let mut body = json!({"value": apps.iter().skip(skip).take(size).collect::<Vec<_>>()});
        if skip + size < apps.len() {
            body["@odata.nextLink"] = json!(format!(
                "{}/beta/deviceManagement/managedDevices/{device}/detectedApps?$skiptoken={}",
                shared.base_url,
                skip + size
            ));
        }
        responses.push(json!({"id": id, "status": 200,
            "headers": {"Content-Type": "application/json"}, "body": body}));
    }
    // Graph answers in any order.
    responses.reverse();
    axum::Json(json!({"responses": responses})).into_response()
}

/// A page of `items` at `path`, by `$skiptoken`, with `@odata.nextLink`.
fn directory_page(
    shared: &Shared,
    path: &str,
    items: &[Value],
    query: &HashMap<String, String>,
) -> Response {
    let size = shared.data.lock().unwrap().directory_page_size.max(1);
    let skip: usize = query
        .get("$skiptoken")
        .and_then(|t| t.parse().ok())
        .unwrap_or(0);
    let mut body = json!({"value": items.iter().skip(skip).take(size).collect::<Vec<_>>()});
    if skip + size < items.len() {
        body["@odata.nextLink"] = json!(format!(
            "{}{path}?$skiptoken={}",
            shared.base_url,
            skip + size
        ));
    }
    axum::Json(body).into_response()
}

async fn users(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refusal) = refused(&shared, &headers) {
        return refusal;
    }
    // The connector must ask for the proxy addresses, as Graph leaves
    // them out of a user unless selected.
    let selects_proxy = query
        .get("$select")
        .is_some_and(|s| s.split(',').any(|f| f == "proxyAddresses"));
    let mut users = shared.data.lock().unwrap().users.clone();
    if !selects_proxy {
        for user in &mut users {
            user.as_object_mut().unwrap().remove("proxyAddresses");
        }
    }
    directory_page(&shared, "/v1.0/users", &users, &query)
}

async fn groups(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refusal) = refused(&shared, &headers) {
        return refusal;
    }
    let groups = shared.data.lock().unwrap().groups.clone();
    directory_page(&shared, "/v1.0/groups", &groups, &query)
}

async fn members(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refusal) = refused(&shared, &headers) {
        return refusal;
    }
    let Some(members) = shared.data.lock().unwrap().members.get(&id).cloned() else {
        return graph_error(
            StatusCode::NOT_FOUND,
            "Request_ResourceNotFound",
            "no such group",
        );
    };
    directory_page(
        &shared,
        &format!("/v1.0/groups/{id}/members"),
        &members,
        &query,
    )
}

async fn detected_apps(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refusal) = refused(&shared, &headers) {
        return refusal;
    }
    let mut by_id: std::collections::BTreeMap<String, (Value, i64)> = Default::default();
    for apps in shared.data.lock().unwrap().apps.values() {
        for app in apps {
            let id = app["id"].as_str().unwrap_or_default().to_string();
            by_id.entry(id).or_insert_with(|| (app.clone(), 0)).1 += 1;
        }
    }
    let apps: Vec<Value> = by_id
        .into_values()
        .map(|(mut app, devices)| {
            app["deviceCount"] = json!(devices);
            app
        })
        .collect();
    directory_page(
        &shared,
        "/v1.0/deviceManagement/detectedApps",
        &apps,
        &query,
    )
}
