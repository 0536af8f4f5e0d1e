//! What the vulnerabilities routes read: findings aggregated per CVE, the
//! devices of one CVE, scans, statistics, unmatched applications. Every
//! query is scoped by tenant; reference data (CVE text, scores, KEV, EPSS)
//! is joined in as it is now.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use sqlx::Row;
use utoipa::ToSchema;

use crate::findings::vocabulary::ScanScope;
use crate::findings::vocabulary::OPEN;
use crate::findings::vocabulary::{counts_open_sql, suppressed_sql};
use crate::matching::identify::clean_name;
use cairn_core::db::{changes, stored_json, to_rfc3339, Db};
use cairn_core::ids::TenantId;
use cairn_inventory::search::escape_like;

use crate::findings::vocabulary::ALL_FINDINGS;

/// A list's finding status (`open`, `accepted`, `fixed` or `all`) as the
/// status to bind and a triage condition over `f`: `open` leaves out the
/// open findings the tenant's triage takes out of the open counts;
/// `accepted` is exactly those.
pub fn status_filter(backend: cairn_core::db::Backend, status: &str) -> (&'static str, String) {
    let suppressed = suppressed_sql(backend, "f.vendor", "f.product");
    match status {
        "open" => ("open", format!("NOT {suppressed}")),
        "accepted" => ("open", suppressed),
        "fixed" => ("fixed", "1 = 1".into()),
        _ => ("all", "1 = 1".into()),
    }
}

/// What `sources` calls a finding Cairn matched against installed software.
const MATCHED: &str = "matched";

/// A CVE found on the tenant's devices.
#[derive(Debug, Serialize, ToSchema)]
pub struct VulnerabilityView {
    pub cve_id: String,
    pub description: String,
    /// `critical`, `high`, `medium`, `low`, `none`; absent when no score.
    pub severity: Option<String>,
    pub cvss_score: Option<f64>,
    pub cvss_version: Option<String>,
    /// EPSS probability (0-1) and percentile, when FIRST scored it.
    pub epss_score: Option<f64>,
    pub epss_percentile: Option<f64>,
    /// In CISA's Known Exploited Vulnerabilities catalog.
    pub kev: bool,
    pub kev_due_date: Option<String>,
    pub published: Option<String>,
    /// Distinct devices with a finding of this CVE (in the status asked).
    pub device_count: i64,
    /// Applications (as installed) with this CVE.
    pub applications: Vec<String>,
    /// The smallest fixing versions seen across those findings.
    pub fix_versions: Vec<String>,
    /// Who found it: `matched` (Cairn, from installed software) and/or the
    /// integration area that reported it (`scanner`).
    pub sources: Vec<String>,
    pub first_seen: String,
    pub last_seen: String,
    /// The tenant's triage statuses of its findings' products
    /// (`to_evaluate` for a product no one triaged).
    pub triage_statuses: Vec<String>,
    /// Its open findings against their remediation SLA (see
    /// `/api/v1/sla`); absent when none is open.
    pub sla: Option<super::due::CveDue>,
}

/// Filters of `GET /vulnerabilities/`.
#[derive(Debug, Default)]
pub struct VulnerabilityFilter {
    pub status: String,
    pub severities: Vec<String>,
    pub kev: Option<bool>,
    pub epss_min: Option<f64>,
    pub search: Option<String>,
    pub application: Option<String>,
    pub device: Option<String>,
    /// Only CVEs with a finding in this triage status.
    pub triage: Option<String>,
    /// Only these CVEs.
    pub cves: Option<Vec<String>>,
}

/// SQL: the triage status of the finding `f` (`to_evaluate` when none).
const TRIAGE_STATUS: &str = "COALESCE((SELECT t.status FROM vuln_triage t \
    WHERE t.tenant_id = f.tenant_id AND t.cve_id = f.cve_id AND t.vendor = f.vendor \
    AND t.product = f.product), 'to_evaluate')";

/// Sort keys of the list, as SQL over the aggregate's columns.
/// The sorts of the vulnerabilities list: each column, `-` for descending.
pub const SORTS: [&str; 13] = [
    "-kev",
    "-cvss_score",
    "cvss_score",
    "-epss_score",
    "epss_score",
    "-device_count",
    "device_count",
    "-published",
    "published",
    "cve_id",
    "-cve_id",
    "-first_seen",
    "first_seen",
];

pub fn sort_sql(sort: &str) -> Option<&'static str> {
    Some(match sort {
        // KEV first (a KEV CVE without a CVSS score too), then CVSS, EPSS.
        "-kev" => "kev DESC, cvss_score DESC NULLS LAST, epss_score DESC NULLS LAST, f.cve_id",
        "-cvss_score" | "" => "cvss_score DESC NULLS LAST, f.cve_id",
        "cvss_score" => "cvss_score ASC NULLS LAST, f.cve_id",
        "-epss_score" => "epss_score DESC NULLS LAST, f.cve_id",
        "epss_score" => "epss_score ASC NULLS LAST, f.cve_id",
        "-device_count" => "device_count DESC, f.cve_id",
        "device_count" => "device_count ASC, f.cve_id",
        "-published" => "published DESC NULLS LAST, f.cve_id",
        "published" => "published ASC NULLS LAST, f.cve_id",
        "cve_id" => "f.cve_id ASC",
        "-cve_id" => "f.cve_id DESC",
        "-first_seen" => "first_seen DESC, f.cve_id",
        "first_seen" => "first_seen ASC, f.cve_id",
        _ => return None,
    })
}

/// When the tenant's whole inventory was last matched: every finding still
/// open then was confirmed at that moment.
async fn matched_at(db: &Db, tenant: &TenantId) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT matched_at FROM vuln_tenant_state WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_optional(&db.pool)
        .await
}

/// A finding `f` with its CVE record `c` (which it must have), KEV entry
/// `k` and EPSS score `e` (which it may).
const SCORED: &str = "JOIN vuln_cves c ON c.id = f.cve_id \
     LEFT JOIN vuln_kev k ON k.cve_id = f.cve_id \
     LEFT JOIN vuln_epss e ON e.cve_id = f.cve_id";

/// A finding's last sighting: its own stamp, or for an open one the last
/// whole-inventory match if later (such a match confirms open findings
/// without rewriting each).
fn last_seen(stamp: i64, open: bool, matched_at: Option<i64>) -> String {
    let seen = match (open, matched_at) {
        (true, Some(at)) => stamp.max(at),
        _ => stamp,
    };
    to_rfc3339(seen)
}

pub async fn vulnerabilities(
    db: &Db,
    tenant: &TenantId,
    filter: &VulnerabilityFilter,
    order: &str,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<VulnerabilityView>, i64)> {
    let severities = serde_json::to_string(&filter.severities).unwrap_or_default();
    let any_severity = filter.severities.is_empty();
    let pattern = filter
        .search
        .as_deref()
        .map(|s| format!("%{}%", escape_like(s)));
    let severity_in = format!(
        "COALESCE(c.severity, 'unknown') IN ({})",
        cairn_core::db::json_text_values(db.backend, 3)
    );
    let (status, triaged) = status_filter(db.backend, &filter.status);
    let cves_in = cairn_core::db::json_text_values(db.backend, 11);
    let filter_sql = format!(
        "f.tenant_id = $1 AND ($2 = 'all' OR f.status = $2) AND {triaged} \
         AND ($4 = 1 OR {severity_in}) \
         AND (CAST($5 AS BIGINT) IS NULL OR (CAST($5 AS BIGINT) = 1 AND k.cve_id IS NOT NULL) \
              OR (CAST($5 AS BIGINT) = 0 AND k.cve_id IS NULL)) \
         AND (CAST($6 AS TEXT) IS NULL OR e.score >= CAST(CAST($6 AS TEXT) AS DOUBLE PRECISION)) \
         AND (CAST($7 AS TEXT) IS NULL OR LOWER(f.cve_id) LIKE LOWER($7) ESCAPE '\\' \
              OR LOWER(c.description) LIKE LOWER($7) ESCAPE '\\' \
              OR LOWER(f.application_name) LIKE LOWER($7) ESCAPE '\\') \
         AND (CAST($8 AS TEXT) IS NULL OR f.application_name = $8) \
         AND (CAST($9 AS TEXT) IS NULL OR f.device_name = $9) \
         AND (CAST($10 AS TEXT) IS NULL OR {TRIAGE_STATUS} = $10) \
         AND (CAST($11 AS TEXT) IS NULL OR f.cve_id IN ({cves_in}))"
    );
    let from = format!("FROM {ALL_FINDINGS} f {SCORED}");
    fn bind_all<'q>(
        q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
        status: &'static str,
        tenant: &TenantId,
        filter: &VulnerabilityFilter,
        severities: &str,
        any_severity: bool,
        pattern: &Option<String>,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
        q.bind(tenant.as_str().to_string())
            .bind(status)
            .bind(severities.to_string())
            .bind(i64::from(any_severity))
            .bind(filter.kev.map(i64::from))
            // As text: sqlx's Any driver sends f64 in a form PostgreSQL
            // refuses for an untyped parameter.
            .bind(filter.epss_min.map(|e| e.to_string()))
            .bind(pattern.clone())
            .bind(filter.application.clone())
            .bind(filter.device.clone())
            .bind(filter.triage.clone())
            .bind(
                filter
                    .cves
                    .as_ref()
                    .map(|cves| serde_json::to_string(cves).unwrap_or_default()),
            )
    }
    let select = format!(
        "SELECT f.cve_id, c.description, c.severity, c.cvss_score AS cvss_score, c.cvss_version, \
         e.score AS epss_score, e.percentile AS epss_percentile, k.cve_id IS NOT NULL AS kev, \
         k.due_date, c.published AS published, COUNT(DISTINCT f.device_name) AS device_count, \
         MIN(f.first_seen) AS first_seen, MAX(f.last_seen) AS last_seen, \
         MAX(CASE WHEN f.status = 'open' THEN 1 ELSE 0 END) AS any_open \
         {from} WHERE {filter_sql} \
         GROUP BY f.cve_id, c.description, c.severity, c.cvss_score, c.cvss_version, e.score, \
         e.percentile, k.cve_id, k.due_date, c.published \
         ORDER BY {order} LIMIT $12 OFFSET $13"
    );
    let count = format!("SELECT COUNT(DISTINCT f.cve_id) AS total {from} WHERE {filter_sql}");
    let rows = bind_all(
        sqlx::query(&select),
        status,
        tenant,
        filter,
        &severities,
        any_severity,
        &pattern,
    )
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total: i64 = bind_all(
        sqlx::query(&count),
        status,
        tenant,
        filter,
        &severities,
        any_severity,
        &pattern,
    )
    .fetch_one(&db.pool)
    .await?
    .try_get("total")?;
    let matched_at = matched_at(db, tenant).await?;
    let mut items: Vec<VulnerabilityView> = rows
        .into_iter()
        .map(|r| {
            Ok(VulnerabilityView {
                cve_id: r.try_get("cve_id")?,
                description: r.try_get("description")?,
                severity: r.try_get("severity")?,
                cvss_score: r.try_get("cvss_score")?,
                cvss_version: r.try_get("cvss_version")?,
                epss_score: r.try_get("epss_score")?,
                epss_percentile: r.try_get("epss_percentile")?,
                kev: cairn_core::db::flag(&r, "kev")?,
                kev_due_date: r.try_get("due_date")?,
                published: r.try_get::<Option<i64>, _>("published")?.map(to_rfc3339),
                device_count: r.try_get("device_count")?,
                first_seen: to_rfc3339(r.try_get("first_seen")?),
                last_seen: last_seen(
                    r.try_get("last_seen")?,
                    r.try_get::<i64, _>("any_open")? != 0,
                    matched_at,
                ),
                applications: vec![],
                fix_versions: vec![],
                sources: vec![],
                triage_statuses: vec![],
                sla: None,
            })
        })
        .collect::<sqlx::Result<_>>()?;
    // Applications, fixes and who found them, for the page's CVEs, in one
    // query, under the list's application and device filters: a device's
    // list names that device's applications, not the tenant's.
    let ids: Vec<&str> = items.iter().map(|i| i.cve_id.as_str()).collect();
    if !ids.is_empty() {
        let ids_in = format!(
            "cve_id IN ({})",
            cairn_core::db::json_text_values(db.backend, 2)
        );
        let rows = sqlx::query(&format!(
            "SELECT DISTINCT cve_id, application_name, fix_version, \
             CASE WHEN source IN ('nvd', 'cna') THEN '{MATCHED}' ELSE source END AS origin, \
             {TRIAGE_STATUS} AS triage_status \
             FROM {ALL_FINDINGS} f \
             WHERE tenant_id = $1 AND {ids_in} AND ($3 = 'all' OR status = $3) AND {triaged} \
             AND (CAST($4 AS TEXT) IS NULL OR application_name = $4) \
             AND (CAST($5 AS TEXT) IS NULL OR device_name = $5) \
             ORDER BY cve_id, application_name"
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(&ids).unwrap_or_default())
        .bind(status)
        .bind(filter.application.clone())
        .bind(filter.device.clone())
        .fetch_all(&db.pool)
        .await?;
        /// A CVE's applications, fixes and finders, each once.
        #[derive(Default)]
        struct Found {
            apps: Vec<String>,
            fixes: Vec<String>,
            sources: Vec<String>,
            triage: Vec<String>,
        }
        let mut found: HashMap<String, Found> = HashMap::new();
        for r in rows {
            let Found {
                apps,
                fixes,
                sources,
                triage,
            } = found.entry(r.try_get("cve_id")?).or_default();
            let status: String = r.try_get("triage_status")?;
            if !triage.contains(&status) {
                triage.push(status);
            }
            let source: String = r.try_get("origin")?;
            // A scanner's "application" is its check's title: not listed.
            // Matched findings (CPE and distribution advisories) name the
            // installed application.
            if source == MATCHED || source == crate::reference::osv::SOURCE_OSV {
                let app: String = r.try_get("application_name")?;
                if !apps.contains(&app) {
                    apps.push(app);
                }
            }
            if let Some(fix) = r.try_get::<Option<String>, _>("fix_version")? {
                if !fixes.contains(&fix) {
                    fixes.push(fix);
                }
            }
            if !sources.contains(&source) {
                sources.push(source);
            }
        }
        for item in &mut items {
            if let Some(Found {
                apps,
                mut fixes,
                mut sources,
                mut triage,
            }) = found.remove(&item.cve_id)
            {
                triage.sort();
                item.triage_statuses = triage;
                fixes.sort_by(|a, b| cairn_inventory::version::compare_versions(a, b));
                sources.sort();
                item.applications = apps;
                item.fix_versions = fixes;
                item.sources = sources;
            }
        }
    }
    Ok((items, total))
}

/// One finding: a CVE of one application version on one device, with how
/// it was matched.
#[derive(Debug, Serialize, ToSchema)]
pub struct FindingView {
    pub device_name: String,
    pub application_name: String,
    pub version: String,
    pub cve_id: String,
    /// The CPE product the application was identified as (none for a
    /// scanner's finding).
    pub cpe: Option<String>,
    /// `open` or `fixed`.
    pub status: String,
    pub fix_version: Option<String>,
    /// Where the finding came from: `nvd` (an NVD configuration), `cna`
    /// (the CNA's or CISA ADP's affected data) or `osv` (a Linux
    /// distribution's advisory for an installed package) for Cairn's
    /// matches, or the integration area that reported it (`scanner`); a
    /// scanner's finding names its check in `criteria` and its title as
    /// `application_name`.
    pub source: String,
    /// The CPE match criteria (or CNA product, or `osv:release:package`)
    /// that matched.
    pub criteria: String,
    /// NVD's matchCriteriaId for NVD matches; the advisory id
    /// (`DSA-5586-1`, `UBUNTU-CVE-2023-22809`) for `osv` ones.
    pub match_id: Option<String>,
    /// The version range evaluated, e.g. `>= 2.0.1, < 2.3.1`.
    pub version_range: String,
    pub first_seen: String,
    pub last_seen: String,
    pub fixed_at: Option<String>,
    /// The tenant's triage status of this CVE for this product.
    pub triage_status: String,
    /// An open finding against its remediation SLA (see `/api/v1/sla`);
    /// absent for a fixed one or one triage took out of the open counts.
    pub sla: Option<super::due::FindingDue>,
}

pub async fn cve_findings(
    db: &Db,
    tenant: &TenantId,
    cve_id: &str,
    status: &str,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<FindingView>, i64)> {
    let (status, triaged) = status_filter(db.backend, status);
    let filter = format!(
        "f.tenant_id = $1 AND f.cve_id = $2 AND ($3 = 'all' OR f.status = $3) AND {triaged}"
    );
    let rows = sqlx::query(&format!(
        "SELECT device_name, application_name, version, cve_id, vendor, product, status, \
         fix_version, source, criteria, match_id, version_range, first_seen, last_seen, fixed_at, \
         {TRIAGE_STATUS} AS triage_status FROM {ALL_FINDINGS} f WHERE {filter} \
         ORDER BY device_name, application_name, version LIMIT $4 OFFSET $5"
    ))
    .bind(tenant.as_str())
    .bind(cve_id)
    .bind(status)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM {ALL_FINDINGS} f WHERE {filter}"
    ))
    .bind(tenant.as_str())
    .bind(cve_id)
    .bind(status)
    .fetch_one(&db.pool)
    .await?;
    let matched_at = matched_at(db, tenant).await?;
    let items = rows
        .into_iter()
        .map(|r| {
            Ok(FindingView {
                device_name: r.try_get("device_name")?,
                application_name: r.try_get("application_name")?,
                version: r.try_get("version")?,
                cve_id: r.try_get("cve_id")?,
                // A scanner's finding names no product.
                cpe: Some(r.try_get::<String, _>("vendor")?)
                    .filter(|vendor| !vendor.is_empty())
                    .map(|vendor| {
                        r.try_get::<String, _>("product")
                            .map(|p| format!("{vendor}:{p}"))
                    })
                    .transpose()?,
                status: r.try_get("status")?,
                fix_version: r.try_get("fix_version")?,
                source: r.try_get("source")?,
                criteria: r.try_get("criteria")?,
                match_id: r.try_get("match_id")?,
                version_range: r.try_get("version_range")?,
                first_seen: to_rfc3339(r.try_get("first_seen")?),
                last_seen: last_seen(
                    r.try_get("last_seen")?,
                    r.try_get::<&str, _>("status")? == OPEN,
                    matched_at,
                ),
                fixed_at: r.try_get::<Option<i64>, _>("fixed_at")?.map(to_rfc3339),
                triage_status: r.try_get("triage_status")?,
                sla: None,
            })
        })
        .collect::<sqlx::Result<_>>()?;
    Ok((items, total))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ScanView {
    pub id: String,
    /// `queued`, `running`, `success` or `error` (the jobs' words).
    pub status: String,
    pub scope: ScanScope,
    pub job_id: Option<String>,
    pub error: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// Distinct applications (name, publisher) read.
    pub applications: i64,
    pub devices: i64,
    /// Findings the scan confirmed or found.
    pub findings: i64,
    /// Findings that were not open before this scan.
    pub new_findings: i64,
    /// Open findings this scan no longer found (now fixed).
    pub fixed_findings: i64,
    /// Distinct CVEs found, by severity.
    #[schema(value_type = HashMap<String, i64>)]
    pub by_severity: Value,
    /// How the scan ran: `full` (the whole inventory), `changes` (a
    /// whole-inventory scan that re-matched only the software and products
    /// that changed since the last match; the counts are of what it
    /// re-matched) or `scoped` (one application, vendor or device); null
    /// until it has run.
    pub mode: Option<String>,
    /// In the answer that starts a scan: whether the CVE store it will
    /// match against holds anything (a scan of an empty store finds
    /// nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_state: Option<crate::reference::data_state::DataState>,
}

/// A page of vulnerabilities with the state of the CVE store they were
/// matched against.
#[derive(Debug, Serialize, ToSchema)]
pub struct VulnerabilityPage {
    pub items: Vec<VulnerabilityView>,
    pub total: i64,
    pub skip: i64,
    pub limit: i64,
    pub data_state: crate::reference::data_state::DataState,
}

const SCAN_COLUMNS: &str = "id, status, scope, job_id, error, created_at, finished_at, \
    applications, devices, findings, new_findings, fixed_findings, by_severity, mode";

fn scan_view(r: sqlx::any::AnyRow) -> sqlx::Result<ScanView> {
    Ok(ScanView {
        id: r.try_get("id")?,
        status: r.try_get("status")?,
        scope: stored_json("scope", r.try_get("scope")?)?,
        job_id: r.try_get("job_id")?,
        error: r.try_get("error")?,
        created_at: to_rfc3339(r.try_get("created_at")?),
        finished_at: r.try_get::<Option<i64>, _>("finished_at")?.map(to_rfc3339),
        applications: r.try_get("applications")?,
        devices: r.try_get("devices")?,
        findings: r.try_get("findings")?,
        new_findings: r.try_get("new_findings")?,
        fixed_findings: r.try_get("fixed_findings")?,
        by_severity: stored_json("by_severity", r.try_get("by_severity")?)?,
        mode: r.try_get("mode")?,
        data_state: None,
    })
}

pub async fn scans(
    db: &Db,
    tenant: &TenantId,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<ScanView>, i64)> {
    let rows = sqlx::query(&format!(
        "SELECT {SCAN_COLUMNS} FROM vuln_scans WHERE tenant_id = $1 \
         ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
    ))
    .bind(tenant.as_str())
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar("SELECT COUNT(*) FROM vuln_scans WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_one(&db.pool)
        .await?;
    Ok((
        rows.into_iter()
            .map(scan_view)
            .collect::<sqlx::Result<_>>()?,
        total,
    ))
}

pub async fn scan(db: &Db, tenant: &TenantId, scan_id: &str) -> sqlx::Result<Option<ScanView>> {
    let row = sqlx::query(&format!(
        "SELECT {SCAN_COLUMNS} FROM vuln_scans WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(scan_id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(scan_view).transpose()
}

/// A CVE a scan found.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScanVulnerability {
    pub cve_id: String,
    pub description: String,
    pub severity: Option<String>,
    pub cvss_score: Option<f64>,
    pub epss_score: Option<f64>,
    pub kev: bool,
    pub device_count: i64,
}

pub async fn scan_vulnerabilities(
    db: &Db,
    tenant: &TenantId,
    scan_id: &str,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<ScanVulnerability>, i64)> {
    let rows = sqlx::query(
        "SELECT s.cve_id, c.description, c.severity, c.cvss_score, e.score AS epss_score, \
         k.cve_id IS NOT NULL AS kev, \
         s.device_count FROM vuln_scan_cves s JOIN vuln_cves c ON c.id = s.cve_id \
         LEFT JOIN vuln_kev k ON k.cve_id = s.cve_id LEFT JOIN vuln_epss e ON e.cve_id = s.cve_id \
         WHERE s.tenant_id = $1 AND s.scan_id = $2 \
         ORDER BY c.cvss_score DESC NULLS LAST, s.cve_id LIMIT $3 OFFSET $4",
    )
    .bind(tenant.as_str())
    .bind(scan_id)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar(
        "SELECT COUNT(*) FROM vuln_scan_cves WHERE tenant_id = $1 AND scan_id = $2",
    )
    .bind(tenant.as_str())
    .bind(scan_id)
    .fetch_one(&db.pool)
    .await?;
    Ok((
        rows.into_iter()
            .map(|r| {
                Ok(ScanVulnerability {
                    cve_id: r.try_get("cve_id")?,
                    description: r.try_get("description")?,
                    severity: r.try_get("severity")?,
                    cvss_score: r.try_get("cvss_score")?,
                    epss_score: r.try_get("epss_score")?,
                    kev: cairn_core::db::flag(&r, "kev")?,
                    device_count: r.try_get("device_count")?,
                })
            })
            .collect::<sqlx::Result<_>>()?,
        total,
    ))
}

/// A device a scan found a CVE on.
#[derive(Debug, Serialize, serde::Deserialize, ToSchema)]
pub struct AffectedDevice {
    pub device_name: String,
    pub application_name: String,
    pub version: String,
    pub fix_version: Option<String>,
}

/// `None` when the scan did not find the CVE (or is not the tenant's).
pub async fn scan_cve_devices(
    db: &Db,
    tenant: &TenantId,
    scan_id: &str,
    cve_id: &str,
) -> sqlx::Result<Option<Vec<AffectedDevice>>> {
    let affected: Option<String> = sqlx::query_scalar(
        "SELECT affected FROM vuln_scan_cves WHERE tenant_id = $1 AND scan_id = $2 AND cve_id = $3",
    )
    .bind(tenant.as_str())
    .bind(scan_id)
    .bind(cve_id)
    .fetch_optional(&db.pool)
    .await?;
    affected
        .map(|a| {
            let mut devices: Vec<AffectedDevice> = stored_json("affected", &a)?;
            devices.sort_by(|x, y| {
                (&x.device_name, &x.application_name).cmp(&(&y.device_name, &y.application_name))
            });
            Ok(devices)
        })
        .transpose()
}

/// A CVE of `top_cves`: on how many devices it is open.
#[derive(Debug, Serialize, ToSchema)]
pub struct CveOnDevices {
    /// The CVE id.
    pub name: String,
    /// Distinct devices with an open finding of it.
    pub devices: i64,
}

/// An application of `top_applications`: how many CVEs are open on it (as
/// the dashboard's "Most vulnerable applications" counts them).
#[derive(Debug, Serialize, ToSchema)]
pub struct ApplicationCves {
    pub name: String,
    /// Distinct open CVEs Cairn matched to it.
    pub cves: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TrendPoint {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    /// Findings first seen that day.
    pub opened: i64,
    /// Findings fixed that day.
    pub fixed: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct VulnerabilityStats {
    /// Distinct CVEs with an open finding, Cairn's or a scanner's (every
    /// figure but `top_applications` counts both).
    pub open_cves: i64,
    pub open_findings: i64,
    pub affected_devices: i64,
    /// Distinct open CVEs by severity.
    pub by_severity: HashMap<String, i64>,
    /// Distinct open CVEs in CISA KEV.
    pub kev_cves: i64,
    /// The CVEs on the most devices.
    pub top_cves: Vec<CveOnDevices>,
    /// The applications with the most distinct open CVEs Cairn matched.
    pub top_applications: Vec<ApplicationCves>,
    /// Findings opened and fixed per day, last 30 days, oldest first.
    pub trend: Vec<TrendPoint>,
    /// Whether the CVE store these figures are matched against holds
    /// anything, and how current it is.
    pub data_state: crate::reference::data_state::DataState,
}

pub async fn stats(
    db: &Db,
    tenant: &TenantId,
    data_state: crate::reference::data_state::DataState,
) -> sqlx::Result<VulnerabilityStats> {
    let t = tenant.as_str();
    let open = counts_open_sql(db.backend, false);
    let row = sqlx::query(&format!(
        "SELECT COUNT(DISTINCT cve_id) AS open_cves, COUNT(*) AS open_findings, \
         COUNT(DISTINCT device_name) AS affected_devices FROM {ALL_FINDINGS} f \
         WHERE f.tenant_id = $1 AND {open}"
    ))
    .bind(t)
    .fetch_one(&db.pool)
    .await?;
    let by_severity = sqlx::query(&format!(
        "SELECT COALESCE(c.severity, 'unknown') AS severity, COUNT(DISTINCT f.cve_id) AS cves \
         FROM {ALL_FINDINGS} f \
         JOIN vuln_cves c ON c.id = f.cve_id WHERE f.tenant_id = $1 AND {open} \
         GROUP BY COALESCE(c.severity, 'unknown')"
    ))
    .bind(t)
    .fetch_all(&db.pool)
    .await?
    .into_iter()
    .map(|r| Ok((r.try_get("severity")?, r.try_get("cves")?)))
    .collect::<sqlx::Result<_>>()?;
    let kev_cves = sqlx::query_scalar(&format!(
        "SELECT COUNT(DISTINCT f.cve_id) FROM {ALL_FINDINGS} f JOIN vuln_kev k ON k.cve_id = f.cve_id \
         WHERE f.tenant_id = $1 AND {open}"
    ))
    .bind(t)
    .fetch_one(&db.pool)
    .await?;
    let top_cves = (sqlx::query(&format!(
        "SELECT cve_id AS name, COUNT(DISTINCT device_name) AS n FROM {ALL_FINDINGS} f \
             WHERE f.tenant_id = $1 AND {open} GROUP BY cve_id ORDER BY n DESC, cve_id LIMIT 10"
    ))
    .bind(t)
    .fetch_all(&db.pool)
    .await?)
        .into_iter()
        .map(|r| {
            Ok(CveOnDevices {
                name: r.try_get("name")?,
                devices: r.try_get("n")?,
            })
        })
        .collect::<sqlx::Result<_>>()?;
    let top_applications = (sqlx::query(&format!(
        "SELECT application_name AS name, COUNT(DISTINCT cve_id) AS n FROM vuln_findings f \
             WHERE f.tenant_id = $1 AND {open} GROUP BY application_name \
             ORDER BY n DESC, application_name LIMIT 10"
    ))
    .bind(t)
    .fetch_all(&db.pool)
    .await?)
        .into_iter()
        .map(|r| {
            Ok(ApplicationCves {
                name: r.try_get("name")?,
                cves: r.try_get("n")?,
            })
        })
        .collect::<sqlx::Result<_>>()?;
    const DAY: i64 = 86_400_000;
    let today = cairn_core::db::now_ms() / DAY;
    let since = (today - 29) * DAY;
    let mut trend: Vec<TrendPoint> = (0..30)
        .map(|i| TrendPoint {
            date: chrono::DateTime::from_timestamp_millis((today - 29 + i) * DAY)
                .unwrap_or_default()
                .format("%Y-%m-%d")
                .to_string(),
            opened: 0,
            fixed: 0,
        })
        .collect();
    for (column, opened) in [("first_seen", true), ("fixed_at", false)] {
        let rows = sqlx::query(&format!(
            "SELECT {column} / {DAY} AS day, COUNT(*) AS n FROM {ALL_FINDINGS} f \
             WHERE tenant_id = $1 AND {column} >= $2 GROUP BY {column} / {DAY}"
        ))
        .bind(t)
        .bind(since)
        .fetch_all(&db.pool)
        .await?;
        for r in rows {
            let index = r.try_get::<i64, _>("day")? - (today - 29);
            if let Some(point) = usize::try_from(index).ok().and_then(|i| trend.get_mut(i)) {
                if opened {
                    point.opened = r.try_get("n")?;
                } else {
                    point.fixed = r.try_get("n")?;
                }
            }
        }
    }
    Ok(VulnerabilityStats {
        open_cves: row.try_get("open_cves")?,
        open_findings: row.try_get("open_findings")?,
        affected_devices: row.try_get("affected_devices")?,
        by_severity,
        kev_cves,
        top_cves,
        top_applications,
        trend,
        data_state,
    })
}

/// An installation no match judges, and why: a distribution's build on a
/// device whose distribution release is not known.
// Which installations: `matching::packages::not_assessable`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotAssessed {
    pub device_name: String,
    pub application_name: String,
    pub version: String,
    /// What the device reports of its OS (naming no release Cairn knows).
    pub os_version: Option<String>,
    pub reason: String,
}

/// The tenant's installations that are distributions' builds on Linux
/// devices of unknown release, by device and application.
pub async fn not_assessed(
    db: &Db,
    tenant: &TenantId,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<NotAssessed>, i64)> {
    let scope = cairn_inventory::software::SoftwareScope {
        platform: Some("linux".into()),
        ..Default::default()
    };
    let software = cairn_inventory::software::installed_software(db, tenant, &scope).await?;
    let mut items: Vec<NotAssessed> = software
        .iter()
        .filter(|item| crate::matching::packages::not_assessable(item))
        .map(|item| NotAssessed {
            device_name: item.device_name.to_string(),
            application_name: item.application_name.to_string(),
            version: item.version.as_deref().unwrap_or("").to_string(),
            os_version: item.os_version.as_deref().map(str::to_string),
            reason: crate::matching::packages::NOT_ASSESSABLE.to_string(),
        })
        .collect();
    items.sort_by(|a, b| {
        (&a.device_name, &a.application_name, &a.version).cmp(&(
            &b.device_name,
            &b.application_name,
            &b.version,
        ))
    });
    items.dedup_by(|a, b| {
        (&a.device_name, &a.application_name, &a.version)
            == (&b.device_name, &b.application_name, &b.version)
    });
    Ok(cairn_core::http::paging::slice(items, (skip, limit)))
}

/// An application the matcher could not map.
#[derive(Debug, Serialize, ToSchema)]
pub struct UnmatchedApplication {
    /// The name matching reads (the key to map with).
    pub application: String,
    /// One installed name it was seen as.
    pub name: String,
    pub publisher: Option<String>,
    pub reason: String,
    /// Products that fit equally well, when several did.
    pub candidates: Vec<String>,
    /// Devices per installed name that folds into `application`, summed
    /// over those names (a device with two such names counts twice).
    pub device_count: i64,
    pub seen_at: String,
}

/// The applications the last match left unmatched, grouped by the name
/// matching reads (the key a mapping takes), most installed first. Device
/// counts are read from the inventory now, so they are current however
/// the last match ran; applications no longer installed are left out.
pub async fn unmatched(
    db: &Db,
    tenant: &TenantId,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<UnmatchedApplication>, i64)> {
    let rows = sqlx::query(
        "SELECT application_name, publisher, reason, candidates, seen_at \
         FROM vuln_identified_apps WHERE tenant_id = $1 AND outcome = 'unmatched'",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    // A mapping settles an application before the next match does.
    let mapped = crate::findings::writes::tenant_overrides(db, tenant).await?;
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r.try_get::<&str, _>("application_name"))
        .collect::<sqlx::Result<_>>()?;
    let devices = cairn_inventory::software::devices_per_application(db, tenant, &names).await?;
    let mut by_key: HashMap<String, UnmatchedApplication> = HashMap::new();
    for r in &rows {
        let name: String = r.try_get("application_name")?;
        let key = clean_name(&name);
        let Some(&count) = devices.get(&name).filter(|_| !mapped.contains_key(&key)) else {
            continue;
        };
        let publisher: String = r.try_get("publisher")?;
        let seen_at: i64 = r.try_get("seen_at")?;
        let reason = r.try_get("reason")?;
        let candidates = stored_json("candidates", r.try_get("candidates")?)?;
        let entry = by_key
            .entry(key)
            .or_insert_with_key(|key| UnmatchedApplication {
                application: key.clone(),
                name: name.clone(),
                publisher: (!publisher.is_empty()).then(|| publisher.clone()),
                reason,
                candidates,
                device_count: 0,
                seen_at: to_rfc3339(seen_at),
            });
        entry.device_count += count;
    }
    let mut items: Vec<UnmatchedApplication> = by_key.into_values().collect();
    items.sort_by(|a, b| {
        b.device_count
            .cmp(&a.device_count)
            .then_with(|| a.application.cmp(&b.application))
    });
    Ok(cairn_core::http::paging::slice(items, (skip, limit)))
}

/// Distinct open CVEs of the tenant.
pub async fn open_cve_count(db: &Db, tenant: &TenantId) -> sqlx::Result<i64> {
    sqlx::query_scalar(&format!(
        "SELECT COUNT(DISTINCT cve_id) FROM vuln_findings f WHERE f.tenant_id = $1 AND {}",
        counts_open_sql(db.backend, false)
    ))
    .bind(tenant.as_str())
    .fetch_one(&db.pool)
    .await
}

/// Open CVE ids per installed application name (shared: kept answers
/// are handed out as they are).
pub async fn open_cves_by_application(
    db: &Db,
    tenant: &TenantId,
) -> sqlx::Result<Arc<HashMap<String, Vec<String>>>> {
    // Every applications page asks for it, and it reads all the tenant's
    // open findings: kept until they are written again (or a minute has
    // passed, for a risk acceptance that expires).
    static KEPT: changes::Kept<Arc<HashMap<String, Vec<String>>>> = changes::Kept::new(
        crate::findings::vocabulary::FINDINGS_TOPIC,
        Duration::from_secs(60),
        2_000_000,
    );
    let stamp = match KEPT.get(db, tenant.as_str(), &()) {
        Ok(kept) => return Ok(kept),
        Err(stamp) => stamp,
    };
    let rows = sqlx::query(&format!(
        "SELECT DISTINCT application_name, cve_id FROM vuln_findings f \
         WHERE f.tenant_id = $1 AND {}",
        counts_open_sql(db.backend, false)
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    let pairs = rows.len();
    let mut out: HashMap<String, Vec<String>> = HashMap::new();
    for r in rows {
        out.entry(r.try_get("application_name")?)
            .or_default()
            .push(r.try_get("cve_id")?);
    }
    let out = Arc::new(out);
    if let Some(stamp) = stamp {
        KEPT.keep(db, tenant.as_str(), (), stamp, out.clone(), pairs);
    }
    Ok(out)
}

/// A device's open findings at a glance: what a device list shows beside
/// each device, and sorts the riskiest first by.
#[derive(Debug, Clone, Serialize, ToSchema, sqlx_macros::FromRow)]
pub struct DeviceExposure {
    pub device_name: String,
    /// Distinct CVEs with an open finding on the device.
    pub open_cves: i64,
    /// Of them, rated critical.
    pub critical: i64,
    /// Of them, rated high.
    pub high: i64,
    /// Of them, in CISA's Known Exploited Vulnerabilities catalog.
    pub kev: i64,
    /// The highest EPSS probability among them (0 to 1), when any has one.
    pub max_epss: Option<f64>,
}

/// The open exposure of the tenant's devices with an open finding, the
/// riskiest first (most KEV CVEs, then critical, high, highest EPSS,
/// name), or of the devices `names` only; and how many there are.
pub async fn device_exposure(
    db: &Db,
    tenant: &TenantId,
    names: Option<&[String]>,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<DeviceExposure>, i64)> {
    let from_where = format!(
        "FROM {ALL_FINDINGS} f {SCORED} \
         WHERE f.tenant_id = $1 AND {} AND ($2 = 1 OR f.device_name IN ({}))",
        counts_open_sql(db.backend, false),
        cairn_core::db::json_text_values(db.backend, 3)
    );
    let every = i64::from(names.is_none());
    let names = serde_json::to_string(names.unwrap_or_default()).unwrap_or_default();
    let total: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(DISTINCT f.device_name) {from_where}"
    ))
    .bind(tenant.as_str())
    .bind(every)
    .bind(&names)
    .fetch_one(&db.pool)
    .await?;
    let items = sqlx::query_as(&format!(
        "SELECT f.device_name AS device_name, COUNT(DISTINCT f.cve_id) AS open_cves, \
         COUNT(DISTINCT CASE WHEN c.severity = 'critical' THEN f.cve_id END) AS critical, \
         COUNT(DISTINCT CASE WHEN c.severity = 'high' THEN f.cve_id END) AS high, \
         COUNT(DISTINCT CASE WHEN k.cve_id IS NOT NULL THEN f.cve_id END) AS kev, \
         MAX(e.score) AS max_epss {from_where} GROUP BY f.device_name \
         ORDER BY kev DESC, critical DESC, high DESC, max_epss DESC NULLS LAST, device_name \
         LIMIT $4 OFFSET $5"
    ))
    .bind(tenant.as_str())
    .bind(every)
    .bind(&names)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    Ok((items, total))
}

/// Distinct devices with an open finding, per CVE of `cve_ids` (upper
/// case) that has any.
pub async fn open_device_counts(
    db: &Db,
    tenant: &TenantId,
    cve_ids: &[String],
) -> sqlx::Result<HashMap<String, i64>> {
    if cve_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = sqlx::query(&format!(
        "SELECT cve_id, COUNT(DISTINCT device_name) AS devices FROM {ALL_FINDINGS} f \
         WHERE f.tenant_id = $1 AND {} AND f.cve_id IN ({}) GROUP BY cve_id",
        counts_open_sql(db.backend, false),
        cairn_core::db::json_text_values(db.backend, 2)
    ))
    .bind(tenant.as_str())
    .bind(serde_json::to_string(cve_ids).unwrap_or_default())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter()
        .map(|r| Ok((r.try_get("cve_id")?, r.try_get("devices")?)))
        .collect()
}

/// One application version with an open finding of a CVE.
#[derive(Debug, Serialize, ToSchema)]
pub struct AffectedVersion {
    /// As installed (or a scanner's finding title).
    pub application_name: String,
    /// Empty for a scanner's finding.
    pub version: String,
    /// The smallest version the CVE's data says fixes it, when known.
    pub fix_version: Option<String>,
    pub device_count: i64,
}

/// The application versions with an open finding of `cve_id` on the
/// tenant's devices, the most devices first.
pub async fn cve_affected_versions(
    db: &Db,
    tenant: &TenantId,
    cve_id: &str,
) -> sqlx::Result<Vec<AffectedVersion>> {
    let rows = sqlx::query(&format!(
        "SELECT application_name, version, MIN(fix_version) AS fix_version, \
         COUNT(DISTINCT device_name) AS devices \
         FROM {ALL_FINDINGS} f WHERE f.tenant_id = $1 AND f.cve_id = $2 AND {} \
         GROUP BY application_name, version ORDER BY devices DESC, application_name, version",
        counts_open_sql(db.backend, false)
    ))
    .bind(tenant.as_str())
    .bind(cve_id)
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter()
        .map(|r| {
            Ok(AffectedVersion {
                application_name: r.try_get("application_name")?,
                version: r.try_get("version")?,
                fix_version: r.try_get("fix_version")?,
                device_count: r.try_get("devices")?,
            })
        })
        .collect()
}

/// An open CVE of one installed application version.
#[derive(Debug)]
pub struct OpenVersionCve {
    pub application_name: String,
    pub version: String,
    pub cve_id: String,
    pub fix_version: Option<String>,
}

/// The open CVEs of the tenant's applications named `names` (as
/// installed), per version.
pub async fn open_cves_of_applications(
    db: &Db,
    tenant: &TenantId,
    names: &[String],
) -> sqlx::Result<Vec<OpenVersionCve>> {
    if names.is_empty() {
        return Ok(vec![]);
    }
    let rows = sqlx::query(&format!(
        "SELECT application_name, version, cve_id, MIN(fix_version) AS fix_version \
         FROM vuln_findings f \
         WHERE f.tenant_id = $1 AND {} AND f.application_name IN ({}) \
         GROUP BY application_name, version, cve_id ORDER BY application_name, version, cve_id",
        counts_open_sql(db.backend, false),
        cairn_core::db::json_text_values(db.backend, 2)
    ))
    .bind(tenant.as_str())
    .bind(serde_json::to_string(names).unwrap_or_default())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter()
        .map(|r| {
            Ok(OpenVersionCve {
                application_name: r.try_get("application_name")?,
                version: r.try_get("version")?,
                cve_id: r.try_get("cve_id")?,
                fix_version: r.try_get("fix_version")?,
            })
        })
        .collect()
}

/// What a remediation SLA needs to know of one finding: when it was first
/// seen and fixed, and its CVE's severity, publication, KEV listing and
/// EPSS score.
#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct DueFacts {
    pub device_name: String,
    pub application_name: String,
    pub version: String,
    pub cve_id: String,
    /// `open` or `fixed`.
    pub status: String,
    pub first_seen: i64,
    pub fixed_at: Option<i64>,
    /// `critical`, `high`, `medium`, `low` or `none`; absent without a score.
    pub severity: Option<String>,
    pub published: Option<i64>,
    /// 1 when CISA lists the CVE as known exploited.
    pub kev: i64,
    /// CISA's due date for federal agencies (`YYYY-MM-DD`).
    pub kev_due_date: Option<String>,
    pub epss_score: Option<f64>,
    /// The CVE's CVSS base score (the newest version NVD scored).
    pub cvss_score: Option<f64>,
    /// The product identified (absent for a scanner's own finding).
    pub vendor: Option<String>,
    pub product: Option<String>,
    /// The lowest version that fixes it, when the CVE's data says.
    pub fix_version: Option<String>,
}

/// The tenant's findings an SLA tracks: every open one the tenant's triage
/// has not taken out of the open counts, and every one fixed at or after
/// `fixed_since` (Unix ms), by device, application, version and CVE;
/// with `cves`, only theirs.
pub async fn due_facts(
    db: &Db,
    tenant: &TenantId,
    fixed_since: i64,
    cves: Option<&[String]>,
) -> sqlx::Result<Vec<DueFacts>> {
    let open = counts_open_sql(db.backend, false);
    let of_cves = match cves {
        Some(_) => format!(
            "AND f.cve_id IN ({})",
            cairn_core::db::json_text_values(db.backend, 3)
        ),
        None => "AND CAST($3 AS TEXT) IS NULL".to_string(),
    };
    sqlx::query_as(&format!(
        "SELECT f.device_name, f.application_name, f.version, f.cve_id, f.status, f.first_seen, \
         f.fixed_at, c.severity, c.published, \
         CASE WHEN k.cve_id IS NULL THEN 0 ELSE 1 END AS kev, k.due_date AS kev_due_date, \
         e.score AS epss_score, c.cvss_score, NULLIF(f.vendor, '') AS vendor, \
         NULLIF(f.product, '') AS product, NULLIF(f.fix_version, '') AS fix_version \
         FROM {ALL_FINDINGS} f \
         LEFT JOIN vuln_cves c ON c.id = f.cve_id \
         LEFT JOIN vuln_kev k ON k.cve_id = f.cve_id \
         LEFT JOIN vuln_epss e ON e.cve_id = f.cve_id \
         WHERE f.tenant_id = $1 AND (({open}) OR (f.status = 'fixed' AND f.fixed_at >= $2)) {of_cves} \
         ORDER BY f.device_name, f.application_name, f.version, f.cve_id"
    ))
    .bind(tenant.as_str())
    .bind(fixed_since)
    .bind(cves.map(|cves| serde_json::to_string(cves).unwrap_or_default()))
    .fetch_all(&db.pool)
    .await
}
