//! A fake NinjaOne public API v2 on 127.0.0.1, for the second rmm
//! connector.
//!
//! Which documentation each endpoint follows:
//! - `POST /ws/oauth/token`: NinjaOne's client credentials flow
//!   (app.ninjarmm.com/apidocs-beta, "Authorization > Client credentials
//!   flow"): a form with `grant_type=client_credentials`, `client_id`,
//!   `client_secret` and `scope`, answered `{access_token, expires_in,
//!   scope, token_type}`; a wrong client is refused with an OAuth error
//!   body, an unknown or expired bearer token with 401.
//! - `GET /v2/organizations` and `GET /v2/devices-detailed`: the API
//!   reference's "Organizations" and "Devices (detailed)" lists, paged with
//!   `pageSize` and `after` (the last id of the page before); `df` takes the
//!   device filter forms the reference documents for organizations
//!   (`org = 1`, `org in (1,2)`). Device fields as in the reference's
//!   DeviceDetails schema (`id`, `organizationId`, `nodeClass`, `offline`,
//!   `systemName`, `lastContact` in epoch seconds, `os`, `system`,
//!   `lastLoggedInUser`).
//! - `GET /v2/device/{id}/software`: the device's installed software
//!   (`name`, `version`, `publisher`, `installDate`, ...).
//! - `GET /v2/device/{id}/scripting/options`: the scripts and built-in
//!   actions a device may run (`{categories, scripts: [{type, id, uid,
//!   name, language, ...}]}`).
//! - `POST /v2/device/{id}/script/run`: "Run script or built-in action",
//!   body `{type: "SCRIPT" | "ACTION", id, uid, parameters, runAs}`,
//!   answered 204 without a body (so the PowerShell module
//!   homotechsual/NinjaOne's `Invoke-NinjaOneDeviceScript` and typed
//!   clients treat it).
//! - `GET /v2/device/{id}/activities`: the device's activities,
//!   `{lastActivityId, activities: [...]}` newest first, filtered by
//!   `newerThan` (an activity id) and `pageSize`. That a script run shows
//!   up there as an activity whose `sourceName` is the script's name and
//!   whose `activityResult` is `SUCCESS` or `FAILURE` is our reading of the
//!   reference's Activity schema, not a documented guarantee, which is why
//!   the connector reads nothing else from it.
//!
//! The fake's agents are instant: a run completes when it is asked for,
//! doing what the device's [`ScriptOutcome`] says.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{json, Value};

pub use crate::fake_rmm::ScriptOutcome;

pub const CLIENT_ID: &str = "cairn-api-client";
pub const CLIENT_SECRET: &str = "n1nja-s3cret-not-for-logs";
/// The update script every device may run.
pub const UPDATE_SCRIPT: u64 = 77;
pub const UPDATE_SCRIPT_NAME: &str = "Update package (winget)";

#[derive(Default)]
pub struct NinjaData {
    pub organizations: Vec<Value>,
    /// Devices as `/v2/devices-detailed` returns them.
    pub devices: Vec<Value>,
    pub software: HashMap<u64, Vec<Value>>,
    pub outcomes: HashMap<u64, ScriptOutcome>,
    /// Every token request's form, in order.
    pub token_requests: Vec<HashMap<String, String>>,
    /// Issued tokens and their expiry (Unix ms).
    pub tokens: HashMap<String, i64>,
    /// Every run asked for: the device and the body.
    pub runs: Vec<(u64, Value)>,
    /// Every device's activities, oldest first.
    pub activities: Vec<Value>,
    /// Every `df` a device page was asked with.
    pub filters: Vec<String>,
}

#[derive(Clone)]
pub struct FakeNinjaOne {
    pub base_url: String,
    pub data: Arc<Mutex<NinjaData>>,
}

type Shared = State<Arc<Mutex<NinjaData>>>;

impl FakeNinjaOne {
    pub async fn start(data: NinjaData) -> FakeNinjaOne {
        let data = Arc::new(Mutex::new(data));
        let app = axum::Router::new()
            .route("/ws/oauth/token", post(token))
            .route("/v2/organizations", get(organizations))
            .route("/v2/devices-detailed", get(devices))
            .route("/v2/device/{id}/software", get(device_software))
            .route("/v2/device/{id}/scripting/options", get(scripting_options))
            .route("/v2/device/{id}/script/run", post(run_script))
            .route("/v2/device/{id}/activities", get(activities))
            .with_state(data.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeNinjaOne {
            base_url: format!("http://{addr}"),
            data,
        }
    }

    /// Every issued token stops working, as after its `expires_in`.
    pub fn expire_tokens(&self) {
        for expiry in self.data.lock().unwrap().tokens.values_mut() {
            *expiry = now_ms() - 1;
        }
    }

    /// How many token requests were made.
    pub fn token_requests(&self) -> usize {
        self.data.lock().unwrap().token_requests.len()
    }

    /// Every script run asked for: the device and the request body.
    pub fn runs(&self) -> Vec<(u64, Value)> {
        self.data.lock().unwrap().runs.clone()
    }
}

/// A Windows workstation of `organization`, last heard from `last_contact`
/// (epoch seconds).
pub fn device(id: u64, name: &str, organization: u64, last_contact: f64) -> Value {
    json!({
        "id": id, "parentDeviceId": null, "organizationId": organization, "locationId": 1,
        "nodeClass": "WINDOWS_WORKSTATION", "nodeRoleId": 1, "rolePolicyId": 1, "policyId": 1,
        "approvalStatus": "APPROVED", "offline": false, "displayName": name, "systemName": name,
        "dnsName": format!("{}.acme.local", name.to_lowercase()), "netbiosName": name,
        "created": 1_690_000_000.0, "lastContact": last_contact, "lastUpdate": last_contact,
        "os": {"manufacturer": "Microsoft Corporation", "name": "Windows 11 Pro Edition",
               "architecture": "64-bit", "buildNumber": "22631", "releaseId": "23H2",
               "needsReboot": false},
        "system": {"manufacturer": "HP", "model": "EliteBook 840 G8",
                   "serialNumber": format!("5CG{id:07}"), "domain": "acme.local"},
        "lastLoggedInUser": "ACME\\jdoe",
    })
}

/// Installed software as the device's software list gives it.
pub fn software<S: AsRef<str>>(names: &[(S, S)]) -> Vec<Value> {
    names
        .iter()
        .map(|(name, version)| {
            json!({"name": name.as_ref(), "version": version.as_ref(), "publisher": "Vendor",
                   "installDate": "2024-01-15T00:00:00Z", "location": "C:\\Program Files",
                   "size": 1024, "productCode": "{00000000-0000-0000-0000-000000000000}"})
        })
        .collect()
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({"resultCode": message}))).into_response()
}

/// 401 unless the request carries a live bearer token.
fn admit(data: &NinjaData, headers: &HeaderMap) -> Option<Response> {
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    match data.tokens.get(token) {
        Some(expiry) if *expiry > now_ms() => None,
        _ => Some(error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED")),
    }
}

async fn token(
    State(data): Shared,
    axum::Form(form): axum::Form<HashMap<String, String>>,
) -> Response {
    let mut data = data.lock().unwrap();
    data.token_requests.push(form.clone());
    let field = |name: &str| form.get(name).map(String::as_str).unwrap_or_default();
    if field("grant_type") != "client_credentials" {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "unsupported_grant_type"})),
        )
            .into_response();
    }
    if field("client_id") != CLIENT_ID || field("client_secret") != CLIENT_SECRET {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(
                json!({"error": "invalid_client", "error_description": "Bad client credentials"}),
            ),
        )
            .into_response();
    }
    let token = format!("nj-{}", uuid::Uuid::new_v4().simple());
    data.tokens.insert(token.clone(), now_ms() + 3_600_000);
    axum::Json(json!({
        "access_token": token,
        "expires_in": 3600,
        "scope": field("scope"),
        "token_type": "bearer",
    }))
    .into_response()
}

#[derive(serde::Deserialize)]
struct Paging {
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
    after: Option<u64>,
    df: Option<String>,
}

/// The items after id `after`, in id order, one page.
fn page(items: impl Iterator<Item = Value>, paging: &Paging) -> Vec<Value> {
    let mut items: Vec<Value> = items
        .filter(|i| {
            paging
                .after
                .is_none_or(|after| i["id"].as_u64() > Some(after))
        })
        .collect();
    items.sort_by_key(|i| i["id"].as_u64());
    items.truncate(paging.page_size.unwrap_or(1000).max(1));
    items
}

/// The organizations `df` names: `org = 1` or `org in (1,2)`; `None`
/// for any other filter.
fn organizations_of(filter: &str) -> Option<Vec<u64>> {
    let filter = filter.trim();
    if let Some(one) = filter.strip_prefix("org = ") {
        return one.trim().parse().ok().map(|id| vec![id]);
    }
    let list = filter.strip_prefix("org in (")?.strip_suffix(')')?;
    list.split(',').map(|id| id.trim().parse().ok()).collect()
}

async fn organizations(
    State(data): Shared,
    headers: HeaderMap,
    Query(paging): Query<Paging>,
) -> Response {
    let data = data.lock().unwrap();
    if let Some(refused) = admit(&data, &headers) {
        return refused;
    }
    axum::Json(page(data.organizations.iter().cloned(), &paging)).into_response()
}

async fn devices(
    State(data): Shared,
    headers: HeaderMap,
    Query(paging): Query<Paging>,
) -> Response {
    let mut data = data.lock().unwrap();
    if let Some(refused) = admit(&data, &headers) {
        return refused;
    }
    let organizations = match paging.df.as_deref() {
        None => None,
        Some(filter) => {
            data.filters.push(filter.to_string());
            match organizations_of(filter) {
                Some(ids) => Some(ids),
                None => return error(StatusCode::BAD_REQUEST, "INVALID_DEVICE_FILTER"),
            }
        }
    };
    let of_scope = data
        .devices
        .iter()
        .filter(|d| {
            organizations.as_ref().is_none_or(|ids| {
                ids.iter()
                    .any(|id| d["organizationId"].as_u64() == Some(*id))
            })
        })
        .cloned();
    axum::Json(page(of_scope, &paging)).into_response()
}

fn known(data: &NinjaData, device: u64) -> Option<Response> {
    (!data
        .devices
        .iter()
        .any(|d| d["id"].as_u64() == Some(device)))
    .then(|| error(StatusCode::NOT_FOUND, "DEVICE_NOT_FOUND"))
}

async fn device_software(
    State(data): Shared,
    headers: HeaderMap,
    Path(device): Path<u64>,
) -> Response {
    let data = data.lock().unwrap();
    if let Some(refused) = admit(&data, &headers).or_else(|| known(&data, device)) {
        return refused;
    }
    axum::Json(data.software.get(&device).cloned().unwrap_or_default()).into_response()
}

async fn scripting_options(
    State(data): Shared,
    headers: HeaderMap,
    Path(device): Path<u64>,
) -> Response {
    let data = data.lock().unwrap();
    if let Some(refused) = admit(&data, &headers).or_else(|| known(&data, device)) {
        return refused;
    }
    axum::Json(json!({
        "categories": [{"id": 1, "name": "Maintenance", "internal": false}],
        "scripts": [
            {"type": "SCRIPT", "id": UPDATE_SCRIPT, "uid": "5b0c7a3e-2d4f-4e8a-9c1d-0f6b2a7e9d31",
             "name": UPDATE_SCRIPT_NAME, "language": "powershell", "description": "winget upgrade",
             "architecture": ["64"], "categoryId": 1},
            {"type": "ACTION", "uid": "a1f3e8c2-0b7d-4c59-8e26-3d9f4b1a7c05", "name": "Restart"}
        ]
    }))
    .into_response()
}

/// `-Name "value"` arguments of a script's parameters.
fn arguments(parameters: &str) -> HashMap<String, String> {
    parameters
        .split(" -")
        .filter_map(|part| {
            let (name, value) = part.trim_start_matches('-').split_once(' ')?;
            Some((name.to_string(), value.trim().trim_matches('"').to_string()))
        })
        .collect()
}

async fn run_script(
    State(data): Shared,
    headers: HeaderMap,
    Path(device): Path<u64>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut data = data.lock().unwrap();
    if let Some(refused) = admit(&data, &headers).or_else(|| known(&data, device)) {
        return refused;
    }
    if body["type"] != "SCRIPT" || body["id"].as_u64() != Some(UPDATE_SCRIPT) {
        return error(StatusCode::BAD_REQUEST, "SCRIPT_NOT_FOUND");
    }
    data.runs.push((device, body.clone()));
    let arguments = arguments(body["parameters"].as_str().unwrap_or_default());
    let outcome = data.outcomes.get(&device).copied().unwrap_or_default();
    let (result, message) = match (arguments.get("Package"), arguments.get("Version")) {
        (Some(package), Some(version)) => match outcome {
            ScriptOutcome::Upgrades => {
                for app in data.software.entry(device).or_default().iter_mut() {
                    if app["name"].as_str() == Some(package.as_str()) {
                        app["version"] = json!(version);
                    }
                }
                ("SUCCESS", format!("{package} upgraded to {version}"))
            }
            ScriptOutcome::SilentlyFails => ("SUCCESS", format!("{package} upgraded to {version}")),
            ScriptOutcome::Fails => ("FAILURE", "winget exited with code 0x8A15000F".to_string()),
        },
        _ => ("SUCCESS", "script ran".to_string()),
    };
    let id = data.activities.len() as u64 + 5001;
    data.activities.push(json!({
        "id": id, "activityTime": now_ms() as f64 / 1000.0, "deviceId": device,
        "severity": "NONE", "priority": "NONE", "activityType": "ACTION",
        "statusCode": "ACTION_COMPLETED", "status": "COMPLETED", "activityResult": result,
        "sourceConfigUid": "5b0c7a3e-2d4f-4e8a-9c1d-0f6b2a7e9d31", "sourceName": UPDATE_SCRIPT_NAME,
        "subject": UPDATE_SCRIPT_NAME, "message": message, "type": "ACTION", "data": {}
    }));
    StatusCode::NO_CONTENT.into_response()
}

#[derive(serde::Deserialize)]
struct ActivityQuery {
    #[serde(rename = "newerThan")]
    newer_than: Option<u64>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
}

async fn activities(
    State(data): Shared,
    headers: HeaderMap,
    Path(device): Path<u64>,
    Query(query): Query<ActivityQuery>,
) -> Response {
    let data = data.lock().unwrap();
    if let Some(refused) = admit(&data, &headers).or_else(|| known(&data, device)) {
        return refused;
    }
    let mut found: Vec<Value> = data
        .activities
        .iter()
        .filter(|a| a["deviceId"].as_u64() == Some(device))
        .filter(|a| {
            query
                .newer_than
                .is_none_or(|after| a["id"].as_u64() > Some(after))
        })
        .cloned()
        .collect();
    found.sort_by_key(|a| std::cmp::Reverse(a["id"].as_u64()));
    found.truncate(query.page_size.unwrap_or(200).max(1));
    let last = found.last().and_then(|a| a["id"].as_u64());
    axum::Json(json!({"lastActivityId": last, "activities": found})).into_response()
}
