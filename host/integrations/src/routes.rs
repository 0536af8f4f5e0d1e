//! `/api/v1/<area>/...`: the lifecycle routes of every area some loaded
//! connector serves (config, test-connection, sync, sync-status, stats),
//! mounted concretely per area, plus the connectors' declared routes
//! (`declared`). No vendor is named here.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Extension;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::openapi::path::Paths;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::area_routes::{
    call_error, configured, for_area, jobs_of_kind, Area, SyncStarted, SyncStatus,
};
use super::config::{redacted_view, store_config, ConfigView, Merge};
use super::storage::{self, NewConfig, SourceStats};
use super::{areas, seed, sync_kind};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path};
use cairn_platform::app::AppState;
use cairn_platform::auth::{AdminCaller, Caller};
use cairn_plugins::{CallScope, Plugins};

pub fn router(plugins: &Plugins) -> OpenApiRouter<AppState> {
    let mut router = OpenApiRouter::new()
        .routes(routes!(store_credentials))
        .routes(routes!(get_credentials, delete_credentials));
    for area in plugins.areas() {
        let mut config_routes = for_area(routes!(get_config, save_config, delete_config), area);
        document_config_body(&mut config_routes.1, plugins, area);
        router = router
            .routes(config_routes)
            .routes(for_area(routes!(test_connection), area))
            .routes(for_area(routes!(start_sync), area))
            .routes(for_area(routes!(sync_status), area))
            .routes(for_area(routes!(stats), area))
            .routes(for_area(routes!(auto_config), area));
        router = super::pulls::mount(router, plugins, area);
        router = super::declared::mount(router, plugins, area);
    }
    router
}

/// The concrete `POST /<area>/config` takes the config schema of the
/// area's connector (one of them, when several serve it), with
/// `connector` to choose one and the secret fields marked write-only.
fn document_config_body(paths: &mut Paths, plugins: &Plugins, area: &str) {
    let schemas: Vec<Value> = plugins
        .area_connectors(area)
        .iter()
        .map(|c| {
            let descriptor = &c.descriptor;
            let mut schema = descriptor.config_schema.clone();
            if let Some(properties) = schema
                .get_mut("properties")
                .and_then(Value::as_object_mut)
            {
                for field in &descriptor.secret_fields {
                    if let Some(Value::Object(property)) = properties.get_mut(field) {
                        property.insert("writeOnly".into(), Value::Bool(true));
                    }
                }
                properties.insert(
                    "connector".into(),
                    serde_json::json!({"type": "string", "enum": [descriptor.id],
                        "description": format!("{} ({} {})", descriptor.name, descriptor.id, descriptor.version)}),
                );
            }
            schema["title"] = Value::String(descriptor.name.clone());
            schema
        })
        .collect();
    let schema = match schemas.as_slice() {
        [one] => one.clone(),
        several => serde_json::json!({"oneOf": several}),
    };
    let body =
        serde_json::json!({"required": true, "content": {"application/json": {"schema": schema}}});
    let Ok(body) = serde_json::from_value(body) else {
        return;
    };
    for item in paths.paths.values_mut() {
        if let Some(post) = &mut item.post {
            post.request_body = Some(body);
            return;
        }
    }
}

/// Read the area's stored config, secrets redacted, and the connector it
/// uses.
#[utoipa::path(get, path = "/{area}/config", tag = "integrations",
    params(("area" = String, Path)),
    responses((status = 200, body = ConfigView)))]
async fn get_config(
    State(state): State<AppState>,
    caller: Caller,
    Extension(Area(area)): Extension<Area>,
) -> ApiResult<Json<ConfigView>> {
    let stored = storage::config(&state.db, &state.secrets, &caller.tenant_id, &area).await?;
    let connector = areas::resolve(
        &state.plugins(),
        &area,
        stored.as_ref().and_then(|s| s.connector.as_deref()),
    )
    .ok();
    Ok(Json(redacted_view(
        &area,
        connector.as_deref(),
        stored.as_ref(),
    )))
}

/// Store or replace the area's config (admin or owner). `connector` picks
/// the connector (by id) when several serve the area; switching to another
/// removes what the old one synced and cancels its sync. The other fields
/// are validated against that connector's schema; a secret sent back as
/// `********` keeps its stored value.
#[utoipa::path(post, path = "/{area}/config", tag = "integrations",
    params(("area" = String, Path)),
    request_body(content = Object, description = "`connector` (optional) and the fields of the connector's config schema"),
    responses(
        (status = 200, body = ConfigView),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "Names the offending field"),
    ))]
async fn save_config(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Extension(Area(area)): Extension<Area>,
    Json(body): Json<Value>,
) -> ApiResult<Json<ConfigView>> {
    let Value::Object(fields) = body else {
        return Err(ApiError::validation(
            "body",
            "the config must be a JSON object",
        ));
    };
    store_config(&state, &caller, &area, fields, Merge::Replace)
        .await
        .map(Json)
}

/// Remove the area's config and the data it synced (admin or owner); a
/// sync in progress is canceled and writes nothing more.
#[utoipa::path(delete, path = "/{area}/config", tag = "integrations",
    params(("area" = String, Path)),
    responses((status = 204, description = "Removed with its synced data"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_config(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Extension(Area(area)): Extension<Area>,
) -> ApiResult<StatusCode> {
    if storage::delete_config(&state.db, &caller.tenant_id, &area).await? {
        super::cancel_area_jobs(&state.db, &caller.tenant_id, &area).await?;
        cairn_inventory::rollup::request(&state.db, &caller.tenant_id, "config removed").await?;
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("config"))
    }
}

#[derive(Serialize, ToSchema)]
pub struct AutoConfigured {
    /// True when this call stored the deployment settings' config; false
    /// when the tenant already had one, which is never overwritten.
    seeded: bool,
    config: ConfigView,
}

/// Store the area's config from the deployment settings (`seed_configs`),
/// validated like `POST /{area}/config`, unless the tenant already has one:
/// an existing config is never overwritten. Admins and owners of the
/// deployment's default tenant only: the settings are the operator's
/// credentials, not another tenant's to copy.
#[utoipa::path(post, path = "/{area}/auto-config", tag = "integrations",
    params(("area" = String, Path)),
    responses((status = 200, body = AutoConfigured),
              (status = 403, body = ErrorBody, description = "Not an admin of the default tenant"),
              (status = 409, body = ErrorBody, description = "The deployment settings hold no config for this area"),
              (status = 422, body = ErrorBody, description = "The deployment settings' config is not valid for the connector")))]
async fn auto_config(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Extension(Area(area)): Extension<Area>,
) -> ApiResult<Json<AutoConfigured>> {
    let settings = &state.settings;
    if settings.default_tenant_id.is_empty()
        || caller.tenant_id.as_str() != settings.default_tenant_id
    {
        return Err(ApiError::Forbidden(
            "deployment settings configure only the deployment's default tenant".into(),
        ));
    }
    let seeds = seed::with_derived(
        &state.plugins(),
        seed::seed_configs(&settings.seed_configs)?,
    );
    let Some(Value::Object(fields)) = seeds.get(&area) else {
        return Err(ApiError::Conflict(format!(
            "the deployment settings hold no {area} config"
        )));
    };
    let existing = storage::config(&state.db, &state.secrets, &caller.tenant_id, &area).await?;
    let (seeded, config) = match existing {
        Some(stored) => {
            let connector =
                areas::resolve(&state.plugins(), &area, stored.connector.as_deref()).ok();
            (
                false,
                redacted_view(&area, connector.as_deref(), Some(&stored)),
            )
        }
        None => (
            true,
            store_config(&state, &caller, &area, fields.clone(), Merge::Replace).await?,
        ),
    };
    Ok(Json(AutoConfigured { seeded, config }))
}

#[derive(Serialize, ToSchema)]
pub struct ConnectionOk {
    ok: bool,
}

/// Validate the stored credentials with a live call.
#[utoipa::path(post, path = "/{area}/test-connection", tag = "integrations",
    params(("area" = String, Path)),
    responses(
        (status = 200, body = ConnectionOk),
        (status = 409, body = ErrorBody, description = "Not configured"),
        (status = 422, body = ErrorBody, description = "The config is unusable"),
        (status = 502, body = ErrorBody, description = "`upstream_auth_error` (with `upstream_status` and `permission_hint`) or `upstream_error`"),
    ))]
async fn test_connection(
    State(state): State<AppState>,
    caller: Caller,
    Extension(Area(area)): Extension<Area>,
) -> ApiResult<Json<ConnectionOk>> {
    let (connector, stored) = configured(&state, &caller, &area).await?;
    let scope = CallScope {
        plugin: connector.descriptor.id.clone(),
        tenant_id: Some(caller.tenant_id.as_str().to_string()),
        job_id: None,
    };
    state
        .plugins()
        .check(&connector, scope, &stored.full())
        .await
        .map_err(call_error)?;
    Ok(Json(ConnectionOk { ok: true }))
}

/// Start a background sync (deduplicated: at most one waits per tenant; one
/// asked for while a sync runs starts when that one ends).
#[utoipa::path(post, path = "/{area}/sync", tag = "integrations",
    params(("area" = String, Path)),
    responses((status = 202, body = SyncStarted), (status = 409, body = ErrorBody, description = "Not configured")))]
async fn start_sync(
    State(state): State<AppState>,
    caller: Caller,
    Extension(Area(area)): Extension<Area>,
) -> ApiResult<(StatusCode, Json<SyncStarted>)> {
    configured(&state, &caller, &area).await?;
    let enqueued = state
        .jobs
        .enqueue(&caller.tenant_id, &sync_kind(&area), &serde_json::json!({}))
        .await?;
    Ok((StatusCode::ACCEPTED, Json(SyncStarted::from(enqueued))))
}

/// The current sync job and recent history, from the jobs table.
#[utoipa::path(get, path = "/{area}/sync-status", tag = "integrations",
    params(("area" = String, Path)),
    responses((status = 200, body = SyncStatus)))]
async fn sync_status(
    State(state): State<AppState>,
    caller: Caller,
    Extension(Area(area)): Extension<Area>,
) -> ApiResult<Json<SyncStatus>> {
    Ok(Json(
        jobs_of_kind(&state, &caller, &sync_kind(&area)).await?,
    ))
}

/// Counts of what the area's connector synced for the tenant.
#[utoipa::path(get, path = "/{area}/stats", tag = "integrations",
    params(("area" = String, Path)),
    responses((status = 200, body = SourceStats)))]
async fn stats(
    State(state): State<AppState>,
    caller: Caller,
    Extension(Area(area)): Extension<Area>,
) -> ApiResult<Json<SourceStats>> {
    Ok(Json(
        storage::stats(&state.db, &caller.tenant_id, &area).await?,
    ))
}

#[derive(Deserialize, ToSchema)]
pub struct CredentialsRequest {
    /// The area, e.g. `rmm`.
    platform: String,
    /// Fields to store; merged into the integration's stored config.
    #[schema(value_type = Object)]
    credentials: Map<String, Value>,
}

/// Store credentials for a platform (admin or owner): merged into the
/// integration's config and validated like `POST /{integration}/config`.
#[utoipa::path(post, path = "/integrations/credentials", tag = "integrations", request_body = CredentialsRequest,
    responses((status = 200, body = ConfigView), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn store_credentials(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(body): Json<CredentialsRequest>,
) -> ApiResult<Json<ConfigView>> {
    store_config(
        &state,
        &caller,
        &body.platform,
        body.credentials,
        Merge::Update,
    )
    .await
    .map(Json)
}

/// The stored credentials of a platform, secrets redacted.
#[utoipa::path(get, path = "/integrations/credentials/{platform}", tag = "integrations",
    params(("platform" = String, Path)),
    responses((status = 200, body = ConfigView), (status = 404, body = ErrorBody, description = "Unknown platform or nothing stored")))]
async fn get_credentials(
    State(state): State<AppState>,
    caller: Caller,
    Path(platform): Path<String>,
) -> ApiResult<Json<ConfigView>> {
    let stored = storage::config(&state.db, &state.secrets, &caller.tenant_id, &platform)
        .await?
        .ok_or(ApiError::NotFound("credentials"))?;
    let connector = areas::resolve(&state.plugins(), &platform, stored.connector.as_deref()).ok();
    Ok(Json(redacted_view(
        &platform,
        connector.as_deref(),
        Some(&stored),
    )))
}

/// Delete a platform's stored secrets (admin or owner); its other settings
/// and synced data stay (`DELETE /{integration}/config` removes everything).
#[utoipa::path(delete, path = "/integrations/credentials/{platform}", tag = "integrations",
    params(("platform" = String, Path)),
    responses((status = 204, description = "Secrets removed"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_credentials(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(platform): Path<String>,
) -> ApiResult<StatusCode> {
    let stored = storage::config(&state.db, &state.secrets, &caller.tenant_id, &platform)
        .await?
        .ok_or(ApiError::NotFound("credentials"))?;
    let connector = areas::resolve(&state.plugins(), &platform, stored.connector.as_deref())?;
    storage::save_config(
        &state.db,
        &state.secrets,
        &caller.tenant_id,
        &platform,
        NewConfig {
            connector: &connector.descriptor.id,
            settings: &stored.settings,
            secrets: &Value::Object(Map::new()),
            switching: false,
        },
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
