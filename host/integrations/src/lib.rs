//! Integrations: areas (edr, mdm, rmm, ... or a new one) served by
//! connectors; the per-tenant config of each area naming the connector it
//! uses; the routes of every area (`/api/v1/<area>/...`: the lifecycle ones
//! and those connectors declare, mounted concretely); and the sync pipeline
//! that turns a connector's pages into inventory items and source records.
//!
//! - Owns `integration_configs`, `csv_uploads` and `source_records` (with
//!   the inventory's prune: the crossing `tests/table_owners.rs` lists);
//!   hands inventory rows to `cairn_inventory::items`.
//! - Faces: [`area`] and `csv_sources::area`; collections' typed reads
//!   (`typed_records`, `typed_by_key`, ...), `directory` for the devices.
//! - Calls: the platform, the plugin host (every connector call) and the
//!   inventory.
//!
//! Areas and their connectors. `areas.rs` resolves the connector a tenant's
//! config for an area uses (the one it names, else the area's only one);
//! per-tenant configs are per area (`config.rs`: the connector a save uses,
//! validation against its schema with secrets masked, switching products;
//! `secrets.rs`: AES-256-GCM at rest; `seed.rs`: startup seeding, with a
//! connector's declared `config_from`). `routes.rs` mounts, for every area
//! some loaded connector serves, the lifecycle routes concretely
//! (`/api/v1/rmm/config`: one handler per route, told its area by a request
//! extension, its OpenAPI operation re-keyed to the area and its POST body
//! documented from the connectors' config schemas, secrets write-only);
//! `declared.rs` mounts every view and action the area's connectors declare,
//! once per (method, path), dispatching each request to the tenant's
//! connector, with operations built by `descriptor_docs.rs`; `views.rs`
//! answers views and `collections.rs` holds their queries (list with search
//! and typed field filters over the `fields` JSON, by key, by device name,
//! aggregate, related). `user_links.rs` joins a record typed `user` (a
//! directory user) to what names it by UPN, mail or alias: other sources'
//! user rows (flags folded on), devices whose user it is (device records of
//! any area, inventory rows through `inventory::storage::devices_of_users`),
//! and answers the device views' `directory_user` lookup. `sync.rs` is the
//! one sync pipeline, one job kind per area (fetch -> map -> conform records
//! to the declared collections -> upsert the page's rows on a task of its
//! own while the next page is fetched and mapped, `CAIRN_SYNC_PAGE_WRITES`
//! pages at once on PostgreSQL; on SQLite one written while the next two are
//! prepared (deduplicated, hashed, serialized) before they wait their turn
//! -> save the checkpoint once a page and every page before it are in (a
//! page that brings no record and moves no cursor is neither checkpointed
//! nor progress, so a sync polling an upstream that never moves meets the
//! stale-sync guard, `CAIRN_SYNC_STALL_SECS`); prune unseen after a complete
//! run; queue a rollup; caps on pages, records per page and rows per run end
//! a run in error without pruning). Rows land in `inventory_items` and
//! `source_records` under the area (their `source`); an upsert rewrites a
//! row only when a content column differs, stamping it with the run, and
//! leaves an unchanged row as it is. `seen.rs` is how a run knows what it
//! saw anyway: each page's transaction stores the hashes of its keys in
//! `sync_seen`, and the prune after a complete run deletes the rows whose
//! hash no page stored, then forgets the pages and records the run's end in
//! `sync_completions`. A row's `updated_at` is thus when it last changed;
//! when it was last reported is the later of that and its source's last
//! completion (`seen::completed_runs`), which the rollup (asset last_seen)
//! and the device lists read. A record keeps its collection (`kind`), record
//! type and normalized `fields`. `pulls.rs` mounts `POST /<area>/bulk-pull`
//! and `GET /<area>/bulk-pull/status` for an area whose connector declares a
//! pull; the pull is a job of the sync pipeline in `RunMode::Pull` (the pull
//! stream, the user's parameters merged into the config, nothing pruned, its
//! own `sync_seen` pages forgotten at the end), and a sync's prune keeps the
//! pull's collections. `export.rs` streams an `Export` view as CSV from a
//! query on a task of its own through a bounded channel (formula cells
//! prefixed with `'`). `areas::invoke` runs an action of the tenant's
//! connector for a host feature.

mod area_routes;
pub mod areas;
use cairn_inventory::records::collections;
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
pub mod shared;
pub mod storage;
pub mod sync;
mod user_links;

use cairn_platform::app::AppState;
use cairn_platform::area::Area;

pub use area_routes::call_error;
pub use config::{redacted_view, store_config, ConfigView, Merge};
pub use routes::router;

mod views;
pub use collections::{
    of_type_by_field, record_json, typed_by_device_name, typed_by_key, typed_by_key_in_each,
    typed_records, typed_version, users_of_device_records, StoredRecord, TypedRecord,
};
pub use export::neutralized as neutralized_csv_cell;
pub use health::{sync_health, SyncHealth};
pub use user_links::{directory, directory_users_named, DirectoryUser};

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

/// The connector areas: their configs, syncs and bulk pulls, views and
/// actions, shared configs and the `/plugins` listing.
pub fn area(state: &AppState) -> anyhow::Result<Area> {
    Ok(Area::new("integrations")
        .routes("/api/v1/integrations/", plugin_routes::router())
        .routes("/api/v1", router(&state.plugins()))
        .routes("/api/v1/partner", shared::router())
        .jobs(jobs(state)))
}

/// One sync and one bulk-pull job kind per connector area, all run by the
/// same pipeline with the connector each tenant chose.
fn jobs(state: &AppState) -> cairn_jobs::Registry {
    let mut jobs = cairn_jobs::Registry::default();
    let settings = &state.settings;
    // The spec's stale-sync guard.
    let stall = std::time::Duration::from_secs(settings.sync_stall_secs.max(1));
    for area in state.plugins().areas() {
        for (kind, mode) in [
            (sync_kind(area), sync::RunMode::Sync),
            (pull_kind(area), sync::RunMode::Pull),
        ] {
            let handler = sync::SyncHandler {
                plugins: state.live_plugins.clone(),
                secrets: state.secrets.clone(),
                area: area.to_string(),
                caps: sync::SyncCaps::from_settings(settings),
                mode,
            };
            jobs.register(&kind, handler, stall);
        }
    }
    jobs
}
