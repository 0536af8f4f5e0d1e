//! Portal API keys: `chp_live_` and 40 random base62 characters, shown once
//! and stored as a SHA-256 hash; and the extractor that turns a presented
//! key into the portal client it belongs to.

use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use rand::Rng;
use sha2::{Digest, Sha256};

use cairn_core::db::now_ms;
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;
use cairn_platform::app::AppState;

pub const KEY_PREFIX: &str = "chp_live_";
const KEY_BODY_LEN: usize = 40;
const LAST_USED_RESOLUTION_MS: i64 = 60_000;
const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A fresh key (shown to the caller once).
pub fn mint() -> String {
    let mut rng = rand::thread_rng();
    let body: String = (0..KEY_BODY_LEN)
        .map(|_| BASE62[rng.gen_range(0..BASE62.len())] as char)
        .collect();
    format!("{KEY_PREFIX}{body}")
}

pub fn hash(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// What is shown of a key after minting: enough to tell keys apart.
pub fn display_prefix(key: &str) -> String {
    key.chars().take(KEY_PREFIX.len() + 6).collect()
}

/// Well-formed: the prefix, then at least 32 base62 characters.
fn well_formed(key: &str) -> bool {
    key.strip_prefix(KEY_PREFIX)
        .is_some_and(|body| body.len() >= 32 && body.bytes().all(|b| b.is_ascii_alphanumeric()))
}

/// The portal client a request acts for, from its `Authorization: Bearer
/// chp_live_...` header. Every portal query is scoped by both fields.
#[derive(Debug, Clone)]
pub struct PortalClient {
    pub tenant_id: TenantId,
    pub client_id: String,
}

impl FromRequestParts<AppState> for PortalClient {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let unauthorized = |why: &str| ApiError::Unauthorized(why.to_string());
        let value = parts
            .headers
            .get(header::AUTHORIZATION)
            .ok_or_else(|| {
                unauthorized("an API key is required: Authorization: Bearer chp_live_...")
            })?
            .to_str()
            .map_err(|_| unauthorized("malformed Authorization header"))?;
        let key = value
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, key)| key.trim())
            .ok_or_else(|| unauthorized("use the Bearer scheme with your API key"))?;
        if !well_formed(key) {
            return Err(unauthorized("malformed API key"));
        }
        let found: Option<(String, String, String, Option<i64>)> = sqlx::query_as(
            "SELECT id, tenant_id, client_id, last_used_at FROM portal_keys \
             WHERE key_hash = $1 AND revoked_at IS NULL",
        )
        .bind(hash(key))
        .fetch_optional(&state.db.pool)
        .await?;
        let (key_id, tenant_id, client_id, last_used) =
            found.ok_or_else(|| unauthorized("unknown or revoked API key"))?;
        // Last use to the minute is what an admin needs; writing on every
        // request would serialize reads behind SQLite's single writer.
        let now = now_ms();
        if last_used.is_none_or(|at| now - at > LAST_USED_RESOLUTION_MS) {
            let _turn = state.db.write_turn().await;
            sqlx::query("UPDATE portal_keys SET last_used_at = $2 WHERE id = $1")
                .bind(&key_id)
                .bind(now)
                .execute(&state.db.pool)
                .await?;
        }
        Ok(PortalClient {
            tenant_id: TenantId(tenant_id),
            client_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_keys_are_well_formed_and_distinct() {
        let a = mint();
        let b = mint();
        assert!(well_formed(&a) && well_formed(&b));
        assert_ne!(a, b);
        assert_eq!(a.len(), KEY_PREFIX.len() + KEY_BODY_LEN);
        assert!(!well_formed("chp_live_short"));
        assert!(!well_formed(&a.replace("chp_live_", "chp_test_")));
        assert!(!well_formed(&format!("{a}!")));
    }
}
