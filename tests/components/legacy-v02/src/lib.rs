//! A v0.2 connector (the contract `cairn:plugin@0.2.0`, as cairn-sdk 0.2
//! built them): id `legacy2-inventory` in area `legacy2`, one stream
//! `devices` paging through `{config.base_url}/devices?page=N` (the
//! misbehave fake's shape), each device mapped to a record of collection
//! `devices` and one inventory item per app, a list view and a by-name view,
//! and one live action `GET ping`. Its rows come back as v0.2's typed list,
//! not v0.3's buffer.

// The bindings generated from the frozen v0.2 WIT take as many arguments as
// its functions have; they are not ours to reshape.
#![allow(clippy::too_many_arguments)]

wit_bindgen::generate!({
    path: "../../../sdk/wit/v0.2",
    world: "connector",
});

use cairn::plugin::host;
use cairn::plugin::types::{Header, HttpRequest, InventoryItem, SourceRecord};
use serde_json::{json, Value};

struct Legacy;

fn get_json(url: &str) -> Result<Value, PluginError> {
    let response = host::send(&HttpRequest {
        method: "GET".into(),
        url: url.into(),
        headers: vec![Header {
            name: "accept".into(),
            value: "application/json".into(),
        }],
        body: vec![],
    })?;
    if !(200..300).contains(&response.status) {
        return Err(PluginError::Upstream(format!(
            "upstream status {}",
            response.status
        )));
    }
    serde_json::from_slice(&response.body).map_err(|e| PluginError::Upstream(e.to_string()))
}

fn base(config: &str) -> Result<String, PluginError> {
    let config: Value =
        serde_json::from_str(config).map_err(|e| PluginError::Config(e.to_string()))?;
    config["base_url"]
        .as_str()
        .map(|b| b.trim_end_matches('/').to_string())
        .ok_or_else(|| PluginError::Config("base_url is not set".into()))
}

impl Guest for Legacy {
    fn describe() -> String {
        json!({
            "id": "legacy2-inventory",
            "area": "legacy2",
            "name": "Legacy v0.2 connector",
            "version": "0.2.0",
            "sdk_version": "0.2.0",
            "config_schema": {
                "type": "object",
                "required": ["base_url", "api_token"],
                "properties": {
                    "base_url": {"type": "string"},
                    "api_token": {"type": "string"}
                }
            },
            "secret_fields": ["api_token"],
            "streams": ["devices"],
            "requested_hosts": ["{config.base_url}"],
            "auth": {"type": "static_header", "header": "X-Api-Token", "prefix": "", "secret_field": "api_token"},
            "collections": [{
                "name": "devices", "record_type": "device",
                "fields": [
                    {"name": "name", "type": "string"},
                    {"name": "os_platform", "type": "string"}
                ],
                "search": ["name"]
            }],
            "views": [
                {"type": "list", "path": "devices", "collection": "devices",
                 "summary": "Devices the integration synced"},
                {"type": "by_device_name", "path": "device-by-name/{device_name}",
                 "collection": "devices", "summary": "One device, by name"}
            ],
            "actions": [{"name": "ping", "method": "GET", "path": "ping", "role": "member",
                         "summary": "Answers pong"}]
        })
        .to_string()
    }

    fn check(config: String) -> Result<(), PluginError> {
        get_json(&format!("{}/devices?page=1", base(&config)?)).map(|_| ())
    }

    fn fetch(
        config: String,
        _stream: String,
        cursor: Option<String>,
    ) -> Result<(String, Option<String>), PluginError> {
        let page: u32 = cursor.and_then(|c| c.parse().ok()).unwrap_or(1);
        let body = get_json(&format!("{}/devices?page={page}", base(&config)?))?;
        let next = body["has_more"]
            .as_bool()
            .unwrap_or(false)
            .then(|| (page + 1).to_string());
        Ok((body["items"].to_string(), next))
    }

    fn map_records(_stream: String, records: Vec<String>) -> Vec<Result<Vec<Row>, String>> {
        records.iter().map(|raw| map_device(raw)).collect()
    }

    fn invoke(config: String, request: ActionRequest) -> Result<String, PluginError> {
        match request.action.as_str() {
            "ping" => Ok(json!({"pong": true, "base_url": base(&config)?}).to_string()),
            other => Err(PluginError::Config(format!("unsupported action: {other}"))),
        }
    }
}

fn map_device(raw: &str) -> Result<Vec<Row>, String> {
    let record: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    let name = record["name"].as_str().ok_or("record has no name")?;
    let id = record["id"].as_str().unwrap_or(name).to_string();
    let os = record["os"].as_str().map(String::from);
    let mut rows = vec![Row::Record(SourceRecord {
        collection: "devices".into(),
        key: id.clone(),
        device_name: Some(name.to_string()),
        client_id: None,
        group_ids: vec![],
        fields: json!({"name": name, "os_platform": os}).to_string(),
        body: record.to_string(),
    })];
    for app in record["apps"].as_array().into_iter().flatten() {
        rows.push(Row::Inventory(InventoryItem {
            device_name: Some(name.to_string()),
            device_id: Some(id.clone()),
            os_platform: os.clone(),
            os_version: None,
            user_email: None,
            user_name: None,
            application_name: app["name"].as_str().map(String::from),
            vendor: None,
            version: app["version"].as_str().map(String::from),
            publisher: None,
            client_id: None,
            group_ids: vec![],
        }));
    }
    Ok(rows)
}

export!(Legacy);
