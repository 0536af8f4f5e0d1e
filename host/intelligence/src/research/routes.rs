//! `/api/v1/research`, `/api/v1/versions` and `/api/v1/weaknesses`.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::cve::{research_cve, CveResearch};
use super::history::{self, HistoryEntry};
use super::product::{research_product, ProductQuery, ProductResearch};
use super::rules::{self, VersionRule};
use super::versions::{ApplicationVersions, Outdated, Tracking};
use super::weaknesses::{__path_list_weaknesses, __path_weakness_detail};
use super::weaknesses::{list_weaknesses, weakness_detail};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_inventory::search::{fold, page_bounds, Page};
use cairn_inventory::storage::items_of_application;
use cairn_platform::app::AppState;
use cairn_platform::auth::{AdminCaller, Caller};
use cairn_vulnerabilities::reference::cpe::ProductKey;
use cairn_vulnerabilities::reference::records::cpe_name;
use cairn_vulnerabilities::reference::research::ResearchError;
use cairn_vulnerabilities::reference::sources::SourceConfig;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(research_a_cve))
        .routes(routes!(research_a_product))
        .routes(routes!(research_history))
        .routes(routes!(version_summary))
        .routes(routes!(version_compliance))
        .routes(routes!(outdated_software))
        .routes(routes!(list_version_rules, put_version_rule))
        .routes(routes!(delete_version_rule))
        .routes(routes!(list_weaknesses))
        .routes(routes!(weakness_detail))
}

/// Research a CVE: its record from the CVE store, fetched from NVD's CVE
/// API when the store lacks it (and then stored for every tenant), with
/// CVSS, CWE names, references, KEV and EPSS; the tenant's devices with an
/// open finding of it, the application versions it is open on with the
/// version that fixes it, and the tenant's tags on it. Recorded in the
/// research history.
#[utoipa::path(get, path = "/research/cve/{cve_id}", tag = "research",
    params(("cve_id" = String, Path)),
    responses((status = 200, body = CveResearch),
              (status = 404, body = ErrorBody, description = "Neither the store nor NVD knows it"),
              (status = 422, body = ErrorBody, description = "`cve_id` is not a CVE id"),
              (status = 502, body = ErrorBody, description = "NVD could not be asked")))]
async fn research_a_cve(
    State(state): State<AppState>,
    caller: Caller,
    Path(text): Path<String>,
) -> ApiResult<Json<CveResearch>> {
    let config = SourceConfig::from_settings(&state.settings);
    let tenant = &caller.tenant_id;
    let result = research_cve(&state.db, &config, tenant, &text).await;
    if let Ok(found) = &result {
        history::record(
            &state.db,
            tenant,
            caller.user_id.as_str(),
            history::CVE,
            &found.record.detail.cve_id,
            1,
        )
        .await?;
    } else if let Err(ResearchError::Unknown(id)) = &result {
        history::record(
            &state.db,
            tenant,
            caller.user_id.as_str(),
            history::CVE,
            id,
            0,
        )
        .await?;
    }
    Ok(Json(result?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ProductParams {
    /// A vendor, with `product` (CPE names: `google`; spaces become `_`,
    /// case and company suffixes are ignored).
    vendor: Option<String>,
    /// A product, with `vendor` (`chrome`).
    product: Option<String>,
    /// Or one of the tenant's applications by name (as installed); its
    /// products are those it was identified as.
    application: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// Research a product: by CPE vendor and product, or by one of the
/// tenant's applications. The answer holds the products' CVEs in the CVE
/// store (a page, newest first, each with the tenant's affected device
/// count), the tenant's applications identified as them, and every version
/// of those the tenant runs: its devices, whether it is vulnerable (has an
/// open finding), its open CVEs and the version that fixes them. Recorded
/// in the research history.
#[utoipa::path(get, path = "/research/product", tag = "research",
    params(ProductParams),
    responses((status = 200, body = ProductResearch), (status = 422, body = ErrorBody)))]
async fn research_a_product(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<ProductParams>,
) -> ApiResult<Json<ProductResearch>> {
    let bounds = page_bounds(params.skip, params.limit)?;
    let given = |v: Option<String>| v.map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    let query = match (
        given(params.vendor),
        given(params.product),
        given(params.application),
    ) {
        (Some(vendor), Some(product), None) => ProductQuery::Product(ProductKey {
            vendor: cpe_name(&vendor, "vendor")?,
            product: cpe_name(&product, "product")?,
        }),
        (None, None, Some(application)) if application.chars().count() <= 300 => {
            ProductQuery::Application(application)
        }
        (None, None, Some(_)) => {
            return Err(ApiError::validation(
                "application",
                "at most 300 characters",
            ))
        }
        (Some(_), None, None) => {
            return Err(ApiError::validation("product", "give it with vendor"))
        }
        (None, Some(_), None) => {
            return Err(ApiError::validation("vendor", "give it with product"))
        }
        _ => {
            return Err(ApiError::validation(
                "application",
                "give vendor and product, or application",
            ))
        }
    };
    let tenant = &caller.tenant_id;
    let answer = research_product(&state.db, tenant, &query, bounds).await?;
    history::record(
        &state.db,
        tenant,
        caller.user_id.as_str(),
        history::PRODUCT,
        &query.text(),
        answer.cves.total,
    )
    .await?;
    Ok(Json(answer))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryParams {
    /// Only the caller's own research.
    mine: Option<bool>,
    /// `cve` or `product`.
    kind: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// The tenant's research requests, newest first: who asked what, and how
/// many CVEs the answer held.
#[utoipa::path(get, path = "/research/history", tag = "research",
    params(HistoryParams),
    responses((status = 200, body = Page<HistoryEntry>), (status = 422, body = ErrorBody)))]
async fn research_history(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HistoryParams>,
) -> ApiResult<Json<Page<HistoryEntry>>> {
    let bounds = page_bounds(params.skip, params.limit)?;
    let kind = match params.kind.as_deref() {
        None | Some("") => None,
        Some(k) if history::KINDS.contains(&k) => Some(k),
        Some(_) => return Err(ApiError::validation("kind", "must be cve or product")),
    };
    let user = params
        .mine
        .unwrap_or(false)
        .then(|| caller.user_id.as_str());
    let (items, total) = history::entries(&state.db, &caller.tenant_id, user, kind, bounds).await?;
    Ok(Json(Page::new(items, total, bounds)))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SummaryParams {
    /// Part of the application name, ignoring case.
    search: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// Per application (most installed first): the versions in use with their
/// device counts, open CVE counts and compliance, the newest version seen,
/// and the fix version (the lowest version that fixes every open CVE of
/// the application, where the CVE data names fixes). A version is
/// **vulnerable** when it has an open finding; **compliant** when it is at
/// or above the tenant's minimum-version rule for the application, or,
/// without a rule, when it is not vulnerable.
#[utoipa::path(get, path = "/versions/summary", tag = "versions",
    params(SummaryParams),
    responses((status = 200, body = Page<ApplicationVersions>), (status = 422, body = ErrorBody)))]
async fn version_summary(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<SummaryParams>,
) -> ApiResult<Json<Page<ApplicationVersions>>> {
    let (skip, limit) = page_bounds(params.skip, params.limit)?;
    let tracking = Tracking::read(&state.db, &caller.tenant_id).await?;
    let wanted = params.search.as_deref().map(fold);
    let matching: Vec<_> = tracking
        .applications
        .iter()
        .filter(|a| wanted.as_deref().is_none_or(|w| fold(&a.name).contains(w)))
        .collect();
    let items = matching
        .iter()
        .skip(skip as usize)
        .take(limit as usize)
        .map(|a| tracking.application(a))
        .collect();
    Ok(Json(Page::new(items, matching.len() as i64, (skip, limit))))
}

/// Which applications the compliance view lists.
pub const COMPLIANCE_FILTERS: [&str; 3] = ["compliant", "non_compliant", "all"];

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ComplianceParams {
    /// `compliant`, `non_compliant` or `all` (default): which applications
    /// to list (an application is compliant when every version in use is).
    status: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

#[derive(Serialize, ToSchema)]
pub struct Compliance {
    /// Installs (device and application) on a compliant version, and not.
    compliant_installs: i64,
    non_compliant_installs: i64,
    /// Compliant installs of all installs, in percent (100 with none).
    compliance_percent: f64,
    /// Applications whose every version in use is compliant, and not.
    compliant_applications: i64,
    non_compliant_applications: i64,
    /// The tenant's minimum-version rules.
    rules: Vec<VersionRule>,
    /// The applications asked for, least compliant first.
    applications: Page<ApplicationVersions>,
}

/// Version compliance: with a minimum-version rule for an application, a
/// version is compliant at or above the minimum (by the inventory's
/// version ordering); without one, when no open finding is on it.
#[utoipa::path(get, path = "/versions/compliance", tag = "versions",
    params(ComplianceParams),
    responses((status = 200, body = Compliance), (status = 422, body = ErrorBody)))]
async fn version_compliance(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<ComplianceParams>,
) -> ApiResult<Json<Compliance>> {
    let (skip, limit) = page_bounds(params.skip, params.limit)?;
    let want: Option<bool> = match params.status.as_deref() {
        None | Some("") | Some("all") => None,
        Some("compliant") => Some(true),
        Some("non_compliant") => Some(false),
        Some(_) => {
            return Err(ApiError::validation(
                "status",
                "must be compliant, non_compliant or all",
            ))
        }
    };
    let tenant = &caller.tenant_id;
    let tracking = Tracking::read(&state.db, tenant).await?;
    let mut all: Vec<ApplicationVersions> = tracking
        .applications
        .iter()
        .map(|a| tracking.application(a))
        .collect();
    let compliant_installs: i64 = all.iter().map(|a| a.compliant_devices).sum();
    let non_compliant_installs: i64 = all.iter().map(|a| a.non_compliant_devices).sum();
    let installs = compliant_installs + non_compliant_installs;
    let compliant_applications = all.iter().filter(|a| a.non_compliant_devices == 0).count() as i64;
    all.retain(|a| want.is_none_or(|w| (a.non_compliant_devices == 0) == w));
    all.sort_by(|a, b| {
        b.non_compliant_devices
            .cmp(&a.non_compliant_devices)
            .then_with(|| a.application.cmp(&b.application))
    });
    let total = all.len() as i64;
    let page: Vec<ApplicationVersions> = all
        .into_iter()
        .skip(skip as usize)
        .take(limit as usize)
        .collect();
    Ok(Json(Compliance {
        compliant_installs,
        non_compliant_installs,
        compliance_percent: if installs == 0 {
            100.0
        } else {
            (compliant_installs as f64 * 1000.0 / installs as f64).round() / 10.0
        },
        compliant_applications,
        non_compliant_applications: tracking.applications.len() as i64 - compliant_applications,
        rules: rules::rules(&state.db, tenant).await?,
        applications: Page::new(page, total, (skip, limit)),
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OutdatedParams {
    /// Only this application (its name, ignoring case).
    application: Option<String>,
    /// Only this device (its name, ignoring case).
    device: Option<String>,
    #[param(minimum = 0)]
    skip: Option<i64>,
    #[param(minimum = 1)]
    limit: Option<i64>,
}

/// Outdated software: every install (device and application) whose version
/// is not compliant (see `/versions/compliance`), by device, with the
/// version to upgrade to: the higher of the rule's minimum and the version
/// that fixes the install's open CVEs (else the newest version in use,
/// when newer).
#[utoipa::path(get, path = "/versions/outdated", tag = "versions",
    params(OutdatedParams),
    responses((status = 200, body = Page<Outdated>), (status = 422, body = ErrorBody)))]
async fn outdated_software(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<OutdatedParams>,
) -> ApiResult<Json<Page<Outdated>>> {
    let (skip, limit) = page_bounds(params.skip, params.limit)?;
    let tenant = &caller.tenant_id;
    let tracking = Tracking::read(&state.db, tenant).await?;
    // Versions only a rule makes outdated have no findings naming their
    // devices: the inventory does.
    let mut devices_of: HashMap<(String, String), Vec<String>> = HashMap::new();
    let rule_only = tracking.rule_only_versions();
    let mut applications: Vec<&String> = rule_only.iter().map(|(a, _)| a).collect();
    applications.dedup();
    for application in applications {
        let (items, _) = items_of_application(&state.db, tenant, application, 0, 1_000_000).await?;
        for item in items {
            let (Some(device), Some(version)) = (item.device_name, item.version) else {
                continue;
            };
            let devices = devices_of.entry((fold(application), version)).or_default();
            if !devices.contains(&device) {
                devices.push(device);
            }
        }
    }
    let application = params.application.as_deref().map(fold);
    let device = params.device.as_deref().map(fold);
    let matching: Vec<Outdated> = tracking
        .outdated(&devices_of)
        .into_iter()
        .filter(|o| {
            application
                .as_deref()
                .is_none_or(|a| fold(&o.application) == a)
        })
        .filter(|o| device.as_deref().is_none_or(|d| fold(&o.device_name) == d))
        .collect();
    let total = matching.len() as i64;
    let items = matching
        .into_iter()
        .skip(skip as usize)
        .take(limit as usize)
        .collect();
    Ok(Json(Page::new(items, total, (skip, limit))))
}

/// The tenant's minimum-version rules.
#[utoipa::path(get, path = "/versions/rules", tag = "versions",
    responses((status = 200, body = Vec<VersionRule>)))]
async fn list_version_rules(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<VersionRule>>> {
    Ok(Json(rules::rules(&state.db, &caller.tenant_id).await?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewVersionRule {
    /// The application as the inventory names it (ignoring case).
    application: String,
    /// Versions below it are not compliant.
    minimum_version: String,
    note: Option<String>,
}

/// Set the minimum version of an application (admins); it replaces the
/// application's previous rule.
#[utoipa::path(post, path = "/versions/rules", tag = "versions",
    request_body = NewVersionRule,
    responses((status = 201, body = VersionRule),
              (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 422, body = ErrorBody)))]
async fn put_version_rule(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Json(request): Json<NewVersionRule>,
) -> ApiResult<(StatusCode, Json<VersionRule>)> {
    let application = request.application.trim();
    if application.is_empty() || application.chars().count() > 300 {
        return Err(ApiError::validation(
            "application",
            "must be 1 to 300 characters",
        ));
    }
    let minimum = request.minimum_version.trim();
    if minimum.is_empty()
        || minimum.len() > 64
        || minimum.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(ApiError::validation(
            "minimum_version",
            "must be a version of 1 to 64 characters without spaces",
        ));
    }
    let note = request.note.as_deref().unwrap_or("").trim();
    if note.chars().count() > 1000 {
        return Err(ApiError::validation("note", "at most 1000 characters"));
    }
    let tenant = &caller.tenant_id;
    let id = rules::put(
        &state.db,
        tenant,
        application,
        minimum,
        note,
        caller.user_id.as_str(),
    )
    .await?;
    let rule = rules::rules(&state.db, tenant)
        .await?
        .into_iter()
        .find(|r| r.id == id)
        .ok_or(ApiError::NotFound("rule"))?;
    Ok((StatusCode::CREATED, Json(rule)))
}

/// Delete a minimum-version rule (admins).
#[utoipa::path(delete, path = "/versions/rules/{rule_id}", tag = "versions",
    params(("rule_id" = String, Path)),
    responses((status = 204), (status = 403, body = ErrorBody, description = "Not an admin"),
              (status = 404, body = ErrorBody)))]
async fn delete_version_rule(
    State(state): State<AppState>,
    AdminCaller(caller): AdminCaller,
    Path(rule_id): Path<String>,
) -> ApiResult<StatusCode> {
    if rules::delete(&state.db, &caller.tenant_id, &rule_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound("rule"))
    }
}
