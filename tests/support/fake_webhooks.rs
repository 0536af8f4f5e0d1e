//! Webhook receivers on 127.0.0.1: one for Cairn's own signed body (it
//! checks `X-Cairn-Signature` as a receiver would: HMAC-SHA256 of
//! `"<t>.<body>"` under the shared secret), one shaped as a Slack incoming
//! webhook (`{"text": ...}`, answering `ok`, or 400 `no_text` /
//! `invalid_payload` as Slack does), one as a Microsoft Teams incoming
//! webhook (a `message` with an Adaptive Card attachment, answering 202).
//! Each keeps what it received; the first `fail_first` posts to `/json`
//! answer 500.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

/// One post received.
#[derive(Debug, Clone)]
pub struct Received {
    /// `json`, `slack` or `teams`.
    pub receiver: String,
    pub delivery_id: Option<String>,
    /// For `/json`: whether the signature checked out.
    pub signed: bool,
    pub body: Value,
    /// What the receiver answered.
    pub status: u16,
}

#[derive(Default)]
pub struct Hooks {
    pub received: Vec<Received>,
    pub fail_first: usize,
}

#[derive(Clone)]
pub struct FakeWebhooks {
    pub base: String,
    pub secret: String,
    pub hooks: Arc<Mutex<Hooks>>,
}

#[derive(Clone)]
struct Shared {
    secret: String,
    hooks: Arc<Mutex<Hooks>>,
}

impl FakeWebhooks {
    pub async fn start(secret: &str) -> FakeWebhooks {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let hooks: Arc<Mutex<Hooks>> = Arc::default();
        let shared = Shared {
            secret: secret.to_string(),
            hooks: hooks.clone(),
        };
        let app = axum::Router::new()
            .route("/json", post(cairn))
            .route("/slack/services/T000/B000/XXXX", post(slack))
            .route("/teams/workflows/trigger", post(teams))
            .with_state(shared);
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeWebhooks {
            base,
            secret: secret.to_string(),
            hooks,
        }
    }

    pub fn received(&self, receiver: &str) -> Vec<Received> {
        self.hooks
            .lock()
            .unwrap()
            .received
            .iter()
            .filter(|r| r.receiver == receiver)
            .cloned()
            .collect()
    }
}

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(String::from)
}

/// Checks `t=<secs>,v1=<hex>` against the body.
fn verify(secret: &str, signature: &str, body: &[u8]) -> bool {
    let mut timestamp = None;
    let mut given = None;
    for part in signature.split(',') {
        match part.split_once('=') {
            Some(("t", t)) => timestamp = Some(t),
            Some(("v1", v)) => given = hex::decode(v).ok(),
            _ => {}
        }
    }
    let (Some(timestamp), Some(given)) = (timestamp, given) else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac.verify_slice(&given).is_ok()
}

fn keep(shared: &Shared, received: Received) {
    shared.hooks.lock().unwrap().received.push(received);
}

async fn cairn(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let signed =
        header(&headers, "x-cairn-signature").is_some_and(|s| verify(&shared.secret, &s, &body));
    let failing = {
        let mut hooks = shared.hooks.lock().unwrap();
        let failing = hooks.fail_first > 0;
        hooks.fail_first = hooks.fail_first.saturating_sub(1);
        failing
    };
    let status = if !signed {
        StatusCode::UNAUTHORIZED
    } else if failing {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::NO_CONTENT
    };
    keep(
        &shared,
        Received {
            receiver: "json".into(),
            delivery_id: header(&headers, "x-cairn-delivery"),
            signed,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            status: status.as_u16(),
        },
    );
    match status {
        StatusCode::INTERNAL_SERVER_ERROR => (status, "receiver busy").into_response(),
        StatusCode::UNAUTHORIZED => (status, "bad signature").into_response(),
        _ => status.into_response(),
    }
}

async fn slack(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let (status, answer) = match &parsed {
        None => (StatusCode::BAD_REQUEST, "invalid_payload"),
        Some(v) if v["text"].as_str().is_none_or(str::is_empty) => {
            (StatusCode::BAD_REQUEST, "no_text")
        }
        Some(_) => (StatusCode::OK, "ok"),
    };
    keep(
        &shared,
        Received {
            receiver: "slack".into(),
            delivery_id: header(&headers, "x-cairn-delivery"),
            signed: false,
            body: parsed.unwrap_or(Value::Null),
            status: status.as_u16(),
        },
    );
    (status, answer).into_response()
}

async fn teams(
    State(shared): State<Shared>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let parsed: Option<Value> = serde_json::from_slice(&body).ok();
    let card = parsed.as_ref().is_some_and(|v| {
        v["type"] == "message"
            && v["attachments"][0]["contentType"] == "application/vnd.microsoft.card.adaptive"
            && v["attachments"][0]["content"]["type"] == "AdaptiveCard"
    });
    let status = if card {
        StatusCode::ACCEPTED
    } else {
        StatusCode::BAD_REQUEST
    };
    keep(
        &shared,
        Received {
            receiver: "teams".into(),
            delivery_id: header(&headers, "x-cairn-delivery"),
            signed: false,
            body: parsed.unwrap_or(Value::Null),
            status: status.as_u16(),
        },
    );
    status.into_response()
}
