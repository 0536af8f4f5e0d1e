//! `vuln_tickets`: the ticket raised for a CVE at a company, so a second
//! request returns it. Creating one is claimed first (a row without a
//! ticket id) so two requests at once raise one ticket, not two.

use cairn_core::db::{now_ms, Db};
use cairn_core::ids::TenantId;

/// A claim older than this is a request that died midway; another may
/// take it over.
const CLAIM_MS: i64 = 120_000;

#[derive(Debug, sqlx_macros::FromRow)]
pub struct VulnTicket {
    pub ticket_id: Option<String>,
    pub summary: String,
    pub claimed_at: i64,
}

/// How a claim went.
pub enum Claim {
    /// This request creates the ticket.
    Claimed,
    /// A ticket exists already.
    Exists { ticket_id: String, summary: String },
    /// Another request is creating it right now.
    Busy,
}

/// Claims raising a ticket for (`cve_id`, `company_id`); with `replace`, an
/// existing ticket is forgotten and a new one raised.
pub async fn claim(
    db: &Db,
    tenant: &TenantId,
    cve_id: &str,
    company_id: &str,
    summary: &str,
    replace: bool,
) -> sqlx::Result<Claim> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let now = now_ms();
    let existing: Option<VulnTicket> = sqlx::query_as(
        "SELECT ticket_id, summary, claimed_at FROM vuln_tickets \
         WHERE tenant_id = $1 AND cve_id = $2 AND company_id = $3",
    )
    .bind(tenant.as_str())
    .bind(cve_id)
    .bind(company_id)
    .fetch_optional(&mut *tx)
    .await?;
    match existing {
        Some(VulnTicket {
            ticket_id: None,
            claimed_at,
            ..
        }) if now - claimed_at < CLAIM_MS => return Ok(Claim::Busy),
        Some(VulnTicket {
            ticket_id: Some(ticket_id),
            summary,
            ..
        }) if !replace => return Ok(Claim::Exists { ticket_id, summary }),
        _ => {}
    }
    // Inserting a row another request inserted meanwhile fails on the key
    // (PostgreSQL) or waits for the write lock (SQLite): never two claims.
    sqlx::query(
        "INSERT INTO vuln_tickets (tenant_id, cve_id, company_id, ticket_id, summary, claimed_at) \
         VALUES ($1, $2, $3, NULL, $4, $5) \
         ON CONFLICT (tenant_id, cve_id, company_id) DO UPDATE \
         SET ticket_id = NULL, summary = excluded.summary, claimed_at = excluded.claimed_at, \
             created_at = NULL",
    )
    .bind(tenant.as_str())
    .bind(cve_id)
    .bind(company_id)
    .bind(summary)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Claim::Claimed)
}

/// Records the ticket a claim raised.
pub async fn created(
    db: &Db,
    tenant: &TenantId,
    cve_id: &str,
    company_id: &str,
    ticket_id: &str,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "UPDATE vuln_tickets SET ticket_id = $4, created_at = $5 \
         WHERE tenant_id = $1 AND cve_id = $2 AND company_id = $3",
    )
    .bind(tenant.as_str())
    .bind(cve_id)
    .bind(company_id)
    .bind(ticket_id)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Drops a claim whose ticket could not be raised, so a retry may.
pub async fn release(
    db: &Db,
    tenant: &TenantId,
    cve_id: &str,
    company_id: &str,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "DELETE FROM vuln_tickets \
         WHERE tenant_id = $1 AND cve_id = $2 AND company_id = $3 AND ticket_id IS NULL",
    )
    .bind(tenant.as_str())
    .bind(cve_id)
    .bind(company_id)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// The CVEs tickets were raised for with ticket `ticket_id`.
pub async fn cves_of_ticket(
    db: &Db,
    tenant: &TenantId,
    ticket_id: &str,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT cve_id FROM vuln_tickets WHERE tenant_id = $1 AND ticket_id = $2 ORDER BY cve_id",
    )
    .bind(tenant.as_str())
    .bind(ticket_id)
    .fetch_all(&db.pool)
    .await
}
