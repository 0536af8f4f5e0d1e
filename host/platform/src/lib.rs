//! The platform every area stands on: the state handlers share
//! ([`app::AppState`]), what an area adds ([`area::Area`]), accounts,
//! sessions and the caller extractors, tenancy, partner accounts,
//! invites, rate limits, request metrics and the job routes.
//!
//! - Owns `tenants`, `users`, `sessions`, `refresh_tokens`, `invites`,
//!   `rate_limit_windows` and the partner tables (`partner_groups`,
//!   `partner_group_members`, `partner_analyst_scopes`, `partner_audit`,
//!   `partner_branding`), `processes` (who serves the database) and
//!   `connector_reloads` (the reload count every process follows).
//! - Faces: [`area()`] (its routes and schedules), the `Caller` and
//!   `PartnerCaller` extractors, `tenancy::exists`, `partner::acting_role`.
//! - Calls: the vocabulary, the job queue and the plugin host only.

pub mod app;
pub mod area;
pub mod auth;
pub mod connector_reloads;
pub mod http;
pub mod invites;
pub mod jobs_routes;
pub mod partner;
pub mod processes;
pub mod tenancy;

use std::time::Duration;

use cairn_jobs::schedule::Schedule;

use app::AppState;

/// The platform's own routes (accounts, the tenant, invites, jobs,
/// partner customers) and schedules (the job reaper, the rate limits'
/// shrinking).
pub fn area(state: &AppState) -> anyhow::Result<area::Area> {
    let limits = state.clone();
    Ok(area::Area::new("platform")
        .routes("/api/v1/auth", auth::router(state))
        .routes("/api/v1/tenant", tenancy::router())
        .routes("/api/v1/invites", invites::router(state))
        .routes("/api/v1/jobs", jobs_routes::router())
        .routes("/api/v1/partner", partner::router())
        .schedule(cairn_jobs::reaper::schedule(state.jobs.clone()))
        // The rate limiter forgets callers idle long enough (this
        // process's memory: in every process).
        .schedule(
            Schedule::every("rate limit shrink", Duration::from_secs(60), move || {
                let state = limits.clone();
                async move { state.limits.shrink().await }
            })
            .per_process(),
        ))
}
