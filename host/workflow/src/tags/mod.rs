//! Tags: a tenant's labels (name, color, description; names unique
//! ignoring case) assigned to CVEs by id and to vendors and products by
//! name. Deleting a tag removes its assignments.
//!
//! - `storage.rs`: `tags` and `tag_assignments`;
//! - `routes.rs`: `/api/v1/tags`.

mod routes;
mod storage;

pub use routes::router;

/// The area's routes; it has no jobs or schedules.
pub fn area(_state: &cairn_platform::app::AppState) -> anyhow::Result<cairn_platform::area::Area> {
    Ok(cairn_platform::area::Area::new("tags").routes("/api/v1/tags/", router()))
}
pub use storage::{tags_of, EntityType, TagView};
