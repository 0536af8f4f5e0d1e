//! A fake Tenable Vulnerability Management export API on 127.0.0.1:
//! `POST /vulns/export` (a 409 naming the active export while one runs),
//! `GET /vulns/export/{uuid}/status` where each poll makes one more chunk
//! available while the export is PROCESSING and it is FINISHED once all
//! are, `GET /vulns/export/{uuid}/chunks/{n}` (bare JSON arrays; a chosen
//! chunk fails once with a 500), and `GET /vulns/export/status`. Requests
//! must carry `X-ApiKeys: accessKey=...;secretKey=...` (a space after the
//! semicolon is accepted too).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{json, Value};

pub const ACCESS_KEY: &str = "tio-access-4b2f0c7d9e1a";
pub const SECRET_KEY: &str = "tio-secret-8c1d5e3f7a90";

#[derive(Default)]
pub struct TenableData {
    /// The findings of each chunk an export serves, chunk 1 first.
    pub chunks: Vec<Vec<Value>>,
    /// The latest export, and how many of its chunks are available; it
    /// runs until a poll finds every chunk available.
    pub active: Option<(String, usize)>,
    pub finished: bool,
    /// The export never makes a chunk available (it stays PROCESSING).
    pub stuck: bool,
    /// Chunk numbers whose next download fails with a 500.
    pub fail_chunk_once: Vec<usize>,
    /// Chunk downloads from this number on wait until it is cleared (a
    /// crash test kills the service while one waits).
    pub hold_from_chunk: Option<usize>,
    pub held: u32,
    pub exports_started: u32,
    pub conflicts: u32,
    pub polls: u32,
    pub chunk_downloads: HashMap<usize, u32>,
}

pub struct FakeTenable {
    pub base_url: String,
    pub data: Arc<Mutex<TenableData>>,
}

type Shared = Arc<Mutex<TenableData>>;

impl FakeTenable {
    pub async fn start(data: TenableData) -> FakeTenable {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let data = Arc::new(Mutex::new(data));
        let app = axum::Router::new()
            .route("/vulns/export", post(start_export))
            .route("/vulns/export/status", get(exports))
            .route("/vulns/export/{uuid}/status", get(status))
            .route("/vulns/export/{uuid}/chunks/{chunk}", get(chunk))
            .with_state(data.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeTenable { base_url, data }
    }
}

fn refused(headers: &HeaderMap) -> Option<Response> {
    let keys = headers
        .get("x-apikeys")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .replace("; ", ";");
    (keys != format!("accessKey={ACCESS_KEY};secretKey={SECRET_KEY}")).then(|| {
        (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"statusCode": 401, "error": "Unauthorized", "message": "Invalid Credentials"})),
        )
            .into_response()
    })
}

async fn start_export(State(data): State<Shared>, headers: HeaderMap, body: String) -> Response {
    if let Some(refusal) = refused(&headers) {
        return refusal;
    }
    let request: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    if !request["num_assets"].is_u64() {
        return (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"statusCode": 400, "error": "Bad Request", "message": "num_assets is required"})),
        )
            .into_response();
    }
    let mut data = data.lock().unwrap();
    if let Some((uuid, _)) = data.active.as_ref().filter(|_| !data.finished) {
        let uuid = uuid.clone();
        data.conflicts += 1;
        return (
            StatusCode::CONFLICT,
            axum::Json(json!({"active_job_id": uuid,
                "failure_reason": "Duplicate export not allowed. Please modify request or wait until existing export is complete."})),
        )
            .into_response();
    }
    data.exports_started += 1;
    let uuid = uuid::Uuid::new_v4().to_string();
    data.active = Some((uuid.clone(), 0));
    data.finished = false;
    axum::Json(json!({"export_uuid": uuid})).into_response()
}

async fn exports(headers: HeaderMap) -> Response {
    if let Some(refusal) = refused(&headers) {
        return refusal;
    }
    axum::Json(json!({"exports": []})).into_response()
}

async fn status(
    State(data): State<Shared>,
    headers: HeaderMap,
    Path(uuid): Path<String>,
) -> Response {
    if let Some(refusal) = refused(&headers) {
        return refusal;
    }
    let mut data = data.lock().unwrap();
    data.polls += 1;
    let total = data.chunks.len();
    let stuck = data.stuck;
    let Some((active, available)) = data.active.as_mut().filter(|(id, _)| *id == uuid) else {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(
                json!({"statusCode": 404, "error": "Not Found", "message": "export not found"}),
            ),
        )
            .into_response();
    };
    let _ = active;
    // One more chunk each poll, while processing.
    if !stuck {
        *available = (*available + 1).min(total);
    }
    let available = *available;
    let finished = available == total;
    data.finished = finished;
    axum::Json(json!({
        "uuid": uuid, "status": if finished { "FINISHED" } else { "PROCESSING" },
        "chunks_available": (1..=available).collect::<Vec<_>>(),
        "chunks_failed": [], "chunks_cancelled": [],
        "total_chunks": if finished { total } else { 0 },
        "chunks_available_count": available, "empty_chunks_count": 0,
        "finished_chunks": available, "num_assets_per_chunk": 50, "created": 1_764_000_000_000i64
    }))
    .into_response()
}

async fn chunk(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Path((uuid, chunk)): Path<(String, usize)>,
) -> Response {
    if let Some(refusal) = refused(&headers) {
        return refusal;
    }
    let hold = {
        let mut data = shared.lock().unwrap();
        let available = match &data.active {
            Some((id, available)) if *id == uuid => *available,
            _ => 0,
        };
        if chunk == 0 || chunk > available {
            return (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"statusCode": 404, "error": "Not Found", "message": "chunk not available"})),
            )
                .into_response();
        }
        *data.chunk_downloads.entry(chunk).or_default() += 1;
        let hold = data.hold_from_chunk.is_some_and(|from| chunk >= from);
        if hold {
            data.held += 1;
        }
        hold
    };
    while hold && shared.lock().unwrap().hold_from_chunk.is_some() {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mut data = shared.lock().unwrap();
    if let Some(at) = data.fail_chunk_once.iter().position(|c| *c == chunk) {
        data.fail_chunk_once.remove(at);
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            axum::Json(json!({"statusCode": 500, "error": "Internal Server Error", "message": "chunk read failed"})),
        )
            .into_response();
    }
    axum::Json(Value::Array(data.chunks[chunk - 1].clone())).into_response()
}
