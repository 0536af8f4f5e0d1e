//! An exported finding to a finding record and its asset's record; the
//! output of a software enumeration plugin to app records and inventory
//! items.

use std::collections::HashMap;

use cairn_sdk::records::{platform_of, Device, Finding, RecordType};
use cairn_sdk::scanner::{ScannedHost, ASSETS, FINDINGS};
use cairn_sdk::{json, without_keys, Row, SourceRecord, Value};

use crate::software;

/// Where [`with_asset_totals`] puts an asset's totals in each of its
/// findings.
const TOTALS: &str = "_asset_totals";

use cairn_sdk::text_of as text;

fn platform(os: &str) -> String {
    platform_of(os).unwrap_or("other").to_string()
}

/// A finding's risk on a 0-10 scale: its VPR score, else its CVSS v3 base
/// score, else its CVSS v2 base score.
fn risk(vuln: &Value) -> Option<f64> {
    let plugin = &vuln["plugin"];
    plugin["vpr"]["score"]
        .as_f64()
        .or(plugin["cvss3_base_score"].as_f64())
        .or(plugin["cvss_base_score"].as_f64())
}

fn is_open(vuln: &Value) -> bool {
    vuln["state"]
        .as_str()
        .is_some_and(|s| !s.eq_ignore_ascii_case("fixed"))
}

/// Adds to every finding of a chunk its asset's totals over the chunk: open
/// findings by severity and the highest risk among them. A chunk holds all
/// the findings of its assets (exports are chunked by asset), so the
/// totals are the asset's.
pub fn with_asset_totals(mut findings: Vec<Value>) -> Vec<Value> {
    let mut totals: HashMap<String, (i64, i64, i64, i64, Option<f64>)> = HashMap::new();
    for vuln in findings.iter().filter(|v| is_open(v)) {
        let Some(asset) = text(&vuln["asset"]["uuid"]) else {
            continue;
        };
        let entry = totals.entry(asset).or_default();
        match vuln["severity"]
            .as_str()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("critical") => entry.0 += 1,
            Some("high") => entry.1 += 1,
            Some("medium") => entry.2 += 1,
            Some("low") => entry.3 += 1,
            _ => continue,
        }
        if let Some(risk) = risk(vuln) {
            entry.4 = Some(entry.4.map_or(risk, |r| r.max(risk)));
        }
    }
    for vuln in &mut findings {
        let Some(asset) = text(&vuln["asset"]["uuid"]) else {
            continue;
        };
        let (critical, high, medium, low, risk) = totals.get(&asset).copied().unwrap_or_default();
        vuln[TOTALS] = json!({"critical": critical, "high": high, "medium": medium,
                              "low": low, "risk": risk});
    }
    findings
}

pub fn map_vuln(vuln: &Value) -> Result<Vec<Row>, String> {
    let asset = &vuln["asset"];
    let totals = &vuln[TOTALS];
    let asset_id = text(&asset["uuid"]).ok_or("finding without an asset uuid")?;
    let plugin = &vuln["plugin"];
    let plugin_id = text(&plugin["id"]).ok_or("finding without a plugin id")?;
    // The host's name: its FQDN, else its NetBIOS name, else what Tenable
    // calls the host name (often an address).
    let hostname = text(&asset["fqdn"])
        .or_else(|| text(&asset["netbios_name"]))
        .or_else(|| text(&asset["hostname"]));
    let os = asset["operating_system"]
        .as_array()
        .and_then(|o| o.first())
        .and_then(text);
    let ip_addresses: Vec<String> = text(&asset["ipv4"]).into_iter().collect();
    let device = Device {
        name: hostname.clone(),
        device_id: Some(asset_id.clone()),
        os_platform: os.as_deref().map(platform),
        os_version: os,
        hostname: hostname.clone(),
        ip_addresses: (!ip_addresses.is_empty()).then_some(ip_addresses),
        last_seen: text(&vuln["last_found"]),
        risk_score: totals["risk"].as_f64(),
        critical_count: totals["critical"].as_i64(),
        high_count: totals["high"].as_i64(),
        medium_count: totals["medium"].as_i64(),
        low_count: totals["low"].as_i64(),
        ..Device::default()
    };
    let port = vuln["port"]["port"].as_i64().filter(|p| *p > 0);
    let protocol = text(&vuln["port"]["protocol"]).unwrap_or_default();
    let cve_ids: Vec<String> = plugin["cve"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(text)
        .map(|c| c.to_uppercase())
        .collect();
    let finding = Finding {
        asset_key: Some(asset_id.clone()),
        device_name: hostname.clone(),
        cve_ids: Some(cve_ids),
        plugin_id: Some(plugin_id.clone()),
        title: text(&plugin["name"]),
        severity: text(&vuln["severity"]).map(|s| s.to_lowercase()),
        state: text(&vuln["state"]).map(|s| s.to_lowercase()),
        port,
        first_found: text(&vuln["first_found"]),
        last_found: text(&vuln["last_found"]),
    };
    let installed = text(&vuln["output"])
        .map(|output| software::parse(&plugin_id, &output))
        .unwrap_or_default();
    let mut rows = Vec::with_capacity(2 + 2 * installed.len());
    rows.push(Row::Record(SourceRecord {
        collection: ASSETS.into(),
        key: asset_id.clone(),
        device_name: hostname.clone(),
        client_id: None,
        group_ids: vec![],
        fields: device.to_fields(),
        body: asset.clone(),
    }));
    rows.push(Row::Record(SourceRecord {
        collection: FINDINGS.into(),
        key: format!(
            "{asset_id}|{plugin_id}|{}|{}",
            port.unwrap_or(0),
            protocol.to_lowercase()
        ),
        device_name: hostname.clone(),
        client_id: None,
        group_ids: vec![],
        fields: finding.to_fields(),
        body: without_keys(vuln, &[TOTALS]),
    }));
    let host = ScannedHost {
        key: &asset_id,
        hostname: hostname.as_deref(),
        os_platform: device.os_platform.as_deref(),
        os_version: device.os_version.as_deref(),
    };
    for app in installed {
        let body = json!({"plugin_id": plugin_id, "name": app.name, "version": app.version});
        rows.extend(host.installed(app.name, app.version, body));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNK: &str =
        include_str!("../../../tests/fixtures/scanner/tenable_io_vulns_export_chunk.json");

    #[test]
    fn the_fixture_finding_maps_to_its_asset_and_finding() {
        let chunk: Value = serde_json::from_str(CHUNK).unwrap();
        let rows = map_vuln(&chunk[0]).unwrap();
        let Row::Record(asset) = &rows[0] else {
            panic!("the asset first")
        };
        assert_eq!(asset.key, "cf165808-6a31-48e1-9cf3-c6c3174df51d");
        assert_eq!(asset.device_name.as_deref(), Some("example.com"));
        assert_eq!(asset.fields["os_platform"], "macos");
        assert_eq!(
            asset.fields["ip_addresses"],
            serde_json::json!(["192.0.2.8"])
        );
        let Row::Record(finding) = &rows[1] else {
            panic!("then the finding")
        };
        assert!(finding
            .key
            .starts_with("cf165808-6a31-48e1-9cf3-c6c3174df51d|"));
        assert_eq!(finding.fields["cve_ids"].as_array().unwrap().len(), 9);
        assert_eq!(
            finding.fields["asset_key"],
            "cf165808-6a31-48e1-9cf3-c6c3174df51d"
        );
        assert!(map_vuln(&serde_json::json!({"asset": {}})).is_err());
    }

    #[test]
    fn assets_carry_open_counts_and_highest_risk_and_enumerations_become_apps() {
        let chunk: Value = serde_json::from_str(CHUNK).unwrap();
        let mut high = chunk[0].clone();
        high["asset"]["fqdn"] = json!("ws7.corp.example");
        let mut fixed = high.clone();
        fixed["state"] = json!("FIXED");
        fixed["severity"] = json!("critical");
        fixed["plugin"]["vpr"]["score"] = json!(9.8);
        let mut software = high.clone();
        software["severity"] = json!("info");
        software["plugin"]["id"] = json!(20811);
        software["output"] = json!(
            "The following software are installed on the remote host :\n\n\
            Google Chrome  [version 119.0.6045.160]  [installed on 2023/11/20]\n"
        );
        let findings = with_asset_totals(vec![high, fixed, software]);
        let rows = map_vuln(&findings[2]).unwrap();
        let Row::Record(asset) = &rows[0] else {
            panic!("the asset first")
        };
        assert_eq!(asset.fields["high_count"], 1);
        assert_eq!(asset.fields["critical_count"], 0, "a fixed one is not open");
        assert_eq!(asset.fields["risk_score"], 5.9, "the open finding's VPR");
        let Row::Record(finding) = &rows[1] else {
            panic!("then the finding")
        };
        assert!(finding.body.get(TOTALS).is_none());
        let Row::Record(app) = &rows[2] else {
            panic!("then the app")
        };
        assert_eq!(app.fields["name"], "Google Chrome");
        assert_eq!(app.fields["version"], "119.0.6045.160");
        let Row::Inventory(item) = &rows[3] else {
            panic!("and its inventory item")
        };
        assert_eq!(item.device_name.as_deref(), Some("ws7"));
    }
}
