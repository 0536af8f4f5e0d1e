//! `POST /api/v1/scanner/research-finding`: the CVE records behind a
//! scanner finding (or one CVE id), from the store or fetched from NVD.

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::reference::research::{self, Researched};
use crate::reference::sources::SourceConfig;
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::Json;
use cairn_integrations as integrations;
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;

/// The area whose finding records are researched.
pub const SCANNER_AREA: &str = "scanner";
/// CVEs researched for one finding at most; NVD paces unkeyed clients to
/// a few requests a minute.
const MAX_CVES: usize = 20;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(research_finding))
}

/// Exactly one of the two.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResearchFindingRequest {
    /// The key of a scanner finding, as `GET /scanner/findings/{asset_id}`
    /// lists it.
    finding_key: Option<String>,
    /// A CVE id, researched without a finding.
    cve_id: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ResearchedFinding {
    /// The finding asked for: its key and normalized fields.
    #[schema(value_type = Option<Object>)]
    finding: Option<Value>,
    /// The records of the finding's CVEs (or of the CVE asked for).
    cves: Vec<Researched>,
    /// CVE ids that could not be resolved, with why.
    unresolved: Vec<Unresolved>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Unresolved {
    cve_id: String,
    reason: String,
}

/// Resolves a scanner finding's CVEs (or one CVE id) to their records: from
/// the CVE store, or fetched from NVD's CVE API when the store lacks them
/// (and then stored). A finding whose scanner named no CVE (some scanners
/// name only their own check) answers with none. At most 20 CVEs of a
/// finding are researched.
#[utoipa::path(post, path = "/research-finding", tag = "scanner",
    request_body = ResearchFindingRequest,
    responses((status = 200, body = ResearchedFinding),
              (status = 404, description = "no such finding, or a CVE id neither the store nor NVD knows", body = ErrorBody),
              (status = 422, body = ErrorBody),
              (status = 502, description = "NVD could not be asked", body = ErrorBody)))]
async fn research_finding(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<ResearchFindingRequest>,
) -> ApiResult<Json<ResearchedFinding>> {
    let config = SourceConfig::from_settings(&state.settings);
    let blank = |v: Option<String>| v.filter(|v| !v.trim().is_empty());
    match (blank(request.finding_key), blank(request.cve_id)) {
        (Some(key), None) => {
            let record = integrations::typed_by_key(
                &state.db,
                &caller.tenant_id,
                SCANNER_AREA,
                "finding",
                &key,
            )
            .await?
            .ok_or(ApiError::NotFound("finding"))?;
            let fields = &record.fields;
            let mut ids: Vec<String> = fields["cve_ids"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_uppercase)
                .collect();
            ids.sort();
            ids.dedup();
            ids.truncate(MAX_CVES);
            let mut answer = ResearchedFinding {
                finding: Some(serde_json::json!({"key": record.record_key,
                                                 "device_name": record.device_name,
                                                 "fields": fields})),
                cves: vec![],
                unresolved: vec![],
            };
            let found = research::cves(&state.db, &config, &ids).await?;
            for (id, result) in ids.into_iter().zip(found) {
                match result {
                    Ok(found) => answer.cves.push(found),
                    Err(err) => answer.unresolved.push(Unresolved {
                        cve_id: id,
                        reason: err.to_string(),
                    }),
                }
            }
            Ok(Json(answer))
        }
        (None, Some(cve_id)) => {
            let found = research::cves(&state.db, &config, &[cve_id]).await?;
            Ok(Json(ResearchedFinding {
                finding: None,
                cves: vec![found
                    .into_iter()
                    .next()
                    .ok_or(ApiError::NotFound("CVE"))??],
                unresolved: vec![],
            }))
        }
        _ => Err(ApiError::validation(
            "finding_key",
            "give exactly one of finding_key and cve_id",
        )),
    }
}
