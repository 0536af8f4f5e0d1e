//! Projects: a tenant's named sets of vendors and products, and the CVEs
//! of the CVE store that name them, with the tenant's exposure to each.
//!
//! - `storage.rs`: `projects` and `project_entries`;
//! - `routes.rs`: `/api/v1/projects`.

mod routes;
mod storage;

pub use routes::router;
