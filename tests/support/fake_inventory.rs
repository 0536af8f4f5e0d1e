//! A fake upstream for the test connector (`tests/components/misbehave`):
//! `GET /devices?page=N` pages through devices, two per page, and answers
//! 401 unless `X-Api-Token` is the expected token.

use std::sync::atomic::{AtomicUsize, Ordering};
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
    state: Shared,
}

#[derive(Clone, Default)]
struct Shared {
    devices: Arc<Mutex<Vec<Value>>>,
    /// Pages from this one on wait for `release`.
    hold_from: Arc<Mutex<Option<usize>>>,
    release: Arc<tokio::sync::Notify>,
    held: Arc<AtomicUsize>,
}

impl FakeInventory {
    /// Serves `devices` (each `{id, name, apps: [{name, version}]}`).
    pub async fn start(devices: Vec<Value>) -> FakeInventory {
        let state = Shared {
            devices: Arc::new(Mutex::new(devices)),
            ..Shared::default()
        };
        let app = axum::Router::new()
            .route("/devices", get(list_devices))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeInventory {
            url: format!("http://{addr}"),
            state,
        }
    }

    pub fn set_devices(&self, devices: Vec<Value>) {
        *self.state.devices.lock().unwrap() = devices;
    }

    /// Requests for `page` and later ones wait until [`Self::release`].
    pub fn hold_from_page(&self, page: usize) {
        *self.state.hold_from.lock().unwrap() = Some(page);
    }

    /// How many requests are waiting on the hold.
    pub fn held(&self) -> usize {
        self.state.held.load(Ordering::SeqCst)
    }

    pub fn release(&self) {
        *self.state.hold_from.lock().unwrap() = None;
        self.state.release.notify_waiters();
    }
}

#[derive(serde::Deserialize)]
struct PageQuery {
    page: Option<usize>,
}

async fn list_devices(
    State(state): State<Shared>,
    headers: HeaderMap,
    Query(query): Query<PageQuery>,
) -> Response {
    let page = query.page.unwrap_or(1).max(1);
    let held = *state.hold_from.lock().unwrap();
    if held.is_some_and(|from| page >= from) {
        let released = state.release.notified();
        state.held.fetch_add(1, Ordering::SeqCst);
        released.await;
        state.held.fetch_sub(1, Ordering::SeqCst);
    }
    if headers.get("x-api-token").and_then(|v| v.to_str().ok()) != Some(TOKEN) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": "bad token"})),
        )
            .into_response();
    }
    let devices = state.devices.lock().unwrap().clone();
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
