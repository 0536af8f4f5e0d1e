//! The inventory: the software rollup and the NetBIOS asset view derived
//! from inventory items, structured search over both, and the
//! `/api/v1/inventory` routes.
//!
//! - Owns `inventory_items` and `source_records` (written only through
//!   `items` and `records`, under an explicit `ReplaceRule`),
//!   `applications`, `vendors`, `assets`, `asset_terms`, `rollup_state`,
//!   `sync_seen`, `sync_completions`, and the device tiers that `tiers`
//!   writes on the assets (`device_tiers`, `device_tier_rules`; `rollup::tiers`).
//! - Faces: [`area`], `items`, `records` (with the declared views' reads,
//!   `records::collections`), `storage` and `devices` reads, `search`,
//!   `rollup::request`, `seen` (what a sync run saw, and its prune).
//! - Calls: the platform; what it needs of the areas above is a trait the
//!   composition root fills (`exposure::CveExposure`,
//!   `devices::UserDirectory`).
//!
//! The inventory area. `normalize.rs` holds the pure rules (installer-id
//! suffixes, NetBIOS key, control characters, platform labels); `version.rs`
//! the one version ordering (a total order, property-tested); `rollup/` the
//! rebuild: `build.rs` turns streamed inventory rows into applications
//! (through `counts.rs`, each application's tallies), vendors and assets (no
//! I/O, every rule unit-tested), `store.rs` reads them in one snapshot and
//! writes them in 1000-row transactions and keeps the request counter,
//! `changes.rs` reads the change queue (`rollup_changes`, filled by
//! triggers) into the groups it touches, `incremental.rs` folds it into the
//! stored rollup, `mod.rs` the `rollup` job handler (incremental where it
//! can, else whole) and the sweep. `search/` is the structured search engine
//! (request types, coercion, the compiler from query trees to SQL, the
//! runner with the tenant filter, `document.rs` the search document and the
//! one folding rule); each searchable area hands it a `Table` and a
//! `Catalog` (its allow-list). `applications.rs` is the applications
//! allow-list and view; `routes.rs`/`storage.rs` serve `/api/v1/inventory`.

pub mod application_fields;
pub mod applications;
pub mod assets;
pub mod changes;
pub mod devices;
pub mod exposure;
pub mod items;
pub mod normalize;
pub mod records;
pub mod rollup;
pub mod routes;
pub mod search;
pub mod seen;
pub mod software;
mod stamped;
pub mod tenants;
pub mod version;

pub mod storage;

pub use rollup::tiers;
pub use routes::router;

use cairn_platform::app::AppState;
use cairn_platform::area::Area;

/// The inventory and the devices: their routes, the rollup job and its
/// sweep. `exposure` is the vulnerabilities area as the rollup sees it
/// (the composition root's).
pub fn area(state: &AppState, exposure: exposure::Exposure) -> anyhow::Result<Area> {
    Ok(Area::new("inventory")
        .routes("/api/v1/inventory", routes::router())
        .routes("/api/v1/devices", devices::router())
        .jobs(rollup::jobs(exposure))
        .schedule(rollup::sweep(
            state.db.clone(),
            state.jobs.timing.reaper_interval,
        )))
}
