//! Tenant and member rows, always scoped by the caller's tenant.

use crate::auth::storage::UserRow;
use crate::auth::Role;
use cairn_core::db::{now_ms, Db};
use cairn_core::ids::TenantId;

#[derive(Debug, sqlx_macros::FromRow)]
pub struct TenantRow {
    pub id: String,
    pub name: String,
    pub notification_email: Option<String>,
    pub timezone: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub member_count: i64,
}

pub async fn tenant(db: &Db, tenant: &TenantId) -> sqlx::Result<Option<TenantRow>> {
    sqlx::query_as(
        "SELECT t.id, t.name, t.notification_email, t.timezone, t.created_at, t.updated_at, \
         (SELECT COUNT(*) FROM users u WHERE u.tenant_id = t.id) AS member_count \
         FROM tenants t WHERE t.id = $1",
    )
    .bind(tenant.as_str())
    .fetch_optional(&db.pool)
    .await
}

pub struct TenantChanges<'a> {
    pub name: Option<&'a str>,
    /// `Some(None)` clears the address.
    pub notification_email: Option<Option<&'a str>>,
    pub timezone: Option<&'a str>,
}

pub async fn update_tenant(
    db: &Db,
    tenant: &TenantId,
    changes: TenantChanges<'_>,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    // COALESCE keeps the stored value for fields the caller did not send; the
    // notification email needs a flag because null is a value it can take.
    let (email_given, email) = match changes.notification_email {
        Some(value) => (1i64, value),
        None => (0i64, None),
    };
    sqlx::query(
        "UPDATE tenants SET name = COALESCE($1, name), \
         notification_email = CASE WHEN $2 = 1 THEN $3 ELSE notification_email END, \
         timezone = COALESCE($4, timezone), updated_at = $5 WHERE id = $6",
    )
    .bind(changes.name)
    .bind(email_given)
    .bind(email)
    .bind(changes.timezone)
    .bind(now_ms())
    .bind(tenant.as_str())
    .execute(&db.pool)
    .await?;
    Ok(())
}

pub async fn members(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<UserRow>> {
    sqlx::query_as(
        "SELECT u.id, u.tenant_id, u.email, u.name, u.role, u.created_at FROM users u \
         WHERE u.tenant_id = $1 ORDER BY u.created_at, u.id",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await
}

pub async fn member(db: &Db, tenant: &TenantId, member_id: &str) -> sqlx::Result<Option<UserRow>> {
    sqlx::query_as(
        "SELECT u.id, u.tenant_id, u.email, u.name, u.role, u.created_at FROM users u \
         WHERE u.tenant_id = $1 AND u.id = $2",
    )
    .bind(tenant.as_str())
    .bind(member_id)
    .fetch_optional(&db.pool)
    .await
}

/// Changes a member's role unless that would leave the tenant without an
/// owner; the check and the write are one statement so concurrent demotions
/// cannot both pass. Returns false when refused.
pub async fn set_role(
    db: &Db,
    tenant: &TenantId,
    member_id: &str,
    role: Role,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let result = sqlx::query(
        "UPDATE users SET role = $1, updated_at = $2 WHERE tenant_id = $3 AND id = $4 \
         AND ($1 = 'owner' OR role <> 'owner' OR \
              (SELECT COUNT(*) FROM users o WHERE o.tenant_id = $3 AND o.role = 'owner') > 1)",
    )
    .bind(role.as_str())
    .bind(now_ms())
    .bind(tenant.as_str())
    .bind(member_id)
    .execute(&db.pool)
    .await?;
    Ok(result.rows_affected() == 1)
}

/// Deletes a member's account (and with it its sessions and refresh tokens).
pub async fn remove_member(db: &Db, tenant: &TenantId, member_id: &str) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let result = sqlx::query("DELETE FROM users WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(member_id)
        .execute(&db.pool)
        .await?;
    Ok(result.rows_affected() == 1)
}
