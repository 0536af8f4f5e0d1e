//! Vulnerabilities: a CVE knowledge base shared by every tenant (NVD CVE
//! API 2.0 and feeds, CVE JSON 5 records, CISA KEV, FIRST EPSS, MITRE
//! CWE), the matching of each tenant's installed software against it, and
//! the tenant's findings and scans.
//!
//! - Owns every `vuln_` table: the global reference data and each
//!   tenant's findings, scans and triage.
//! - Faces: [`area`], `findings::figures`, `findings::views`,
//!   `reference::research`, `exposure()` (the
//!   inventory's `CveExposure`).
//! - Calls: the platform, the inventory and the integrations (scanner
//!   records) through their public functions.
//!
//! Three groups that point one way, then the area's assembly:
//! - [`reference`]: the global CVE knowledge base (parse, store, load);
//! - [`matching`]: installed software to CVEs (reads reference data);
//! - [`findings`]: each tenant's findings, triage and reads over them
//!   (uses matching's types);
//! - [`scan`]: the `vuln_scan` job, which matches and writes findings;
//!   [`routes`]: `/api/v1/vulnerabilities`; this file: the area, its jobs
//!   and schedules, and the rescans other areas ask for.

pub mod findings;
pub mod matching;
pub mod reference;
pub mod routes;
pub mod scan;

pub use findings::exposure;
pub use findings::triage_routes::{checked_terms, Terms};

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
    let area = Area::new("vulnerabilities").routes("/api/v1/vulnerabilities/", routes::router());
    // The research of a scanner's finding, when a loaded connector serves
    // that area (the path is the area's, never the host's own).
    let area = if state
        .plugins()
        .areas()
        .contains(&reference::research_routes::SCANNER_AREA)
    {
        area.routes("/api/v1/scanner", reference::research_routes::router())
    } else {
        area
    };
    Ok(area
        .jobs(jobs(&state.settings)?)
        .schedule(scan_sweep(state.db.clone()))
        .schedule(reference::sources::gauges(state.db.clone()))
        .schedule_if(state.settings.vuln_schedule, || {
            reference::sources::schedule(state.db.clone(), state.settings.clone())
        }))
}

/// The translation table the operator configured, or the shipped one.
pub fn load_translations(settings: &Settings) -> anyhow::Result<matching::identify::Translations> {
    if settings.vuln_translations_path.as_os_str().is_empty() {
        return Ok(matching::identify::Translations::shipped());
    }
    let path = &settings.vuln_translations_path;
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("vuln_translations_path {}: {e}", path.display()))?;
    matching::identify::Translations::parse(&text)
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
    let config = reference::sources::SourceConfig::from_settings(settings);
    for source in reference::sources::SOURCES {
        registry.register(
            &reference::sources::job_kind(source),
            reference::sources::SourceHandler {
                source,
                config: config.clone(),
                interval: reference::sources::interval(settings, source),
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
        findings::writes::create_scan(db, tenant, &scan::ScanScope::default()).await?;
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
    let newest = reference::store::generation(db).await?;
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
