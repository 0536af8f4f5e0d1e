//! `/api/v1/tenant`: the caller's organization and its members.
//!
//! Every query here is filtered by the caller's tenant; a member id from
//! another tenant is simply not found.

mod routes;
mod storage;

pub use routes::router;
