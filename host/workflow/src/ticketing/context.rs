//! A ticket as an analyst works it: `GET .../context` (its CVEs, the
//! tenant's affected inventory, the EDR agents of its configurations) and
//! `GET .../full` (the live ticket with what Cairn keeps of it).

use axum::extract::State;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::{actions, call, items, storage, EDR_AREA, PSA_AREA};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path};
use cairn_core::ids::TenantId;
use cairn_integrations::StoredRecord;
use cairn_platform::app::AppState;
use cairn_platform::auth::Caller;
use cairn_vulnerabilities::findings::views::{self, FindingView};
use cairn_vulnerabilities::reference::research::cve_ids_in;
use cairn_vulnerabilities::reference::store::{self, CveDetail};

/// Affected findings listed per CVE.
const FINDINGS_LISTED: i64 = 200;
/// Linked configurations looked up in the EDR data.
const CONFIGURATIONS_READ: usize = 50;

#[derive(Serialize, ToSchema)]
pub struct CveContext {
    cve_id: String,
    /// The stored CVE record with KEV and EPSS; null when the knowledge
    /// base does not hold it.
    cve: Option<CveDetail>,
    /// The tenant's open findings of the CVE (at most 200).
    affected: Vec<FindingView>,
    /// All of them.
    affected_total: i64,
}

#[derive(Serialize, ToSchema)]
pub struct ConfigurationContext {
    /// The upstream's configuration id.
    id: String,
    name: String,
    /// The EDR agent whose device name matches the configuration's
    /// (exactly, by NetBIOS form or by short host), as the edr area
    /// synced it; null when none matches or no EDR is synced.
    #[schema(value_type = Option<Object>)]
    edr_agent: Option<Value>,
}

#[derive(Serialize, ToSchema)]
pub struct TicketContext {
    ticket_id: String,
    /// The ticket, live.
    #[schema(value_type = Object)]
    ticket: Value,
    /// Its CVEs: those it was raised for here, and those its summary names.
    cves: Vec<CveContext>,
    /// Its linked configurations (at most 50) with their EDR agents.
    configurations: Vec<ConfigurationContext>,
}

/// What the analyst needs beside a ticket: the CVE records it is about,
/// the tenant's inventory affected by them, and the EDR agent data of the
/// configurations linked to it.
#[utoipa::path(get, path = "/service/tickets/{ticket_id}/context", tag = "psa",
    params(("ticket_id" = String, Path)),
    responses((status = 200, body = TicketContext),
              (status = 404, body = ErrorBody, description = "No such ticket upstream"),
              (status = 409, body = ErrorBody, description = "psa is not configured"),
              (status = 422, body = ErrorBody, description = "A ticket id the connector refuses"),
              (status = 502, body = ErrorBody, description = "The upstream failed")))]
pub async fn ticket_context(
    State(state): State<AppState>,
    caller: Caller,
    Path(ticket_id): Path<String>,
) -> ApiResult<Json<TicketContext>> {
    let tenant = &caller.tenant_id;
    let path = [("ticket_id", ticket_id.clone())];
    let ticket = call(&state, tenant, actions::GET_TICKET, &path, &[], Value::Null).await?;
    let mut cve_ids = storage::cves_of_ticket(&state.db, tenant, &ticket_id).await?;
    for id in cve_ids_in(ticket["summary"].as_str().unwrap_or_default()) {
        if !cve_ids.contains(&id) {
            cve_ids.push(id);
        }
    }
    let mut cves = Vec::with_capacity(cve_ids.len());
    for cve_id in cve_ids {
        let (affected, affected_total) =
            views::cve_findings(&state.db, tenant, &cve_id, "open", 0, FINDINGS_LISTED).await?;
        cves.push(CveContext {
            cve: store::cve_detail(&state.db, &cve_id).await?,
            cve_id,
            affected,
            affected_total,
        });
    }
    let query = [("limit", CONFIGURATIONS_READ.to_string())];
    let linked = call(
        &state,
        tenant,
        actions::LINKED_CONFIGURATIONS,
        &path,
        &query,
        Value::Null,
    )
    .await?;
    let mut configurations = vec![];
    for configuration in items(&linked) {
        let name = configuration["name"]
            .as_str()
            .or(configuration["deviceIdentifier"].as_str())
            .unwrap_or_default()
            .to_string();
        let edr_agent = if name.is_empty() {
            None
        } else {
            cairn_integrations::typed_by_device_name(&state.db, tenant, EDR_AREA, "device", &name)
                .await?
                .map(cairn_integrations::record_json)
        };
        configurations.push(ConfigurationContext {
            id: configuration["id"]
                .to_string()
                .trim_matches('"')
                .to_string(),
            name,
            edr_agent,
        });
    }
    Ok(Json(TicketContext {
        ticket_id,
        ticket,
        cves,
        configurations,
    }))
}

#[derive(Serialize, ToSchema)]
pub struct FullTicket {
    ticket_id: String,
    /// The live ticket when the upstream answered, else the freshest kept
    /// copy.
    #[schema(value_type = Object)]
    ticket: Value,
    /// Where `ticket` came from: `live`, `synced` (the ticket sync) or
    /// `bulk` (a bulk pull).
    source: String,
    /// Why the live read failed, when it did and a kept copy answered.
    live_error: Option<String>,
    /// What Cairn keeps of the ticket, by where it came from (`synced`,
    /// `bulk`), each with when it last changed here.
    #[schema(value_type = Object)]
    kept: Value,
    /// Its notes as the last bulk pull stored them.
    #[schema(value_type = Vec<Object>)]
    notes: Vec<Value>,
}

/// The ticket live, merged with what the syncs and bulk pulls keep of it
/// (and its bulk-pulled notes), saying what came from where. When the
/// upstream cannot be reached, the freshest kept copy answers.
#[utoipa::path(get, path = "/service/tickets/{ticket_id}/full", tag = "psa",
    params(("ticket_id" = String, Path)),
    responses((status = 200, body = FullTicket),
              (status = 404, body = ErrorBody, description = "Neither the upstream nor Cairn knows the ticket"),
              (status = 409, body = ErrorBody, description = "psa is not configured"),
              (status = 422, body = ErrorBody, description = "A ticket id the connector refuses"),
              (status = 502, body = ErrorBody, description = "The upstream failed and nothing is kept")))]
pub async fn full_ticket(
    State(state): State<AppState>,
    caller: Caller,
    Path(ticket_id): Path<String>,
) -> ApiResult<Json<FullTicket>> {
    let tenant = &caller.tenant_id;
    let path = [("ticket_id", ticket_id.clone())];
    let live = call(&state, tenant, actions::GET_TICKET, &path, &[], Value::Null).await;
    let kept_records = kept(&state, tenant, &ticket_id).await?;
    let notes = cairn_integrations::of_type_by_field(
        &state.db,
        tenant,
        "ticket_note",
        "ticket_id",
        std::slice::from_ref(&ticket_id),
    )
    .await?
    .into_iter()
    .filter(|note| note.source == PSA_AREA)
    .map(|note| note.body.0)
    .collect();
    let mut kept = serde_json::Map::new();
    for (source, record) in &kept_records {
        kept.insert(
            source.to_string(),
            json!({"record": &record.body,
                   "changed_at": cairn_core::db::to_rfc3339(record.updated_at)}),
        );
    }
    let (ticket, source, live_error) = match live {
        Ok(ticket) => (ticket, "live".to_string(), None),
        // A client's mistake is the client's, whatever is kept.
        Err(err @ (ApiError::Validation { .. } | ApiError::Conflict(_))) => return Err(err),
        Err(err) => {
            let freshest = kept_records.iter().max_by_key(|(_, r)| r.updated_at);
            match freshest {
                Some((source, record)) => (
                    record.body.0.clone(),
                    source.to_string(),
                    Some(err.to_string()),
                ),
                None => return Err(err),
            }
        }
    };
    Ok(Json(FullTicket {
        ticket_id,
        ticket,
        source,
        live_error,
        kept: Value::Object(kept),
        notes,
    }))
}

/// The ticket's kept copies: `bulk` when in a collection the tenant's psa
/// connector pulls in bulk, else `synced`.
async fn kept(
    state: &AppState,
    tenant: &TenantId,
    ticket_id: &str,
) -> ApiResult<Vec<(&'static str, StoredRecord)>> {
    let pulled: Vec<String> = cairn_integrations::areas::tenant_connector(
        &state.db,
        &state.secrets,
        &state.plugins(),
        tenant,
        PSA_AREA,
    )
    .await?
    .and_then(|(connector, _)| connector.descriptor.pull.clone())
    .map(|pull| pull.collections)
    .unwrap_or_default();
    let records =
        cairn_integrations::typed_by_key_in_each(&state.db, tenant, PSA_AREA, "ticket", ticket_id)
            .await?;
    Ok(records
        .into_iter()
        .map(|(collection, record)| {
            let source = if pulled.contains(&collection) {
                "bulk"
            } else {
                "synced"
            };
            (source, record)
        })
        .collect())
}
