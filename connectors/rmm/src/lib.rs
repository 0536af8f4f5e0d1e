//! The rmm connector: ConnectWise Automate REST API v1 (`/cwa/api/v1`).
//!
//! Area `rmm`. Remediation (SDK 0.4) schedules Automate scripts, see
//! [`remediation`]. Credentials: token exchange at `{base_url}/apitoken` with
//! `{UserName, Password}` and the optional `ClientID` header; the host does it.
//!
//! Scope: with `scope_group_ids` (or names), computers of those groups,
//! unioned and deduplicated by Id; else with `scope_client_ids` (or names),
//! computers with `condition=Client.Id=<id>` per client; else all computers.
//! Every row carries the computer's client id and scoped group ids, so a
//! narrower scope leaves rows unseen and the host prunes them.

mod mapping;
mod remediation;
mod scope;

use cairn_sdk::records::Device;
use cairn_sdk::{
    export_connector, json, Action, ActionRequest, AuthScheme, Collection, Config, Connector,
    Descriptor, Error, Page, Remediation, RemediationRequest, RemediationState, Row, Value, View,
};

pub use mapping::map_computer;

pub struct Rmm;

impl Connector for Rmm {
    fn describe() -> Descriptor {
        let strings = json!({"type": "array", "items": {"type": "string"}});
        Descriptor {
            id: "connectwise-automate".into(),
            area: "rmm".into(),
            name: "ConnectWise Automate".into(),
            version: "0.3.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "username", "password"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://", "description": "e.g. https://automate.example.com/cwa/api/v1"},
                    "username": {"type": "string", "minLength": 1},
                    "password": {"type": "string", "minLength": 1},
                    "client_id": {"type": "string", "description": "ClientID header value of the integrator"},
                    "scope_client_ids": strings,
                    "scope_client_names": strings,
                    "scope_group_ids": strings,
                    "scope_group_names": strings,
                    "page_size": {"type": "integer", "minimum": 1, "maximum": 1000},
                    "update_script_id": {"type": "integer", "minimum": 1, "description": "The Automate script that updates a package; it receives Package and Version as parameters"}
                }
            }),
            secret_fields: vec!["password".into()],
            streams: vec!["computers".into()],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::TokenExchange {
                base_url_field: "base_url".into(),
                path: "/apitoken".into(),
                username_field: "username".into(),
                password_field: "password".into(),
                client_id_field: Some("client_id".into()),
                client_id_header: Some("ClientID".into()),
                username_key: "UserName".into(),
                password_key: "Password".into(),
                token_key: "AccessToken".into(),
                expiry_key: "ExpirationDate".into(),
            },
            collections: vec![Collection::of::<Device>(mapping::DEVICES).searching(&[
                "name",
                "os_version",
                "user",
            ])],
            views: vec![
                View::List {
                    path: "devices".into(),
                    collection: mapping::DEVICES.into(),
                    summary: "Computers synced from Automate".into(),
                },
                View::ByDeviceName {
                    path: "device-by-name/{device_name}".into(),
                    collection: mapping::DEVICES.into(),
                    summary: "The synced computer of one asset, by name".into(),
                    related: vec![],
                },
            ],
            actions: vec![Action {
                name: "clients".into(),
                method: "GET".into(),
                path: Some("clients".into()),
                summary: "Automate's clients (companies), to scope a sync".into(),
                input_schema: None,
                query_schema: None,
                output_schema: Some(json!({"type": "array", "items": {"type": "object"}})),
                role: "member".into(),
            }],
            // Software is fetched per computer, a page of computers at a time.
            max_concurrent_requests: 8,
            config_from: None,
            pull: None,
            webhook: None,
        }
    }

    fn check(config: &Config) -> Result<(), Error> {
        scope::get_page(config, "Clients", &[], 1, 1).map(|_| ())
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        if stream != "computers" {
            return Err(Error::Config(format!("unknown stream {stream}")));
        }
        scope::fetch_computers(config, cursor)
    }

    fn map_record(_stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        map_computer(record)
    }

    fn invoke(config: &Config, request: &ActionRequest) -> Result<Value, Error> {
        match request.action.as_str() {
            "clients" => Ok(Value::Array(scope::all_pages(config, "Clients", &[])?)),
            other => Err(Error::NotFound(format!("unsupported action: {other}"))),
        }
    }

    fn remediations() -> Vec<Remediation> {
        remediation::declared()
    }

    fn remediate(config: &Config, request: &RemediationRequest) -> Result<String, Error> {
        remediation::remediate(config, request)
    }

    fn remediation_status(config: &Config, handle: &str) -> Result<RemediationState, Error> {
        remediation::status(config, handle)
    }
}

export_connector!(Rmm);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
