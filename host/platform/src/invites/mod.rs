//! `/api/v1/invites`: inviting people into a tenant.
//!
//! Tokens are random, shown once (in the mail or the creation response) and
//! stored as hashes. An invite is pending until accepted, revoked or expired.

mod routes;
mod storage;

pub use routes::{join_with_invite, router};
