//! `POST /api/v1/psa/tickets/from-vuln`: one ticket for a CVE at a company,
//! describing the tenant's affected devices, with their configurations
//! linked; asked again, the same ticket.

use axum::extract::State;
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::storage::{self, Claim};
use super::summary::{self, description};
use super::{actions, call, items};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::Json;
use cairn_core::ids::TenantId;
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_vulnerabilities::findings::views::{self, FindingView};
use cairn_vulnerabilities::reference::research;
use cairn_vulnerabilities::reference::store::{self, CveDetail};

/// Open findings read for one ticket.
const FINDINGS_READ: i64 = 1000;
/// Devices whose configurations are looked up and linked upstream; a
/// ticket for more devices lists them all but links these.
const LINKED_DEVICES: usize = 25;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FromVulnRequest {
    /// e.g. `CVE-2021-44228` (any case).
    cve_id: String,
    /// The upstream company the ticket is for.
    #[schema(minimum = 1)]
    company_id: u64,
    #[schema(minimum = 1)]
    board_id: Option<u64>,
    #[schema(minimum = 1)]
    priority_id: Option<u64>,
    /// Only this device's findings (its name, ignoring case).
    device: Option<String>,
    /// Only findings of applications whose name contains this, ignoring
    /// case.
    application: Option<String>,
    /// Raise a new ticket even when one exists for this CVE and company.
    #[serde(default)]
    force_new: bool,
}

#[derive(Serialize, ToSchema)]
pub struct LinkedConfiguration {
    device: String,
    configuration_id: String,
}

#[derive(Serialize, ToSchema)]
pub struct NotLinked {
    device: String,
    reason: String,
}

#[derive(Serialize, ToSchema)]
pub struct VulnTicket {
    ticket_id: String,
    /// False when the ticket raised earlier for this CVE and company is
    /// returned (nothing was sent upstream).
    created: bool,
    summary: String,
    /// The affected devices the description lists (empty when returning
    /// an existing ticket).
    devices: Vec<String>,
    linked_configurations: Vec<LinkedConfiguration>,
    /// Devices whose configuration was not linked, and why.
    not_linked: Vec<NotLinked>,
}

/// Raise a ticket for a CVE through the tenant's psa connector: a summary
/// within 100 characters, a description with the affected devices,
/// installed versions, fix version, KEV and EPSS, and the devices'
/// configurations linked when the upstream has them. Asked again for the
/// same CVE and company, the existing ticket is returned (200) unless
/// `force_new`.
#[utoipa::path(post, path = "/tickets/from-vuln", tag = "psa",
    request_body = FromVulnRequest,
    responses((status = 201, body = VulnTicket, description = "Raised"),
              (status = 200, body = VulnTicket, description = "Raised earlier; returned as it is"),
              (status = 404, body = ErrorBody, description = "Unknown CVE, or no open finding matches the device or application"),
              (status = 409, body = ErrorBody, description = "psa is not configured, or the same ticket is being raised right now"),
              (status = 422, body = ErrorBody, description = "A value refused here or upstream; `field` names it"),
              (status = 502, body = ErrorBody, description = "The upstream failed")))]
pub async fn ticket_from_vulnerability(
    State(state): State<AppState>,
    caller: Caller,
    Json(request): Json<FromVulnRequest>,
) -> ApiResult<(StatusCode, Json<VulnTicket>)> {
    let tenant = &caller.tenant_id;
    let cve_id = research::cve_id(&request.cve_id)
        .ok_or_else(|| ApiError::validation("cve_id", "not a CVE id (CVE-YYYY-NNNN)"))?;
    let detail = store::cve_detail(&state.db, &cve_id).await?;
    let findings = affected(&state, tenant, &cve_id, &request).await?;
    if detail.is_none() && findings.is_empty() {
        return Err(ApiError::Missing(format!(
            "{cve_id} is neither in the CVE knowledge base nor among this tenant's findings"
        )));
    }
    let text = summary::summary(&cve_id, detail.as_ref(), &findings);
    let company = request.company_id.to_string();
    match storage::claim(&state.db, tenant, &cve_id, &company, &text, request.force_new).await? {
        Claim::Exists { ticket_id, summary } => {
            return Ok((
                StatusCode::OK,
                Json(VulnTicket {
                    ticket_id,
                    created: false,
                    summary,
                    devices: vec![],
                    linked_configurations: vec![],
                    not_linked: vec![],
                }),
            ))
        }
        Claim::Busy => {
            return Err(ApiError::Conflict(format!(
                "a ticket for {cve_id} at company {company} is being raised right now; ask again shortly"
            )))
        }
        Claim::Claimed => {}
    }
    let raised = raise(
        &state,
        tenant,
        &cve_id,
        detail.as_ref(),
        &findings,
        &request,
        &text,
    )
    .await;
    let ticket_id = match raised {
        Ok(id) => id,
        Err(err) => {
            storage::release(&state.db, tenant, &cve_id, &company).await?;
            return Err(err);
        }
    };
    storage::created(&state.db, tenant, &cve_id, &company, &ticket_id).await?;
    let devices: Vec<String> = summary::distinct_devices(&findings)
        .into_iter()
        .map(String::from)
        .collect();
    let (linked, not_linked) = link_devices(&state, tenant, &ticket_id, &request, &devices).await;
    Ok((
        StatusCode::CREATED,
        Json(VulnTicket {
            ticket_id,
            created: true,
            summary: text,
            devices,
            linked_configurations: linked,
            not_linked,
        }),
    ))
}

/// The tenant's open findings of the CVE, narrowed to the request's device
/// or application; a narrowing that leaves nothing is a 404.
async fn affected(
    state: &AppState,
    tenant: &TenantId,
    cve_id: &str,
    request: &FromVulnRequest,
) -> ApiResult<Vec<FindingView>> {
    let (mut findings, _) =
        views::cve_findings(&state.db, tenant, cve_id, "open", 0, FINDINGS_READ).await?;
    if let Some(device) = &request.device {
        findings.retain(|f| cairn_core::db::lower(&f.device_name) == cairn_core::db::lower(device));
    }
    if let Some(application) = &request.application {
        let wanted = cairn_core::db::lower(application);
        findings.retain(|f| cairn_core::db::lower(&f.application_name).contains(&wanted));
    }
    if findings.is_empty() && (request.device.is_some() || request.application.is_some()) {
        return Err(ApiError::Missing(format!(
            "no open finding of {cve_id} matches the device or application given"
        )));
    }
    Ok(findings)
}

/// Creates the ticket upstream; its id.
async fn raise(
    state: &AppState,
    tenant: &TenantId,
    cve_id: &str,
    detail: Option<&CveDetail>,
    findings: &[FindingView],
    request: &FromVulnRequest,
    summary: &str,
) -> ApiResult<String> {
    let mut body = json!({
        "summary": summary,
        "company_id": request.company_id,
        "initial_description": description(cve_id, detail, findings),
    });
    if let Some(board) = request.board_id {
        body["board_id"] = json!(board);
    }
    if let Some(priority) = request.priority_id {
        body["priority_id"] = json!(priority);
    }
    let created = call(state, tenant, actions::CREATE_TICKET, &[], &[], body).await?;
    id_text(&created["id"])
        .ok_or_else(|| ApiError::Upstream("the psa connector's new ticket has no id".into()))
}

pub(super) fn id_text(value: &Value) -> Option<String> {
    match value {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

/// Links the configuration named like each device (ignoring case, or by
/// the short host of either name). A device the upstream has no
/// configuration for, or whose lookup fails, is reported, not fatal: the
/// ticket exists.
async fn link_devices(
    state: &AppState,
    tenant: &TenantId,
    ticket_id: &str,
    request: &FromVulnRequest,
    devices: &[String],
) -> (Vec<LinkedConfiguration>, Vec<NotLinked>) {
    let (mut linked, mut not_linked) = (vec![], vec![]);
    let short = |name: &str| cairn_core::db::lower(name.split('.').next().unwrap_or(name));
    for (i, device) in devices.iter().enumerate() {
        if i >= LINKED_DEVICES {
            not_linked.push(NotLinked {
                device: device.clone(),
                reason: format!("only the first {LINKED_DEVICES} devices are linked"),
            });
            continue;
        }
        let query = [
            ("search", short(device)),
            ("company_id", request.company_id.to_string()),
            ("limit", "25".to_string()),
        ];
        let found = match call(
            state,
            tenant,
            actions::FIND_CONFIGURATIONS,
            &[],
            &query,
            Value::Null,
        )
        .await
        {
            Ok(answer) => items(&answer)
                .iter()
                .find(|c| {
                    c["name"]
                        .as_str()
                        .is_some_and(|n| short(n) == short(device))
                })
                .and_then(|c| id_text(&c["id"])),
            Err(err) => {
                not_linked.push(NotLinked {
                    device: device.clone(),
                    reason: format!("looking it up failed: {}", err),
                });
                continue;
            }
        };
        let Some(configuration_id) = found else {
            not_linked.push(NotLinked {
                device: device.clone(),
                reason: "no configuration of that name at the company".into(),
            });
            continue;
        };
        let Ok(number) = configuration_id.parse::<u64>() else {
            not_linked.push(NotLinked {
                device: device.clone(),
                reason: format!("configuration id {configuration_id} is not a number"),
            });
            continue;
        };
        let body = json!({"configuration_id": number});
        let path = [("ticket_id", ticket_id.to_string())];
        match call(state, tenant, actions::LINK_CONFIGURATION, &path, &[], body).await {
            Ok(_) => linked.push(LinkedConfiguration {
                device: device.clone(),
                configuration_id,
            }),
            Err(err) => not_linked.push(NotLinked {
                device: device.clone(),
                reason: format!("linking failed: {}", err),
            }),
        }
    }
    (linked, not_linked)
}
