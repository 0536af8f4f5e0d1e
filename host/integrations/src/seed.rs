//! Startup seeding: a fresh deployment can sync at once. For each area a
//! loaded connector serves whose config is empty for the default tenant,
//! the config from deployment settings is stored. Existing configs are
//! never overwritten.
//!
//! A connector may declare that its config is derived from another area's
//! seed (`config_from`: an app registration one product reuses for
//! another); the host applies that declaration without knowing either.

use serde_json::{Map, Value};

use super::storage;
use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_core::secrets::SecretBox;
use cairn_plugins::{ConfigFrom, Plugins};

/// The seed configs from settings: area -> config object.
pub fn seed_configs(raw: &str) -> anyhow::Result<Map<String, Value>> {
    if raw.trim().is_empty() {
        return Ok(Map::new());
    }
    let Value::Object(seeds) = serde_json::from_str::<Value>(raw)? else {
        anyhow::bail!("seed_configs must be a JSON object of area -> config");
    };
    Ok(seeds)
}

/// `seeds` plus, for each loaded connector declaring `config_from` whose
/// area has no seed of its own, the config derived from the other area's.
pub fn with_derived(plugins: &Plugins, mut seeds: Map<String, Value>) -> Map<String, Value> {
    for connector in &plugins.connectors {
        let descriptor = &connector.descriptor;
        let Some(from) = &descriptor.config_from else {
            continue;
        };
        if seeds.contains_key(&descriptor.area) {
            continue;
        }
        if let Some(Value::Object(source)) = seeds.get(&from.area) {
            let derived = derive(from, source);
            if !derived.is_empty() {
                seeds.insert(descriptor.area.clone(), Value::Object(derived));
            }
        }
    }
    seeds
}

fn derive(from: &ConfigFrom, source: &Map<String, Value>) -> Map<String, Value> {
    let mut derived = Map::new();
    for field in &from.fields {
        if let Some(value) = source.get(field) {
            derived.insert(field.clone(), value.clone());
        }
    }
    if let Some(field) = &from.private_key_field {
        if let Some(key) = source
            .get(field)
            .and_then(Value::as_str)
            .and_then(private_key_block)
        {
            derived.insert(field.clone(), Value::String(key));
        }
    }
    derived
}

/// The private-key block of a PEM bundle (certificate and key together).
pub fn private_key_block(pem: &str) -> Option<String> {
    let begin = pem.find("-----BEGIN")?;
    let mut rest = &pem[begin..];
    loop {
        let header_end = rest.find('\n')?;
        let header = &rest[..header_end];
        let label = header
            .trim()
            .trim_start_matches("-----BEGIN ")
            .trim_end_matches("-----");
        let end_marker = format!("-----END {label}-----");
        let end = rest.find(&end_marker)? + end_marker.len();
        if label.contains("PRIVATE KEY") {
            return Some(rest[..end].to_string());
        }
        rest = &rest[end..];
        rest = &rest[rest.find("-----BEGIN")?..];
    }
}

/// Stores each seed whose integration is loaded and empty for `tenant`.
/// Returns the ids seeded.
pub async fn seed_default_tenant(
    db: &Db,
    secret_box: &SecretBox,
    plugins: &Plugins,
    tenant: &TenantId,
    seeds: &Map<String, Value>,
) -> anyhow::Result<Vec<String>> {
    let mut seeded = vec![];
    for (integration, seed) in seeds {
        let named = seed.get("connector").and_then(Value::as_str);
        // Several connectors may serve the area: a seed naming none is for
        // the one whose schema alone accepts it.
        let chosen = super::areas::resolve(plugins, integration, named)
            .ok()
            .or_else(|| {
                let fields = seed.as_object().filter(|_| named.is_none())?;
                super::config::accepting(plugins, integration, fields)
            });
        let Some(connector) = chosen else {
            tracing::warn!(%integration, "seed config for an area no loaded connector serves (or several do, and the seed names none and fits not exactly one of their schemas); skipped");
            continue;
        };
        if storage::config(db, secret_box, tenant, integration)
            .await?
            .is_some()
        {
            continue;
        }
        let Value::Object(fields) = seed else {
            tracing::warn!(%integration, "seed config is not an object; skipped");
            continue;
        };
        let mut settings = fields.clone();
        settings.remove("connector");
        let mut secrets = Map::new();
        for field in &connector.descriptor.secret_fields {
            if let Some(value) = settings.remove(field) {
                secrets.insert(field.clone(), value);
            }
        }
        storage::save_config(
            db,
            secret_box,
            tenant,
            integration,
            storage::NewConfig {
                connector: &connector.descriptor.id,
                settings: &Value::Object(settings),
                secrets: &Value::Object(secrets),
                switching: false,
            },
        )
        .await?;
        tracing::info!(%integration, tenant_id = tenant.as_str(), "seeded integration config from settings");
        seeded.push(integration.clone());
    }
    Ok(seeded)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUNDLE: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n\
                          -----BEGIN PRIVATE KEY-----\nMIIE\nabc\n-----END PRIVATE KEY-----\n";

    #[test]
    fn the_private_key_block_is_extracted_from_a_bundle() {
        assert_eq!(
            private_key_block(BUNDLE).as_deref(),
            Some("-----BEGIN PRIVATE KEY-----\nMIIE\nabc\n-----END PRIVATE KEY-----")
        );
        assert_eq!(
            private_key_block("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"),
            None
        );
        assert_eq!(private_key_block("not pem"), None);
    }

    #[test]
    fn a_declared_config_source_copies_its_fields_and_key_block() {
        let from = ConfigFrom {
            area: "first".into(),
            fields: vec!["tenant_id".into(), "client_id".into(), "thumbprint".into()],
            private_key_field: Some("private_key".into()),
        };
        let source = serde_json::json!({
            "tenant_id": "t-1", "client_id": "c-1", "thumbprint": "AB12",
            "private_key": BUNDLE, "auth_url": "https://login.example"
        });
        let derived = derive(&from, source.as_object().unwrap());
        assert_eq!(derived["tenant_id"], "t-1");
        assert_eq!(derived["thumbprint"], "AB12");
        assert!(derived["private_key"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!(!derived["private_key"]
            .as_str()
            .unwrap()
            .contains("CERTIFICATE"));
        assert!(derived.get("auth_url").is_none(), "only declared fields");
        assert!(seed_configs("[1]").is_err());
    }
}
