//! `/api/v1/integrations/`: what plugins this process loaded. Mounted with
//! its full path because the spec's path ends in a slash, which nesting drops.

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use cairn_core::http::error::{ApiResult, ErrorBody};
use cairn_core::http::json::Json;
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_plugins::{ConnectorDescriptor, CsvDescriptor, Skipped};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_integrations))
}

#[derive(Serialize, ToSchema)]
pub struct LoadedPlugin<D> {
    descriptor: D,
    /// SHA-256 of the `.wasm` file.
    sha256: String,
    /// Whether the caller's tenant uses it for its area (connectors).
    #[serde(skip_serializing_if = "Option::is_none")]
    configured: Option<bool>,
}

/// An area (`/api/v1/<area>/...`), the connectors serving it and the one
/// the caller's tenant uses.
#[derive(Serialize, ToSchema)]
pub struct AreaView {
    area: String,
    /// Ids of the loaded connectors serving the area.
    connectors: Vec<String>,
    configured: bool,
    /// The connector the tenant's config uses; when unconfigured, the
    /// area's only connector (null when several serve it).
    connector: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct IntegrationList {
    areas: Vec<AreaView>,
    connectors: Vec<LoadedPlugin<ConnectorDescriptor>>,
    csv_providers: Vec<LoadedPlugin<CsvDescriptor>>,
    /// Files in the connectors directory that were not loaded (by file
    /// name), and why.
    skipped: Vec<Skipped>,
}

/// Areas with their connectors and the caller's tenant's choice, loaded
/// connectors and CSV providers, and skipped files.
#[utoipa::path(get, path = "/", tag = "integrations",
    responses((status = 200, body = IntegrationList), (status = 401, body = ErrorBody)))]
async fn list_integrations(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<IntegrationList>> {
    let plugins = &state.plugins();
    let configured = crate::storage::configured_areas(&state.db, &caller.tenant_id).await?;
    let choice = |area: &str| -> (bool, Option<String>) {
        let stored = configured.iter().find(|(a, _)| a == area);
        let named = stored.and_then(|(_, connector)| connector.as_deref());
        let connector = crate::areas::resolve(plugins, area, named)
            .ok()
            .map(|c| c.descriptor.id.clone());
        (stored.is_some(), connector)
    };
    Ok(Json(IntegrationList {
        areas: plugins
            .areas()
            .into_iter()
            .map(|area| {
                let (configured, connector) = choice(area);
                let connectors = crate::areas::serving_id_list(plugins, area);
                AreaView {
                    area: area.to_string(),
                    connectors,
                    configured,
                    connector,
                }
            })
            .collect(),
        connectors: plugins
            .connectors
            .iter()
            .map(|c| {
                let (configured, connector) = choice(&c.descriptor.area);
                LoadedPlugin {
                    descriptor: c.descriptor.clone(),
                    sha256: c.sha256.clone(),
                    configured: Some(configured && connector.as_ref() == Some(&c.descriptor.id)),
                }
            })
            .collect(),
        csv_providers: plugins
            .csv_providers
            .iter()
            .map(|p| LoadedPlugin {
                descriptor: p.descriptor.clone(),
                sha256: p.sha256.clone(),
                configured: None,
            })
            .collect(),
        // The file name only: the server's directories are not the
        // tenant's to see (`cairn connectors list` shows full paths).
        skipped: plugins
            .skipped
            .iter()
            .map(|s| Skipped {
                file: std::path::Path::new(&s.file)
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default(),
                reason: s.reason.clone(),
            })
            .collect(),
    }))
}
