//! The connector of SDK 0.3.1's guide (sdk/README.md at 530d1fd): declarations with `..Default`, no allocator of its own, kept
//! unchanged: every later SDK release of the same or a later minor version
//! must compile it (CI builds it with the components) and the host must load
//! it. Do not edit it to make it compile; fix the SDK.
#![allow(clippy::all)]

use cairn_sdk::records::{Device, RecordType};
use cairn_sdk::{
    export_connector, http, json, Action, ActionRequest, AuthScheme, Collection, Config, Connector,
    Descriptor, Error, Page, Row, SourceRecord, Value, View,
};

struct Acme;

impl Connector for Acme {
    fn describe() -> Descriptor {
        Descriptor {
            id: "acme-rmm".into(), // the product
            area: "rmm".into(),    // routes: /api/v1/rmm/...
            name: "Acme RMM".into(),
            version: "0.1.0".into(),
            config_schema: json!({"type": "object", "required": ["base_url", "api_token"],
                                  "properties": {"base_url": {"type": "string"},
                                                 "api_token": {"type": "string"}}}),
            secret_fields: vec!["api_token".into()],
            streams: vec!["computers".into()],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::StaticHeader {
                header: "Authorization".into(),
                prefix: "Bearer ".into(),
                secret_field: "api_token".into(),
            },
            collections: vec![Collection::of::<Device>("devices").searching(&["name"])],
            views: vec![
                View::List {
                    path: "devices".into(),
                    collection: "devices".into(),
                    summary: "Synced computers".into(),
                },
                View::ByDeviceName {
                    path: "device-by-name/{device_name}".into(),
                    collection: "devices".into(),
                    summary: "One computer by name".into(),
                    related: vec![],
                },
            ],
            actions: vec![Action {
                name: "reboot".into(),
                method: "POST".into(),
                path: Some("computers/{computer_id}/reboot".into()),
                summary: "Reboot a computer".into(),
                input_schema: Some(
                    json!({"type": "object", "properties": {"reason": {"type": "string"}}}),
                ),
                role: "admin".into(),
                ..Action::default() // no query or answer schema
            }],
            max_concurrent_requests: 4,
            // No bulk pull, seeding or webhooks, and what later SDK
            // releases add: see the sections below.
            ..Descriptor::default()
        }
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        let base = config["base_url"].as_str().unwrap_or_default();
        let page = cursor.unwrap_or("1");
        let body = http::get_json(&format!("{base}/{stream}?page={page}"))?;
        let records = body["items"].as_array().cloned().unwrap_or_default();
        let next =
            (!records.is_empty()).then(|| (page.parse::<u32>().unwrap_or(1) + 1).to_string());
        Ok(Page {
            records,
            next_cursor: next,
        })
    }

    fn map_record(_stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        let id = record["id"].as_str().ok_or("computer without an id")?;
        let name = record["name"].as_str().ok_or("computer without a name")?;
        let device = Device {
            name: Some(name.into()),
            os_platform: Some("windows".into()),
            ..Device::default()
        };
        Ok(vec![Row::Record(SourceRecord {
            collection: "devices".into(),
            key: id.into(),
            device_name: Some(name.into()),
            client_id: None,
            group_ids: vec![],
            fields: device.to_fields(),
            body: record.clone(),
        })])
    }

    fn invoke(config: &Config, request: &ActionRequest) -> Result<Value, Error> {
        let base = config["base_url"].as_str().unwrap_or_default();
        match request.action.as_str() {
            "reboot" => {
                let id = request.path_param("computer_id")?;
                http::post_json(&format!("{base}/computers/{id}/reboot"), &request.body)
            }
            other => Err(Error::NotFound(format!("no action {other}"))),
        }
    }
}

export_connector!(Acme);
