//! A scanner connector: Tenable Vulnerability Management, through its
//! vulnerability export (`POST /vulns/export`, poll its status, read each
//! chunk as it becomes available).
//!
//! Area `scanner`. Credentials: `X-ApiKeys: accessKey=...;secretKey=...`,
//! attached by the host from two secret fields. One stream, `vulns`: each
//! page is one export chunk (a chunk over 5,000 findings is handed over in
//! slices), and the cursor names the export, the chunks done and the slice
//! reached, so a sync killed mid-export resumes the same export. A finding maps
//! to a finding record and its asset to an asset (device) record, counted
//! by severity with its highest risk (VPR, else CVSS) as its risk score;
//! the output of the software enumeration plugins (20811, 22869, 83991) to
//! app records and inventory items (source `scanner`).

mod export;
mod mapping;
mod software;

use cairn_sdk::{
    export_connector, json, scanner, AuthScheme, Config, Connector, Descriptor, Error, Page, Row,
    Value,
};

pub use mapping::map_vuln;

pub struct Tenable;

impl Connector for Tenable {
    fn describe() -> Descriptor {
        Descriptor {
            id: "tenable-vm".into(),
            area: "scanner".into(),
            name: "Tenable Vulnerability Management".into(),
            version: "0.2.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "access_key", "secret_key"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://", "description": "e.g. https://cloud.tenable.com"},
                    "access_key": {"type": "string", "minLength": 1},
                    "secret_key": {"type": "string", "minLength": 1},
                    "num_assets": {"type": "integer", "minimum": 50, "maximum": 5000, "description": "Assets per export chunk (default 50)"},
                    "poll_seconds": {"type": "number", "minimum": 0, "maximum": 60, "description": "Wait between export status polls (default 5)"}
                }
            }),
            secret_fields: vec!["access_key".into(), "secret_key".into()],
            streams: vec![export::VULNS.into()],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::HeaderTemplate {
                header: "X-ApiKeys".into(),
                template: "accessKey={access_key};secretKey={secret_key}".into(),
            },
            collections: scanner::collections(&["title", "device_name"]),
            views: scanner::views(),
            actions: vec![],
            max_concurrent_requests: 1,
            config_from: None,
            pull: None,
            webhook: None,
        }
    }

    fn check(config: &Config) -> Result<(), Error> {
        export::check(config)
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        if stream != export::VULNS {
            return Err(Error::Config(format!("unknown stream {stream}")));
        }
        export::fetch(config, cursor)
    }

    fn map_record(_stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        map_vuln(record)
    }
}

export_connector!(Tenable);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
