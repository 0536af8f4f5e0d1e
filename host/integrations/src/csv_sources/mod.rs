//! CSV sources: operators' spreadsheets (CSV or Excel) parsed in the
//! background by `csv-provider` components into inventory items or records.
//!
//! - `parse`: file format, encodings, delimiter, header row and columns.
//! - `ingest`: the `csv_parse` job (one per tenant, uploads in order).
//! - `staging`: parsed rows wait in a file, then replace the source's rows
//!   in one transaction; a failed parse changes nothing.
//! - `storage`: the `csv_uploads` table and the source's rows as routes
//!   read them. `routes`: `/api/v1/csv-sources/...` and
//!   `/api/v1/inventory/upload(s)`.
//!
//! CSV/Excel ingestion. `parse/` reads a file as rows (xlsx by zip signature
//! through calamine's streaming cell reader after a zip-bomb look at the
//! directory; CSV with BOM/UTF-16 decoding, delimiter sniffing and a 1 MB
//! line guard) and `parse/header.rs` finds the header by the provider's
//! signal columns and matches columns ignoring case, spaces and punctuation;
//! `ingest.rs` is the `csv_parse` job (one per tenant, waiting uploads in
//! order; a blocking reader thread feeds batches to the provider's
//! `map-rows`); `staging.rs` keeps mapped rows in a file and swaps them in
//! (an upsert from one bound JSON array per 5,000 rows, each its own
//! transaction, then the integrations' chunked prune of the rows the upload
//! did not stamp); `storage.rs` the `csv_uploads` table and the source's
//! rows; `routes.rs` `/api/v1/csv-sources/...` and
//! `/api/v1/inventory/upload(s)`.

mod ingest;
mod parse;
mod routes;
mod staging;
pub mod storage;

use std::time::Duration;

pub use ingest::{CsvParseHandler, CSV_PARSE_KIND};
/// The formats an upload is read as.
pub const UPLOAD_FORMATS: [&str; 2] = parse::Format::NAMES;
pub use routes::router;

use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_jobs::schedule::Schedule;
use cairn_jobs::Registry;
use cairn_platform::app::AppState;
use cairn_platform::area::Area;

/// Key of the generic software inventory provider, the one behind
/// `POST /api/v1/inventory/upload`.
pub const GENERIC_SOFTWARE: &str = "software-inventory";

/// CSV sources: the uploads' routes, the `csv_parse` job kind and the
/// sweep that gives a waiting upload its job.
pub fn area(state: &AppState) -> anyhow::Result<Area> {
    let mut jobs = Registry::default();
    jobs.register(
        CSV_PARSE_KIND,
        CsvParseHandler {
            plugins: state.live_plugins.clone(),
            uploads: state.blobs.uploads.clone(),
            staging_dir: state.settings.csv_uploads_dir.join("staging"),
        },
        ingest::STALL_TIMEOUT,
    );
    Ok(Area::new("csv sources")
        .routes("/api/v1", router())
        .jobs(jobs)
        .schedule(sweep(state.db.clone(), state.jobs.timing.reaper_interval)))
}

/// Makes sure every tenant with a waiting upload has a parse job. An upload
/// that arrives while its tenant's job is finishing joins that job (the
/// queue keeps one per tenant) after its last look; this catches it once
/// that job has ended. A tenant whose parse is still running gets no job
/// behind it: the running parse takes the waiting uploads in turn.
pub fn sweep(db: Db, every: Duration) -> Schedule {
    Schedule::every("csv upload sweep", every, move || {
        let db = db.clone();
        async move {
            for (tenant, store) in storage::tenants_waiting(&db, every.as_millis() as i64).await? {
                let tenant = TenantId(tenant);
                // For the process holding the upload's file.
                let queued = cairn_jobs::enqueue_held_unless_live(
                    &db,
                    &tenant,
                    CSV_PARSE_KIND,
                    &serde_json::json!({}),
                    &store,
                )
                .await;
                if let Err(err) = queued {
                    tracing::warn!(error = %err, "csv upload sweep could not enqueue");
                }
            }
            Ok::<(), sqlx::Error>(())
        }
    })
}
