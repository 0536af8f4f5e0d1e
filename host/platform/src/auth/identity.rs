//! Resolving the caller once per request, and the extractors that read it.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::Response;
use axum_extra::extract::cookie::CookieJar;
use serde::Serialize;
use utoipa::ToSchema;

use super::{storage, Role, SESSION_COOKIE};
use crate::app::AppState;
use cairn_core::http::error::ApiError;
use cairn_core::ids::{TenantId, UserId};

/// `{user_id, email, tenant_id, role}`, the same whichever way the caller
/// authenticated.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Caller {
    pub user_id: UserId,
    pub email: String,
    pub tenant_id: TenantId,
    pub role: Role,
    #[serde(skip)]
    pub via: AuthVia,
    /// Profile fields read by the same query, so `GET /auth/me` costs no
    /// second round trip.
    #[serde(skip)]
    pub name: Option<String>,
    #[serde(skip)]
    pub created_at: i64,
    /// Set while a partner user acts in one of its customers: `tenant_id`
    /// is then the customer, `role` the role the partner role grants there,
    /// and this names the partner and the user's own role in it.
    #[serde(skip)]
    pub acting: Option<Acting>,
}

/// A partner user acting in a customer tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acting {
    /// The partner tenant the user belongs to.
    pub partner_id: TenantId,
    /// The user's role in the partner tenant.
    pub partner_role: Role,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthVia {
    /// A server-side session; the id is the session row's id.
    Session {
        session_id: String,
    },
    Bearer,
}

/// What [`resolve_identity`] found, stored in the request extensions.
#[derive(Debug, Clone)]
enum Identity {
    Anonymous,
    Invalid(&'static str),
    Known(Caller),
}

/// Middleware: resolves the session cookie, then the bearer token, and leaves
/// the outcome for the extractors and the rate limiter. It never rejects a
/// request itself: public routes must work with a stale cookie.
pub async fn resolve_identity(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let identity = match identify(&state, request.headers()).await {
        Ok(identity) => identity,
        Err(err) => return axum::response::IntoResponse::into_response(err),
    };
    let by_cookie = matches!(
        &identity,
        Identity::Known(Caller {
            via: AuthVia::Session { .. },
            ..
        })
    );
    if by_cookie
        && !request.method().is_safe()
        && !same_site_origin(request.headers(), &state.settings.cors_origin_list())
    {
        // A browser sends the cookie with a cross-site request too; a
        // write it makes must come from a page of this service (or of an
        // origin the operator allowed), on top of the cookie's SameSite.
        return axum::response::IntoResponse::into_response(ApiError::Forbidden(
            "a write authenticated by the session cookie must come from this service's own pages"
                .into(),
        ));
    }
    request.extensions_mut().insert(identity);
    next.run(request).await
}

async fn identify(state: &AppState, headers: &HeaderMap) -> Result<Identity, ApiError> {
    let jar = CookieJar::from_headers(headers);
    let mut failure = None;
    if let Some(cookie) = jar.get(SESSION_COOKIE) {
        match storage::session_caller(&state.db, cookie.value()).await? {
            storage::SessionLookup::Found(caller) => return Ok(Identity::Known(caller)),
            storage::SessionLookup::ActingEnded => {
                failure = Some("acting session ended: the customer is no longer yours")
            }
            storage::SessionLookup::Missing => failure = Some("session expired or revoked"),
        }
    }
    if let Some(token) = bearer_token(headers) {
        let Some(claims) = state.jwt.verify(token) else {
            return Ok(Identity::Invalid("invalid or expired token"));
        };
        // Look the user up so that a removed member or a changed role takes
        // effect at once rather than when the token expires.
        return Ok(match storage::bearer_caller(&state.db, &claims).await? {
            storage::SessionLookup::Found(caller) => Identity::Known(caller),
            storage::SessionLookup::ActingEnded => {
                Identity::Invalid("acting session ended: the customer is no longer yours")
            }
            storage::SessionLookup::Missing => Identity::Invalid("token no longer valid"),
        });
    }
    Ok(failure.map_or(Identity::Anonymous, Identity::Invalid))
}

/// Whether a request's `Origin` (when it sends one) is this service's own
/// (the `Host` it was sent to) or one of `allowed`. Browsers send `Origin`
/// with every write; a client without one is not a browser.
fn same_site_origin(headers: &HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) else {
        return true;
    };
    let own = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| {
            origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                == Some(host)
        });
    own || allowed.iter().any(|a| a == origin)
}

fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        match parts.extensions.get::<Identity>() {
            Some(Identity::Known(caller)) => Ok(caller.clone()),
            Some(Identity::Invalid(reason)) => Err(ApiError::Unauthorized((*reason).into())),
            _ => Err(ApiError::Unauthorized("not authenticated".into())),
        }
    }
}

/// A caller with role owner or admin.
#[derive(Debug, Clone)]
pub struct AdminCaller(pub Caller);

impl<S: Send + Sync> FromRequestParts<S> for AdminCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let caller = Caller::from_request_parts(parts, state).await?;
        if !caller.role.can_administer() {
            return Err(ApiError::Forbidden(
                "this action needs role admin or owner".into(),
            ));
        }
        Ok(AdminCaller(caller))
    }
}

/// The caller if signed in; an invalid credential is still refused rather
/// than treated as anonymous.
#[derive(Debug, Clone)]
pub struct OptionalCaller(pub Option<Caller>);

impl<S: Send + Sync> FromRequestParts<S> for OptionalCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        match parts.extensions.get::<Identity>() {
            Some(Identity::Known(caller)) => Ok(OptionalCaller(Some(caller.clone()))),
            Some(Identity::Invalid(reason)) => Err(ApiError::Unauthorized((*reason).into())),
            _ => Ok(OptionalCaller(None)),
        }
    }
}

/// The signed-in caller of a request, once identity was resolved.
pub fn caller_of(request: &Request) -> Option<&Caller> {
    match request.extensions().get::<Identity>() {
        Some(Identity::Known(caller)) => Some(caller),
        _ => None,
    }
}

/// The rate-limit key of a signed-in caller (`user:<id>`), if any.
pub fn identity_key(request: &Request) -> Option<String> {
    match request.extensions().get::<Identity>() {
        Some(Identity::Known(caller)) => Some(format!("user:{}", caller.user_id.as_str())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_by_cookie_come_from_our_own_origin() {
        let allowed = vec!["https://console.example".to_string()];
        for (origin, host, ok) in [
            (None, "cairn.example", true),
            (Some("https://cairn.example"), "cairn.example", true),
            (Some("http://127.0.0.1:8000"), "127.0.0.1:8000", true),
            (Some("https://console.example"), "cairn.example", true),
            (Some("https://evil.example"), "cairn.example", false),
            (
                Some("https://cairn.example.evil.example"),
                "cairn.example",
                false,
            ),
            (Some("null"), "cairn.example", false),
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(header::HOST, host.parse().unwrap());
            if let Some(origin) = origin {
                headers.insert(header::ORIGIN, origin.parse().unwrap());
            }
            assert_eq!(
                same_site_origin(&headers, &allowed),
                ok,
                "{origin:?} to {host}"
            );
        }
    }
}
