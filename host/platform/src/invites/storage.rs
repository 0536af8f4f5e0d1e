use sqlx::{Any, Transaction};

use crate::auth::Role;
use cairn_core::db::{now_ms, Db};
use cairn_core::ids::TenantId;

#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct InviteRow {
    pub id: String,
    pub tenant_id: String,
    pub email: String,
    pub role: String,
    pub invited_by: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
    pub accepted_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum InviteStatus {
    Pending,
    Accepted,
    Revoked,
    Expired,
}

impl InviteRow {
    pub fn status(&self, now: i64) -> InviteStatus {
        if self.accepted_at.is_some() {
            InviteStatus::Accepted
        } else if self.revoked_at.is_some() {
            InviteStatus::Revoked
        } else if self.expires_at <= now {
            InviteStatus::Expired
        } else {
            InviteStatus::Pending
        }
    }

    pub fn role(&self) -> Role {
        Role::parse(&self.role).unwrap_or(Role::Member)
    }
}

const COLUMNS: &str =
    "id, tenant_id, email, role, invited_by, created_at, expires_at, accepted_at, revoked_at";

pub struct NewInvite<'a> {
    pub tenant: &'a TenantId,
    pub email: &'a str,
    pub role: Role,
    pub token_hash: &'a str,
    pub invited_by: &'a str,
    pub expires_at: i64,
}

pub async fn insert(db: &Db, invite: NewInvite<'_>) -> sqlx::Result<InviteRow> {
    let _turn = db.write_turn().await;
    let id = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    sqlx::query(
        "INSERT INTO invites (id, tenant_id, email, role, token_hash, invited_by, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&id)
    .bind(invite.tenant.as_str())
    .bind(invite.email)
    .bind(invite.role.as_str())
    .bind(invite.token_hash)
    .bind(invite.invited_by)
    .bind(now)
    .bind(invite.expires_at)
    .execute(&db.pool)
    .await?;
    Ok(InviteRow {
        id,
        tenant_id: invite.tenant.as_str().to_string(),
        email: invite.email.to_string(),
        role: invite.role.as_str().to_string(),
        invited_by: Some(invite.invited_by.to_string()),
        created_at: now,
        expires_at: invite.expires_at,
        accepted_at: None,
        revoked_at: None,
    })
}

pub async fn pending_for_email(db: &Db, tenant: &TenantId, email: &str) -> sqlx::Result<bool> {
    let count: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM invites WHERE tenant_id = $1 AND email = $2 \
         AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $3",
    )
    .bind(tenant.as_str())
    .bind(email)
    .bind(now_ms())
    .fetch_one(&db.pool)
    .await?;
    Ok(count > 0)
}

/// Invites of the tenant, newest first; only `issued_by`'s when given.
pub async fn list(
    db: &Db,
    tenant: &TenantId,
    issued_by: Option<&str>,
) -> sqlx::Result<Vec<InviteRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM invites WHERE tenant_id = $1 AND (CAST($2 AS TEXT) IS NULL OR invited_by = $2) \
         ORDER BY created_at DESC, id DESC"
    ))
    .bind(tenant.as_str())
    .bind(issued_by)
    .fetch_all(&db.pool)
    .await
}

pub async fn by_token_hash(db: &Db, token_hash: &str) -> sqlx::Result<Option<(InviteRow, String)>> {
    let row: Option<InviteWithTenant> = sqlx::query_as(&format!(
        "SELECT i.{}, t.name AS tenant_name FROM invites i JOIN tenants t ON t.id = i.tenant_id \
         WHERE i.token_hash = $1",
        COLUMNS.replace(", ", ", i.")
    ))
    .bind(token_hash)
    .fetch_optional(&db.pool)
    .await?;
    Ok(row.map(|r| (r.invite, r.tenant_name)))
}

#[derive(sqlx_macros::FromRow)]
struct InviteWithTenant {
    #[sqlx(flatten)]
    invite: InviteRow,
    tenant_name: String,
}

/// Marks a pending invite accepted, inside the caller's transaction; false if
/// it stopped being pending meanwhile (so two accepts cannot both win).
pub async fn claim(
    tx: &mut Transaction<'_, Any>,
    invite_id: &str,
    user_id: &str,
) -> sqlx::Result<bool> {
    let now = now_ms();
    let result = sqlx::query(
        "UPDATE invites SET accepted_at = $1, accepted_by = $2 WHERE id = $3 \
         AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $1",
    )
    .bind(now)
    .bind(user_id)
    .bind(invite_id)
    .execute(&mut **tx)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Revokes a pending invite of the tenant. `None` if there is no such invite.
pub async fn revoke(db: &Db, tenant: &TenantId, invite_id: &str) -> sqlx::Result<Option<bool>> {
    let _turn = db.write_turn().await;
    let now = now_ms();
    let Some(invite): Option<InviteRow> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM invites WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(invite_id)
    .fetch_optional(&db.pool)
    .await?
    else {
        return Ok(None);
    };
    if invite.status(now) != InviteStatus::Pending {
        return Ok(Some(false));
    }
    let result = sqlx::query(
        "UPDATE invites SET revoked_at = $1 WHERE tenant_id = $2 AND id = $3 \
         AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > $1",
    )
    .bind(now)
    .bind(tenant.as_str())
    .bind(invite_id)
    .execute(&db.pool)
    .await?;
    Ok(Some(result.rows_affected() == 1))
}

/// Moves a user who is the only member of their own tenant into the
/// invite's tenant. False if they are not alone in their tenant.
pub async fn move_solo_user(
    tx: &mut Transaction<'_, Any>,
    user_id: &str,
    tenant_id: &str,
    role: Role,
) -> sqlx::Result<bool> {
    let result = sqlx::query(
        "UPDATE users SET tenant_id = $1, role = $2, updated_at = $3 WHERE id = $4 \
         AND (SELECT COUNT(*) FROM users o WHERE o.tenant_id = users.tenant_id) = 1",
    )
    .bind(tenant_id)
    .bind(role.as_str())
    .bind(now_ms())
    .bind(user_id)
    .execute(&mut **tx)
    .await?;
    Ok(result.rows_affected() == 1)
}
