//! Integrations: the per-tenant config of each loaded connector, its
//! lifecycle routes (`/api/v1/<integration>/...`, one set for every
//! connector, driven by its descriptor) and the sync pipeline that turns a
//! connector's pages into inventory items and source records.

mod routes;
pub mod secrets;
pub mod seed;
pub mod storage;
pub mod sync;

pub use routes::{call_error, router};
pub use secrets::SecretBox;

/// Shown instead of a stored secret; sending it back keeps the secret.
pub const REDACTED: &str = "********";

/// The job kind of a connector's sync.
pub fn sync_kind(integration: &str) -> String {
    format!("{integration}_sync")
}
