//! An Intune managed device (with `_detectedApps` attached by fetch) to a
//! device record, and each detected app to an app record and an inventory
//! item.

use cairn_sdk::records::{platform_of, App, Device, RecordType};
use cairn_sdk::text_of as text;
use cairn_sdk::{InventoryItem, Row, SourceRecord, Value};

/// The collection of managed devices.
pub const DEVICES: &str = "devices";
/// The collection of detected apps, one record per (device, app).
pub const APPS: &str = "apps";
/// The tenant-wide detected apps, one record per app and version.
pub const DETECTED_APPS: &str = "detected_apps";

/// Intune's `operatingSystem` as the area's platform.
fn platform(operating_system: &str) -> String {
    platform_of(operating_system).unwrap_or("other").to_string()
}

pub fn map_device(device: &Value) -> Result<Vec<Row>, String> {
    let id = text(&device["id"]).ok_or("managed device without an id")?;
    let name = text(&device["deviceName"]).ok_or("managed device without a deviceName")?;
    let os_platform = text(&device["operatingSystem"]).map(|os| platform(&os));
    let os_version = text(&device["osVersion"]);
    let upn = text(&device["userPrincipalName"]).map(|u| u.to_lowercase());
    let email = upn
        .clone()
        .or_else(|| text(&device["emailAddress"]).map(|e| e.to_lowercase()));
    let user_name = text(&device["userDisplayName"]);
    let body = cairn_sdk::without_keys(device, &["_detectedApps"]);
    let fields = Device {
        name: Some(name.clone()),
        device_id: Some(id.clone()),
        serial_number: text(&device["serialNumber"]),
        os_platform: os_platform.clone(),
        os_version: os_version.clone(),
        user: email.clone(),
        last_seen: text(&device["lastSyncDateTime"]),
        managed_device_id: Some(id.clone()),
        compliance_state: text(&device["complianceState"]),
        ownership: text(&device["managedDeviceOwnerType"]),
        ..Device::default()
    };
    let mut rows = vec![Row::Record(SourceRecord {
        collection: DEVICES.into(),
        key: id.clone(),
        device_name: Some(name.clone()),
        client_id: None,
        group_ids: vec![],
        fields: fields.to_fields(),
        body,
    })];
    for app in device["_detectedApps"].as_array().into_iter().flatten() {
        let Some(app_name) = text(&app["displayName"]) else {
            continue;
        };
        let version = text(&app["version"]);
        let publisher = text(&app["publisher"]);
        let app_key = text(&app["id"])
            .unwrap_or_else(|| format!("{app_name}|{}", version.as_deref().unwrap_or_default()));
        rows.push(Row::Record(SourceRecord {
            collection: APPS.into(),
            key: format!("{id}/{app_key}"),
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
            user_email: email.clone(),
            user_name: user_name.clone(),
            application_name: Some(app_name),
            vendor: publisher.clone(),
            version,
            publisher,
            ..InventoryItem::default()
        }));
    }
    Ok(rows)
}

/// A tenant-wide detected app (one app and version) to its record.
pub fn map_detected_app(app: &Value) -> Result<Vec<Row>, String> {
    let id = text(&app["id"]).ok_or("detected app without an id")?;
    let name = text(&app["displayName"]).ok_or("detected app without a displayName")?;
    let mut fields = serde_json::Map::new();
    fields.insert("name".into(), Value::String(name));
    for (field, key) in [
        ("version", "version"),
        ("publisher", "publisher"),
        ("platform", "platform"),
    ] {
        if let Some(value) = text(&app[key]) {
            fields.insert(field.into(), Value::String(value));
        }
    }
    if let Some(count) = app["deviceCount"].as_i64() {
        fields.insert("device_count".into(), Value::from(count));
    }
    Ok(vec![Row::Record(SourceRecord {
        collection: DETECTED_APPS.into(),
        key: id,
        device_name: None,
        client_id: None,
        group_ids: vec![],
        fields: Value::Object(fields),
        body: app.clone(),
    })])
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_sdk::json;

    /// The fixture's managed device (Graph's reference example).
    const FIXTURE: &str =
        include_str!("../../../tests/fixtures/graph/intune_managed_device_raw.json");

    #[test]
    fn the_reference_device_maps_to_a_device_record() {
        let wrapped: Value = serde_json::from_str(FIXTURE).unwrap();
        let rows = map_device(&wrapped["value"]).unwrap();
        let Row::Record(device) = &rows[0] else {
            panic!("the device first")
        };
        assert_eq!(device.key, "705c034c-034c-705c-4c03-5c704c035c70");
        assert_eq!(device.device_name.as_deref(), Some("Device Name value"));
        assert_eq!(device.fields["compliance_state"], "compliant");
        assert_eq!(device.fields["ownership"], "company");
        assert_eq!(device.fields["os_platform"], "other");
        assert_eq!(rows.len(), 1, "no apps attached");
    }

    #[test]
    fn the_reference_detected_app_maps_with_its_device_count() {
        let list: Value = serde_json::from_str(include_str!(
            "../../../tests/fixtures/graph/intune_detected_apps_list.json"
        ))
        .unwrap();
        let rows = map_detected_app(&list["value"][0]).unwrap();
        let Row::Record(app) = &rows[0] else {
            panic!("a record")
        };
        assert_eq!(app.key, "caf60db6-0db6-caf6-b60d-f6cab60df6ca");
        assert_eq!(app.fields["name"], "Display Name value");
        assert_eq!(app.fields["device_count"], 11);
        assert_eq!(app.fields["platform"], "windows");
        assert!(map_detected_app(&json!({"id": "x"})).is_err());
    }

    #[test]
    fn apps_become_records_and_inventory_items() {
        let device = json!({
            "id": "d-1", "deviceName": "LAPTOP-7", "operatingSystem": "Windows",
            "osVersion": "10.0.22631.3447", "userPrincipalName": "Ada@Contoso.example",
            "userDisplayName": "Ada Lovelace",
            "_detectedApps": [
                {"id": "a-1", "displayName": "Google Chrome", "version": "124.0.6367.60", "publisher": "Google LLC"},
                {"id": "a-2", "displayName": "  "}
            ]
        });
        let rows = map_device(&device).unwrap();
        assert_eq!(rows.len(), 3);
        let Row::Record(device) = &rows[0] else {
            panic!("the device first")
        };
        assert_eq!(device.fields["user"], "ada@contoso.example");
        assert_eq!(device.fields["os_platform"], "windows");
        assert!(device.body.get("_detectedApps").is_none());
        let Row::Record(app) = &rows[1] else {
            panic!("then the app record")
        };
        assert_eq!(app.key, "d-1/a-1");
        assert_eq!(app.fields["name"], "Google Chrome");
        let Row::Inventory(item) = &rows[2] else {
            panic!("then the item")
        };
        assert_eq!(item.version.as_deref(), Some("124.0.6367.60"));
        assert_eq!(item.user_email.as_deref(), Some("ada@contoso.example"));
        assert!(map_device(&json!({"id": "x"})).is_err());
    }
}
