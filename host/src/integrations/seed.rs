//! Startup seeding: a fresh deployment can sync at once. For each loaded
//! integration whose config is empty for the default tenant, the config from
//! deployment settings is stored. Existing configs are never overwritten.
//! The directory config reuses the device-management (mdm) app registration:
//! tenant id, client id, certificate thumbprint and the private-key block of
//! its PEM.

use serde_json::{Map, Value};

use super::{storage, SecretBox};
use crate::auth::TenantId;
use crate::db::Db;
use crate::plugins::Plugins;

/// Fields of the mdm app registration the directory integration shares.
const SHARED_REGISTRATION: &[&str] = &["auth_method", "tenant_id", "client_id", "thumbprint"];

/// The seed configs from settings, with the directory's derived from mdm's
/// when it has none of its own.
pub fn seed_configs(raw: &str) -> anyhow::Result<Map<String, Value>> {
    if raw.trim().is_empty() {
        return Ok(Map::new());
    }
    let Value::Object(mut seeds) = serde_json::from_str::<Value>(raw)? else {
        anyhow::bail!("seed_configs must be a JSON object of integration id -> config");
    };
    if !seeds.contains_key("directory") {
        if let Some(Value::Object(mdm)) = seeds.get("mdm") {
            let mut directory = Map::new();
            for field in SHARED_REGISTRATION {
                if let Some(value) = mdm.get(*field) {
                    directory.insert(field.to_string(), value.clone());
                }
            }
            if let Some(key) = mdm
                .get("private_key")
                .and_then(Value::as_str)
                .and_then(private_key_block)
            {
                directory.insert("private_key".into(), Value::String(key));
            }
            if !directory.is_empty() {
                seeds.insert("directory".into(), Value::Object(directory));
            }
        }
    }
    Ok(seeds)
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
        let Ok(connector) = super::areas::resolve(plugins, integration, named) else {
            tracing::warn!(%integration, "seed config for an area no loaded connector serves (or several do and the seed names none); skipped");
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
    fn directory_reuses_the_mdm_registration() {
        let raw = serde_json::json!({"mdm": {
            "auth_method": "certificate", "tenant_id": "t-1", "client_id": "c-1",
            "thumbprint": "AB12", "private_key": BUNDLE, "auth_url": "https://login.example"
        }})
        .to_string();
        let seeds = seed_configs(&raw).unwrap();
        let directory = &seeds["directory"];
        assert_eq!(directory["tenant_id"], "t-1");
        assert_eq!(directory["client_id"], "c-1");
        assert_eq!(directory["thumbprint"], "AB12");
        assert!(directory["private_key"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!(directory.get("auth_url").is_none());
        // A directory seed of its own wins.
        let own =
            serde_json::json!({"mdm": {"client_id": "c-1"}, "directory": {"client_id": "d-9"}})
                .to_string();
        assert_eq!(seed_configs(&own).unwrap()["directory"]["client_id"], "d-9");
        assert!(seed_configs("[1]").is_err());
    }
}
