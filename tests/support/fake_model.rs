//! An OpenAI-compatible chat completions endpoint on 127.0.0.1
//! (`POST /v1/chat/completions`), answering in that API's wire format. It
//! reads the schema name of `response_format.json_schema` to know what is
//! asked: `news_classification` (from the CVE ids and words of the text)
//! or `advisory_draft`. Its mode makes it answer well, answer text that
//! is not JSON, or take longer than any caller waits.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Json;
use serde_json::{json, Value};

pub const MODEL_KEY: &str = "sk-test-model-key-4242";

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ModelMode {
    Good,
    /// Prose instead of the JSON asked for.
    Malformed,
    /// Answers after this long.
    Slow(Duration),
}

/// A request received: its `Authorization` header and body.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub authorization: Option<String>,
    pub body: Value,
}

#[derive(Clone)]
pub struct FakeModel {
    /// The base URL to configure (`.../v1`).
    pub base_url: String,
    mode: Arc<Mutex<ModelMode>>,
    requests: Arc<Mutex<Vec<ModelRequest>>>,
}

type Shared = (Arc<Mutex<ModelMode>>, Arc<Mutex<Vec<ModelRequest>>>);

impl FakeModel {
    pub async fn start() -> FakeModel {
        let mode = Arc::new(Mutex::new(ModelMode::Good));
        let requests: Arc<Mutex<Vec<ModelRequest>>> = Arc::default();
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state((mode.clone(), requests.clone()));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeModel {
            base_url: format!("http://{addr}/v1"),
            mode,
            requests,
        }
    }

    pub fn set_mode(&self, mode: ModelMode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests.lock().unwrap().clone()
    }

    /// Points `settings` at this endpoint (plain http to loopback granted),
    /// with a one-second timeout.
    pub fn configure(&self, settings: &mut cairn_core::settings::Settings) {
        settings.plugin_plain_http_hosts = "127.0.0.1".into();
        settings.model_base_url = self.base_url.clone();
        settings.model_name = "gpt-test".into();
        settings.model_api_key = MODEL_KEY.into();
        settings.model_timeout_secs = 1;
    }
}

async fn completions(
    State((mode, requests)): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    requests.lock().unwrap().push(ModelRequest {
        authorization: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(String::from),
        body: body.clone(),
    });
    let mode = *mode.lock().unwrap();
    let content = match mode {
        ModelMode::Malformed => {
            "Sure! This looks like a vulnerability story about Chrome.".to_string()
        }
        ModelMode::Slow(wait) => {
            tokio::time::sleep(wait).await;
            answer_for(&body).to_string()
        }
        ModelMode::Good => answer_for(&body).to_string(),
    };
    Json(json!({
        "id": "chatcmpl-test-1",
        "object": "chat.completion",
        "created": 1_764_000_000,
        "model": body["model"],
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "logprobs": null,
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 120, "completion_tokens": 40, "total_tokens": 160}
    }))
    .into_response()
}

fn answer_for(request: &Value) -> Value {
    let user = request["messages"][1]["content"]
        .as_str()
        .unwrap_or_default();
    match request["response_format"]["json_schema"]["name"].as_str() {
        Some("advisory_draft") => json!({
            "subject": "Please update your software today",
            "body": format!("Written by the model from these facts:\n{user}"),
        }),
        _ => {
            let cves: Vec<String> = user
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .filter(|w| w.starts_with("CVE-"))
                .map(String::from)
                .collect();
            if cves.is_empty() {
                json!({"category": "other", "severity": "low", "cve_ids": [], "vendors": [], "products": []})
            } else {
                json!({"category": "vulnerability", "severity": "high", "cve_ids": cves,
                       "vendors": ["Google"], "products": ["Chrome"]})
            }
        }
    }
}
