//! Request rate limits: the spec's per-route limits and a default per-minute
//! limit, keyed by user when signed in and by client address otherwise.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroU32;

use axum::extract::{ConnectInfo, Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use ipnet::IpNet;
use utoipa_axum::router::OpenApiRouter;

use crate::app::AppState;
use crate::auth::identity_key;
use cairn_core::http::error::ApiError;

/// Routes with a limit of their own.
#[derive(Debug, Clone, Copy)]
pub enum RouteLimit {
    /// 5 per minute per client address.
    Register,
    /// 10 per minute per client address.
    Login,
    /// 20 per hour per user.
    InviteCreate,
}

pub struct RateLimits {
    default: Option<DefaultKeyedRateLimiter<String>>,
    register: DefaultKeyedRateLimiter<String>,
    login: DefaultKeyedRateLimiter<String>,
    invite_create: DefaultKeyedRateLimiter<String>,
    trusted_proxies: Vec<IpNet>,
}

impl RateLimits {
    pub fn new(default_per_minute: u32, trusted_proxies: Vec<IpNet>) -> RateLimits {
        let per_minute = |n: u32| Quota::per_minute(NonZeroU32::new(n).expect("non-zero quota"));
        RateLimits {
            default: NonZeroU32::new(default_per_minute)
                .map(|n| RateLimiter::keyed(Quota::per_minute(n))),
            register: RateLimiter::keyed(per_minute(5)),
            login: RateLimiter::keyed(per_minute(10)),
            invite_create: RateLimiter::keyed(Quota::per_hour(
                NonZeroU32::new(20).expect("non-zero"),
            )),
            trusted_proxies,
        }
    }

    /// Forgets keys that are back to a full allowance, so memory stays bounded.
    pub fn shrink(&self) {
        if let Some(default) = &self.default {
            default.retain_recent();
        }
        self.register.retain_recent();
        self.login.retain_recent();
        self.invite_create.retain_recent();
    }

    fn limiter(&self, route: RouteLimit) -> &DefaultKeyedRateLimiter<String> {
        match route {
            RouteLimit::Register => &self.register,
            RouteLimit::Login => &self.login,
            RouteLimit::InviteCreate => &self.invite_create,
        }
    }

    /// The client's address: the peer, or the first `X-Forwarded-For` entry
    /// when the peer is a trusted proxy.
    pub fn client_ip(&self, request: &Request) -> IpAddr {
        let peer = request
            .extensions()
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip())
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        if !self.trusted_proxies.iter().any(|net| net.contains(&peer)) {
            return peer;
        }
        request
            .headers()
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .and_then(|first| first.trim().parse().ok())
            .unwrap_or(peer)
    }
}

fn check(limiter: &DefaultKeyedRateLimiter<String>, key: String) -> Result<(), ApiError> {
    limiter.check_key(&key).map_err(|not_until| {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        ApiError::RateLimited {
            retry_after_secs: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
        }
    })
}

fn rate_key(state: &AppState, request: &Request) -> String {
    identity_key(request).unwrap_or_else(|| format!("ip:{}", state.limits.client_ip(request)))
}

/// Middleware for every `/api` route: the default per-minute limit.
pub async fn default_limit(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    if let Some(limiter) = &state.limits.default {
        if let Err(err) = check(limiter, rate_key(&state, &request)) {
            return err.into_response();
        }
    }
    next.run(request).await
}

async fn route_limit(
    State((state, route)): State<(AppState, RouteLimit)>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(err) = check(state.limits.limiter(route), rate_key(&state, &request)) {
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
