//! Triage: a tenant's status for a CVE of one product, keyed by (vendor,
//! product, CVE) so it survives an upgrade to another vulnerable version,
//! with every change recorded. "Not affected", "false positive" and an
//! unexpired "risk accepted" take the CVE's findings of that product out
//! of the open counts (`suppressed_sql`).
//!
//! A tenant's status per (vendor, product, CVE) and its history;
//! `counts_open_sql` is the one definition of a finding that counts as open;
//! `triage_routes.rs` its routes.

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, to_rfc3339, Db};
use cairn_core::ids::TenantId;

/// The status of a CVE no one has triaged.
pub const TO_EVALUATE: &str = "to_evaluate";
pub const STATUSES: [&str; 7] = [
    TO_EVALUATE,
    "in_analysis",
    "remediation_in_progress",
    "resolved",
    NOT_AFFECTED,
    RISK_ACCEPTED,
    FALSE_POSITIVE,
];
pub const NOT_AFFECTED: &str = "not_affected";
pub const RISK_ACCEPTED: &str = "risk_accepted";
pub const FALSE_POSITIVE: &str = "false_positive";

/// When `status` stops taking findings out of the open counts: never
/// (far future), at the expiry, or not at all.
fn suppress_until(status: &str, expires_at: Option<i64>) -> Option<i64> {
    match status {
        NOT_AFFECTED | FALSE_POSITIVE => Some(i64::MAX),
        RISK_ACCEPTED => expires_at,
        _ => None,
    }
}

pub use crate::findings::vocabulary::{counts_open_sql, suppressed_sql};

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TriageView {
    pub cve_id: String,
    /// The CPE vendor and product of the findings it covers (empty for a
    /// scanner's findings, which name none).
    pub vendor: String,
    pub product: String,
    /// `to_evaluate`, `in_analysis`, `remediation_in_progress`,
    /// `resolved`, `not_affected`, `risk_accepted`, `false_positive`.
    pub status: String,
    /// Why it is not affected (required for `not_affected`).
    pub justification: Option<String>,
    /// When an accepted risk expires (required for `risk_accepted`).
    pub expires_at: Option<String>,
    /// The member handling it.
    pub assignee_id: Option<String>,
    /// Its findings are out of the open counts now.
    pub suppressed: bool,
    /// Who last set it and when; absent for a product never triaged.
    pub updated_by: Option<String>,
    pub updated_at: Option<String>,
}

const COLUMNS: &str = "cve_id, vendor, product, status, justification, expires_at, assignee_id, \
                       suppress_until, updated_by, updated_at";

fn view(r: &sqlx::any::AnyRow) -> sqlx::Result<TriageView> {
    Ok(TriageView {
        cve_id: r.try_get("cve_id")?,
        vendor: r.try_get("vendor")?,
        product: r.try_get("product")?,
        status: r.try_get("status")?,
        justification: r.try_get("justification")?,
        expires_at: r.try_get::<Option<i64>, _>("expires_at")?.map(to_rfc3339),
        assignee_id: r.try_get("assignee_id")?,
        suppressed: r
            .try_get::<Option<i64>, _>("suppress_until")?
            .is_some_and(|until| until > now_ms()),
        updated_by: Some(r.try_get("updated_by")?),
        updated_at: Some(to_rfc3339(r.try_get("updated_at")?)),
    })
}

/// The tenant's triage of one CVE, per product.
pub async fn of_cve(db: &Db, tenant: &TenantId, cve_id: &str) -> sqlx::Result<Vec<TriageView>> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM vuln_triage WHERE tenant_id = $1 AND cve_id = $2 \
         ORDER BY vendor, product"
    ))
    .bind(tenant.as_str())
    .bind(cve_id)
    .fetch_all(&db.pool)
    .await?;
    rows.iter().map(view).collect()
}

/// The tenant's triaged CVEs, most recently changed first, optionally of
/// one status or one assignee: a page and the total.
pub async fn triaged(
    db: &Db,
    tenant: &TenantId,
    status: Option<&str>,
    assignee: Option<&str>,
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<TriageView>, i64)> {
    let filter = "tenant_id = $1 AND (CAST($2 AS TEXT) IS NULL OR status = $2) \
                  AND (CAST($3 AS TEXT) IS NULL OR assignee_id = $3)";
    let total: i64 =
        sqlx::query_scalar(&format!("SELECT COUNT(*) FROM vuln_triage WHERE {filter}"))
            .bind(tenant.as_str())
            .bind(status)
            .bind(assignee)
            .fetch_one(&db.pool)
            .await?;
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM vuln_triage WHERE {filter} \
         ORDER BY updated_at DESC, cve_id LIMIT $4 OFFSET $5"
    ))
    .bind(tenant.as_str())
    .bind(status)
    .bind(assignee)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    Ok((rows.iter().map(view).collect::<sqlx::Result<_>>()?, total))
}

/// A change of one triage status.
pub struct Change<'a> {
    pub cve_id: &'a str,
    pub vendor: &'a str,
    pub product: &'a str,
    pub status: &'a str,
    pub justification: Option<&'a str>,
    pub expires_at: Option<i64>,
    pub assignee_id: Option<&'a str>,
    pub comment: &'a str,
    pub by: &'a str,
}

/// Sets a status and records the change (from, to, who, when, why) in one
/// transaction; the status as it is now.
pub async fn set(db: &Db, tenant: &TenantId, change: &Change<'_>) -> sqlx::Result<TriageView> {
    let now = now_ms();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let from: Option<String> = sqlx::query_scalar(
        "SELECT status FROM vuln_triage WHERE tenant_id = $1 AND cve_id = $2 \
         AND vendor = $3 AND product = $4",
    )
    .bind(tenant.as_str())
    .bind(change.cve_id)
    .bind(change.vendor)
    .bind(change.product)
    .fetch_optional(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO vuln_triage (tenant_id, vendor, product, cve_id, status, justification, \
         expires_at, assignee_id, suppress_until, updated_by, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT (tenant_id, cve_id, vendor, product) DO UPDATE SET status = excluded.status, \
         justification = excluded.justification, expires_at = excluded.expires_at, \
         assignee_id = excluded.assignee_id, suppress_until = excluded.suppress_until, \
         updated_by = excluded.updated_by, updated_at = excluded.updated_at",
    )
    .bind(tenant.as_str())
    .bind(change.vendor)
    .bind(change.product)
    .bind(change.cve_id)
    .bind(change.status)
    .bind(change.justification)
    .bind(change.expires_at)
    .bind(change.assignee_id)
    .bind(suppress_until(change.status, change.expires_at))
    .bind(change.by)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "INSERT INTO vuln_triage_history (id, tenant_id, vendor, product, cve_id, from_status, \
         to_status, justification, expires_at, assignee_id, comment, changed_by, changed_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(tenant.as_str())
    .bind(change.vendor)
    .bind(change.product)
    .bind(change.cve_id)
    .bind(from.as_deref().unwrap_or(TO_EVALUATE))
    .bind(change.status)
    .bind(change.justification)
    .bind(change.expires_at)
    .bind(change.assignee_id)
    .bind(change.comment)
    .bind(change.by)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    crate::findings::vocabulary::count_write(&mut tx, db, tenant).await?;
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM vuln_triage WHERE tenant_id = $1 AND cve_id = $2 \
         AND vendor = $3 AND product = $4"
    ))
    .bind(tenant.as_str())
    .bind(change.cve_id)
    .bind(change.vendor)
    .bind(change.product)
    .fetch_one(&mut *tx)
    .await?;
    crate::findings::vocabulary::commit(tx, db, tenant).await?;
    view(&row)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TriageChange {
    pub vendor: String,
    pub product: String,
    pub from_status: String,
    pub to_status: String,
    pub justification: Option<String>,
    pub expires_at: Option<String>,
    pub assignee_id: Option<String>,
    pub comment: String,
    /// The member's e-mail (their id when they left the tenant).
    pub changed_by: String,
    pub changed_at: String,
}

/// Every change of the tenant's triage of one CVE, newest first.
pub async fn history(db: &Db, tenant: &TenantId, cve_id: &str) -> sqlx::Result<Vec<TriageChange>> {
    let rows = sqlx::query(
        "SELECT vendor, product, from_status, to_status, justification, expires_at, assignee_id, \
         comment, changed_by, changed_at FROM vuln_triage_history \
         WHERE tenant_id = $1 AND cve_id = $2 ORDER BY changed_at DESC, id DESC",
    )
    .bind(tenant.as_str())
    .bind(cve_id)
    .fetch_all(&db.pool)
    .await?;
    let emails = cairn_platform::tenancy::member_emails(db, tenant).await?;
    rows.into_iter()
        .map(|r| {
            let by: String = r.try_get("changed_by")?;
            Ok(TriageChange {
                vendor: r.try_get("vendor")?,
                product: r.try_get("product")?,
                from_status: r.try_get("from_status")?,
                to_status: r.try_get("to_status")?,
                justification: r.try_get("justification")?,
                expires_at: r.try_get::<Option<i64>, _>("expires_at")?.map(to_rfc3339),
                assignee_id: r.try_get("assignee_id")?,
                comment: r.try_get("comment")?,
                changed_by: emails.get(&by).cloned().unwrap_or(by),
                changed_at: to_rfc3339(r.try_get("changed_at")?),
            })
        })
        .collect()
}

/// The (vendor, product) pairs of the tenant's findings of a CVE (any
/// status; empty strings for a scanner's).
pub async fn products_of_cve(
    db: &Db,
    tenant: &TenantId,
    cve_id: &str,
) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(&format!(
        "SELECT DISTINCT vendor, product FROM {} f WHERE tenant_id = $1 AND cve_id = $2 \
         ORDER BY vendor, product",
        crate::findings::vocabulary::ALL_FINDINGS
    ))
    .bind(tenant.as_str())
    .bind(cve_id)
    .fetch_all(&db.pool)
    .await
}
