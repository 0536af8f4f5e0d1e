//! Per-tenant vulnerability data: findings, scans, unmatched applications
//! and the tenant's own mappings. Every statement is scoped by tenant.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde_json::{json, Value};
use sqlx::Row;
use utoipa::ToSchema;

use crate::findings::vocabulary::{self, ScanCounts, ScanScope};
use crate::matching::identify::{AppId, Identification};
use crate::matching::ranges::Hit;
use crate::reference::cpe::ProductKey;
use cairn_core::db::fence::{self, FencedError, WriteFence};
use cairn_core::db::{now_ms, stored_json, to_rfc3339, Db};
use cairn_core::ids::TenantId;
use cairn_inventory::changes;
use cairn_inventory::software::SoftwareKey;

pub use crate::findings::vocabulary::OPEN;

// ---- scans -------------------------------------------------------------

/// Records a queued scan; the `vuln_scan` job picks it up.
pub async fn create_scan(db: &Db, tenant: &TenantId, scope: &ScanScope) -> sqlx::Result<String> {
    let _turn = db.write_turn().await;
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
    row.map(|r| Ok((r.try_get("id")?, stored_json("scope", r.try_get("scope")?)?)))
        .transpose()
}

pub async fn mark_scan_running(
    db: &Db,
    fence: &dyn WriteFence,
    tenant: &TenantId,
    scan_id: &str,
    job_id: &str,
) -> Result<(), FencedError> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    fence::hold(fence, &mut tx).await?;
    sqlx::query(
        "UPDATE vuln_scans SET status = 'running', job_id = $3 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(scan_id)
    .bind(job_id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

pub async fn fail_scan(
    db: &Db,
    fence: &dyn WriteFence,
    tenant: &TenantId,
    scan_id: &str,
    error: &str,
) -> Result<(), FencedError> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    fence::hold(fence, &mut tx).await?;
    sqlx::query(
        "UPDATE vuln_scans SET status = 'error', error = $3, finished_at = $4 \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(scan_id)
    .bind(error)
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
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
    rows.into_iter()
        .map(|r| {
            Ok((
                r.try_get("app_key")?,
                ProductKey::from_columns(r.try_get("vendor")?, r.try_get("product")?),
            ))
        })
        .collect()
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
    rows.into_iter()
        .map(|r| {
            let vendor: Option<String> = r.try_get("vendor")?;
            let product: Option<String> = r.try_get("product")?;
            Ok(MappingView {
                application: r.try_get("app_key")?,
                cpe: vendor.zip(product).map(|(v, p)| format!("{v}:{p}")),
                created_at: to_rfc3339(r.try_get("created_at")?),
            })
        })
        .collect()
}

pub async fn set_mapping(
    db: &Db,
    tenant: &TenantId,
    app_key: &str,
    key: Option<&ProductKey>,
) -> sqlx::Result<i64> {
    let _turn = db.write_turn().await;
    let now = now_ms();
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
    .execute(&db.pool)
    .await?;
    Ok(now)
}

/// `true` when a mapping was removed.
pub async fn delete_mapping(db: &Db, tenant: &TenantId, app_key: &str) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let done = sqlx::query("DELETE FROM vuln_app_mappings WHERE tenant_id = $1 AND app_key = $2")
        .bind(tenant.as_str())
        .bind(app_key)
        .execute(&db.pool)
        .await?;
    Ok(done.rows_affected() > 0)
}

// ---- applying a scan ---------------------------------------------------

/// How a scan ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanMode {
    /// The whole inventory was read.
    Full,
    /// Only what changed since the tenant was last matched.
    Changes,
    /// One application, vendor or device a person asked for.
    Scoped,
}

impl ScanMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ScanMode::Full => "full",
            ScanMode::Changes => "changes",
            ScanMode::Scoped => "scoped",
        }
    }
}

/// The findings a scan answers for: those it may confirm, and fix when it
/// did not find them again.
pub enum Covered<'a> {
    All,
    /// The findings of these devices (one asset's names).
    Devices(HashSet<&'a str>),
    /// The findings of these application names.
    Applications(HashSet<&'a str>),
    /// The findings of these (device, application, version) keys and of
    /// these application names.
    Changes {
        keys: &'a [SoftwareKey],
        applications: &'a [String],
    },
}

/// One finding a scan wants to exist.
pub struct WantedFinding<'a> {
    pub device_name: &'a str,
    pub application_name: &'a str,
    pub version: &'a str,
    pub key: &'a ProductKey,
    pub hit: &'a Hit,
}

/// Everything a finished scan records, in one transaction.
pub struct ScanResult<'a> {
    pub tenant: &'a TenantId,
    pub scan_id: &'a str,
    pub mode: ScanMode,
    pub covered: Covered<'a>,
    pub wanted: &'a [WantedFinding<'a>],
    pub identified: &'a [(&'a AppId, &'a Identification)],
    /// Inventory change entries the scan accounts for.
    pub consumed: &'a [i64],
    /// The reference generation the scan matched against.
    pub generation: i64,
}

type FindingKey = (String, String, String, String);

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

const OPEN_COLUMNS: &str = "f.device_name, f.application_name, f.version, f.cve_id, f.source, \
     f.criteria, f.version_range, f.fix_version";

/// Open findings whose `column` (device or application name) is one of
/// `names`, looked up through the index rather than read and filtered.
async fn open_findings_of(
    db: &Db,
    tenant: &TenantId,
    column: &str,
    names: &[&str],
    out: &mut Vec<sqlx::any::AnyRow>,
) -> sqlx::Result<()> {
    let values = cairn_core::db::json_text_values(db.backend, 2);
    for chunk in names.chunks(1_000) {
        let found = sqlx::query(&format!(
            "SELECT {OPEN_COLUMNS} FROM vuln_findings f WHERE f.tenant_id = $1 \
             AND f.status = 'open' AND f.{column} IN ({values})"
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
        out.extend(found);
    }
    Ok(())
}

/// The open findings `covered` answers for, by key, with their provenance.
async fn covered_open_findings(
    db: &Db,
    tenant: &TenantId,
    covered: &Covered<'_>,
) -> sqlx::Result<HashMap<FindingKey, u64>> {
    let keyed = |r: &sqlx::any::AnyRow| -> sqlx::Result<(FindingKey, u64)> {
        let hash = provenance(
            r.try_get::<&str, _>("source")?,
            r.try_get::<&str, _>("criteria")?,
            r.try_get::<&str, _>("version_range")?,
            r.try_get::<Option<&str>, _>("fix_version")?,
        );
        Ok((
            (
                r.try_get("device_name")?,
                r.try_get("application_name")?,
                r.try_get("version")?,
                r.try_get("cve_id")?,
            ),
            hash,
        ))
    };
    let mut rows: Vec<sqlx::any::AnyRow> = Vec::new();
    match covered {
        Covered::All => {
            // Streamed: a tenant can have a million open findings.
            use futures::TryStreamExt;
            let statement = format!(
                "SELECT {OPEN_COLUMNS} FROM vuln_findings f \
                 WHERE f.tenant_id = $1 AND f.status = 'open'"
            );
            let mut stream = sqlx::query(&statement)
                .bind(tenant.as_str())
                .fetch(&db.pool);
            let mut open = HashMap::new();
            while let Some(r) = stream.try_next().await? {
                let (key, hash) = keyed(&r)?;
                open.insert(key, hash);
            }
            return Ok(open);
        }
        Covered::Devices(names) => {
            let names: Vec<&str> = names.iter().copied().collect();
            open_findings_of(db, tenant, "device_name", &names, &mut rows).await?;
        }
        Covered::Applications(names) => {
            let names: Vec<&str> = names.iter().copied().collect();
            open_findings_of(db, tenant, "application_name", &names, &mut rows).await?;
        }
        Covered::Changes { keys, applications } => {
            let json_rows = cairn_core::db::json_array_rows(db.backend, 2);
            for chunk in keys.chunks(cairn_inventory::software::KEYS_PER_READ) {
                let values: Vec<Value> = chunk
                    .iter()
                    .map(|k| json!([k.device_name, k.application_name, k.version]))
                    .collect();
                let found = sqlx::query(&format!(
                    "SELECT {OPEN_COLUMNS} FROM {json_rows} CROSS JOIN vuln_findings f \
                     WHERE f.tenant_id = $1 AND f.device_name = value->>0 \
                     AND f.application_name = value->>1 AND f.version = value->>2 \
                     AND f.status = 'open'"
                ))
                .bind(tenant.as_str())
                .bind(serde_json::to_string(&values).unwrap_or_default())
                .fetch_all(&db.pool)
                .await?;
                rows.extend(found);
            }
            let names: Vec<&str> = applications.iter().map(String::as_str).collect();
            open_findings_of(db, tenant, "application_name", &names, &mut rows).await?;
        }
    }
    rows.iter().map(keyed).collect()
}

/// Brings the tenant's covered findings to `wanted` and records the scan,
/// in one transaction: findings that are new or reopened or whose
/// provenance changed are written, covered open ones no longer wanted
/// become fixed, the identifications are stored, the inventory changes
/// read are consumed.
pub async fn apply_scan(
    db: &Db,
    fence: &dyn WriteFence,
    result: ScanResult<'_>,
    counts: &mut ScanCounts,
) -> anyhow::Result<Written> {
    let ScanResult {
        tenant,
        scan_id,
        mode,
        covered,
        wanted,
        identified,
        consumed,
        generation,
    } = result;
    let mut open = covered_open_findings(db, tenant, &covered).await?;

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
            // A whole-inventory match confirms every open finding at once
            // (views read `matched_at`); others confirm theirs one by one.
            Some(existing) if existing == hash => {
                if mode != ScanMode::Full {
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
    let severity = crate::reference::store::severities(db, &cve_ids).await?;
    for cve in &cve_ids {
        let level = severity
            .get(*cve)
            .cloned()
            .unwrap_or_else(|| "unknown".into());
        *counts.by_severity.entry(level).or_default() += 1;
    }
    counts.new_findings = written.new;
    counts.fixed_findings = written.fixed;

    let rows = cairn_core::db::json_array_rows(db.backend, 1);
    // A row-value IN over the bound keys lets both engines look each key up
    // in the primary key instead of comparing every row with every key.
    let keyed = format!(
        "(tenant_id, device_name, application_name, version, cve_id) IN \
         (SELECT $3, value->>0, value->>1, value->>2, value->>3 FROM {rows})"
    );
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    fence::hold(fence, &mut tx).await?;
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
    write_identifications(&mut tx, db, tenant, mode, identified, now).await?;
    write_scan_cves(&mut tx, db, tenant, scan_id, wanted, &by_cve).await?;
    sqlx::query(
        "UPDATE vuln_scans SET status = 'success', finished_at = $3, applications = $4, \
         devices = $5, findings = $6, new_findings = $7, fixed_findings = $8, by_severity = $9, \
         mode = $10, error = NULL WHERE tenant_id = $1 AND id = $2",
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
    .bind(mode.as_str())
    .execute(&mut *tx)
    .await?;
    vocabulary::count_write(&mut tx, db, tenant).await?;
    if mode != ScanMode::Scoped {
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
        changes::consume(&mut tx, db.backend, tenant, consumed).await?;
    }
    vocabulary::commit(tx, db, tenant).await?;
    Ok(written)
}

/// Stores what each application was identified as; a full scan replaces
/// the tenant's list, so applications no longer installed leave it.
async fn write_identifications(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    db: &Db,
    tenant: &TenantId,
    mode: ScanMode,
    identified: &[(&AppId, &Identification)],
    now: i64,
) -> anyhow::Result<()> {
    if mode == ScanMode::Full {
        sqlx::query("DELETE FROM vuln_identified_apps WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .execute(&mut **tx)
            .await?;
    }
    let rows = cairn_core::db::json_array_rows(db.backend, 1);
    for chunk in identified.chunks(5_000) {
        let values: Vec<Value> = chunk
            .iter()
            .map(|(app, found)| {
                let stored = StoredIdentification::from(*found);
                json!([
                    app.name,
                    app.publisher.as_deref().unwrap_or(""),
                    stored.outcome,
                    stored.product.as_ref().map(|k| &k.vendor),
                    stored.product.as_ref().map(|k| &k.product),
                    stored.reason,
                    serde_json::to_string(&stored.candidates).unwrap_or_default(),
                ])
            })
            .collect();
        sqlx::query(&format!(
            "INSERT INTO vuln_identified_apps (tenant_id, application_name, publisher, outcome, \
             vendor, product, reason, candidates, seen_at) \
             SELECT $2, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, \
             value->>6, $3 FROM {rows} WHERE true \
             ON CONFLICT (tenant_id, application_name, publisher) DO UPDATE SET \
             outcome = excluded.outcome, vendor = excluded.vendor, product = excluded.product, \
             reason = excluded.reason, candidates = excluded.candidates, seen_at = excluded.seen_at"
        ))
        .bind(serde_json::to_string(&values)?)
        .bind(tenant.as_str())
        .bind(now)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// The scan's own record: per CVE, the devices and applications affected.
async fn write_scan_cves(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    db: &Db,
    tenant: &TenantId,
    scan_id: &str,
    wanted: &[WantedFinding<'_>],
    by_cve: &HashMap<&str, Vec<usize>>,
) -> anyhow::Result<()> {
    let rows = cairn_core::db::json_array_rows(db.backend, 1);
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
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

// ---- identifications and the tenant's match state ---------------------

/// An identification as stored: comparable with a fresh one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredIdentification {
    /// `product`, `skipped` or `unmatched`.
    pub outcome: &'static str,
    pub product: Option<ProductKey>,
    pub reason: Option<String>,
    pub candidates: Vec<String>,
}

impl From<&Identification> for StoredIdentification {
    fn from(found: &Identification) -> Self {
        let (outcome, product, reason, candidates) = match found {
            Identification::Product(key) => ("product", Some(key.clone()), None, vec![]),
            Identification::Skipped => ("skipped", None, None, vec![]),
            Identification::Unmatched { reason, candidates } => (
                "unmatched",
                None,
                Some(reason.to_string()),
                candidates.clone(),
            ),
        };
        StoredIdentification {
            outcome,
            product,
            reason,
            candidates,
        }
    }
}

/// What the tenant's applications were last identified as.
pub async fn identified_applications(
    db: &Db,
    tenant: &TenantId,
) -> sqlx::Result<HashMap<AppId, StoredIdentification>> {
    let rows = sqlx::query(
        "SELECT application_name, publisher, outcome, vendor, product, reason, candidates \
         FROM vuln_identified_apps WHERE tenant_id = $1",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter()
        .map(|r| {
            let publisher: String = r.try_get("publisher")?;
            let app = AppId {
                name: r.try_get("application_name")?,
                publisher: (!publisher.is_empty()).then_some(publisher),
            };
            let outcome = match r.try_get::<&str, _>("outcome")? {
                "product" => "product",
                "skipped" => "skipped",
                _ => "unmatched",
            };
            let stored = StoredIdentification {
                outcome,
                product: ProductKey::from_columns(r.try_get("vendor")?, r.try_get("product")?),
                reason: r.try_get("reason")?,
                candidates: stored_json("candidates", r.try_get("candidates")?)?,
            };
            Ok((app, stored))
        })
        .collect()
}

/// The reference generation of the tenant's last full or change match;
/// `None` when it was never matched.
pub async fn matched_generation(db: &Db, tenant: &TenantId) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar("SELECT matched_generation FROM vuln_tenant_state WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_optional(&db.pool)
        .await
}
