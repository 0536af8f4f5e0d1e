//! Prometheus metrics: request counts and latency by route template and status.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

use crate::app::AppState;
use cairn_core::http::error::{ApiError, ErrorBody};

const LATENCY_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The process-wide recorder; installed once, shared by every app instance
/// (tests run several in one process).
pub fn handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("http_request_duration_seconds".into()),
                    LATENCY_BUCKETS,
                )
                .expect("static buckets are valid")
                .build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder was installed first, in which
            // case our handle renders nothing but the service still runs.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}

/// Middleware: counts and times every request.
pub async fn track(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".into());
    let response = next.run(request).await;
    let labels = [
        ("method", method),
        ("route", route),
        ("status", response.status().as_u16().to_string()),
    ];
    metrics::counter!("http_requests_total", &labels).increment(1);
    metrics::histogram!("http_request_duration_seconds", &labels)
        .record(started.elapsed().as_secs_f64());
    response
}

/// Prometheus text exposition, for the addresses `metrics_allow` names.
#[utoipa::path(get, path = "/metrics", tag = "service",
    responses(
        (status = 200, content_type = "text/plain", body = String, description = "Prometheus text format"),
        (status = 403, body = ErrorBody, description = "Address not in `metrics_allow`"),
    ))]
pub async fn metrics_endpoint(State(state): State<AppState>, request: Request) -> Response {
    let client = state.limits.client_ip(&request);
    if !state.metrics_allow.iter().any(|net| net.contains(&client)) {
        return ApiError::Forbidden("metrics are not available from this address".into())
            .into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}
