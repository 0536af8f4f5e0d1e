//! The areas built on inventory, integrations and vulnerabilities: each a
//! folder with its routes, storage and logic, mounted by the binary.

pub mod advisories;
pub mod dashboards;
pub mod devices;
pub mod language_model;
pub mod news;
pub mod partner;
pub mod projects;
pub mod reports;
pub mod research;
pub mod subscriptions;
pub mod tags;
pub mod threat_intel;
pub mod ticketing;
