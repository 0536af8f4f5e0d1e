//! Platform core over HTTP, on SQLite and PostgreSQL.

mod advisories;
mod areas;
mod auth;
mod csv_sources;
mod dashboards;
mod device_search;
mod directory;
mod edr;
mod integrations;
mod inventory;
mod invites;
mod jobs;
mod mdm;
mod news;
mod oauth;
mod portal;
mod psa;
mod reports;
mod research;
mod rmm;
mod scanner;
mod search;
mod service;
mod tenancy;
mod vulnerabilities;
mod write_turns;
