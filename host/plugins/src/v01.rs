//! Components built against the frozen v0.1 contract (`cairn:plugin@0.1.0`)
//! keep loading and syncing: their host imports are served by the current
//! ones, and what they return is converted to the current types here, the
//! only place that knows the old shapes.
//!
//! A v0.1 descriptor is upgraded to the v0.2 shape: its id is its area;
//! each record kind becomes a collection of that name and record type; the
//! views v0.1 hosts served (`devices`, `device-by-name/{device_name}`) are
//! declared for it; each action name becomes `GET <name>`; and the token
//! exchange keeps the request and answer keys v0.1 documented.

use serde_json::{json, Value};

use super::runtime::v01::{connector_world, wit as old};
use super::runtime::{connector_world::cairn::plugin::types as wit, PluginState};

/// The record kinds of the v0.1 contract, each now a collection.
const KINDS: &[&str] = &["device", "user", "threat", "finding", "ticket"];

/// The login and answer keys the v0.1 contract fixed for token exchange.
const TOKEN_EXCHANGE_KEYS: [(&str, &str); 4] = [
    ("username_key", "UserName"),
    ("password_key", "Password"),
    ("token_key", "AccessToken"),
    ("expiry_key", "ExpirationDate"),
];

/// A v0.1 descriptor in the v0.2 shape.
pub fn upgrade_descriptor(mut descriptor: Value) -> Value {
    let Some(object) = descriptor.as_object_mut() else {
        return descriptor;
    };
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    object.insert("area".into(), id);
    let actions: Vec<Value> = object
        .get("actions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|name| {
            json!({"name": name, "method": "GET", "path": name, "role": "member",
                   "summary": format!("The connector's live read `{name}`")})
        })
        .collect();
    object.insert("actions".into(), Value::Array(actions));
    let collections: Vec<Value> = KINDS
        .iter()
        .map(|kind| json!({"name": kind, "record_type": kind, "fields": []}))
        .collect();
    object.insert("collections".into(), Value::Array(collections));
    object.insert(
        "views".into(),
        json!([
            {"type": "list", "path": "devices", "collection": "device",
             "summary": "Devices the integration synced"},
            {"type": "by_device_name", "path": "device-by-name/{device_name}", "collection": "device",
             "summary": "The synced record of one asset, by device name"}
        ]),
    );
    if let Some(auth) = object.get_mut("auth").and_then(Value::as_object_mut) {
        if auth.get("type").and_then(Value::as_str) == Some("token_exchange") {
            for (key, value) in TOKEN_EXCHANGE_KEYS {
                auth.entry(key).or_insert_with(|| json!(value));
            }
        }
    }
    descriptor
}

fn kind_label(kind: old::RecordKind) -> &'static str {
    match kind {
        old::RecordKind::Device => "device",
        old::RecordKind::User => "user",
        old::RecordKind::Threat => "threat",
        old::RecordKind::Finding => "finding",
        old::RecordKind::Ticket => "ticket",
    }
}

pub fn row(row: old::Row) -> wit::Row {
    match row {
        old::Row::Inventory(i) => wit::Row::Inventory(wit::InventoryItem {
            device_name: i.device_name,
            device_id: i.device_id,
            os_platform: i.os_platform,
            os_version: i.os_version,
            user_email: i.user_email,
            user_name: i.user_name,
            application_name: i.application_name,
            vendor: i.vendor,
            version: i.version,
            publisher: i.publisher,
            client_id: i.client_id,
            group_ids: i.group_ids,
        }),
        old::Row::Record(r) => wit::Row::Record(wit::SourceRecord {
            collection: kind_label(r.kind).into(),
            key: r.key,
            device_name: r.device_name,
            client_id: r.client_id,
            group_ids: r.group_ids,
            fields: "{}".into(),
            body: r.body,
        }),
    }
}

pub fn rows(mapped: Vec<Result<Vec<old::Row>, String>>) -> Vec<Result<Vec<wit::Row>, String>> {
    mapped
        .into_iter()
        .map(|result| result.map(|rows| rows.into_iter().map(row).collect()))
        .collect()
}

pub fn error(err: old::PluginError) -> wit::PluginError {
    match err {
        old::PluginError::Config(m) => wit::PluginError::Config(m),
        old::PluginError::Auth(a) => wit::PluginError::Auth(wit::AuthFailure {
            status: a.status,
            message: a.message,
            permission_hint: a.permission_hint,
        }),
        old::PluginError::RateLimited(s) => wit::PluginError::RateLimited(s),
        old::PluginError::Transient(m) => wit::PluginError::Transient(m),
        old::PluginError::Upstream(m) => wit::PluginError::Upstream(m),
    }
}

/// A current error as v0.1 knew errors: the two new cases become
/// `upstream`.
fn error_to_old(err: wit::PluginError) -> old::PluginError {
    match err {
        wit::PluginError::Config(m) => old::PluginError::Config(m),
        wit::PluginError::Auth(a) => old::PluginError::Auth(old::AuthFailure {
            status: a.status,
            message: a.message,
            permission_hint: a.permission_hint,
        }),
        wit::PluginError::RateLimited(s) => old::PluginError::RateLimited(s),
        wit::PluginError::Transient(m) => old::PluginError::Transient(m),
        wit::PluginError::Upstream(m) | wit::PluginError::NotFound(m) => {
            old::PluginError::Upstream(m)
        }
        wit::PluginError::InvalidInput(p) => {
            old::PluginError::Upstream(format!("{}: {}", p.field, p.message))
        }
    }
}

fn headers_from_old(headers: Vec<old::Header>) -> Vec<wit::Header> {
    headers
        .into_iter()
        .map(|h| wit::Header {
            name: h.name,
            value: h.value,
        })
        .collect()
}

impl old::Host for PluginState {}

impl connector_world::cairn::plugin::host::Host for PluginState {
    async fn send(
        &mut self,
        request: old::HttpRequest,
    ) -> Result<old::HttpResponse, old::PluginError> {
        let request = wit::HttpRequest {
            method: request.method,
            url: request.url,
            headers: headers_from_old(request.headers),
            body: request.body,
        };
        let answer =
            super::runtime::connector_world::cairn::plugin::host::Host::send(self, request)
                .await
                .map_err(error_to_old)?;
        Ok(old::HttpResponse {
            status: answer.status,
            headers: answer
                .headers
                .into_iter()
                .map(|h| old::Header {
                    name: h.name,
                    value: h.value,
                })
                .collect(),
            body: answer.body,
        })
    }

    async fn log(&mut self, level: old::LogLevel, message: String) {
        let level = match level {
            old::LogLevel::Trace => wit::LogLevel::Trace,
            old::LogLevel::Debug => wit::LogLevel::Debug,
            old::LogLevel::Info => wit::LogLevel::Info,
            old::LogLevel::Warn => wit::LogLevel::Warn,
            old::LogLevel::Error => wit::LogLevel::Error,
        };
        self.write_log(level, message);
    }

    async fn now_ms(&mut self) -> u64 {
        cairn_core::db::now_ms().max(0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v01_descriptor_becomes_an_area_with_collections_views_and_get_actions() {
        let upgraded = upgrade_descriptor(json!({
            "id": "legacy", "actions": ["clients"],
            "auth": {"type": "token_exchange", "base_url_field": "b", "path": "/t",
                     "username_field": "u", "password_field": "p"}
        }));
        assert_eq!(upgraded["area"], "legacy");
        assert_eq!(upgraded["actions"][0]["method"], "GET");
        assert_eq!(upgraded["actions"][0]["path"], "clients");
        assert_eq!(upgraded["collections"].as_array().unwrap().len(), 5);
        assert_eq!(upgraded["views"][1]["path"], "device-by-name/{device_name}");
        assert_eq!(upgraded["auth"]["token_key"], "AccessToken");
    }
}
