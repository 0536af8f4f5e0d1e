//! Cross-cutting middleware: panics and internal errors become a JSON 500
//! carrying the path and nothing else.

use std::panic::AssertUnwindSafe;

use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;

use super::error::ErrorBody;

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
