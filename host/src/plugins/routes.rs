//! `/api/v1/integrations/`: what plugins this process loaded. Mounted with
//! its full path because the spec's path ends in a slash, which nesting drops.

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{ConnectorDescriptor, CsvDescriptor, Skipped};
use crate::app::AppState;
use crate::auth::Caller;
use crate::http::error::{ApiResult, ErrorBody};
use crate::http::json::Json;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list_integrations))
}

#[derive(Serialize, ToSchema)]
pub struct LoadedPlugin<D> {
    descriptor: D,
    /// SHA-256 of the `.wasm` file.
    sha256: String,
    /// Whether the caller's tenant has stored a config for it (connectors).
    #[serde(skip_serializing_if = "Option::is_none")]
    configured: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub struct IntegrationList {
    connectors: Vec<LoadedPlugin<ConnectorDescriptor>>,
    csv_providers: Vec<LoadedPlugin<CsvDescriptor>>,
    /// Files in the connectors directory that were not loaded (by file
    /// name), and why.
    skipped: Vec<Skipped>,
}

/// Loaded connectors (with whether the caller's tenant configured each) and
/// CSV providers, and skipped files.
#[utoipa::path(get, path = "/api/v1/integrations/", tag = "integrations",
    responses((status = 200, body = IntegrationList), (status = 401, body = ErrorBody)))]
async fn list_integrations(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<IntegrationList>> {
    let plugins = &state.plugins;
    let configured: Vec<String> =
        sqlx::query_scalar("SELECT integration FROM integration_configs WHERE tenant_id = $1")
            .bind(caller.tenant_id.as_str())
            .fetch_all(&state.db.pool)
            .await?;
    Ok(Json(IntegrationList {
        connectors: plugins
            .connectors
            .iter()
            .map(|c| LoadedPlugin {
                descriptor: c.descriptor.clone(),
                sha256: c.sha256.clone(),
                configured: Some(configured.contains(&c.descriptor.id)),
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
