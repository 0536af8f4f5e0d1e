//! Fake upstreams of the two backup test connectors, on 127.0.0.1:
//!
//! - Acme Backup (`sdk/examples/backup`, the SDK's complete example): `GET /v1/devices?page=N` and
//!   `GET /v1/jobs?page=N` (`{"items": [...], "next_page": N|null}`, one item
//!   per page), `POST /v1/jobs/{id}/restore` and `GET /v1/storage?unit=`,
//!   all behind `Authorization: Bearer <ACME_KEY>`;
//! - Zenith Backup (`tests/components/backup-zenith`): `GET /api/backups`
//!   (a bare array) behind `X-Zenith-Key: <ZENITH_KEY>`.

use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Json;
use serde_json::{json, Value};

pub const ACME_KEY: &str = "acme-key-0000-secret";
pub const ZENITH_KEY: &str = "zenith-key-1111-secret";

pub struct FakeBackup {
    pub url: String,
    /// Restore requests received: (job id, body).
    pub restores: Arc<Mutex<Vec<(String, Value)>>>,
}

#[derive(Clone)]
struct Shared {
    devices: Vec<Value>,
    jobs: Vec<Value>,
    zenith: Vec<Value>,
    restores: Arc<Mutex<Vec<(String, Value)>>>,
}

/// Three Acme devices, four Acme jobs, two Zenith backups.
pub async fn start() -> FakeBackup {
    let state = Shared {
        devices: vec![
            json!({"id": "d-1", "hostname": "WS-01.corp.example", "os": "windows", "last_backup": "2026-11-20T10:00:00Z"}),
            json!({"id": "d-2", "hostname": "LAPTOP-ÉCOLE", "os": "macos"}),
            json!({"id": "d-3", "hostname": "VERY-LONG-WORKSTATION-NAME-01", "os": "linux"}),
        ],
        jobs: vec![
            json!({"id": "j-1", "device_id": "d-1", "hostname": "WS-01.corp.example", "state": "succeeded", "ended": "2026-11-20T10:00:00Z", "bytes": 1200, "encrypted": true}),
            json!({"id": "j-2", "device_id": "d-1", "hostname": "WS-01.corp.example", "state": "Failed", "ended": "2026-11-21T10:00:00Z", "bytes": 0, "encrypted": false}),
            json!({"id": "j-3", "device_id": "d-2", "hostname": "LAPTOP-ÉCOLE", "state": "failed", "ended": "2026-11-21T11:00:00Z", "bytes": 10, "encrypted": true}),
            json!({"id": "j-4", "device_id": "d-3", "hostname": "VERY-LONG-WORKSTATION-NAME-01", "state": "succeeded", "bytes": 99}),
        ],
        zenith: vec![
            json!({"uuid": "z-1", "machine": "SRV-01", "result": "ok"}),
            json!({"uuid": "z-2", "machine": "SRV-02", "result": "error"}),
        ],
        restores: Arc::default(),
    };
    let restores = state.restores.clone();
    let app = axum::Router::new()
        .route("/v1/devices", get(devices))
        .route("/v1/jobs", get(jobs))
        .route("/v1/jobs/{id}/restore", post(restore))
        .route("/v1/storage", get(storage))
        .route("/api/backups", get(zenith))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    FakeBackup {
        url: format!("http://{addr}"),
        restores,
    }
}

fn acme_authorized(headers: &HeaderMap) -> bool {
    headers.get("authorization").and_then(|v| v.to_str().ok())
        == Some(format!("Bearer {ACME_KEY}").as_str())
}

#[derive(serde::Deserialize)]
struct PageQuery {
    page: Option<usize>,
}

fn page(items: &[Value], headers: &HeaderMap, query: PageQuery) -> Response {
    if !acme_authorized(headers) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": "bad key"}))).into_response();
    }
    let page = query.page.unwrap_or(1).max(1);
    let item: Vec<Value> = items.get(page - 1).cloned().into_iter().collect();
    let next = (page < items.len()).then_some(page + 1);
    Json(json!({"items": item, "next_page": next})).into_response()
}

async fn devices(
    State(s): State<Shared>,
    headers: HeaderMap,
    Query(q): Query<PageQuery>,
) -> Response {
    page(&s.devices, &headers, q)
}

async fn jobs(State(s): State<Shared>, headers: HeaderMap, Query(q): Query<PageQuery>) -> Response {
    page(&s.jobs, &headers, q)
}

async fn restore(
    State(s): State<Shared>,
    headers: HeaderMap,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Response {
    if !acme_authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    if !s.jobs.iter().any(|j| j["id"] == id.as_str()) {
        return (StatusCode::NOT_FOUND, Json(json!({"error": "no such job"}))).into_response();
    }
    s.restores.lock().unwrap().push((id.clone(), body));
    (
        StatusCode::CREATED,
        Json(json!({"restore_id": format!("r-{id}"), "status": "queued"})),
    )
        .into_response()
}

#[derive(serde::Deserialize)]
struct UnitQuery {
    unit: String,
}

async fn storage(headers: HeaderMap, Query(q): Query<UnitQuery>) -> Response {
    if !acme_authorized(&headers) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    let used = if q.unit == "gib" {
        json!(1.5)
    } else {
        json!(1_610_612_736u64)
    };
    Json(json!({"used": used, "unit": q.unit})).into_response()
}

async fn zenith(State(s): State<Shared>, headers: HeaderMap) -> Response {
    if headers.get("x-zenith-key").and_then(|v| v.to_str().ok()) != Some(ZENITH_KEY) {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    Json(Value::Array(s.zenith.clone())).into_response()
}
