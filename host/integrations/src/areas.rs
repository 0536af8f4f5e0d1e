//! Areas and the connectors serving them: which connector a tenant's
//! config for an area uses.

use std::sync::Arc;

use super::storage::{self, StoredConfig};
use cairn_core::db::Db;
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;
use cairn_core::secrets::SecretBox;
use cairn_plugins::{LoadedConnector, Plugins};

/// The connector `chosen` names for `area`, or, when it names none, the
/// area's only loaded connector.
pub fn resolve(
    plugins: &Plugins,
    area: &str,
    chosen: Option<&str>,
) -> Result<Arc<LoadedConnector>, ApiError> {
    let serving = plugins.area_connectors(area);
    match chosen {
        Some(id) => serving
            .into_iter()
            .find(|c| c.descriptor.id == id)
            .cloned()
            .ok_or_else(|| {
                ApiError::Conflict(format!(
                    "this tenant's {area} config uses connector {id}, which is not loaded"
                ))
            }),
        None => match serving.as_slice() {
            [only] => Ok((*only).clone()),
            [] => Err(ApiError::NotFound("integration")),
            _ => Err(ApiError::Conflict(format!(
                "several connectors serve {area} ({}); the tenant's config must name one",
                serving_ids(plugins, area)
            ))),
        },
    }
}

/// The ids of the connectors serving `area`, sorted so a list or message
/// naming them reads the same on every start.
pub fn serving_id_list(plugins: &Plugins, area: &str) -> Vec<String> {
    let mut ids: Vec<String> = plugins
        .area_connectors(area)
        .iter()
        .map(|c| c.descriptor.id.clone())
        .collect();
    ids.sort_unstable();
    ids
}

/// [`serving_id_list`] for a message: `a, b`.
pub fn serving_ids(plugins: &Plugins, area: &str) -> String {
    serving_id_list(plugins, area).join(", ")
}

/// The tenant's config for `area` and the connector it uses; `None` when
/// the tenant has not configured the area.
pub async fn tenant_connector(
    db: &Db,
    secrets: &SecretBox,
    plugins: &Plugins,
    tenant: &TenantId,
    area: &str,
) -> Result<Option<(Arc<LoadedConnector>, StoredConfig)>, ApiError> {
    let Some(stored) = storage::config(db, secrets, tenant, area).await? else {
        return Ok(None);
    };
    let connector = resolve(plugins, area, stored.connector.as_deref())?;
    Ok(Some((connector, stored)))
}

/// Runs `call` through the tenant's connector for `area`, as a host
/// feature does (a payment link, a ticket from a vulnerability): 409 when
/// the tenant has not configured the area, the connector's failure mapped
/// as an action route maps it.
pub async fn invoke(
    state: &cairn_platform::app::AppState,
    tenant: &TenantId,
    area: &str,
    call: &cairn_plugins::ActionCall,
) -> Result<serde_json::Value, ApiError> {
    let (connector, config) =
        tenant_connector(&state.db, &state.secrets, &state.plugins(), tenant, area)
            .await?
            .ok_or_else(|| {
                ApiError::Conflict(format!("{area} is not configured for this tenant"))
            })?;
    let scope = cairn_plugins::CallScope {
        plugin: connector.descriptor.id.clone(),
        tenant_id: Some(tenant.as_str().to_string()),
        job_id: None,
    };
    state
        .plugins()
        .invoke(&connector, scope, &config.full(), call)
        .await
        .map_err(super::call_error)
}
