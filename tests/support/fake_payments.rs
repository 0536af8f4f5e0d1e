//! A fake Stripe-style payments API on 127.0.0.1: `POST /v1/checkout/sessions`
//! (bearer secret key, `application/x-www-form-urlencoded` body with
//! Stripe's nested keys) and `GET /v1/checkout/sessions`, answering with
//! Stripe-shaped Checkout Sessions and errors; plus the events it would send
//! and their `Stripe-Signature` header values.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;

pub const API_KEY: &str = "sk_test_cairn";
pub const WEBHOOK_SECRET: &str = "whsec_test_cairn";

/// A Checkout Session the fake created.
#[derive(Debug, Clone)]
pub struct Session {
    /// `cs_test_<n>`, counting from 1.
    pub id: String,
    /// `metadata[invoice_id]`.
    pub invoice_id: Option<String>,
    pub client_reference_id: Option<String>,
    /// `line_items[0][price_data][unit_amount]` (times the quantity).
    pub amount: i64,
    /// `line_items[0][price_data][currency]`, as sent.
    pub currency: String,
    /// `line_items[0][price_data][product_data][name]`.
    pub product_name: String,
    pub success_url: Option<String>,
    pub cancel_url: Option<String>,
    /// Unix seconds.
    pub created: i64,
    pub expires_at: i64,
    /// Every form field as received, decoded, in order.
    pub form: Vec<(String, String)>,
}

#[derive(Default)]
pub struct PaymentsState {
    pub base_url: String,
    pub sessions: Vec<Session>,
    counter: u64,
    /// Requests refused for their key.
    pub unauthorized: u32,
    /// The next requests (any route, after the key check) are answered
    /// with these statuses, first one first, and change nothing.
    pub fail_next: Vec<u16>,
}

#[derive(Clone)]
pub struct FakePayments {
    pub base_url: String,
    pub state: Arc<Mutex<PaymentsState>>,
}

impl FakePayments {
    pub async fn start() -> FakePayments {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(PaymentsState {
            base_url: base_url.clone(),
            ..PaymentsState::default()
        }));
        let app = axum::Router::new()
            .route(
                "/v1/checkout/sessions",
                get(list_sessions).post(create_session),
            )
            .with_state(state.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakePayments { base_url, state }
    }

    /// How many Checkout Sessions were created.
    pub fn sessions_created(&self) -> usize {
        self.state.lock().unwrap().sessions.len()
    }

    /// The session with this id.
    pub fn session(&self, id: &str) -> Option<Session> {
        self.state
            .lock()
            .unwrap()
            .sessions
            .iter()
            .find(|s| s.id == id)
            .cloned()
    }

    /// The next request is answered with `status` (a Stripe-shaped error;
    /// 429 with `Retry-After: 1`).
    pub fn fail_next(&self, status: u16) {
        self.state.lock().unwrap().fail_next.push(status);
    }
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A Stripe error answer.
fn error(status: StatusCode, kind: &str, message: &str, param: Option<&str>) -> Response {
    let mut error = json!({"type": kind, "message": message});
    if let Some(param) = param {
        error["param"] = json!(param);
    }
    (status, axum::Json(json!({ "error": error }))).into_response()
}

fn invalid(message: &str, param: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "invalid_request_error",
        message,
        Some(param),
    )
}

/// The refusal, if any: 401 without the right key, else a queued failure.
fn admit(state: &mut PaymentsState, headers: &HeaderMap) -> Option<Response> {
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        == Some(API_KEY);
    if !authorized {
        state.unauthorized += 1;
        return Some(error(
            StatusCode::UNAUTHORIZED,
            "invalid_request_error",
            "Invalid API Key provided",
            None,
        ));
    }
    if state.fail_next.is_empty() {
        return None;
    }
    let status = StatusCode::from_u16(state.fail_next.remove(0)).unwrap();
    let mut refused = error(
        status,
        if status.is_server_error() {
            "api_error"
        } else {
            "invalid_request_error"
        },
        &format!("Injected failure {}", status.as_u16()),
        None,
    );
    if status == StatusCode::TOO_MANY_REQUESTS {
        refused
            .headers_mut()
            .insert("retry-after", "1".parse().unwrap());
    }
    Some(refused)
}

fn session_json(base_url: &str, session: &Session) -> Value {
    let mut metadata = BTreeMap::new();
    for (key, value) in &session.form {
        if let Some(name) = key
            .strip_prefix("metadata[")
            .and_then(|k| k.strip_suffix(']'))
        {
            metadata.insert(name.to_string(), value.clone());
        }
    }
    json!({
        "id": session.id,
        "object": "checkout.session",
        "url": format!("{base_url}/c/pay/{}", session.id),
        "created": session.created,
        "expires_at": session.expires_at,
        "livemode": false,
        "mode": "payment",
        "payment_status": "unpaid",
        "status": "open",
        "amount_subtotal": session.amount,
        "amount_total": session.amount,
        "currency": session.currency,
        "client_reference_id": session.client_reference_id,
        "metadata": metadata,
        "success_url": session.success_url,
        "cancel_url": session.cancel_url,
    })
}

async fn create_session(
    State(state): State<Arc<Mutex<PaymentsState>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let mut state = state.lock().unwrap();
    if let Some(refused) = admit(&mut state, &headers) {
        return refused;
    }
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !content_type
        .to_ascii_lowercase()
        .starts_with("application/x-www-form-urlencoded")
    {
        return error(
            StatusCode::BAD_REQUEST,
            "invalid_request_error",
            &format!("Invalid request: expected an application/x-www-form-urlencoded body, got {content_type:?}"),
            None,
        );
    }
    let form: Vec<(String, String)> = url::form_urlencoded::parse(&body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    if field("mode").as_deref() != Some("payment") {
        return invalid("Missing or invalid mode: expected payment.", "mode");
    }
    let price = "line_items[0][price_data]";
    let amount_param = format!("{price}[unit_amount]");
    let Some(unit_amount) = field(&amount_param)
        .and_then(|a| a.parse::<i64>().ok())
        .filter(|a| *a > 0)
    else {
        return invalid(
            "Invalid integer: unit_amount must be a positive integer.",
            &amount_param,
        );
    };
    let quantity = field("line_items[0][quantity]")
        .map(|q| q.parse::<i64>().unwrap_or(0))
        .unwrap_or(1);
    if quantity < 1 {
        return invalid(
            "Invalid integer: quantity must be at least 1.",
            "line_items[0][quantity]",
        );
    }
    let currency_param = format!("{price}[currency]");
    let currency = field(&currency_param).unwrap_or_default();
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_lowercase()) {
        return invalid(
            &format!(
                "Invalid currency: {currency}. Stripe currencies are three lowercase letters."
            ),
            &currency_param,
        );
    }
    let name_param = format!("{price}[product_data][name]");
    let Some(product_name) = field(&name_param).filter(|n| !n.trim().is_empty()) else {
        return invalid("Missing required param: product_data[name].", &name_param);
    };
    state.counter += 1;
    let created = now_secs();
    let session = Session {
        id: format!("cs_test_{}", state.counter),
        invoice_id: field("metadata[invoice_id]"),
        client_reference_id: field("client_reference_id"),
        amount: unit_amount * quantity,
        currency,
        product_name,
        success_url: field("success_url"),
        cancel_url: field("cancel_url"),
        created,
        expires_at: created + 86_400,
        form,
    };
    let answer = session_json(&state.base_url, &session);
    state.sessions.push(session);
    axum::Json(answer).into_response()
}

async fn list_sessions(
    State(state): State<Arc<Mutex<PaymentsState>>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let mut state = state.lock().unwrap();
    if let Some(refused) = admit(&mut state, &headers) {
        return refused;
    }
    let limit = query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(10)
        .clamp(1, 100);
    let data: Vec<Value> = state
        .sessions
        .iter()
        .rev()
        .take(limit)
        .map(|s| session_json(&state.base_url, s))
        .collect();
    axum::Json(json!({
        "object": "list",
        "url": "/v1/checkout/sessions",
        "has_more": state.sessions.len() > limit,
        "data": data,
    }))
    .into_response()
}

/// The raw body of a `checkout.session.completed` event for a paid session
/// of `invoice_id`, created at `created` (Unix seconds), with a fresh
/// `evt_...` id.
pub fn completed_event(session_id: &str, invoice_id: &str, created: i64) -> String {
    json!({
        "id": format!("evt_test_{}", uuid::Uuid::new_v4().simple()),
        "object": "event",
        "api_version": "2024-06-20",
        "created": created,
        "livemode": false,
        "pending_webhooks": 1,
        "type": "checkout.session.completed",
        "data": {
            "object": {
                "id": session_id,
                "object": "checkout.session",
                "mode": "payment",
                "status": "complete",
                "payment_status": "paid",
                "client_reference_id": invoice_id,
                "metadata": {"invoice_id": invoice_id},
            }
        }
    })
    .to_string()
}

/// The `Stripe-Signature` header value for `body` sent at `timestamp`:
/// `t=<timestamp>,v1=<hex HMAC-SHA256(secret, "{timestamp}.{body}")>`.
pub fn sign(secret: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(format!("{timestamp}.{body}").as_bytes());
    format!(
        "t={timestamp},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_match_an_independent_hmac() {
        // Python: hmac.new(b"whsec_test_cairn", b'1790000000.{"id":"evt_1"}', hashlib.sha256).hexdigest()
        assert_eq!(
            sign(WEBHOOK_SECRET, 1_790_000_000, r#"{"id":"evt_1"}"#),
            "t=1790000000,v1=146d12958085a737b6cd2b0e669bc1ad884cb377625c4cda43bcccc9dd8a6b40"
        );
    }

    #[test]
    fn completed_events_are_paid_and_unique() {
        let a: Value = serde_json::from_str(&completed_event("cs_test_1", "inv-1", 5)).unwrap();
        let b: Value = serde_json::from_str(&completed_event("cs_test_1", "inv-1", 5)).unwrap();
        assert_ne!(a["id"], b["id"]);
        assert_eq!(a["type"], "checkout.session.completed");
        assert_eq!(a["data"]["object"]["payment_status"], "paid");
        assert_eq!(a["data"]["object"]["metadata"]["invoice_id"], "inv-1");
        assert_eq!(a["created"], 5);
    }
}
