//! The words every findings module shares: what an open finding is, what
//! triage takes out of the open counts, matched and scanner findings as
//! one table, what a scan covers and counts, and how a write of findings
//! or triage is announced. A leaf: the `scan` job, the writes (`writes`,
//! `scanner`), triage, the figures (`figures`, `posture`) and the views
//! all use it, and it uses none of them.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use sqlx::{Any, Transaction};
use utoipa::ToSchema;

use cairn_core::db::{changes, Backend, Db};
use cairn_core::ids::TenantId;
use cairn_inventory::software::SoftwareScope;

/// A finding that is open (its status).
pub const OPEN: &str = "open";
/// A finding's states: open, or fixed (a later inventory no longer has it).
pub const FINDING_STATUSES: [&str; 2] = [OPEN, "fixed"];
/// A scan's states, in the jobs' words.
pub const SCAN_STATUSES: [&str; 4] = ["queued", "running", "success", "error"];

/// What a scan covers; stored on the scan as JSON.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ScanScope {
    /// Only this application (its rolled-up name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<String>,
    /// Only software of this vendor or publisher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Only this device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
    /// Re-read the whole inventory even when the tenant was matched before
    /// (a whole-inventory scan otherwise re-matches only what changed since).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub full: bool,
}

impl ScanScope {
    pub fn covers_everything(&self) -> bool {
        self.application.is_none() && self.vendor.is_none() && self.device_name.is_none()
    }

    pub(crate) fn software(&self) -> SoftwareScope {
        SoftwareScope {
            application: self.application.clone(),
            vendor: self.vendor.clone(),
            device_name: self.device_name.clone(),
            platform: None,
        }
    }
}

/// Counts a scan reports.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ScanCounts {
    pub applications: i64,
    pub devices: i64,
    pub findings: i64,
    pub new_findings: i64,
    pub fixed_findings: i64,
    /// Open findings by CVE severity (`critical`, `high`, `medium`, `low`,
    /// `none`, `unknown`).
    pub by_severity: HashMap<String, i64>,
}

/// SQL true when the finding aliased `f` (with `vendor` and `product` as
/// SQL expressions over it) is taken out of the open counts by its
/// tenant's triage now.
pub fn suppressed_sql(backend: Backend, vendor: &str, product: &str) -> String {
    format!(
        "EXISTS (SELECT 1 FROM vuln_triage t WHERE t.tenant_id = f.tenant_id \
         AND t.cve_id = f.cve_id AND t.vendor = {vendor} AND t.product = {product} \
         AND t.suppress_until > {})",
        now_sql(backend)
    )
}

/// SQL true when the finding aliased `f` counts as open: open, and not
/// taken out by triage. `scanner` for rows of the scanner findings table,
/// which name no product.
pub fn counts_open_sql(backend: Backend, scanner: bool) -> String {
    let (vendor, product) = if scanner {
        ("''", "''")
    } else {
        ("f.vendor", "f.product")
    };
    format!(
        "f.status = 'open' AND NOT {}",
        suppressed_sql(backend, vendor, product)
    )
}

/// Matched findings and those a scanner reported, in one shape. A
/// scanner's finding has its area as `source`, its check as `criteria`,
/// its title as the application, and no version, product, range or fix;
/// it counts once the CVE store knows its CVE (as matched ones always do).
pub(super) const ALL_FINDINGS: &str =
    "(SELECT tenant_id, device_name, application_name, version, cve_id, \
     vendor, product, source, criteria, match_id, version_range, fix_version, status, \
     first_seen, last_seen, fixed_at FROM vuln_findings \
     UNION ALL SELECT tenant_id, device_name, title, '', cve_id, '', '', area, \
     area || ' check ' || check_id, NULL, '', NULL, status, first_seen, last_seen, \
     CASE WHEN status = 'fixed' THEN last_seen END FROM vuln_scanner_findings s \
     WHERE EXISTS (SELECT 1 FROM vuln_cves k WHERE k.id = s.cve_id))";

/// The change topic of a tenant's findings and triage (see
/// [`cairn_core::db::changes`]): what answers kept in memory, such as the
/// open CVEs by application, are stamped with.
pub const FINDINGS_TOPIC: &str = "findings";

/// Counts a write of the tenant's findings or triage, inside `tx`, and
/// announces it to the other processes at commit. The transaction ends
/// with [`commit`].
pub async fn count_write(
    tx: &mut Transaction<'_, Any>,
    db: &Db,
    tenant: &TenantId,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO vuln_findings_writes (tenant_id, writes) VALUES ($1, 1) \
         ON CONFLICT (tenant_id) DO UPDATE SET writes = vuln_findings_writes.writes + 1",
    )
    .bind(tenant.as_str())
    .execute(&mut **tx)
    .await?;
    changes::announce(tx, db, FINDINGS_TOPIC, tenant.as_str()).await
}

/// Commits a transaction that called [`count_write`], then counts the
/// write in this process: an answer read before the commit is not kept
/// past it.
pub async fn commit(tx: Transaction<'_, Any>, db: &Db, tenant: &TenantId) -> sqlx::Result<()> {
    tx.commit().await?;
    changes::written(db, FINDINGS_TOPIC, tenant.as_str());
    Ok(())
}

/// The database's clock in Unix ms.
fn now_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "CAST(strftime('%s', 'now') AS BIGINT) * 1000",
        Backend::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    }
}
