//! Advisories: warn exactly the people who run affected software. Search
//! CVEs and applications, draft the text (model or template), find the
//! affected devices and their users, send one e-mail per recipient through
//! SMTP from a durable job at a rate limit, and keep who got what.
//!
//! - `affected.rs`: the target (a CVE, or an application and versions)
//!   and its devices and users, read through the vulnerabilities,
//!   inventory and integrations areas' public functions;
//! - `draft.rs`: the facts and the text; `send.rs`: the sending job;
//! - `storage.rs`: `advisories` and `advisory_recipients`;
//!   `routes.rs`: `/api/v1/advisories`.
//!
//! Advisories. `affected.rs` the target (a CVE or an application and
//! versions) and its devices and users, read only through the
//! vulnerabilities (`cve_findings`), inventory (`items_of_application`,
//! `users_of_devices`) and integrations (`users_of_device_records`,
//! `directory_users_named`) areas' public functions; `draft.rs` the facts
//! and the text (model or template); `send.rs` the `advisories_send` job
//! (rate limited by `governor`, one message per recipient); `storage.rs`
//! `advisories` and `advisory_recipients`; `routes.rs` `/api/v1/advisories`.

mod affected;
mod draft;
mod routes;
mod send;
mod storage;

pub use draft::DRAFTED_BY;
pub use storage::{RECIPIENT_STATUSES, STATUSES};

use std::time::Duration;

use cairn_jobs::Registry;
use cairn_platform::app::AppState;
use cairn_platform::area::Area;

pub use routes::router;

/// Registers the sending job.
pub fn area(state: &AppState) -> anyhow::Result<Area> {
    let mut jobs = Registry::default();
    jobs.register(
        send::SEND_KIND,
        send::SendHandler::new(&state.settings)?,
        // A message waits for the rate limit and the mail server.
        Duration::from_secs(300),
    );
    Ok(Area::new("advisories")
        .routes("/api/v1/advisories", router())
        .jobs(jobs))
}
