//! `/api/v1/vulnerabilities`: scans, findings per CVE and device,
//! statistics, and the mapping of applications the matcher left unmatched.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Extension;
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::scan::{ScanScope, SCAN_KIND};
use crate::findings::due::SlaDueDates;
use crate::findings::views::{
    self, AffectedDevice, DeviceExposure, FindingView, NotAssessed, ScanView, ScanVulnerability,
    UnmatchedApplication, VulnerabilityFilter, VulnerabilityPage, VulnerabilityStats,
};
use crate::findings::writes::{self, MappingView};
use crate::matching::identify::clean_name;
use crate::reference::cpe::ProductKey;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, OptionalJson, Path, Query};
use cairn_core::ids::TenantId;
use cairn_inventory::search::{page_bounds, Page, PageParams};
use cairn_platform::app::AppState;
use cairn_platform::auth::{AdminCaller, Caller};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(start_scan))
        .routes(routes!(scan_device))
        .routes(routes!(list_scans))
        .routes(routes!(one_scan))
        .routes(routes!(scan_vulnerabilities))
        .routes(routes!(scan_cve_devices))
        .routes(routes!(list_vulnerabilities))
        .routes(routes!(cve_devices))
        .routes(routes!(device_exposure))
        .routes(routes!(vulnerability_stats))
        .routes(routes!(unmatched_applications))
        .routes(routes!(not_assessed))
        .routes(routes!(list_mappings, put_mapping))
        .routes(routes!(delete_mapping))
        .routes(routes!(reference_sources))
        .merge(crate::findings::triage_routes::router())
}

fn bounds(skip: Option<i64>, limit: Option<i64>) -> ApiResult<(i64, i64)> {
    Ok(page_bounds(skip, limit)?)
}

fn page<T>(items: Vec<T>, total: i64, skip: i64, limit: i64) -> Page<T> {
    Page::new(items, total, (skip, limit))
}

/// Queues the scan and the job that runs it.
async fn queue_scan(state: &AppState, tenant: &TenantId, scope: ScanScope) -> ApiResult<ScanView> {
    let id = writes::create_scan(&state.db, tenant, &scope).await?;
    cairn_jobs::enqueue(
        &state.db,
        tenant,
        SCAN_KIND,
        &serde_json::json!({"scan_id": id}),
    )
    .await?;
    let mut scan = views::scan(&state.db, tenant, &id)
        .await?
        .ok_or(ApiError::NotFound("scan"))?;
    scan.data_state =
        Some(crate::reference::data_state::data_state(&state.db, &state.settings).await?);
    Ok(scan)
}

/// The body of `POST /vulnerabilities/scan`; every field optional (no
/// field: the whole inventory, re-matching only what changed since the
/// last match when there was one).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScanRequest {
    /// Only this application (its name in the software rollup).
    application: Option<String>,
    /// Only software whose vendor or publisher is this.
    vendor: Option<String>,
    /// Re-read and re-match the whole inventory, not only what changed.
    #[serde(default)]
    full: bool,
}

fn non_empty(field: &str, value: Option<String>) -> ApiResult<Option<String>> {
    match value {
        Some(v) if v.trim().is_empty() => Err(ApiError::validation(
            field,
            format!("{field} must not be empty"),
        )),
        other => Ok(other.map(|v| v.trim().to_string())),
    }
}

/// Starts a scan of the tenant's inventory (or of one application or
/// vendor) against the CVE knowledge base. Runs in the background; poll
/// the returned scan.
#[utoipa::path(post, path = "/scan", tag = "vulnerabilities",
    request_body(content = Option<ScanRequest>, description = "Optional: no body scans the whole inventory"),
    responses((status = 202, body = ScanView), (status = 422, body = ErrorBody)))]
async fn start_scan(
    State(state): State<AppState>,
    caller: Caller,
    // No body scans the whole inventory.
    OptionalJson(request): OptionalJson<ScanRequest>,
) -> ApiResult<(StatusCode, Json<ScanView>)> {
    let scope = ScanScope {
        application: non_empty("application", request.application)?,
        vendor: non_empty("vendor", request.vendor)?,
        device_name: None,
        full: request.full,
    };
    let scan = queue_scan(&state, &caller.tenant_id, scope).await?;
    Ok((StatusCode::ACCEPTED, Json(scan)))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeviceScanRequest {
    /// A device name as the inventory reports it (any of its names).
    device_name: String,
}

/// Scans every application on one device. 404 when the tenant's inventory
/// has no software on a device of that name.
#[utoipa::path(post, path = "/scan-device", tag = "vulnerabilities",
    request_body = DeviceScanRequest,
    responses((status = 202, body = ScanView), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn scan_device(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<DeviceScanRequest>,
) -> ApiResult<(StatusCode, Json<ScanView>)> {
    let device = non_empty("device_name", Some(request.device_name))?.unwrap_or_default();
    let (items, _) =
        cairn_inventory::storage::items_of_device(&state.db, &caller.tenant_id, &device, 0, 1)
            .await?;
    if items.is_empty() {
        return Err(ApiError::NotFound("device"));
    }
    let scope = ScanScope {
        device_name: Some(device),
        ..Default::default()
    };
    let scan = queue_scan(&state, &caller.tenant_id, scope).await?;
    Ok((StatusCode::ACCEPTED, Json(scan)))
}

/// The tenant's scans, newest first.
#[utoipa::path(get, path = "/scans", tag = "vulnerabilities",
    params(PageParams),
    responses((status = 200, body = Page<ScanView>), (status = 422, body = ErrorBody)))]
async fn list_scans(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<PageParams>,
) -> ApiResult<Json<Page<ScanView>>> {
    let (skip, limit) = bounds(params.skip, params.limit)?;
    let (items, total) = views::scans(&state.db, &caller.tenant_id, skip, limit).await?;
    Ok(Json(page(items, total, skip, limit)))
}

#[derive(Debug, serde::Serialize, ToSchema)]
pub struct ScanDetail {
    #[serde(flatten)]
    scan: ScanView,
    /// The scan's most severe CVEs (up to 20); the full list is
    /// `/scans/{scan_id}/vulnerabilities`.
    top_vulnerabilities: Vec<ScanVulnerability>,
}

/// One scan with its counts and its most severe findings.
#[utoipa::path(get, path = "/scans/{scan_id}", tag = "vulnerabilities",
    params(("scan_id" = String, Path)),
    responses((status = 200, body = ScanDetail), (status = 404, body = ErrorBody)))]
async fn one_scan(
    State(state): State<AppState>,
    caller: Caller,
    Path(scan_id): Path<String>,
) -> ApiResult<Json<ScanDetail>> {
    let scan = views::scan(&state.db, &caller.tenant_id, &scan_id)
        .await?
        .ok_or(ApiError::NotFound("scan"))?;
    let (top, _) =
        views::scan_vulnerabilities(&state.db, &caller.tenant_id, &scan_id, 0, 20).await?;
    Ok(Json(ScanDetail {
        scan,
        top_vulnerabilities: top,
    }))
}

/// The CVEs a scan found, most severe first.
#[utoipa::path(get, path = "/scans/{scan_id}/vulnerabilities", tag = "vulnerabilities",
    params(("scan_id" = String, Path), PageParams),
    responses((status = 200, body = Page<ScanVulnerability>), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn scan_vulnerabilities(
    State(state): State<AppState>,
    caller: Caller,
    Path(scan_id): Path<String>,
    Query(params): Query<PageParams>,
) -> ApiResult<Json<Page<ScanVulnerability>>> {
    let (skip, limit) = bounds(params.skip, params.limit)?;
    views::scan(&state.db, &caller.tenant_id, &scan_id)
        .await?
        .ok_or(ApiError::NotFound("scan"))?;
    let (items, total) =
        views::scan_vulnerabilities(&state.db, &caller.tenant_id, &scan_id, skip, limit).await?;
    Ok(Json(page(items, total, skip, limit)))
}

/// The devices (application and version) a scan found a CVE on.
#[utoipa::path(get, path = "/scans/{scan_id}/vulnerabilities/{cve_id}/devices", tag = "vulnerabilities",
    params(("scan_id" = String, Path), ("cve_id" = String, Path), PageParams),
    responses((status = 200, body = Page<AffectedDevice>), (status = 404, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn scan_cve_devices(
    State(state): State<AppState>,
    caller: Caller,
    Path((scan_id, cve_id)): Path<(String, String)>,
    Query(params): Query<PageParams>,
) -> ApiResult<Json<Page<AffectedDevice>>> {
    let (skip, limit) = bounds(params.skip, params.limit)?;
    let devices = views::scan_cve_devices(&state.db, &caller.tenant_id, &scan_id, &cve_id)
        .await?
        .ok_or(ApiError::NotFound("CVE in this scan"))?;
    let total = devices.len() as i64;
    let items = devices
        .into_iter()
        .skip(skip as usize)
        .take(limit as usize)
        .collect();
    Ok(Json(page(items, total, skip, limit)))
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ExposureParams {
    /// Only these devices (exact names, comma-separated, at most 500);
    /// otherwise every device with an open finding.
    names: Option<String>,
    /// Default 0.
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// Default 50, at most 500.
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// The tenant's devices with open findings, the riskiest first (most KEV
/// CVEs, then critical, high, highest EPSS), each with its counts; with
/// `names`, those devices only (a device without open findings is left
/// out).
#[utoipa::path(get, path = "/devices", tag = "vulnerabilities",
    params(ExposureParams),
    responses((status = 200, body = Page<DeviceExposure>), (status = 422, body = ErrorBody)))]
async fn device_exposure(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<ExposureParams>,
) -> ApiResult<Json<Page<DeviceExposure>>> {
    let (skip, limit) = bounds(params.skip, params.limit)?;
    let names: Option<Vec<String>> = params.names.as_deref().map(|names| {
        names
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from)
            .collect()
    });
    if names.as_ref().is_some_and(|n| n.len() > 500) {
        return Err(ApiError::validation("names", "at most 500 device names"));
    }
    let (items, total) =
        views::device_exposure(&state.db, &caller.tenant_id, names.as_deref(), skip, limit).await?;
    Ok(Json(page(items, total, skip, limit)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VulnerabilityParams {
    /// `open` (default: open and not taken out of the open counts by
    /// triage), `accepted` (open, but triaged not affected, false positive
    /// or risk accepted until a later date), `fixed` or `all`.
    status: Option<String>,
    /// Comma-separated: `critical`, `high`, `medium`, `low`, `none`,
    /// `unknown`.
    severity: Option<String>,
    /// Only CVEs in (true) or not in (false) CISA KEV.
    kev: Option<bool>,
    /// Only CVEs whose EPSS probability is at least this (0-1).
    epss_min: Option<f64>,
    /// Substring of the CVE id, its description or an application name.
    search: Option<String>,
    /// Only findings of this application (its installed name, exact).
    application: Option<String>,
    /// Only findings on this device (exact name).
    device: Option<String>,
    /// Only CVEs with a finding in this triage status (`to_evaluate`,
    /// `in_analysis`, `remediation_in_progress`, `resolved`,
    /// `not_affected`, `risk_accepted`, `false_positive`).
    triage: Option<String>,
    /// Only CVEs with an open finding in this SLA state now (`within`,
    /// `due_soon`, `overdue`, `excepted`; see `/api/v1/sla`).
    sla_state: Option<String>,
    /// `-kev` (KEV first, then CVSS and EPSS, highest first),
    /// `-cvss_score` (default), `cvss_score`, `-epss_score`,
    /// `epss_score`, `-device_count`, `device_count`, `-published`,
    /// `published`, `cve_id`, `-cve_id`, `-first_seen`, `first_seen`.
    sort: Option<String>,
    /// Default 0.
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// Default 50, at most 500.
    #[param(minimum = 1)]
    limit: Option<i64>,
}

const SEVERITIES: [&str; 6] = ["critical", "high", "medium", "low", "none", "unknown"];

/// What the findings lists' `status` filter takes.
pub const STATUS_FILTERS: [&str; 4] = ["open", "accepted", "fixed", "all"];

fn status_param(status: Option<String>) -> ApiResult<String> {
    let status = status.unwrap_or_else(|| writes::OPEN.into());
    if !STATUS_FILTERS.contains(&status.as_str()) {
        return Err(ApiError::validation(
            "status",
            "status must be open, accepted, fixed or all",
        ));
    }
    Ok(status)
}

/// The SLA states a finding can be in.
const SLA_STATES: [&str; 4] = ["within", "due_soon", "overdue", "excepted"];

/// The CVEs on the tenant's devices, one entry per CVE with its scores,
/// KEV and EPSS, the devices and applications affected and the versions
/// that fix it.
#[utoipa::path(get, path = "/", tag = "vulnerabilities",
    params(VulnerabilityParams),
    responses((status = 200, body = VulnerabilityPage), (status = 422, body = ErrorBody)))]
async fn list_vulnerabilities(
    State(state): State<AppState>,
    Extension(due): Extension<SlaDueDates>,
    caller: Caller,
    Query(params): Query<VulnerabilityParams>,
) -> ApiResult<Json<VulnerabilityPage>> {
    let (skip, limit) = bounds(params.skip, params.limit)?;
    let mut severities = vec![];
    for level in params.severity.as_deref().unwrap_or("").split(',') {
        let level = level.trim().to_lowercase();
        if level.is_empty() {
            continue;
        }
        if !SEVERITIES.contains(&level.as_str()) {
            return Err(ApiError::validation(
                "severity",
                format!("unknown severity {level}; use {}", SEVERITIES.join(", ")),
            ));
        }
        severities.push(level);
    }
    if params.epss_min.is_some_and(|e| !(0.0..=1.0).contains(&e)) {
        return Err(ApiError::validation(
            "epss_min",
            "epss_min must be between 0 and 1",
        ));
    }
    let sort = params.sort.as_deref().unwrap_or("");
    let order = views::sort_sql(sort)
        .ok_or_else(|| ApiError::validation("sort", format!("cannot sort by {sort}")))?;
    let mut filter = VulnerabilityFilter {
        status: status_param(params.status)?,
        severities,
        kev: params.kev,
        epss_min: params.epss_min,
        search: params.search.filter(|s| !s.is_empty()),
        application: params.application.filter(|s| !s.is_empty()),
        device: params.device.filter(|s| !s.is_empty()),
        triage: match params.triage.filter(|s| !s.is_empty()) {
            Some(status) if !crate::findings::triage::STATUSES.contains(&status.as_str()) => {
                return Err(ApiError::validation(
                    "triage",
                    format!(
                        "must be one of {}",
                        crate::findings::triage::STATUSES.join(", ")
                    ),
                ))
            }
            other => other,
        },
        cves: None,
    };
    let now = state.clock.now_ms();
    // With `sla_state`, every open finding's standing is read once: it
    // picks the CVEs and gives the page's figures.
    let mut every_due = None;
    if let Some(wanted) = params.sla_state.filter(|s| !s.is_empty()) {
        if !SLA_STATES.contains(&wanted.as_str()) {
            return Err(ApiError::validation(
                "sla_state",
                format!("must be one of {}", SLA_STATES.join(", ")),
            ));
        }
        let all = due
            .0
            .due_of(&state.db, &caller.tenant_id, None, now)
            .await?;
        let mut cves: Vec<String> = all
            .iter()
            .filter(|(_, due)| due.sla_state.as_deref() == Some(wanted.as_str()))
            .map(|((_, _, _, cve), _)| cve.clone())
            .collect();
        cves.sort();
        cves.dedup();
        filter.cves = Some(cves);
        every_due = Some(all);
    }
    let (mut items, total) =
        views::vulnerabilities(&state.db, &caller.tenant_id, &filter, order, skip, limit).await?;
    let found = match every_due {
        Some(all) => all,
        None => {
            let cves: Vec<String> = items.iter().map(|i| i.cve_id.clone()).collect();
            due.0
                .due_of(&state.db, &caller.tenant_id, Some(&cves), now)
                .await?
        }
    };
    let mut per_cve = crate::findings::due::per_cve(&found);
    for item in &mut items {
        item.sla = per_cve.remove(&item.cve_id);
    }
    Ok(Json(VulnerabilityPage {
        items,
        total,
        skip,
        limit,
        data_state: crate::reference::data_state::data_state(&state.db, &state.settings).await?,
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CveDeviceParams {
    /// `open` (default: open and not taken out of the open counts by
    /// triage), `accepted` (open, but triaged not affected, false positive
    /// or risk accepted until a later date), `fixed` or `all`.
    status: Option<String>,
    /// Default 0.
    #[param(minimum = 0)]
    skip: Option<i64>,
    /// Default 50, at most 500.
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// Every device with a finding of this CVE: application, version, fix,
/// and how it was matched. An unknown CVE gives an empty page.
#[utoipa::path(get, path = "/cve/{cve_id}/devices", tag = "vulnerabilities",
    params(("cve_id" = String, Path), CveDeviceParams),
    responses((status = 200, body = Page<FindingView>), (status = 422, body = ErrorBody)))]
async fn cve_devices(
    State(state): State<AppState>,
    Extension(due): Extension<SlaDueDates>,
    caller: Caller,
    Path(cve_id): Path<String>,
    Query(params): Query<CveDeviceParams>,
) -> ApiResult<Json<Page<FindingView>>> {
    let (skip, limit) = bounds(params.skip, params.limit)?;
    let status = status_param(params.status)?;
    let cve_id = cve_id.trim().to_uppercase();
    let (mut items, total) =
        views::cve_findings(&state.db, &caller.tenant_id, &cve_id, &status, skip, limit).await?;
    if items.iter().any(|f| f.status == "open") {
        let mut found = due
            .0
            .due_of(
                &state.db,
                &caller.tenant_id,
                Some(std::slice::from_ref(&cve_id)),
                state.clock.now_ms(),
            )
            .await?;
        for item in &mut items {
            let key = (
                item.device_name.clone(),
                item.application_name.clone(),
                item.version.clone(),
                item.cve_id.clone(),
            );
            item.sla = found.remove(&key);
        }
    }
    Ok(Json(page(items, total, skip, limit)))
}

/// Open CVEs by severity, KEV count, the top CVEs and applications, and a
/// 30-day trend of findings opened and fixed.
#[utoipa::path(get, path = "/stats", tag = "vulnerabilities",
    responses((status = 200, body = VulnerabilityStats)))]
async fn vulnerability_stats(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<VulnerabilityStats>> {
    let data_state = crate::reference::data_state::data_state(&state.db, &state.settings).await?;
    Ok(Json(
        views::stats(&state.db, &caller.tenant_id, data_state).await?,
    ))
}

/// Applications the last full scan could not map to a CPE product, most
/// installed first. Map one with `PUT /vulnerabilities/mappings`.
#[utoipa::path(get, path = "/unmatched", tag = "vulnerabilities",
    params(PageParams),
    responses((status = 200, body = Page<UnmatchedApplication>), (status = 422, body = ErrorBody)))]
async fn unmatched_applications(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<PageParams>,
) -> ApiResult<Json<Page<UnmatchedApplication>>> {
    let (skip, limit) = bounds(params.skip, params.limit)?;
    let (items, total) = views::unmatched(&state.db, &caller.tenant_id, skip, limit).await?;
    Ok(Json(page(items, total, skip, limit)))
}

/// Installations no match judges: a distribution's build (`1.8.31-
/// 1ubuntu1.5`) on a Linux device whose OS fields name no release Cairn
/// knows. Without the release no distribution advisory applies, and the
/// upstream version would flag packages the distribution fixed by a
/// backport, so they are listed here with the reason rather than guessed.
/// Give the device its release (an OS version such as `Ubuntu 22.04`) to
/// have them matched.
#[utoipa::path(get, path = "/not-assessed", tag = "vulnerabilities",
    params(PageParams),
    responses((status = 200, body = Page<NotAssessed>), (status = 422, body = ErrorBody)))]
async fn not_assessed(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<PageParams>,
) -> ApiResult<Json<Page<NotAssessed>>> {
    let (skip, limit) = bounds(params.skip, params.limit)?;
    let (items, total) = views::not_assessed(&state.db, &caller.tenant_id, skip, limit).await?;
    Ok(Json(page(items, total, skip, limit)))
}

/// The tenant's own application-to-product mappings.
#[utoipa::path(get, path = "/mappings", tag = "vulnerabilities",
    responses((status = 200, body = Vec<MappingView>)))]
async fn list_mappings(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<MappingView>>> {
    Ok(Json(writes::mappings(&state.db, &caller.tenant_id).await?))
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MappingRequest {
    /// An application name as installed (`7-Zip 23.01 (x64)`) or as the
    /// unmatched list gives it; versions, architecture and locale are
    /// ignored, so one mapping covers every version.
    application: String,
    /// `vendor:product` of the CPE dictionary, or null to never match this
    /// application.
    cpe: Option<String>,
}

/// Maps an application to a CPE product (or to nothing) for this tenant;
/// it wins over the shipped translation table from the next scan on.
/// Admins only.
#[utoipa::path(put, path = "/mappings", tag = "vulnerabilities",
    request_body = MappingRequest,
    responses((status = 200, body = MappingView), (status = 403, body = ErrorBody), (status = 422, body = ErrorBody)))]
async fn put_mapping(
    State(state): State<AppState>,
    caller: AdminCaller,
    Json(request): Json<MappingRequest>,
) -> ApiResult<Json<MappingView>> {
    let app_key = clean_name(&request.application);
    if app_key.is_empty() {
        return Err(ApiError::validation(
            "application",
            "application must name an application",
        ));
    }
    let key = match request.cpe.as_deref() {
        None => None,
        Some(text) => Some(ProductKey::parse(text).ok_or_else(|| {
            ApiError::validation(
                "cpe",
                "cpe must be vendor:product, for example mozilla:firefox",
            )
        })?),
    };
    let created_at =
        writes::set_mapping(&state.db, &caller.0.tenant_id, &app_key, key.as_ref()).await?;
    Ok(Json(MappingView {
        application: app_key,
        cpe: key.map(|k| k.text()),
        created_at: cairn_core::db::to_rfc3339(created_at),
    }))
}

/// Removes one of the tenant's mappings (by the application name it was
/// made with). Admins only.
#[utoipa::path(delete, path = "/mappings/{application}", tag = "vulnerabilities",
    params(("application" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn delete_mapping(
    State(state): State<AppState>,
    caller: AdminCaller,
    Path(application): Path<String>,
) -> ApiResult<StatusCode> {
    if writes::delete_mapping(&state.db, &caller.0.tenant_id, &clean_name(&application)).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("mapping"))
    }
}

/// Where one CVE source stands.
#[derive(Debug, serde::Serialize, ToSchema)]
pub struct SourceView {
    /// `nvd`, `kev` or `epss`.
    pub source: String,
    /// `never_loaded` (nothing yet: on a machine without internet, load
    /// the files with `cairn vuln import`), `loaded`, `stale` (its last
    /// success is older than twice its interval) or `failing` (its last
    /// attempt failed; `last_error` says why).
    pub state: SourceState,
    /// Where the source is published (the URL the service loads).
    pub url: String,
    /// Records the source holds now.
    pub records: i64,
    pub last_attempt_at: Option<String>,
    pub last_success_at: Option<String>,
    /// The last attempt's failure as a sentence, while it is failing.
    pub last_error: Option<String>,
    /// Failed attempts in a row; each doubles the pause before the next.
    pub failures: i64,
    /// When the service tries next (null when it does not load sources on
    /// its own: `vuln_schedule` is off).
    pub next_attempt_at: Option<String>,
    /// Where the source will resume (NVD: the last modification time
    /// reached).
    pub position: Option<String>,
    /// The last successful run's figures (null until one ran).
    #[schema(value_type = Option<Object>)]
    pub detail: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SourceState {
    NeverLoaded,
    Loaded,
    Stale,
    Failing,
}

#[derive(Debug, serde::Serialize, ToSchema)]
pub struct ReferenceStatus {
    /// Rows of each reference table (shared by every tenant): `cves`,
    /// `match_rows`, `cpe_products`, `cwes`, `kev`, `epss`, and the
    /// distributions' `osv_advisories` and their `osv_ranges`.
    pub counts: std::collections::BTreeMap<String, i64>,
    pub sources: Vec<SourceView>,
}

/// What the shared CVE knowledge base holds and when each source last
/// loaded.
#[utoipa::path(get, path = "/sources", tag = "vulnerabilities",
    responses((status = 200, body = ReferenceStatus)))]
async fn reference_sources(
    State(state): State<AppState>,
    _caller: Caller,
) -> ApiResult<Json<ReferenceStatus>> {
    let mut counts: std::collections::BTreeMap<String, i64> =
        crate::reference::store::counts(&state.db)
            .await?
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
    let (advisories, ranges) = crate::reference::osv::counts(&state.db).await?;
    counts.insert("osv_advisories".into(), advisories);
    counts.insert("osv_ranges".into(), ranges);
    let mut sources = vec![];
    let now = cairn_core::db::now_ms();
    for source in crate::reference::sources::SOURCES {
        let stored = crate::reference::store::source_state(&state.db, source).await?;
        let attempts = crate::reference::attempts::of(&state.db, source).await?;
        let records = counts
            .get(crate::reference::sources::records_key(source))
            .copied()
            .unwrap_or(0);
        let last_success_at = attempts
            .as_ref()
            .and_then(|a| a.last_success_at)
            .or(stored.as_ref().map(|s| s.updated_at));
        let interval =
            crate::reference::sources::interval(&state.settings, source).as_millis() as i64;
        let view_state = match (&attempts, last_success_at) {
            (Some(a), _) if a.failures > 0 => SourceState::Failing,
            (_, None) if records == 0 => SourceState::NeverLoaded,
            (_, Some(at)) if now - at > 2 * interval => SourceState::Stale,
            _ => SourceState::Loaded,
        };
        let url = match source {
            crate::reference::sources::NVD => &state.settings.nvd_api_url,
            crate::reference::sources::KEV => &state.settings.kev_url,
            _ => &state.settings.epss_url,
        };
        sources.push(SourceView {
            source: source.to_string(),
            state: view_state,
            url: url.clone(),
            records,
            last_attempt_at: attempts
                .as_ref()
                .map(|a| cairn_core::db::to_rfc3339(a.last_attempt_at)),
            last_success_at: last_success_at.map(cairn_core::db::to_rfc3339),
            last_error: attempts.as_ref().and_then(|a| a.last_error.clone()),
            failures: attempts.as_ref().map(|a| a.failures).unwrap_or(0),
            next_attempt_at: state.settings.vuln_schedule.then(|| {
                let next = attempts
                    .as_ref()
                    .map(|a| a.next_attempt_at)
                    .unwrap_or_else(|| last_success_at.map(|at| at + interval).unwrap_or(now));
                cairn_core::db::to_rfc3339(next.max(now))
            }),
            position: stored.as_ref().and_then(|s| s.position.clone()),
            detail: stored.map(|s| s.detail),
        });
    }
    Ok(Json(ReferenceStatus { counts, sources }))
}
