//! Projects: a tenant's named sets of vendors and products, and the CVEs
//! of the CVE store that name them, with the tenant's exposure to each.
//!
//! - `storage.rs`: `projects` and `project_entries`;
//! - `routes.rs`: `/api/v1/projects`.

mod routes;
mod storage;

pub use routes::router;

/// The area's routes; it has no jobs or schedules.
pub fn area(_state: &cairn_platform::app::AppState) -> anyhow::Result<cairn_platform::area::Area> {
    Ok(cairn_platform::area::Area::new("projects").routes("/api/v1/projects/", router()))
}
