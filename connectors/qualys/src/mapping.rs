//! A Qualys host (with its detections) to an asset record, counted by
//! severity with its highest detection score as its risk, one finding
//! record per vulnerability detection, and the software its information
//! gathered checks list as app records and inventory items.

use cairn_sdk::records::{platform_of, Device, Finding, RecordType};
use cairn_sdk::scanner::{ScannedHost, ASSETS, FINDINGS};
use cairn_sdk::{json, Row, SourceRecord, Value};

use crate::software;
use crate::xml::items;

use cairn_sdk::text_of as text;

fn platform(os: &str) -> String {
    platform_of(os).unwrap_or("other").to_string()
}

/// Qualys severity 1-5 as the area's word.
fn severity(level: &str) -> Option<&'static str> {
    Some(match level.trim() {
        "5" => "critical",
        "4" => "high",
        "3" => "medium",
        "2" => "low",
        "1" => "info",
        _ => return None,
    })
}

/// Qualys status (Active, New, Re-Opened, Fixed) as the finding's state.
fn state(status: &str) -> String {
    match status.trim().to_ascii_lowercase().as_str() {
        "active" | "new" => "open".into(),
        "re-opened" => "reopened".into(),
        other => other.into(),
    }
}

pub fn map_host(host: &Value) -> Result<Vec<Row>, String> {
    let id = text(&host["ID"]).ok_or("host without an ID")?;
    let hostname = text(&host["DNS_DATA"]["FQDN"])
        .or_else(|| text(&host["DNS"]))
        .or_else(|| text(&host["NETBIOS"]))
        .or_else(|| text(&host["IP"]));
    let os = text(&host["OS"]);
    // Information gathered (TYPE Info) is not a vulnerability: it only
    // feeds the software list.
    let (gathered, detections): (Vec<&Value>, Vec<&Value>) =
        items(&host["DETECTION_LIST"]["DETECTION"])
            .into_iter()
            .partition(|d| text(&d["TYPE"]).is_some_and(|t| t.eq_ignore_ascii_case("info")));
    let open: Vec<(&Value, Option<&str>)> = detections
        .iter()
        .map(|d| (*d, text(&d["SEVERITY"]).as_deref().and_then(severity)))
        .filter(|(d, _)| text(&d["STATUS"]).is_some_and(|s| state(&s) != "fixed"))
        .collect();
    let count = |level: &str| open.iter().filter(|(_, s)| *s == Some(level)).count() as i64;
    // The Qualys Detection Score (1-100) on the area's 0-10 scale.
    let risk = open
        .iter()
        .filter_map(|(d, _)| text(&d["QDS"])?.parse::<f64>().ok())
        .map(|qds| qds / 10.0)
        .reduce(f64::max);
    let tags: Vec<String> = items(&host["TAGS"]["TAG"])
        .into_iter()
        .filter_map(|t| text(&t["NAME"]))
        .collect();
    let ip_addresses: Vec<String> = text(&host["IP"]).into_iter().collect();
    let device = Device {
        name: hostname.clone(),
        device_id: Some(id.clone()),
        os_platform: os.as_deref().map(platform),
        os_version: os,
        hostname: hostname.clone(),
        ip_addresses: (!ip_addresses.is_empty()).then_some(ip_addresses),
        last_seen: text(&host["LAST_VM_SCANNED_DATE"])
            .or_else(|| text(&host["LAST_SCAN_DATETIME"])),
        risk_score: risk,
        critical_count: Some(count("critical")),
        high_count: Some(count("high")),
        medium_count: Some(count("medium")),
        low_count: Some(count("low")),
        tags: (!tags.is_empty()).then_some(tags),
        ..Device::default()
    };
    let mut body = host.clone();
    if let Value::Object(object) = &mut body {
        object.remove("DETECTION_LIST");
    }
    let mut rows = Vec::with_capacity(1 + detections.len());
    let installed: Vec<software::Software> = gathered
        .iter()
        .filter_map(|d| Some(software::parse(&text(&d["QID"])?, &text(&d["RESULTS"])?)))
        .flatten()
        .collect();
    rows.push(Row::Record(SourceRecord {
        collection: ASSETS.into(),
        key: id.clone(),
        device_name: hostname.clone(),
        client_id: None,
        group_ids: vec![],
        fields: device.to_fields(),
        body,
    }));
    for detection in detections {
        let Some(qid) = text(&detection["QID"]) else {
            continue;
        };
        let port = text(&detection["PORT"]).and_then(|p| p.parse::<i64>().ok());
        let protocol = text(&detection["PROTOCOL"]).unwrap_or_default();
        let finding = Finding {
            asset_key: Some(id.clone()),
            device_name: hostname.clone(),
            cve_ids: None,
            plugin_id: Some(qid.clone()),
            title: None,
            severity: text(&detection["SEVERITY"])
                .as_deref()
                .and_then(severity)
                .map(String::from),
            state: text(&detection["STATUS"]).map(|s| state(&s)),
            port,
            first_found: text(&detection["FIRST_FOUND_DATETIME"]),
            last_found: text(&detection["LAST_FOUND_DATETIME"]),
        };
        rows.push(Row::Record(SourceRecord {
            collection: FINDINGS.into(),
            key: format!("{id}|{qid}|{}|{protocol}", port.unwrap_or(0)),
            device_name: hostname.clone(),
            client_id: None,
            group_ids: vec![],
            fields: finding.to_fields(),
            body: detection.clone(),
        }));
    }
    let host = ScannedHost {
        key: &id,
        hostname: hostname.as_deref(),
        os_platform: device.os_platform.as_deref(),
        os_version: device.os_version.as_deref(),
    };
    for app in installed {
        let body = json!({"name": app.name, "version": app.version});
        rows.extend(host.installed(app.name, app.version, body));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_hosts_map_with_counts_and_findings() {
        let text =
            include_str!("../../../tests/fixtures/scanner/qualys_host_list_detections_raw.xml");
        let (_, document) = crate::xml::parse(text).unwrap();
        let host = items(&document["RESPONSE"]["HOST_LIST"]["HOST"])[0].clone();
        let rows = map_host(&host).unwrap();
        let Row::Record(asset) = &rows[0] else {
            panic!("the asset first")
        };
        assert_eq!(asset.key, "143111841");
        assert_eq!(asset.device_name.as_deref(), Some("one.one.one.one"));
        assert_eq!(asset.fields["os_platform"], "linux");
        assert!(asset.body.get("DETECTION_LIST").is_none());
        let findings = rows.len() - 1;
        assert!(findings > 0);
        let Row::Record(first) = &rows[1] else {
            panic!("then findings")
        };
        assert_eq!(first.fields["plugin_id"], "11827");
        assert_eq!(first.fields["severity"], "low");
        assert_eq!(first.fields["state"], "open");
        assert_eq!(first.fields["port"], 443);
        let counted: i64 = ["critical_count", "high_count", "medium_count", "low_count"]
            .iter()
            .map(|f| asset.fields[*f].as_i64().unwrap())
            .sum();
        assert!(counted <= findings as i64);
    }
}
