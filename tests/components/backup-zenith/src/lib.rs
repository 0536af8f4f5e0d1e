//! Zenith Backup: a second product for the `backup` area. It syncs only
//! backup jobs, from `{base_url}/api/backups` (one bare JSON array), with
//! `X-Zenith-Key: <token>`, and declares the `jobs` list view only.

use cairn_sdk::{
    export_connector, http, json, AuthScheme, Collection, Config, Connector, Descriptor, Error,
    Field, FieldType, Page, Row, SourceRecord, Value, View,
};

struct ZenithBackup;

impl Connector for ZenithBackup {
    fn describe() -> Descriptor {
        Descriptor {
            id: "zenith-backup".into(),
            area: "backup".into(),
            name: "Zenith Backup".into(),
            version: "2.3.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "token"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://"},
                    "token": {"type": "string"}
                }
            }),
            secret_fields: vec!["token".into()],
            streams: vec!["backups".into()],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::StaticHeader {
                header: "X-Zenith-Key".into(),
                prefix: String::new(),
                secret_field: "token".into(),
            },
            collections: vec![Collection {
                name: "jobs".into(),
                record_type: "backup_job".into(),
                fields: vec![Field {
                    name: "status".into(),
                    field_type: FieldType::String,
                    description: "ok or error".into(),
                }],
                search: vec![],
            }],
            views: vec![View::List {
                path: "jobs".into(),
                collection: "jobs".into(),
                summary: "Backup jobs".into(),
            }],
            actions: vec![],
            max_concurrent_requests: 1,
            config_from: None,
            pull: None,
            webhook: None,
        }
    }

    fn fetch(config: &Config, _stream: &str, _cursor: Option<&str>) -> Result<Page, Error> {
        let base = config["base_url"]
            .as_str()
            .unwrap_or_default()
            .trim_end_matches('/');
        match http::get_json(&format!("{base}/api/backups"))? {
            Value::Array(records) => Ok(Page {
                records,
                next_cursor: None,
            }),
            _ => Err(Error::Upstream("expected a JSON array".into())),
        }
    }

    fn map_record(_stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        let key = record["uuid"].as_str().ok_or("backup without a uuid")?;
        Ok(vec![Row::Record(SourceRecord {
            collection: "jobs".into(),
            key: key.into(),
            device_name: record["machine"].as_str().map(String::from),
            client_id: None,
            group_ids: vec![],
            fields: json!({"status": record["result"]}),
            body: record.clone(),
        })])
    }
}

export_connector!(ZenithBackup);
