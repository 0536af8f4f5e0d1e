//! `reports`: one row per report asked for, with its status and, once
//! written, its file (a key in the reports store).

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, stored_json, to_rfc3339, Db};
use cairn_core::ids::TenantId;
use cairn_jobs::{JobContext, JobFailure};

/// A report's states, in the jobs' words.
pub const STATUSES: [&str; 4] = ["queued", "running", "success", "error"];

#[derive(Debug, Serialize, ToSchema)]
pub struct ReportView {
    pub id: String,
    /// `executive_summary`, `vulnerabilities`, `software_inventory`,
    /// `version_compliance`, `device`, `customer_review`,
    /// `exception_register` or `evidence_pack`.
    pub report_type: String,
    /// `pdf`, `csv` or `xlsx`.
    pub format: String,
    #[schema(value_type = super::content::Scope)]
    pub scope: serde_json::Value,
    pub title: String,
    /// `queued`, `running`, `success` or `error` (the jobs' words):
    /// [`STATUSES`].
    pub status: String,
    pub error: Option<String>,
    /// The download's file name, once written.
    pub file_name: Option<String>,
    pub size_bytes: Option<i64>,
    /// Table rows written.
    pub row_count: Option<i64>,
    pub created_by: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// The portal client whose documents the written file joins.
    pub publish_to_portal_client: Option<String>,
    /// The document's id among that client's files, once published.
    pub published_document_id: Option<String>,
    /// Why publishing failed, when it did (the report itself is written).
    pub publish_error: Option<String>,
}

const COLUMNS: &str = "id, report_type, format, scope, title, status, error, file_name, \
    size_bytes, row_count, created_by, created_at, finished_at, publish_to, published_file_id, \
    publish_error";

fn view(r: sqlx::any::AnyRow) -> sqlx::Result<ReportView> {
    Ok(ReportView {
        id: r.try_get("id")?,
        report_type: r.try_get("report_type")?,
        format: r.try_get("format")?,
        scope: stored_json("scope", r.try_get("scope")?)?,
        title: r.try_get("title")?,
        status: r.try_get("status")?,
        error: r.try_get("error")?,
        file_name: r.try_get("file_name")?,
        size_bytes: r.try_get("size_bytes")?,
        row_count: r.try_get("row_count")?,
        created_by: r.try_get("created_by")?,
        created_at: to_rfc3339(r.try_get("created_at")?),
        finished_at: r.try_get::<Option<i64>, _>("finished_at")?.map(to_rfc3339),
        publish_to_portal_client: r.try_get("publish_to")?,
        published_document_id: r.try_get("published_file_id")?,
        publish_error: r.try_get("publish_error")?,
    })
}

pub struct NewReport<'a> {
    pub report_type: &'a str,
    pub format: &'a str,
    pub scope: &'a serde_json::Value,
    pub title: &'a str,
    pub created_by: &'a str,
    /// A portal client of the tenant (checked) to publish the file to.
    pub publish_to: Option<&'a str>,
}

pub async fn create(db: &Db, tenant: &TenantId, report: NewReport<'_>) -> sqlx::Result<String> {
    let id = uuid::Uuid::now_v7().to_string();
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO reports (id, tenant_id, report_type, format, scope, title, status, \
         created_by, created_at, publish_to) VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $8, $9)",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(report.report_type)
    .bind(report.format)
    .bind(report.scope.to_string())
    .bind(report.title)
    .bind(report.created_by)
    .bind(now_ms())
    .bind(report.publish_to)
    .execute(&db.pool)
    .await?;
    Ok(id)
}

/// The portal client a report is published to, if any.
pub async fn publish_to(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<Option<String>> {
    Ok(
        sqlx::query_scalar("SELECT publish_to FROM reports WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(id)
            .fetch_optional(&db.pool)
            .await?
            .flatten(),
    )
}

/// Records where a report was published, or why it was not.
pub async fn published(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    outcome: Result<&str, &str>,
) -> sqlx::Result<()> {
    let (file, error) = match outcome {
        Ok(file) => (Some(file), None),
        Err(error) => (None, Some(error)),
    };
    let _turn = db.write_turn().await;
    sqlx::query(
        "UPDATE reports SET published_file_id = $3, publish_error = $4 \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(file)
    .bind(error)
    .execute(&db.pool)
    .await?;
    Ok(())
}

pub async fn list(
    db: &Db,
    tenant: &TenantId,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<ReportView>, i64)> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM reports WHERE tenant_id = $1 \
         ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
    ))
    .bind(tenant.as_str())
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM reports WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_one(&db.pool)
        .await?;
    Ok((
        rows.into_iter().map(view).collect::<sqlx::Result<_>>()?,
        total,
    ))
}

pub async fn one(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<Option<ReportView>> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM reports WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(view).transpose()
}

/// The stored file of a finished report: (key in the reports store, file
/// name).
pub async fn file_of(
    db: &Db,
    tenant: &TenantId,
    id: &str,
) -> sqlx::Result<Option<(Option<String>, Option<String>)>> {
    sqlx::query_as("SELECT stored_path, file_name FROM reports WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(id)
        .fetch_optional(&db.pool)
        .await
}

/// The next queued report of the tenant, marked running. Like every write
/// of the `report_generate` job, it holds the job's fence: a run that lost
/// its lease writes nothing.
pub async fn claim_next(ctx: &JobContext) -> Result<Option<String>, JobFailure> {
    let (db, tenant) = (ctx.db(), ctx.tenant_id());
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    ctx.hold_in(&mut tx).await?;
    let next: Option<String> = sqlx::query_scalar(
        "SELECT id FROM reports WHERE tenant_id = $1 AND status IN ('queued', 'running') \
         ORDER BY created_at, id LIMIT 1",
    )
    .bind(tenant.as_str())
    .fetch_optional(&mut *tx)
    .await?;
    if let Some(id) = &next {
        sqlx::query("UPDATE reports SET status = 'running' WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(next)
}

/// The type, format and scope of a report to write.
pub async fn request_of(
    db: &Db,
    tenant: &TenantId,
    id: &str,
) -> sqlx::Result<Option<(String, String, String)>> {
    sqlx::query_as(
        "SELECT report_type, format, scope FROM reports WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await
}

/// What a written report records.
pub struct Written<'a> {
    /// Its key in the reports store.
    pub key: &'a str,
    pub file_name: &'a str,
    pub size_bytes: i64,
    pub row_count: i64,
}

/// Records a written file; false when the report was deleted meanwhile
/// (the caller then removes the file).
pub async fn succeeded(
    ctx: &JobContext,
    id: &str,
    written: Written<'_>,
) -> Result<bool, JobFailure> {
    let (db, tenant) = (ctx.db(), ctx.tenant_id());
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    ctx.hold_in(&mut tx).await?;
    let updated = sqlx::query(
        "UPDATE reports SET status = 'success', stored_path = $3, file_name = $4, \
         size_bytes = $5, row_count = $6, finished_at = $7, error = NULL \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(written.key)
    .bind(written.file_name)
    .bind(written.size_bytes)
    .bind(written.row_count)
    .bind(now_ms())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    tx.commit().await?;
    Ok(updated == 1)
}

pub async fn failed(ctx: &JobContext, id: &str, error: &str) -> Result<(), JobFailure> {
    let (db, tenant) = (ctx.db(), ctx.tenant_id());
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    ctx.hold_in(&mut tx).await?;
    sqlx::query(
        "UPDATE reports SET status = 'error', error = $3, finished_at = $4 \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(error)
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Deletes the report row; its stored path, if it had a file.
pub async fn delete(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<Option<Option<String>>> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let path: Option<Option<String>> =
        sqlx::query_scalar("SELECT stored_path FROM reports WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
    if path.is_some() {
        sqlx::query("DELETE FROM reports WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(path)
}

/// Reports of every tenant finished before `before_ms`: (tenant, id).
pub async fn expired(db: &Db, before_ms: i64) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(
        "SELECT tenant_id, id FROM reports WHERE finished_at IS NOT NULL AND finished_at < $1",
    )
    .bind(before_ms)
    .fetch_all(&db.pool)
    .await
}
