//! Prometheus metrics: request counts and latency by route template and
//! status, recorded here; every other series is recorded by its area
//! (names in `cairn_core::telemetry`) or read at scrape time.

use std::sync::OnceLock;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub use super::recorder::handle;
use super::recorder::process_collector;
use crate::app::AppState;
use cairn_core::http::error::{ApiError, ErrorBody};

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
    metrics::counter!(cairn_core::telemetry::HTTP_REQUESTS, &labels).increment(1);
    metrics::histogram!(cairn_core::telemetry::HTTP_DURATION, &labels)
        .record(started.elapsed().as_secs_f64());
    response
}

/// Prometheus text exposition, for the addresses `metrics_allow` names.
// Public in the document (`security(())`): the caller's address gates it,
// not a credential, so it never answers 401.
#[utoipa::path(get, path = "/metrics", tag = "service", security(()),
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
    refresh_gauges(&state).await;
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

/// The figures read at scrape time: the job queue, the database pools and
/// the process. A kind with nothing queued or running reads 0 rather than
/// being absent or left at its last value.
async fn refresh_gauges(state: &AppState) {
    use cairn_core::telemetry;
    use std::collections::HashSet;
    static SEEN: OnceLock<std::sync::Mutex<HashSet<(String, String)>>> = OnceLock::new();
    process_collector().collect();
    let db = &state.db;
    // (name, open, idle, max) of each pool; PostgreSQL's COPY pool is of
    // another driver's type.
    let mut pools: Vec<(&str, u32, usize, u32)> =
        [("main", &db.pool), ("bookkeeping", &db.bookkeeping)]
            .into_iter()
            .map(|(name, pool)| {
                (
                    name,
                    pool.size(),
                    pool.num_idle(),
                    pool.options().get_max_connections(),
                )
            })
            .collect();
    if let Some(pool) = &db.copy {
        pools.push((
            "copy",
            pool.size(),
            pool.num_idle(),
            pool.options().get_max_connections(),
        ));
    }
    for (name, open, idle, max) in pools {
        let idle = idle as f64;
        metrics::gauge!(telemetry::DB_CONNECTIONS, "pool" => name, "state" => "in_use")
            .set(open as f64 - idle);
        metrics::gauge!(telemetry::DB_CONNECTIONS, "pool" => name, "state" => "idle").set(idle);
        metrics::gauge!(telemetry::DB_CONNECTIONS_MAX, "pool" => name).set(max as f64);
    }
    metrics::gauge!(telemetry::DB_WRITE_WAITING).set(db.writers_waiting() as f64);
    let depth = match cairn_jobs::storage::depth(db).await {
        Ok(depth) => depth,
        Err(err) => {
            tracing::warn!(error = %err, "reading the job queue for the metrics failed");
            return;
        }
    };
    let now = cairn_core::db::now_ms();
    let mut seen = SEEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    // Every kind this process runs reads 0 when it has nothing waiting.
    for kind in state.jobs.registry().kinds() {
        for status in ["queued", "running"] {
            seen.insert((kind.clone(), status.to_string()));
        }
    }
    for (kind, status) in seen.iter() {
        metrics::gauge!(telemetry::JOBS, "kind" => kind.clone(), "status" => status.clone())
            .set(0.0);
        if status == "queued" {
            metrics::gauge!(telemetry::JOBS_OLDEST_QUEUED_AGE, "kind" => kind.clone()).set(0.0);
        }
    }
    for row in depth {
        metrics::gauge!(telemetry::JOBS, "kind" => row.kind.clone(), "status" => row.status.clone())
            .set(row.jobs as f64);
        if row.status == "queued" {
            metrics::gauge!(telemetry::JOBS_OLDEST_QUEUED_AGE, "kind" => row.kind.clone())
                .set(((now - row.oldest_created_at).max(0) / 1000) as f64);
        }
        seen.insert((row.kind, row.status));
    }
}
