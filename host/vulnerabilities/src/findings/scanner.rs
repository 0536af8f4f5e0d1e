//! Findings a scanner reported, beside the ones Cairn matched: the vuln
//! scan copies every finding record of the tenant's integrations (through
//! the integrations area's public reads) into `vuln_scanner_findings`, one
//! row per CVE the finding names, whenever those records changed since the
//! last copy. The views read both tables as one.

use std::net::IpAddr;

use futures::TryStreamExt;
use serde_json::{json, Value};

use crate::reference::records::parse_time;
use crate::reference::research::cve_id;
use cairn_core::db::{now_ms, Db};
use cairn_core::ids::TenantId;
use cairn_integrations as integrations;
use cairn_inventory::normalize::short_host;

/// The record type whose records are findings.
const FINDING: &str = "finding";
/// Rows written a statement.
const BATCH: usize = 5_000;

/// The device a scanner's host name names, as inventory rows name it: the
/// short host of an FQDN, an address as it is.
fn device_of(hostname: &str) -> String {
    if hostname.parse::<IpAddr>().is_ok() {
        return hostname.to_string();
    }
    short_host(hostname).to_string()
}

/// The rows of one finding record: one per CVE it names, none without.
fn rows_of(record: &integrations::TypedRecord, now: i64) -> Vec<Value> {
    let fields = &record.fields;
    let text = |name: &str| {
        fields[name]
            .as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let Some(host) = text("device_name").or(record.device_name.as_deref()) else {
        return vec![];
    };
    let check = text("plugin_id").unwrap_or_default();
    let title = text("title")
        .map(String::from)
        .or_else(|| (!check.is_empty()).then(|| format!("check {check}")))
        .unwrap_or_else(|| record.record_key.clone());
    let status = match text("state").map(str::to_lowercase).as_deref() {
        Some("fixed") => "fixed",
        _ => "open",
    };
    let first = text("first_found").and_then(parse_time).unwrap_or(now);
    let last = text("last_found").and_then(parse_time).unwrap_or(first);
    let mut cves: Vec<String> = fields["cve_ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter_map(cve_id)
        .collect();
    cves.sort();
    cves.dedup();
    cves.into_iter()
        .map(|cve| {
            json!([
                record.source,
                record.record_key,
                cve,
                device_of(host),
                title,
                check,
                text("severity"),
                status,
                first,
                last
            ])
        })
        .collect()
}

/// Copies the tenant's finding records when they changed since the last
/// copy, replacing the previous copy in one transaction. Returns whether
/// it copied.
pub async fn refresh(db: &Db, tenant: &TenantId) -> sqlx::Result<bool> {
    let version = integrations::typed_version(db, tenant, FINDING).await?;
    let copied: Option<String> =
        sqlx::query_scalar("SELECT version FROM vuln_scanner_imports WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_optional(&db.pool)
            .await?;
    if copied.as_deref() == Some(version.as_str()) {
        return Ok(false);
    }
    let now = now_ms();
    let rows = cairn_core::db::json_array_rows(db.backend, 2);
    let insert = format!(
        "INSERT INTO vuln_scanner_findings (tenant_id, area, record_key, cve_id, device_name, \
         title, check_id, severity, status, first_seen, last_seen) \
         SELECT $1, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, \
         value->>6, value->>7, CAST(value->>8 AS BIGINT), CAST(value->>9 AS BIGINT) \
         FROM {rows} WHERE true ON CONFLICT DO NOTHING"
    );
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    sqlx::query("DELETE FROM vuln_scanner_findings WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .execute(&mut *tx)
        .await?;
    // The records stream from another connection while this transaction
    // writes (the pool always has two).
    let mut records = integrations::typed_records(db, tenant, FINDING);
    let mut batch: Vec<Value> = Vec::with_capacity(BATCH);
    loop {
        let record = records.try_next().await?;
        if let Some(record) = &record {
            batch.extend(rows_of(record, now));
        }
        if batch.len() >= BATCH || (record.is_none() && !batch.is_empty()) {
            sqlx::query(&insert)
                .bind(tenant.as_str())
                .bind(serde_json::to_string(&batch).unwrap_or_default())
                .execute(&mut *tx)
                .await?;
            batch.clear();
        }
        if record.is_none() {
            break;
        }
    }
    drop(records);
    sqlx::query(
        "INSERT INTO vuln_scanner_imports (tenant_id, version, imported_at) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id) DO UPDATE SET version = excluded.version, \
         imported_at = excluded.imported_at",
    )
    .bind(tenant.as_str())
    .bind(&version)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    crate::findings::vocabulary::count_write(&mut tx, db, tenant).await?;
    crate::findings::vocabulary::commit(tx, db, tenant).await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(fields: Value) -> integrations::TypedRecord {
        integrations::TypedRecord {
            source: "scanner".into(),
            kind: "findings".into(),
            record_key: "a-1|1001|443|tcp".into(),
            device_name: Some("web01.corp.example".into()),
            fields: cairn_core::db::StoredJson(fields),
        }
    }

    #[test]
    fn one_row_per_cve_on_the_short_host() {
        let rows = rows_of(
            &record(
                json!({"device_name": "WEB01.corp.example", "plugin_id": "1001",
                           "title": "Chrome < 48", "severity": "high", "state": "fixed",
                           "cve_ids": ["cve-2016-1620", "CVE-2016-1614", "CVE-2016-1614", "MS16-001"],
                           "first_found": "2018-12-31T20:59:47Z"}),
            ),
            1,
        );
        assert_eq!(rows.len(), 2, "deduplicated, CVE ids only");
        assert_eq!(rows[0][2], "CVE-2016-1614");
        assert_eq!(rows[0][3], "WEB01");
        assert_eq!(rows[0][7], "fixed");
        assert_eq!(rows[0][8], 1_546_289_987_000i64);
        assert_eq!(rows[0][9], rows[0][8], "last seen defaults to first");
        let by_address = rows_of(
            &record(json!({"device_name": "10.0.0.5", "cve_ids": ["CVE-2016-1620"]})),
            1,
        );
        assert_eq!(by_address[0][3], "10.0.0.5");
        assert_eq!(
            by_address[0][4], "a-1|1001|443|tcp",
            "no title or check: its key"
        );
        assert!(rows_of(&record(json!({"cve_ids": []})), 1).is_empty());
    }
}
