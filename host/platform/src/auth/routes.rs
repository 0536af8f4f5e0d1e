//! `/api/v1/auth`: register, login, me, refresh, bridge-token, logout.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum_extra::extract::cookie::{Cookie, CookieJar, SameSite};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::jwt::{Claims, TokenUse};
use super::password::{self, MAX_PASSWORD_LEN, MIN_PASSWORD_LEN};
use super::storage::{self, NewUser, UserRow};
use super::{normalize_email, AuthVia, Caller, Role};
use crate::app::AppState;
use crate::http::rate_limit::{limit, RouteLimit};
use cairn_core::db::{is_unique_violation, now_ms, to_rfc3339};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::Json;

/// Name of the browser session cookie.
pub const SESSION_COOKIE: &str = "cairn.session_token";

pub fn router(state: &AppState) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(limit(
            OpenApiRouter::new().routes(routes!(register)),
            state,
            RouteLimit::Register,
        ))
        .merge(limit(
            OpenApiRouter::new().routes(routes!(login)),
            state,
            RouteLimit::Login,
        ))
        .routes(routes!(me))
        .routes(routes!(refresh))
        .routes(routes!(bridge_token))
        .routes(routes!(logout))
        .routes(routes!(act_as, stop_acting))
}

#[derive(Deserialize, ToSchema)]
pub struct RegisterRequest {
    email: String,
    password: String,
    name: Option<String>,
    /// Name of the organization (tenant) to create; defaults from the email.
    organization: Option<String>,
    /// Join the inviting tenant instead of creating one.
    invite_token: Option<String>,
}

#[derive(Deserialize, ToSchema)]
pub struct LoginRequest {
    email: String,
    password: String,
}

#[derive(Deserialize, ToSchema)]
pub struct RefreshRequest {
    refresh_token: String,
}

#[derive(Deserialize, ToSchema, Default)]
pub struct LogoutRequest {
    /// Also revoke this refresh token.
    refresh_token: Option<String>,
}

/// A signed-in user's record.
#[derive(Serialize, ToSchema)]
pub struct UserView {
    id: String,
    email: String,
    name: Option<String>,
    tenant_id: String,
    role: Role,
    created_at: String,
    /// Present while a partner user acts in a customer: `tenant_id` and
    /// `role` are then the customer's and the role held there.
    #[serde(skip_serializing_if = "Option::is_none")]
    acting: Option<ActingView>,
}

impl From<&UserRow> for UserView {
    fn from(row: &UserRow) -> Self {
        UserView {
            id: row.id.clone(),
            email: row.email.clone(),
            name: row.name.clone(),
            tenant_id: row.tenant_id.clone(),
            role: row.role(),
            created_at: to_rfc3339(row.created_at),
            acting: None,
        }
    }
}

/// A partner user acting in a customer.
#[derive(Serialize, ToSchema)]
pub struct ActingView {
    /// The partner tenant the user belongs to.
    partner_id: String,
    /// The user's role in the partner tenant.
    partner_role: Role,
}

#[derive(Serialize, ToSchema)]
pub struct TokenResponse {
    access_token: String,
    /// Always `bearer`.
    token_type: &'static str,
    /// Seconds until the access token expires.
    expires_in: i64,
    refresh_token: String,
    user: UserView,
}

#[derive(Serialize, ToSchema)]
pub struct BridgeTokenResponse {
    access_token: String,
    token_type: &'static str,
    expires_in: i64,
}

/// Checks the fields of a new account; returns the normalized email.
pub fn validate_new_account(email: &str, password: &str) -> ApiResult<String> {
    let email = normalize_email(email)
        .ok_or_else(|| ApiError::validation("email", "not a valid email address"))?;
    let length = password.chars().count();
    if !(MIN_PASSWORD_LEN..=MAX_PASSWORD_LEN).contains(&length) {
        return Err(ApiError::validation(
            "password",
            format!("must be {MIN_PASSWORD_LEN} to {MAX_PASSWORD_LEN} characters"),
        ));
    }
    Ok(email)
}

/// Signs in `user`: a fresh access token, refresh token and session cookie.
pub async fn sign_in(
    state: &AppState,
    jar: CookieJar,
    user: &UserRow,
    status: StatusCode,
) -> ApiResult<Response> {
    let settings = &state.settings;
    let (access_token, expires_in) = sign_token(
        state,
        user,
        TokenUse::Access,
        settings.access_token_ttl_secs,
    )?;
    let (session, refresh_token) = storage::create_sign_in(
        &state.db,
        user,
        settings.session_ttl_secs,
        settings.refresh_token_ttl_secs,
    )
    .await?;
    let cookie = Cookie::build((SESSION_COOKIE, session))
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(settings.secure_cookies())
        .path("/")
        .max_age(time::Duration::seconds(settings.session_ttl_secs))
        .build();
    let body = TokenResponse {
        access_token,
        token_type: "bearer",
        expires_in,
        refresh_token,
        user: user.into(),
    };
    Ok((status, jar.add(cookie), axum::Json(body)).into_response())
}

fn sign_token(
    state: &AppState,
    user: &UserRow,
    token_use: TokenUse,
    ttl_secs: i64,
) -> ApiResult<(String, i64)> {
    sign_acting_token(state, user, None, token_use, ttl_secs)
}

/// A token for `user`, acting in the customer `act` when given.
fn sign_acting_token(
    state: &AppState,
    user: &UserRow,
    act: Option<String>,
    token_use: TokenUse,
    ttl_secs: i64,
) -> ApiResult<(String, i64)> {
    let now = now_ms() / 1000;
    let claims = Claims {
        sub: user.id.clone(),
        email: user.email.clone(),
        tid: user.tenant_id.clone(),
        role: user.role(),
        act,
        token_use,
        iat: now,
        exp: now + ttl_secs,
        jti: uuid::Uuid::new_v4().to_string(),
    };
    Ok((state.jwt.sign(&claims)?, ttl_secs))
}

/// Register a user. Without an invite this creates a new tenant with the user
/// as its owner; with `invite_token` the user joins the inviting tenant.
#[utoipa::path(post, path = "/register", tag = "auth", security(()), request_body = RegisterRequest,
    responses(
        (status = 201, body = TokenResponse, description = "Registered and signed in; sets the session cookie"),
        (status = 409, body = ErrorBody, description = "Email already registered"),
        (status = 410, body = ErrorBody, description = "Invite expired, revoked or used"),
        (status = 422, body = ErrorBody),
        (status = 429, body = ErrorBody, description = "More than 5 registrations a minute"),
    ))]
async fn register(
    State(state): State<AppState>,
    jar: CookieJar,
    Json(body): Json<RegisterRequest>,
) -> ApiResult<Response> {
    let email = validate_new_account(&body.email, &body.password)?;
    let name = body
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    if let Some(token) = body.invite_token.as_deref() {
        let user =
            crate::invites::join_with_invite(&state, token, Some(&email), name, body.password)
                .await?;
        return sign_in(&state, jar, &user, StatusCode::CREATED).await;
    }
    let organization = body
        .organization
        .as_deref()
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(String::from)
        .unwrap_or_else(|| format!("{email}'s organization"));
    let password_hash = password::hash_password(body.password).await?;
    let new_user = NewUser {
        email: &email,
        name,
        password_hash: &password_hash,
        role: Role::Owner,
    };
    let user = match storage::create_user_with_tenant(&state.db, new_user, &organization).await {
        Ok(user) => user,
        Err(err) if is_unique_violation(&err) => {
            return Err(ApiError::Conflict(
                "an account with this email already exists".into(),
            ))
        }
        Err(err) => return Err(err.into()),
    };
    tracing::info!(user_id = %user.id, tenant_id = %user.tenant_id, "registered new tenant owner");
    sign_in(&state, jar, &user, StatusCode::CREATED).await
}

/// Exchange email and password for an access token, a refresh token and a
/// session cookie.
#[utoipa::path(post, path = "/login", tag = "auth", security(()), request_body = LoginRequest,
    responses(
        (status = 200, body = TokenResponse, description = "Signed in; sets the session cookie"),
        (status = 401, body = ErrorBody, description = "Wrong email or password"),
        (status = 429, body = ErrorBody, description = "More than 10 attempts a minute"),
    ))]
async fn login(
    State(state): State<AppState>,
    jar: CookieJar,
    Json(body): Json<LoginRequest>,
) -> ApiResult<Response> {
    let email = body.email.trim().to_lowercase();
    let found = storage::user_with_password(&state.db, &email).await?;
    let stored_hash = found
        .as_ref()
        .map(|(_, hash)| hash.clone())
        .unwrap_or_else(|| password::decoy_hash().to_string());
    let verified = password::verify_password(body.password, stored_hash).await;
    match found {
        Some((user, _)) if verified => sign_in(&state, jar, &user, StatusCode::OK).await,
        _ => Err(ApiError::Unauthorized("wrong email or password".into())),
    }
}

/// The current user's record.
#[utoipa::path(get, path = "/me", tag = "auth",
    responses((status = 200, body = UserView), (status = 401, body = ErrorBody)))]
async fn me(caller: Caller) -> Json<UserView> {
    Json(UserView {
        id: caller.user_id.0,
        email: caller.email,
        name: caller.name,
        tenant_id: caller.tenant_id.0,
        role: caller.role,
        created_at: to_rfc3339(caller.created_at),
        acting: caller.acting.map(|a| ActingView {
            partner_id: a.partner_id.0,
            partner_role: a.partner_role,
        }),
    })
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ActAsRequest {
    /// A customer of the caller's partner tenant that the caller reaches.
    customer_id: String,
}

#[derive(Serialize, ToSchema)]
pub struct ActAsResponse {
    /// A bearer token acting in the customer (no refresh token: act again
    /// when it expires).
    access_token: String,
    token_type: &'static str,
    expires_in: i64,
    /// The customer tenant every route now reads.
    tenant_id: String,
    /// The role the partner role holds in the customer (`admin` for
    /// partner admins, `member` for analysts, who may read and triage).
    role: Role,
    partner_id: String,
}

/// Act in a customer as a partner user: every route then reads and writes
/// the customer's tenant, and every write is recorded in the partner's
/// audit trail with the caller's identity. With a session cookie the
/// session itself switches to the customer; the answer also carries a
/// bearer token acting there. Access is checked again on every request:
/// removing the customer or the analyst's assignment ends it at once.
#[utoipa::path(post, path = "/act-as", tag = "auth", request_body = ActAsRequest,
    responses(
        (status = 200, body = ActAsResponse),
        (status = 401, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "Not a customer the caller reaches (or not a partner user)"),
    ))]
async fn act_as(
    State(state): State<AppState>,
    caller: Caller,
    Json(body): Json<ActAsRequest>,
) -> ApiResult<Json<ActAsResponse>> {
    let user = storage::user_by_id(&state.db, caller.user_id.as_str())
        .await?
        .ok_or_else(|| ApiError::Unauthorized("account no longer exists".into()))?;
    let partner = cairn_core::ids::TenantId(user.tenant_id.clone());
    let role = crate::partner::acting_role(
        &state.db,
        (&partner, user.id.as_str(), user.role()),
        &body.customer_id,
    )
    .await?
    .ok_or(ApiError::NotFound("customer"))?;
    if let AuthVia::Session { session_id } = &caller.via {
        storage::set_session_acting(&state.db, session_id, Some(&body.customer_id)).await?;
    }
    let (access_token, expires_in) = sign_acting_token(
        &state,
        &user,
        Some(body.customer_id.clone()),
        TokenUse::Access,
        state.settings.access_token_ttl_secs,
    )?;
    tracing::info!(user_id = %user.id, partner_id = %user.tenant_id, customer_id = %body.customer_id, "acting in a customer");
    Ok(Json(ActAsResponse {
        access_token,
        token_type: "bearer",
        expires_in,
        tenant_id: body.customer_id,
        role,
        partner_id: user.tenant_id,
    }))
}

/// Stop acting: the session cookie reads the user's own tenant again. A
/// bearer token acting in a customer is simply dropped by the client.
#[utoipa::path(delete, path = "/act-as", tag = "auth",
    responses((status = 204, description = "Back in the user's own tenant"), (status = 401, body = ErrorBody)))]
async fn stop_acting(State(state): State<AppState>, caller: Caller) -> ApiResult<StatusCode> {
    if let AuthVia::Session { session_id } = &caller.via {
        storage::set_session_acting(&state.db, session_id, None).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// Issue a fresh access token for a refresh token. The refresh token is spent
/// and a new one returned.
#[utoipa::path(post, path = "/refresh", tag = "auth", security(()), request_body = RefreshRequest,
    responses(
        (status = 200, body = TokenResponse),
        (status = 401, body = ErrorBody, description = "Unknown, expired or already used refresh token"),
    ))]
async fn refresh(
    State(state): State<AppState>,
    Json(body): Json<RefreshRequest>,
) -> ApiResult<Json<TokenResponse>> {
    let invalid = || ApiError::Unauthorized("invalid or expired refresh token".into());
    let user_id = storage::spend_refresh_token(&state.db, &body.refresh_token)
        .await?
        .ok_or_else(invalid)?;
    let user = storage::user_by_id(&state.db, &user_id)
        .await?
        .ok_or_else(invalid)?;
    let (access_token, expires_in) = sign_token(
        &state,
        &user,
        TokenUse::Access,
        state.settings.access_token_ttl_secs,
    )?;
    let refresh_token =
        storage::create_refresh_token(&state.db, &user.id, state.settings.refresh_token_ttl_secs)
            .await?;
    Ok(Json(TokenResponse {
        access_token,
        token_type: "bearer",
        expires_in,
        refresh_token,
        user: (&user).into(),
    }))
}

/// Swap a valid session cookie for a short-lived bearer JWT.
#[utoipa::path(post, path = "/bridge-token", tag = "auth",
    responses(
        (status = 200, body = BridgeTokenResponse),
        (status = 401, body = ErrorBody, description = "No valid session cookie"),
    ))]
async fn bridge_token(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<BridgeTokenResponse>> {
    if !matches!(caller.via, AuthVia::Session { .. }) {
        return Err(ApiError::Unauthorized(
            "a session cookie is required".into(),
        ));
    }
    let user = storage::user_by_id(&state.db, caller.user_id.as_str())
        .await?
        .ok_or_else(|| ApiError::Unauthorized("account no longer exists".into()))?;
    // A session acting in a customer bridges into the same customer.
    let act = caller.acting.as_ref().map(|_| caller.tenant_id.0.clone());
    let (access_token, expires_in) = sign_acting_token(
        &state,
        &user,
        act,
        TokenUse::Bridge,
        state.settings.bridge_token_ttl_secs,
    )?;
    Ok(Json(BridgeTokenResponse {
        access_token,
        token_type: "bearer",
        expires_in,
    }))
}

/// Sign out: revokes the session (and the given refresh token) and clears the
/// cookie.
#[utoipa::path(post, path = "/logout", tag = "auth", request_body(content = Option<LogoutRequest>),
    responses((status = 204, description = "Signed out"), (status = 401, body = ErrorBody)))]
async fn logout(
    State(state): State<AppState>,
    caller: Caller,
    jar: CookieJar,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    // The body is optional, so it is parsed by hand rather than by `Json`.
    let body: LogoutRequest = if body.iter().all(u8::is_ascii_whitespace) {
        LogoutRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::validation("body", e.to_string()))?
    };
    if let AuthVia::Session { session_id } = &caller.via {
        storage::revoke_session(&state.db, session_id).await?;
    }
    if let Some(token) = body.refresh_token {
        storage::revoke_refresh_token(&state.db, caller.user_id.as_str(), &token).await?;
    }
    let jar = jar.remove(Cookie::build(SESSION_COOKIE).path("/"));
    Ok((StatusCode::NO_CONTENT, jar).into_response())
}
