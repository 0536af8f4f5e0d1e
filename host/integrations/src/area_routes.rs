//! What every area's routes share: the area a concrete route serves, the
//! tenant's configured connector for it, a plugin call's failure as an
//! HTTP error, and the answers about an area's sync jobs. A leaf the
//! lifecycle routes (`routes`), the pull routes (`pulls`) and the declared
//! routes (`declared`) all use, so none of them reaches into another.

use std::sync::Arc;

use axum::Extension;
use serde::Serialize;
use utoipa::openapi::path::{Operation, Paths};
use utoipa::ToSchema;
use utoipa_axum::router::UtoipaMethodRouter;

use super::areas;
use super::storage::StoredConfig;
use cairn_core::http::error::{ApiError, ApiResult};
use cairn_jobs::storage::{self as jobs, JobFilter};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_platform::jobs_routes::JobView;
use cairn_plugins::{CallError, LoadedConnector};

/// The area a concrete lifecycle route serves (set on the route, so one
/// handler serves every area).
#[derive(Clone)]
pub(crate) struct Area(pub String);

/// A lifecycle route declared at `/api/v1/{area}/...` made concrete for
/// `area`: its path and OpenAPI operations name the area, and the handler
/// learns it from the route.
pub(crate) fn for_area(
    route: UtoipaMethodRouter<AppState>,
    area: &str,
) -> UtoipaMethodRouter<AppState> {
    let (schemas, paths, method_router) = route;
    let mut concrete = Paths::new();
    for (path, mut item) in paths.paths {
        for operation in [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ]
        .into_iter()
        .flatten()
        {
            name_area(operation, area);
        }
        concrete.paths.insert(path.replace("{area}", area), item);
    }
    (
        schemas,
        concrete,
        method_router.layer(Extension(Area(area.to_string()))),
    )
}

fn name_area(operation: &mut Operation, area: &str) {
    if let Some(parameters) = &mut operation.parameters {
        parameters.retain(|p| p.name != "area");
    }
    operation.tags = Some(vec![area.to_string()]);
    if let Some(id) = &mut operation.operation_id {
        *id = format!("{area}_{id}");
    }
}

/// The tenant's config for `area` and its connector, or a 409.
pub(crate) async fn configured(
    state: &AppState,
    caller: &Caller,
    area: &str,
) -> ApiResult<(Arc<LoadedConnector>, StoredConfig)> {
    areas::tenant_connector(
        &state.db,
        &state.secrets,
        &state.plugins(),
        &caller.tenant_id,
        area,
    )
    .await?
    .ok_or_else(|| ApiError::Conflict(format!("{area} is not configured for this tenant")))
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
        CallError::InvalidInput { field, message } => ApiError::validation(&field, message),
        CallError::NotFound(message) => ApiError::Missing(message),
        other => ApiError::Upstream(other.to_string()),
    }
}

#[derive(Serialize, ToSchema)]
pub struct SyncStarted {
    job_id: String,
    /// False when one was already queued and not yet started; `job_id` is
    /// that one. Asked for while a sync runs, a new one is queued after it.
    created: bool,
}

impl From<jobs::Enqueued> for SyncStarted {
    fn from(enqueued: jobs::Enqueued) -> SyncStarted {
        SyncStarted {
            job_id: enqueued.job_id,
            created: enqueued.created,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct SyncStatus {
    /// The queued or running job, else the latest one; null if none ran.
    current: Option<JobView>,
    /// Recent ones, newest first.
    history: Vec<JobView>,
}

/// The tenant's current job of `kind` and its 20 latest.
pub(crate) async fn jobs_of_kind(
    state: &AppState,
    caller: &Caller,
    kind: &str,
) -> ApiResult<SyncStatus> {
    let filter = JobFilter {
        kind: Some(kind),
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
    Ok(SyncStatus { current, history })
}
