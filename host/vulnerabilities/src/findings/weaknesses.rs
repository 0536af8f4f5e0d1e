//! Weaknesses (CWE) as the CVE store knows them: the catalog's entries and
//! every id a CVE names, each with its CVE count in the store and among
//! the CVEs open on the tenant's devices.

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use crate::findings::vocabulary::counts_open_sql;
use crate::findings::vocabulary::ALL_FINDINGS;
use crate::reference::store::{cve_hit, CveHit};
use cairn_core::db::{Backend, Db};
use cairn_core::ids::TenantId;
use cairn_inventory::search::escape_like;

/// `text` as a weakness id as the CVE store keeps them: `CWE-<digits>`
/// (any case). NVD's `NVD-CWE-Other` and `NVD-CWE-noinfo` are not kept.
pub fn cwe_id(text: &str) -> Option<String> {
    let upper = text.trim().to_uppercase();
    let digits = upper.strip_prefix("CWE-")?;
    ((1..=7).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit())).then_some(upper)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WeaknessSummary {
    pub cwe_id: String,
    /// From the CWE catalog; absent when the catalog is not loaded or does
    /// not list the id.
    pub name: Option<String>,
    /// CVEs of the store naming it.
    pub cve_count: i64,
    /// Of those, the CVEs open on at least one of the tenant's devices.
    pub tenant_cve_count: i64,
}

/// The tenant's open CVE ids, as a subquery taking the tenant as `$1`.
fn open_cves(backend: Backend) -> String {
    format!(
        "SELECT cve_id FROM {ALL_FINDINGS} f WHERE f.tenant_id = $1 AND {}",
        counts_open_sql(backend, false)
    )
}

fn counted(backend: Backend) -> String {
    format!(
        "WITH ids AS (SELECT id AS cwe_id FROM vuln_cwes UNION SELECT cwe_id FROM vuln_cve_cwes), \
         g AS (SELECT cwe_id, COUNT(*) AS n FROM vuln_cve_cwes GROUP BY cwe_id), \
         t AS (SELECT cwe_id, COUNT(*) AS n FROM vuln_cve_cwes \
               WHERE cve_id IN ({}) GROUP BY cwe_id) \
         SELECT ids.cwe_id, w.name, COALESCE(g.n, 0) AS cve_count, \
         COALESCE(t.n, 0) AS tenant_cve_count, w.description FROM ids \
         LEFT JOIN vuln_cwes w ON w.id = ids.cwe_id \
         LEFT JOIN g ON g.cwe_id = ids.cwe_id LEFT JOIN t ON t.cwe_id = ids.cwe_id",
        open_cves(backend)
    )
}

fn summary(r: &sqlx::any::AnyRow) -> sqlx::Result<WeaknessSummary> {
    Ok(WeaknessSummary {
        cwe_id: r.try_get("cwe_id")?,
        name: r.try_get("name")?,
        cve_count: r.try_get("cve_count")?,
        tenant_cve_count: r.try_get("tenant_cve_count")?,
    })
}

/// Weaknesses whose id or name contains `search` (ignoring case), those
/// most present in the tenant first, then the most common; a page and the
/// total. `in_tenant` keeps only those open on the tenant's devices.
pub async fn weaknesses(
    db: &Db,
    tenant: &TenantId,
    search: Option<&str>,
    in_tenant: bool,
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<WeaknessSummary>, i64)> {
    let pattern = search
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| format!("%{}%", escape_like(s)));
    let filtered = format!(
        "SELECT * FROM ({}) x WHERE (CAST($2 AS TEXT) IS NULL \
         OR LOWER(x.cwe_id) LIKE LOWER($2) ESCAPE '\\' OR LOWER(x.name) LIKE LOWER($2) ESCAPE '\\') \
         AND ($3 = 0 OR x.tenant_cve_count > 0)",
        counted(db.backend)
    );
    let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) FROM ({filtered}) y"))
        .bind(tenant.as_str())
        .bind(&pattern)
        .bind(i64::from(in_tenant))
        .fetch_one(&db.pool)
        .await?;
    let rows = sqlx::query(&format!(
        "{filtered} ORDER BY x.tenant_cve_count DESC, x.cve_count DESC, x.cwe_id LIMIT $4 OFFSET $5"
    ))
    .bind(tenant.as_str())
    .bind(&pattern)
    .bind(i64::from(in_tenant))
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    Ok((
        rows.iter().map(summary).collect::<sqlx::Result<_>>()?,
        total,
    ))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WeaknessDetail {
    #[serde(flatten)]
    pub summary: WeaknessSummary,
    /// From the CWE catalog, when loaded.
    pub description: Option<String>,
}

/// One weakness, if the catalog lists it or a CVE names it.
pub async fn weakness(
    db: &Db,
    tenant: &TenantId,
    cwe_id: &str,
) -> sqlx::Result<Option<WeaknessDetail>> {
    let row = sqlx::query(&format!(
        "SELECT * FROM ({}) x WHERE x.cwe_id = $2",
        counted(db.backend)
    ))
    .bind(tenant.as_str())
    .bind(cwe_id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(|r| -> sqlx::Result<WeaknessDetail> {
        Ok(WeaknessDetail {
            summary: summary(&r)?,
            description: r.try_get("description")?,
        })
    })
    .transpose()
}

/// A CVE naming a weakness, with the tenant's exposure to it.
#[derive(Debug, Serialize, ToSchema)]
pub struct WeaknessCve {
    #[serde(flatten)]
    pub cve: CveHit,
    /// The tenant's devices with an open finding of this CVE.
    pub device_count: i64,
}

/// The CVEs naming `cwe_id`, those open on the most of the tenant's
/// devices first, then the newest; `in_tenant` keeps only the open ones.
pub async fn cves_of_weakness(
    db: &Db,
    tenant: &TenantId,
    cwe_id: &str,
    in_tenant: bool,
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<WeaknessCve>, i64)> {
    let from = format!(
        "FROM vuln_cve_cwes x JOIN vuln_cves c ON c.id = x.cve_id \
         LEFT JOIN vuln_kev k ON k.cve_id = c.id \
         LEFT JOIN (SELECT cve_id, COUNT(DISTINCT device_name) AS devices FROM {ALL_FINDINGS} f \
                    WHERE f.tenant_id = $1 AND {} GROUP BY cve_id) d ON d.cve_id = c.id \
         WHERE x.cwe_id = $2 AND ($3 = 0 OR d.devices IS NOT NULL)",
        counts_open_sql(db.backend, false)
    );
    let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) {from}"))
        .bind(tenant.as_str())
        .bind(cwe_id)
        .bind(i64::from(in_tenant))
        .fetch_one(&db.pool)
        .await?;
    let rows = sqlx::query(&format!(
        "SELECT c.id, c.description, c.severity, c.cvss_score, c.published, k.cve_id AS kev_cve_id, \
         COALESCE(d.devices, 0) AS device_count {from} \
         ORDER BY COALESCE(d.devices, 0) DESC, c.published DESC, c.id LIMIT $4 OFFSET $5"
    ))
    .bind(tenant.as_str())
    .bind(cwe_id)
    .bind(i64::from(in_tenant))
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    Ok((
        rows.into_iter()
            .map(|r| {
                Ok(WeaknessCve {
                    device_count: r.try_get("device_count")?,
                    cve: cve_hit(r)?,
                })
            })
            .collect::<sqlx::Result<_>>()?,
        total,
    ))
}

#[cfg(test)]
mod tests {
    use super::cwe_id;

    #[test]
    fn weakness_ids_are_checked_and_normalized() {
        assert_eq!(cwe_id(" cwe-79 ").as_deref(), Some("CWE-79"));
        for bad in [
            "",
            "CWE-",
            "CWE-12a",
            "79",
            "CWE-12345678",
            "XSS",
            "NVD-CWE-noinfo",
        ] {
            assert_eq!(cwe_id(bad), None, "{bad}");
        }
    }
}
