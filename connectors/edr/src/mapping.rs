//! SentinelOne agents (with `_apps` attached by fetch) and threats to the
//! area's records; installed applications also to inventory items.

use cairn_sdk::records::{App, Device, RecordType, Threat};
use cairn_sdk::{InventoryItem, Row, SourceRecord, Value};

use crate::lenient::{boolean, integer, text};

pub const DEVICES: &str = "devices";
pub const THREATS: &str = "threats";
/// One record per (agent, application, version).
pub const APPS: &str = "apps";

/// `osType` (`windows`, `macos`, `linux`, `windows_legacy`) as the area's
/// platform.
fn platform(os_type: &str) -> String {
    match os_type.to_ascii_lowercase().as_str() {
        t if t.starts_with("windows") => "windows",
        "macos" => "macos",
        "linux" => "linux",
        _ => "other",
    }
    .to_string()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(text)
        .collect()
}

pub fn map_agent(agent: &Value) -> Result<Vec<Row>, String> {
    let id = text(&agent["id"]).ok_or("agent without an id")?;
    let name = text(&agent["computerName"]).ok_or("agent without a computerName")?;
    let os_platform = text(&agent["osType"]).map(|t| platform(&t));
    let (os_name, os_build) = (text(&agent["osName"]), text(&agent["osRevision"]));
    let os_version = match (&os_name, &os_build) {
        (Some(name), Some(revision)) => Some(format!("{name} ({revision})")),
        (name, _) => name.clone(),
    };
    let user = text(&agent["lastLoggedInUserName"]);
    let ip_addresses: Vec<String> = agent["networkInterfaces"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|i| strings(&i["inet"]))
        .collect();
    let body = cairn_sdk::without_keys(agent, &["_apps"]);
    let fields = Device {
        name: Some(name.clone()),
        device_id: Some(id.clone()),
        os_platform: os_platform.clone(),
        os_version: os_version.clone(),
        user: user.clone(),
        last_seen: text(&agent["lastActiveDate"]),
        agent_id: Some(id.clone()),
        agent_version: text(&agent["agentVersion"]),
        infected: boolean(&agent["infected"]),
        active_threats: integer(&agent["activeThreats"]),
        ip_addresses: (!ip_addresses.is_empty()).then_some(ip_addresses),
        ..Device::default()
    };
    let apps = agent["_apps"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut rows = Vec::with_capacity(1 + 2 * apps.len());
    rows.push(Row::Record(SourceRecord {
        collection: DEVICES.into(),
        key: id.clone(),
        device_name: Some(name.clone()),
        client_id: None,
        group_ids: vec![],
        fields: fields.to_fields(),
        body,
    }));
    for app in apps {
        let Some(app_name) = text(&app["name"]) else {
            continue;
        };
        let version = text(&app["version"]);
        let publisher = text(&app["publisher"]);
        // The answer gives applications no id: name and version key them.
        rows.push(Row::Record(SourceRecord {
            collection: APPS.into(),
            key: format!("{id}/{app_name}/{}", version.as_deref().unwrap_or_default()),
            device_name: Some(name.clone()),
            client_id: None,
            group_ids: vec![],
            fields: App {
                device_key: Some(id.clone()),
                device_name: Some(name.clone()),
                name: Some(app_name.clone()),
                vendor: publisher.clone(),
                version: version.clone(),
            }
            .to_fields(),
            body: app.clone(),
        }));
        rows.push(Row::Inventory(InventoryItem {
            device_name: Some(name.clone()),
            device_id: Some(id.clone()),
            os_platform: os_platform.clone(),
            os_version: os_version.clone(),
            os_name: os_name.clone(),
            os_build: os_build.clone(),
            user_name: user.clone(),
            application_name: Some(app_name),
            vendor: publisher.clone(),
            version,
            publisher,
            ..InventoryItem::default()
        }));
    }
    Ok(rows)
}

/// A SentinelOne 2.1 threat's state in the words every edr product's
/// threats use: `benign` when an analyst marked it a false positive (or
/// benign), `active` while it is not mitigated, `resolved` once mitigated
/// and its incident resolved, else `mitigated`. `None` without a
/// mitigation status.
fn threat_status(info: &Value) -> Option<&'static str> {
    let mitigation = info["mitigationStatus"].as_str()?;
    let verdict = info["analystVerdict"].as_str().unwrap_or_default();
    let incident = info["incidentStatus"].as_str().unwrap_or_default();
    Some(match mitigation {
        _ if verdict == "false_positive" || mitigation == "marked_as_benign" => "benign",
        "mitigated" if incident == "resolved" => "resolved",
        "mitigated" => "mitigated",
        _ => "active",
    })
}

pub fn map_threat(threat: &Value) -> Result<Vec<Row>, String> {
    let info = &threat["threatInfo"];
    let agent = &threat["agentRealtimeInfo"];
    let id = text(&threat["id"])
        .or_else(|| text(&info["threatId"]))
        .ok_or("threat without an id")?;
    let device_name = text(&agent["agentComputerName"]);
    let mut fields = Threat {
        threat_id: Some(id.clone()),
        device_key: text(&agent["agentId"]),
        device_name: device_name.clone(),
        name: text(&info["threatName"]),
        classification: text(&info["classification"]),
        confidence: text(&info["confidenceLevel"]),
        status: threat_status(info).map(str::to_string),
        status_raw: text(&info["mitigationStatus"]),
        detected_at: text(&info["identifiedAt"]).or_else(|| text(&info["createdAt"])),
        file_hash: text(&info["sha256"]).or_else(|| text(&info["sha1"])),
        file_path: text(&info["filePath"]),
    }
    .to_fields();
    if let Some(device) = &device_name {
        fields["device"] = Value::String(device.clone());
    }
    Ok(vec![Row::Record(SourceRecord {
        collection: THREATS.into(),
        key: id,
        device_name,
        client_id: None,
        group_ids: vec![],
        fields,
        body: threat.clone(),
    })])
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_sdk::json;

    const AGENTS: &str =
        include_str!("../../../tests/fixtures/edr/sentinelone_agents_raw_response.json");
    const THREATS: &str =
        include_str!("../../../tests/fixtures/edr/sentinelone_get_threats_2_1_raw_response.json");
    const APPS: &str =
        include_str!("../../../tests/fixtures/edr/sentinelone_apps_by_agent_ids_success.json");

    #[test]
    fn the_fixture_agent_maps_with_its_apps() {
        let agents: Value = serde_json::from_str(AGENTS).unwrap();
        let apps: Value = serde_json::from_str(APPS).unwrap();
        let mut agent = agents[0].clone();
        agent["_apps"] = apps["data"].clone();
        let rows = map_agent(&agent).unwrap();
        let Row::Record(device) = &rows[0] else {
            panic!("the agent first")
        };
        assert_eq!(device.key, "657613730168123595");
        assert_eq!(device.device_name.as_deref(), Some("EC2AMAZ-AJ0KANC"));
        assert_eq!(device.fields["os_platform"], "windows");
        assert_eq!(device.fields["os_version"], "Windows Server 2016 (14393)");
        assert_eq!(device.fields["infected"], false);
        assert_eq!(device.fields["active_threats"], 0);
        assert_eq!(device.fields["ip_addresses"], json!(["172.31.43.13"]));
        assert!(
            device.fields.get("user").is_none(),
            "an empty user name is none"
        );
        assert!(device.body.get("_apps").is_none());
        assert_eq!(rows.len(), 1 + 2 * 2, "two apps, each a record and an item");
        let Row::Inventory(item) = &rows[2] else {
            panic!("then the app's item")
        };
        assert_eq!(item.application_name.as_deref(), Some("Example App1"));
        assert_eq!(item.publisher.as_deref(), Some("Microsoft Corporation"));
        assert_eq!(
            (item.os_name.as_deref(), item.os_build.as_deref()),
            (Some("Windows Server 2016"), Some("14393"))
        );
    }

    #[test]
    fn stringly_booleans_are_read() {
        let rows = map_agent(
            &json!({"id": 5, "computerName": "WS-1", "infected": "True", "activeThreats": "2"}),
        )
        .unwrap();
        let Row::Record(device) = &rows[0] else {
            panic!("a record")
        };
        assert_eq!(device.key, "5");
        assert_eq!(device.fields["infected"], true);
        assert_eq!(device.fields["active_threats"], 2);
        assert!(map_agent(&json!({"id": 5})).is_err());
    }

    #[test]
    fn threat_states_are_normalized() {
        for (mitigation, incident, verdict, expected) in [
            ("not_mitigated", "unresolved", "undefined", Some("active")),
            ("not_mitigated", "resolved", "undefined", Some("active")),
            ("active", "in_progress", "true_positive", Some("active")),
            (
                "mitigated",
                "unresolved",
                "true_positive",
                Some("mitigated"),
            ),
            ("mitigated", "resolved", "true_positive", Some("resolved")),
            ("mitigated", "resolved", "false_positive", Some("benign")),
            ("marked_as_benign", "resolved", "undefined", Some("benign")),
        ] {
            let info = json!({"mitigationStatus": mitigation, "incidentStatus": incident,
                              "analystVerdict": verdict});
            assert_eq!(threat_status(&info), expected, "{info}");
        }
        assert_eq!(threat_status(&json!({})), None);
    }

    #[test]
    fn the_fixture_threats_map() {
        let threats: Value = serde_json::from_str(THREATS).unwrap();
        let rows = map_threat(&threats["data"][0]).unwrap();
        let Row::Record(threat) = &rows[0] else {
            panic!("a record")
        };
        assert_eq!(threat.key, "715718962991148224");
        assert_eq!(threat.fields["classification"], "Malware");
        // Mitigated, and its incident resolved.
        assert_eq!(threat.fields["status"], "resolved");
        assert_eq!(threat.fields["status_raw"], "mitigated");
        assert_eq!(threat.fields["device_key"], "657613730168123595");
        assert_eq!(threat.fields["device"], "EC2AMAZ-AJ0KANC");
        assert_eq!(
            threat.fields["file_hash"],
            "3395856ce81f2b7382dee72602f798b642f14140"
        );
    }
}
