//! Vulnerabilities: a CVE knowledge base shared by every tenant (NVD CVE
//! API 2.0 and feeds, CVE JSON 5 records, CISA KEV, FIRST EPSS, MITRE
//! CWE), the matching of each tenant's installed software against it, and
//! the tenant's findings and scans.
//!
//! - Owns every `vuln_` table: the global reference data and each
//!   tenant's findings, scans and triage.
//! - Faces: [`area`], `figures`, `views`, `research`, `exposure()` (the
//!   inventory's `CveExposure`).
//! - Calls: the platform, the inventory and the integrations (scanner
//!   records) through their public functions.
//!
//! - `records`, `feeds`, `cpe`: parsing (pure).
//! - `reference`: the global tables; `import`: offline loads;
//!   `sources`: the online loads as jobs and their schedule.
//! - `identify`: application → CPE product (tenant mapping, the shipped
//!   translation table, a dictionary lookup where vendor and product must
//!   agree); `matching`: version ranges → CVEs with provenance and fix.
//! - `research`: one CVE from the store, else fetched from NVD and stored.
//! - `scan`: the `vuln_scan` job; `findings`: per-tenant writes;
//!   `scanner_findings`: the findings a scanner integration reported,
//!   copied for the views;
//!   `views`: per-tenant reads; `routes`: `/api/v1/vulnerabilities`.
//! - `vocabulary`: what those findings modules share (the open predicate,
//!   triage's SQL, `ALL_FINDINGS`, a scan's scope and counts, the
//!   announcement of a findings write); a leaf, so none needs another.
//!
//! The CVE knowledge base and matching. `records.rs` reads NVD API 2.0
//! objects and CVE JSON 5 records into one model (NVD configurations
//! flattened into match rows, AND nodes keeping the other node's criteria as
//! platform conditions; CNA `affected[]` entries as rows of their own);
//! `cpe.rs` parses CPE 2.3 names; `feeds.rs` KEV, EPSS and CWE.
//! `reference.rs` owns the global tables (`vuln_cves`, `vuln_match_rows`,
//! `vuln_cpe_products`, `vuln_kev`, `vuln_epss`, `vuln_cwes`, source state,
//! product change stamps) and writes them in batches as bound JSON arrays.
//! `import.rs` is `cairn vuln import` (content sniffing, gzip and zip, NVD
//! feeds streamed element by element through a reader thread); `sources.rs`
//! the NVD/KEV/EPSS loads as jobs of the reserved tenant, their schedule,
//! and `cairn vuln sync`, every request through the plugin host's
//! `Outbound`. `identify.rs` maps an application to a CPE product (tenant
//! mapping, `translations.json`, dictionary) and holds the golden set test
//! (`testdata/golden_software.tsv`); `matching.rs` evaluates ranges,
//! platforms and fixes (pure). `scan.rs` is the `vuln_scan` job and plans
//! each run (full, changes only, or a scope a person asked for;
//! `scan_sweep` queues a job for a scan the queue's one-job-per-tenant
//! rule left waiting); `findings.rs` the tenant's writes (scans, mappings,
//! stored identifications, the diff of one scan applied in one transaction);
//! `views.rs` the reads; `routes.rs` `/api/v1/vulnerabilities`. `figures.rs`
//! the figures over findings that dashboards and reports read (each finding
//! table counted on its own, by index, and merged exactly; a report's open
//! findings streamed with shared strings). `research.rs` gives one CVE from
//! the store or, absent, fetched from NVD by `cveId` and stored (the only
//! write of the reference store a request makes); `research_routes.rs` is
//! `POST /scanner/research-finding`. `scanner_findings.rs` copies the
//! tenant's finding records (streamed through the integrations area's
//! `typed_records`, only when `typed_version` moved) into
//! `vuln_scanner_findings` at the start of each `vuln_scan` job; the views
//! read it and `vuln_findings` as one (`ALL_FINDINGS`). The inventory's
//! side: `inventory/changes.rs` the change queue, `inventory/software.rs`
//! installed software as matching reads it (whole, scoped, by keys or
//! application names; distinct strings shared).

pub mod affected;
pub mod attempts;
pub mod cpe;
pub mod data_state;
mod exposure;
pub mod feeds;
pub mod figures;
pub mod findings;
#[cfg(test)]
mod golden;
pub mod identify;
pub mod import;
pub mod matching;
pub mod osv;
pub mod package_versions;
pub mod posture;
pub mod records;
pub mod reference;
pub mod research;
mod research_routes;
pub mod routes;
pub mod scan;
pub mod scanner_findings;
pub mod sources;
pub mod triage;
mod triage_routes;
pub use triage_routes::{checked_terms, Terms};
pub mod views;
pub mod vocabulary;
pub mod weaknesses;

pub use exposure::exposure;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_core::settings::Settings;
use cairn_jobs::Registry;
use cairn_platform::app::AppState;
use cairn_platform::area::Area;

/// The vulnerabilities: their routes, the scan and source jobs, the scan
/// sweep and (when the operator turned it on) the sources' schedule.
pub fn area(state: &AppState) -> anyhow::Result<Area> {
    Ok(Area::new("vulnerabilities")
        .routes(router(&state.plugins))
        .jobs(jobs(&state.settings)?)
        .schedule(scan_sweep(state.db.clone()))
        .schedule_if(state.settings.vuln_schedule, || {
            sources::schedule(state.db.clone(), state.settings.clone())
        }))
}

/// The area's routes: `/api/v1/vulnerabilities`, and the research of a
/// scanner's finding under `/api/v1/scanner` when a loaded connector
/// serves that area (the path is the area's, never the host's own).
fn router(
    plugins: &cairn_plugins::Plugins,
) -> utoipa_axum::router::OpenApiRouter<cairn_platform::app::AppState> {
    let router = routes::router();
    if plugins.areas().contains(&research_routes::SCANNER_AREA) {
        return router.merge(research_routes::router());
    }
    router
}

/// The translation table the operator configured, or the shipped one.
pub fn load_translations(settings: &Settings) -> anyhow::Result<identify::Translations> {
    if settings.vuln_translations_path.as_os_str().is_empty() {
        return Ok(identify::Translations::shipped());
    }
    let path = &settings.vuln_translations_path;
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("vuln_translations_path {}: {e}", path.display()))?;
    identify::Translations::parse(&text)
        .map_err(|e| anyhow::anyhow!("vuln_translations_path {}: {e}", path.display()))
}

/// The scan job and the three source jobs.
fn jobs(settings: &Settings) -> anyhow::Result<Registry> {
    let mut registry = Registry::default();
    let translations = Arc::new(load_translations(settings)?);
    registry.register(
        scan::SCAN_KIND,
        scan::ScanHandler { translations },
        Duration::from_secs(20 * 60),
    );
    let config = sources::SourceConfig::from_settings(settings);
    for source in sources::SOURCES {
        registry.register(
            &sources::job_kind(source),
            sources::SourceHandler {
                source,
                config: config.clone(),
                interval: sources::interval(settings, source),
            },
            // NVD's pacing is 6 s a page; its backoff can wait minutes.
            Duration::from_secs(30 * 60),
        );
    }
    Ok(registry)
}

/// Queues a full scan of `tenant` unless one is already waiting.
pub async fn request_scan(db: &Db, tenant: &TenantId) -> sqlx::Result<()> {
    let waiting: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM vuln_scans WHERE tenant_id = $1 AND status = 'queued' AND scope = '{}'",
    )
    .bind(tenant.as_str())
    .fetch_one(&db.pool)
    .await?;
    if waiting == 0 {
        findings::create_scan(db, tenant, &scan::ScanScope::default()).await?;
    }
    cairn_jobs::enqueue(db, tenant, scan::SCAN_KIND, &json!({"after": "change"})).await?;
    Ok(())
}

/// After the inventory of `tenant` changed: re-match it, when there is
/// anything to match against.
pub async fn inventory_changed(db: &Db, tenant: &TenantId) -> sqlx::Result<()> {
    let any: Option<String> = sqlx::query_scalar("SELECT id FROM vuln_cves LIMIT 1")
        .fetch_optional(&db.pool)
        .await?;
    if any.is_some() {
        request_scan(db, tenant).await?;
    }
    Ok(())
}

/// After reference data changed: re-match every tenant whose last full
/// match is older than the newest change of match data.
pub async fn request_rescans(db: &Db) -> sqlx::Result<()> {
    let newest = reference::generation(db).await?;
    let tenants: Vec<String> =
        sqlx::query_scalar("SELECT tenant_id FROM vuln_tenant_state WHERE matched_generation < $1")
            .bind(newest)
            .fetch_all(&db.pool)
            .await?;
    for tenant in tenants {
        request_scan(db, &TenantId(tenant)).await?;
    }
    Ok(())
}

/// Every 15 s, a scan job for each tenant with a scan queued for more than
/// 10 s: a scan asked for while the tenant's job was finishing joins that
/// run in the queue's one-job-per-tenant rule, after its last look for
/// queued scans.
fn scan_sweep(db: Db) -> cairn_jobs::schedule::Schedule {
    let period = Duration::from_secs(15);
    cairn_jobs::schedule::Schedule::every("scan sweep", period, move || {
        let db = db.clone();
        async move { enqueue_waiting_scans(&db).await }
    })
    .first_after(period)
}

async fn enqueue_waiting_scans(db: &Db) -> sqlx::Result<()> {
    let tenants: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT tenant_id FROM vuln_scans WHERE status = 'queued' AND created_at < $1",
    )
    .bind(cairn_core::db::now_ms() - 10_000)
    .fetch_all(&db.pool)
    .await?;
    for tenant in tenants {
        cairn_jobs::enqueue(
            db,
            &TenantId(tenant),
            scan::SCAN_KIND,
            &json!({"after": "sweep"}),
        )
        .await?;
    }
    Ok(())
}
