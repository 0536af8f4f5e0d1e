//! The platform every area stands on: the state handlers share
//! ([`app::AppState`]), accounts, sessions and the caller extractors,
//! tenancy, partner accounts, invites, rate limits, request metrics and the job routes.

pub mod app;
pub mod auth;
pub mod http;
pub mod invites;
pub mod jobs_routes;
pub mod partner;
pub mod tenancy;
