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
