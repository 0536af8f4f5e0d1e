use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::storage::{self, TenantChanges};
use crate::app::AppState;
use crate::auth::storage::UserRow;
use crate::auth::{normalize_email, AdminCaller, Caller, Role};
use cairn_core::db::to_rfc3339;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_tenant, update_tenant))
        .routes(routes!(list_members))
        .routes(routes!(change_member_role, remove_member))
}

#[derive(Serialize, ToSchema)]
pub struct TenantView {
    id: String,
    name: String,
    notification_email: Option<String>,
    /// IANA time zone name.
    timezone: String,
    member_count: i64,
    /// The caller's role in this tenant.
    your_role: Role,
    created_at: String,
    updated_at: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantUpdate {
    name: Option<String>,
    /// An address, or null / empty to clear it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    notification_email: Option<Option<String>>,
    timezone: Option<String>,
}

/// Distinguishes an absent field (outer `None`) from an explicit null.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

#[derive(Serialize, ToSchema)]
pub struct MemberView {
    id: String,
    email: String,
    name: Option<String>,
    role: Role,
    joined_at: String,
}

impl From<&UserRow> for MemberView {
    fn from(row: &UserRow) -> Self {
        MemberView {
            id: row.id.clone(),
            email: row.email.clone(),
            name: row.name.clone(),
            role: row.role(),
            joined_at: to_rfc3339(row.created_at),
        }
    }
}

#[derive(Deserialize, ToSchema)]
pub struct RoleChange {
    role: Role,
}

async fn tenant_view(state: &AppState, caller: &Caller) -> ApiResult<TenantView> {
    let row = storage::tenant(&state.db, &caller.tenant_id)
        .await?
        .ok_or(ApiError::NotFound("tenant"))?;
    Ok(TenantView {
        id: row.id,
        name: row.name,
        notification_email: row.notification_email,
        timezone: row.timezone,
        member_count: row.member_count,
        your_role: caller.role,
        created_at: to_rfc3339(row.created_at),
        updated_at: to_rfc3339(row.updated_at),
    })
}

/// The caller's tenant.
#[utoipa::path(get, path = "/me", tag = "tenant",
    responses((status = 200, body = TenantView), (status = 401, body = ErrorBody)))]
async fn get_tenant(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<TenantView>> {
    Ok(Json(tenant_view(&state, &caller).await?))
}

/// Update organization name, notification email and time zone (admin or owner).
#[utoipa::path(patch, path = "/me", tag = "tenant", request_body = TenantUpdate,
    responses(
        (status = 200, body = TenantView),
        (status = 403, body = ErrorBody, description = "Caller is not admin or owner"),
        (status = 422, body = ErrorBody),
    ))]
async fn update_tenant(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(body): Json<TenantUpdate>,
) -> ApiResult<Json<TenantView>> {
    let name = body.name.as_deref().map(str::trim);
    if let Some(name) = name {
        if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
            return Err(ApiError::validation(
                "name",
                "must be 1 to 200 printable characters",
            ));
        }
    }
    let email = match &body.notification_email {
        None => None,
        Some(None) => Some(None),
        Some(Some(raw)) if raw.trim().is_empty() => Some(None),
        Some(Some(raw)) => Some(Some(normalize_email(raw).ok_or_else(|| {
            ApiError::validation("notification_email", "not a valid email address")
        })?)),
    };
    let timezone = body.timezone.as_deref().map(str::trim);
    if let Some(tz) = timezone {
        if !is_plausible_timezone(tz) {
            return Err(ApiError::validation(
                "timezone",
                "expected an IANA time zone such as Europe/Berlin or UTC",
            ));
        }
    }
    let changes = TenantChanges {
        name,
        notification_email: email.as_ref().map(|e| e.as_deref()),
        timezone,
    };
    storage::update_tenant(&state.db, &caller.tenant_id, changes).await?;
    Ok(Json(tenant_view(&state, &caller).await?))
}

/// IANA names are `UTC` or `Area/Location[/Sub]` made of letters, digits,
/// `_`, `-` and `+`.
pub fn is_plausible_timezone(tz: &str) -> bool {
    if tz == "UTC" {
        return true;
    }
    let parts: Vec<&str> = tz.split('/').collect();
    (2..=3).contains(&parts.len())
        && tz.len() <= 64
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+'))
        })
}

/// Members of the caller's tenant. Accounts are one table whichever way a
/// member signs in (session or bearer), so each member appears once.
#[utoipa::path(get, path = "/members", tag = "tenant",
    responses((status = 200, body = Vec<MemberView>), (status = 401, body = ErrorBody)))]
async fn list_members(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<MemberView>>> {
    let rows = storage::members(&state.db, &caller.tenant_id).await?;
    Ok(Json(rows.iter().map(MemberView::from).collect()))
}

/// Change a member's role (admin or owner). Only an owner may grant or take
/// away the owner role; the last owner cannot be demoted.
#[utoipa::path(patch, path = "/members/{member_id}", tag = "tenant", request_body = RoleChange,
    params(("member_id" = String, Path, description = "The member's user id")),
    responses(
        (status = 200, body = MemberView),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No such member in the caller's tenant"),
        (status = 409, body = ErrorBody, description = "Would leave the tenant without an owner"),
    ))]
async fn change_member_role(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(member_id): Path<String>,
    Json(body): Json<RoleChange>,
) -> ApiResult<Json<MemberView>> {
    let member = storage::member(&state.db, &caller.tenant_id, &member_id)
        .await?
        .ok_or(ApiError::NotFound("member"))?;
    crate::partner::check_role_fits(&state.db, &caller.tenant_id, body.role).await?;
    let touches_owner = member.role() == Role::Owner || body.role == Role::Owner;
    if touches_owner && caller.role != Role::Owner {
        return Err(ApiError::Forbidden(
            "only an owner may grant or change the owner role".into(),
        ));
    }
    if !storage::set_role(&state.db, &caller.tenant_id, &member_id, body.role).await? {
        return Err(ApiError::Conflict(
            "the tenant must keep at least one owner".into(),
        ));
    }
    let updated = storage::member(&state.db, &caller.tenant_id, &member_id)
        .await?
        .ok_or(ApiError::NotFound("member"))?;
    Ok(Json((&updated).into()))
}

/// Remove a member (admin or owner). Their account, sessions and tokens are
/// deleted. Owners can be removed only by an owner; nobody removes themselves.
#[utoipa::path(delete, path = "/members/{member_id}", tag = "tenant",
    params(("member_id" = String, Path, description = "The member's user id")),
    responses(
        (status = 204, description = "Removed"),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody),
        (status = 409, body = ErrorBody, description = "Caller tried to remove themselves"),
    ))]
async fn remove_member(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(member_id): Path<String>,
) -> ApiResult<StatusCode> {
    let member = storage::member(&state.db, &caller.tenant_id, &member_id)
        .await?
        .ok_or(ApiError::NotFound("member"))?;
    if member.id == caller.user_id.as_str() {
        return Err(ApiError::Conflict("you cannot remove yourself".into()));
    }
    if member.role() == Role::Owner && caller.role != Role::Owner {
        return Err(ApiError::Forbidden(
            "only an owner may remove an owner".into(),
        ));
    }
    if !storage::remove_member(&state.db, &caller.tenant_id, &member_id).await? {
        return Err(ApiError::NotFound("member"));
    }
    Ok(StatusCode::NO_CONTENT)
}
