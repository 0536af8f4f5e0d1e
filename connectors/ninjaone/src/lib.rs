//! The second rmm connector: NinjaOne's public API v2 (`{base_url}/v2`).
//!
//! Area `rmm`, beside ConnectWise Automate; a tenant names it with
//! `"connector": "ninjaone"` (or sends its fields, which only it accepts).
//! Credentials: an API client's id and secret, exchanged by the host at
//! `{base_url}/ws/oauth/token` (client credentials, scopes `monitoring
//! management`). One stream, `devices`: pages of `/v2/devices-detailed`
//! (`pageSize`, `after` = the last device id of the page before, `df` =
//! `org in (...)` when scoped to organizations), and each device's
//! `/v2/device/{id}/software`. Remediation runs NinjaOne scripts on a
//! device and reads their outcome from its activities, see [`remediation`].

mod mapping;
mod remediation;

use cairn_sdk::records::Device;
use cairn_sdk::{
    base_url, export_connector, http, json, text_of, Action, ActionRequest, AuthScheme, Collection,
    Config, Connector, Descriptor, Error, Page, Remediation, RemediationRequest, RemediationState,
    Row, Value, View,
};

pub use mapping::map_device;

const DEFAULT_PAGE_SIZE: u64 = 200;

pub struct NinjaOne;

fn page_size(config: &Config) -> u64 {
    config["page_size"]
        .as_u64()
        .unwrap_or(DEFAULT_PAGE_SIZE)
        .clamp(1, 1000)
}

/// The device filter of the organizations the config scopes to, if any:
/// NinjaOne's `df` syntax, `org in (1,2)`.
pub fn device_filter(config: &Config) -> Result<Option<String>, Error> {
    let ids: Vec<String> = config["scope_organization_ids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(text_of)
        .collect();
    if ids.is_empty() {
        return Ok(None);
    }
    if let Some(bad) = ids.iter().find(|id| id.parse::<u64>().is_err()) {
        return Err(Error::InvalidInput {
            field: "scope_organization_ids".into(),
            message: format!("{bad:?} is not a NinjaOne organization id"),
        });
    }
    Ok(Some(format!("org in ({})", ids.join(","))))
}

/// A JSON array answer, or an upstream error naming `what`.
fn array(answer: Value, what: &str) -> Result<Vec<Value>, Error> {
    match answer {
        Value::Array(items) => Ok(items),
        _ => Err(Error::Upstream(format!("{what}: expected a JSON array"))),
    }
}

/// One page of devices after the device id `after`, each with its
/// software attached as `_Software`.
fn fetch_devices(config: &Config, after: Option<&str>) -> Result<Page, Error> {
    let base = base_url(config, "base_url")?;
    let size = page_size(config);
    let mut url = format!("{base}/v2/devices-detailed?pageSize={size}");
    if let Some(after) = after {
        url.push_str(&format!("&after={}", http::encode(after)));
    }
    if let Some(filter) = device_filter(config)? {
        url.push_str(&format!("&df={}", http::encode(&filter)));
    }
    let mut devices = array(http::get_json(&url)?, "devices-detailed")?;
    let ids: Vec<String> = devices
        .iter()
        .map(|d| text_of(&d["id"]).ok_or_else(|| Error::Upstream("a device has no id".into())))
        .collect::<Result<_, _>>()?;
    let requests: Vec<http::Request> = ids
        .iter()
        .map(|id| http::Request::get_json(&format!("{base}/v2/device/{id}/software")))
        .collect();
    for ((device, id), answer) in devices.iter_mut().zip(&ids).zip(http::send_all(&requests)) {
        device["_Software"] =
            Value::Array(array(answer?.json()?, &format!("device {id} software"))?);
    }
    // A full page may have more after it; the cursor is its last id.
    let next_cursor = (devices.len() as u64 == size)
        .then(|| ids.last().cloned())
        .flatten();
    Ok(Page {
        records: devices,
        next_cursor,
    })
}

/// Every organization, paged by id.
fn organizations(config: &Config) -> Result<Vec<Value>, Error> {
    let base = base_url(config, "base_url")?;
    let size = page_size(config);
    let mut all = vec![];
    let mut after: Option<String> = None;
    loop {
        let mut url = format!("{base}/v2/organizations?pageSize={size}");
        if let Some(after) = &after {
            url.push_str(&format!("&after={after}"));
        }
        let page = array(http::get_json(&url)?, "organizations")?;
        let full = page.len() as u64 == size;
        after = page.last().and_then(|o| text_of(&o["id"]));
        all.extend(page);
        if !full || after.is_none() {
            return Ok(all);
        }
    }
}

impl Connector for NinjaOne {
    fn describe() -> Descriptor {
        Descriptor {
            id: "ninjaone".into(),
            area: "rmm".into(),
            name: "NinjaOne".into(),
            version: "0.1.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "client_id", "client_secret"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://", "description": "Your NinjaOne instance, e.g. https://app.ninjarmm.com or https://eu.ninjarmm.com"},
                    "client_id": {"type": "string", "minLength": 1, "description": "The API client's id (Administration > Apps > API, client credentials grant)"},
                    "client_secret": {"type": "string", "minLength": 1},
                    "scope_organization_ids": {"type": "array", "items": {"type": ["string", "integer"]}, "description": "Only devices of these organizations"},
                    "page_size": {"type": "integer", "minimum": 1, "maximum": 1000},
                    "update_script_id": {"type": "integer", "minimum": 1, "description": "The NinjaOne script that updates a package; it receives -Package and -Version"},
                    "run_as": {"type": "string", "minLength": 1, "description": "The credential NinjaOne runs scripts as (default system)"}
                }
            }),
            secret_fields: vec!["client_secret".into()],
            streams: vec!["devices".into()],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::ClientCredentials {
                token_url: "{base_url}/ws/oauth/token".into(),
                client_id_field: "client_id".into(),
                client_secret_field: "client_secret".into(),
                scope: "monitoring management".into(),
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
                    summary: "Devices synced from NinjaOne".into(),
                },
                View::ByDeviceName {
                    path: "device-by-name/{device_name}".into(),
                    collection: mapping::DEVICES.into(),
                    summary: "The synced device of one asset, by name".into(),
                    related: vec![],
                },
            ],
            actions: vec![Action {
                name: "clients".into(),
                method: "GET".into(),
                path: Some("clients".into()),
                summary: "NinjaOne's organizations, to scope a sync".into(),
                input_schema: None,
                query_schema: None,
                output_schema: Some(json!({"type": "array", "items": {"type": "object"}})),
                role: "member".into(),
            }],
            // Software is read per device, a page of devices at a time.
            max_concurrent_requests: 8,
            config_from: None,
            pull: None,
            webhook: None,
        }
    }

    fn check(config: &Config) -> Result<(), Error> {
        let base = base_url(config, "base_url")?;
        device_filter(config)?;
        array(
            http::get_json(&format!("{base}/v2/organizations?pageSize=1"))?,
            "organizations",
        )
        .map(|_| ())
    }

    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
        if stream != "devices" {
            return Err(Error::Config(format!("unknown stream {stream}")));
        }
        fetch_devices(config, cursor)
    }

    fn map_record(_stream: &str, record: &Value) -> Result<Vec<Row>, String> {
        map_device(record)
    }

    fn invoke(config: &Config, request: &ActionRequest) -> Result<Value, Error> {
        match request.action.as_str() {
            "clients" => Ok(Value::Array(organizations(config)?)),
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

export_connector!(NinjaOne);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn organizations_scope_the_device_filter() {
        assert_eq!(device_filter(&json!({})).unwrap(), None);
        assert_eq!(
            device_filter(&json!({"scope_organization_ids": [7, "12"]})).unwrap(),
            Some("org in (7,12)".into())
        );
        assert!(matches!(
            device_filter(&json!({"scope_organization_ids": ["7) or (1"]})),
            Err(Error::InvalidInput { field, .. }) if field == "scope_organization_ids"
        ));
    }

    #[test]
    fn the_descriptor_names_its_token_url_and_secret() {
        let descriptor = cairn_sdk::serde_json::to_value(NinjaOne::describe()).unwrap();
        assert_eq!(descriptor["area"], "rmm");
        assert_eq!(descriptor["auth"]["type"], "client_credentials");
        assert_eq!(descriptor["auth"]["token_url"], "{base_url}/ws/oauth/token");
        assert_eq!(descriptor["secret_fields"], json!(["client_secret"]));
    }
}
