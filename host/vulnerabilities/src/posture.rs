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
use sqlx::{Any, Row, Transaction};
use utoipa::ToSchema;

use super::figures::{self, Devices};
use super::triage::counts_open_sql;
use super::views::ALL_FINDINGS;
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

/// Counts a write of the tenant's findings or triage, inside `tx`.
pub async fn count_write(tx: &mut Transaction<'_, Any>, tenant: &TenantId) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO vuln_findings_writes (tenant_id, writes) VALUES ($1, 1) \
         ON CONFLICT (tenant_id) DO UPDATE SET writes = vuln_findings_writes.writes + 1",
    )
    .bind(tenant.as_str())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

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

/// The figures of each of `tenants`, kept ones where still current.
pub async fn postures(db: &Db, tenants: &[TenantId]) -> sqlx::Result<HashMap<String, Posture>> {
    if tenants.is_empty() {
        return Ok(HashMap::new());
    }
    let ids = serde_json::to_string(&tenants.iter().map(|t| t.as_str()).collect::<Vec<_>>())
        .unwrap_or_default();
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
    let mut out = HashMap::new();
    let mut stale = vec![];
    {
        let kept = store().lock().unwrap_or_else(|e| e.into_inner());
        for tenant in tenants {
            let stamp = (writes.get(tenant.as_str()).copied().unwrap_or(0), reference);
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

/// Counts one tenant's figures.
pub async fn count(db: &Db, tenant: &TenantId) -> sqlx::Result<Posture> {
    let all = Devices(None);
    let by_severity = figures::open_findings_by_severity(db, tenant, &all).await?;
    let of = |label: &str| {
        by_severity
            .iter()
            .find(|(s, _)| s == label)
            .map_or(0, |(_, n)| *n)
    };
    let high_epss = figures::epss_high_risk(db, tenant, HIGH_EPSS, i64::MAX, &all).await?;
    let row = sqlx::query(&format!(
        "SELECT CAST(MIN(f.first_seen) AS BIGINT) AS oldest FROM {ALL_FINDINGS} f \
         JOIN vuln_kev k ON k.cve_id = f.cve_id WHERE f.tenant_id = $1 AND {}",
        counts_open_sql(db.backend, false)
    ))
    .bind(tenant.as_str())
    .fetch_one(&db.pool)
    .await?;
    let epss_ids: Vec<&str> = high_epss.iter().map(|r| r.cve_id.as_str()).collect();
    let high_epss_findings: i64 = if epss_ids.is_empty() {
        0
    } else {
        sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM {ALL_FINDINGS} f WHERE f.tenant_id = $1 AND {} \
             AND f.cve_id IN ({})",
            counts_open_sql(db.backend, false),
            json_text_values(db.backend, 2)
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(&epss_ids).unwrap_or_default())
        .fetch_one(&db.pool)
        .await?
    };
    Ok(Posture {
        open_findings: by_severity.iter().map(|(_, n)| n).sum(),
        critical: of("critical"),
        high: of("high"),
        kev_findings: figures::kev_open_findings(db, tenant, &all).await?,
        high_epss_findings,
        oldest_open_kev_since: row.get("oldest"),
    })
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
    let ids = serde_json::to_string(&tenants.iter().map(|t| t.as_str()).collect::<Vec<_>>())
        .unwrap_or_default();
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
    Ok(rows
        .iter()
        .map(|r| Exposure {
            tenant_id: r.get("tenant_id"),
            device_name: r.get("device_name"),
            application_name: r.get("application_name"),
            version: r.get("version"),
            fix_version: r.get("fix_version"),
            first_seen: cairn_core::db::to_rfc3339(r.get("first_seen")),
        })
        .collect())
}

/// Days since `since_ms`, whole.
pub fn age_days(since_ms: i64) -> i64 {
    (now_ms() - since_ms).max(0) / 86_400_000
}
