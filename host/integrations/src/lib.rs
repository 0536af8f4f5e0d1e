//! Integrations: areas (edr, mdm, rmm, ... or a new one) served by
//! connectors; the per-tenant config of each area naming the connector it
//! uses; the routes of every area (`/api/v1/<area>/...`: the lifecycle ones
//! and those connectors declare, mounted concretely); and the sync pipeline
//! that turns a connector's pages into inventory items and source records.

pub mod areas;
mod collections;
mod config;
pub mod csv_sources;
mod declared;
mod descriptor_docs;
mod export;
mod health;
pub mod plugin_routes;
mod pulls;
mod routes;
pub mod seed;
pub mod storage;
pub mod sync;
mod user_links;

pub use config::{redacted_view, store_config, ConfigView, Merge};
pub use routes::{call_error, router};

mod views;
pub use collections::{
    of_type_by_field, record_json, typed_by_device_name, typed_by_key, typed_by_key_in_each,
    typed_records, typed_version, users_of_device_records, StoredRecord, TypedRecord,
};
pub use export::neutralized as neutralized_csv_cell;
pub use health::{sync_health, SyncHealth};
pub use user_links::{directory_users_named, DirectoryUser};

/// Shown instead of a stored secret; sending it back keeps the secret.
pub const REDACTED: &str = "********";

/// The job kind of an area's sync.
pub fn sync_kind(area: &str) -> String {
    format!("{area}_sync")
}

/// The job kind of an area's bulk pull.
pub fn pull_kind(area: &str) -> String {
    format!("{area}_pull")
}

/// Cancels the tenant's syncs and pulls of `area` (its config was removed
/// or switched): a running one stops at its next page, since its writes
/// are fenced on the config; a queued one never starts.
async fn cancel_area_jobs(
    db: &cairn_core::db::Db,
    tenant: &cairn_core::ids::TenantId,
    area: &str,
) -> sqlx::Result<()> {
    for kind in [sync_kind(area), pull_kind(area)] {
        cairn_jobs::storage::cancel_kind(db, tenant, &kind).await?;
    }
    Ok(())
}
