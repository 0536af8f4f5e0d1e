//! Users, sessions and refresh tokens.

use sqlx::{Any, Executor};

use super::jwt::Claims;
use super::{kept, secret_token, Acting, AuthVia, Caller, Role};
use cairn_core::db::{now_ms, Db};
use cairn_core::ids::{TenantId, UserId};

#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct UserRow {
    pub id: String,
    pub tenant_id: String,
    pub email: String,
    pub name: Option<String>,
    pub role: String,
    pub created_at: i64,
}

impl UserRow {
    pub fn role(&self) -> Role {
        // Roles are written only from the `Role` enum; anything else would be
        // a hand edit, treated as the least privileged role.
        Role::parse(&self.role).unwrap_or(Role::Member)
    }

    pub fn caller(&self, via: AuthVia) -> Caller {
        Caller {
            user_id: UserId(self.id.clone()),
            email: self.email.clone(),
            tenant_id: TenantId(self.tenant_id.clone()),
            role: self.role(),
            via,
            name: self.name.clone(),
            created_at: self.created_at,
            acting: None,
        }
    }

    /// The caller acting in `customer`, if the user's partner role still
    /// reaches it: the customer is still the partner's and, for an analyst,
    /// still assigned.
    async fn acting_caller(
        &self,
        db: &Db,
        customer: &str,
        via: AuthVia,
    ) -> sqlx::Result<SessionLookup> {
        let partner = TenantId(self.tenant_id.clone());
        let user = (&partner, self.id.as_str(), self.role());
        let Some(role) = crate::partner::acting_role(db, user, customer).await? else {
            return Ok(SessionLookup::ActingEnded);
        };
        let mut caller = self.caller(via);
        caller.acting = Some(Acting {
            partner_id: caller.tenant_id.clone(),
            partner_role: caller.role,
        });
        caller.tenant_id = TenantId(customer.to_string());
        caller.role = role;
        Ok(SessionLookup::Found(caller))
    }
}

/// What a session or token resolved to.
pub enum SessionLookup {
    Found(Caller),
    /// The session or token acts in a customer its user no longer reaches.
    ActingEnded,
    Missing,
}

const USER_COLUMNS: &str = "u.id, u.tenant_id, u.email, u.name, u.role, u.created_at";

pub async fn session_caller(db: &Db, token: &str) -> sqlx::Result<SessionLookup> {
    let hash = secret_token::hash(token);
    let credential = kept::Credential::Session(hash.clone());
    let stamp = match kept::get(db, &credential) {
        Ok(caller) => return Ok(SessionLookup::Found(caller)),
        Err(stamp) => stamp,
    };
    let row: Option<SessionUser> = sqlx::query_as(&format!(
        "SELECT s.id AS session_id, s.acting_tenant_id, s.expires_at, {USER_COLUMNS} \
         FROM sessions s JOIN users u ON u.id = s.user_id \
         WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2"
    ))
    .bind(hash)
    .bind(now_ms())
    .fetch_optional(&db.pool)
    .await?;
    let Some(row) = row else {
        return Ok(SessionLookup::Missing);
    };
    let via = AuthVia::Session {
        session_id: row.session_id,
    };
    let found = match &row.acting_tenant_id {
        Some(customer) => row.user.acting_caller(db, customer, via).await?,
        None => SessionLookup::Found(row.user.caller(via)),
    };
    if let (SessionLookup::Found(caller), Some(stamp)) = (&found, stamp) {
        kept::keep(db, credential, stamp, Some(row.expires_at), caller);
    }
    Ok(found)
}

#[derive(sqlx_macros::FromRow)]
struct SessionUser {
    session_id: String,
    acting_tenant_id: Option<String>,
    expires_at: i64,
    #[sqlx(flatten)]
    user: UserRow,
}

/// The caller a verified token names, if that user still belongs to the
/// token's tenant.
pub async fn bearer_caller(db: &Db, claims: &Claims) -> sqlx::Result<SessionLookup> {
    let credential = kept::Credential::Bearer {
        user: claims.sub.clone(),
        tenant: claims.tid.clone(),
        acting: claims.act.clone(),
    };
    let stamp = match kept::get(db, &credential) {
        Ok(caller) => return Ok(SessionLookup::Found(caller)),
        Err(stamp) => stamp,
    };
    let user = user_by_id(db, &claims.sub).await?;
    let Some(user) = user.filter(|u| u.tenant_id == claims.tid) else {
        return Ok(SessionLookup::Missing);
    };
    let found = match &claims.act {
        Some(customer) => user.acting_caller(db, customer, AuthVia::Bearer).await?,
        None => SessionLookup::Found(user.caller(AuthVia::Bearer)),
    };
    if let (SessionLookup::Found(caller), Some(stamp)) = (&found, stamp) {
        kept::keep(db, credential, stamp, None, caller);
    }
    Ok(found)
}

/// Points the session at `customer` (or back at the user's own tenant).
pub async fn set_session_acting(
    db: &Db,
    session_id: &str,
    customer: Option<&str>,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query("UPDATE sessions SET acting_tenant_id = $1 WHERE id = $2")
        .bind(customer)
        .bind(session_id)
        .execute(&db.pool)
        .await?;
    Ok(())
}

pub async fn user_by_id(db: &Db, user_id: &str) -> sqlx::Result<Option<UserRow>> {
    sqlx::query_as(&format!(
        "SELECT {USER_COLUMNS} FROM users u WHERE u.id = $1"
    ))
    .bind(user_id)
    .fetch_optional(&db.pool)
    .await
}

/// The user and its password hash, for login.
pub async fn user_with_password(db: &Db, email: &str) -> sqlx::Result<Option<(UserRow, String)>> {
    let row: Option<UserRowWithHash> = sqlx::query_as(&format!(
        "SELECT {USER_COLUMNS}, u.password_hash FROM users u WHERE u.email = $1"
    ))
    .bind(email)
    .fetch_optional(&db.pool)
    .await?;
    Ok(row.map(|r| (r.user, r.password_hash)))
}

#[derive(sqlx_macros::FromRow)]
struct UserRowWithHash {
    #[sqlx(flatten)]
    user: UserRow,
    password_hash: String,
}

pub struct NewUser<'a> {
    pub email: &'a str,
    pub name: Option<&'a str>,
    pub password_hash: &'a str,
    pub role: Role,
}

/// Creates a tenant named `tenant_name` with `user` as its first member.
/// A taken email surfaces as a unique violation.
pub async fn create_user_with_tenant(
    db: &Db,
    user: NewUser<'_>,
    tenant_name: &str,
) -> sqlx::Result<UserRow> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let tenant_id = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    sqlx::query("INSERT INTO tenants (id, name, timezone, created_at, updated_at) VALUES ($1, $2, 'UTC', $3, $3)")
        .bind(&tenant_id)
        .bind(tenant_name)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    let row = insert_user(&mut *tx, &tenant_id, user).await?;
    tx.commit().await?;
    Ok(row)
}

/// Inserts a user into an existing tenant, inside the caller's transaction.
pub async fn insert_user<'c, E>(
    executor: E,
    tenant_id: &str,
    user: NewUser<'_>,
) -> sqlx::Result<UserRow>
where
    E: Executor<'c, Database = Any>,
{
    let now = now_ms();
    let id = uuid::Uuid::now_v7().to_string();
    sqlx::query(
        "INSERT INTO users (id, tenant_id, email, name, password_hash, role, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
    )
    .bind(&id)
    .bind(tenant_id)
    .bind(user.email)
    .bind(user.name)
    .bind(user.password_hash)
    .bind(user.role.as_str())
    .bind(now)
    .execute(executor)
    .await?;
    Ok(UserRow {
        id,
        tenant_id: tenant_id.to_string(),
        email: user.email.to_string(),
        name: user.name.map(String::from),
        role: user.role.as_str().to_string(),
        created_at: now,
    })
}

/// Signs a user in: a browser session and a refresh token, written in one
/// transaction (one write turn on SQLite). Returns (session cookie value,
/// refresh token).
pub async fn create_sign_in(
    db: &Db,
    user: &UserRow,
    session_ttl_secs: i64,
    refresh_ttl_secs: i64,
) -> sqlx::Result<(String, String)> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let session = secret_token::generate();
    let now = now_ms();
    sqlx::query(
        "INSERT INTO sessions (id, token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(secret_token::hash(&session))
    .bind(&user.id)
    .bind(now)
    .bind(now + session_ttl_secs * 1000)
    .execute(&mut *tx)
    .await?;
    let refresh = insert_refresh_token(&mut *tx, &user.id, refresh_ttl_secs).await?;
    tx.commit().await?;
    Ok((session, refresh))
}

pub async fn revoke_session(db: &Db, session_id: &str) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query("UPDATE sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL")
        .bind(now_ms())
        .bind(session_id)
        .execute(&db.pool)
        .await?;
    Ok(())
}

pub async fn create_refresh_token(db: &Db, user_id: &str, ttl_secs: i64) -> sqlx::Result<String> {
    let _turn = db.write_turn().await;
    insert_refresh_token(&db.pool, user_id, ttl_secs).await
}

async fn insert_refresh_token<'c, E>(
    executor: E,
    user_id: &str,
    ttl_secs: i64,
) -> sqlx::Result<String>
where
    E: Executor<'c, Database = Any>,
{
    let token = secret_token::generate();
    let now = now_ms();
    sqlx::query(
        "INSERT INTO refresh_tokens (id, token_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(secret_token::hash(&token))
    .bind(user_id)
    .bind(now)
    .bind(now + ttl_secs * 1000)
    .execute(executor)
    .await?;
    Ok(token)
}

/// Spends a refresh token: revokes it and returns its user, in one statement
/// so that two concurrent uses cannot both succeed.
pub async fn spend_refresh_token(db: &Db, token: &str) -> sqlx::Result<Option<String>> {
    let _turn = db.write_turn().await;
    let now = now_ms();
    sqlx::query_scalar(
        "UPDATE refresh_tokens SET revoked_at = $1 \
         WHERE token_hash = $2 AND revoked_at IS NULL AND expires_at > $1 RETURNING user_id",
    )
    .bind(now)
    .bind(secret_token::hash(token))
    .fetch_optional(&db.pool)
    .await
}

pub async fn revoke_refresh_token(db: &Db, user_id: &str, token: &str) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query("UPDATE refresh_tokens SET revoked_at = $1 WHERE token_hash = $2 AND user_id = $3 AND revoked_at IS NULL")
        .bind(now_ms())
        .bind(secret_token::hash(token))
        .bind(user_id)
        .execute(&db.pool)
        .await?;
    Ok(())
}
