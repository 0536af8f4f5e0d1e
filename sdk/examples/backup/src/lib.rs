//! Acme Backup: an outside connector for an area the host does not know,
//! `backup`. It syncs protected devices and their backup jobs from
//! `{base_url}/v1/devices` and `{base_url}/v1/jobs` (paged by `?page=N`,
//! `{"items": [...], "next_page": N|null}`), authenticating with
//! `Authorization: Bearer <api_key>` (the host attaches it).
//!
//! Declares two collections (devices, jobs), five views and two actions:
//! `POST jobs/{job_id}/restore` (admins only) starts a restore, and
//! `GET storage` reads the vault's usage live.

use cairn_sdk::records::{Device, RecordType};
use cairn_sdk::{
    export_connector, http, json, Action, ActionRequest, AuthScheme, Collection, Config, Connector,
    Descriptor, Error, Field, FieldType, Page, Related, Row, SourceRecord, Value, View,
};

struct AcmeBackup;

fn base(config: &Config) -> Result<&str, Error> {
    config["base_url"]
        .as_str()
        .map(|b| b.trim_end_matches('/'))
        .ok_or_else(|| Error::Config("base_url is not set".into()))
}

fn field(name: &str, field_type: FieldType, description: &str) -> Field {
    Field {
        name: name.into(),
        field_type,
        description: description.into(),
    }
}

/// The backup job collection: a record type of this connector's own.
pub fn jobs_collection() -> Collection {
    Collection {
        name: "jobs".into(),
        record_type: "backup_job".into(),
        fields: vec![
            field("device_key", FieldType::String, "Key of the device record"),
            field("status", FieldType::String, "succeeded, failed or running"),
            field("finished_at", FieldType::DateTime, "When the job ended"),
            field("size_bytes", FieldType::Integer, "Bytes written"),
            field(
                "encrypted",
                FieldType::Boolean,
                "Whether the copy is encrypted",
            ),
        ],
        search: vec!["status".into()],
    }
}

impl Connector for AcmeBackup {
    fn describe() -> Descriptor {
        Descriptor {
            id: "acme-backup".into(),
            area: "backup".into(),
            name: "Acme Backup".into(),
            version: "1.0.0".into(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "api_key"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://"},
                    "api_key": {"type": "string", "minLength": 8}
                }
            }),
            secret_fields: vec!["api_key".into()],
            streams: vec!["devices".into(), "jobs".into()],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::StaticHeader {
                header: "Authorization".into(),
                prefix: "Bearer ".into(),
                secret_field: "api_key".into(),
            },
            collections: vec![
                Collection::of::<Device>("devices").searching(&["name", "os_platform"]),
                jobs_collection(),
            ],
            views: vec![
                View::List {
                    path: "devices".into(),
                    collection: "devices".into(),
                    summary: "Protected devices".into(),
                },
                View::ByKey {
                    path: "device/{device_id}".into(),
                    collection: "devices".into(),
                    summary: "One protected device with its backup jobs".into(),
                    related: vec![Related {
                        name: "jobs".into(),
                        collection: "jobs".into(),
                        field: "device_key".into(),
                    }],
                },
                View::ByDeviceName {
                    path: "device-by-name/{device_name}".into(),
                    collection: "devices".into(),
                    summary: "A protected device by name".into(),
                    related: vec![],
                },
                View::List {
                    path: "jobs".into(),
                    collection: "jobs".into(),
                    summary: "Backup jobs".into(),
                },
                View::Aggregate {
                    path: "jobs/by-status".into(),
                    collection: "jobs".into(),
                    summary: "Backup jobs counted by status".into(),
                    by: "status".into(),
                },
            ],
            actions: vec![
                Action {
                    name: "restore".into(),
                    method: "POST".into(),
                    path: Some("jobs/{job_id}/restore".into()),
                    summary: "Start restoring a backup job's copy".into(),
                    input_schema: Some(json!({
                        "type": "object",
                        "required": ["target"],
                        "additionalProperties": false,
                        "properties": {
                            "target": {"type": "string", "minLength": 1},
                            "verify": {"type": "boolean"}
                        }
                    })),
                    output_schema: Some(json!({
                        "type": "object",
                        "properties": {"restore_id": {"type": "string"}, "status": {"type": "string"}}
                    })),
                    role: "admin".into(),
                    ..Action::default()
                },
                Action {
                    name: "storage".into(),
                    path: Some("storage".into()),
                    summary: "The vault's usage, live".into(),
                    query_schema: Some(json!({
                        "type": "object",
                        "additionalProperties": false,
                        "properties": {"unit": {"type": "string", "enum": ["bytes", "gib"]}}
                    })),
                    ..Action::default()
                },
            ],
            max_concurrent_requests: 4,
            ..Descriptor::default()
        }
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        let page = cursor.unwrap_or("1");
        let body = http::get_json(&format!("{}/v1/{stream}?page={page}", base(config)?))?;
        Ok(Page {
            records: body["items"].as_array().cloned().unwrap_or_default(),
            next_cursor: body["next_page"].as_u64().map(|n| n.to_string()),
        })
    }

    fn map_record(stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        let id = record["id"].as_str().ok_or("record without an id")?;
        let row = match stream {
            "devices" => {
                let name = record["hostname"]
                    .as_str()
                    .ok_or("device without a hostname")?;
                let device = Device {
                    name: Some(name.into()),
                    device_id: Some(id.into()),
                    os_platform: record["os"].as_str().map(String::from),
                    last_seen: record["last_backup"].as_str().map(String::from),
                    ..Device::default()
                };
                SourceRecord {
                    collection: "devices".into(),
                    key: id.into(),
                    device_name: Some(name.into()),
                    client_id: None,
                    group_ids: vec![],
                    fields: device.to_fields(),
                    body: record.clone(),
                }
            }
            "jobs" => SourceRecord {
                collection: "jobs".into(),
                key: id.into(),
                device_name: record["hostname"].as_str().map(String::from),
                client_id: None,
                group_ids: vec![],
                fields: json!({
                    "device_key": record["device_id"],
                    "status": record["state"],
                    "finished_at": record["ended"],
                    "size_bytes": record["bytes"],
                    "encrypted": record["encrypted"],
                }),
                body: record.clone(),
            },
            other => return Err(format!("unknown stream {other}")),
        };
        Ok(vec![Row::Record(row)])
    }

    fn invoke(config: &Config, request: &ActionRequest) -> Result<Value, Error> {
        let base = base(config)?;
        match request.action.as_str() {
            "restore" => {
                let job = request.path_param("job_id")?;
                http::post_json(&format!("{base}/v1/jobs/{job}/restore"), &request.body)
            }
            "storage" => {
                let unit = request.query_param("unit").unwrap_or("bytes");
                http::get_json(&format!("{base}/v1/storage?unit={unit}"))
            }
            other => Err(Error::NotFound(format!("no action {other}"))),
        }
    }
}

export_connector!(AcmeBackup);
