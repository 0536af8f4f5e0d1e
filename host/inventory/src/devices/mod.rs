//! Devices: inventory items by device, unique device names with CSV
//! enrichment, and the NetBIOS asset view the rollup rebuild materializes
//! (see `inventory::rollup`), searchable with the structured search.
//!
//! `/api/v1/devices`: the asset view (`assets.rs`: allow-list with
//! `mdm.`/`edr.`/`scan.` fields, the shared device record's fields each area
//! fills, row and view), unique device names with CSV enrichment and
//! per-source stats (`storage.rs`); `directory_users.rs` sets each view's
//! `directory_user` with one lookup per page through the `UserDirectory`
//! the composition root hands in.

pub mod assets;
pub mod directory_users;
pub mod figures;
mod routes;
mod storage;

pub use directory_users::{Directory, DirectoryUser, UserDirectory};
pub use routes::router;
