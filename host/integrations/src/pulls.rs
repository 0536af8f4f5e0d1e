//! `/api/v1/<area>/bulk-pull`: starting a connector's declared bulk pull and
//! reading how it goes. The pull itself is a job of the sync pipeline
//! ([`super::sync::RunMode::Pull`]); its records are served by the
//! connector's views.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Extension;
use serde_json::{json, Value};
use utoipa::openapi::path::Paths;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::area_routes::{configured, for_area, jobs_of_kind, Area, SyncStarted, SyncStatus};
use super::config::check_schema;
use super::pull_kind;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::Json;
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_plugins::Plugins;

/// Mounts the bulk-pull routes of `area` when one of its connectors
/// declares a pull.
pub fn mount(
    mut router: OpenApiRouter<AppState>,
    plugins: &Plugins,
    area: &str,
) -> OpenApiRouter<AppState> {
    let pulls: Vec<_> = plugins
        .area_connectors(area)
        .into_iter()
        .filter_map(|c| {
            c.descriptor
                .pull
                .clone()
                .map(|p| (c.descriptor.id.clone(), p))
        })
        .collect();
    if pulls.is_empty() {
        return router;
    }
    let mut start = for_area(routes!(start_pull), area);
    document(&mut start.1, &pulls);
    router = router
        .routes(start)
        .routes(for_area(routes!(pull_status), area));
    router
}

/// The concrete `POST /<area>/bulk-pull` takes the pull's parameters and
/// says what it pulls.
fn document(paths: &mut Paths, pulls: &[(String, cairn_plugins::Pull)]) {
    let schema = match pulls {
        [(_, one)] => one.parameters.clone(),
        several => {
            json!({"oneOf": several.iter().map(|(_, p)| p.parameters.clone()).collect::<Vec<_>>()})
        }
    };
    let summary = pulls
        .iter()
        .map(|(id, p)| format!("{} ({id})", p.summary))
        .collect::<Vec<_>>()
        .join("; ");
    for item in paths.paths.values_mut() {
        if let Some(operation) = &mut item.post {
            operation.description = Some(format!(
                "{summary}. Runs in the background as a durable job with a checkpoint: a pull \
                 interrupted by a restart resumes from its last written page. One pull runs per \
                 tenant at a time; asking again while one is queued answers that one, and asking while \
                 one runs queues another to start when it ends."
            ));
            if let Ok(body) = serde_json::from_value(json!({
                "required": true,
                "content": {"application/json": {"schema": schema}}
            })) {
                operation.request_body = Some(body);
            }
        }
    }
}

/// Start a bulk pull in the background (deduplicated: one queued or
/// running per tenant); the body holds the pull's parameters.
#[utoipa::path(post, path = "/{area}/bulk-pull", tag = "integrations",
    params(("area" = String, Path)),
    responses((status = 202, body = SyncStarted),
              (status = 409, body = ErrorBody, description = "Not configured, or the tenant's connector has no bulk pull"),
              (status = 422, body = ErrorBody, description = "A parameter the pull refuses; `field` names it")))]
async fn start_pull(
    State(state): State<AppState>,
    caller: Caller,
    Extension(Area(area)): Extension<Area>,
    Json(parameters): Json<Value>,
) -> ApiResult<(StatusCode, Json<SyncStarted>)> {
    let (connector, _) = configured(&state, &caller, &area).await?;
    let pull = connector.descriptor.pull.as_ref().ok_or_else(|| {
        ApiError::Conflict(format!(
            "this tenant's {area} connector ({}) has no bulk pull",
            connector.descriptor.id
        ))
    })?;
    check_schema(&pull.parameters, &parameters, "body")?;
    let enqueued = state
        .jobs
        .enqueue(
            &caller.tenant_id,
            &pull_kind(&area),
            &json!({"parameters": parameters}),
        )
        .await?;
    Ok((StatusCode::ACCEPTED, Json(SyncStarted::from(enqueued))))
}

/// The current bulk pull (its progress and parameters) and recent ones.
#[utoipa::path(get, path = "/{area}/bulk-pull/status", tag = "integrations",
    params(("area" = String, Path)),
    responses((status = 200, body = SyncStatus)))]
async fn pull_status(
    State(state): State<AppState>,
    caller: Caller,
    Extension(Area(area)): Extension<Area>,
) -> ApiResult<Json<SyncStatus>> {
    Ok(Json(
        jobs_of_kind(&state, &caller, &pull_kind(&area)).await?,
    ))
}
