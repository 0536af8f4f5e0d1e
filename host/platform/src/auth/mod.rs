//! Accounts, sessions and tokens: who the caller is.
//!
//! Identity is resolved once per request by [`identity::resolve_identity`]
//! (session cookie first, then bearer JWT) and read by the [`Caller`],
//! [`AdminCaller`] and [`OptionalCaller`] extractors that every route uses.
//!
//! Accounts, sessions, refresh tokens, JWTs, password hashing, and
//! `identity.rs`, which resolves the caller once per request (cookie, then
//! bearer) for the `Caller`, `AdminCaller` and `OptionalCaller` extractors.

mod identity;
mod jwt;
pub mod kept;
pub mod password;
mod routes;
pub mod secret_token;
pub mod storage;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub use identity::{
    caller_of, identity_key, resolve_identity, Acting, AdminCaller, AuthVia, Caller, OptionalCaller,
};
pub use jwt::JwtKeys;
pub use routes::{router, sign_in, validate_new_account, TokenResponse, SESSION_COOKIE};

/// A member's role within its tenant. `owner` and `admin` may manage members,
/// invites and organization settings. In a partner's own tenant,
/// `partner_admin` may do everything an admin may and act in every
/// customer; `partner_analyst` reads and triages in the customers assigned
/// to it (`/api/v1/partner/access`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Owner,
    Admin,
    Member,
    PartnerAdmin,
    PartnerAnalyst,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Member => "member",
            Role::PartnerAdmin => "partner_admin",
            Role::PartnerAnalyst => "partner_analyst",
        }
    }

    pub fn parse(raw: &str) -> Option<Role> {
        match raw {
            "owner" => Some(Role::Owner),
            "admin" => Some(Role::Admin),
            "member" => Some(Role::Member),
            "partner_admin" => Some(Role::PartnerAdmin),
            "partner_analyst" => Some(Role::PartnerAnalyst),
            _ => None,
        }
    }

    pub fn can_administer(self) -> bool {
        matches!(self, Role::Owner | Role::Admin | Role::PartnerAdmin)
    }

    /// Whether the role exists only in a partner's own tenant.
    pub fn is_partner_role(self) -> bool {
        matches!(self, Role::PartnerAdmin | Role::PartnerAnalyst)
    }
}

/// Lower-cases and trims an email; `None` if it is not plausibly an address.
pub fn normalize_email(raw: &str) -> Option<String> {
    let email = raw.trim().to_lowercase();
    let (local, domain) = email.split_once('@')?;
    let plausible = !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && email.len() <= 254
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    plausible.then_some(email)
}
