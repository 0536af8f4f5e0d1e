//! A fake ConnectWise Automate REST API v1 on 127.0.0.1: token exchange with
//! expiring tokens (401 once expired), `page`/`pageSize` paging,
//! `condition=Client.Id=<id>`, groups, per-computer software, 429s with
//! `Retry-After` on request, and a hold on computer pages from a given page
//! on (a sync parked mid-run, for the crash tests).
//!
//! Scheduled scripts, for remediation: `POST /Computers/{id}/ScheduledScripts`
//! takes the body Automate integrations send (`ComputerId`, `ScriptId`,
//! `Parameters`, `ScheduleType`, `Priority`, ...: the shape ConnectWise
//! partners' published PowerShell uses against `/cwa/api/v1`, e.g. the
//! `Schedule-Automatescript` function) and answers the schedule with its
//! `Id`. `GET /Computers/{id}/ScheduledScripts/{scheduleId}` answers the
//! schedule with `Status` (`Pending`, `Running`, `Success`, `Failed`) and
//! `Output`: the read-back's path and those two fields are our assumption
//! (ConnectWise's endpoint reference sits behind a partner login), which is
//! why the connector reads nothing else from it. What a script does to a
//! computer is the test's choice ([`ScriptOutcome`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{json, Value};

pub const USERNAME: &str = "svc-cairn";
pub const PASSWORD: &str = "Pa55-w0rd-n0t-for-logs";

#[derive(Default)]
pub struct RmmData {
    pub clients: Vec<Value>,
    pub groups: Vec<Value>,
    /// Computers as Automate returns them, plus `_groups` (group ids) which
    /// the fake strips from responses.
    pub computers: Vec<Value>,
    pub software: HashMap<i64, Vec<Value>>,
    pub tokens: HashMap<String, i64>,
    pub logins: u32,
    pub client_id_headers: Vec<String>,
    /// The next this-many data requests get 429.
    pub throttle_next: u32,
    pub throttled: u32,
    /// Every `GET /Computers` page number asked for, in order.
    pub computer_pages: Vec<usize>,
    /// `GET /Computers` pages from this one on wait for `release`.
    pub hold_from: Option<usize>,
    pub held: usize,
    /// Each software request takes this long to answer.
    pub software_delay_ms: u64,
    /// Software requests being answered now, and the most at once.
    pub software_in_flight: usize,
    pub software_max_in_flight: usize,
    /// The next this-many software requests get 429 (after the delay).
    pub throttle_software: u32,
    /// What the update script does on a computer (default: upgrades).
    pub script_outcomes: HashMap<i64, ScriptOutcome>,
    /// Every schedule made, in order.
    pub schedules: Vec<Value>,
}

/// What running the update script does on one computer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScriptOutcome {
    /// Sets the package's version to the one asked for; reports Success.
    #[default]
    Upgrades,
    /// Changes nothing and still reports Success (a silent failure).
    SilentlyFails,
    /// Changes nothing and reports Failed.
    Fails,
}

#[derive(Clone)]
pub struct FakeRmm {
    pub base_url: String,
    pub data: Arc<Mutex<RmmData>>,
    release: Arc<tokio::sync::Notify>,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl FakeRmm {
    pub async fn start(data: RmmData) -> FakeRmm {
        let data = Arc::new(Mutex::new(data));
        let api = axum::Router::new()
            .route("/apitoken", post(token))
            .route("/Clients", get(clients))
            .route("/Groups", get(groups))
            .route("/Groups/{id}/Computers", get(group_computers))
            .route("/Computers", get(computers))
            .route("/Computers/{id}/Software", get(software))
            .route("/Computers/{id}/ScheduledScripts", post(schedule_script))
            .route(
                "/Computers/{id}/ScheduledScripts/{schedule}",
                get(scheduled_script),
            )
            .with_state(data.clone());
        let release = Arc::new(tokio::sync::Notify::new());
        let held = release.clone();
        let app = axum::Router::new()
            .nest("/cwa/api/v1", api)
            .layer(axum::Extension(held));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeRmm {
            base_url: format!("http://{addr}/cwa/api/v1"),
            data,
            release,
        }
    }

    /// Computer pages from `page` on wait until [`Self::release`].
    pub fn hold_from_page(&self, page: usize) {
        self.data.lock().unwrap().hold_from = Some(page);
    }

    /// How many requests are waiting on the hold.
    pub fn held(&self) -> usize {
        self.data.lock().unwrap().held
    }

    pub fn release(&self) {
        self.data.lock().unwrap().hold_from = None;
        self.release.notify_waiters();
    }

    pub fn computer_pages(&self) -> Vec<usize> {
        self.data.lock().unwrap().computer_pages.clone()
    }

    /// Every issued token stops working, as after its ExpirationDate.
    pub fn expire_tokens(&self) {
        for expiry in self.data.lock().unwrap().tokens.values_mut() {
            *expiry = now_ms() - 1;
        }
    }

    pub fn logins(&self) -> u32 {
        self.data.lock().unwrap().logins
    }

    /// Every schedule made, in order.
    pub fn schedules(&self) -> Vec<Value> {
        self.data.lock().unwrap().schedules.clone()
    }
}

#[derive(serde::Deserialize)]
struct Paging {
    page: Option<usize>,
    #[serde(rename = "pageSize")]
    page_size: Option<usize>,
    condition: Option<String>,
}

/// One page of `items`, cloning only that page, without the fake's own
/// `_groups` field.
fn page<'a>(items: impl Iterator<Item = &'a Value>, paging: &Paging) -> Response {
    let size = paging.page_size.unwrap_or(50).max(1);
    let page = paging.page.unwrap_or(1).max(1);
    let items: Vec<Value> = items
        .skip((page - 1) * size)
        .take(size)
        .map(|item| {
            let mut item = item.clone();
            if let Some(object) = item.as_object_mut() {
                object.remove("_groups");
            }
            item
        })
        .collect();
    axum::Json(Value::Array(items)).into_response()
}

/// Answers a data request: refused (throttling, token) or `respond`ed.
fn listing(
    data: &Mutex<RmmData>,
    headers: &HeaderMap,
    respond: impl FnOnce(&RmmData) -> Response,
) -> Response {
    let mut data = data.lock().unwrap();
    if let Some(refused) = admit(&mut data, headers) {
        return refused;
    }
    respond(&data)
}

/// The refusal, if any: 429 when throttling, 401 without a live token.
fn admit(data: &mut RmmData, headers: &HeaderMap) -> Option<Response> {
    if data.throttle_next > 0 {
        data.throttle_next -= 1;
        data.throttled += 1;
        return Some(
            (
                StatusCode::TOO_MANY_REQUESTS,
                [("retry-after", "1")],
                "slow down",
            )
                .into_response(),
        );
    }
    let token = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or_default();
    match data.tokens.get(token) {
        Some(expiry) if *expiry > now_ms() => None,
        _ => Some(
            (
                StatusCode::UNAUTHORIZED,
                axum::Json(json!({"Message": "Authorization has been denied"})),
            )
                .into_response(),
        ),
    }
}

async fn token(
    State(data): State<Arc<Mutex<RmmData>>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut data = data.lock().unwrap();
    if body["UserName"] != USERNAME || body["Password"] != PASSWORD {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"Message": "Invalid credentials"})),
        )
            .into_response();
    }
    if let Some(client_id) = headers.get("clientid").and_then(|v| v.to_str().ok()) {
        data.client_id_headers.push(client_id.to_string());
    }
    data.logins += 1;
    let token = format!("tok-{}-{}", data.logins, uuid::Uuid::new_v4().simple());
    let expires = chrono::Utc::now() + chrono::Duration::hours(1);
    data.tokens
        .insert(token.clone(), expires.timestamp_millis());
    axum::Json(json!({
        "AccessToken": token,
        "TokenType": "Bearer",
        "ExpirationDate": expires.format("%Y-%m-%dT%H:%M:%S").to_string(),
    }))
    .into_response()
}

async fn clients(
    State(data): State<Arc<Mutex<RmmData>>>,
    headers: HeaderMap,
    Query(paging): Query<Paging>,
) -> Response {
    listing(&data, &headers, |data| page(data.clients.iter(), &paging))
}

async fn groups(
    State(data): State<Arc<Mutex<RmmData>>>,
    headers: HeaderMap,
    Query(paging): Query<Paging>,
) -> Response {
    listing(&data, &headers, |data| page(data.groups.iter(), &paging))
}

async fn computers(
    State(data): State<Arc<Mutex<RmmData>>>,
    axum::Extension(release): axum::Extension<Arc<tokio::sync::Notify>>,
    headers: HeaderMap,
    Query(paging): Query<Paging>,
) -> Response {
    let asked = paging.page.unwrap_or(1);
    let hold = {
        let mut data = data.lock().unwrap();
        data.computer_pages.push(asked);
        let hold = data.hold_from.is_some_and(|from| asked >= from);
        if hold {
            data.held += 1;
        }
        hold.then(|| release.notified())
    };
    if let Some(released) = hold {
        released.await;
        data.lock().unwrap().held -= 1;
    }
    let client = paging
        .condition
        .as_deref()
        .and_then(|c| c.strip_prefix("Client.Id="))
        .and_then(|id| id.trim().parse::<i64>().ok());
    if paging.condition.is_some() && client.is_none() {
        return (StatusCode::BAD_REQUEST, "unsupported condition").into_response();
    }
    listing(&data, &headers, |data| {
        let of_client = data
            .computers
            .iter()
            .filter(|c| client.is_none_or(|id| c["Client"]["Id"] == id));
        page(of_client, &paging)
    })
}

async fn group_computers(
    State(data): State<Arc<Mutex<RmmData>>>,
    headers: HeaderMap,
    Path(group): Path<String>,
    Query(paging): Query<Paging>,
) -> Response {
    listing(&data, &headers, |data| {
        let in_group = data.computers.iter().filter(|c| {
            c["_groups"]
                .as_array()
                .is_some_and(|g| g.iter().any(|g| g.as_str() == Some(&group)))
        });
        page(in_group, &paging)
    })
}

async fn software(
    State(data): State<Arc<Mutex<RmmData>>>,
    headers: HeaderMap,
    Path(id): Path<i64>,
    Query(paging): Query<Paging>,
) -> Response {
    let delay = {
        let mut data = data.lock().unwrap();
        data.software_in_flight += 1;
        data.software_max_in_flight = data.software_max_in_flight.max(data.software_in_flight);
        data.software_delay_ms
    };
    // Not even a zero sleep when no delay is set: tokio's timer rounds it
    // up to its next millisecond tick, a millisecond a real upstream on
    // the same host would not add (it cost the sync benchmark a third of
    // its time).
    if delay > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
    }
    let throttled = {
        let mut data = data.lock().unwrap();
        data.software_in_flight -= 1;
        let throttle = data.throttle_software > 0;
        if throttle {
            data.throttle_software -= 1;
            data.throttled += 1;
        }
        throttle
    };
    if throttled {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("retry-after", "1")],
            "slow down",
        )
            .into_response();
    }
    listing(&data, &headers, |data| {
        page(data.software.get(&id).into_iter().flatten(), &paging)
    })
}

/// A computer of `client` in `groups`.
pub fn computer(id: i64, name: &str, client: (i64, &str), groups: &[&str]) -> Value {
    json!({
        "Id": id,
        "ComputerName": name,
        "Client": {"Id": client.0, "Name": client.1},
        "Location": {"Id": 1, "Name": "HQ"},
        "OperatingSystemName": "Microsoft Windows 11 Pro x64",
        "OperatingSystemVersion": "10.0.22631",
        "LastUserName": "ACME\\jdoe",
        "_groups": groups,
    })
}

/// Software entries as Automate lists them.
pub fn apps<S: AsRef<str>>(names: &[(S, S)]) -> Vec<Value> {
    names
        .iter()
        .enumerate()
        .map(|(i, (name, version))| json!({"Id": i + 1, "Name": name.as_ref(), "Version": version.as_ref(), "Publisher": "Vendor"}))
        .collect()
}

/// Schedules a script once on a computer and, the fake's agent being
/// instant, runs it: the update script (any script whose parameters name a
/// `Package` and a `Version`) does what the computer's [`ScriptOutcome`]
/// says.
async fn schedule_script(
    State(data): State<Arc<Mutex<RmmData>>>,
    headers: HeaderMap,
    Path(computer): Path<i64>,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let mut data = data.lock().unwrap();
    if let Some(refused) = admit(&mut data, &headers) {
        return refused;
    }
    if !data.computers.iter().any(|c| c["Id"] == computer) {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"Message": format!("Computer {computer} was not found")})),
        )
            .into_response();
    }
    if body["ScriptId"].as_i64().is_none() || body["ComputerId"] != computer {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"Message": "ScriptId and ComputerId are required"})),
        )
            .into_response();
    }
    let parameters: HashMap<String, String> = body["Parameters"]
        .as_str()
        .unwrap_or_default()
        .split('|')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let outcome = data
        .script_outcomes
        .get(&computer)
        .copied()
        .unwrap_or_default();
    let (status, output) = match (parameters.get("Package"), parameters.get("Version")) {
        (Some(package), Some(version)) => match outcome {
            ScriptOutcome::Upgrades => {
                for app in data.software.entry(computer).or_default().iter_mut() {
                    if app["Name"].as_str() == Some(package.as_str()) {
                        app["Version"] = json!(version);
                    }
                }
                ("Success", format!("{package} updated to {version}"))
            }
            ScriptOutcome::SilentlyFails => ("Success", format!("{package} updated to {version}")),
            ScriptOutcome::Fails => ("Failed", "installer exited with code 1603".to_string()),
        },
        _ => ("Success", "script ran".to_string()),
    };
    let id = data.schedules.len() as i64 + 9001;
    let mut schedule = body.clone();
    schedule["Id"] = json!(id);
    schedule["Status"] = json!(status);
    schedule["Output"] = json!(output);
    data.schedules.push(schedule.clone());
    let mut answer = schedule;
    if let Some(object) = answer.as_object_mut() {
        object.remove("Status");
        object.remove("Output");
    }
    axum::Json(answer).into_response()
}

async fn scheduled_script(
    State(data): State<Arc<Mutex<RmmData>>>,
    headers: HeaderMap,
    Path((computer, schedule)): Path<(i64, i64)>,
) -> Response {
    listing(&data, &headers, |data| {
        match data
            .schedules
            .iter()
            .find(|s| s["Id"] == schedule && s["ComputerId"] == computer)
        {
            Some(found) => axum::Json(found.clone()).into_response(),
            None => (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"Message": "Scheduled script was not found"})),
            )
                .into_response(),
        }
    })
}
