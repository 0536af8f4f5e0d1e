//! Workflow: what an analyst does about findings. Tags on CVEs, vendors
//! and products; projects (named sets of vendors and products with their
//! CVEs); tickets raised in the PSA from a vulnerability. SLAs, automation
//! and remediation land here next.
//!
//! - Owns `tags`, `tag_assignments`, `projects`, `project_entries` and
//!   `vuln_tickets`.
//! - Faces: each module's `router()` under `/api/v1/tags`,
//!   `/api/v1/projects` and `/api/v1/psa`; `tags::tags_of` for the areas
//!   above that show a tenant's tags.
//! - Calls: the platform, the inventory, the integrations (the psa
//!   connector's actions) and the vulnerabilities through their public
//!   functions.

pub mod projects;
pub mod tags;
pub mod ticketing;
