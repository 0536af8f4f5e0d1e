//! Cairn's host: storage, auth, tenancy and the HTTP API. See ARCHITECTURE.md
//! at the repository root for the map.

pub mod advisories;
pub mod allocator;
pub mod app;
pub mod auth;
pub mod csv_sources;
pub mod dashboards;
pub mod db;
pub mod devices;
pub mod http;
pub mod integrations;
pub mod inventory;
pub mod invites;
pub mod jobs;
pub mod language_model;
pub mod mail;
pub mod news;
pub mod plugins;
pub mod portal;
pub mod projects;
pub mod reports;
pub mod research;
pub mod server;
pub mod settings;
pub mod subscriptions;
pub mod tags;
pub mod tenancy;
pub mod threat_intel;
pub mod ticketing;
pub mod uploads;
pub mod vulnerabilities;
