use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum_extra::extract::cookie::CookieJar;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::storage::{self, InviteRow, InviteStatus, NewInvite};
use crate::app::AppState;
use crate::auth::storage::{self as users, NewUser, UserRow};
use crate::auth::{normalize_email, password, secret_token, AdminCaller, Caller, Role};
use crate::http::rate_limit::{limit, RouteLimit};
use cairn_core::db::{is_unique_violation, now_ms, to_rfc3339};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path};

pub fn router(state: &AppState) -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(limit(
            OpenApiRouter::new().routes(routes!(create_invite)),
            state,
            RouteLimit::InviteCreate,
        ))
        .routes(routes!(list_invites))
        .routes(routes!(lookup_invite, revoke_invite))
        .routes(routes!(accept_invite))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateInvite {
    email: String,
    /// `member` (default) or `admin`; only an owner may invite an owner.
    role: Option<Role>,
    /// Days until the invite expires (1 to 30; default 7).
    expires_in_days: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct InviteView {
    id: String,
    email: String,
    role: Role,
    status: InviteStatus,
    /// User id of the issuer (null if that account was removed).
    invited_by: Option<String>,
    created_at: String,
    expires_at: String,
    accepted_at: Option<String>,
    revoked_at: Option<String>,
}

impl InviteView {
    fn new(row: &InviteRow, now: i64) -> InviteView {
        InviteView {
            id: row.id.clone(),
            email: row.email.clone(),
            role: row.role(),
            status: row.status(now),
            invited_by: row.invited_by.clone(),
            created_at: to_rfc3339(row.created_at),
            expires_at: to_rfc3339(row.expires_at),
            accepted_at: row.accepted_at.map(to_rfc3339),
            revoked_at: row.revoked_at.map(to_rfc3339),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct CreatedInvite {
    invite: InviteView,
    /// The invite token, shown only here and in the mail.
    token: String,
    /// The console's page for the invite (`/console/invites/{token}`): it
    /// shows the invite (`GET /api/v1/invites/{token}`) and accepts it
    /// (`POST /api/v1/invites/{token}/accept`).
    accept_url: String,
    /// True when the invite was mailed; false when SMTP is not configured.
    email_sent: bool,
}

#[derive(Serialize, ToSchema)]
pub struct InviteLookup {
    email: String,
    role: Role,
    organization: String,
    status: InviteStatus,
    expires_at: String,
}

#[derive(Deserialize, ToSchema)]
pub struct AcceptInvite {
    /// Password for the new account, or the existing account's password.
    password: String,
    name: Option<String>,
}

/// Create and email an invite (admin or owner; 20 per hour).
#[utoipa::path(post, path = "", tag = "invites", request_body = CreateInvite,
    responses(
        (status = 201, body = CreatedInvite),
        (status = 403, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Already a member, or a pending invite exists"),
        (status = 422, body = ErrorBody),
        (status = 429, body = ErrorBody),
    ))]
async fn create_invite(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(body): Json<CreateInvite>,
) -> ApiResult<(StatusCode, Json<CreatedInvite>)> {
    let email = normalize_email(&body.email)
        .ok_or_else(|| ApiError::validation("email", "not a valid email address"))?;
    let role = body.role.unwrap_or(Role::Member);
    crate::partner::check_role_fits(&state.db, &caller.tenant_id, role).await?;
    if role == Role::Owner && caller.role != Role::Owner {
        return Err(ApiError::Forbidden(
            "only an owner may invite an owner".into(),
        ));
    }
    let days = body
        .expires_in_days
        .unwrap_or(state.settings.invite_ttl_secs / 86_400);
    if !(1..=30).contains(&days) {
        return Err(ApiError::validation(
            "expires_in_days",
            "must be between 1 and 30",
        ));
    }
    if let Some((existing, _)) = users::user_with_password(&state.db, &email).await? {
        if existing.tenant_id == caller.tenant_id.as_str() {
            return Err(ApiError::Conflict("this person is already a member".into()));
        }
    }
    if storage::pending_for_email(&state.db, &caller.tenant_id, &email).await? {
        return Err(ApiError::Conflict(
            "a pending invite for this email exists; revoke it first".into(),
        ));
    }
    let token = secret_token::generate();
    let token_hash = secret_token::hash(&token);
    let row = storage::insert(
        &state.db,
        NewInvite {
            tenant: &caller.tenant_id,
            email: &email,
            role,
            token_hash: &token_hash,
            invited_by: caller.user_id.as_str(),
            expires_at: now_ms() + days * 86_400_000,
        },
    )
    .await?;
    let accept_url = format!(
        "{}/console/invites/{token}",
        state.settings.public_url.trim_end_matches('/')
    );
    let email_sent = send_invite_mail(&state, &row, &accept_url).await;
    Ok((
        StatusCode::CREATED,
        Json(CreatedInvite {
            invite: InviteView::new(&row, now_ms()),
            token,
            accept_url,
            email_sent,
        }),
    ))
}

async fn send_invite_mail(state: &AppState, invite: &InviteRow, accept_url: &str) -> bool {
    if !state.mailer.enabled() {
        // Development without SMTP: the operator needs the link to pass on.
        tracing::info!(invite_id = %invite.id, accept_url, "SMTP not configured; invite not mailed");
        return false;
    }
    let body = format!(
        "You have been invited to join an organization on Cairn as {role}.\n\n\
         Open this link to see the invite and accept it:\n{accept_url}\n\n\
         The invite expires at {expires}.\n",
        role = invite.role,
        expires = to_rfc3339(invite.expires_at),
    );
    match state
        .mailer
        .send(&invite.email, "You are invited to Cairn", body)
        .await
    {
        Ok(sent) => sent,
        Err(err) => {
            tracing::warn!(invite_id = %invite.id, error = %err, "sending invite mail failed");
            false
        }
    }
}

/// Invites issued by the caller; admins and owners see all of the tenant's.
#[utoipa::path(get, path = "", tag = "invites",
    responses((status = 200, body = Vec<InviteView>), (status = 401, body = ErrorBody)))]
async fn list_invites(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<InviteView>>> {
    let issuer = (!caller.role.can_administer()).then(|| caller.user_id.as_str());
    let rows = storage::list(&state.db, &caller.tenant_id, issuer).await?;
    let now = now_ms();
    Ok(Json(
        rows.iter().map(|row| InviteView::new(row, now)).collect(),
    ))
}

/// The invite for `token` if it can still be used; otherwise 404 or 410.
async fn usable_invite(state: &AppState, token: &str) -> ApiResult<(InviteRow, String)> {
    let (invite, organization) = storage::by_token_hash(&state.db, &secret_token::hash(token))
        .await?
        .ok_or(ApiError::NotFound("invite"))?;
    match invite.status(now_ms()) {
        InviteStatus::Pending => Ok((invite, organization)),
        InviteStatus::Accepted => Err(ApiError::Gone("this invite has already been used".into())),
        InviteStatus::Revoked => Err(ApiError::Gone("this invite was revoked".into())),
        InviteStatus::Expired => Err(ApiError::Gone("this invite has expired".into())),
    }
}

/// Public: verify an invite token and pre-fill signup.
#[utoipa::path(get, path = "/{invite}", tag = "invites", security(()),
    params(("invite" = String, Path, description = "The invite token")),
    responses(
        (status = 200, body = InviteLookup),
        (status = 404, body = ErrorBody, description = "Unknown token"),
        (status = 410, body = ErrorBody, description = "Expired, revoked or already used"),
    ))]
async fn lookup_invite(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> ApiResult<Json<InviteLookup>> {
    let (invite, organization) = usable_invite(&state, &token).await?;
    Ok(Json(InviteLookup {
        email: invite.email.clone(),
        role: invite.role(),
        organization,
        status: InviteStatus::Pending,
        expires_at: to_rfc3339(invite.expires_at),
    }))
}

/// Public: accept an invite. Creates the account for the invited email in the
/// inviting tenant with the invited role, or, for an account that signed up
/// on its own and is still alone in its tenant, moves it (its password is
/// required). Signs the user in.
#[utoipa::path(post, path = "/{invite}/accept", tag = "invites", security(()), request_body = AcceptInvite,
    params(("invite" = String, Path, description = "The invite token")),
    responses(
        (status = 201, body = crate::auth::TokenResponse, description = "Joined and signed in; sets the session cookie"),
        (status = 401, body = ErrorBody, description = "Wrong password for the existing account"),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "The account already belongs to a tenant with other members"),
        (status = 410, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
async fn accept_invite(
    State(state): State<AppState>,
    jar: CookieJar,
    Path(token): Path<String>,
    Json(body): Json<AcceptInvite>,
) -> ApiResult<Response> {
    let name = body
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    let user = join_with_invite(&state, &token, None, name, body.password).await?;
    crate::auth::sign_in(&state, jar, &user, StatusCode::CREATED).await
}

/// Joins the invite's tenant with the invite's role: a new account for the
/// invited email, or a fresh solo account moved over. `email`, when given
/// (registration), must be the invited one.
pub async fn join_with_invite(
    state: &AppState,
    token: &str,
    email: Option<&str>,
    name: Option<&str>,
    password: String,
) -> ApiResult<UserRow> {
    let (invite, _) = usable_invite(state, token).await?;
    if email.is_some_and(|e| e != invite.email) {
        return Err(ApiError::validation(
            "email",
            "this invite was issued to another email address",
        ));
    }
    // The slow password work happens before the transaction opens, so no
    // write lock is held while hashing.
    enum Plan {
        Move(UserRow),
        Create(String),
    }
    let plan = match users::user_with_password(&state.db, &invite.email).await? {
        Some((user, stored_hash)) => {
            if !password::verify_password(password, stored_hash).await {
                return Err(ApiError::Unauthorized(
                    "wrong password for the existing account".into(),
                ));
            }
            Plan::Move(user)
        }
        None => {
            crate::auth::validate_new_account(&invite.email, &password)?;
            Plan::Create(password::hash_password(password).await?)
        }
    };
    let _turn = state.db.write_turn().await;
    let mut tx = state.db.pool.begin().await?;
    let user = match plan {
        Plan::Move(user) => {
            if !storage::move_solo_user(&mut tx, &user.id, &invite.tenant_id, invite.role()).await?
            {
                return Err(ApiError::Conflict(
                    "this account already belongs to an organization with other members".into(),
                ));
            }
            UserRow {
                tenant_id: invite.tenant_id.clone(),
                role: invite.role().as_str().to_string(),
                ..user
            }
        }
        Plan::Create(password_hash) => {
            let new_user = NewUser {
                email: &invite.email,
                name,
                password_hash: &password_hash,
                role: invite.role(),
            };
            match users::insert_user(&mut *tx, &invite.tenant_id, new_user).await {
                Ok(user) => user,
                Err(err) if is_unique_violation(&err) => {
                    return Err(ApiError::Conflict(
                        "an account with this email already exists".into(),
                    ))
                }
                Err(err) => return Err(err.into()),
            }
        }
    };
    if !storage::claim(&mut tx, &invite.id, &user.id).await? {
        return Err(ApiError::Gone("this invite is no longer valid".into()));
    }
    tx.commit().await?;
    tracing::info!(user_id = %user.id, tenant_id = %user.tenant_id, invite_id = %invite.id, "invite accepted");
    Ok(user)
}

/// Revoke a pending invite (admin or owner).
#[utoipa::path(delete, path = "/{invite}", tag = "invites",
    params(("invite" = String, Path, description = "The invite's id (`invite_id`)")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No such invite in the caller's tenant"),
        (status = 409, body = ErrorBody, description = "Invite is not pending"),
    ))]
async fn revoke_invite(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(invite_id): Path<String>,
) -> ApiResult<StatusCode> {
    match storage::revoke(&state.db, &caller.tenant_id, &invite_id).await? {
        None => Err(ApiError::NotFound("invite")),
        Some(false) => Err(ApiError::Conflict(
            "only a pending invite can be revoked".into(),
        )),
        Some(true) => Ok(StatusCode::NO_CONTENT),
    }
}
