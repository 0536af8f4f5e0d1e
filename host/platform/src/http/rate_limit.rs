//! Request rate limits on the routes: keyed by user when signed in and by
//! client address otherwise; the limits and their counts are `limits`.

use axum::extract::{Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use utoipa_axum::router::OpenApiRouter;

pub use super::limits::{RateLimits, RouteLimit};
use crate::app::AppState;
use crate::auth::identity_key;

fn rate_key(state: &AppState, request: &Request) -> String {
    identity_key(request).unwrap_or_else(|| format!("ip:{}", state.limits.client_ip(request)))
}

/// Middleware for every `/api` route: the default per-minute limit.
pub async fn default_limit(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(err) = state.limits.check_default(rate_key(&state, &request)).await {
        return err.into_response();
    }
    next.run(request).await
}

async fn route_limit(
    State((state, route)): State<(AppState, RouteLimit)>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(err) = state
        .limits
        .check_route(route, rate_key(&state, &request))
        .await
    {
        return err.into_response();
    }
    next.run(request).await
}

/// Puts every route of `router` under `route`'s limit.
pub fn limit(
    router: OpenApiRouter<AppState>,
    state: &AppState,
    route: RouteLimit,
) -> OpenApiRouter<AppState> {
    router.route_layer(from_fn_with_state((state.clone(), route), route_limit))
}
