//! The operator's routes (`/api/v1/admin/...`) and the handle they ask
//! the reload task through (`crate::reload` runs it).

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Extension;
use serde::Serialize;
use sha2::{Digest, Sha256};
use tokio::sync::{mpsc, oneshot};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::Json;
use cairn_platform::app::AppState;
use cairn_platform::auth::OptionalCaller;
use cairn_plugins::{PluginChanges, Skipped};

/// Where the operator's routes are mounted.
pub const ADMIN_PREFIX: &str = "/api/v1/admin";

/// The header carrying the operator's token (`admin_token`).
pub const ADMIN_TOKEN_HEADER: &str = "x-cairn-admin-token";

/// What a reload did, as the route answers it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Reloaded {
    /// The reload count every process on the database follows, after this
    /// reload; another process reads its own directory again when it moves
    /// (within about a second).
    pub generation: i64,
    /// What serves differently in this process since the reload before.
    pub changes: PluginChanges,
    /// Ids of the connectors serving now in this process.
    pub connectors: Vec<String>,
    /// Keys of the CSV providers serving now in this process.
    pub csv_providers: Vec<String>,
    /// Files that did not load, and why; a file that loaded before keeps
    /// its earlier module serving and says so.
    pub skipped: Vec<Skipped>,
}

/// Why a reload runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The operator asked (the route): every process follows.
    Asked,
    /// The watcher saw the directory change: others follow if it did.
    Directory,
    /// Another process reloaded: read this one's directory, tell no one.
    Elsewhere,
}

/// A reload asked of the reload task, and where its answer goes.
pub struct Ask {
    pub cause: Cause,
    pub reply: Option<oneshot::Sender<Result<Reloaded, String>>>,
}

/// Why a reload asked for did not happen.
#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error("the service is stopping; ask again once it has started")]
    Stopping,
    /// The directory could not be read or the service built again from it;
    /// the plugins loaded before keep serving.
    #[error("{0}")]
    Failed(String),
}

/// The way to ask the reload task for a reload.
#[derive(Clone)]
pub struct Reloads(pub(crate) mpsc::Sender<Ask>);

impl Reloads {
    /// A handle no task answers (the `openapi` command's router).
    pub fn detached() -> Reloads {
        channel().0
    }

    pub async fn ask(&self, cause: Cause) -> Result<Reloaded, ReloadError> {
        let (reply, answer) = oneshot::channel();
        self.0
            .send(Ask {
                cause,
                reply: Some(reply),
            })
            .await
            .map_err(|_| ReloadError::Stopping)?;
        answer
            .await
            .map_err(|_| ReloadError::Stopping)?
            .map_err(ReloadError::Failed)
    }
}

/// The receiving end of [`Reloads`], for `crate::reload::spawn`.
pub struct Receiver(pub(crate) mpsc::Receiver<Ask>);

/// A handle for the router and the receiver for `crate::reload::spawn`.
pub fn channel() -> (Reloads, Receiver) {
    let (sender, receiver) = mpsc::channel(16);
    (Reloads(sender), Receiver(receiver))
}

/// The operator's routes, mounted at [`ADMIN_PREFIX`].
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(reload_connectors))
}

/// Reads the connectors directory again on this process and has every
/// other process on the database read its own: new files load, replaced
/// files load their new module, removed files unload (their routes are
/// gone). A file that does not load leaves the module loaded from it
/// before serving and is listed in `skipped` with the reason. Syncs and
/// parses under way end on the module they started with. Needs the
/// operator's token (`admin_token`) in `X-Cairn-Admin-Token`.
#[utoipa::path(post, path = "/connectors/reload", tag = "admin",
    security(("operator_token" = [])),
    responses(
        (status = 200, body = Reloaded),
        (status = 401, body = ErrorBody, description = "No operator token sent"),
        (status = 403, body = ErrorBody, description = "Wrong operator token, or none configured"),
        (status = 409, body = ErrorBody, description = "The service is stopping"),
    ))]
async fn reload_connectors(
    State(state): State<AppState>,
    Extension(reloads): Extension<Reloads>,
    OptionalCaller(caller): OptionalCaller,
    headers: HeaderMap,
) -> ApiResult<Json<Reloaded>> {
    operator(&state, &headers, caller.is_some())?;
    match reloads.ask(Cause::Asked).await {
        Ok(reloaded) => Ok(Json(reloaded)),
        Err(stopping @ ReloadError::Stopping) => Err(ApiError::Conflict(stopping.to_string())),
        // Logged with its reason; the plugins loaded before keep serving.
        Err(ReloadError::Failed(reason)) => Err(ApiError::Internal(anyhow::anyhow!(reason))),
    }
}

/// The caller holds the operator's token. A tenant's user without it is
/// known but not allowed (403); no credential at all is a 401.
fn operator(state: &AppState, headers: &HeaderMap, signed_in: bool) -> ApiResult<()> {
    let Some(sent) = headers.get(ADMIN_TOKEN_HEADER) else {
        let needed = format!(
            "this route is the operator's: send the operator's token in {ADMIN_TOKEN_HEADER}"
        );
        return Err(match signed_in {
            true => ApiError::Forbidden(needed),
            false => ApiError::Unauthorized(needed),
        });
    };
    let configured = &state.settings.admin_token;
    if configured.is_empty() {
        return Err(ApiError::Forbidden(
            "operator routes are off: set CAIRN_ADMIN_TOKEN to use them".into(),
        ));
    }
    // Compared as digests: equal lengths, no early exit on a prefix.
    if Sha256::digest(sent.as_bytes()) != Sha256::digest(configured.as_bytes()) {
        return Err(ApiError::Forbidden(
            "the operator's token is not this one".into(),
        ));
    }
    Ok(())
}
