//! An exported finding to a finding record and its asset's record.

use cairn_sdk::records::{platform_of, Device, Finding, RecordType};
use cairn_sdk::{Row, SourceRecord, Value};

pub const ASSETS: &str = "assets";
pub const FINDINGS: &str = "findings";

use cairn_sdk::text_of as text;

fn platform(os: &str) -> String {
    platform_of(os).unwrap_or("other").to_string()
}

pub fn map_vuln(vuln: &Value) -> Result<Vec<Row>, String> {
    let asset = &vuln["asset"];
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
    Ok(vec![
        Row::Record(SourceRecord {
            collection: ASSETS.into(),
            key: asset_id.clone(),
            device_name: hostname.clone(),
            client_id: None,
            group_ids: vec![],
            fields: device.to_fields(),
            body: asset.clone(),
        }),
        Row::Record(SourceRecord {
            collection: FINDINGS.into(),
            key: format!(
                "{asset_id}|{plugin_id}|{}|{}",
                port.unwrap_or(0),
                protocol.to_lowercase()
            ),
            device_name: hostname,
            client_id: None,
            group_ids: vec![],
            fields: finding.to_fields(),
            body: vuln.clone(),
        }),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHUNK: &str =
        include_str!("../../../../shared/fixtures/scanner/tenable_io_vulns_export_chunk.json");

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
}
