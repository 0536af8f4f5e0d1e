//! Reports: documents a customer would accept (PDF) and spreadsheets an
//! analyst works from (CSV, XLSX), written in the background by a durable
//! job and kept in the data directory until downloaded, deleted or expired.
//!
//! - `content.rs`: what each report type says (key figures, a severity
//!   chart, tables), read through the public functions of the
//!   vulnerabilities, inventory and devices areas;
//! - `render.rs`: the three formats; `generate.rs`: the job;
//! - `storage.rs`: `reports`; `routes.rs`: `/api/v1/reports`.
//!
//! Reports. `content.rs` what each type says (key figures, the severity
//! chart, tables, each marked for documents, spreadsheets or both), read
//! through `vulnerabilities::figures:: open_findings`,
//! `inventory::storage::application_summaries` and `items_of_device`, and
//! `devices::figures`; `render.rs` writes CSV, XLSX (constant memory) or PDF
//! (`printpdf`); `generate.rs` the `report_generate` job (each queued report
//! of the tenant in turn, written to a `.partial` file renamed into place);
//! `storage.rs` `reports`; `routes.rs` `/api/v1/reports`; `mod.rs` the
//! retention sweep.

mod content;
mod generate;
mod partner_routes;
pub mod publish;
mod render;
mod routes;
mod schedules;
mod storage;

use std::time::Duration;

use cairn_core::blobs::BlobStore;
use cairn_core::db::Db;
use cairn_jobs::schedule::Schedule;
use cairn_jobs::Registry;
use cairn_platform::app::AppState;
use cairn_platform::area::Area;

pub use partner_routes::router as partner_router;
pub use routes::router;
pub use storage::STATUSES;

/// Registers the writing job; `shelf` publishes written reports into the
/// client portal's documents.
pub fn area(state: &AppState, shelf: publish::Shelves) -> anyhow::Result<Area> {
    let mut jobs = Registry::default();
    jobs.register(
        generate::GENERATE_KIND,
        generate::GenerateHandler {
            store: state.blobs.reports.clone(),
            clock: state.clock.clone(),
            shelf: shelf.clone(),
        },
        Duration::from_secs(600),
    );
    Ok(Area::new("reports")
        .routes("/api/v1/reports/", router().layer(axum::Extension(shelf)))
        .routes("/api/v1/partner", partner_router())
        .jobs(jobs)
        .schedule(schedules_sweep(state))
        .schedule(retention(
            state.db.clone(),
            state.blobs.reports.clone(),
            state.settings.report_retention_days,
        )))
}

/// Asks for the reports of due schedules.
fn schedules_sweep(state: &AppState) -> Schedule {
    let state = state.clone();
    let every = Duration::from_millis(state.settings.report_schedule_sweep_ms.max(50));
    Schedule::every("report schedules", every, move || {
        let state = state.clone();
        async move { schedules::sweep(&state).await }
    })
}

/// Every hour, deletes the reports (and files) finished more than
/// `retention_days` ago.
pub fn retention(db: Db, store: BlobStore, retention_days: u64) -> Schedule {
    Schedule::every("report retention", Duration::from_secs(3600), move || {
        let (db, store) = (db.clone(), store.clone());
        async move { prune(&db, &store, retention_days).await.map(|_| ()) }
    })
}

/// Deletes the reports finished more than `retention_days` ago; how many.
pub async fn prune(db: &Db, store: &BlobStore, retention_days: u64) -> sqlx::Result<usize> {
    let before = cairn_core::db::now_ms() - retention_days as i64 * 86_400_000;
    let expired = storage::expired(db, before).await?;
    for (tenant, id) in &expired {
        let tenant = cairn_core::ids::TenantId(tenant.clone());
        if let Some(Some(key)) = storage::delete(db, &tenant, id).await? {
            if let Err(err) = store.remove(&key).await {
                tracing::warn!(report_id = %id, error = %err, "removing an expired report's file failed");
            }
        }
    }
    Ok(expired.len())
}
