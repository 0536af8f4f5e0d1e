//! A test connector. Its one real stream, `ok`, pages through
//! `{config.base_url}/devices?page=N` (the host adds `X-Api-Token` from the
//! secret `api_token`) and maps each device to a device record and one
//! inventory item per app. The other streams misbehave on request: `loop`
//! never returns, `sleep` sleeps for an hour (parked in a host call),
//! `bomb` allocates without end, `panic` panics, `forbidden` calls a host it
//! did not ask for.

use cairn_sdk::{
    export_connector, http, json, AuthScheme, Collection, Config, Connector, Descriptor, Error,
    InventoryItem, Page, Row, SourceRecord, Value, View,
};

struct Misbehave;

impl Connector for Misbehave {
    fn describe() -> Descriptor {
        Descriptor {
            id: "misbehave".into(),
            area: "misbehave".into(),
            name: "Misbehaving test connector".into(),
            version: "0.2.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "api_token"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://"},
                    "api_token": {"type": "string", "minLength": 8},
                    "site": {"type": "string"},
                    "target_url": {"type": "string"},
                    "misbehave": {"type": "string", "enum": ["loop", "sleep", "bomb", "panic", "forbidden"]}
                }
            }),
            secret_fields: vec!["api_token".into()],
            streams: vec!["ok".into()],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::StaticHeader {
                header: "X-Api-Token".into(),
                prefix: String::new(),
                secret_field: "api_token".into(),
            },
            collections: vec![Collection {
                name: "device".into(),
                record_type: "device".into(),
                fields: vec![],
                search: vec![],
            }],
            views: vec![
                View::List {
                    path: "devices".into(),
                    collection: "device".into(),
                    summary: "Devices synced from the test upstream".into(),
                },
                View::ByDeviceName {
                    path: "device-by-name/{device_name}".into(),
                    collection: "device".into(),
                    summary: "One synced device by name".into(),
                    related: vec![],
                },
            ],
            actions: vec![],
            max_concurrent_requests: 1,
            config_from: None,
            pull: None,
            webhook: None,
        }
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        // `misbehave` in the config makes the sync's stream misbehave too.
        let stream = config["misbehave"].as_str().unwrap_or(stream);
        let base = config["base_url"]
            .as_str()
            .unwrap_or_default()
            .trim_end_matches('/');
        match stream {
            "loop" => {
                let mut n: u64 = 0;
                loop {
                    n = n.wrapping_add(1);
                    if n == u64::MAX {
                        break;
                    }
                    std::hint::black_box(n);
                }
                Ok(Page::default())
            }
            "sleep" => {
                std::thread::sleep(std::time::Duration::from_secs(3600));
                Ok(Page::default())
            }
            "bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 16 * 1024 * 1024]);
                    std::hint::black_box(&hoard);
                }
            }
            "panic" => panic!("the parser fell over"),
            "forbidden" => {
                http::get_json("https://forbidden.example.net/steal")?;
                Ok(Page::default())
            }
            // Whatever URL the config names: the outbound policy's tests.
            "target" => {
                let url = config["target_url"].as_str().unwrap_or_default();
                http::get_json(url)?;
                Ok(Page::default())
            }
            _ => {
                let page: u32 = cursor.and_then(|c| c.parse().ok()).unwrap_or(1);
                let body = http::get_json(&format!("{base}/devices?page={page}"))?;
                let records = body["items"].as_array().cloned().unwrap_or_default();
                let next_cursor = body["has_more"]
                    .as_bool()
                    .unwrap_or(false)
                    .then(|| (page + 1).to_string());
                Ok(Page {
                    records,
                    next_cursor,
                })
            }
        }
    }

    fn map_record(_stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        let name = record["name"].as_str().ok_or("record has no name")?;
        let id = record["id"].as_str().unwrap_or(name).to_string();
        let mut rows = vec![Row::Record(SourceRecord {
            collection: "device".into(),
            fields: cairn_sdk::Value::Null,
            key: id.clone(),
            device_name: Some(name.to_string()),
            client_id: None,
            group_ids: vec![],
            body: record.clone(),
        })];
        for app in record["apps"].as_array().into_iter().flatten() {
            rows.push(Row::Inventory(InventoryItem {
                device_name: Some(name.to_string()),
                device_id: Some(id.clone()),
                application_name: app["name"].as_str().map(String::from),
                version: app["version"].as_str().map(String::from),
                os_platform: record["os"].as_str().map(String::from),
                ..InventoryItem::default()
            }));
        }
        Ok(rows)
    }
}

export_connector!(Misbehave);
