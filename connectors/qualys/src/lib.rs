//! A scanner connector: Qualys VMDR host list detection
//! (`/api/2.0/fo/asset/host/vm/detection/?action=list`, XML).
//!
//! Area `scanner`. Credentials: HTTP Basic with the user name and password,
//! attached by the host; every request also says `X-Requested-With`. One
//! stream, `hosts`: each page is a truncated host list, the next page the
//! URL of the `WARNING` with code 1980. A host maps to an asset record with
//! its open findings counted by severity and its highest detection score
//! (QDS / 10) as its risk, and each vulnerability detection to a finding;
//! the software information gathered checks 90235 and 45141 list becomes
//! app records and inventory items (source `scanner`).
//! Qualys throttles with HTTP 409 and an XML code (1965: the seconds to
//! wait; 1960: too many calls at once): the connector waits and asks again.

mod detections;
mod mapping;
mod software;
mod xml;

use cairn_sdk::{
    export_connector, json, scanner, AuthScheme, Config, Connector, Descriptor, Error, Page, Row,
    Value,
};

pub use mapping::map_host;

pub struct Qualys;

impl Connector for Qualys {
    fn describe() -> Descriptor {
        Descriptor {
            id: "qualys-vmdr".into(),
            area: "scanner".into(),
            name: "Qualys VMDR".into(),
            version: "0.2.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "username", "password"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://", "description": "Your platform's API server, e.g. https://qualysapi.qg2.apps.qualys.com"},
                    "username": {"type": "string", "minLength": 1},
                    "password": {"type": "string", "minLength": 1},
                    "truncation_limit": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "Hosts a page (default 1000)"},
                    "include_software": {"type": "boolean", "description": "Read installed software from information gathered checks 90235 and 45141 (default true)"}
                }
            }),
            secret_fields: vec!["password".into()],
            streams: vec![detections::HOSTS.into()],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::Basic {
                username_field: "username".into(),
                password_field: "password".into(),
            },
            collections: scanner::collections(&["plugin_id", "device_name"]),
            views: scanner::views(),
            actions: vec![],
            max_concurrent_requests: 1,
            config_from: None,
            pull: None,
            webhook: None,
        }
    }

    fn check(config: &Config) -> Result<(), Error> {
        detections::check(config)
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        if stream != detections::HOSTS {
            return Err(Error::Config(format!("unknown stream {stream}")));
        }
        detections::fetch(config, cursor)
    }

    fn map_record(_stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        map_host(record)
    }
}

export_connector!(Qualys);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
