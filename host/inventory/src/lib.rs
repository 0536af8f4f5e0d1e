//! The inventory: the software rollup and the NetBIOS asset view derived
//! from inventory items, structured search over both, and the
//! `/api/v1/inventory` routes.

pub mod applications;
pub mod assets;
pub mod changes;
pub mod exposure;
pub mod normalize;
pub mod rollup;
pub mod routes;
pub mod search;
pub mod seen;
pub mod software;
pub mod version;

pub use routes::router;
pub mod storage;
