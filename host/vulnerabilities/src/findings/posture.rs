//! Each tenant's exposure in a few figures, for a partner's view over many
//! customers at once, and the partner's cross-customer CVE lookup.
//!
//! A tenant's figures are kept in memory until its findings change: every
//! transaction that writes findings or triage counts itself in
//! `vuln_findings_writes` ([`count_write`]), and a change of reference data
//! (a KEV, EPSS or NVD load) moves `vuln_source_state`. Reading 200
//! customers' stamps is one statement; only the customers whose stamp moved
//! are counted again. A risk acceptance that expires changes counts with no
//! write, so kept figures are also read again after [`KEEP_AT_MOST`].

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use crate::findings::vocabulary::{counts_open_sql, ALL_FINDINGS};
use cairn_core::db::{json_text_values, now_ms, Db};
use cairn_core::ids::TenantId;

/// The EPSS score at or above which a finding counts as likely exploited.
pub const HIGH_EPSS: f64 = 0.1;

/// How long kept figures answer without being counted again.
pub const KEEP_AT_MOST: Duration = Duration::from_secs(300);

/// A tenant's open findings in the figures a partner compares customers by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, ToSchema)]
pub struct Posture {
    pub open_findings: i64,
    pub critical: i64,
    pub high: i64,
    /// Open findings whose CVE is in CISA's KEV catalog.
    pub kev_findings: i64,
    /// Open findings whose CVE's EPSS score is at least 0.1.
    pub high_epss_findings: i64,
    /// When the oldest open KEV finding was first seen (ms).
    #[serde(skip)]
    pub oldest_open_kev_since: Option<i64>,
}

pub use crate::findings::vocabulary::{commit, count_write, FINDINGS_TOPIC};

struct Kept {
    stamp: (i64, i64),
    at: Instant,
    posture: Posture,
}

type Store = Mutex<HashMap<(u64, String), Kept>>;

fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Tenants kept at most (a bound on memory; past it, the store starts over).
const MAX_KEPT: usize = 100_000;

/// What a figure over a tenant's findings is current with: the reference
/// data's last load (one for every tenant) and the tenant's count of
/// findings and triage writes. A figure computed under the same stamp is
/// still right, but for risk acceptances that expired meanwhile.
pub struct Stamps {
    reference: i64,
    writes: HashMap<String, i64>,
}

impl Stamps {
    /// `(tenant's writes, reference)`.
    pub fn of(&self, tenant: &TenantId) -> (i64, i64) {
        (
            self.writes.get(tenant.as_str()).copied().unwrap_or(0),
            self.reference,
        )
    }
}

/// The stamps of `tenants`' findings: two statements for any number.
pub async fn stamps(db: &Db, tenants: &[TenantId]) -> sqlx::Result<Stamps> {
    let ids = cairn_core::db::tenant_ids_json(tenants);
    let reference: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(MAX(updated_at), 0) AS BIGINT) FROM vuln_source_state",
    )
    .fetch_one(&db.pool)
    .await?;
    let writes: HashMap<String, i64> = sqlx::query_as(&format!(
        "SELECT tenant_id, writes FROM vuln_findings_writes WHERE tenant_id IN ({})",
        json_text_values(db.backend, 1)
    ))
    .bind(&ids)
    .fetch_all(&db.pool)
    .await?
    .into_iter()
    .collect();
    Ok(Stamps { reference, writes })
}

/// The figures of each of `tenants`, kept ones where still current.
pub async fn postures(db: &Db, tenants: &[TenantId]) -> sqlx::Result<HashMap<String, Posture>> {
    if tenants.is_empty() {
        return Ok(HashMap::new());
    }
    let stamps = stamps(db, tenants).await?;
    let mut out = HashMap::new();
    let mut stale = vec![];
    {
        let kept = store().lock().unwrap_or_else(|e| e.into_inner());
        for tenant in tenants {
            let stamp = stamps.of(tenant);
            match kept.get(&(db.instance(), tenant.0.clone())) {
                Some(k) if k.stamp == stamp && k.at.elapsed() < KEEP_AT_MOST => {
                    out.insert(tenant.0.clone(), k.posture);
                }
                _ => stale.push((tenant.clone(), stamp)),
            }
        }
    }
    for (tenant, stamp) in stale {
        let posture = count(db, &tenant).await?;
        let mut kept = store().lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(
            (db.instance(), tenant.0.clone()),
            Kept {
                stamp,
                at: Instant::now(),
                posture,
            },
        );
        out.insert(tenant.0, posture);
    }
    Ok(out)
}

/// Counts one tenant's figures: its open findings grouped by CVE (one
/// index range), each CVE's severity, KEV entry and EPSS score joined once.
pub async fn count(db: &Db, tenant: &TenantId) -> sqlx::Result<Posture> {
    let rows = sqlx::query(&format!(
        "SELECT LOWER(COALESCE(c.severity, 'unknown')) AS severity, g.n, g.oldest, \
         CAST(CASE WHEN k.cve_id IS NULL THEN 0 ELSE 1 END AS BIGINT) AS kev, e.score AS epss \
         FROM (SELECT f.cve_id, COUNT(*) AS n, CAST(MIN(f.first_seen) AS BIGINT) AS oldest \
               FROM {ALL_FINDINGS} f WHERE f.tenant_id = $1 AND {} GROUP BY f.cve_id) g \
         LEFT JOIN vuln_cves c ON c.id = g.cve_id LEFT JOIN vuln_kev k ON k.cve_id = g.cve_id \
         LEFT JOIN vuln_epss e ON e.cve_id = g.cve_id",
        counts_open_sql(db.backend, false)
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    let mut posture = Posture::default();
    for row in rows {
        let n: i64 = row.try_get("n")?;
        let severity: String = row.try_get("severity")?;
        let kev: i64 = row.try_get("kev")?;
        let epss: Option<f64> = row.try_get("epss")?;
        posture.open_findings += n;
        match severity.as_str() {
            "critical" => posture.critical += n,
            "high" => posture.high += n,
            _ => {}
        }
        if kev == 1 {
            posture.kev_findings += n;
            let oldest: i64 = row.try_get("oldest")?;
            posture.oldest_open_kev_since = Some(
                posture
                    .oldest_open_kev_since
                    .map_or(oldest, |o| o.min(oldest)),
            );
        }
        if epss.is_some_and(|score| score >= HIGH_EPSS) {
            posture.high_epss_findings += n;
        }
    }
    Ok(posture)
}

/// One open finding of a CVE on a customer's device.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Exposure {
    pub tenant_id: String,
    pub device_name: String,
    pub application_name: String,
    pub version: String,
    pub fix_version: Option<String>,
    pub first_seen: String,
}

/// Every open finding of `cve_id` on the devices of `tenants`, by tenant,
/// device and application (each tenant one index lookup).
pub async fn exposures(db: &Db, tenants: &[TenantId], cve_id: &str) -> sqlx::Result<Vec<Exposure>> {
    let ids = cairn_core::db::tenant_ids_json(tenants);
    let rows = sqlx::query(&format!(
        "SELECT f.tenant_id, f.device_name, f.application_name, f.version, f.fix_version, \
         f.first_seen FROM {ALL_FINDINGS} f WHERE f.cve_id = $1 AND f.tenant_id IN ({}) AND {} \
         ORDER BY f.tenant_id, f.device_name, f.application_name, f.version",
        json_text_values(db.backend, 2),
        counts_open_sql(db.backend, false)
    ))
    .bind(cve_id)
    .bind(&ids)
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|r| {
            Ok(Exposure {
                tenant_id: r.try_get("tenant_id")?,
                device_name: r.try_get("device_name")?,
                application_name: r.try_get("application_name")?,
                version: r.try_get("version")?,
                fix_version: r.try_get("fix_version")?,
                first_seen: cairn_core::db::to_rfc3339(r.try_get("first_seen")?),
            })
        })
        .collect()
}

/// Days since `since_ms`, whole.
pub fn age_days(since_ms: i64) -> i64 {
    (now_ms() - since_ms).max(0) / 86_400_000
}

/// A week of a tenant's findings: how many were open at its end, opened
/// and closed in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WeekTrend {
    /// The week's first moment (ms).
    pub start: i64,
    pub open_at_end: i64,
    pub opened: i64,
    pub closed: i64,
}

/// What a period did to a tenant's findings (Cairn's matches and a
/// scanner's, triage not applied: a quarterly review counts what was found
/// and fixed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Remediation {
    pub opened: i64,
    pub closed: i64,
    pub kev_closed: i64,
    /// Mean days from first seen to fixed of the KEV findings closed.
    pub kev_mean_days: Option<f64>,
    pub critical_closed: i64,
    pub critical_mean_days: Option<f64>,
    /// One entry per week from `since`, oldest first.
    pub weeks: Vec<WeekTrend>,
}

const WEEK_MS: i64 = 7 * 86_400_000;

/// The tenant's findings over `[since, until)`: opened, closed, mean time
/// to remediate KEV and critical findings, and the weekly trend.
pub async fn remediation(
    db: &Db,
    tenant: &TenantId,
    since: i64,
    until: i64,
) -> sqlx::Result<Remediation> {
    let rows = sqlx::query(&format!(
        "SELECT f.first_seen, f.fixed_at, LOWER(COALESCE(c.severity, 'unknown')) AS severity, \
         CAST(CASE WHEN k.cve_id IS NULL THEN 0 ELSE 1 END AS BIGINT) AS kev FROM {ALL_FINDINGS} f \
         LEFT JOIN vuln_cves c ON c.id = f.cve_id LEFT JOIN vuln_kev k ON k.cve_id = f.cve_id \
         WHERE f.tenant_id = $1 AND (f.fixed_at IS NULL OR f.fixed_at >= $2)"
    ))
    .bind(tenant.as_str())
    .bind(since)
    .fetch_all(&db.pool)
    .await?;
    let findings: Vec<Span> = rows
        .iter()
        .map(|r| {
            let kev: i64 = r.try_get("kev")?;
            let severity: String = r.try_get("severity")?;
            Ok(Span {
                first_seen: r.try_get("first_seen")?,
                fixed_at: r.try_get("fixed_at")?,
                critical: severity == "critical",
                kev: kev == 1,
            })
        })
        .collect::<sqlx::Result<_>>()?;
    Ok(remediation_of(&findings, since, until))
}

/// A finding's life, as a period's figures read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub first_seen: i64,
    pub fixed_at: Option<i64>,
    pub critical: bool,
    pub kev: bool,
}

/// [`remediation`] over the findings' spans.
pub fn remediation_of(findings: &[Span], since: i64, until: i64) -> Remediation {
    let in_period = |at: i64| at >= since && at < until;
    let mean = |pick: fn(&Span) -> bool| {
        let days: Vec<f64> = findings
            .iter()
            .filter(|f| pick(f))
            .filter_map(|f| {
                f.fixed_at
                    .filter(|at| in_period(*at))
                    .map(|at| (at - f.first_seen) as f64 / 86_400_000.0)
            })
            .collect();
        let n = days.len() as i64;
        (n, (n > 0).then(|| days.iter().sum::<f64>() / n as f64))
    };
    let (kev_closed, kev_mean_days) = mean(|f| f.kev);
    let (critical_closed, critical_mean_days) = mean(|f| f.critical);
    let mut weeks = vec![];
    let mut start = since;
    while start < until {
        let end = (start + WEEK_MS).min(until);
        weeks.push(WeekTrend {
            start,
            open_at_end: findings
                .iter()
                .filter(|f| f.first_seen < end && f.fixed_at.is_none_or(|at| at >= end))
                .count() as i64,
            opened: findings
                .iter()
                .filter(|f| f.first_seen >= start && f.first_seen < end)
                .count() as i64,
            closed: findings
                .iter()
                .filter(|f| f.fixed_at.is_some_and(|at| at >= start && at < end))
                .count() as i64,
        });
        start = end;
    }
    Remediation {
        opened: findings.iter().filter(|f| in_period(f.first_seen)).count() as i64,
        closed: findings
            .iter()
            .filter(|f| f.fixed_at.is_some_and(in_period))
            .count() as i64,
        kev_closed,
        kev_mean_days,
        critical_closed,
        critical_mean_days,
        weeks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    #[test]
    fn a_period_counts_opened_closed_and_time_to_remediate() {
        let since = 100 * DAY;
        let until = since + 14 * DAY;
        let f = |first: i64, fixed: Option<i64>, severity: &str, kev: bool| Span {
            first_seen: first * DAY,
            fixed_at: fixed.map(|d| d * DAY),
            critical: severity == "critical",
            kev,
        };
        let findings = vec![
            // Found before, fixed in week one after 10 days: KEV, critical.
            f(93, Some(103), "critical", true),
            // Found in week one, fixed in week two after 4 days: critical.
            f(105, Some(109), "critical", false),
            // Found in week two, still open.
            f(110, None, "high", true),
            // Found long before, still open.
            f(10, None, "medium", false),
            // Fixed after the period: counts as open throughout.
            f(50, Some(120), "low", false),
        ];
        let r = remediation_of(&findings, since, until);
        assert_eq!((r.opened, r.closed), (2, 2));
        assert_eq!((r.kev_closed, r.kev_mean_days), (1, Some(10.0)));
        assert_eq!((r.critical_closed, r.critical_mean_days), (2, Some(7.0)));
        assert_eq!(r.weeks.len(), 2);
        // Week one ends at day 107: 93 fixed, 105 open, 10 and 50 open.
        assert_eq!(
            (r.weeks[0].open_at_end, r.weeks[0].opened, r.weeks[0].closed),
            (3, 1, 1)
        );
        // Week two ends at day 114: 105 fixed, 110 opened.
        assert_eq!(
            (r.weeks[1].open_at_end, r.weeks[1].opened, r.weeks[1].closed),
            (3, 1, 1)
        );
        let none = remediation_of(&[], since, until);
        assert_eq!((none.kev_mean_days, none.weeks[1].open_at_end), (None, 0));
    }
}
