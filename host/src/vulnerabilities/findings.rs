//! Per-tenant vulnerability data: findings, scans, unmatched applications
//! and the tenant's own mappings. Every statement is scoped by tenant.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{json, Value};
use sqlx::Row;
use utoipa::ToSchema;

use super::identify::ProductKey;
use super::matching::Hit;
use super::scan::{ScanCounts, ScanScope};
use crate::auth::TenantId;
use crate::db::{now_ms, to_rfc3339, Db};

pub const OPEN: &str = "open";

// ---- scans -------------------------------------------------------------

/// Records a queued scan; the `vuln_scan` job picks it up.
pub async fn create_scan(db: &Db, tenant: &TenantId, scope: &ScanScope) -> sqlx::Result<String> {
    let id = uuid::Uuid::now_v7().to_string();
    sqlx::query(
        "INSERT INTO vuln_scans (id, tenant_id, scope, status, created_at, applications, devices, \
         findings, new_findings, fixed_findings, by_severity) \
         VALUES ($1, $2, $3, 'queued', $4, 0, 0, 0, 0, 0, '{}')",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(serde_json::to_string(scope).unwrap_or_default())
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(id)
}

pub async fn next_queued_scan(
    db: &Db,
    tenant: &TenantId,
) -> sqlx::Result<Option<(String, ScanScope)>> {
    let row = sqlx::query(
        "SELECT id, scope FROM vuln_scans WHERE tenant_id = $1 AND status IN ('queued', 'running') \
         ORDER BY created_at, id LIMIT 1",
    )
    .bind(tenant.as_str())
    .fetch_optional(&db.pool)
    .await?;
    Ok(row.map(|r| {
        (
            r.get(0),
            serde_json::from_str(&r.get::<String, _>(1)).unwrap_or_default(),
        )
    }))
}

pub async fn mark_scan_running(
    db: &Db,
    tenant: &TenantId,
    scan_id: &str,
    job_id: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE vuln_scans SET status = 'running', job_id = $3 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(scan_id)
    .bind(job_id)
    .execute(&db.pool)
    .await?;
    Ok(())
}

pub async fn fail_scan(db: &Db, tenant: &TenantId, scan_id: &str, error: &str) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE vuln_scans SET status = 'failed', error = $3, finished_at = $4 \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(scan_id)
    .bind(error)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(())
}

// ---- mappings ----------------------------------------------------------

/// The tenant's mappings by cleaned application name (`None`: never match).
pub async fn tenant_overrides(
    db: &Db,
    tenant: &TenantId,
) -> sqlx::Result<HashMap<String, Option<ProductKey>>> {
    let rows =
        sqlx::query("SELECT app_key, vendor, product FROM vuln_app_mappings WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_all(&db.pool)
            .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let vendor: Option<String> = r.get(1);
            let product: Option<String> = r.get(2);
            let key = vendor
                .zip(product)
                .map(|(vendor, product)| ProductKey { vendor, product });
            (r.get(0), key)
        })
        .collect())
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MappingView {
    /// The application name as matching reads it (lowercase, without
    /// versions, architecture or locale).
    pub application: String,
    /// `vendor:product`, or null: never matched.
    pub cpe: Option<String>,
    pub created_at: String,
}

pub async fn mappings(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<MappingView>> {
    let rows = sqlx::query(
        "SELECT app_key, vendor, product, created_at FROM vuln_app_mappings WHERE tenant_id = $1 ORDER BY app_key",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let vendor: Option<String> = r.get(1);
            let product: Option<String> = r.get(2);
            MappingView {
                application: r.get(0),
                cpe: vendor.zip(product).map(|(v, p)| format!("{v}:{p}")),
                created_at: to_rfc3339(r.get(3)),
            }
        })
        .collect())
}

pub async fn set_mapping(
    db: &Db,
    tenant: &TenantId,
    app_key: &str,
    key: Option<&ProductKey>,
) -> sqlx::Result<i64> {
    let now = now_ms();
    let mut tx = db.pool.begin().await?;
    sqlx::query(
        "INSERT INTO vuln_app_mappings (tenant_id, app_key, vendor, product, created_at) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, app_key) DO UPDATE SET \
         vendor = excluded.vendor, product = excluded.product, created_at = excluded.created_at",
    )
    .bind(tenant.as_str())
    .bind(app_key)
    .bind(key.map(|k| k.vendor.as_str()))
    .bind(key.map(|k| k.product.as_str()))
    .bind(now)
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM vuln_unmatched_apps WHERE tenant_id = $1 AND app_key = $2")
        .bind(tenant.as_str())
        .bind(app_key)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(now)
}

/// `true` when a mapping was removed.
pub async fn delete_mapping(db: &Db, tenant: &TenantId, app_key: &str) -> sqlx::Result<bool> {
    let done = sqlx::query("DELETE FROM vuln_app_mappings WHERE tenant_id = $1 AND app_key = $2")
        .bind(tenant.as_str())
        .bind(app_key)
        .execute(&db.pool)
        .await?;
    Ok(done.rows_affected() > 0)
}

// ---- applying a scan ---------------------------------------------------

/// One finding a scan wants to exist.
pub struct WantedFinding<'a> {
    pub device_name: &'a str,
    pub application_name: &'a str,
    pub version: &'a str,
    pub key: &'a ProductKey,
    pub hit: &'a Hit,
}

type FindingKey = (String, String, String, String);

/// The devices and applications a scan read.
pub struct Scanned<'a> {
    pub devices: HashSet<&'a str>,
    pub applications: HashSet<&'a str>,
}

#[derive(Debug, Default, Clone, Copy)]
pub struct Written {
    pub new: i64,
    pub fixed: i64,
}

/// A finding's provenance folded into one number: a changed source,
/// criteria, range or fix means the row is rewritten.
fn provenance(source: &str, criteria: &str, range: &str, fix: Option<&str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (source, criteria, range, fix).hash(&mut hasher);
    hasher.finish()
}

fn key_json(key: &FindingKey) -> Value {
    json!([key.0, key.1, key.2, key.3])
}

/// Brings the tenant's findings in `scope` to `wanted` and records the
/// scan, in one transaction: findings that are new or reopened or whose
/// provenance changed are written, open ones no longer wanted become
/// fixed, the rest only have `last_seen` moved.
#[allow(clippy::too_many_arguments)]
pub async fn apply_scan(
    db: &Db,
    tenant: &TenantId,
    scan_id: &str,
    scope: &ScanScope,
    wanted: &[WantedFinding<'_>],
    scanned: &Scanned<'_>,
    unmatched: &[Value],
    generation: i64,
    counts: &mut ScanCounts,
) -> anyhow::Result<Written> {
    // The findings this scan may confirm or fix: all of them, or those of
    // the devices (one asset's names) or applications it read.
    let in_scope = |device: &str, application: &str| -> bool {
        match &scope.device_name {
            Some(name) => device == name || scanned.devices.contains(device),
            None => scope.is_full() || scanned.applications.contains(application),
        }
    };
    // Open findings only (fixed ones come back through the upsert).
    let mut open: HashMap<FindingKey, u64> = HashMap::new();
    {
        let mut rows = sqlx::query(
            "SELECT device_name, application_name, version, cve_id, source, criteria, \
             version_range, fix_version FROM vuln_findings WHERE tenant_id = $1 AND status = 'open'",
        )
        .bind(tenant.as_str())
        .fetch(&db.pool);
        use futures::TryStreamExt;
        while let Some(r) = rows.try_next().await? {
            let device: String = r.get(0);
            let application: String = r.get(1);
            if !in_scope(&device, &application) {
                continue;
            }
            let hash = provenance(
                r.get::<&str, _>(4),
                r.get::<&str, _>(5),
                r.get::<&str, _>(6),
                r.get::<Option<&str>, _>(7),
            );
            open.insert((device, application, r.get(2), r.get(3)), hash);
        }
    }

    let now = now_ms();
    let mut upserts: Vec<usize> = Vec::new();
    let mut refresh: Vec<Value> = Vec::new();
    let mut by_cve: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut written = Written::default();
    for (index, w) in wanted.iter().enumerate() {
        let key: FindingKey = (
            w.device_name.to_string(),
            w.application_name.to_string(),
            w.version.to_string(),
            w.hit.cve_id.clone(),
        );
        by_cve.entry(w.hit.cve_id.as_str()).or_default().push(index);
        let hash = provenance(
            &w.hit.source,
            &w.hit.criteria,
            &w.hit.range,
            w.hit.fix_version.as_deref(),
        );
        match open.remove(&key) {
            Some(existing) if existing == hash => {
                if !scope.is_full() {
                    refresh.push(key_json(&key));
                }
            }
            Some(_) => upserts.push(index),
            None => {
                written.new += 1;
                upserts.push(index);
            }
        }
    }
    // What is still in `open` was not found again: fixed.
    let fixes: Vec<Value> = open.keys().map(key_json).collect();
    drop(open);
    written.fixed = fixes.len() as i64;

    let cve_ids: Vec<&str> = by_cve.keys().copied().collect();
    let severity = super::scan::severities(db, &cve_ids).await?;
    for cve in &cve_ids {
        let level = severity
            .get(*cve)
            .cloned()
            .unwrap_or_else(|| "unknown".into());
        *counts.by_severity.entry(level).or_default() += 1;
    }
    counts.new_findings = written.new;
    counts.fixed_findings = written.fixed;

    let rows = crate::db::json_array_rows(db.backend, 1);
    // A row-value IN over the bound keys lets both engines look each key up
    // in the primary key instead of comparing every row with every key.
    let keyed = format!(
        "(tenant_id, device_name, application_name, version, cve_id) IN \
         (SELECT $3, value->>0, value->>1, value->>2, value->>3 FROM {rows})"
    );
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    if scope.is_full() {
        sqlx::query(
            "UPDATE vuln_findings SET last_seen = $2 WHERE tenant_id = $1 AND status = 'open'",
        )
        .bind(tenant.as_str())
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    for chunk in refresh.chunks(5_000) {
        sqlx::query(&format!(
            "UPDATE vuln_findings SET last_seen = $2 WHERE {keyed}"
        ))
        .bind(serde_json::to_string(chunk)?)
        .bind(now)
        .bind(tenant.as_str())
        .execute(&mut *tx)
        .await?;
    }
    for chunk in fixes.chunks(5_000) {
        sqlx::query(&format!(
            "UPDATE vuln_findings SET status = 'fixed', fixed_at = $2 \
             WHERE status = 'open' AND {keyed}"
        ))
        .bind(serde_json::to_string(chunk)?)
        .bind(now)
        .bind(tenant.as_str())
        .execute(&mut *tx)
        .await?;
    }
    for chunk in upserts.chunks(5_000) {
        let values: Vec<Value> = chunk
            .iter()
            .map(|&i| {
                let w = &wanted[i];
                json!([
                    w.device_name,
                    w.application_name,
                    w.version,
                    w.hit.cve_id,
                    w.key.vendor,
                    w.key.product,
                    w.hit.source,
                    w.hit.criteria,
                    w.hit.match_id,
                    w.hit.range,
                    w.hit.fix_version,
                ])
            })
            .collect();
        sqlx::query(&format!(
            "INSERT INTO vuln_findings (tenant_id, device_name, application_name, version, cve_id, \
             vendor, product, source, criteria, match_id, version_range, fix_version, status, \
             first_seen, last_seen, fixed_at) \
             SELECT $2, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, \
             value->>6, value->>7, value->>8, value->>9, value->>10, 'open', $3, $3, NULL \
             FROM {rows} WHERE true \
             ON CONFLICT (tenant_id, device_name, application_name, version, cve_id) DO UPDATE SET \
             vendor = excluded.vendor, product = excluded.product, source = excluded.source, \
             criteria = excluded.criteria, match_id = excluded.match_id, \
             version_range = excluded.version_range, fix_version = excluded.fix_version, \
             status = 'open', last_seen = excluded.last_seen, fixed_at = NULL"
        ))
        .bind(serde_json::to_string(&values)?)
        .bind(tenant.as_str())
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    if scope.is_full() {
        sqlx::query("DELETE FROM vuln_unmatched_apps WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .execute(&mut *tx)
            .await?;
    }
    for chunk in unmatched.chunks(5_000) {
        sqlx::query(&format!(
            "INSERT INTO vuln_unmatched_apps (tenant_id, app_key, name, publisher, reason, \
             candidates, device_count, seen_at) \
             SELECT $2, value->>0, value->>1, value->>2, value->>3, value->>4, \
             CAST(value->>5 AS BIGINT), $3 FROM {rows} WHERE true \
             ON CONFLICT (tenant_id, app_key) DO UPDATE SET name = excluded.name, \
             publisher = excluded.publisher, reason = excluded.reason, \
             candidates = excluded.candidates, device_count = excluded.device_count, \
             seen_at = excluded.seen_at"
        ))
        .bind(serde_json::to_string(chunk)?)
        .bind(tenant.as_str())
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    let cves: Vec<(&&str, &Vec<usize>)> = by_cve.iter().collect();
    for chunk in cves.chunks(500) {
        let values: Vec<Value> = chunk
            .iter()
            .map(|(cve, indices)| {
                let affected: Vec<Value> = indices
                    .iter()
                    .map(|&i| {
                        let w = &wanted[i];
                        json!({
                            "device_name": w.device_name,
                            "application_name": w.application_name,
                            "version": w.version,
                            "fix_version": w.hit.fix_version,
                        })
                    })
                    .collect();
                let devices: HashSet<&str> =
                    indices.iter().map(|&i| wanted[i].device_name).collect();
                json!([cve, devices.len(), Value::Array(affected).to_string()])
            })
            .collect();
        sqlx::query(&format!(
            "INSERT INTO vuln_scan_cves (scan_id, tenant_id, cve_id, device_count, affected) \
             SELECT $2, $3, value->>0, CAST(value->>1 AS BIGINT), value->>2 FROM {rows} WHERE true \
             ON CONFLICT (scan_id, cve_id) DO NOTHING"
        ))
        .bind(serde_json::to_string(&values)?)
        .bind(scan_id)
        .bind(tenant.as_str())
        .execute(&mut *tx)
        .await?;
    }
    sqlx::query(
        "UPDATE vuln_scans SET status = 'succeeded', finished_at = $3, applications = $4, \
         devices = $5, findings = $6, new_findings = $7, fixed_findings = $8, by_severity = $9, \
         error = NULL WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(scan_id)
    .bind(now_ms())
    .bind(counts.applications)
    .bind(counts.devices)
    .bind(counts.findings)
    .bind(counts.new_findings)
    .bind(counts.fixed_findings)
    .bind(serde_json::to_string(&counts.by_severity)?)
    .execute(&mut *tx)
    .await?;
    if scope.is_full() {
        sqlx::query(
            "INSERT INTO vuln_tenant_state (tenant_id, matched_generation, matched_at) VALUES ($1, $2, $3) \
             ON CONFLICT (tenant_id) DO UPDATE SET matched_generation = excluded.matched_generation, \
             matched_at = excluded.matched_at",
        )
        .bind(tenant.as_str())
        .bind(generation)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(written)
}
