//! Tags: a tenant's labels (name, color, description; names unique
//! ignoring case) assigned to CVEs by id and to vendors and products by
//! name. Deleting a tag removes its assignments.
//!
//! - `storage.rs`: `tags` and `tag_assignments`;
//! - `routes.rs`: `/api/v1/tags`.

mod routes;
mod storage;

pub use routes::router;
pub use storage::{tags_of, EntityType, TagView};
