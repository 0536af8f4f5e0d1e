//! `/api/v1/jobs`: the tenant's background jobs.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::app::AppState;
use crate::auth::Caller;
use cairn_core::db::to_rfc3339;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_core::http::paging;
use cairn_jobs::storage::{self, CancelOutcome, JobFilter, JobRow, JobStatus};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_jobs))
        .routes(routes!(get_job))
        .routes(routes!(cancel_job))
}

/// How far a job is, as its handler last reported (`JobView.progress`,
/// kept as the JSON the job wrote): the shape of that JSON.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct JobProgress {
    /// What the job is doing now (`parsing`, `fetching`...).
    phase: Option<String>,
    done: Option<i64>,
    total: Option<i64>,
    /// What `done` and `total` count (`rows`, `records`, `steps`...).
    unit: Option<String>,
    /// What is being worked on.
    detail: Option<String>,
    /// When the phase started, Unix milliseconds.
    phase_started_at: Option<i64>,
}

/// A background job (sync, file parse, ...), as stored.
#[derive(Clone, Serialize, ToSchema)]
pub struct JobView {
    pub id: String,
    pub tenant_id: String,
    pub kind: String,
    #[schema(value_type = Object)]
    pub args: Value,
    pub status: JobStatus,
    /// `done` of `total` `unit`s (rows, CVE records, steps...) in
    /// `phase`; `total` is exact or an estimate in the same unit, never
    /// below `done`. Empty until the job first reports.
    #[schema(value_type = JobProgress)]
    pub progress: Value,
    /// How far the current phase is, 0 to 100, while the job runs.
    pub percent: Option<f64>,
    /// When the current phase should end at its pace so far (RFC 3339),
    /// while the job runs and has done part of it.
    pub estimated_end: Option<String>,
    /// Opaque resume token of the kind.
    #[schema(value_type = Option<Object>)]
    pub checkpoint: Option<Value>,
    pub attempts: i64,
    pub max_attempts: i64,
    /// True once a stop was asked of a running job.
    pub cancel_requested: bool,
    pub worker_id: Option<String>,
    pub heartbeat_at: Option<String>,
    pub lease_until: Option<String>,
    /// Earliest time a queued job may run (retry backoff).
    pub run_after: String,
    pub error: Option<String>,
    /// When `status` is `superseded`: the job queued behind this one that
    /// took its work over (this run's lease lapsed or its process shut
    /// down).
    pub superseded_by: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

impl JobView {
    /// Queued or running.
    pub fn is_active(&self) -> bool {
        matches!(self.status, JobStatus::Queued | JobStatus::Running)
    }
}

impl From<JobRow> for JobView {
    fn from(row: JobRow) -> Self {
        // Written only by the queue's `serde_json::to_string`; a hand-edited
        // row shows null there rather than hiding the job from its list.
        let parse = |raw: &str| serde_json::from_str(raw).unwrap_or(Value::Null);
        let progress = parse(&row.progress);
        let (percent, estimated_end) = match row.status() {
            JobStatus::Running => pace(&progress, cairn_core::db::now_ms()),
            _ => (None, None),
        };
        JobView {
            status: row.status(),
            args: parse(&row.args),
            progress,
            percent,
            estimated_end: estimated_end.map(to_rfc3339),
            checkpoint: row.checkpoint.as_deref().map(parse),
            id: row.id,
            tenant_id: row.tenant_id,
            kind: row.kind,
            attempts: row.attempts,
            max_attempts: row.max_attempts,
            cancel_requested: row.cancel_requested != 0,
            worker_id: row.worker_id,
            heartbeat_at: row.heartbeat_at.map(to_rfc3339),
            lease_until: row.lease_until.map(to_rfc3339),
            run_after: to_rfc3339(row.run_after),
            error: row.error,
            superseded_by: row.superseded_by,
            created_at: to_rfc3339(row.created_at),
            started_at: row.started_at.map(to_rfc3339),
            finished_at: row.finished_at.map(to_rfc3339),
        }
    }
}

/// The current phase's share done and, at its pace so far, when it ends.
fn pace(progress: &Value, now_ms: i64) -> (Option<f64>, Option<i64>) {
    let done = progress["done"].as_i64().unwrap_or(0);
    let total = progress["total"].as_i64().unwrap_or(0);
    if total <= 0 {
        return (None, None);
    }
    let share = (done as f64 / total as f64).clamp(0.0, 1.0);
    let percent = (share * 1000.0).round() / 10.0;
    let end = progress["phase_started_at"]
        .as_i64()
        .filter(|_| done > 0)
        .map(|started| {
            let elapsed = (now_ms - started).max(0) as f64;
            started + (elapsed / share) as i64
        });
    (Some(percent), end)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct JobQuery {
    /// Only jobs of this kind, e.g. `rmm_sync`.
    kind: Option<String>,
    /// Only jobs in this status.
    status: Option<JobStatus>,
    /// Page size, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// Jobs to skip (default 0).
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// Deprecated: the same as `skip`.
    #[param(minimum = 0)]
    offset: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct JobPage {
    items: Vec<JobView>,
    total: i64,
    limit: i64,
    skip: i64,
    /// Deprecated: the same as `skip`.
    #[schema(deprecated)]
    offset: i64,
}

/// The tenant's jobs, newest first.
#[utoipa::path(get, path = "", tag = "jobs", params(JobQuery),
    responses((status = 200, body = JobPage), (status = 401, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn list_jobs(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<JobQuery>,
) -> ApiResult<Json<JobPage>> {
    // `offset` is the deprecated spelling of `skip`.
    if query.skip.is_none() && query.offset.is_some_and(|o| o < 0) {
        return Err(ApiError::validation("offset", "must be 0 or more"));
    }
    let (offset, limit) = paging::bounds(
        query.skip.or(query.offset),
        query.limit,
        paging::DEFAULT_LIMIT,
    )?;
    let filter = JobFilter {
        kind: query.kind.as_deref(),
        status: query.status,
        limit,
        offset,
    };
    let (rows, total) = storage::list(&state.db, &caller.tenant_id, &filter).await?;
    Ok(Json(JobPage {
        items: rows.into_iter().map(JobView::from).collect(),
        total,
        limit,
        skip: offset,
        offset,
    }))
}

/// One job.
#[utoipa::path(get, path = "/{job_id}", tag = "jobs",
    params(("job_id" = String, Path)),
    responses((status = 200, body = JobView), (status = 404, body = ErrorBody)))]
async fn get_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(job_id): Path<String>,
) -> ApiResult<Json<JobView>> {
    let row = storage::job(&state.db, &caller.tenant_id, &job_id)
        .await?
        .ok_or(ApiError::NotFound("job"))?;
    Ok(Json(row.into()))
}

/// Cancel a job: a queued job is canceled at once (200); a running one is
/// asked to stop and ends `canceled` (202).
#[utoipa::path(post, path = "/{job_id}/cancel", tag = "jobs",
    params(("job_id" = String, Path)),
    responses(
        (status = 200, body = JobView, description = "Canceled"),
        (status = 202, body = JobView, description = "Running; asked to stop"),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Already finished"),
    ))]
async fn cancel_job(
    State(state): State<AppState>,
    caller: Caller,
    Path(job_id): Path<String>,
) -> ApiResult<(StatusCode, Json<JobView>)> {
    let status = match storage::cancel(&state.db, &caller.tenant_id, &job_id).await? {
        CancelOutcome::Canceled => StatusCode::OK,
        CancelOutcome::Requested => {
            state.jobs.running.cancel(&job_id);
            StatusCode::ACCEPTED
        }
        CancelOutcome::Finished => {
            return Err(ApiError::Conflict("the job has already finished".into()))
        }
        CancelOutcome::NotFound => return Err(ApiError::NotFound("job")),
    };
    let row = storage::job(&state.db, &caller.tenant_id, &job_id)
        .await?
        .ok_or(ApiError::NotFound("job"))?;
    Ok((status, Json(row.into())))
}

#[cfg(test)]
mod tests {
    use super::pace;
    use serde_json::json;

    #[test]
    fn percent_and_end_follow_the_phase_pace() {
        let cases = [
            // (done, total, started, now) -> (percent, end)
            (
                json!({"done": 250, "total": 1000, "phase_started_at": 10_000}),
                20_000,
                Some(25.0),
                Some(50_000),
            ),
            (
                json!({"done": 0, "total": 1000, "phase_started_at": 10_000}),
                20_000,
                Some(0.0),
                None,
            ),
            (
                json!({"done": 1000, "total": 1000, "phase_started_at": 10_000}),
                20_000,
                Some(100.0),
                Some(20_000),
            ),
            (json!({"done": 5, "total": 0}), 20_000, None, None),
            (json!({"done": 1, "total": 3}), 20_000, Some(33.3), None),
        ];
        for (progress, now, percent, end) in cases {
            assert_eq!(pace(&progress, now), (percent, end), "{progress}");
        }
    }
}
