//! A fake upstream for the test connector (`tests/components/misbehave`):
//! `GET /devices?page=N` pages through devices, two per page, and answers
//! 401 unless `X-Api-Token` is the expected token.

use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{json, Value};

pub const TOKEN: &str = "test-token-5up3r-secret";

#[derive(Clone)]
pub struct FakeInventory {
    pub url: String,
    devices: Arc<Mutex<Vec<Value>>>,
}

impl FakeInventory {
    /// Serves `devices` (each `{id, name, apps: [{name, version}]}`).
    pub async fn start(devices: Vec<Value>) -> FakeInventory {
        let devices = Arc::new(Mutex::new(devices));
        let app = axum::Router::new()
            .route("/devices", get(list_devices))
            .with_state(devices.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeInventory {
            url: format!("http://{addr}"),
            devices,
        }
    }

    pub fn set_devices(&self, devices: Vec<Value>) {
        *self.devices.lock().unwrap() = devices;
    }
}

#[derive(serde::Deserialize)]
struct PageQuery {
    page: Option<usize>,
}

async fn list_devices(
    State(devices): State<Arc<Mutex<Vec<Value>>>>,
    headers: HeaderMap,
    Query(query): Query<PageQuery>,
) -> Response {
    if headers.get("x-api-token").and_then(|v| v.to_str().ok()) != Some(TOKEN) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "bad token"})),
        )
            .into_response();
    }
    let devices = devices.lock().unwrap().clone();
    let page = query.page.unwrap_or(1).max(1);
    let items: Vec<Value> = devices
        .iter()
        .skip((page - 1) * 2)
        .take(2)
        .cloned()
        .collect();
    let has_more = devices.len() > page * 2;
    axum::Json(json!({"items": items, "has_more": has_more})).into_response()
}

/// A device with some apps.
pub fn device(id: &str, name: &str, apps: &[(&str, &str)]) -> Value {
    json!({
        "id": id,
        "name": name,
        "apps": apps.iter().map(|(n, v)| json!({"name": n, "version": v})).collect::<Vec<_>>(),
    })
}
