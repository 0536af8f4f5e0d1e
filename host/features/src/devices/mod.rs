//! Devices: inventory items by device, unique device names with CSV
//! enrichment, and the NetBIOS asset view the rollup rebuild materializes
//! (see `inventory::rollup`), searchable with the structured search.

pub mod assets;
mod directory_users;
pub mod figures;
mod routes;
mod storage;

pub use routes::router;
