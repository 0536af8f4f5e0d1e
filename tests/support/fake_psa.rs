//! A fake ConnectWise PSA (REST API v3) on 127.0.0.1, built from the
//! fixtures' shapes: HTTP Basic as `company+public:private` and a
//! mandatory `clientId` header; bare JSON arrays paged by `page` and
//! `pageSize` (at most 1,000) with a `Link` header; `conditions` parsed
//! for `=`, `>`, `like` and `and` over quoted strings, bracketed dates,
//! numbers and booleans; 201 on create; JSON Patch applied; a 400 with the
//! `errors` array; on request, one 500.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use base64::Engine;
use serde_json::{json, Value};

pub const COMPANY: &str = "msp_co";
pub const PUBLIC_KEY: &str = "pubKey9f2";
pub const PRIVATE_KEY: &str = "Priv-Key-71c4-secret";
pub const CLIENT_ID: &str = "3f8a2b1c-0d4e-4f5a-9b6c-7d8e9f0a1b2c";

const API: &str = "/v4_6_release/apis/3.0";

fn fixture(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/psa")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(path).expect("a psa fixture")).unwrap()
}

/// The fixture ticket with another id, summary, board and company.
pub fn ticket(
    id: u64,
    summary: &str,
    board: (u64, &str),
    company: (u64, &str),
    updated: &str,
) -> Value {
    let mut ticket = fixture("connectwise_service_ticket.json");
    ticket["id"] = json!(id);
    ticket["summary"] = json!(summary);
    ticket["board"] = json!({"id": board.0, "name": board.1});
    ticket["company"] = json!({"id": company.0, "identifier": company.1, "name": company.1});
    ticket["closedFlag"] = json!(false);
    ticket["_info"]["lastUpdated"] = json!(updated);
    ticket
}

/// `count` tickets on `board` from id `first`, spread over three companies,
/// every seventh closed, each with `notes` notes, shaped as ConnectWise
/// answers a list (references, not expanded members). Ticket `first + 1`'s
/// summary is a spreadsheet formula.
pub fn board(
    board: (u64, &str),
    first: u64,
    count: u64,
    notes: usize,
) -> (Vec<Value>, HashMap<u64, Vec<Value>>) {
    let companies = [
        (19298, "Acme Dental"),
        (19299, "Globex"),
        (19300, "Initech"),
    ];
    let mut tickets = Vec::with_capacity(count as usize);
    let mut notes_of = HashMap::with_capacity(count as usize);
    for n in 0..count {
        let id = first + n;
        let summary = if n == 1 {
            "=HYPERLINK(\"http://evil.example\",\"click\")".to_string()
        } else {
            format!("Workstation {n} cannot reach the file share")
        };
        let mut ticket = ticket(
            id,
            &summary,
            board,
            companies[(n % 3) as usize],
            "2026-11-20T08:00:00Z",
        );
        ticket["owner"] = json!({"id": 176, "identifier": "User1", "name": "Training User1"});
        ticket["closedFlag"] = json!(n % 7 == 0);
        tickets.push(ticket);
        let of_ticket = (0..notes)
            .map(|k| {
                json!({"id": id * 10 + k as u64, "ticketId": id,
                       "text": format!("Step {k}: checked the share permissions on workstation {n}"),
                       "detailDescriptionFlag": k == 0, "internalAnalysisFlag": k == 1,
                       "resolutionFlag": k == 3,
                       "member": {"id": 176, "identifier": "User1", "name": "Training User1"},
                       "dateCreated": "2026-11-20T08:00:00Z", "createdBy": "User1"})
            })
            .collect();
        notes_of.insert(id, of_ticket);
    }
    (tickets, notes_of)
}

pub struct PsaData {
    pub companies: Vec<Value>,
    pub boards: Vec<Value>,
    pub priorities: Vec<Value>,
    pub tickets: Vec<Value>,
    /// Notes by ticket id.
    pub notes: HashMap<u64, Vec<Value>>,
    /// (ticket id, configuration)
    pub ticket_configurations: Vec<(u64, Value)>,
    pub configurations: Vec<Value>,
    pub time_entries: Vec<Value>,
    pub schedule_entries: Vec<Value>,
    /// The next request to this path (after the API prefix) answers 500.
    pub fail_once: Option<String>,
    /// Ticket list requests for this page or a later one wait until it is
    /// cleared (a test kills the service meanwhile).
    pub hold_from_page: Option<usize>,
    /// Requests waiting on `hold_from_page` so far.
    pub held: usize,
    /// Every request: method, path and query.
    pub requests: Vec<(String, String, String)>,
    /// The body of every ticket created (what ConnectWise keeps but does
    /// not answer, such as `initialDescription`).
    pub created_tickets: Vec<Value>,
    /// The id the next created object gets, less one.
    pub next_id: u64,
}

impl Default for PsaData {
    fn default() -> PsaData {
        PsaData {
            companies: fixture("connectwise_companies.json")
                .as_array()
                .cloned()
                .unwrap_or_default(),
            boards: fixture("connectwise_boards.json")
                .as_array()
                .cloned()
                .unwrap_or_default(),
            priorities: fixture("connectwise_priorities.json")
                .as_array()
                .cloned()
                .unwrap_or_default(),
            tickets: vec![],
            notes: HashMap::new(),
            ticket_configurations: vec![],
            configurations: vec![],
            time_entries: vec![],
            schedule_entries: vec![],
            fail_once: None,
            hold_from_page: None,
            held: 0,
            requests: vec![],
            created_tickets: vec![],
            next_id: 10_000,
        }
    }
}

pub struct FakePsa {
    pub site: String,
    pub data: Arc<Mutex<PsaData>>,
}

#[derive(Clone)]
struct Shared {
    site: String,
    data: Arc<Mutex<PsaData>>,
}

impl FakePsa {
    pub async fn start(data: PsaData) -> FakePsa {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let site = format!("http://{}", listener.local_addr().unwrap());
        let data = Arc::new(Mutex::new(data));
        let shared = Shared {
            site: site.clone(),
            data: data.clone(),
        };
        let app = axum::Router::new()
            .route(&format!("{API}/{{*path}}"), any(handle))
            .with_state(shared);
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakePsa { site, data }
    }
}

fn error(status: StatusCode, code: &str, message: &str, errors: Value) -> Response {
    let mut body = json!({"code": code, "message": message});
    if !errors.is_null() {
        body["errors"] = errors;
    }
    (status, axum::Json(body)).into_response()
}

/// `a/b` of a JSON object.
fn at<'a>(value: &'a Value, path: &str) -> &'a Value {
    path.split('/').fold(value, |v, key| &v[key])
}

/// Splits on ` and ` outside double quotes.
fn clauses(conditions: &str) -> Vec<String> {
    let mut out = vec![];
    let mut current = String::new();
    let mut quoted = false;
    let mut rest = conditions;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            quoted = !quoted;
        }
        if !quoted && rest.starts_with(" and ") {
            out.push(std::mem::take(&mut current));
            rest = &rest[5..];
            continue;
        }
        current.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.push(current);
    out
}

fn literal(raw: &str) -> Value {
    let raw = raw.trim();
    if let Some(text) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        return json!(text.replace("\\\"", "\""));
    }
    if let Some(date) = raw.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
        return json!(date);
    }
    match raw {
        "true" => json!(true),
        "false" => json!(false),
        _ => raw.parse::<f64>().map(|n| json!(n)).unwrap_or(Value::Null),
    }
}

/// Whether `item` satisfies every clause; an unparsable clause is a 400.
fn matches(item: &Value, conditions: &str) -> Result<bool, String> {
    for clause in clauses(conditions) {
        let clause = clause.trim();
        let (field, op, value) = if let Some((f, v)) = clause.split_once(" like ") {
            (f.trim(), "like", literal(v))
        } else if let Some((f, v)) = clause.split_once(" > ") {
            (f.trim(), ">", literal(v))
        } else if let Some((f, v)) = clause.split_once('=') {
            (f.trim(), "=", literal(v))
        } else {
            return Err(format!("cannot parse condition {clause}"));
        };
        if value.is_null() {
            return Err(format!("cannot parse the value of {clause}"));
        }
        let actual = if field == "lastUpdated" {
            at(item, "_info/lastUpdated")
        } else {
            at(item, field)
        };
        let ok = match op {
            "like" => {
                let pattern = value.as_str().unwrap_or("").to_lowercase();
                let text = actual.as_str().unwrap_or("").to_lowercase();
                let inner = pattern.trim_matches('%');
                text.contains(inner)
            }
            ">" => actual.as_str().unwrap_or("") > value.as_str().unwrap_or(""),
            _ => match (&value, actual) {
                (Value::Number(n), a) => a.as_f64() == n.as_f64(),
                (v, a) => {
                    a.as_str().map(str::to_lowercase) == v.as_str().map(str::to_lowercase)
                        && !a.is_null()
                        || a == v
                }
            },
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn paged(shared: &Shared, uri: &Uri, query: &HashMap<String, String>, items: &[Value]) -> Response {
    let mut items: Vec<&Value> = items.iter().collect();
    if let Some(conditions) = query.get("conditions") {
        let mut kept = vec![];
        for item in items {
            match matches(item, conditions) {
                Ok(true) => kept.push(item),
                Ok(false) => {}
                Err(message) => {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "InvalidObject",
                        &message,
                        Value::Null,
                    )
                }
            }
        }
        items = kept;
    }
    if let Some(order) = query.get("orderBy") {
        let mut parts = order.split_whitespace();
        let field = parts.next().unwrap_or("id").to_string();
        let descending = parts.next() == Some("desc");
        items.sort_by_cached_key(|v| {
            let v = if field == "lastUpdated" {
                at(v, "_info/lastUpdated")
            } else {
                at(v, &field)
            };
            v.as_f64()
                .map(|n| format!("{n:020.3}"))
                .unwrap_or_else(|| v.to_string())
        });
        if descending {
            items.reverse();
        }
    }
    let size: usize = query
        .get("pageSize")
        .and_then(|s| s.parse().ok())
        .unwrap_or(25);
    if size > 1000 {
        return error(
            StatusCode::BAD_REQUEST,
            "InvalidObject",
            "pageSize may be at most 1000",
            Value::Null,
        );
    }
    let page: usize = query
        .get("page")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    let last = items.len().div_ceil(size).max(1);
    let slice: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * size)
        .take(size)
        .cloned()
        .collect();
    let link_to = |n: usize| {
        let mut pairs: Vec<String> = query
            .iter()
            .filter(|(k, _)| *k != "page")
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect();
        pairs.sort();
        pairs.push(format!("page={n}"));
        format!("<{}{}?{}>", shared.site, uri.path(), pairs.join("&"))
    };
    let mut links = vec![];
    if page < last {
        links.push(format!("{}; rel=\"next\"", link_to(page + 1)));
    }
    links.push(format!("{}; rel=\"last\"", link_to(last)));
    (
        StatusCode::OK,
        [("link", links.join(", "))],
        axum::Json(Value::Array(slice)),
    )
        .into_response()
}

async fn handle(
    State(shared): State<Shared>,
    Path(path): Path<String>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
    body: axum::body::Bytes,
) -> Response {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD
            .encode(format!("{COMPANY}+{PUBLIC_KEY}:{PRIVATE_KEY}"))
    );
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(expected.as_str()) {
        return error(
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "UserNotAuthenticated",
            Value::Null,
        );
    }
    let client_id = headers
        .iter()
        .find(|(name, _)| name.as_str().eq_ignore_ascii_case("clientid"))
        .and_then(|(_, v)| v.to_str().ok());
    if client_id != Some(CLIENT_ID) {
        return error(
            StatusCode::UNAUTHORIZED,
            "ConnectWiseApi",
            "clientId is missing or unknown",
            Value::Null,
        );
    }
    let page: usize = query.get("page").and_then(|p| p.parse().ok()).unwrap_or(1);
    let mut counted = false;
    while path == "service/tickets"
        && method == Method::GET
        && shared
            .data
            .lock()
            .unwrap()
            .hold_from_page
            .is_some_and(|from| page >= from)
    {
        if !counted {
            shared.data.lock().unwrap().held += 1;
            counted = true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mut data = shared.data.lock().unwrap();
    data.requests.push((
        method.to_string(),
        path.clone(),
        uri.query().unwrap_or("").to_string(),
    ));
    if data.fail_once.as_deref() == Some(path.as_str()) {
        data.fail_once = None;
        return error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "ServerError",
            "An unexpected error occurred",
            Value::Null,
        );
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let ticket_of = |data: &PsaData, id: &str| {
        data.tickets
            .iter()
            .position(|t| t["id"].as_u64().map(|n| n.to_string()).as_deref() == Some(id))
    };
    match (method.as_str(), segments.as_slice()) {
        ("GET", ["system", "info"]) => {
            axum::Json(json!({"version": "v2025.1.12345", "isCloud": true, "cloudRegion": "NA"}))
                .into_response()
        }
        ("GET", ["company", "companies"]) => paged(&shared, &uri, &query, &data.companies),
        ("GET", ["service", "boards"]) => paged(&shared, &uri, &query, &data.boards),
        ("GET", ["service", "priorities"]) => paged(&shared, &uri, &query, &data.priorities),
        ("GET", ["service", "tickets"]) => paged(&shared, &uri, &query, &data.tickets),
        ("POST", ["service", "tickets"]) => {
            let summary = body["summary"].as_str().unwrap_or("");
            let mut errors = vec![];
            if summary.is_empty() {
                errors.push(json!({"code": "Required", "message": "The summary field is required.", "resource": "ticket", "field": "summary"}));
            } else if summary.chars().count() > 100 {
                errors.push(json!({"code": "InvalidField", "message": "The summary field must be at most 100 characters.", "resource": "ticket", "field": "summary"}));
            }
            let company = body["company"]["id"].as_u64();
            if !data.companies.iter().any(|c| c["id"].as_u64() == company) {
                errors.push(json!({"code": "InvalidObject", "message": "company object is invalid", "resource": "ticket", "field": "company"}));
            }
            if !errors.is_empty() {
                return error(
                    StatusCode::BAD_REQUEST,
                    "InvalidObject",
                    "ticket object is invalid",
                    json!(errors),
                );
            }
            data.next_id += 1;
            let id = data.next_id;
            data.created_tickets.push(body.clone());
            let name = data
                .companies
                .iter()
                .find(|c| c["id"].as_u64() == company)
                .and_then(|c| c["name"].as_str())
                .unwrap_or("")
                .to_string();
            let board = body["board"]["id"].as_u64().unwrap_or(1);
            let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
            let mut created = ticket(
                id,
                summary,
                (board, "Service A"),
                (company.unwrap_or(0), &name),
                &now,
            );
            if let Some(priority) = body["priority"]["id"].as_u64() {
                created["priority"] = json!({"id": priority});
            }
            data.tickets.push(created.clone());
            (StatusCode::CREATED, axum::Json(created)).into_response()
        }
        ("GET", ["service", "tickets", id]) => match ticket_of(&data, id) {
            Some(i) => axum::Json(data.tickets[i].clone()).into_response(),
            None => error(
                StatusCode::NOT_FOUND,
                "NotFound",
                "Ticket not found",
                Value::Null,
            ),
        },
        ("PATCH", ["service", "tickets", id]) => {
            let Some(i) = ticket_of(&data, id) else {
                return error(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    "Ticket not found",
                    Value::Null,
                );
            };
            let Some(operations) = body.as_array() else {
                return error(
                    StatusCode::BAD_REQUEST,
                    "InvalidObject",
                    "a JSON Patch array is expected",
                    Value::Null,
                );
            };
            for op in operations {
                let field = op["path"].as_str().unwrap_or("");
                if field.starts_with('/') || field.is_empty() {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "InvalidObject",
                        "invalid patch path",
                        json!([{"code": "InvalidField", "message": format!("{field} is not a field"), "field": field}]),
                    );
                }
                match op["op"].as_str() {
                    Some("replace") | Some("add") => data.tickets[i][field] = op["value"].clone(),
                    Some("remove") => {
                        if let Some(obj) = data.tickets[i].as_object_mut() {
                            obj.remove(field);
                        }
                    }
                    _ => {
                        return error(
                            StatusCode::BAD_REQUEST,
                            "InvalidObject",
                            "unknown op",
                            Value::Null,
                        )
                    }
                }
            }
            axum::Json(data.tickets[i].clone()).into_response()
        }
        ("GET", ["service", "tickets", id, "notes"]) => {
            let notes = id.parse().ok().and_then(|id| data.notes.get(&id));
            paged(&shared, &uri, &query, notes.map_or(&[][..], Vec::as_slice))
        }
        ("POST", ["service", "tickets", id, "notes"]) => {
            if ticket_of(&data, id).is_none() {
                return error(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    "Ticket not found",
                    Value::Null,
                );
            }
            data.next_id += 1;
            let mut note = body.clone();
            note["id"] = json!(data.next_id);
            note["ticketId"] = json!(id.parse::<u64>().unwrap_or(0));
            let ticket: u64 = id.parse().unwrap_or(0);
            data.notes.entry(ticket).or_default().push(note.clone());
            (StatusCode::CREATED, axum::Json(note)).into_response()
        }
        ("GET", ["service", "tickets", id, "configurations"]) => {
            let linked: Vec<Value> = data
                .ticket_configurations
                .iter()
                .filter(|(t, _)| t.to_string() == *id)
                .map(|(_, c)| c.clone())
                .collect();
            paged(&shared, &uri, &query, &linked)
        }
        ("POST", ["service", "tickets", id, "configurations"]) => {
            let wanted = body["id"].as_u64();
            let Some(configuration) = data
                .configurations
                .iter()
                .find(|c| c["id"].as_u64() == wanted)
                .cloned()
            else {
                return error(
                    StatusCode::BAD_REQUEST,
                    "InvalidObject",
                    "configuration object is invalid",
                    json!([{"code": "InvalidObject", "message": "The configuration does not exist.", "field": "id"}]),
                );
            };
            let reference =
                json!({"id": configuration["id"], "deviceIdentifier": configuration["name"]});
            data.ticket_configurations
                .push((id.parse().unwrap_or(0), reference.clone()));
            (StatusCode::CREATED, axum::Json(reference)).into_response()
        }
        ("DELETE", ["service", "tickets", id, "configurations", configuration]) => {
            let before = data.ticket_configurations.len();
            data.ticket_configurations.retain(|(t, c)| {
                !(Some(*t) == id.parse().ok() && c["id"].as_u64() == configuration.parse().ok())
            });
            if data.ticket_configurations.len() == before {
                return error(
                    StatusCode::NOT_FOUND,
                    "NotFound",
                    "Configuration not linked",
                    Value::Null,
                );
            }
            StatusCode::NO_CONTENT.into_response()
        }
        ("GET", ["time", "entries"]) => paged(&shared, &uri, &query, &data.time_entries),
        ("POST", ["time", "entries"]) => {
            if body["timeStart"].as_str().is_none() {
                return error(
                    StatusCode::BAD_REQUEST,
                    "InvalidObject",
                    "timeEntry object is invalid",
                    json!([{"code": "Required", "message": "The timeStart field is required.", "field": "timeStart"}]),
                );
            }
            data.next_id += 1;
            let mut entry = body.clone();
            entry["id"] = json!(data.next_id);
            data.time_entries.push(entry.clone());
            (StatusCode::CREATED, axum::Json(entry)).into_response()
        }
        ("GET", ["schedule", "entries"]) => paged(&shared, &uri, &query, &data.schedule_entries),
        ("GET", ["company", "configurations"]) => {
            paged(&shared, &uri, &query, &data.configurations)
        }
        _ => error(
            StatusCode::NOT_FOUND,
            "NotFound",
            "no such resource",
            Value::Null,
        ),
    }
}
