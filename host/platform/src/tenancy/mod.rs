//! `/api/v1/tenant`: the caller's organization and its members.
//!
//! Every query here is filtered by the caller's tenant; a member id from
//! another tenant is simply not found.

mod routes;
mod storage;

pub use routes::{is_plausible_timezone, router};

/// Whether `user_id` is a member of `tenant` (for features that assign
/// work to a member).
pub async fn is_member(
    db: &cairn_core::db::Db,
    tenant: &cairn_core::ids::TenantId,
    user_id: &str,
) -> sqlx::Result<bool> {
    Ok(storage::member(db, tenant, user_id).await?.is_some())
}

/// Whether `tenant` exists (for settings that name a tenant).
pub async fn exists(
    db: &cairn_core::db::Db,
    tenant: &cairn_core::ids::TenantId,
) -> sqlx::Result<bool> {
    Ok(storage::tenant(db, tenant).await?.is_some())
}

/// The organization's name (for documents made for it).
pub async fn name_of(
    db: &cairn_core::db::Db,
    tenant: &cairn_core::ids::TenantId,
) -> sqlx::Result<Option<String>> {
    Ok(storage::tenant(db, tenant).await?.map(|t| t.name))
}

/// The e-mail of each member of `tenant`, by user id (to name who did
/// something in a tenant's records).
pub async fn member_emails(
    db: &cairn_core::db::Db,
    tenant: &cairn_core::ids::TenantId,
) -> sqlx::Result<std::collections::HashMap<String, String>> {
    Ok(storage::members(db, tenant)
        .await?
        .into_iter()
        .map(|m| (m.id, m.email))
        .collect())
}

/// Every member of `tenant`, by join date.
pub async fn members(
    db: &cairn_core::db::Db,
    tenant: &cairn_core::ids::TenantId,
) -> sqlx::Result<Vec<crate::auth::storage::UserRow>> {
    storage::members(db, tenant).await
}
