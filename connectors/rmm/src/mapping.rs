//! An Automate computer (with `_Software` and `_ScopeGroupIds` attached by
//! fetch) to a device record and one inventory item per application.

use cairn_sdk::records::{platform_of, Device, RecordType};
use cairn_sdk::{InventoryItem, Row, SourceRecord, Value};

use crate::scope::id_of;

fn text(value: &Value) -> Option<String> {
    value
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

/// The platform of an operating system name, when it names one.
fn platform(os_name: &str) -> Option<String> {
    platform_of(os_name).map(String::from)
}

/// The collection of synced computers.
pub const DEVICES: &str = "devices";

pub fn map_computer(computer: &Value) -> Result<Vec<Row>, String> {
    let id = id_of(computer).ok_or("computer without an Id")?;
    let name = text(&computer["ComputerName"]).ok_or("computer without a ComputerName")?;
    let client_id = id_of(&computer["Client"]);
    let group_ids: Vec<String> = computer["_ScopeGroupIds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g.as_str().map(String::from))
        .collect();
    let os_name = text(&computer["OperatingSystemName"]);
    let os_platform = os_name.as_deref().and_then(platform);
    let os_version = text(&computer["OperatingSystemVersion"]);
    let user_name = text(&computer["LastUserName"]);
    // The computer as Automate sent it, without what fetch attached: copied
    // key by key, since cloning it whole would copy its software list too.
    let body = cairn_sdk::without_keys(computer, &["_Software", "_ScopeGroupIds"]);
    let fields = Device {
        name: Some(name.clone()),
        device_id: Some(id.clone()),
        serial_number: text(&computer["SerialNumber"]),
        os_platform: os_platform.clone(),
        os_version: os_version.clone().or_else(|| os_name.clone()),
        user: user_name.clone(),
        last_seen: text(&computer["RemoteAgentLastContact"]),
        client_id: client_id.clone(),
        ..Device::default()
    };
    let mut rows = vec![Row::Record(SourceRecord {
        collection: DEVICES.into(),
        key: id.clone(),
        device_name: Some(name.clone()),
        client_id: client_id.clone(),
        group_ids: group_ids.clone(),
        fields: fields.to_fields(),
        body,
    })];
    for software in computer["_Software"].as_array().into_iter().flatten() {
        let Some(application) = text(&software["Name"]) else {
            continue;
        };
        let publisher = text(&software["Publisher"]);
        rows.push(Row::Inventory(InventoryItem {
            device_name: Some(name.clone()),
            device_id: Some(id.clone()),
            os_platform: os_platform.clone(),
            os_version: os_version.clone(),
            // Automate's name carries the edition: `Microsoft Windows 11 Pro x64`.
            os_name: os_name.clone(),
            os_build: None,
            user_email: None,
            user_name: user_name.clone(),
            application_name: Some(application),
            vendor: publisher.clone(),
            version: text(&software["Version"]),
            publisher,
            client_id: client_id.clone(),
            group_ids: group_ids.clone(),
        }));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_sdk::json;

    #[test]
    fn a_computer_maps_to_a_device_and_its_software() {
        let computer = json!({
            "Id": 101, "ComputerName": "WS-01", "Client": {"Id": 7, "Name": "Acme"},
            "OperatingSystemName": "Microsoft Windows 11 Pro x64", "OperatingSystemVersion": "10.0.22631",
            "LastUserName": "ACME\\jdoe", "_ScopeGroupIds": ["3"],
            "_Software": [{"Name": "7-Zip 23.01 (x64)", "Version": "23.01", "Publisher": "Igor Pavlov"}, {"Name": ""}]
        });
        let rows = map_computer(&computer).unwrap();
        assert_eq!(rows.len(), 2);
        let Row::Record(device) = &rows[0] else {
            panic!("device first")
        };
        assert_eq!(device.key, "101");
        assert_eq!(device.client_id.as_deref(), Some("7"));
        assert!(device.body.get("_Software").is_none());
        assert_eq!(device.fields["name"], "WS-01");
        assert_eq!(device.fields["os_platform"], "windows");
        let Row::Inventory(item) = &rows[1] else {
            panic!("then software")
        };
        assert_eq!(item.application_name.as_deref(), Some("7-Zip 23.01 (x64)"));
        assert_eq!(item.os_platform.as_deref(), Some("windows"));
        assert_eq!(
            item.os_name.as_deref(),
            Some("Microsoft Windows 11 Pro x64")
        );
        assert_eq!(item.group_ids, vec!["3".to_string()]);
        assert!(map_computer(&json!({"Id": 1})).is_err());
    }

    #[test]
    fn platforms_from_os_names() {
        assert_eq!(platform("macOS 14 Sonoma").as_deref(), Some("macos"));
        assert_eq!(platform("Ubuntu 22.04 LTS").as_deref(), Some("linux"));
        assert_eq!(platform("FreeBSD"), None);
    }
}
