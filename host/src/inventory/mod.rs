//! The inventory: software rollup, asset reconciliation, search. So far only
//! the version ordering the rollup uses (newest and oldest version).

pub mod version;
