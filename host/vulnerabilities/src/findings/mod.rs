//! Findings: each tenant's matched and reported exposures, what a person
//! decided of them, and every read over them. Every statement is scoped by
//! tenant.
//!
//! - `vocabulary`: what the others share (the open predicate, triage's
//!   SQL, matched and scanner findings as one table, a scan's scope and
//!   counts); a leaf.
//! - Writes: `writes` (scans, mappings, stored identifications, one scan's
//!   diff in one transaction), `scanner` (a scanner integration's
//!   findings copied beside them), `triage` (status and justification).
//! - Reads: `views` (the routes' reads), `figures` (dashboards and
//!   reports), `posture` (a partner's figures per customer), `weaknesses`
//!   (CWE counts), and the inventory's `CveExposure`.
//! - `due`: the SLA's due dates as the lists show them, through a trait
//!   the workflow area fills (it sits above this one).

pub mod due;
mod exposure;
pub mod figures;
pub mod posture;
pub mod scanner;
pub mod triage;
pub(crate) mod triage_routes;
pub mod views;
pub mod vocabulary;
pub mod weaknesses;
pub mod writes;

pub use exposure::exposure;
