//! A NinjaOne device (`/v2/devices-detailed`, with `_Software` attached by
//! fetch) to a device record and one inventory item per application.

use cairn_sdk::records::{platform_of, Device, RecordType};
use cairn_sdk::{text_of, InventoryItem, Row, SourceRecord, Value};

/// The collection of synced devices.
pub const DEVICES: &str = "devices";

/// The platform of a device: its node class says it for agents
/// (`WINDOWS_WORKSTATION`, `MAC`, `LINUX_SERVER`, ...), else its OS name.
fn platform(device: &Value, os_name: Option<&str>) -> Option<String> {
    let class = device["nodeClass"].as_str().unwrap_or_default();
    let by_class = if class.starts_with("WINDOWS") {
        Some("windows")
    } else if class.starts_with("MAC") {
        Some("macos")
    } else if class.starts_with("LINUX") {
        Some("linux")
    } else {
        None
    };
    by_class
        .or_else(|| os_name.and_then(platform_of))
        .map(String::from)
}

/// A time NinjaOne gives in seconds since the epoch (with a fraction), as
/// RFC 3339 UTC: the form the host reads a device's `last_seen` in.
pub fn rfc3339_of_epoch(seconds: f64) -> Option<String> {
    (seconds.is_finite() && seconds >= 0.0).then(|| cairn_sdk::time::rfc3339_utc(seconds as i64))
}

pub fn map_device(device: &Value) -> Result<Vec<Row>, String> {
    let id = text_of(&device["id"]).ok_or("device without an id")?;
    // `systemName` is the host name the agent reports; `displayName` is
    // what a technician may have renamed it to.
    let name = text_of(&device["systemName"])
        .or_else(|| text_of(&device["displayName"]))
        .or_else(|| text_of(&device["dnsName"]))
        .ok_or("device without a systemName")?;
    let client_id = text_of(&device["organizationId"]);
    let os_name = text_of(&device["os"]["name"]);
    let os_build = text_of(&device["os"]["buildNumber"]);
    let os_platform = platform(device, os_name.as_deref());
    let user_name = text_of(&device["lastLoggedInUser"]);
    let serial = text_of(&device["system"]["serialNumber"])
        .or_else(|| text_of(&device["system"]["biosSerialNumber"]));
    let body = cairn_sdk::without_keys(device, &["_Software"]);
    let fields = Device {
        name: Some(name.clone()),
        device_id: Some(id.clone()),
        serial_number: serial,
        os_platform: os_platform.clone(),
        os_version: os_name.clone(),
        user: user_name.clone(),
        last_seen: device["lastContact"].as_f64().and_then(rfc3339_of_epoch),
        client_id: client_id.clone(),
        ..Device::default()
    };
    let mut rows = vec![Row::Record(SourceRecord {
        collection: DEVICES.into(),
        key: id.clone(),
        device_name: Some(name.clone()),
        client_id: client_id.clone(),
        group_ids: vec![],
        fields: fields.to_fields(),
        body,
    })];
    for software in device["_Software"].as_array().into_iter().flatten() {
        let Some(application) = text_of(&software["name"]) else {
            continue;
        };
        let publisher = text_of(&software["publisher"]);
        rows.push(Row::Inventory(InventoryItem {
            device_name: Some(name.clone()),
            device_id: Some(id.clone()),
            os_platform: os_platform.clone(),
            os_version: os_name.clone(),
            os_name: os_name.clone(),
            os_build: os_build.clone(),
            user_email: None,
            user_name: user_name.clone(),
            application_name: Some(application),
            vendor: publisher.clone(),
            version: text_of(&software["version"]),
            publisher,
            client_id: client_id.clone(),
            group_ids: vec![],
        }));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_sdk::json;

    #[test]
    fn a_device_maps_to_a_record_and_its_software() {
        let device = json!({
            "id": 41, "organizationId": 7, "nodeClass": "WINDOWS_WORKSTATION",
            "systemName": "ACME-WS-01", "displayName": "Reception PC", "offline": false,
            "lastContact": 1_700_000_000.25,
            "os": {"name": "Windows 11 Pro Edition", "buildNumber": "22631"},
            "system": {"serialNumber": "5CG1234XYZ"}, "lastLoggedInUser": "ACME\\jdoe",
            "_Software": [
                {"name": "Google Chrome", "version": "112.0.5615.49", "publisher": "Google LLC"},
                {"name": " "}
            ]
        });
        let rows = map_device(&device).unwrap();
        assert_eq!(rows.len(), 2);
        let Row::Record(record) = &rows[0] else {
            panic!("the device first")
        };
        assert_eq!(record.key, "41");
        assert_eq!(record.device_name.as_deref(), Some("ACME-WS-01"));
        assert_eq!(record.client_id.as_deref(), Some("7"));
        assert_eq!(record.fields["os_platform"], "windows");
        assert_eq!(record.fields["last_seen"], "2023-11-14T22:13:20Z");
        assert_eq!(record.fields["serial_number"], "5CG1234XYZ");
        assert!(record.body.get("_Software").is_none());
        let Row::Inventory(item) = &rows[1] else {
            panic!("then its software")
        };
        assert_eq!(item.application_name.as_deref(), Some("Google Chrome"));
        assert_eq!(item.version.as_deref(), Some("112.0.5615.49"));
        assert_eq!(item.os_build.as_deref(), Some("22631"));
        assert!(map_device(&json!({"id": 1})).is_err());
    }

    #[test]
    fn epoch_seconds_as_rfc3339() {
        for (seconds, expected) in [
            (0.0, Some("1970-01-01T00:00:00Z")),
            (951_782_400.0, Some("2000-02-29T00:00:00Z")),
            (1_735_689_599.9, Some("2024-12-31T23:59:59Z")),
            (-1.0, None),
            (f64::NAN, None),
        ] {
            assert_eq!(rfc3339_of_epoch(seconds).as_deref(), expected, "{seconds}");
        }
    }

    #[test]
    fn platforms_from_node_classes_else_os_names() {
        for (class, os, expected) in [
            ("MAC", "macOS Sonoma", Some("macos")),
            ("LINUX_SERVER", "Ubuntu 22.04", Some("linux")),
            ("WINDOWS_SERVER", "", Some("windows")),
            ("VMWARE_VM_GUEST", "Ubuntu 22.04", Some("linux")),
            ("NMS_SWITCH", "", None),
        ] {
            let device = json!({"nodeClass": class});
            let os = Some(os).filter(|o| !o.is_empty());
            assert_eq!(platform(&device, os).as_deref(), expected, "{class}");
        }
    }
}
