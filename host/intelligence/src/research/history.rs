//! `research_history`: every research request, per tenant and user.

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, to_rfc3339, Db};
use cairn_core::ids::TenantId;

pub const CVE: &str = "cve";
pub const PRODUCT: &str = "product";
/// What a research was of.
pub const KINDS: [&str; 2] = [CVE, PRODUCT];

pub async fn record(
    db: &Db,
    tenant: &TenantId,
    user_id: &str,
    kind: &str,
    query: &str,
    result_count: i64,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO research_history (id, tenant_id, user_id, kind, query, result_count, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(tenant.as_str())
    .bind(user_id)
    .bind(kind)
    .bind(query)
    .bind(result_count)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(())
}

#[derive(Debug, Serialize, ToSchema)]
pub struct HistoryEntry {
    pub id: String,
    /// `cve` or `product`.
    pub kind: String,
    /// The CVE id, or the product as `vendor:product` or the application
    /// name asked for.
    pub query: String,
    /// CVEs the answer held.
    pub result_count: i64,
    /// Who asked (their e-mail; absent when they left the tenant).
    pub user_email: Option<String>,
    pub created_at: String,
}

/// The tenant's research, newest first; `user_id` narrows it to one
/// person's, `kind` to one kind.
pub async fn entries(
    db: &Db,
    tenant: &TenantId,
    user_id: Option<&str>,
    kind: Option<&str>,
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<HistoryEntry>, i64)> {
    let filter = "h.tenant_id = $1 AND (CAST($2 AS TEXT) IS NULL OR h.user_id = $2) \
                  AND (CAST($3 AS TEXT) IS NULL OR h.kind = $3)";
    let total: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM research_history h WHERE {filter}"
    ))
    .bind(tenant.as_str())
    .bind(user_id)
    .bind(kind)
    .fetch_one(&db.pool)
    .await?;
    let rows = sqlx::query(&format!(
        "SELECT h.id, h.kind, h.query, h.result_count, h.user_id, h.created_at \
         FROM research_history h \
         WHERE {filter} ORDER BY h.created_at DESC, h.id DESC LIMIT $4 OFFSET $5"
    ))
    .bind(tenant.as_str())
    .bind(user_id)
    .bind(kind)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    // Named only while they are a member of this tenant.
    let emails = cairn_platform::tenancy::member_emails(db, tenant).await?;
    Ok((
        rows.into_iter()
            .map(|r| {
                Ok(HistoryEntry {
                    id: r.try_get("id")?,
                    kind: r.try_get("kind")?,
                    query: r.try_get("query")?,
                    result_count: r.try_get("result_count")?,
                    user_email: emails.get(r.try_get::<&str, _>("user_id")?).cloned(),
                    created_at: to_rfc3339(r.try_get("created_at")?),
                })
            })
            .collect::<sqlx::Result<_>>()?,
        total,
    ))
}
