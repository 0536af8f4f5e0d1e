//! `/api/v1/threat-intel`: the host's routes of the threat-intel area.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::lookups::{
    __path_get_threat_intel_config, __path_hash_threat_intel, __path_ip_threat_intel,
    __path_set_threat_intel_config,
};
use super::lookups::{
    get_threat_intel_config, hash_threat_intel, ip_threat_intel, set_threat_intel_config,
};
use crate::research::{research_cve, CveResearch};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_vulnerabilities::findings::figures::{epss_high_risk, Devices, EpssRisk};
use cairn_vulnerabilities::findings::views::{
    cve_affected_versions, open_device_counts, AffectedVersion,
};
use cairn_vulnerabilities::reference::research::{self, cve_id, ResearchError};
use cairn_vulnerabilities::reference::sources::{self, SourceConfig, SourceError};
use cairn_vulnerabilities::reference::store::{self, CveDetail, ScoredCve};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(cve_threat_intel))
        .routes(routes!(high_risk_by_epss))
        .routes(routes!(enrich_cve))
        .routes(routes!(research_panel))
        .routes(routes!(get_threat_intel_config, set_threat_intel_config))
        .routes(routes!(ip_threat_intel))
        .routes(routes!(hash_threat_intel))
}

fn checked_id(text: &str) -> Result<String, ApiError> {
    cve_id(text).ok_or_else(|| {
        ApiError::validation(
            "cve_id",
            format!("{text:?} is not a CVE id (CVE-YYYY-NNNN)"),
        )
    })
}

/// The references a CVE record tags `Exploit`.
fn exploit_references(detail: &CveDetail) -> Vec<Value> {
    detail
        .references
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| {
            r["tags"]
                .as_array()
                .is_some_and(|tags| tags.iter().any(|t| t == "Exploit"))
        })
        .cloned()
        .collect()
}

#[derive(Serialize, ToSchema)]
pub struct Exploitation {
    /// In CISA's Known Exploited Vulnerabilities catalog.
    kev: bool,
    kev_date_added: Option<String>,
    kev_due_date: Option<String>,
    kev_required_action: Option<String>,
    /// `Known` when KEV records its use in ransomware campaigns.
    kev_ransomware_use: Option<String>,
    /// EPSS: the probability (0-1) of exploitation in the next 30 days,
    /// and its percentile among all scored CVEs.
    epss_score: Option<f64>,
    epss_percentile: Option<f64>,
    /// The record's references tagged `Exploit` (`url`, `source`, `tags`).
    #[schema(value_type = Vec<Object>)]
    exploit_references: Vec<Value>,
}

impl Exploitation {
    fn of(detail: &CveDetail) -> Exploitation {
        Exploitation {
            kev: detail.kev,
            kev_date_added: detail.kev_date_added.clone(),
            kev_due_date: detail.kev_due_date.clone(),
            kev_required_action: detail.kev_required_action.clone(),
            kev_ransomware_use: detail.kev_ransomware_use.clone(),
            epss_score: detail.epss_score,
            epss_percentile: detail.epss_percentile,
            exploit_references: exploit_references(detail),
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct CveThreatIntel {
    cve_id: String,
    description: String,
    severity: Option<String>,
    cvss_score: Option<f64>,
    #[serde(flatten)]
    exploitation: Exploitation,
    /// The tenant's devices with an open finding of it.
    affected_device_count: i64,
    /// The application versions it is open on.
    affected_applications: Vec<AffectedVersion>,
    /// The store lacked it: it was fetched from NVD now (and stored).
    fetched_from_nvd: bool,
}

/// Threat intel for a CVE: KEV (with ransomware use), EPSS with its
/// percentile, exploit references, and the tenant's exposure. A CVE the
/// store lacks is fetched from NVD (and stored).
#[utoipa::path(get, path = "/cve/{cve_id}", tag = "threat-intel",
    params(("cve_id" = String, Path)),
    responses((status = 200, body = CveThreatIntel),
              (status = 404, body = ErrorBody, description = "Neither the store nor NVD knows it"),
              (status = 422, body = ErrorBody),
              (status = 502, body = ErrorBody, description = "NVD could not be asked")))]
async fn cve_threat_intel(
    State(state): State<AppState>,
    caller: Caller,
    Path(text): Path<String>,
) -> ApiResult<Json<CveThreatIntel>> {
    let id = checked_id(&text)?;
    let config = SourceConfig::from_settings(&state.settings);
    let found = research::cves(&state.db, &config, std::slice::from_ref(&id))
        .await?
        .into_iter()
        .next()
        .ok_or(ApiError::NotFound("CVE"))??;
    let tenant = &caller.tenant_id;
    let exposure = open_device_counts(&state.db, tenant, std::slice::from_ref(&id)).await?;
    let detail = &found.detail;
    Ok(Json(CveThreatIntel {
        exploitation: Exploitation::of(detail),
        cve_id: detail.cve_id.clone(),
        description: detail.description.clone(),
        severity: detail.severity.clone(),
        cvss_score: detail.cvss_score,
        affected_device_count: exposure.get(&id).copied().unwrap_or(0),
        affected_applications: cve_affected_versions(&state.db, tenant, &id).await?,
        fetched_from_nvd: found.fetched_from_nvd,
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HighRiskParams {
    /// The lowest EPSS score listed, 0 to 1 (default 0.5).
    #[param(minimum = 0.0, maximum = 1.0)]
    threshold: Option<f64>,
    /// At most this many (default 50, at most 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
    /// Only CVEs open on the tenant's devices (default false: every CVE
    /// of the store).
    in_tenant: Option<bool>,
}

#[derive(Serialize, ToSchema)]
pub struct HighRiskCve {
    #[serde(flatten)]
    cve: ScoredCve,
    /// The tenant's devices with an open finding of it.
    device_count: i64,
}

/// CVEs by EPSS score, highest first: those of the CVE store at or above
/// the threshold, or only those open on the tenant's devices.
#[utoipa::path(get, path = "/epss/high-risk", tag = "threat-intel",
    params(HighRiskParams),
    responses((status = 200, body = Vec<HighRiskCve>), (status = 422, body = ErrorBody)))]
async fn high_risk_by_epss(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HighRiskParams>,
) -> ApiResult<Json<Vec<HighRiskCve>>> {
    let threshold = params.threshold.unwrap_or(0.5);
    if !(0.0..=1.0).contains(&threshold) {
        return Err(ApiError::validation("threshold", "must be between 0 and 1"));
    }
    let (_, limit) = cairn_core::http::paging::bounds(None, params.limit, 50)?;
    let tenant = &caller.tenant_id;
    let scored: Vec<ScoredCve> = if params.in_tenant.unwrap_or(false) {
        let risks: Vec<EpssRisk> =
            epss_high_risk(&state.db, tenant, threshold, limit, &Devices(None)).await?;
        let ids: Vec<String> = risks.iter().map(|r| r.cve_id.clone()).collect();
        let mut hits = store::cve_hits(&state.db, &ids).await?;
        risks
            .into_iter()
            .filter_map(|r| {
                Some(ScoredCve {
                    cve: hits.remove(&r.cve_id)?,
                    epss_score: r.epss_score,
                    epss_percentile: r.epss_percentile.unwrap_or_default(),
                })
            })
            .collect()
    } else {
        store::epss_at_least(&state.db, threshold, limit).await?
    };
    let ids: Vec<String> = scored.iter().map(|s| s.cve.cve_id.clone()).collect();
    let exposure = open_device_counts(&state.db, tenant, &ids).await?;
    Ok(Json(
        scored
            .into_iter()
            .map(|cve| HighRiskCve {
                device_count: exposure.get(&cve.cve.cve_id).copied().unwrap_or(0),
                cve,
            })
            .collect(),
    ))
}

/// How refreshing a CVE from one source went.
pub const REFRESH_STATUSES: [&str; 3] = ["ok", "not_found", "error"];

#[derive(Serialize, ToSchema)]
pub struct SourceOutcome {
    /// `nvd`, `kev` or `epss`.
    source: &'static str,
    /// `ok`, `not_found` (the source has nothing for this CVE) or `error`.
    status: &'static str,
    error: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct Enriched {
    /// The CVE as stored after the refresh.
    cve: CveDetail,
    sources: Vec<SourceOutcome>,
}

fn outcome(source: &'static str, result: Result<bool, SourceError>) -> SourceOutcome {
    match result {
        Ok(true) => SourceOutcome {
            source,
            status: "ok",
            error: None,
        },
        Ok(false) => SourceOutcome {
            source,
            status: "not_found",
            error: None,
        },
        Err(err) => SourceOutcome {
            source,
            status: "error",
            error: Some(err.to_string()),
        },
    }
}

/// Refresh one CVE now: its record from NVD's CVE API, the KEV catalog,
/// and its EPSS score from FIRST's API; each source's outcome is reported
/// and one failing does not stop the others. 404 when no source knows it
/// and the store has no record of it.
#[utoipa::path(post, path = "/enrich/{cve_id}", tag = "threat-intel",
    params(("cve_id" = String, Path)),
    responses((status = 200, body = Enriched),
              (status = 404, body = ErrorBody, description = "No record of it anywhere"),
              (status = 422, body = ErrorBody)))]
async fn enrich_cve(
    State(state): State<AppState>,
    _caller: Caller,
    Path(text): Path<String>,
) -> ApiResult<Json<Enriched>> {
    let id = checked_id(&text)?;
    let config = SourceConfig::from_settings(&state.settings);
    let db = &state.db;
    let nvd = sources::nvd_lookup(db, &config, &id).await;
    let kev = sources::sync_kev(db, &config).await.map(|_| true);
    let epss = sources::epss_lookup(db, &config, &id)
        .await
        .map(|s| s.is_some());
    for result in [&nvd, &kev, &epss] {
        if let Err(SourceError::Db(err)) = result {
            return Err(ApiError::Internal(anyhow::anyhow!("database: {err}")));
        }
    }
    if matches!(nvd, Ok(true)) {
        cairn_vulnerabilities::request_rescans(db).await?;
    }
    let cve = store::cve_detail(db, &id).await?.ok_or_else(|| {
        ApiError::Missing(format!("{id} is neither in the CVE store nor known to NVD"))
    })?;
    Ok(Json(Enriched {
        cve,
        sources: vec![
            outcome("nvd", nvd),
            outcome("kev", kev),
            outcome("epss", epss),
        ],
    }))
}

#[derive(Serialize, ToSchema)]
pub struct ResearchPanel {
    /// The CVE researched for the tenant (record, exposure, tags).
    #[serde(flatten)]
    research: CveResearch,
    /// Exploitation at a glance.
    exploitation: Exploitation,
}

/// The research panel of a CVE in one answer: its record (fetched from
/// NVD when the store lacks it), KEV, EPSS, exploit references, the
/// tenant's affected devices and applications with fix versions, and the
/// tenant's tags on it.
#[utoipa::path(get, path = "/research/{cve_id}", tag = "threat-intel",
    params(("cve_id" = String, Path)),
    responses((status = 200, body = ResearchPanel),
              (status = 404, body = ErrorBody, description = "Neither the store nor NVD knows it"),
              (status = 422, body = ErrorBody),
              (status = 502, body = ErrorBody, description = "NVD could not be asked")))]
async fn research_panel(
    State(state): State<AppState>,
    caller: Caller,
    Path(text): Path<String>,
) -> ApiResult<Json<ResearchPanel>> {
    let config = SourceConfig::from_settings(&state.settings);
    let research = research_cve(&state.db, &config, &caller.tenant_id, &text)
        .await
        .map_err(|err| match err {
            ResearchError::NotACveId(_) => ApiError::validation("cve_id", err.to_string()),
            other => other.into(),
        })?;
    Ok(Json(ResearchPanel {
        exploitation: Exploitation::of(&research.record.detail),
        research,
    }))
}
