//! The edr connector: SentinelOne Management API v2.1 (`/web/api/v2.1`).
//!
//! Area `edr`. Credentials: `Authorization: ApiToken <token>`, attached by
//! the host. Streams: `agents`, each with its installed applications (one
//! `/agents/applications?ids=<id>` request per agent, a page's agents sent
//! concurrently: the answer's items do not say which agent they belong to),
//! and `threats`. Both page by `pagination.nextCursor`.

mod lenient;
mod mapping;
mod upstream;

use cairn_sdk::records::{App, Device, Threat};
use cairn_sdk::{
    export_connector, json, AuthScheme, Collection, Config, Connector, Descriptor, Error, Field,
    FieldType, Page, Related, Row, Value, View,
};

pub use mapping::{map_agent, map_threat};

pub struct Edr;

impl Connector for Edr {
    fn describe() -> Descriptor {
        let related = || {
            vec![
                Related {
                    name: "threats".into(),
                    collection: mapping::THREATS.into(),
                    field: "device_key".into(),
                },
                Related {
                    name: "apps".into(),
                    collection: mapping::APPS.into(),
                    field: "device_key".into(),
                },
            ]
        };
        let mut threats = Collection::of::<Threat>(mapping::THREATS).searching(&[
            "name",
            "device_name",
            "file_path",
        ]);
        threats.fields.push(Field {
            name: "device".into(),
            field_type: FieldType::String,
            description: "The agent's computer name (the `device` filter of the threats list)"
                .into(),
        });
        Descriptor {
            id: "sentinelone".into(),
            area: "edr".into(),
            name: "SentinelOne".into(),
            version: "0.3.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "api_token"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://", "description": "The management console, e.g. https://usea1-partners.sentinelone.net"},
                    "api_token": {"type": "string", "minLength": 1, "description": "An API token of a service user with Endpoints.view and Threats.view"},
                    "page_size": {"type": "integer", "minimum": 1, "maximum": 1000}
                }
            }),
            secret_fields: vec!["api_token".into()],
            streams: vec![upstream::AGENTS.into(), upstream::THREATS.into()],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::StaticHeader {
                header: "Authorization".into(),
                prefix: "ApiToken ".into(),
                secret_field: "api_token".into(),
            },
            collections: vec![
                Collection::of::<Device>(mapping::DEVICES).searching(&[
                    "name",
                    "user",
                    "os_version",
                ]),
                threats,
                Collection::of::<App>(mapping::APPS).searching(&["name", "vendor"]),
            ],
            views: vec![
                View::List {
                    path: "devices".into(),
                    collection: mapping::DEVICES.into(),
                    summary: "Agents synced from SentinelOne".into(),
                },
                View::List {
                    path: "threats".into(),
                    collection: mapping::THREATS.into(),
                    summary:
                        "Threats synced from SentinelOne (filters: status (active, mitigated, resolved, benign), status_raw, classification, device)"
                            .into(),
                },
                View::Aggregate {
                    path: "apps".into(),
                    collection: mapping::APPS.into(),
                    summary: "Installed applications aggregated by name, with device counts".into(),
                    by: "name".into(),
                },
                View::ByDeviceName {
                    path: "device-by-name/{computer_name}".into(),
                    collection: mapping::DEVICES.into(),
                    summary: "The agent of one computer, with its threats and apps".into(),
                    related: related(),
                },
                View::ByKey {
                    path: "device/{agent_id}".into(),
                    collection: mapping::DEVICES.into(),
                    summary: "One agent by id, with its threats and apps".into(),
                    related: related(),
                },
            ],
            actions: vec![],
            // A page's agents have their applications read concurrently.
            max_concurrent_requests: 8,
            config_from: None,
            pull: None,
            webhook: None,
        }
    }

    fn check(config: &Config) -> Result<(), Error> {
        upstream::first_agent(config).map(|_| ())
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        upstream::fetch(config, stream, cursor)
    }

    fn map_record(stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        match stream {
            upstream::AGENTS => map_agent(record),
            upstream::THREATS => map_threat(record),
            other => Err(format!("unknown stream {other}")),
        }
    }
}

export_connector!(Edr);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
