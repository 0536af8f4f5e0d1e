//! The mdm connector: Microsoft Intune over Microsoft Graph.
//!
//! Area `mdm`. Credentials: OAuth 2.0 client credentials against
//! `{auth_url}/{tenant_id}/oauth2/v2.0/token` with a client secret or a
//! certificate (thumbprint and PEM private key); the host does it.
//!
//! Streams: `managed_devices`, a page of `/deviceManagement/managedDevices`
//! (following `@odata.nextLink`), each device with its detected apps fetched
//! through JSON batching from the beta per-device endpoint; a device maps to
//! a device record, and each of its apps to an app record and an inventory
//! item. `detected_apps`, the tenant-wide `/deviceManagement/detectedApps`
//! with Intune's own device count of each app and version.

mod batch;
mod graph;
mod mapping;

use cairn_sdk::records::{App, Device};
use cairn_sdk::{
    export_connector, json, AuthScheme, Collection, Config, Connector, Descriptor, Error, Field,
    FieldType, Page, Row, Value, View,
};

pub use mapping::map_device;

pub struct Mdm;

impl Connector for Mdm {
    fn describe() -> Descriptor {
        Descriptor {
            id: "microsoft-intune".into(),
            area: "mdm".into(),
            name: "Microsoft Intune".into(),
            version: "0.2.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["auth_url", "graph_url", "tenant_id", "client_id"],
                "properties": {
                    "auth_url": {"type": "string", "pattern": "^https?://", "description": "The identity platform, e.g. https://login.microsoftonline.com"},
                    "graph_url": {"type": "string", "pattern": "^https?://", "description": "Microsoft Graph, e.g. https://graph.microsoft.com (a national cloud's Graph elsewhere)"},
                    "tenant_id": {"type": "string", "minLength": 1, "description": "The Entra tenant (directory) id or domain"},
                    "client_id": {"type": "string", "minLength": 1, "description": "The app registration's application (client) id"},
                    "client_secret": {"type": "string", "description": "A client secret; or leave it out and give a certificate"},
                    "certificate_thumbprint": {"type": "string", "description": "The certificate's SHA-1 thumbprint, hex"},
                    "private_key": {"type": "string", "description": "The certificate's private key, PEM"},
                    "page_size": {"type": "integer", "minimum": 1, "maximum": 1000}
                }
            }),
            secret_fields: vec!["client_secret".into(), "private_key".into()],
            streams: vec![graph::MANAGED_DEVICES.into(), graph::DETECTED_APPS.into()],
            requested_hosts: vec!["{config.auth_url}".into(), "{config.graph_url}".into()],
            auth: AuthScheme::OauthClientCredentials {
                auth_url_field: "auth_url".into(),
                tenant_field: "tenant_id".into(),
                client_id_field: "client_id".into(),
                client_secret_field: Some("client_secret".into()),
                thumbprint_field: Some("certificate_thumbprint".into()),
                private_key_field: Some("private_key".into()),
                scope: "https://graph.microsoft.com/.default".into(),
            },
            collections: vec![
                Collection::of::<Device>(mapping::DEVICES).searching(&[
                    "name",
                    "user",
                    "os_version",
                    "serial_number",
                ]),
                Collection::of::<App>(mapping::APPS).searching(&["name", "vendor"]),
                Collection {
                    name: mapping::DETECTED_APPS.into(),
                    record_type: "detected_app".into(),
                    fields: vec![
                        field("name", FieldType::String, "Application name"),
                        field("version", FieldType::String, "Version"),
                        field("publisher", FieldType::String, "Publisher"),
                        field(
                            "platform",
                            FieldType::String,
                            "Intune's platform of the app",
                        ),
                        field(
                            "device_count",
                            FieldType::Integer,
                            "Devices Intune counts with this app and version",
                        ),
                    ],
                    search: vec!["name".into(), "publisher".into()],
                },
            ],
            views: vec![
                View::List {
                    path: "devices".into(),
                    collection: mapping::DEVICES.into(),
                    summary: "Devices synced from Intune".into(),
                },
                View::Aggregate {
                    path: "apps".into(),
                    collection: mapping::APPS.into(),
                    summary: "Detected apps deduplicated by name, with the devices reporting each"
                        .into(),
                    by: "name".into(),
                },
                View::List {
                    path: "detected-apps".into(),
                    collection: mapping::DETECTED_APPS.into(),
                    summary:
                        "The tenant's detected apps per version, with Intune's own device counts"
                            .into(),
                },
            ],
            actions: vec![],
            // A page's apps are fetched in batches of 20 devices, a few at once.
            max_concurrent_requests: 4,
            config_from: None,
            pull: None,
            webhook: None,
        }
    }

    fn check(config: &Config) -> Result<(), Error> {
        graph::first_device(config).map(|_| ())
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        match stream {
            graph::MANAGED_DEVICES => graph::fetch_devices(config, cursor),
            graph::DETECTED_APPS => graph::fetch_detected_apps(config, cursor),
            other => Err(Error::Config(format!("unknown stream {other}"))),
        }
    }

    fn map_record(stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        match stream {
            graph::MANAGED_DEVICES => map_device(record),
            graph::DETECTED_APPS => mapping::map_detected_app(record),
            other => Err(format!("unknown stream {other}")),
        }
    }
}

fn field(name: &str, field_type: FieldType, description: &str) -> Field {
    Field {
        name: name.into(),
        field_type,
        description: description.into(),
    }
}

export_connector!(Mdm);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
