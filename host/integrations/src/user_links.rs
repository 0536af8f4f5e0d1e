//! A directory user joined to what else names them (spec "Directory user").
//! The match set is the user's key, UPN, mail and aliases, lowercased. The
//! user rows of other sources (CSV rosters) whose e-mail is in the set are
//! attached, with their `flags` folded onto the user; the devices whose
//! user is in the set, from device records of any area and from inventory
//! rows, are the user's linked devices.

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};

use super::collections::{self, StoredRecord};
use cairn_core::db::Db;
use cairn_core::ids::TenantId;

/// The record type whose views get the joins.
pub const USER: &str = "user";

/// The lowercased addresses that name the user keyed `key` with `fields`.
fn match_set(key: &str, fields: &Value) -> Vec<String> {
    let mut set: Vec<String> = std::iter::once(key)
        .chain(fields["upn"].as_str())
        .chain(fields["mail"].as_str())
        .chain(
            fields["aliases"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str),
        )
        .map(|address| cairn_core::db::lower(address.trim()))
        .filter(|address| !address.is_empty())
        .collect();
    set.sort();
    set.dedup();
    set
}

/// Documents what [`attach`] adds, in the schema of a user's view.
pub fn document(schema: &mut Value) {
    schema["properties"]["flags"] = json!({"type": "object",
        "description": "Enrichment flags of the user rows of other sources (CSV rosters) matched by UPN, mail or alias; a flag any row sets stays set"});
    schema["properties"]["enrichment"] = json!({"type": "array",
        "description": "The matched user rows of other sources (at most 1000)",
        "items": {"type": "object", "properties": {
            "source": {"type": "string"}, "key": {"type": "string"}, "record": {"type": "object"}}}});
    schema["properties"]["linked_devices"] = json!({"type": "array",
        "description": "Devices whose user is this user (by UPN, mail or alias, ignoring case): device records of any area and inventory rows",
        "items": {"type": "object", "properties": {
            "device_name": {"type": "string"},
            "sources": {"type": "array", "items": {"type": "string"}}}}});
}

/// Adds `flags`, `enrichment` and `linked_devices` to `answer`, the view
/// of `record` of `area`.
pub async fn attach(
    db: &Db,
    tenant: &TenantId,
    area: &str,
    record: &StoredRecord,
    answer: &mut Map<String, Value>,
) -> sqlx::Result<()> {
    let set = match_set(&record.record_key, &record.fields);
    let rows = collections::of_type_by_keys(db, tenant, USER, area, &set).await?;
    let mut flags = Map::new();
    let mut enrichment = Vec::with_capacity(rows.len());
    for row in rows {
        for (name, value) in row.body["flags"].as_object().into_iter().flatten() {
            // A flag one roster sets stays set whatever another says.
            if flags.get(name) != Some(&Value::Bool(true)) {
                flags.insert(name.clone(), value.clone());
            }
        }
        enrichment.push(json!({"source": row.source, "key": row.record_key, "record": row.body.0}));
    }
    // Device name (as first seen) -> the sources that link it.
    let mut devices: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    let mut link = |name: String, source: String| {
        let entry = devices
            .entry(cairn_core::db::lower(&name))
            .or_insert_with(|| (name, Vec::new()));
        if !entry.1.contains(&source) {
            entry.1.push(source);
        }
    };
    for device in collections::of_type_by_field(db, tenant, "device", "user", &set).await? {
        if let Some(name) = device.device_name {
            link(name, device.source);
        }
    }
    for (name, source) in cairn_inventory::storage::devices_of_users(db, tenant, &set).await? {
        link(name, source);
    }
    let linked: Vec<Value> = devices
        .into_values()
        .map(|(name, sources)| json!({"device_name": name, "sources": sources}))
        .collect();
    answer.insert("flags".into(), Value::Object(flags));
    answer.insert("enrichment".into(), Value::Array(enrichment));
    answer.insert("linked_devices".into(), Value::Array(linked));
    Ok(())
}

pub use cairn_inventory::devices::DirectoryUser;

/// The integrations' user collections as the devices' directory
/// ([`cairn_inventory::devices::UserDirectory`]).
pub struct Directories(pub std::sync::Arc<cairn_plugins::LivePlugins>);

#[async_trait::async_trait]
impl cairn_inventory::devices::UserDirectory for Directories {
    async fn users_named(
        &self,
        db: &Db,
        tenant: &TenantId,
        addresses: &[String],
    ) -> sqlx::Result<HashMap<String, DirectoryUser>> {
        directory_users_named(db, &self.0.current(), tenant, addresses).await
    }
}

/// The handle the composition root gives the device routes.
pub fn directory(
    plugins: std::sync::Arc<cairn_plugins::LivePlugins>,
) -> cairn_inventory::devices::Directory {
    cairn_inventory::devices::Directory(std::sync::Arc::new(Directories(plugins)))
}

/// The directory users (user records of the areas whose connectors declare
/// a user collection) named by `addresses`, by lowercased address: a user is
/// named by their key, mail and aliases.
pub async fn directory_users_named(
    db: &Db,
    plugins: &cairn_plugins::Plugins,
    tenant: &TenantId,
    addresses: &[String],
) -> sqlx::Result<HashMap<String, DirectoryUser>> {
    let mut named = HashMap::new();
    let mut areas: Vec<String> = plugins
        .connectors
        .iter()
        .filter(|c| {
            c.descriptor
                .collections
                .iter()
                .any(|k| k.record_type == USER)
        })
        .map(|c| c.descriptor.area.clone())
        .collect();
    areas.dedup();
    if areas.is_empty() || addresses.is_empty() {
        return Ok(named);
    }
    for user in collections::users_named(db, tenant, &areas, addresses).await? {
        let directory_user = DirectoryUser {
            upn: user.record_key.clone(),
            display_name: user.fields["display_name"].as_str().map(String::from),
            source: user.source.clone(),
        };
        for address in match_set(&user.record_key, &user.fields) {
            named
                .entry(address)
                .or_insert_with(|| directory_user.clone());
        }
    }
    Ok(named)
}
