//! Platform core over HTTP, on SQLite and PostgreSQL.

mod auth;
mod integrations;
mod inventory;
mod search;
mod invites;
mod jobs;
mod oauth;
mod rmm;
mod service;
mod tenancy;
