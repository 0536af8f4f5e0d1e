//! A fake SentinelOne Management API v2.1 on 127.0.0.1: `GET /agents` and
//! `GET /threats` paged by `pagination.nextCursor` (null on the last page,
//! `limit` capped at 1000), `GET /agents/applications?ids=` (one agent's
//! applications, no pagination, as the real answer), `Authorization:
//! ApiToken <token>` checked with SentinelOne's 401 error body, and on
//! request one 429 with `Retry-After` on the first agents page.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{json, Value};

pub const API_TOKEN: &str = "s1-api-token-7f3c9b1e4d2a";

#[derive(Default)]
pub struct SentinelOneData {
    pub agents: Vec<Value>,
    /// Installed applications by agent id.
    pub apps: HashMap<String, Vec<Value>>,
    pub threats: Vec<Value>,
    /// The first agents page answers 429 once.
    pub throttle_once: bool,
    pub throttled: u32,
    pub requests: u32,
}

pub struct FakeSentinelOne {
    pub base_url: String,
    pub data: Arc<Mutex<SentinelOneData>>,
}

type Shared = Arc<Mutex<SentinelOneData>>;

impl FakeSentinelOne {
    pub async fn start(data: SentinelOneData) -> FakeSentinelOne {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let data = Arc::new(Mutex::new(data));
        let app = axum::Router::new()
            .route("/web/api/v2.1/agents", get(agents))
            .route("/web/api/v2.1/threats", get(threats))
            .route("/web/api/v2.1/agents/applications", get(applications))
            .with_state(data.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeSentinelOne { base_url, data }
    }
}

fn unauthorized(headers: &HeaderMap) -> Option<Response> {
    let expected = format!("ApiToken {API_TOKEN}");
    let given = headers.get("authorization").and_then(|v| v.to_str().ok());
    (given != Some(expected.as_str())).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"errors": [{"code": 4010010, "detail": null, "title": "Authentication Failed"}]})),
        )
            .into_response()
    })
}

/// The page of `items` at `cursor` (`c-<offset>`), `limit` at most 1000.
fn page(items: &[Value], query: &HashMap<String, String>) -> Response {
    let limit: usize = query
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(10);
    if !(1..=1000).contains(&limit) {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"errors": [{"code": 4000010, "detail": "limit must be 1-1000", "title": "Validation Error"}]})),
        )
            .into_response();
    }
    let offset: usize = query
        .get("cursor")
        .and_then(|c| c.strip_prefix("c-"))
        .and_then(|o| o.parse().ok())
        .unwrap_or(0);
    let data: Vec<&Value> = items.iter().skip(offset).take(limit).collect();
    let next = (offset + limit < items.len()).then(|| format!("c-{}", offset + limit));
    axum::Json(json!({"data": data, "pagination": {"totalItems": items.len(), "nextCursor": next}, "errors": null}))
        .into_response()
}

async fn agents(
    State(data): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refusal) = unauthorized(&headers) {
        return refusal;
    }
    let mut data = data.lock().unwrap();
    data.requests += 1;
    if data.throttle_once
        && !query.contains_key("cursor")
        && query.get("limit").map(String::as_str) != Some("1")
    {
        data.throttle_once = false;
        data.throttled += 1;
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("Retry-After", "1")],
            axum::Json(json!({"errors": [{"code": 4290010, "detail": null, "title": "Too Many Requests"}]})),
        )
            .into_response();
    }
    page(&data.agents, &query)
}

async fn threats(
    State(data): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refusal) = unauthorized(&headers) {
        return refusal;
    }
    let mut data = data.lock().unwrap();
    data.requests += 1;
    page(&data.threats, &query)
}

async fn applications(
    State(data): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if let Some(refusal) = unauthorized(&headers) {
        return refusal;
    }
    let mut data = data.lock().unwrap();
    data.requests += 1;
    // Several ids answer one list with no agent on its items.
    let apps: Vec<Value> = query
        .get("ids")
        .map(|ids| ids.split(',').collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .flat_map(|id| data.apps.get(id).cloned().unwrap_or_default())
        .collect();
    axum::Json(json!({"data": apps, "pagination": {"totalItems": apps.len()}})).into_response()
}
