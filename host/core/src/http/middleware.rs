//! Cross-cutting middleware: panics and internal errors become a JSON 500
//! carrying the path and nothing else; one log line per request.

use std::panic::AssertUnwindSafe;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;

use super::error::{ErrorBody, RefusalReason};

/// Logs each request's end in the request's span: a successful read at
/// debug (a client polling an upload makes no noise), a write at info, a
/// refusal (4xx) at info with the reason the client was given, a failure
/// (5xx) at error. The latency is a number, in milliseconds.
pub async fn log_requests(request: Request, next: Next) -> Response {
    let reads = matches!(
        *request.method(),
        axum::http::Method::GET | axum::http::Method::HEAD | axum::http::Method::OPTIONS
    );
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    let latency_ms = (started.elapsed().as_secs_f64() * 1000.0 * 100.0).round() / 100.0;
    let status = response.status().as_u16();
    let reason = response
        .extensions()
        .get::<RefusalReason>()
        .map(|r| r.0.as_str())
        .unwrap_or("");
    match status {
        500.. => tracing::error!(status, latency_ms, "request failed"),
        400.. => tracing::info!(status, latency_ms, reason, "request refused"),
        _ if reads => tracing::debug!(status, latency_ms, "request served"),
        _ => tracing::info!(status, latency_ms, "request served"),
    }
    response
}

/// Counts the request among the process's requests in flight while it is
/// answered: jobs' write turns yield to them (`Db::paced`).
pub async fn count_in_flight(
    axum::extract::State(requests): axum::extract::State<crate::db::pacing::InFlight>,
    request: Request,
    next: Next,
) -> Response {
    let _serving = requests.start();
    next.run(request).await
}

pub async fn internal_errors(request: Request, next: Next) -> Response {
    let path = request.uri().path().to_string();
    let response = match AssertUnwindSafe(next.run(request)).catch_unwind().await {
        Ok(response) => response,
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            tracing::error!(panic = %message, "request handler panicked");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    };
    if response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let body = ErrorBody {
        detail: "internal server error".into(),
        kind: "internal_error".into(),
        field: None,
        upstream_status: None,
        permission_hint: None,
        path: Some(path),
    };
    (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(body)).into_response()
}

/// Takes percent-encoded NULs (`%00`) out of a request's path and query
/// before it is routed: stored text has no NUL (PostgreSQL refuses it), so
/// a NUL in an id or a filter means what its absence means, on both
/// engines. It wraps the whole router, since routing reads the path.
pub fn without_encoded_nul(mut request: Request) -> Request {
    let uri = request.uri();
    let has_nul = |text: &str| text.contains("%00");
    if !has_nul(uri.path()) && !uri.query().is_some_and(has_nul) {
        return request;
    }
    let path_and_query = match uri.query() {
        Some(query) => format!(
            "{}?{}",
            uri.path().replace("%00", ""),
            query.replace("%00", "")
        ),
        None => uri.path().replace("%00", ""),
    };
    let mut parts = uri.clone().into_parts();
    if let Ok(cleaned) = path_and_query.parse() {
        parts.path_and_query = Some(cleaned);
        if let Ok(cleaned) = axum::http::Uri::from_parts(parts) {
            *request.uri_mut() = cleaned;
        }
    }
    request
}

/// The documented paths without parameters (`/api/v1/tags/`,
/// `/api/v1/jobs`): a request for one of them spelled with the trailing
/// slash added or left off is routed to it, so both spellings answer
/// alike. It wraps the whole router, since routing reads the path.
#[derive(Debug, Clone, Default)]
pub struct EitherSpelling(std::sync::Arc<std::collections::HashSet<String>>);

impl EitherSpelling {
    pub fn new<'a>(documented: impl IntoIterator<Item = &'a str>) -> EitherSpelling {
        EitherSpelling(std::sync::Arc::new(
            documented
                .into_iter()
                .filter(|path| !path.contains('{') && *path != "/")
                .map(String::from)
                .collect(),
        ))
    }

    pub fn route(&self, mut request: Request) -> Request {
        let path = request.uri().path();
        if self.0.contains(path) {
            return request;
        }
        let other = match path.strip_suffix('/') {
            Some(without) => without.to_string(),
            None => format!("{path}/"),
        };
        if !self.0.contains(&other) {
            return request;
        }
        let path_and_query = match request.uri().query() {
            Some(query) => format!("{other}?{query}"),
            None => other,
        };
        let mut parts = request.uri().clone().into_parts();
        if let Ok(routed) = path_and_query.parse() {
            parts.path_and_query = Some(routed);
            if let Ok(routed) = axum::http::Uri::from_parts(parts) {
                *request.uri_mut() = routed;
            }
        }
        request
    }
}

/// How much of a request's body is still read after its answer is
/// decided: see [`read_before_answering`].
#[derive(Debug, Clone, Copy)]
pub struct ReadBeforeAnswering {
    /// Beyond this many bytes the rest is not read and the connection
    /// closes after the answer (the largest upload allowed, and some).
    pub max_bytes: u64,
    /// A client that sends slower than this is not waited for.
    pub max_wait: std::time::Duration,
}

/// Reads what is left of a request's body before answering: a refusal
/// decided before the body was read (a bad token, an unknown source, a
/// wrong file extension, a file over the size limit) would otherwise be
/// answered while the client is still sending, and the server's closing
/// of the connection reaches the client as a broken pipe instead of the
/// answer. HTTP clients (Node's fetch among them) read no answer before
/// their request is sent.
pub async fn read_before_answering(
    axum::extract::State(limits): axum::extract::State<ReadBeforeAnswering>,
    request: Request,
    next: Next,
) -> Response {
    use futures::StreamExt;
    use std::sync::Arc;
    let has_body = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v != "0")
        || request
            .headers()
            .contains_key(axum::http::header::TRANSFER_ENCODING);
    if !has_body {
        return next.run(request).await;
    }
    // A client that waits for `100 Continue` has sent nothing until the
    // body is first read: if the handler never read it, the answer goes
    // out as is and the body is never sent.
    let waits_to_send = request
        .headers()
        .get(axum::http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    // The handler reads through `shared`; what it leaves is read here.
    let (parts, body) = request.into_parts();
    let shared = Arc::new(tokio::sync::Mutex::new((body.into_data_stream(), false)));
    let handed = futures::stream::unfold(shared.clone(), |shared| async move {
        let chunk = {
            let mut body = shared.lock().await;
            body.1 = true;
            body.0.next().await
        };
        chunk.map(|chunk| (chunk, shared))
    });
    let request = Request::from_parts(parts, axum::body::Body::from_stream(handed));
    let mut response = next.run(request).await;
    let mut body = shared.lock().await;
    let (rest, read_from) = &mut *body;
    if waits_to_send && !*read_from {
        return response;
    }
    let read_all = tokio::time::timeout(limits.max_wait, async {
        let mut read = 0u64;
        while let Some(chunk) = rest.next().await {
            let Ok(chunk) = chunk else { return false };
            read += chunk.len() as u64;
            if read > limits.max_bytes {
                return false;
            }
        }
        true
    })
    .await
    .unwrap_or(false);
    if !read_all {
        response.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
    response
}
