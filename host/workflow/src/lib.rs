//! Workflow: what an analyst does about findings. Tags on CVEs, vendors
//! and products; projects (named sets of vendors and products with their
//! CVEs); tickets raised in the PSA from a vulnerability; remediation
//! SLAs (policies, due dates, exceptions; device tiers are the
//! inventory's, set through `/api/v1/sla/tiers`); automation rules that
//! open tickets, mail and call webhooks when findings start to match them;
//! remediation plans carried out through the RMM and verified by inventory.
//!
//! - Owns `tags`, `tag_assignments`, `projects`, `project_entries`,
//!   `vuln_tickets`, `sla_policies`, `sla_policy_changes` and
//!   `sla_exceptions`, `automation_rules`, `automation_rule_runs`,
//!   `automation_matches`, `automation_seen`, `automation_tickets`,
//!   `automation_deliveries`, `automation_log`, `automation_tenants`,
//!   `remediation_plans` and `remediation_items`.
//! - Faces: each module's `router()` under `/api/v1/tags`,
//!   `/api/v1/projects`, `/api/v1/psa`, `/api/v1/sla`,
//!   `/api/v1/automation` and `/api/v1/remediation`; `tags::tags_of`
//!   for the areas above that show a tenant's tags; `sla::applied` and
//!   `sla::standing_of` for the figures of a tenant's SLA.
//! - Calls: the platform, the inventory, the integrations (the psa
//!   connector's actions, the rmm connector's remediations) and the vulnerabilities through their public
//!   functions.

pub mod automation;
pub mod projects;
pub mod remediation;
pub mod sla;
pub mod tags;
pub mod ticketing;
