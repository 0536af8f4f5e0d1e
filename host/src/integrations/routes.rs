//! `/api/v1/{integration}/...`: the lifecycle routes every loaded connector
//! gets, driven by its descriptor. No vendor is named here.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::storage::{self, SourceStats, StoredConfig};
use super::{sync_kind, REDACTED};
use crate::app::AppState;
use crate::auth::{AdminCaller, Caller};
use crate::db::to_rfc3339;
use crate::http::error::{ApiError, ApiResult, ErrorBody};
use crate::http::json::{Json, Path, Query};
use crate::jobs::storage::{self as jobs, JobFilter};
use crate::jobs::JobView;
use crate::plugins::outbound::HostPolicy;
use crate::plugins::{CallError, CallScope, LoadedConnector};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_config, save_config, delete_config))
        .routes(routes!(test_connection))
        .routes(routes!(start_sync))
        .routes(routes!(sync_status))
        .routes(routes!(stats))
        .routes(routes!(devices))
        .routes(routes!(device_by_name))
        .routes(routes!(live_action))
        .routes(routes!(store_credentials))
        .routes(routes!(get_credentials, delete_credentials))
}

fn connector(state: &AppState, integration: &str) -> ApiResult<std::sync::Arc<LoadedConnector>> {
    state
        .plugins
        .connector(integration)
        .cloned()
        .ok_or(ApiError::NotFound("integration"))
}

#[derive(Serialize, ToSchema)]
pub struct ConfigView {
    integration: String,
    configured: bool,
    /// The stored config; secret fields read `********`.
    #[schema(value_type = Object)]
    config: Value,
    updated_at: Option<String>,
}

fn redacted_view(connector: &LoadedConnector, stored: Option<&StoredConfig>) -> ConfigView {
    let Some(stored) = stored else {
        return ConfigView {
            integration: connector.descriptor.id.clone(),
            configured: false,
            config: Value::Object(Map::new()),
            updated_at: None,
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
        integration: connector.descriptor.id.clone(),
        configured: true,
        config,
        updated_at: Some(to_rfc3339(stored.updated_at)),
    }
}

/// Read the stored config, secrets redacted.
#[utoipa::path(get, path = "/api/v1/{integration}/config", tag = "integrations",
    params(("integration" = String, Path, description = "Id of a loaded connector, e.g. `rmm`")),
    responses((status = 200, body = ConfigView), (status = 404, body = ErrorBody)))]
async fn get_config(
    State(state): State<AppState>,
    caller: Caller,
    Path(integration): Path<String>,
) -> ApiResult<Json<ConfigView>> {
    let connector = connector(&state, &integration)?;
    let stored =
        storage::config(&state.db, &state.secrets, &caller.tenant_id, &integration).await?;
    Ok(Json(redacted_view(&connector, stored.as_ref())))
}

/// Store or replace the config (admin or owner). Validated against the
/// connector's schema; a secret sent back as `********` keeps its stored value.
#[utoipa::path(post, path = "/api/v1/{integration}/config", tag = "integrations",
    params(("integration" = String, Path)),
    request_body(content = Object, description = "Fields per the connector's config schema"),
    responses(
        (status = 200, body = ConfigView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 422, body = ErrorBody, description = "Names the offending field"),
    ))]
async fn save_config(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(integration): Path<String>,
    Json(body): Json<Value>,
) -> ApiResult<Json<ConfigView>> {
    let Value::Object(fields) = body else {
        return Err(ApiError::validation(
            "body",
            "the config must be a JSON object",
        ));
    };
    store_config(&state, &caller, &integration, fields, Merge::Replace)
        .await
        .map(Json)
}

/// Whether stored settings not named in a save are kept.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Merge {
    /// The body is the whole config.
    Replace,
    /// The body adds to or overrides the stored config.
    Update,
}

/// Validates and stores a config for `integration`; secret fields go to the
/// encrypted part, and a secret sent as `********` keeps its stored value.
async fn store_config(
    state: &AppState,
    caller: &Caller,
    integration: &str,
    mut fields: Map<String, Value>,
    merge: Merge,
) -> ApiResult<ConfigView> {
    let connector = connector(state, integration)?;
    let existing =
        storage::config(&state.db, &state.secrets, &caller.tenant_id, integration).await?;
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
        settings: Value::Object(fields),
        secrets: Value::Object(secrets),
        updated_at: 0,
    };
    validate(
        &connector.descriptor.config_schema,
        &candidate.full(),
        &candidate.secrets,
    )?;
    HostPolicy::check_config(
        &connector.descriptor,
        &candidate.full(),
        &state.plugins.addresses,
    )
    .await
    .map_err(|(field, reason)| ApiError::validation(&field, reason))?;
    candidate.updated_at = storage::save_config(
        &state.db,
        &state.secrets,
        &caller.tenant_id,
        integration,
        &candidate.settings,
        &candidate.secrets,
    )
    .await?;
    Ok(redacted_view(&connector, Some(&candidate)))
}

/// Checks `config` against the connector's JSON Schema; the first problem
/// becomes a 422 naming the field. The schema's message quotes the value
/// it refused, so every secret value is masked in it.
fn validate(schema: &Value, config: &Value, secrets: &Value) -> ApiResult<()> {
    let validator = jsonschema::validator_for(schema)
        .map_err(|e| ApiError::Internal(anyhow::anyhow!("connector schema is invalid: {e}")))?;
    let Some(error) = validator.iter_errors(config).next() else {
        return Ok(());
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
    let mut message = error.to_string();
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

/// Remove the config and the data the integration synced (admin or owner);
/// a sync in progress is canceled and writes nothing more.
#[utoipa::path(delete, path = "/api/v1/{integration}/config", tag = "integrations",
    params(("integration" = String, Path)),
    responses((status = 204, description = "Removed with its synced data"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_config(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(integration): Path<String>,
) -> ApiResult<StatusCode> {
    connector(&state, &integration)?;
    if storage::delete_config(&state.db, &caller.tenant_id, &integration).await? {
        // A running sync stops at its next page (its writes are fenced on
        // the config, which is gone); queued ones never start.
        jobs::cancel_kind(&state.db, &caller.tenant_id, &sync_kind(&integration)).await?;
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("config"))
    }
}

async fn stored_config(
    state: &AppState,
    caller: &Caller,
    integration: &str,
) -> ApiResult<StoredConfig> {
    storage::config(&state.db, &state.secrets, &caller.tenant_id, integration)
        .await?
        .ok_or_else(|| {
            ApiError::Conflict(format!("{integration} is not configured for this tenant"))
        })
}

/// A plugin call's failure as an HTTP error.
pub fn call_error(err: CallError) -> ApiError {
    match err {
        CallError::Auth {
            status,
            message,
            permission_hint,
        } => ApiError::UpstreamAuth {
            status,
            message,
            permission_hint,
        },
        CallError::Config(message) => ApiError::validation("config", message),
        other => ApiError::Upstream(other.to_string()),
    }
}

#[derive(Serialize, ToSchema)]
pub struct ConnectionOk {
    ok: bool,
}

/// Validate the stored credentials with a live call.
#[utoipa::path(post, path = "/api/v1/{integration}/test-connection", tag = "integrations",
    params(("integration" = String, Path)),
    responses(
        (status = 200, body = ConnectionOk),
        (status = 409, body = ErrorBody, description = "Not configured"),
        (status = 422, body = ErrorBody, description = "The config is unusable"),
        (status = 502, body = ErrorBody, description = "`upstream_auth_error` (with `upstream_status` and `permission_hint`) or `upstream_error`"),
    ))]
async fn test_connection(
    State(state): State<AppState>,
    caller: Caller,
    Path(integration): Path<String>,
) -> ApiResult<Json<ConnectionOk>> {
    let connector = connector(&state, &integration)?;
    let config = stored_config(&state, &caller, &integration).await?.full();
    let scope = CallScope {
        plugin: integration.clone(),
        tenant_id: Some(caller.tenant_id.as_str().to_string()),
        job_id: None,
    };
    state
        .plugins
        .check(&connector, scope, &config)
        .await
        .map_err(call_error)?;
    Ok(Json(ConnectionOk { ok: true }))
}

#[derive(Serialize, ToSchema)]
pub struct SyncStarted {
    job_id: String,
    /// False when a sync was already queued or running; `job_id` is that one.
    created: bool,
}

/// Start a background sync (deduplicated: one queued or running per tenant).
#[utoipa::path(post, path = "/api/v1/{integration}/sync", tag = "integrations",
    params(("integration" = String, Path)),
    responses((status = 202, body = SyncStarted), (status = 409, body = ErrorBody, description = "Not configured")))]
async fn start_sync(
    State(state): State<AppState>,
    caller: Caller,
    Path(integration): Path<String>,
) -> ApiResult<(StatusCode, Json<SyncStarted>)> {
    connector(&state, &integration)?;
    stored_config(&state, &caller, &integration).await?;
    let enqueued = state
        .jobs
        .enqueue(
            &caller.tenant_id,
            &sync_kind(&integration),
            &serde_json::json!({}),
        )
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(SyncStarted {
            job_id: enqueued.job_id,
            created: enqueued.created,
        }),
    ))
}

#[derive(Serialize, ToSchema)]
pub struct SyncStatus {
    /// The queued or running sync, else the latest one; null if none ran.
    current: Option<JobView>,
    /// Recent syncs, newest first.
    history: Vec<JobView>,
}

/// The current sync job and recent history, from the jobs table.
#[utoipa::path(get, path = "/api/v1/{integration}/sync-status", tag = "integrations",
    params(("integration" = String, Path)),
    responses((status = 200, body = SyncStatus), (status = 404, body = ErrorBody)))]
async fn sync_status(
    State(state): State<AppState>,
    caller: Caller,
    Path(integration): Path<String>,
) -> ApiResult<Json<SyncStatus>> {
    connector(&state, &integration)?;
    let kind = sync_kind(&integration);
    let filter = JobFilter {
        kind: Some(&kind),
        status: None,
        limit: 20,
        offset: 0,
    };
    let (rows, _) = jobs::list(&state.db, &caller.tenant_id, &filter).await?;
    let history: Vec<JobView> = rows.into_iter().map(JobView::from).collect();
    let current = history
        .iter()
        .position(|j| j.is_active())
        .or((!history.is_empty()).then_some(0))
        .map(|i| history[i].clone());
    Ok(Json(SyncStatus { current, history }))
}

/// Counts of what the integration synced for the tenant.
#[utoipa::path(get, path = "/api/v1/{integration}/stats", tag = "integrations",
    params(("integration" = String, Path)),
    responses((status = 200, body = SourceStats), (status = 404, body = ErrorBody)))]
async fn stats(
    State(state): State<AppState>,
    caller: Caller,
    Path(integration): Path<String>,
) -> ApiResult<Json<SourceStats>> {
    connector(&state, &integration)?;
    Ok(Json(
        storage::stats(&state.db, &caller.tenant_id, &integration).await?,
    ))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Page {
    /// 1 to 500 (default 100).
    #[param(minimum = 1)]
    limit: Option<i64>,
    /// Default 0.
    #[param(minimum = 0)]
    offset: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct SyncedDevice {
    key: String,
    device_name: Option<String>,
    client_id: Option<String>,
    group_ids: Vec<String>,
    /// The upstream record as synced.
    #[schema(value_type = Object)]
    record: Value,
    synced_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct DevicePage {
    items: Vec<SyncedDevice>,
    total: i64,
    limit: i64,
    offset: i64,
}

fn device_view(row: storage::RecordRowView) -> SyncedDevice {
    SyncedDevice {
        key: row.record_key,
        device_name: row.device_name,
        client_id: row.client_id,
        group_ids: serde_json::from_str(&row.group_ids).unwrap_or_default(),
        record: serde_json::from_str(&row.body).unwrap_or(Value::Null),
        synced_at: to_rfc3339(row.updated_at),
    }
}

/// Devices the integration synced.
#[utoipa::path(get, path = "/api/v1/{integration}/devices", tag = "integrations",
    params(("integration" = String, Path), Page),
    responses((status = 200, body = DevicePage), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn devices(
    State(state): State<AppState>,
    caller: Caller,
    Path(integration): Path<String>,
    Query(page): Query<Page>,
) -> ApiResult<Json<DevicePage>> {
    connector(&state, &integration)?;
    let limit = page.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::validation("limit", "must be between 1 and 500"));
    }
    let offset = page.offset.unwrap_or(0).max(0);
    let (rows, total) = storage::records(
        &state.db,
        &caller.tenant_id,
        &integration,
        "device",
        None,
        limit,
        offset,
    )
    .await?;
    Ok(Json(DevicePage {
        items: rows.into_iter().map(device_view).collect(),
        total,
        limit,
        offset,
    }))
}

/// The synced record of one asset, by device name (case-insensitive).
#[utoipa::path(get, path = "/api/v1/{integration}/device-by-name/{device_name}", tag = "integrations",
    params(("integration" = String, Path), ("device_name" = String, Path)),
    responses((status = 200, body = SyncedDevice), (status = 404, body = ErrorBody)))]
async fn device_by_name(
    State(state): State<AppState>,
    caller: Caller,
    Path((integration, device_name)): Path<(String, String)>,
) -> ApiResult<Json<SyncedDevice>> {
    connector(&state, &integration)?;
    let (mut rows, _) = storage::records(
        &state.db,
        &caller.tenant_id,
        &integration,
        "device",
        Some(&device_name),
        1,
        0,
    )
    .await?;
    rows.pop()
        .map(device_view)
        .map(Json)
        .ok_or(ApiError::NotFound("device"))
}

/// A live read the connector offers (its descriptor's `actions`), e.g.
/// `GET /api/v1/rmm/clients` lists the upstream's clients to scope a sync.
#[utoipa::path(get, path = "/api/v1/{integration}/{action}", tag = "integrations",
    params(("integration" = String, Path), ("action" = String, Path, description = "One of the connector's actions")),
    responses(
        (status = 200, body = Object, description = "The upstream's answer as the connector shapes it"),
        (status = 404, body = ErrorBody, description = "No such integration or action"),
        (status = 409, body = ErrorBody, description = "Not configured"),
        (status = 502, body = ErrorBody),
    ))]
async fn live_action(
    State(state): State<AppState>,
    caller: Caller,
    Path((integration, action)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let connector = connector(&state, &integration)?;
    if !connector.descriptor.actions.contains(&action) {
        return Err(ApiError::NotFound("action"));
    }
    let config = stored_config(&state, &caller, &integration).await?.full();
    let scope = CallScope {
        plugin: integration.clone(),
        tenant_id: Some(caller.tenant_id.as_str().to_string()),
        job_id: None,
    };
    let answer = state
        .plugins
        .invoke(
            &connector,
            scope,
            &config,
            &action,
            &Value::Object(Map::new()),
        )
        .await
        .map_err(call_error)?;
    Ok(Json(answer))
}

#[derive(Deserialize, ToSchema)]
pub struct CredentialsRequest {
    /// The integration (a loaded connector's id), e.g. `rmm`.
    platform: String,
    /// Fields to store; merged into the integration's stored config.
    #[schema(value_type = Object)]
    credentials: Map<String, Value>,
}

/// Store credentials for a platform (admin or owner): merged into the
/// integration's config and validated like `POST /{integration}/config`.
#[utoipa::path(post, path = "/api/v1/integrations/credentials", tag = "integrations", request_body = CredentialsRequest,
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
#[utoipa::path(get, path = "/api/v1/integrations/credentials/{platform}", tag = "integrations",
    params(("platform" = String, Path)),
    responses((status = 200, body = ConfigView), (status = 404, body = ErrorBody, description = "Unknown platform or nothing stored")))]
async fn get_credentials(
    State(state): State<AppState>,
    caller: Caller,
    Path(platform): Path<String>,
) -> ApiResult<Json<ConfigView>> {
    let connector = connector(&state, &platform)?;
    let stored = storage::config(&state.db, &state.secrets, &caller.tenant_id, &platform)
        .await?
        .ok_or(ApiError::NotFound("credentials"))?;
    Ok(Json(redacted_view(&connector, Some(&stored))))
}

/// Delete a platform's stored secrets (admin or owner); its other settings
/// and synced data stay (`DELETE /{integration}/config` removes everything).
#[utoipa::path(delete, path = "/api/v1/integrations/credentials/{platform}", tag = "integrations",
    params(("platform" = String, Path)),
    responses((status = 204, description = "Secrets removed"), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_credentials(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(platform): Path<String>,
) -> ApiResult<StatusCode> {
    connector(&state, &platform)?;
    let stored = storage::config(&state.db, &state.secrets, &caller.tenant_id, &platform)
        .await?
        .ok_or(ApiError::NotFound("credentials"))?;
    storage::save_config(
        &state.db,
        &state.secrets,
        &caller.tenant_id,
        &platform,
        &stored.settings,
        &Value::Object(Map::new()),
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}
