//! Every SQL statement of the queue. Times come from the database clock so
//! that several processes agree on leases.

use serde_json::Value;
use sqlx::{Any, Transaction};

use cairn_core::db::{Backend, Db};
use cairn_core::ids::TenantId;

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum JobStatus {
    Queued,
    Running,
    /// The spec's `success`, as uploads, scans, reports, subscriptions
    /// and feeds say it too; `succeeded` is still read as a filter value.
    #[serde(rename = "success", alias = "succeeded")]
    Success,
    /// The spec's `error`; `failed` is still read as a filter value.
    #[serde(rename = "error", alias = "failed")]
    Error,
    Canceled,
    /// The run stopped (its lease lapsed, its process shut down) while a
    /// job of its kind was queued behind it; that job, named in
    /// `superseded_by`, did the work.
    Superseded,
}

impl JobStatus {
    /// The status as the jobs table stores it (the spec's words).
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Queued => "queued",
            JobStatus::Running => "running",
            JobStatus::Success => "success",
            JobStatus::Error => "error",
            JobStatus::Canceled => "canceled",
            JobStatus::Superseded => "superseded",
        }
    }

    pub fn parse(raw: &str) -> Option<JobStatus> {
        match raw {
            "queued" => Some(JobStatus::Queued),
            "running" => Some(JobStatus::Running),
            "success" => Some(JobStatus::Success),
            "error" => Some(JobStatus::Error),
            "canceled" => Some(JobStatus::Canceled),
            "superseded" => Some(JobStatus::Superseded),
            _ => None,
        }
    }
}

/// The current time in Unix milliseconds, as the database sees it.
fn now_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "CAST(unixepoch('subsec') * 1000 AS BIGINT)",
        // now() (statement start in autocommit) rather than clock_timestamp():
        // a stable value lets the planner walk the claim index in order.
        Backend::Postgres => "CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT)",
    }
}

/// Fills `{now}` in a statement with the backend's clock expression (a fixed
/// string of ours, never user text).
fn sql(db: &Db, template: &str) -> String {
    template.replace("{now}", now_sql(db.backend))
}

#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct JobRow {
    pub id: String,
    pub tenant_id: String,
    pub kind: String,
    pub args: String,
    pub status: String,
    pub progress: String,
    pub checkpoint: Option<String>,
    pub attempts: i64,
    pub max_attempts: i64,
    pub cancel_requested: i64,
    pub worker_id: Option<String>,
    pub heartbeat_at: Option<i64>,
    pub lease_until: Option<i64>,
    pub run_after: i64,
    pub error: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub superseded_by: Option<String>,
    /// The blob store a run needs (its file is kept there): only a process
    /// holding that store claims the job. Empty: any process.
    pub affinity: String,
}

impl JobRow {
    pub fn status(&self) -> JobStatus {
        JobStatus::parse(&self.status).unwrap_or(JobStatus::Error)
    }
}

const COLUMNS: &str = "id, tenant_id, kind, args, status, progress, checkpoint, attempts, max_attempts, \
    cancel_requested, worker_id, heartbeat_at, lease_until, run_after, error, created_at, started_at, finished_at, \
    superseded_by, affinity";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enqueued {
    pub job_id: String,
    /// False when a job of the same kind was already queued; `job_id` is
    /// then that job's id.
    pub created: bool,
}

/// Queues a job unless one of the same kind is already queued for the
/// tenant. A running job does not count: it may have read its input before
/// this request's, so the new job waits behind it (see `claim`). One
/// statement: the partial unique index decides, so concurrent callers all
/// get the one queued job's id.
pub async fn enqueue(
    db: &Db,
    tenant: &TenantId,
    kind: &str,
    args: &Value,
) -> sqlx::Result<Enqueued> {
    enqueue_held(db, tenant, kind, args, "").await
}

/// [`enqueue`] of a job only a process holding the blob store `affinity`
/// may run ([`JobRow::affinity`]; empty: any). One job is queued per tenant
/// and kind, whatever its store: when one is queued for another store, its
/// id is returned and the work for `affinity` waits for it to end (the
/// caller hands it on then; see `csv_sources`).
pub async fn enqueue_held(
    db: &Db,
    tenant: &TenantId,
    kind: &str,
    args: &Value,
    affinity: &str,
) -> sqlx::Result<Enqueued> {
    let _turn = db.write_turn().await;
    let id = uuid::Uuid::now_v7().to_string();
    let upsert = "INSERT INTO jobs (id, tenant_id, kind, args, status, progress, attempts, max_attempts, run_after, created_at, affinity) \
         VALUES ($1, $2, $3, $4, 'queued', '{}', 0, 3, {now}, {now}, $5) \
         ON CONFLICT (tenant_id, kind) WHERE status = 'queued' \
         DO UPDATE SET kind = excluded.kind RETURNING id";
    let statement = match db.backend {
        // A new job wakes idle workers of other processes (ours are woken by
        // the caller) in the same round trip.
        Backend::Postgres => format!(
            "WITH upserted AS ({upsert}) SELECT id, CASE WHEN id = $1 THEN \
             (SELECT 1 FROM (SELECT pg_notify('cairn_jobs', '')) AS woken) END FROM upserted"
        ),
        Backend::Sqlite => upsert.to_string(),
    };
    let existing_or_new: String = sqlx::query_scalar(&sql(db, &statement))
        .bind(&id)
        .bind(tenant.as_str())
        .bind(kind)
        .bind(args.to_string())
        .bind(affinity)
        .fetch_one(&db.pool)
        .await?;
    Ok(Enqueued {
        created: existing_or_new == id,
        job_id: existing_or_new,
    })
}

/// Enqueues a job of `kind` for the tenant unless one is already queued or
/// running: what a sweep that catches missed work asks for. A running job
/// picks up new work in its own loop, and a job queued behind it would
/// only take over its checkpoint at a shutdown (`superseded`) for nothing.
/// `None` when a job was live.
pub async fn enqueue_unless_live(
    db: &Db,
    tenant: &TenantId,
    kind: &str,
    args: &Value,
) -> sqlx::Result<Option<Enqueued>> {
    enqueue_held_unless_live(db, tenant, kind, args, "").await
}

/// [`enqueue_unless_live`] for the blob store `affinity`: `None` while any
/// job of the kind is queued or running for the tenant, whatever its store.
pub async fn enqueue_held_unless_live(
    db: &Db,
    tenant: &TenantId,
    kind: &str,
    args: &Value,
    affinity: &str,
) -> sqlx::Result<Option<Enqueued>> {
    let live: Option<i64> = sqlx::query_scalar(
        "SELECT 1 FROM jobs WHERE tenant_id = $1 AND kind = $2 \
         AND status IN ('queued', 'running') LIMIT 1",
    )
    .bind(tenant.as_str())
    .bind(kind)
    .fetch_optional(&db.pool)
    .await?;
    // A job that ends between this look and the insert leaves a queued
    // job that finds nothing to do: harmless, and rare.
    if live.is_some() {
        return Ok(None);
    }
    enqueue_held(db, tenant, kind, args, affinity)
        .await
        .map(Some)
}

/// Claims up to `limit` claimable jobs of the given kinds, oldest first, for
/// `worker_id`. A process claims only kinds it has handlers for, so processes
/// of different versions can share one queue.
pub async fn claim(
    db: &Db,
    worker_id: &str,
    kinds: &[String],
    limit: i64,
    lease_ms: i64,
) -> sqlx::Result<Vec<JobRow>> {
    claim_holding(db, (worker_id, ""), kinds, limit, lease_ms).await
}

/// [`claim`] by a process holding the blob store `holder` (empty: none of
/// its own): it claims jobs any process may run and jobs that need that
/// store.
pub async fn claim_holding(
    db: &Db,
    (worker_id, holder): (&str, &str),
    kinds: &[String],
    limit: i64,
    lease_ms: i64,
) -> sqlx::Result<Vec<JobRow>> {
    let _turn = db.write_turn().await;
    if kinds.is_empty() || limit < 1 {
        return Ok(vec![]);
    }
    // The kinds travel as one parameter rather than one placeholder each: a
    // JSON array on SQLite, an array literal on PostgreSQL (where `= ANY`
    // keeps the planner walking the claim index in order).
    let (kind_filter, kind_param) = match db.backend {
        Backend::Sqlite => (
            "q.kind IN (SELECT value FROM json_each($4))",
            serde_json::to_string(kinds).unwrap_or_default(),
        ),
        Backend::Postgres => (
            "q.kind = ANY(CAST($4 AS TEXT[]))",
            format!(
                "{{{}}}",
                kinds
                    .iter()
                    .map(|k| format!("\"{}\"", k.replace('\\', "\\\\").replace('"', "\\\"")))
                    .collect::<Vec<_>>()
                    .join(",")
            ),
        ),
    };
    let set = "status = 'running', attempts = attempts + 1, worker_id = $1, started_at = {now}, \
               heartbeat_at = {now}, lease_until = {now} + $2";
    // A queued job waits while its kind runs for the tenant: runs of one
    // kind never overlap.
    let pick = format!(
        "SELECT q.id FROM jobs q WHERE q.status = 'queued' AND q.run_after <= {{now}} AND {kind_filter} \
         AND q.affinity IN ('', $5) \
         AND NOT EXISTS (SELECT 1 FROM jobs r WHERE r.tenant_id = q.tenant_id AND r.kind = q.kind \
                         AND r.status = 'running') \
         ORDER BY q.created_at, q.id LIMIT $3"
    );
    let statement = match db.backend {
        Backend::Postgres => format!(
            "WITH next AS MATERIALIZED ({pick} FOR UPDATE SKIP LOCKED) \
             UPDATE jobs SET {set} FROM next WHERE jobs.id = next.id RETURNING {}",
            COLUMNS
                .split(", ")
                .map(|c| format!("jobs.{c}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Backend::Sqlite => {
            format!("UPDATE jobs SET {set} WHERE id IN ({pick}) RETURNING {COLUMNS}")
        }
    };
    let statement = sql(db, &statement);
    let mut rows: Vec<JobRow> = sqlx::query_as(&statement)
        .bind(worker_id)
        .bind(lease_ms)
        .bind(limit)
        .bind(kind_param)
        .bind(holder)
        .fetch_all(&db.bookkeeping)
        .await?;
    rows.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    Ok(rows)
}

/// The claim a worker holds; every write it makes is conditional on it.
#[derive(Debug, Clone)]
pub struct Fence {
    pub job_id: String,
    pub worker_id: String,
    pub attempts: i64,
}

const FENCE: &str = "id = $1 AND status = 'running' AND worker_id = $2 AND attempts = $3";

/// The runs `worker_id` still holds, as their fences.
pub async fn held_by(db: &Db, worker_id: &str) -> sqlx::Result<Vec<Fence>> {
    let held: Vec<(String, i64)> =
        sqlx::query_as("SELECT id, attempts FROM jobs WHERE status = 'running' AND worker_id = $1")
            .bind(worker_id)
            .fetch_all(&db.bookkeeping)
            .await?;
    Ok(held
        .into_iter()
        .map(|(job_id, attempts)| Fence {
            job_id,
            worker_id: worker_id.to_string(),
            attempts,
        })
        .collect())
}

/// A claim fences the writes made under it (see [`hold`]).
#[async_trait::async_trait]
impl cairn_core::db::fence::WriteFence for Fence {
    async fn hold(&self, tx: &mut Transaction<'_, Any>) -> sqlx::Result<bool> {
        hold(tx, self).await
    }
}

/// Extends the lease. `None` when the lease is lost; otherwise whether a
/// cancel was requested.
pub async fn heartbeat(db: &Db, fence: &Fence, lease_ms: i64) -> sqlx::Result<Option<bool>> {
    let _turn = db.write_turn().await;
    let flag: Option<i64> = sqlx::query_scalar(&sql(
        db,
        &format!(
            "UPDATE jobs SET heartbeat_at = {{now}}, lease_until = {{now}} + $4 WHERE {FENCE} \
             RETURNING cancel_requested"
        ),
    ))
    .bind(&fence.job_id)
    .bind(&fence.worker_id)
    .bind(fence.attempts)
    .bind(lease_ms)
    .fetch_optional(&db.bookkeeping)
    .await?;
    Ok(flag.map(|f| f != 0))
}

/// Claims the lease of schedule `name` for `holder` for `lease_ms` when no
/// one holds it (or its holder's lease ran out): whether this process runs
/// the schedule's tick this period. One statement, so of processes ticking
/// at once exactly one wins.
pub async fn claim_schedule(
    db: &Db,
    name: &str,
    holder: &str,
    lease_ms: i64,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let claimed = sqlx::query(&sql(
        db,
        "INSERT INTO schedule_leases (name, holder, lease_until) VALUES ($1, $2, {now} + $3) \
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, \
         lease_until = excluded.lease_until WHERE schedule_leases.lease_until <= {now}",
    ))
    .bind(name)
    .bind(holder)
    .bind(lease_ms)
    .execute(&db.bookkeeping)
    .await?;
    Ok(claimed.rows_affected() == 1)
}

/// Jobs queued and running now, across tenants, by kind and status, with
/// the creation time of the oldest of each (for the metrics).
#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct QueueDepth {
    pub kind: String,
    pub status: String,
    pub jobs: i64,
    pub oldest_created_at: i64,
}

pub async fn depth(db: &Db) -> sqlx::Result<Vec<QueueDepth>> {
    sqlx::query_as(
        "SELECT kind, status, COUNT(*) AS jobs, MIN(created_at) AS oldest_created_at \
         FROM jobs WHERE status IN ('queued', 'running') GROUP BY kind, status",
    )
    .fetch_all(&db.bookkeeping)
    .await
}

/// Records progress (and extends the lease). False when the lease is lost.
pub async fn set_progress(
    db: &Db,
    fence: &Fence,
    progress: &Value,
    lease_ms: i64,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let result = sqlx::query(&sql(
        db,
        &format!("UPDATE jobs SET progress = $4, heartbeat_at = {{now}}, lease_until = {{now}} + $5 WHERE {FENCE}"),
    ))
    .bind(&fence.job_id)
    .bind(&fence.worker_id)
    .bind(fence.attempts)
    .bind(progress.to_string())
    .bind(lease_ms)
    .execute(&db.bookkeeping)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// [`set_progress`] inside the caller's transaction.
pub async fn set_progress_in(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    fence: &Fence,
    progress: &Value,
    lease_ms: i64,
) -> sqlx::Result<bool> {
    set_in(tx, backend, fence, ("progress", progress), lease_ms).await
}

/// Writes the checkpoint inside the caller's transaction, so the batch it
/// describes commits with it or not at all. False when the lease is lost; the
/// caller must then roll back.
pub async fn set_checkpoint(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    fence: &Fence,
    checkpoint: &Value,
    lease_ms: i64,
) -> sqlx::Result<bool> {
    set_in(tx, backend, fence, ("checkpoint", checkpoint), lease_ms).await
}

/// Sets one of the run's own columns of its job row (`checkpoint` or
/// `progress`) and extends the lease, inside `tx`. False when the lease
/// is lost.
async fn set_in(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    fence: &Fence,
    (column, value): (&'static str, &Value),
    lease_ms: i64,
) -> sqlx::Result<bool> {
    let statement = format!(
        "UPDATE jobs SET {column} = $4, heartbeat_at = {now}, lease_until = {now} + $5 WHERE {FENCE}",
        now = now_sql(backend)
    );
    let result = sqlx::query(&statement)
        .bind(&fence.job_id)
        .bind(&fence.worker_id)
        .bind(fence.attempts)
        .bind(value.to_string())
        .bind(lease_ms)
        .execute(&mut **tx)
        .await?;
    Ok(result.rows_affected() == 1)
}

/// True while `fence` still holds the job, as `tx` sees it. Not a lock:
/// the job's own checkpoint and heartbeat updates must not wait for the
/// writes that call this.
/// Holds the job for `tx`: a fenced no-op update, whose row lock (the
/// database's write lock on SQLite) lasts until `tx` ends, so no reaper
/// or other worker can take the job over between this check and the
/// commit of what `tx` writes. False when the fence no longer holds.
pub async fn hold(tx: &mut Transaction<'_, Any>, fence: &Fence) -> sqlx::Result<bool> {
    let held = sqlx::query(&format!(
        "UPDATE jobs SET heartbeat_at = heartbeat_at WHERE {FENCE}"
    ))
    .bind(&fence.job_id)
    .bind(&fence.worker_id)
    .bind(fence.attempts)
    .execute(&mut **tx)
    .await?;
    Ok(held.rows_affected() == 1)
}

pub async fn fence_holds(tx: &mut Transaction<'_, Any>, fence: &Fence) -> sqlx::Result<bool> {
    let held: Option<i64> = sqlx::query_scalar(&format!("SELECT 1 FROM jobs WHERE {FENCE}"))
        .bind(&fence.job_id)
        .bind(&fence.worker_id)
        .bind(fence.attempts)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(held.is_some())
}

/// [`fence_holds`] inside a transaction on PostgreSQL's own driver.
pub async fn fence_holds_on_postgres(
    conn: &mut sqlx::PgConnection,
    fence: &Fence,
) -> sqlx::Result<bool> {
    let held = sqlx::query(&format!("SELECT 1 FROM jobs WHERE {FENCE}"))
        .bind(&fence.job_id)
        .bind(&fence.worker_id)
        .bind(fence.attempts)
        .fetch_optional(conn)
        .await?;
    Ok(held.is_some())
}

pub async fn finish_success(db: &Db, fence: &Fence) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let result = sqlx::query(&sql(
        db,
        &format!(
            "UPDATE jobs SET status = 'success', error = NULL, finished_at = {{now}}, lease_until = NULL \
             WHERE {FENCE}"
        ),
    ))
    .bind(&fence.job_id)
    .bind(&fence.worker_id)
    .bind(fence.attempts)
    .execute(&db.bookkeeping)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Records several runs of this process as successes in one statement;
/// returns the ids whose fence held.
pub async fn finish_successes(
    db: &Db,
    fences: &[&Fence],
) -> sqlx::Result<std::collections::HashSet<String>> {
    let Some(first) = fences.first() else {
        return Ok(Default::default());
    };
    // One (id, attempts) pair per run: an OR of primary-key lookups, which
    // both engines answer by index.
    let runs: Vec<String> = (0..fences.len())
        .map(|i| format!("(id = ${} AND attempts = ${})", 2 * i + 2, 2 * i + 3))
        .collect();
    let statement = sql(
        db,
        &format!(
            "UPDATE jobs SET status = 'success', error = NULL, finished_at = {{now}}, lease_until = NULL \
             WHERE status = 'running' AND worker_id = $1 AND ({}) RETURNING id",
            runs.join(" OR ")
        ),
    );
    let mut query = sqlx::query_scalar::<_, String>(&statement).bind(&first.worker_id);
    // A fence of another worker simply does not match: its lease is lost.
    for fence in fences {
        query = query.bind(&fence.job_id).bind(fence.attempts);
    }
    let _turn = db.write_turn().await;
    Ok(query
        .fetch_all(&db.bookkeeping)
        .await?
        .into_iter()
        .collect())
}

pub async fn finish_canceled(db: &Db, fence: &Fence) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let result = sqlx::query(&sql(
        db,
        &format!(
            "UPDATE jobs SET status = 'canceled', finished_at = {{now}}, lease_until = NULL WHERE {FENCE}"
        ),
    ))
    .bind(&fence.job_id)
    .bind(&fence.worker_id)
    .bind(fence.attempts)
    .execute(&db.bookkeeping)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// True in an UPDATE of `jobs` when no other job of the row's tenant and
/// kind is queued: only then may the row go back to the queue. Otherwise
/// the queued job, asked for while this one ran, takes over its work.
/// The id of the job of the same kind queued behind, if any.
const BEHIND_ID: &str =
    "(SELECT behind.id FROM jobs behind WHERE behind.tenant_id = jobs.tenant_id \
     AND behind.kind = jobs.kind AND behind.status = 'queued')";

const NONE_QUEUED_BEHIND: &str =
    "NOT EXISTS (SELECT 1 FROM jobs behind WHERE behind.tenant_id = jobs.tenant_id \
     AND behind.kind = jobs.kind AND behind.status = 'queued')";

/// Runs a statement that may send a running job back to the queue once
/// more when it lost a race on PostgreSQL: a job queued behind it between
/// its check and its write breaks the one-queued-per-kind index, and the
/// second run sees that job and ends this one instead.
async fn requeue_with_one_retry<T, F, Fut>(mut statement: F) -> sqlx::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = sqlx::Result<T>>,
{
    match statement().await {
        Err(sqlx::Error::Database(err)) if err.is_unique_violation() => statement().await,
        other => other,
    }
}

/// Requeues the job with `backoff_ms` while attempts remain and no newer
/// job of its kind is queued, else marks it `error`. Returns the new
/// status, or `None` when the lease is lost.
pub async fn finish_failure(
    db: &Db,
    fence: &Fence,
    message: &str,
    backoff_ms: i64,
    retry: bool,
) -> sqlx::Result<Option<JobStatus>> {
    let _turn = db.write_turn().await;
    let retries =
        format!("CAST($6 AS BIGINT) = 1 AND attempts < max_attempts AND {NONE_QUEUED_BEHIND}");
    let statement = sql(
        db,
        &format!(
            "UPDATE jobs SET status = CASE WHEN {retries} THEN 'queued' ELSE 'error' END, \
             finished_at = CASE WHEN {retries} THEN NULL ELSE {{now}} END, \
             error = $4, run_after = {{now}} + $5, lease_until = NULL WHERE {FENCE} RETURNING status"
        ),
    );
    let status: Option<String> = requeue_with_one_retry(|| {
        sqlx::query_scalar(&statement)
            .bind(&fence.job_id)
            .bind(&fence.worker_id)
            .bind(fence.attempts)
            .bind(message)
            .bind(backoff_ms)
            .bind(i64::from(retry))
            .fetch_optional(&db.bookkeeping)
    })
    .await?;
    Ok(status.as_deref().and_then(JobStatus::parse))
}

/// Running jobs whose lease has passed go back to the queue while attempts
/// remain; when a newer job of their kind is queued, they end `superseded`
/// by it (it does the work); otherwise, out of attempts, `error`. Decided
/// inside the one UPDATE. Returns how many.
pub async fn reap_expired(db: &Db) -> sqlx::Result<u64> {
    let _turn = db.write_turn().await;
    let requeues = format!("attempts < max_attempts AND {NONE_QUEUED_BEHIND}");
    let statement = sql(
        db,
        &format!(
            "UPDATE jobs SET status = CASE WHEN {requeues} THEN 'queued' \
                     WHEN NOT {NONE_QUEUED_BEHIND} THEN 'superseded' ELSE 'error' END, \
             superseded_by = {BEHIND_ID}, \
             error = CASE WHEN {requeues} OR NOT {NONE_QUEUED_BEHIND} THEN error \
                     ELSE 'lease expired: the worker stopped after attempt ' || attempts || ' of ' || max_attempts END, \
             finished_at = CASE WHEN {requeues} THEN NULL ELSE {{now}} END, \
             run_after = {{now}}, lease_until = NULL \
             WHERE status = 'running' AND lease_until < {{now}}"
        ),
    );
    let result =
        requeue_with_one_retry(|| sqlx::query(&statement).execute(&db.bookkeeping)).await?;
    Ok(result.rows_affected())
}

/// Deletes finished jobs older than `cutoff_ms`, except the newest `keep` of
/// each (tenant, kind), which the sync-status history shows.
pub async fn prune_finished(db: &Db, cutoff_ms: i64, keep: i64) -> sqlx::Result<u64> {
    let _turn = db.write_turn().await;
    let result = sqlx::query(
        "DELETE FROM jobs WHERE status IN ('success', 'error', 'canceled', 'superseded') \
         AND finished_at < $1 \
         AND id NOT IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER \
           (PARTITION BY tenant_id, kind ORDER BY created_at DESC, id DESC) AS rn FROM jobs \
           WHERE status IN ('success', 'error', 'canceled', 'superseded')) ranked WHERE rn <= $2)",
    )
    .bind(cutoff_ms)
    .bind(keep)
    .execute(&db.pool)
    .await?;
    Ok(result.rows_affected())
}

pub enum CancelOutcome {
    /// A queued job, now canceled.
    Canceled,
    /// A running job, asked to stop.
    Requested,
    /// Already finished.
    Finished,
    NotFound,
}

pub async fn cancel(db: &Db, tenant: &TenantId, job_id: &str) -> sqlx::Result<CancelOutcome> {
    let _turn = db.write_turn().await;
    let queued = sqlx::query(&sql(
        db,
        "UPDATE jobs SET status = 'canceled', finished_at = {now} WHERE id = $1 AND tenant_id = $2 AND status = 'queued'",
    ))
    .bind(job_id)
    .bind(tenant.as_str())
    .execute(&db.pool)
    .await?;
    if queued.rows_affected() == 1 {
        return Ok(CancelOutcome::Canceled);
    }
    let running = sqlx::query(
        "UPDATE jobs SET cancel_requested = 1 WHERE id = $1 AND tenant_id = $2 AND status = 'running'",
    )
    .bind(job_id)
    .bind(tenant.as_str())
    .execute(&db.pool)
    .await?;
    if running.rows_affected() == 1 {
        return Ok(CancelOutcome::Requested);
    }
    Ok(match job(db, tenant, job_id).await? {
        Some(_) => CancelOutcome::Finished,
        None => CancelOutcome::NotFound,
    })
}

/// Cancels every queued job of `kind` for the tenant and asks the running
/// ones to stop; returns how many were touched.
pub async fn cancel_kind(db: &Db, tenant: &TenantId, kind: &str) -> sqlx::Result<u64> {
    let _turn = db.write_turn().await;
    let queued = sqlx::query(&sql(
        db,
        "UPDATE jobs SET status = 'canceled', finished_at = {now} \
         WHERE tenant_id = $1 AND kind = $2 AND status = 'queued'",
    ))
    .bind(tenant.as_str())
    .bind(kind)
    .execute(&db.pool)
    .await?;
    let running = sqlx::query(
        "UPDATE jobs SET cancel_requested = 1 \
         WHERE tenant_id = $1 AND kind = $2 AND status = 'running'",
    )
    .bind(tenant.as_str())
    .bind(kind)
    .execute(&db.pool)
    .await?;
    Ok(queued.rows_affected() + running.rows_affected())
}

pub async fn job(db: &Db, tenant: &TenantId, job_id: &str) -> sqlx::Result<Option<JobRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM jobs WHERE id = $1 AND tenant_id = $2"
    ))
    .bind(job_id)
    .bind(tenant.as_str())
    .fetch_optional(&db.pool)
    .await
}

pub struct JobFilter<'a> {
    pub kind: Option<&'a str>,
    pub status: Option<JobStatus>,
    pub limit: i64,
    pub offset: i64,
}

/// When a job of each of `kinds` last succeeded, per tenant of `tenants`:
/// `(tenant, kind, finished_at)` for the pairs that ever succeeded.
pub async fn last_successes(
    db: &Db,
    tenants: &[TenantId],
    kinds: &[String],
) -> sqlx::Result<Vec<(String, String, i64)>> {
    let tenants = cairn_core::db::tenant_ids_json(tenants);
    sqlx::query_as(&format!(
        "SELECT tenant_id, kind, CAST(MAX(finished_at) AS BIGINT) AS finished_at FROM jobs \
         WHERE tenant_id IN ({}) AND kind IN ({}) AND status = 'success' \
         AND finished_at IS NOT NULL GROUP BY tenant_id, kind",
        cairn_core::db::json_text_values(db.backend, 1),
        cairn_core::db::json_text_values(db.backend, 2)
    ))
    .bind(tenants)
    .bind(serde_json::to_string(kinds).unwrap_or_default())
    .fetch_all(&db.pool)
    .await
}

/// The tenant's jobs, newest first, and how many match in all.
pub async fn list(
    db: &Db,
    tenant: &TenantId,
    filter: &JobFilter<'_>,
) -> sqlx::Result<(Vec<JobRow>, i64)> {
    let condition = "tenant_id = $1 AND (CAST($2 AS TEXT) IS NULL OR kind = $2) \
                     AND (CAST($3 AS TEXT) IS NULL OR status = $3)";
    let status = filter.status.map(JobStatus::as_str);
    let rows = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM jobs WHERE {condition} ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5"
    ))
    .bind(tenant.as_str())
    .bind(filter.kind)
    .bind(status)
    .bind(filter.limit)
    .bind(filter.offset)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM jobs WHERE {condition}"))
        .bind(tenant.as_str())
        .bind(filter.kind)
        .bind(status)
        .fetch_one(&db.pool)
        .await?;
    Ok((rows, total))
}

/// Hands a job back to the queue without counting the attempt (graceful
/// shutdown); when a newer job of its kind is queued, that one takes over,
/// from this one's checkpoint when it has none of its own and needs the
/// same store (the same work goes on rather than starting over), and this
/// one ends `superseded` by it. False when the lease was already lost.
pub async fn release(db: &Db, fence: &Fence) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "UPDATE jobs SET checkpoint = (SELECT running.checkpoint FROM jobs running \
           WHERE running.id = $1 AND running.status = 'running' \
             AND running.worker_id = $2 AND running.attempts = $3) \
         WHERE status = 'queued' AND checkpoint IS NULL \
           AND tenant_id = (SELECT tenant_id FROM jobs WHERE id = $1) \
           AND kind = (SELECT kind FROM jobs WHERE id = $1) \
           AND affinity = (SELECT affinity FROM jobs WHERE id = $1)",
    )
    .bind(&fence.job_id)
    .bind(&fence.worker_id)
    .bind(fence.attempts)
    .execute(&db.bookkeeping)
    .await?;
    let statement = sql(
        db,
        &format!(
            "UPDATE jobs SET status = CASE WHEN {NONE_QUEUED_BEHIND} THEN 'queued' ELSE 'superseded' END, \
             finished_at = CASE WHEN {NONE_QUEUED_BEHIND} THEN NULL ELSE {{now}} END, \
             superseded_by = {BEHIND_ID}, \
             attempts = attempts - 1, lease_until = NULL, run_after = {{now}} WHERE {FENCE}"
        ),
    );
    let result = requeue_with_one_retry(|| {
        sqlx::query(&statement)
            .bind(&fence.job_id)
            .bind(&fence.worker_id)
            .bind(fence.attempts)
            .execute(&db.bookkeeping)
    })
    .await?;
    Ok(result.rows_affected() == 1)
}
