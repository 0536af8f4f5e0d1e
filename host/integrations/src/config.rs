//! A tenant's config for an area: which connector it uses, validation
//! against that connector's schema (secrets masked in messages), secrets
//! kept when sent back redacted, and switching products.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::storage::{self, NewConfig, StoredConfig};
use super::{areas, REDACTED};
use cairn_core::db::to_rfc3339;
use cairn_core::http::error::{ApiError, ApiResult};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_plugins::outbound::HostPolicy;
use cairn_plugins::{LoadedConnector, Plugins};

#[derive(Serialize, ToSchema)]
pub struct ConfigView {
    /// The area.
    integration: String,
    /// The connector the config uses (null until configured when several
    /// serve the area).
    connector: Option<String>,
    configured: bool,
    /// The stored config; secret fields read `********`.
    #[schema(value_type = Object)]
    config: Value,
    updated_at: Option<String>,
    /// True when the config is the tenant's partner's, shared with it: the
    /// partner's settings with this customer's scope over them; the
    /// secrets stay the partner's. Saving a config of the tenant's own
    /// replaces the share.
    shared_by_partner: bool,
}

pub fn redacted_view(
    area: &str,
    connector: Option<&LoadedConnector>,
    stored: Option<&StoredConfig>,
) -> ConfigView {
    let connector_id = connector.map(|c| c.descriptor.id.clone());
    let Some(stored) = stored else {
        return ConfigView {
            integration: area.to_string(),
            connector: connector_id,
            configured: false,
            config: Value::Object(Map::new()),
            updated_at: None,
            shared_by_partner: false,
        };
    };
    let mut config = stored.settings.clone();
    if let (Some(target), Some(secrets)) = (config.as_object_mut(), stored.secrets.as_object()) {
        for (field, value) in secrets {
            if !value.is_null() && value != "" {
                target.insert(field.clone(), Value::String(REDACTED.into()));
            }
        }
    }
    ConfigView {
        integration: area.to_string(),
        connector: connector_id,
        configured: true,
        config,
        updated_at: Some(to_rfc3339(stored.updated_at)),
        shared_by_partner: stored.shared_from.is_some(),
    }
}

/// Whether stored settings not named in a save are kept.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Merge {
    /// The body is the whole config.
    Replace,
    /// The body adds to or overrides the stored config.
    Update,
}

/// The connector a save uses: the one named in the body, else the one the
/// stored config uses, else the area's only one, else the one connector of
/// the area whose config schema accepts the body ([`accepting`]).
fn chosen_connector(
    plugins: &Plugins,
    area: &str,
    named: Option<Value>,
    existing: Option<&StoredConfig>,
    body: &Map<String, Value>,
) -> ApiResult<Arc<LoadedConnector>> {
    let serving = || areas::serving_ids(plugins, area);
    match named {
        Some(Value::String(id)) => plugins
            .area_connectors(area)
            .into_iter()
            .find(|c| c.descriptor.id == id)
            .cloned()
            .ok_or_else(|| {
                ApiError::validation(
                    "connector",
                    format!(
                        "no loaded connector {id:?} serves {area}; these do: {}",
                        serving()
                    ),
                )
            }),
        Some(_) => Err(ApiError::validation("connector", "must be a connector id")),
        None => existing
            .and_then(|e| areas::resolve(plugins, area, e.connector.as_deref()).ok())
            .map_or_else(
                || {
                    areas::resolve(plugins, area, None)
                        .or_else(|_| accepting(plugins, area, body).ok_or(()))
                        .map_err(|_| {
                            ApiError::validation(
                                "connector",
                                format!(
                                    "several connectors serve {area} and the config does not say \
                                     which; name one of: {}",
                                    serving()
                                ),
                            )
                        })
                },
                Ok,
            ),
    }
}

/// Validates and stores a config for `area`; secret fields go to the
/// encrypted part, and a secret sent as `********` keeps its stored value.
pub async fn store_config(
    state: &AppState,
    caller: &Caller,
    area: &str,
    mut fields: Map<String, Value>,
    merge: Merge,
) -> ApiResult<ConfigView> {
    if state.plugins().area_connectors(area).is_empty() {
        return Err(ApiError::NotFound("integration"));
    }
    let existing = storage::config(&state.db, &state.secrets, &caller.tenant_id, area).await?;
    let named = fields.remove("connector");
    let connector = chosen_connector(&state.plugins(), area, named, existing.as_ref(), &fields)?;
    let switching = existing.as_ref().is_some_and(|e| {
        areas::resolve(&state.plugins(), area, e.connector.as_deref())
            .map_or(true, |old| old.descriptor.id != connector.descriptor.id)
    });
    // Another connector's settings and secrets mean nothing to this one,
    // and a partner's shared config is not the tenant's to keep: its own
    // config starts from what it sends.
    let existing = existing.filter(|e| !switching && e.shared_from.is_none());
    if merge == Merge::Update {
        if let Some(stored) = &existing {
            for (field, value) in stored.full().as_object().into_iter().flatten() {
                fields.entry(field.clone()).or_insert_with(|| value.clone());
            }
        }
    }
    let mut secrets = Map::new();
    for field in &connector.descriptor.secret_fields {
        match fields.remove(field) {
            Some(Value::String(s)) if s == REDACTED => {
                if let Some(kept) = existing.as_ref().and_then(|e| e.secrets.get(field)) {
                    secrets.insert(field.clone(), kept.clone());
                }
            }
            Some(value) => {
                secrets.insert(field.clone(), value);
            }
            None => {}
        }
    }
    let mut candidate = StoredConfig {
        connector: Some(connector.descriptor.id.clone()),
        settings: Value::Object(fields),
        secrets: Value::Object(secrets),
        updated_at: 0,
        shared_from: None,
    };
    check_schema_masked(
        &connector.descriptor.config_schema,
        &candidate.full(),
        &candidate.secrets,
    )?;
    HostPolicy::check_config(
        &connector.descriptor,
        &candidate.full(),
        &state.plugins().addresses,
    )
    .await
    .map_err(|(field, reason)| ApiError::validation(&field, reason))?;
    candidate.updated_at = storage::save_config(
        &state.db,
        &state.secrets,
        &caller.tenant_id,
        area,
        NewConfig {
            connector: &connector.descriptor.id,
            settings: &candidate.settings,
            secrets: &candidate.secrets,
            switching,
        },
    )
    .await?;
    if switching {
        // The old connector's sync stops at its next page (its config is
        // replaced); its rows are gone, so the inventory is rebuilt.
        super::cancel_area_jobs(&state.db, &caller.tenant_id, area).await?;
        cairn_inventory::rollup::request(&state.db, &caller.tenant_id, "connector switched")
            .await?;
    }
    Ok(redacted_view(area, Some(&connector), Some(&candidate)))
}

/// The first problem of `value` against `schema` as a 422 naming the field
/// (under `prefix` for an action's body or query).
pub fn check_schema(schema: &Value, value: &Value, prefix: &str) -> ApiResult<()> {
    match schema_problem(schema, value)? {
        Some((field, message)) => {
            let field = if field == "config" {
                prefix.to_string()
            } else {
                format!("{prefix}.{field}")
            };
            Err(ApiError::validation(&field, message))
        }
        None => Ok(()),
    }
}

/// The one connector serving `area` whose config schema accepts `config`,
/// when exactly one does: a config written for one connector's fields (the
/// spec's rmm config of a user name and password, say) needs no
/// `connector` even when another connector serves the area too.
pub fn accepting(
    plugins: &Plugins,
    area: &str,
    config: &Map<String, Value>,
) -> Option<Arc<LoadedConnector>> {
    let config = Value::Object(config.clone());
    let mut fitting = plugins.area_connectors(area).into_iter().filter(|c| {
        matches!(
            schema_problem(&c.descriptor.config_schema, &config),
            Ok(None)
        )
    });
    match (fitting.next(), fitting.next()) {
        (Some(only), None) => Some(only.clone()),
        _ => None,
    }
}

/// The first problem of `value` against `schema`: the field's dotted path
/// (`config` for the whole value) and the schema's message.
fn schema_problem(schema: &Value, value: &Value) -> ApiResult<Option<(String, String)>> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("connector schema is invalid: {e}")))?;
    let Some(error) = validator.iter_errors(value).next() else {
        return Ok(None);
    };
    let field = match error.kind() {
        jsonschema::error::ValidationErrorKind::Required { property } => {
            property.as_str().unwrap_or("config").to_string()
        }
        _ => serde_json::to_value(error.instance_path())
            .ok()
            .and_then(|p| {
                p.as_str()
                    .map(|p| p.trim_start_matches('/').replace('/', "."))
            })
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "config".into()),
    };
    Ok(Some((field, error.to_string())))
}

/// Checks a config against the connector's JSON Schema; the first problem
/// becomes a 422 naming the field. The schema's message quotes the value
/// it refused, so every secret value is masked in it.
pub(crate) fn check_schema_masked(
    schema: &Value,
    config: &Value,
    secrets: &Value,
) -> ApiResult<()> {
    let Some((field, mut message)) = schema_problem(schema, config)? else {
        return Ok(());
    };
    for value in secrets.as_object().into_iter().flat_map(|s| s.values()) {
        let raw = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        if raw.is_empty() {
            continue;
        }
        // As written, and as the message's JSON quoting writes it.
        let quoted = Value::String(raw.clone()).to_string();
        message = message
            .replace(&quoted[1..quoted.len() - 1], REDACTED)
            .replace(&raw, REDACTED);
    }
    Err(ApiError::validation(&field, message))
}
