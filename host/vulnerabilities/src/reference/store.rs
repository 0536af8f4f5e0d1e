//! The global reference store: CVEs and their match rows, the CPE product
//! dictionary, CWE, KEV and EPSS. Shared by every tenant; a request writes
//! to it only the NVD record of a CVE it lacks, as a sync would have.
//! Writes go in batches inside one transaction each, as bound JSON arrays
//! (`json_each` / `jsonb_array_elements`), so thousands of rows cost one
//! statement.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};
use sqlx::Row;

use crate::reference::cpe::ProductKey;
use crate::reference::feeds::{Cwe, EpssScore, KevEntry};
use crate::reference::records::CandidateRow;
use crate::reference::records::{
    CveRecord, MatchRow, SOURCE_CNA, SOURCE_CVE5, SOURCE_NVD, SOURCE_OSV,
};
use cairn_core::db::{now_ms, stored_json, Db};

/// What one batch of CVE records did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CveWrite {
    pub written: u64,
    /// Older than (or as old as) what is stored: left alone.
    pub unchanged: u64,
}

/// PostgreSQL's jsonb refuses NUL; nothing in reference text needs it.
fn text(value: &str) -> String {
    if value.contains('\0') {
        value.replace('\0', "")
    } else {
        value.to_string()
    }
}

fn flag(value: bool) -> i64 {
    i64::from(value)
}

fn match_row_json(cve_id: &str, source: &str, seq: usize, row: &MatchRow) -> Value {
    json!([
        cve_id,
        source,
        seq,
        text(&row.vendor),
        text(&row.product),
        row.part,
        text(&row.cpe_version),
        text(&row.cpe_update),
        text(&row.target_sw),
        text(&row.criteria),
        row.match_id,
        row.version_start.as_deref().map(text),
        flag(row.start_including),
        row.version_end.as_deref().map(text),
        flag(row.end_including),
        flag(row.vulnerable),
        flag(row.negate),
        serde_json::to_string(&row.platforms).unwrap_or_else(|_| "[]".into()),
    ])
}

struct Stored {
    source: String,
    last_modified: i64,
    cna_modified: Option<i64>,
}

/// Writes a batch of records, keeping the newest: an NVD record replaces
/// the CVE and its NVD rows unless the stored NVD version is as new; a CVE
/// 5 record replaces the CNA rows unless they are as new, and the CVE
/// itself only where NVD has not described it. Products whose rows changed
/// are stamped with this write's generation.
pub async fn write_cves(db: &Db, records: &[CveRecord]) -> sqlx::Result<CveWrite> {
    if records.is_empty() {
        return Ok(CveWrite::default());
    }
    let ids: Vec<Value> = records.iter().map(|r| json!([r.id])).collect();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let existing: HashMap<String, Stored> = sqlx::query(&format!(
        "SELECT id, source, last_modified, cna_modified FROM vuln_cves \
         WHERE id IN (SELECT value->>0 FROM {})",
        cairn_core::db::json_array_rows(db.backend, 1)
    ))
    .bind(serde_json::to_string(&ids).unwrap_or_default())
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .map(|row| {
        Ok((
            row.try_get::<String, _>("id")?,
            Stored {
                source: row.try_get("source")?,
                last_modified: row.try_get("last_modified")?,
                cna_modified: row.try_get("cna_modified")?,
            },
        ))
    })
    .collect::<sqlx::Result<_>>()?;

    let mut cve_rows = Vec::new();
    let mut replace_nvd = Vec::new();
    let mut replace_cna = Vec::new();
    let mut cna_stamps = Vec::new();
    let mut match_rows = Vec::new();
    let mut weakness_pairs = Vec::new();
    // CVEs stored before whose main record this write replaces.
    let mut rewritten: Vec<Value> = Vec::new();
    let mut outcome = CveWrite::default();
    for record in records {
        let stored = existing.get(&record.id);
        let (write_main, write_cna) = match record.source {
            SOURCE_NVD => {
                let newer = stored.is_none_or(|s| {
                    s.source != SOURCE_NVD || s.last_modified < record.last_modified
                });
                (newer, newer && record.cna_rows.is_some())
            }
            _ => {
                // A CVE 5 record replaces an older one, or what an OSV
                // advisory said of the CVE; never NVD's.
                let main = stored.is_none_or(|s| {
                    (s.source == SOURCE_CVE5 || s.source == SOURCE_OSV)
                        && s.last_modified < record.last_modified
                });
                let cna = stored
                    .and_then(|s| s.cna_modified)
                    .is_none_or(|at| at < record.last_modified);
                (main, cna)
            }
        };
        if !write_main && !write_cna {
            outcome.unchanged += 1;
            continue;
        }
        outcome.written += 1;
        if write_main {
            cve_rows.push(json!([
                record.id,
                text(&record.description),
                record.status,
                record.published,
                record.last_modified,
                record.severity,
                record.cvss_score,
                record.cvss_version,
                record.cvss_vector,
                text(&record.metrics.to_string()),
                serde_json::to_string(&record.cwe_ids).unwrap_or_else(|_| "[]".into()),
                text(&record.references.to_string()),
                flag(record.has_nvd_config),
                record.source,
            ]));
            let mut cwe_ids: Vec<&str> = record.cwe_ids.iter().map(String::as_str).collect();
            cwe_ids.sort_unstable();
            cwe_ids.dedup();
            weakness_pairs.extend(cwe_ids.into_iter().map(|cwe| json!([record.id, cwe])));
            if stored.is_some() {
                rewritten.push(json!([record.id]));
            }
        }
        if write_main && record.source == SOURCE_NVD {
            // Rows are written with their CVE, so a CVE not stored has none.
            if stored.is_some() {
                replace_nvd.push(json!([record.id]));
            }
            for (seq, row) in record.nvd_rows.iter().enumerate() {
                match_rows.push(match_row_json(&record.id, SOURCE_NVD, seq, row));
            }
        }
        if write_cna {
            if stored.is_some() {
                replace_cna.push(json!([record.id]));
            }
            cna_stamps.push(json!([record.id, record.last_modified]));
            for (seq, row) in record.cna_rows.iter().flatten().enumerate() {
                match_rows.push(match_row_json(&record.id, SOURCE_CNA, seq, row));
            }
        }
    }
    let generation = now_ms();
    let rows = cairn_core::db::json_array_rows(db.backend, 1);
    // Products losing rows change too: stamp them before the rows go.
    for (ids, source) in [(&replace_nvd, SOURCE_NVD), (&replace_cna, SOURCE_CNA)] {
        if ids.is_empty() {
            continue;
        }
        let ids = serde_json::to_string(ids).unwrap_or_default();
        sqlx::query(&format!(
            "INSERT INTO vuln_product_changes (vendor, product, generation) \
             SELECT DISTINCT vendor, product, CAST($2 AS BIGINT) FROM vuln_match_rows \
             WHERE source = $3 AND cve_id IN (SELECT value->>0 FROM {rows}) \
             ON CONFLICT (vendor, product) DO UPDATE SET generation = excluded.generation"
        ))
        .bind(&ids)
        .bind(generation)
        .bind(source)
        .execute(&mut *tx)
        .await?;
        sqlx::query(&format!(
            "DELETE FROM vuln_match_rows WHERE source = $2 \
             AND cve_id IN (SELECT value->>0 FROM {rows})"
        ))
        .bind(&ids)
        .bind(source)
        .execute(&mut *tx)
        .await?;
    }
    if !cve_rows.is_empty() {
        sqlx::query(&format!(
            "INSERT INTO vuln_cves (id, description, status, published, last_modified, severity, \
             cvss_score, cvss_version, cvss_vector, metrics, cwe_ids, refs, has_nvd_config, \
             source, imported_at) \
             SELECT value->>0, value->>1, value->>2, CAST(value->>3 AS BIGINT), \
             CAST(value->>4 AS BIGINT), value->>5, CAST(value->>6 AS DOUBLE PRECISION), \
             value->>7, value->>8, value->>9, value->>10, value->>11, \
             CAST(value->>12 AS BIGINT), value->>13, CAST($2 AS BIGINT) FROM {rows} WHERE true \
             ON CONFLICT (id) DO UPDATE SET description = excluded.description, \
             status = excluded.status, published = excluded.published, \
             last_modified = excluded.last_modified, severity = excluded.severity, \
             cvss_score = excluded.cvss_score, cvss_version = excluded.cvss_version, \
             cvss_vector = excluded.cvss_vector, metrics = excluded.metrics, \
             cwe_ids = excluded.cwe_ids, refs = excluded.refs, \
             has_nvd_config = excluded.has_nvd_config, source = excluded.source, \
             imported_at = excluded.imported_at"
        ))
        .bind(serde_json::to_string(&cve_rows).unwrap_or_default())
        .bind(generation)
        .execute(&mut *tx)
        .await?;
        // The CVE-to-CWE index follows the record's `cwe_ids`; only a CVE
        // stored before can have pairs to drop.
        if !rewritten.is_empty() {
            sqlx::query(&format!(
                "DELETE FROM vuln_cve_cwes WHERE cve_id IN (SELECT value->>0 FROM {rows})"
            ))
            .bind(serde_json::to_string(&rewritten).unwrap_or_default())
            .execute(&mut *tx)
            .await?;
        }
        for chunk in weakness_pairs.chunks(5_000) {
            sqlx::query(&format!(
                "INSERT INTO vuln_cve_cwes (cve_id, cwe_id) SELECT value->>0, value->>1 \
                 FROM {rows} WHERE true ON CONFLICT (cwe_id, cve_id) DO NOTHING"
            ))
            .bind(serde_json::to_string(chunk).unwrap_or_default())
            .execute(&mut *tx)
            .await?;
        }
    }
    if !cna_stamps.is_empty() {
        sqlx::query(&format!(
            "UPDATE vuln_cves SET cna_modified = (SELECT CAST(value->>1 AS BIGINT) FROM {rows} \
             WHERE value->>0 = vuln_cves.id) \
             WHERE id IN (SELECT value->>0 FROM {rows})"
        ))
        .bind(serde_json::to_string(&cna_stamps).unwrap_or_default())
        .execute(&mut *tx)
        .await?;
    }
    for chunk in match_rows.chunks(5_000) {
        let chunk = serde_json::to_string(chunk).unwrap_or_default();
        sqlx::query(&format!(
            "INSERT INTO vuln_match_rows (cve_id, source, seq, vendor, product, part, \
             cpe_version, cpe_update, target_sw, criteria, match_id, version_start, \
             start_including, version_end, end_including, vulnerable, negate, platforms) \
             SELECT value->>0, value->>1, CAST(value->>2 AS BIGINT), value->>3, value->>4, \
             value->>5, value->>6, value->>7, value->>8, value->>9, value->>10, value->>11, \
             CAST(value->>12 AS BIGINT), value->>13, CAST(value->>14 AS BIGINT), \
             CAST(value->>15 AS BIGINT), CAST(value->>16 AS BIGINT), value->>17 \
             FROM {rows} WHERE true ON CONFLICT (cve_id, source, seq) DO NOTHING"
        ))
        .bind(&chunk)
        .execute(&mut *tx)
        .await?;
    }
    // Products as sorted distinct pairs: far fewer than rows, and
    // concurrent writers upsert them in one order.
    let products = |nvd_only: bool| -> Vec<Value> {
        let keys: std::collections::BTreeSet<(&str, &str)> = match_rows
            .iter()
            .filter(|row| !nvd_only || row[1] == SOURCE_NVD)
            .filter_map(|row| Some((row[3].as_str()?, row[4].as_str()?)))
            .collect();
        keys.into_iter().map(|(v, p)| json!([v, p])).collect()
    };
    stamp_products(&mut tx, db.backend, &products(false), generation).await?;
    for chunk in products(true).chunks(5_000) {
        sqlx::query(&format!(
            "INSERT INTO vuln_cpe_products (vendor, product) \
             SELECT value->>0, value->>1 FROM {rows} WHERE true \
             ON CONFLICT (vendor, product) DO NOTHING"
        ))
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(outcome)
}

/// Stamps `[vendor, product]` pairs as changed in `generation`, so a
/// changes-only scan re-matches the applications identified as them.
pub(crate) async fn stamp_products(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    backend: cairn_core::db::Backend,
    pairs: &[Value],
    generation: i64,
) -> sqlx::Result<()> {
    let rows = cairn_core::db::json_array_rows(backend, 1);
    for chunk in pairs.chunks(5_000) {
        sqlx::query(&format!(
            "INSERT INTO vuln_product_changes (vendor, product, generation) \
             SELECT value->>0, value->>1, CAST($2 AS BIGINT) FROM {rows} WHERE true \
             ON CONFLICT (vendor, product) DO UPDATE SET generation = excluded.generation"
        ))
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .bind(generation)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Makes `[id, description]` CVEs known that the store lacks, from what
/// another source (`source`) says of them, stamped as never modified so any
/// NVD or CVE 5 record replaces them: findings and their lists join on
/// `vuln_cves`.
pub(crate) async fn know_cves(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    backend: cairn_core::db::Backend,
    cves: &[Value],
    source: &str,
    generation: i64,
) -> sqlx::Result<()> {
    let rows = cairn_core::db::json_array_rows(backend, 1);
    for chunk in cves.chunks(10_000) {
        sqlx::query(&format!(
            "INSERT INTO vuln_cves (id, description, status, published, last_modified, \
             severity, cvss_score, cvss_version, cvss_vector, metrics, cwe_ids, refs, \
             has_nvd_config, source, imported_at) \
             SELECT value->>0, value->>1, 'Published', NULL, 0, NULL, NULL, NULL, NULL, '{{}}', \
             '[]', '[]', 0, $2, CAST($3 AS BIGINT) FROM {rows} WHERE true \
             ON CONFLICT (id) DO NOTHING"
        ))
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .bind(source)
        .bind(generation)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// Adds CPE dictionary entries (vendor, product, title).
pub async fn write_cpe_products(
    db: &Db,
    products: &[(ProductKey, Option<String>)],
) -> sqlx::Result<u64> {
    let rows: Vec<Value> = products
        .iter()
        .map(|(k, title)| json!([k.vendor, k.product, title.as_deref().map(text)]))
        .collect();
    let json_rows = cairn_core::db::json_array_rows(db.backend, 1);
    let generation = now_ms();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let mut written = 0;
    for chunk in rows.chunks(5_000) {
        let chunk = serde_json::to_string(chunk).unwrap_or_default();
        // A product new to the dictionary can change which product an
        // application is identified as: stamp it so tenants re-match.
        sqlx::query(&format!(
            "INSERT INTO vuln_product_changes (vendor, product, generation) \
             SELECT value->>0, value->>1, CAST($2 AS BIGINT) FROM {json_rows} \
             WHERE NOT EXISTS (SELECT 1 FROM vuln_cpe_products p \
             WHERE p.vendor = value->>0 AND p.product = value->>1) \
             ON CONFLICT (vendor, product) DO UPDATE SET generation = excluded.generation"
        ))
        .bind(&chunk)
        .bind(generation)
        .execute(&mut *tx)
        .await?;
        written += sqlx::query(&format!(
            "INSERT INTO vuln_cpe_products (vendor, product, title) \
             SELECT value->>0, value->>1, value->>2 FROM {json_rows} WHERE true \
             ON CONFLICT (vendor, product) DO UPDATE SET title = excluded.title"
        ))
        .bind(&chunk)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    }
    tx.commit().await?;
    Ok(written)
}

pub async fn write_kev(db: &Db, entries: &[KevEntry]) -> sqlx::Result<u64> {
    let rows: Vec<Value> = entries
        .iter()
        .map(|e| {
            json!([
                e.cve_id,
                text(&e.vendor_project),
                text(&e.product),
                text(&e.vulnerability_name),
                e.date_added,
                e.due_date,
                e.known_ransomware_campaign_use,
                text(&e.required_action)
            ])
        })
        .collect();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    for chunk in rows.chunks(5_000) {
        sqlx::query(&format!(
            "INSERT INTO vuln_kev (cve_id, vendor_project, product, name, date_added, due_date, \
             ransomware_use, required_action) \
             SELECT value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, value->>6, \
             value->>7 FROM {} WHERE true \
             ON CONFLICT (cve_id) DO UPDATE SET vendor_project = excluded.vendor_project, \
             product = excluded.product, name = excluded.name, date_added = excluded.date_added, \
             due_date = excluded.due_date, ransomware_use = excluded.ransomware_use, \
             required_action = excluded.required_action",
            cairn_core::db::json_array_rows(db.backend, 1)
        ))
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(rows.len() as u64)
}

pub async fn write_epss(db: &Db, date: &str, scores: &[EpssScore]) -> sqlx::Result<u64> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    for chunk in scores.chunks(10_000) {
        let rows: Vec<Value> = chunk
            .iter()
            .map(|s| json!([s.cve_id, s.score, s.percentile]))
            .collect();
        sqlx::query(&format!(
            "INSERT INTO vuln_epss (cve_id, score, percentile, score_date) \
             SELECT value->>0, CAST(value->>1 AS DOUBLE PRECISION), \
             CAST(value->>2 AS DOUBLE PRECISION), $2 FROM {} WHERE true \
             ON CONFLICT (cve_id) DO UPDATE SET score = excluded.score, \
             percentile = excluded.percentile, score_date = excluded.score_date",
            cairn_core::db::json_array_rows(db.backend, 1)
        ))
        .bind(serde_json::to_string(&rows).unwrap_or_default())
        .bind(date)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(scores.len() as u64)
}

pub async fn write_cwes(db: &Db, cwes: &[Cwe]) -> sqlx::Result<u64> {
    let rows: Vec<Value> = cwes
        .iter()
        .map(|c| json!([c.id, text(&c.name), text(&c.description)]))
        .collect();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    for chunk in rows.chunks(5_000) {
        sqlx::query(&format!(
            "INSERT INTO vuln_cwes (id, name, description) \
             SELECT value->>0, value->>1, value->>2 FROM {} WHERE true \
             ON CONFLICT (id) DO UPDATE SET name = excluded.name, \
             description = excluded.description",
            cairn_core::db::json_array_rows(db.backend, 1)
        ))
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(rows.len() as u64)
}

fn keys_json(keys: &[&ProductKey]) -> String {
    serde_json::to_string(
        &keys
            .iter()
            .map(|k| json!([k.vendor, k.product]))
            .collect::<Vec<_>>(),
    )
    .unwrap_or_default()
}

/// The products among `keys` that the dictionary knows.
pub async fn known_products(db: &Db, keys: &[&ProductKey]) -> sqlx::Result<HashSet<ProductKey>> {
    let mut known = HashSet::new();
    for chunk in keys.chunks(2_000) {
        let rows = sqlx::query(&format!(
            "SELECT p.vendor, p.product FROM vuln_cpe_products p \
             JOIN (SELECT value->>0 AS v, value->>1 AS p FROM {}) k \
             ON p.vendor = k.v AND p.product = k.p",
            cairn_core::db::json_array_rows(db.backend, 1)
        ))
        .bind(keys_json(chunk))
        .fetch_all(&db.pool)
        .await?;
        known.extend(
            rows.into_iter()
                .map(|r| {
                    Ok(ProductKey {
                        vendor: r.try_get("vendor")?,
                        product: r.try_get("product")?,
                    })
                })
                .collect::<sqlx::Result<Vec<_>>>()?,
        );
    }
    Ok(known)
}

/// Every match row of the given products (NVD and CNA), with its CVE's
/// status, grouped by product.
pub async fn rows_for_products(
    db: &Db,
    keys: &[&ProductKey],
) -> sqlx::Result<HashMap<ProductKey, Vec<CandidateRow>>> {
    let mut out: HashMap<ProductKey, Vec<CandidateRow>> = HashMap::new();
    for chunk in keys.chunks(1_000) {
        let rows = sqlx::query(&format!(
            "SELECT m.cve_id, m.source, m.vendor, m.product, m.part, m.cpe_version, \
             m.cpe_update, m.target_sw, m.criteria, m.match_id, m.version_start, \
             m.start_including, m.version_end, m.end_including, m.vulnerable, m.negate, \
             m.platforms, c.status, c.has_nvd_config \
             FROM vuln_match_rows m \
             JOIN (SELECT value->>0 AS v, value->>1 AS p FROM {}) k \
             ON m.vendor = k.v AND m.product = k.p \
             JOIN vuln_cves c ON c.id = m.cve_id \
             ORDER BY m.cve_id, m.source DESC, m.seq",
            cairn_core::db::json_array_rows(db.backend, 1)
        ))
        .bind(keys_json(chunk))
        .fetch_all(&db.pool)
        .await?;
        for r in rows {
            let key = ProductKey {
                vendor: r.try_get("vendor")?,
                product: r.try_get("product")?,
            };
            let platforms: String = r.try_get("platforms")?;
            let status: String = r.try_get("status")?;
            let candidate = CandidateRow {
                cve_id: r.try_get("cve_id")?,
                source: r.try_get("source")?,
                row: MatchRow {
                    vendor: key.vendor.clone(),
                    product: key.product.clone(),
                    part: r.try_get("part")?,
                    cpe_version: r.try_get("cpe_version")?,
                    cpe_update: r.try_get("cpe_update")?,
                    target_sw: r.try_get("target_sw")?,
                    criteria: r.try_get("criteria")?,
                    match_id: r.try_get("match_id")?,
                    version_start: r.try_get("version_start")?,
                    start_including: r.try_get::<i64, _>("start_including")? != 0,
                    version_end: r.try_get("version_end")?,
                    end_including: r.try_get::<i64, _>("end_including")? != 0,
                    vulnerable: r.try_get::<i64, _>("vulnerable")? != 0,
                    negate: r.try_get::<i64, _>("negate")? != 0,
                    platforms: stored_json("platforms", &platforms)?,
                },
                rejected: status.eq_ignore_ascii_case("rejected"),
                has_nvd_config: r.try_get::<i64, _>("has_nvd_config")? != 0,
            };
            out.entry(key).or_default().push(candidate);
        }
    }
    Ok(out)
}

/// Products whose match rows changed after `generation`.
pub async fn products_changed_since(db: &Db, generation: i64) -> sqlx::Result<HashSet<ProductKey>> {
    let rows =
        sqlx::query("SELECT vendor, product FROM vuln_product_changes WHERE generation > $1")
            .bind(generation)
            .fetch_all(&db.pool)
            .await?;
    rows.into_iter()
        .map(|r| {
            Ok(ProductKey {
                vendor: r.try_get("vendor")?,
                product: r.try_get("product")?,
            })
        })
        .collect()
}

/// The newest generation of reference match data (0 when none).
pub async fn generation(db: &Db) -> sqlx::Result<i64> {
    let max: Option<i64> = sqlx::query_scalar("SELECT MAX(generation) FROM vuln_product_changes")
        .fetch_one(&db.pool)
        .await?;
    Ok(max.unwrap_or(0))
}

/// Where a source stands (its resume position) and when it last ran.
#[derive(Debug, Clone)]
pub struct SourceState {
    pub position: Option<String>,
    pub updated_at: i64,
    pub detail: Value,
}

pub async fn source_state(db: &Db, source: &str) -> sqlx::Result<Option<SourceState>> {
    let row =
        sqlx::query("SELECT position, updated_at, detail FROM vuln_source_state WHERE source = $1")
            .bind(source)
            .fetch_optional(&db.pool)
            .await?;
    row.map(|r| -> sqlx::Result<SourceState> {
        Ok(SourceState {
            position: r.try_get("position")?,
            updated_at: r.try_get("updated_at")?,
            detail: stored_json("detail", r.try_get("detail")?)?,
        })
    })
    .transpose()
}

pub async fn set_source_state(
    db: &Db,
    source: &str,
    position: Option<&str>,
    detail: &Value,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO vuln_source_state (source, position, updated_at, detail) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (source) DO UPDATE SET position = excluded.position, \
         updated_at = excluded.updated_at, detail = excluded.detail",
    )
    .bind(source)
    .bind(position)
    .bind(now_ms())
    .bind(detail.to_string())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// One CVE as research shows it: its record with KEV, EPSS and its
/// weaknesses' names joined in.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CveDetail {
    pub cve_id: String,
    pub description: String,
    /// NVD's vulnerability status (`Analyzed`, `Awaiting Analysis`, ...)
    /// or the CVE record's state.
    pub status: String,
    pub published: Option<String>,
    pub last_modified: String,
    pub severity: Option<String>,
    pub cvss_score: Option<f64>,
    pub cvss_version: Option<String>,
    pub cvss_vector: Option<String>,
    /// CWE ids with their names, when the CWE catalog is loaded.
    pub weaknesses: Vec<Weakness>,
    /// The record's references (`url`, `source`, `tags`) as published.
    #[schema(value_type = Vec<Object>)]
    pub references: Value,
    pub epss_score: Option<f64>,
    pub epss_percentile: Option<f64>,
    /// In CISA's Known Exploited Vulnerabilities catalog.
    pub kev: bool,
    pub kev_date_added: Option<String>,
    pub kev_due_date: Option<String>,
    pub kev_required_action: Option<String>,
    /// KEV's `knownRansomwareCampaignUse` (`Known` or `Unknown`).
    pub kev_ransomware_use: Option<String>,
    /// `nvd` or `cve5`: where the stored record came from.
    pub record_source: String,
}

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Weakness {
    pub cwe_id: String,
    pub name: Option<String>,
}

/// The stored record of `cve_id` (upper case), if any.
pub async fn cve_detail(db: &Db, cve_id: &str) -> sqlx::Result<Option<CveDetail>> {
    let Some(r) = sqlx::query(
        "SELECT c.id, c.description, c.status, c.published, c.last_modified, c.severity, \
         c.cvss_score, c.cvss_version, c.cvss_vector, c.cwe_ids, c.refs, c.source, \
         e.score AS epss_score, e.percentile AS epss_percentile, k.cve_id AS kev_cve_id, \
         k.date_added, k.due_date, k.required_action, \
         k.ransomware_use FROM vuln_cves c LEFT JOIN vuln_epss e ON e.cve_id = c.id \
         LEFT JOIN vuln_kev k ON k.cve_id = c.id WHERE c.id = $1",
    )
    .bind(cve_id)
    .fetch_optional(&db.pool)
    .await?
    else {
        return Ok(None);
    };
    let cwe_ids: Vec<String> = stored_json("cwe_ids", r.try_get("cwe_ids")?)?;
    let names: HashMap<String, String> = if cwe_ids.is_empty() {
        HashMap::new()
    } else {
        sqlx::query(&format!(
            "SELECT id, name FROM vuln_cwes WHERE id IN ({})",
            cairn_core::db::json_text_values(db.backend, 1)
        ))
        .bind(serde_json::to_string(&cwe_ids).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?
        .into_iter()
        .map(|row| Ok((row.try_get("id")?, row.try_get("name")?)))
        .collect::<sqlx::Result<_>>()?
    };
    Ok(Some(CveDetail {
        cve_id: r.try_get("id")?,
        description: r.try_get("description")?,
        status: r.try_get("status")?,
        published: r
            .try_get::<Option<i64>, _>("published")?
            .map(cairn_core::db::to_rfc3339),
        last_modified: cairn_core::db::to_rfc3339(r.try_get("last_modified")?),
        severity: r.try_get("severity")?,
        cvss_score: r.try_get("cvss_score")?,
        cvss_version: r.try_get("cvss_version")?,
        cvss_vector: r.try_get("cvss_vector")?,
        weaknesses: cwe_ids
            .into_iter()
            .map(|id| Weakness {
                name: names.get(&id).cloned(),
                cwe_id: id,
            })
            .collect(),
        references: stored_json("refs", r.try_get("refs")?)?,
        record_source: r.try_get("source")?,
        epss_score: r.try_get("epss_score")?,
        epss_percentile: r.try_get("epss_percentile")?,
        kev: r.try_get::<Option<String>, _>("kev_cve_id")?.is_some(),
        kev_date_added: r.try_get("date_added")?,
        kev_due_date: r.try_get("due_date")?,
        kev_required_action: r.try_get("required_action")?,
        kev_ransomware_use: r.try_get("ransomware_use")?,
    }))
}

/// The reference tables by the name their count goes by.
const COUNTED: [(&str, &str); 6] = [
    ("cves", "vuln_cves"),
    ("match_rows", "vuln_match_rows"),
    ("cpe_products", "vuln_cpe_products"),
    ("cwes", "vuln_cwes"),
    ("kev", "vuln_kev"),
    ("epss", "vuln_epss"),
];

/// Counts of the reference tables, for `/vulnerabilities/sources`.
pub async fn counts(db: &Db) -> sqlx::Result<Vec<(&'static str, i64)>> {
    let mut out = vec![];
    for (name, _) in COUNTED {
        out.push((name, count(db, name).await?));
    }
    Ok(out)
}

/// The rows of one reference table, by its name in [`counts`] (0 for a
/// name that is none of them).
pub async fn count(db: &Db, name: &str) -> sqlx::Result<i64> {
    let Some((_, table)) = COUNTED.iter().find(|(counted, _)| *counted == name) else {
        return Ok(0);
    };
    sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
        .fetch_one(&db.pool)
        .await
}

/// A CVE found by a partial match.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CveHit {
    pub cve_id: String,
    /// The description's first 300 characters.
    pub description: String,
    pub severity: Option<String>,
    pub cvss_score: Option<f64>,
    pub published: Option<String>,
    pub kev: bool,
}

/// CVEs whose id or description contains `text` (ignoring case): id
/// matches first, then the newest; at most `limit`.
pub async fn search_cves(db: &Db, text: &str, limit: i64) -> sqlx::Result<Vec<CveHit>> {
    let pattern = format!("%{}%", cairn_inventory::search::escape_like(text.trim()));
    let rows = sqlx::query(
        "SELECT c.id, c.description, c.severity, c.cvss_score, c.published, k.cve_id AS kev_cve_id \
         FROM vuln_cves c LEFT JOIN vuln_kev k ON k.cve_id = c.id \
         WHERE c.id LIKE UPPER($1) ESCAPE '\\' OR LOWER(c.description) LIKE LOWER($1) ESCAPE '\\' \
         ORDER BY CASE WHEN c.id LIKE UPPER($1) ESCAPE '\\' THEN 0 ELSE 1 END, \
         c.published DESC, c.id LIMIT $2",
    )
    .bind(&pattern)
    .bind(limit)
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter().map(cve_hit).collect()
}

/// CVEs whose match rows name one of `vendors` or one of `products`
/// (CPE-style names, lower case), newest first: a page and the total.
pub async fn cves_of_products(
    db: &Db,
    vendors: &[String],
    products: &[String],
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<CveHit>, i64)> {
    if vendors.is_empty() && products.is_empty() {
        return Ok((vec![], 0));
    }
    let matching = format!(
        "c.id IN (SELECT cve_id FROM vuln_match_rows WHERE vendor IN ({}) OR product IN ({}))",
        cairn_core::db::json_text_values(db.backend, 1),
        cairn_core::db::json_text_values(db.backend, 2)
    );
    let vendors = serde_json::to_string(vendors).unwrap_or_default();
    let products = serde_json::to_string(products).unwrap_or_default();
    let total: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM vuln_cves c WHERE {matching}"
    ))
    .bind(&vendors)
    .bind(&products)
    .fetch_one(&db.pool)
    .await?;
    let rows = sqlx::query(&format!(
        "SELECT c.id, c.description, c.severity, c.cvss_score, c.published, k.cve_id AS kev_cve_id \
         FROM vuln_cves c LEFT JOIN vuln_kev k ON k.cve_id = c.id WHERE {matching} \
         ORDER BY c.published DESC, c.id LIMIT $3 OFFSET $4"
    ))
    .bind(&vendors)
    .bind(&products)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    Ok((
        rows.into_iter().map(cve_hit).collect::<sqlx::Result<_>>()?,
        total,
    ))
}

/// A `CveHit` from a row's first six columns: id, description, severity,
/// score, published, and the KEV entry's id or NULL.
pub fn cve_hit(r: sqlx::any::AnyRow) -> sqlx::Result<CveHit> {
    Ok(CveHit {
        cve_id: r.try_get("id")?,
        description: r
            .try_get::<String, _>("description")?
            .chars()
            .take(300)
            .collect(),
        severity: r.try_get("severity")?,
        cvss_score: r.try_get("cvss_score")?,
        published: r
            .try_get::<Option<i64>, _>("published")?
            .map(cairn_core::db::to_rfc3339),
        kev: r.try_get::<Option<String>, _>("kev_cve_id")?.is_some(),
    })
}

/// CVEs whose match rows name one of the (vendor, product) `keys`, newest
/// first: a page and the total.
pub async fn cves_of_product_keys(
    db: &Db,
    keys: &[ProductKey],
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<CveHit>, i64)> {
    if keys.is_empty() {
        return Ok((vec![], 0));
    }
    let pairs: Vec<Value> = keys.iter().map(|k| json!([k.vendor, k.product])).collect();
    let matching = format!(
        "c.id IN (SELECT m.cve_id FROM vuln_match_rows m JOIN {} ON m.vendor = value->>0 \
         AND m.product = value->>1)",
        cairn_core::db::json_array_rows(db.backend, 1)
    );
    let pairs = serde_json::to_string(&pairs).unwrap_or_default();
    let total: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM vuln_cves c WHERE {matching}"
    ))
    .bind(&pairs)
    .fetch_one(&db.pool)
    .await?;
    let rows = sqlx::query(&format!(
        "SELECT c.id, c.description, c.severity, c.cvss_score, c.published, k.cve_id AS kev_cve_id \
         FROM vuln_cves c LEFT JOIN vuln_kev k ON k.cve_id = c.id WHERE {matching} \
         ORDER BY c.published DESC, c.id LIMIT $2 OFFSET $3"
    ))
    .bind(&pairs)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    Ok((
        rows.into_iter().map(cve_hit).collect::<sqlx::Result<_>>()?,
        total,
    ))
}

/// The CPE vendors the dictionary (or an NVD configuration) knows with
/// `product`, or, for `None`, whether `vendor` is known at all: the
/// vendors found, at most 20.
pub async fn known_vendors(
    db: &Db,
    vendor: Option<&str>,
    product: Option<&str>,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT DISTINCT vendor FROM vuln_cpe_products \
         WHERE (CAST($1 AS TEXT) IS NULL OR vendor = $1) AND (CAST($2 AS TEXT) IS NULL OR product = $2) \
         ORDER BY vendor LIMIT 20",
    )
    .bind(vendor)
    .bind(product)
    .fetch_all(&db.pool)
    .await
}

/// A CPE dictionary entry.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct CpeProduct {
    pub vendor: String,
    pub product: String,
    /// The dictionary's title, when it came from a dictionary file.
    pub title: Option<String>,
    /// `cpe:2.3:*:vendor:product`, as a match string.
    pub cpe: String,
}

/// Dictionary entries whose vendor, product or title contains `text`
/// (ignoring case; spaces match `_`), by vendor and product: a page and
/// the total.
pub async fn search_cpe_products(
    db: &Db,
    text: &str,
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<CpeProduct>, i64)> {
    let words = text.split_whitespace().collect::<Vec<_>>();
    let pattern = format!(
        "%{}%",
        cairn_inventory::search::escape_like(&words.join("_"))
    );
    let title_pattern = format!(
        "%{}%",
        cairn_inventory::search::escape_like(&words.join(" "))
    );
    let filter =
        "LOWER(vendor) LIKE LOWER($1) ESCAPE '\\' OR LOWER(product) LIKE LOWER($1) ESCAPE '\\' \
                  OR LOWER(vendor || '_' || product) LIKE LOWER($1) ESCAPE '\\' \
                  OR LOWER(title) LIKE LOWER($2) ESCAPE '\\'";
    let total: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM vuln_cpe_products WHERE {filter}"
    ))
    .bind(&pattern)
    .bind(&title_pattern)
    .fetch_one(&db.pool)
    .await?;
    let rows = sqlx::query(&format!(
        "SELECT vendor, product, title FROM vuln_cpe_products WHERE {filter} \
         ORDER BY vendor, product LIMIT $3 OFFSET $4"
    ))
    .bind(&pattern)
    .bind(&title_pattern)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    Ok((
        rows.into_iter()
            .map(|r| {
                let (vendor, product): (String, String) =
                    (r.try_get("vendor")?, r.try_get("product")?);
                Ok(CpeProduct {
                    cpe: format!("cpe:2.3:*:{vendor}:{product}"),
                    title: r.try_get("title")?,
                    vendor,
                    product,
                })
            })
            .collect::<sqlx::Result<_>>()?,
        total,
    ))
}

/// The stored CVEs among `ids`, by id.
pub async fn cve_hits(db: &Db, ids: &[String]) -> sqlx::Result<HashMap<String, CveHit>> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = sqlx::query(&format!(
        "SELECT c.id, c.description, c.severity, c.cvss_score, c.published, k.cve_id AS kev_cve_id \
         FROM vuln_cves c LEFT JOIN vuln_kev k ON k.cve_id = c.id WHERE c.id IN ({})",
        cairn_core::db::json_text_values(db.backend, 1)
    ))
    .bind(serde_json::to_string(ids).unwrap_or_default())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter()
        .map(|r| {
            let hit = cve_hit(r)?;
            Ok((hit.cve_id.clone(), hit))
        })
        .collect()
}

/// A CVE with its EPSS score.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct ScoredCve {
    #[serde(flatten)]
    pub cve: CveHit,
    pub epss_score: f64,
    pub epss_percentile: f64,
}

/// Stored CVEs whose EPSS score is at least `threshold`, highest first;
/// at most `limit`.
pub async fn epss_at_least(db: &Db, threshold: f64, limit: i64) -> sqlx::Result<Vec<ScoredCve>> {
    let rows = sqlx::query(
        "SELECT c.id, c.description, c.severity, c.cvss_score, c.published, k.cve_id AS kev_cve_id, \
         e.score AS epss_score, e.percentile AS epss_percentile FROM vuln_epss e JOIN vuln_cves c ON c.id = e.cve_id \
         LEFT JOIN vuln_kev k ON k.cve_id = c.id WHERE e.score >= $1 \
         ORDER BY e.score DESC, c.id LIMIT $2",
    )
    .bind(threshold)
    .bind(limit)
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter()
        .map(|r| {
            let (epss_score, epss_percentile) =
                (r.try_get("epss_score")?, r.try_get("epss_percentile")?);
            Ok(ScoredCve {
                cve: cve_hit(r)?,
                epss_score,
                epss_percentile,
            })
        })
        .collect()
}

/// Severities of the given CVEs.
pub async fn severities(db: &Db, ids: &[&str]) -> sqlx::Result<HashMap<String, String>> {
    let mut out = HashMap::new();
    let ids_in = cairn_core::db::json_text_values(db.backend, 1);
    for chunk in ids.chunks(5_000) {
        let rows = sqlx::query(&format!(
            "SELECT id, COALESCE(severity, 'unknown') AS severity FROM vuln_cves WHERE id IN ({ids_in})"
        ))
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
        out.extend(
            rows.into_iter()
                .map(|r| {
                    Ok((
                        r.try_get::<String, _>("id")?,
                        r.try_get::<String, _>("severity")?,
                    ))
                })
                .collect::<sqlx::Result<Vec<_>>>()?,
        );
    }
    Ok(out)
}
