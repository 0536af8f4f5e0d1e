//! Portal clients (a tenant's customer companies) and their keys.

use serde::Serialize;
use utoipa::ToSchema;

use super::keys;
use cairn_core::db::{is_unique_violation, now_ms, to_rfc3339, Db};
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;

#[derive(Debug, Serialize, ToSchema)]
pub struct PortalClientView {
    pub id: String,
    pub name: String,
    pub created_at: String,
    /// The customer tenant whose SLA exceptions this client decides
    /// through the portal API; absent when none is linked.
    pub customer_id: Option<String>,
}

pub async fn create(db: &Db, tenant: &TenantId, name: &str) -> Result<PortalClientView, ApiError> {
    let name = name.trim();
    if name.is_empty() || name.len() > 200 {
        return Err(ApiError::validation("name", "must be 1 to 200 characters"));
    }
    let id = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO portal_clients (id, tenant_id, name, created_at) VALUES ($1, $2, $3, $4)",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(name)
    .bind(now)
    .execute(&db.pool)
    .await
    .map_err(|err| {
        if is_unique_violation(&err) {
            ApiError::Conflict(format!("a portal client named {name} exists"))
        } else {
            err.into()
        }
    })?;
    Ok(PortalClientView {
        id,
        name: name.to_string(),
        created_at: to_rfc3339(now),
        customer_id: None,
    })
}

#[derive(sqlx_macros::FromRow)]
struct ClientRow {
    id: String,
    name: String,
    created_at: i64,
    customer_id: Option<String>,
}

impl ClientRow {
    fn view(self) -> PortalClientView {
        PortalClientView {
            id: self.id,
            name: self.name,
            created_at: to_rfc3339(self.created_at),
            customer_id: self.customer_id,
        }
    }
}

pub async fn list(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<PortalClientView>> {
    let rows: Vec<ClientRow> = sqlx::query_as(
        "SELECT id, name, created_at, customer_id FROM portal_clients WHERE tenant_id = $1 \
         ORDER BY name",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    Ok(rows.into_iter().map(ClientRow::view).collect())
}

/// One of the tenant's clients.
pub async fn get(
    db: &Db,
    tenant: &TenantId,
    client_id: &str,
) -> sqlx::Result<Option<PortalClientView>> {
    let row: Option<ClientRow> = sqlx::query_as(
        "SELECT id, name, created_at, customer_id FROM portal_clients \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(client_id)
    .fetch_optional(&db.pool)
    .await?;
    Ok(row.map(ClientRow::view))
}

/// Links the client to `customer` (a customer tenant of the client's
/// tenant, checked by the caller), or unlinks it; false when the client
/// is not the tenant's.
pub async fn set_customer(
    db: &Db,
    tenant: &TenantId,
    client_id: &str,
    customer: Option<&str>,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let set =
        sqlx::query("UPDATE portal_clients SET customer_id = $3 WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(client_id)
            .bind(customer)
            .execute(&db.pool)
            .await?;
    Ok(set.rows_affected() == 1)
}

/// The client, if it is the tenant's.
pub async fn exists(db: &Db, tenant: &TenantId, client_id: &str) -> sqlx::Result<bool> {
    let found: Option<String> =
        sqlx::query_scalar("SELECT id FROM portal_clients WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(client_id)
            .fetch_optional(&db.pool)
            .await?;
    Ok(found.is_some())
}

/// A key as listed: never the key itself.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyView {
    pub id: String,
    pub client_id: String,
    /// The first characters of the key, to tell keys apart.
    pub prefix: String,
    pub label: Option<String>,
    pub created_at: String,
    pub last_used_at: Option<String>,
    pub revoked_at: Option<String>,
}

/// A freshly minted key: the only time `key` is shown.
#[derive(Debug, Serialize, ToSchema)]
pub struct MintedKey {
    pub key: String,
    #[serde(flatten)]
    pub view: KeyView,
}

pub async fn mint_key(
    db: &Db,
    tenant: &TenantId,
    client_id: &str,
    label: Option<&str>,
) -> Result<MintedKey, ApiError> {
    if !exists(db, tenant, client_id).await? {
        return Err(ApiError::NotFound("portal client"));
    }
    let key = keys::mint();
    let id = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    let prefix = keys::display_prefix(&key);
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO portal_keys (id, tenant_id, client_id, key_hash, key_prefix, label, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(client_id)
    .bind(keys::hash(&key))
    .bind(&prefix)
    .bind(label)
    .bind(now)
    .execute(&db.pool)
    .await?;
    Ok(MintedKey {
        key,
        view: KeyView {
            id,
            client_id: client_id.to_string(),
            prefix,
            label: label.map(str::to_string),
            created_at: to_rfc3339(now),
            last_used_at: None,
            revoked_at: None,
        },
    })
}

type KeyRow = (
    String,
    String,
    String,
    Option<String>,
    i64,
    Option<i64>,
    Option<i64>,
);

pub async fn list_keys(db: &Db, tenant: &TenantId, client_id: &str) -> sqlx::Result<Vec<KeyView>> {
    let rows: Vec<KeyRow> = sqlx::query_as(
        "SELECT id, client_id, key_prefix, label, created_at, last_used_at, revoked_at FROM portal_keys \
         WHERE tenant_id = $1 AND client_id = $2 ORDER BY created_at DESC",
    )
    .bind(tenant.as_str())
    .bind(client_id)
    .fetch_all(&db.pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(
            |(id, client_id, prefix, label, created, used, revoked)| KeyView {
                id,
                client_id,
                prefix,
                label,
                created_at: to_rfc3339(created),
                last_used_at: used.map(to_rfc3339),
                revoked_at: revoked.map(to_rfc3339),
            },
        )
        .collect())
}

/// Revokes a key; false when the tenant has no such key.
pub async fn revoke_key(db: &Db, tenant: &TenantId, key_id: &str) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let found: Option<String> = sqlx::query_scalar(
        "UPDATE portal_keys SET revoked_at = COALESCE(revoked_at, $3) WHERE tenant_id = $1 AND id = $2 RETURNING id",
    )
    .bind(tenant.as_str())
    .bind(key_id)
    .bind(now_ms())
    .fetch_optional(&db.pool)
    .await?;
    Ok(found.is_some())
}

/// Looks a client up by name (for the CLI).
pub async fn id_by_name(db: &Db, tenant: &TenantId, name: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar("SELECT id FROM portal_clients WHERE tenant_id = $1 AND name = $2")
        .bind(tenant.as_str())
        .bind(name)
        .fetch_optional(&db.pool)
        .await
}
