//! The `csv_uploads` table, and what the csv-sources routes read of the
//! rows a source wrote. Every query is scoped by tenant.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, to_rfc3339, Db, StoredJson};
use cairn_core::ids::TenantId;
use cairn_core::uploads::Received;
use cairn_inventory::records;
use cairn_jobs::{JobContext, JobFailure};

/// Upload states: waiting for the parse job, being parsed, and the two
/// final ones.
pub const QUEUED: &str = "queued";
pub const PARSING: &str = "parsing";
pub const SUCCESS: &str = "success";
pub const ERROR: &str = "error";
pub const STATUSES: [&str; 4] = [QUEUED, PARSING, SUCCESS, ERROR];

#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct UploadRow {
    pub id: String,
    pub tenant_id: String,
    pub source_key: String,
    pub filename: String,
    pub size_bytes: i64,
    pub content_type: String,
    pub sheet: Option<String>,
    pub status: String,
    pub error: Option<String>,
    pub job_id: Option<String>,
    pub format: Option<String>,
    pub header_row: Option<i64>,
    pub columns: StoredJson<Vec<String>>,
    pub rows_read: i64,
    pub rows_imported: i64,
    pub rows_rejected: i64,
    pub duplicates: i64,
    pub rejections: StoredJson<Vec<Rejection>>,
    pub sample_rows: StoredJson<Vec<Value>>,
    pub fill_rate: StoredJson,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

const COLUMNS: &str = "id, tenant_id, source_key, filename, size_bytes, content_type, sheet, \
    status, error, job_id, format, header_row, columns, rows_read, rows_imported, rows_rejected, \
    duplicates, rejections, sample_rows, fill_rate, created_at, started_at, finished_at";

/// One rejected row and why.
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
pub struct Rejection {
    /// Row number in the file (1-based, as a spreadsheet shows it).
    pub row: u64,
    pub reason: String,
}

/// An upload and what its parse found.
#[derive(Debug, Serialize, ToSchema)]
pub struct UploadView {
    pub id: String,
    pub source_key: String,
    pub filename: String,
    pub size_bytes: i64,
    pub content_type: String,
    /// The sheet asked for (xlsx); the first sheet when absent.
    pub sheet: Option<String>,
    /// `queued`, `parsing`, `success` or `error` (the jobs' words).
    pub status: String,
    /// Why the upload failed; previously imported data is then untouched.
    pub error: Option<String>,
    /// The `csv_parse` job that parses it (`GET /api/v1/jobs/{id}`).
    pub job_id: Option<String>,
    /// `csv` or `xlsx`, once detected.
    pub format: Option<String>,
    /// Row number of the header (rows above it were preamble).
    pub header_row: Option<i64>,
    /// The header as matched: the provider's column names, or the file's
    /// text for columns the provider does not know.
    pub columns: Vec<String>,
    /// Data rows read so far (grows while parsing).
    pub rows_read: i64,
    /// Rows written (after duplicates were dropped).
    pub rows_imported: i64,
    pub rows_rejected: i64,
    /// Rows that repeated an earlier row's key; the first one is kept.
    pub duplicates: i64,
    /// The first rejected rows and why.
    pub rejections: Vec<Rejection>,
    /// The first data rows, keyed by column.
    #[schema(value_type = Vec<HashMap<String, Value>>)]
    pub sample_rows: Vec<Value>,
    /// Share of data rows with a non-blank value, per column (0 to 1).
    #[schema(value_type = HashMap<String, f64>)]
    pub fill_rate: Value,
    pub created_at: String,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
}

impl From<UploadRow> for UploadView {
    fn from(row: UploadRow) -> Self {
        UploadView {
            columns: row.columns.0,
            rejections: row.rejections.0,
            sample_rows: row.sample_rows.0,
            fill_rate: row.fill_rate.0,
            id: row.id,
            source_key: row.source_key,
            filename: row.filename,
            size_bytes: row.size_bytes,
            content_type: row.content_type,
            sheet: row.sheet,
            status: row.status,
            error: row.error,
            job_id: row.job_id,
            format: row.format,
            header_row: row.header_row,
            rows_read: row.rows_read,
            rows_imported: row.rows_imported,
            rows_rejected: row.rows_rejected,
            duplicates: row.duplicates,
            created_at: to_rfc3339(row.created_at),
            started_at: row.started_at.map(to_rfc3339),
            finished_at: row.finished_at.map(to_rfc3339),
        }
    }
}

pub struct NewUpload<'a> {
    pub id: &'a str,
    pub source_key: &'a str,
    pub received: &'a Received,
    pub sheet: Option<&'a str>,
    pub uploaded_by: &'a str,
    /// The store keeping its file (`cairn_jobs::Queue::holder`; empty: a
    /// store every process reads).
    pub store: &'a str,
}

pub async fn insert(db: &Db, tenant: &TenantId, upload: NewUpload<'_>) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO csv_uploads (id, tenant_id, source_key, filename, size_bytes, content_type, \
         sheet, status, uploaded_by, created_at, store) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(upload.id)
    .bind(tenant.as_str())
    .bind(upload.source_key)
    .bind(&upload.received.name)
    .bind(upload.received.size as i64)
    .bind(&upload.received.content_type)
    .bind(upload.sheet)
    .bind(QUEUED)
    .bind(upload.uploaded_by)
    .bind(now_ms())
    .bind(upload.store)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Records the job that will parse the upload (unless it already ended).
pub async fn set_job(db: &Db, tenant: &TenantId, id: &str, job_id: &str) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query("UPDATE csv_uploads SET job_id = $3 WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(id)
        .bind(job_id)
        .execute(&db.pool)
        .await?;
    Ok(())
}

/// The tenant's oldest upload still waiting. One parse job runs per tenant,
/// so an upload found `parsing` here was left by a run that died: it
/// starts over.
pub async fn next_waiting(
    db: &Db,
    tenant: &TenantId,
    store: &str,
) -> sqlx::Result<Option<UploadRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM csv_uploads WHERE tenant_id = $1 AND status IN ($2, $3) \
         AND store = $4 ORDER BY created_at, id LIMIT 1"
    ))
    .bind(tenant.as_str())
    .bind(QUEUED)
    .bind(PARSING)
    .bind(store)
    .fetch_optional(&db.pool)
    .await
}

/// A store other than `store` keeping an upload of the tenant that waits
/// for its parse: the parse that ends queues the next one there.
pub async fn other_store_waiting(
    db: &Db,
    tenant: &TenantId,
    store: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT store FROM csv_uploads WHERE tenant_id = $1 AND status IN ($2, $3) \
         AND store <> $4 ORDER BY created_at, id LIMIT 1",
    )
    .bind(tenant.as_str())
    .bind(QUEUED)
    .bind(PARSING)
    .bind(store)
    .fetch_optional(&db.pool)
    .await
}

/// Tenants with an upload queued for longer than `older_than_ms`, with the
/// store keeping it: the sweeper makes sure each has a parse job there.
pub async fn tenants_waiting(db: &Db, older_than_ms: i64) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(
        "SELECT DISTINCT tenant_id, store FROM csv_uploads WHERE status IN ($1, $2) \
         AND created_at < $3",
    )
    .bind(QUEUED)
    .bind(PARSING)
    .bind(now_ms() - older_than_ms)
    .fetch_all(&db.pool)
    .await
}

pub async fn start(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    job_id: &str,
    format: &str,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "UPDATE csv_uploads SET status = $3, job_id = $4, format = $5, started_at = $6, \
         error = NULL, header_row = NULL, columns = '[]', rows_read = 0, rows_imported = 0, \
         rows_rejected = 0, duplicates = 0, rejections = '[]', sample_rows = '[]', fill_rate = '{}' \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(PARSING)
    .bind(job_id)
    .bind(format)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// What a parse has found so far; written while it runs and at the end,
/// and kept in the job's checkpoint while the parsed rows are swapped in.
#[derive(Debug, Default, Clone, Serialize, serde::Deserialize)]
pub struct ParseReport {
    pub header_row: Option<u64>,
    pub columns: Vec<String>,
    pub rows_read: u64,
    pub rows_imported: u64,
    pub rows_rejected: u64,
    pub duplicates: u64,
    pub rejections: Vec<Rejection>,
    pub sample_rows: Vec<Value>,
    pub fill_rate: serde_json::Map<String, Value>,
}

/// Writes the report; `status` and `error` when the upload ends. Fenced
/// by the parse job's lease: a run that lost its job writes nothing (the
/// run that took over owns the upload now).
pub async fn write_report(
    ctx: &JobContext,
    id: &str,
    report: &ParseReport,
    end: Option<(&str, Option<&str>)>,
) -> Result<(), JobFailure> {
    let db = ctx.db();
    let tenant = ctx.tenant_id();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    ctx.hold_in(&mut tx).await?;
    let (status, error, finished_at) = match end {
        Some((status, error)) => (status, error, Some(now_ms())),
        None => (PARSING, None, None),
    };
    sqlx::query(
        "UPDATE csv_uploads SET status = $3, error = $4, finished_at = $5, header_row = $6, \
         columns = $7, rows_read = $8, rows_imported = $9, rows_rejected = $10, duplicates = $11, \
         rejections = $12, sample_rows = $13, fill_rate = $14 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(status)
    .bind(error)
    .bind(finished_at)
    .bind(report.header_row.map(|r| r as i64))
    .bind(serde_json::to_string(&report.columns).unwrap_or_else(|_| "[]".into()))
    .bind(report.rows_read as i64)
    .bind(report.rows_imported as i64)
    .bind(report.rows_rejected as i64)
    .bind(report.duplicates as i64)
    .bind(serde_json::to_string(&report.rejections).unwrap_or_else(|_| "[]".into()))
    .bind(serde_json::to_string(&report.sample_rows).unwrap_or_else(|_| "[]".into()))
    .bind(Value::Object(report.fill_rate.clone()).to_string())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// The tenant's uploads (of any source) that failed at or after `since`,
/// newest first, at most `limit`.
pub async fn failed_since(
    db: &Db,
    tenant: &TenantId,
    since: i64,
    limit: i64,
) -> sqlx::Result<Vec<UploadRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM csv_uploads WHERE tenant_id = $1 AND status = $2 \
         AND created_at >= $3 ORDER BY created_at DESC, id DESC LIMIT $4"
    ))
    .bind(tenant.as_str())
    .bind(ERROR)
    .bind(since)
    .bind(limit)
    .fetch_all(&db.pool)
    .await
}

pub async fn list(
    db: &Db,
    tenant: &TenantId,
    source_key: &str,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<UploadRow>, i64)> {
    let rows = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM csv_uploads WHERE tenant_id = $1 AND source_key = $2 \
         ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4"
    ))
    .bind(tenant.as_str())
    .bind(source_key)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar(
        "SELECT COUNT(*) FROM csv_uploads WHERE tenant_id = $1 AND source_key = $2",
    )
    .bind(tenant.as_str())
    .bind(source_key)
    .fetch_one(&db.pool)
    .await?;
    Ok((rows, total))
}

pub async fn get(
    db: &Db,
    tenant: &TenantId,
    source_key: &str,
    id: &str,
) -> sqlx::Result<Option<UploadRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM csv_uploads WHERE tenant_id = $1 AND source_key = $2 AND id = $3"
    ))
    .bind(tenant.as_str())
    .bind(source_key)
    .bind(id)
    .fetch_optional(&db.pool)
    .await
}

/// Per-tenant figures of one source.
#[derive(Debug, Serialize, ToSchema)]
pub struct CsvSourceStats {
    /// Rows the source holds now: inventory items (software target) or
    /// records.
    pub rows: i64,
    /// Distinct device names among them.
    pub devices: i64,
    pub uploads: i64,
    pub last_upload: Option<UploadView>,
}

pub async fn stats(
    db: &Db,
    tenant: &TenantId,
    source_key: &str,
    writes_items: bool,
) -> sqlx::Result<CsvSourceStats> {
    let (rows, devices): (i64, i64) = if writes_items {
        let held = cairn_inventory::items::source_counts(db, tenant, source_key).await?;
        (held.items, held.devices)
    } else {
        let held = records::source_counts(db, tenant, source_key).await?;
        (held.records, held.devices)
    };
    let (last, uploads) = list(db, tenant, source_key, 0, 1).await?;
    Ok(CsvSourceStats {
        rows,
        devices,
        uploads,
        last_upload: last.into_iter().next().map(UploadView::from),
    })
}

/// Deletes everything the source wrote for the tenant. Returns the rows
/// deleted.
pub async fn purge(db: &Db, tenant: &TenantId, source_key: &str) -> sqlx::Result<u64> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let mut deleted = cairn_inventory::items::delete_source(&mut tx, tenant, source_key).await?;
    deleted += records::delete_source(&mut tx, tenant, source_key).await?;
    tx.commit().await?;
    Ok(deleted)
}
