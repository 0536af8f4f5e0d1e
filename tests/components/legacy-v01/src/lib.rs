//! A v0.1 connector (the contract `cairn:plugin@0.1.0`, as cairn-sdk 0.1
//! built them): id `legacy`, one stream `devices` paging through
//! `{config.base_url}/devices?page=N` (the misbehave fake's shape), each
//! device mapped to a `device` record and one inventory item per app, and
//! one live action `ping` (v0.1 actions take no input).

wit_bindgen::generate!({
    path: "../../../sdk/wit/v0.1",
    world: "connector",
});

use cairn::plugin::host;
use cairn::plugin::types::{Header, HttpRequest, InventoryItem, RecordKind, SourceRecord};
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
            "id": "legacy",
            "name": "Legacy v0.1 connector",
            "version": "0.1.0",
            "sdk_version": "0.1.0",
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
            "actions": ["ping"]
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

    fn invoke(config: String, action: String, _input: String) -> Result<String, PluginError> {
        match action.as_str() {
            "ping" => Ok(json!({"pong": true, "base_url": base(&config)?}).to_string()),
            other => Err(PluginError::Config(format!("unsupported action: {other}"))),
        }
    }
}

fn map_device(raw: &str) -> Result<Vec<Row>, String> {
    let record: Value = serde_json::from_str(raw).map_err(|e| e.to_string())?;
    let name = record["name"].as_str().ok_or("record has no name")?;
    let id = record["id"].as_str().unwrap_or(name).to_string();
    let mut rows = vec![Row::Record(SourceRecord {
        kind: RecordKind::Device,
        key: id.clone(),
        device_name: Some(name.to_string()),
        client_id: None,
        group_ids: vec![],
        body: record.to_string(),
    })];
    for app in record["apps"].as_array().into_iter().flatten() {
        rows.push(Row::Inventory(InventoryItem {
            device_name: Some(name.to_string()),
            device_id: Some(id.clone()),
            os_platform: record["os"].as_str().map(String::from),
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
