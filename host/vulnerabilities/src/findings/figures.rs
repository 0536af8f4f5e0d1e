//! Figures over a tenant's findings (Cairn's matches and a scanner's, as
//! one), optionally narrowed to some devices: what dashboards and the
//! daily snapshot read.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::TryStreamExt;

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use crate::findings::vocabulary::counts_open_sql;
use crate::findings::vocabulary::ALL_FINDINGS;
use cairn_core::db::{json_text_values, Db};
use cairn_core::ids::TenantId;

/// Narrows a figure to the devices named (any case); `None`: every device.
pub struct Devices<'a>(pub Option<&'a [String]>);

impl Devices<'_> {
    /// The bound value: the lowered names as a JSON array, or NULL.
    fn bound(&self) -> Option<String> {
        self.0.map(cairn_core::db::lowered_json)
    }

    /// The condition on `f.device_name`, bound at `$n`. Without devices it
    /// is a plain truth (the bound NULL), so the planner has no OR to
    /// carry through every row.
    fn condition(&self, db: &Db, n: usize) -> String {
        match self.0 {
            None => format!("CAST(${n} AS TEXT) IS NULL"),
            Some(_) => format!(
                "LOWER(f.device_name) IN ({})",
                json_text_values(db.backend, n)
            ),
        }
    }
}

/// The two tables findings live in, each read as `f`, with what makes a
/// row count: Cairn's matches always, a scanner's once the CVE store knows
/// its CVE (as [`ALL_FINDINGS`] reads them). Figures that only add up
/// findings read each table on its own, so each query is one index scan.
const FINDING_TABLES: [(&str, &str); 2] = [
    ("vuln_findings f", ""),
    (
        "vuln_scanner_findings f",
        " AND EXISTS (SELECT 1 FROM vuln_cves k WHERE k.id = f.cve_id)",
    ),
];

/// SQL true when a row `f` of the finding table `table` (an entry of
/// [`FINDING_TABLES`]) counts as open.
fn open_in(db: &Db, table: &str) -> String {
    counts_open_sql(db.backend, table.starts_with("vuln_scanner_findings"))
}

/// Open findings per CVE (`cve_id`, `n`) of one finding table, of the
/// tenant `$1`, narrowed by the devices bound at `$2`.
fn per_cve(db: &Db, devices: &Devices<'_>, (table, counts): (&str, &str)) -> String {
    format!(
        "SELECT f.cve_id, COUNT(*) AS n FROM {table} \
         WHERE f.tenant_id = $1 AND {} AND {}{counts} GROUP BY f.cve_id",
        open_in(db, table),
        devices.condition(db, 2)
    )
}

/// Open findings (device, application, version, CVE) by their CVE's
/// severity (`critical`, `high`, `medium`, `low`, `unknown`).
pub async fn open_findings_by_severity(
    db: &Db,
    tenant: &TenantId,
    devices: &Devices<'_>,
) -> sqlx::Result<Vec<(String, i64)>> {
    // Counted per CVE first (an index-only scan), then joined to the
    // few thousand CVEs rather than each finding to its CVE.
    let mut totals: Vec<(String, i64)> = vec![];
    for table in FINDING_TABLES {
        let rows = sqlx::query(&format!(
            "SELECT LOWER(COALESCE(c.severity, 'unknown')) AS severity, CAST(SUM(g.n) AS BIGINT) AS n \
             FROM ({}) g LEFT JOIN vuln_cves c ON c.id = g.cve_id \
             GROUP BY LOWER(COALESCE(c.severity, 'unknown'))",
            per_cve(db, devices, table)
        ))
        .bind(tenant.as_str())
        .bind(devices.bound())
        .fetch_all(&db.pool)
        .await?;
        for r in rows {
            let (severity, n): (String, i64) = (r.try_get("severity")?, r.try_get("n")?);
            match totals.iter_mut().find(|(s, _)| *s == severity) {
                Some(total) => total.1 += n,
                None => totals.push((severity, n)),
            }
        }
    }
    Ok(totals)
}

/// Open findings whose CVE is in CISA's KEV catalog.
pub async fn kev_open_findings(
    db: &Db,
    tenant: &TenantId,
    devices: &Devices<'_>,
) -> sqlx::Result<i64> {
    let mut total = 0;
    for table in FINDING_TABLES {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT CAST(COALESCE(SUM(g.n), 0) AS BIGINT) FROM ({}) g \
             JOIN vuln_kev k ON k.cve_id = g.cve_id",
            per_cve(db, devices, table)
        ))
        .bind(tenant.as_str())
        .bind(devices.bound())
        .fetch_one(&db.pool)
        .await?;
        total += n;
    }
    Ok(total)
}

/// A CVE on the tenant's devices with its EPSS score.
#[derive(Debug, Serialize, ToSchema)]
pub struct EpssRisk {
    pub cve_id: String,
    pub epss_score: f64,
    pub epss_percentile: Option<f64>,
    /// Devices with an open finding of it.
    pub devices: i64,
}

/// CVEs with an open finding and an EPSS score of at least `threshold`,
/// highest first (then on most devices).
pub async fn epss_high_risk(
    db: &Db,
    tenant: &TenantId,
    threshold: f64,
    limit: i64,
    devices: &Devices<'_>,
) -> sqlx::Result<Vec<EpssRisk>> {
    // The scored CVEs first, table by table (index scans); devices are
    // counted only for those that can make the list.
    let mut scored: HashMap<String, (f64, Option<f64>)> = HashMap::new();
    for table in FINDING_TABLES {
        let rows = sqlx::query(&format!(
            "SELECT g.cve_id, e.score AS epss_score, e.percentile AS epss_percentile FROM ({}) g \
             JOIN vuln_epss e ON e.cve_id = g.cve_id WHERE e.score >= $3",
            per_cve(db, devices, table)
        ))
        .bind(tenant.as_str())
        .bind(devices.bound())
        .bind(threshold)
        .fetch_all(&db.pool)
        .await?;
        for r in rows {
            scored.insert(
                r.try_get("cve_id")?,
                (r.try_get("epss_score")?, r.try_get("epss_percentile")?),
            );
        }
    }
    let mut ranked: Vec<(String, f64, Option<f64>)> = scored
        .into_iter()
        .map(|(cve, (score, percentile))| (cve, score, percentile))
        .collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let limit = limit.max(0) as usize;
    // Every CVE scored as high as the last one listed, since devices
    // break the tie.
    if let Some(last) = ranked.get(limit.saturating_sub(1)).map(|r| r.1) {
        ranked.retain(|r| r.1 >= last);
    }
    let ids =
        serde_json::to_string(&ranked.iter().map(|r| &r.0).collect::<Vec<_>>()).unwrap_or_default();
    // Distinct devices per CVE, a device both tables name counted once.
    let mut devices_of: HashMap<String, HashSet<String>> = HashMap::new();
    for (table, counts) in FINDING_TABLES {
        if ranked.is_empty() {
            break;
        }
        let pairs: Vec<(String, String)> = sqlx::query_as(&format!(
            "SELECT DISTINCT f.cve_id, f.device_name FROM {table} \
             WHERE f.tenant_id = $1 AND {} AND {}{counts} AND f.cve_id IN ({})",
            open_in(db, table),
            devices.condition(db, 2),
            json_text_values(db.backend, 3)
        ))
        .bind(tenant.as_str())
        .bind(devices.bound())
        .bind(&ids)
        .fetch_all(&db.pool)
        .await?;
        for (cve, device) in pairs {
            devices_of.entry(cve).or_default().insert(device);
        }
    }
    let counts: HashMap<String, i64> = devices_of
        .into_iter()
        .map(|(cve, set)| (cve, set.len() as i64))
        .collect();
    let mut risks: Vec<EpssRisk> = ranked
        .into_iter()
        .map(|(cve_id, epss_score, epss_percentile)| EpssRisk {
            devices: counts.get(&cve_id).copied().unwrap_or(0),
            cve_id,
            epss_score,
            epss_percentile,
        })
        .collect();
    risks.sort_by(|a, b| {
        b.epss_score
            .total_cmp(&a.epss_score)
            .then(b.devices.cmp(&a.devices))
            .then_with(|| a.cve_id.cmp(&b.cve_id))
    });
    risks.truncate(limit);
    Ok(risks)
}

/// Applications by distinct open CVEs, most first.
pub async fn top_vulnerable_applications(
    db: &Db,
    tenant: &TenantId,
    limit: i64,
    devices: &Devices<'_>,
) -> sqlx::Result<Vec<(String, i64)>> {
    let [(matched, _), (scanned, scanned_counts)] = FINDING_TABLES;
    // Cairn's matches counted in the database (index-only); a scanner's
    // (few) pairs merged here, a pair both tables hold counted once.
    let mut counts: HashMap<String, i64> = sqlx::query_as(&format!(
        "SELECT f.application_name, COUNT(DISTINCT f.cve_id) FROM {matched} \
         WHERE f.tenant_id = $1 AND {} AND {} GROUP BY f.application_name",
        open_in(db, matched),
        devices.condition(db, 2)
    ))
    .bind(tenant.as_str())
    .bind(devices.bound())
    .fetch_all(&db.pool)
    .await?
    .into_iter()
    .collect();
    let scanner_pairs: Vec<(String, String)> = sqlx::query_as(&format!(
        "SELECT DISTINCT f.title, f.cve_id FROM {scanned} \
         WHERE f.tenant_id = $1 AND {} AND {}{scanned_counts}",
        open_in(db, scanned),
        devices.condition(db, 2)
    ))
    .bind(tenant.as_str())
    .bind(devices.bound())
    .fetch_all(&db.pool)
    .await?;
    let shared: Vec<&String> = scanner_pairs
        .iter()
        .map(|(title, _)| title)
        .filter(|title| counts.contains_key(*title))
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let already: HashSet<(String, String)> = if shared.is_empty() {
        HashSet::new()
    } else {
        sqlx::query_as(&format!(
            "SELECT DISTINCT f.application_name, f.cve_id FROM {matched} \
             WHERE f.tenant_id = $1 AND {} AND {} AND f.application_name IN ({})",
            open_in(db, matched),
            devices.condition(db, 2),
            json_text_values(db.backend, 3)
        ))
        .bind(tenant.as_str())
        .bind(devices.bound())
        .bind(serde_json::to_string(&shared).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?
        .into_iter()
        .collect()
    };
    for pair in scanner_pairs {
        if !already.contains(&pair) {
            *counts.entry(pair.0).or_default() += 1;
        }
    }
    let mut ranked: Vec<(String, i64)> = counts.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(limit.max(0) as usize);
    Ok(ranked)
}

/// The mean time from first seen to fixed, in days, of the findings fixed
/// since `since_ms`, and how many they are (`None` when none was fixed).
pub async fn mean_days_to_fix(
    db: &Db,
    tenant: &TenantId,
    since_ms: i64,
    devices: &Devices<'_>,
) -> sqlx::Result<(Option<f64>, i64)> {
    let row = sqlx::query(&format!(
        "SELECT COUNT(*) AS fixed, \
         CAST(AVG(CAST(f.fixed_at - f.first_seen AS DOUBLE PRECISION)) AS DOUBLE PRECISION) AS mean_ms \
         FROM {ALL_FINDINGS} f \
         WHERE f.tenant_id = $1 AND f.status = 'fixed' AND f.fixed_at >= $3 AND {}",
        devices.condition(db, 2)
    ))
    .bind(tenant.as_str())
    .bind(devices.bound())
    .bind(since_ms)
    .fetch_one(&db.pool)
    .await?;
    let count: i64 = row.try_get("fixed")?;
    let mean_ms: Option<f64> = row.try_get("mean_ms")?;
    Ok((mean_ms.map(|ms| ms / 86_400_000.0), count))
}

/// The tenant's key figures now, for the daily snapshot.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyFigures {
    pub open_findings: i64,
    pub critical: i64,
    pub high: i64,
    pub kev_findings: i64,
    pub affected_devices: i64,
}

pub async fn key_figures(db: &Db, tenant: &TenantId) -> sqlx::Result<KeyFigures> {
    let all = Devices(None);
    let by_severity = open_findings_by_severity(db, tenant, &all).await?;
    let of = |label: &str| {
        by_severity
            .iter()
            .find(|(s, _)| s == label)
            .map_or(0, |(_, n)| *n)
    };
    let affected: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(DISTINCT f.device_name) FROM {ALL_FINDINGS} f \
         WHERE f.tenant_id = $1 AND {}",
        counts_open_sql(db.backend, false)
    ))
    .bind(tenant.as_str())
    .fetch_one(&db.pool)
    .await?;
    Ok(KeyFigures {
        open_findings: by_severity.iter().map(|(_, n)| n).sum(),
        critical: of("critical"),
        high: of("high"),
        kev_findings: kev_open_findings(db, tenant, &all).await?,
        affected_devices: affected,
    })
}

/// One open finding with what a report shows of its CVE. Strings repeat
/// across findings (devices, applications, CVEs) and are shared.
#[derive(Debug, Clone)]
pub struct OpenFinding {
    pub device_name: Arc<str>,
    pub application_name: Arc<str>,
    pub version: Arc<str>,
    pub cve_id: Arc<str>,
    /// Lower case; none when unscored.
    pub severity: Option<Arc<str>>,
    pub cvss_score: Option<f64>,
    pub kev: bool,
    pub epss_score: Option<f64>,
    pub fix_version: Option<Arc<str>>,
    pub first_seen: i64,
}

/// The tenant's open findings (of the CVE severities given, when given),
/// by device, application, version and CVE.
pub async fn open_findings(
    db: &Db,
    tenant: &TenantId,
    devices: &Devices<'_>,
    severities: Option<&[String]>,
) -> sqlx::Result<Vec<OpenFinding>> {
    let severities = severities.map(|s| {
        let lowered: Vec<String> = s.iter().map(|v| v.to_lowercase()).collect();
        serde_json::to_string(&lowered).unwrap_or_default()
    });
    let statement = format!(
        "SELECT f.device_name, f.application_name, f.version, f.cve_id, LOWER(c.severity) AS severity, \
         c.cvss_score, k.cve_id AS kev_cve_id, e.score AS epss_score, f.fix_version, f.first_seen \
         FROM {ALL_FINDINGS} f LEFT JOIN vuln_cves c ON c.id = f.cve_id \
         LEFT JOIN vuln_kev k ON k.cve_id = f.cve_id LEFT JOIN vuln_epss e ON e.cve_id = f.cve_id \
         WHERE f.tenant_id = $1 AND {} AND {} \
         AND (CAST($3 AS TEXT) IS NULL OR LOWER(COALESCE(c.severity, 'unknown')) IN ({})) \
         ORDER BY f.device_name, f.application_name, f.version, f.cve_id",
        counts_open_sql(db.backend, false),
        devices.condition(db, 2),
        json_text_values(db.backend, 3)
    );
    let mut rows = sqlx::query(&statement)
        .bind(tenant.as_str())
        .bind(devices.bound())
        .bind(severities)
        .fetch(&db.pool);
    // Row by row, each distinct string kept once.
    let mut strings: HashSet<Arc<str>> = HashSet::new();
    let mut shared = |text: &str| -> Arc<str> {
        match strings.get(text) {
            Some(known) => known.clone(),
            None => {
                let new: Arc<str> = Arc::from(text);
                strings.insert(new.clone());
                new
            }
        }
    };
    let mut findings = vec![];
    while let Some(r) = rows.try_next().await? {
        findings.push(OpenFinding {
            device_name: shared(r.try_get::<&str, _>("device_name")?),
            application_name: shared(r.try_get::<&str, _>("application_name")?),
            version: shared(r.try_get::<&str, _>("version")?),
            cve_id: shared(r.try_get::<&str, _>("cve_id")?),
            severity: r.try_get::<Option<&str>, _>("severity")?.map(&mut shared),
            cvss_score: r.try_get("cvss_score")?,
            kev: r.try_get::<Option<&str>, _>("kev_cve_id")?.is_some(),
            epss_score: r.try_get("epss_score")?,
            fix_version: r
                .try_get::<Option<&str>, _>("fix_version")?
                .map(&mut shared),
            first_seen: r.try_get("first_seen")?,
        });
    }
    Ok(findings)
}

/// The tenant's open findings now.
pub async fn open_finding_count(db: &Db, tenant: &TenantId) -> sqlx::Result<i64> {
    let mut total = 0;
    for (table, counts) in FINDING_TABLES {
        let n: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {table} WHERE f.tenant_id = $1 AND {}{counts}",
            open_in(db, table)
        ))
        .bind(tenant.as_str())
        .fetch_one(&db.pool)
        .await?;
        total += n;
    }
    Ok(total)
}
