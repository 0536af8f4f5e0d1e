//! Ticketing: the psa area's features that join a ticket to what Cairn
//! knows. A ticket raised from a vulnerability (its devices, versions,
//! fix, KEV and EPSS, with the devices' configurations linked), the
//! analyst's context of a ticket (its CVEs, the tenant's affected
//! inventory, the EDR agents of its configurations) and the full ticket
//! (live, with what the syncs and bulk pulls keep of it).
//!
//! The upstream is reached only through the tenant's psa connector, by the
//! action names every psa connector declares (see the SDK README): the
//! host never knows the product.
//!
//! The psa area's host features, reaching the upstream only through the
//! tenant's psa connector by action name (`create_ticket`, `get_ticket`,
//! `configurations`, `link_configuration`, `company_configurations`):
//! `from_vuln.rs` (`POST /psa/tickets/from-vuln`: findings and the CVE
//! record from the vulnerabilities area, text from `summary.rs`, the
//! devices' configurations linked), `storage.rs` (`vuln_tickets`: a creation
//! is claimed before it goes upstream, so one ticket per CVE and company),
//! `context.rs` (`.../context`: CVEs, affected findings, EDR agents by
//! configuration name; `.../full`: live else the kept copy).

mod context;
mod from_vuln;
mod storage;
mod summary;

use serde_json::Value;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;
use cairn_integrations::areas;
use cairn_platform::app::AppState;
use cairn_plugins::{ActionCall, Plugins};

/// Where a full ticket came from: asked of the PSA now, or kept by the
/// ticket sync or a bulk pull.
pub const TICKET_SOURCES: [&str; 3] = ["live", "synced", "bulk"];

/// The area whose connectors hold tickets.
pub const PSA_AREA: &str = "psa";
/// The area whose device records are endpoint agents.
const EDR_AREA: &str = "edr";

/// Ticketing: its routes, mounted under `/api/v1/psa` when a loaded
/// connector serves that area.
pub fn area(state: &AppState) -> anyhow::Result<cairn_platform::area::Area> {
    Ok(
        cairn_platform::area::Area::new("ticketing")
            .routes("/api/v1/psa", router(&state.plugins())),
    )
}

fn router(plugins: &Plugins) -> OpenApiRouter<AppState> {
    if !plugins.areas().contains(&PSA_AREA) {
        return OpenApiRouter::new();
    }
    OpenApiRouter::new()
        .routes(routes!(from_vuln::ticket_from_vulnerability))
        .routes(routes!(context::ticket_context))
        .routes(routes!(context::full_ticket))
}

/// The actions of the tenant's psa connector the host calls.
mod actions {
    pub const CREATE_TICKET: &str = "create_ticket";
    pub const GET_TICKET: &str = "get_ticket";
    pub const LINKED_CONFIGURATIONS: &str = "configurations";
    pub const LINK_CONFIGURATION: &str = "link_configuration";
    pub const FIND_CONFIGURATIONS: &str = "company_configurations";
    pub const LIST_TICKETS: &str = "list_tickets";
    pub const ADD_NOTE: &str = "add_note";
    pub const PATCH_TICKET: &str = "patch_ticket";
}

/// Runs `action` of the tenant's psa connector.
async fn call(
    state: &AppState,
    tenant: &TenantId,
    action: &str,
    path_params: &[(&str, String)],
    query: &[(&str, String)],
    body: Value,
) -> Result<Value, ApiError> {
    let pairs = |pairs: &[(&str, String)]| {
        pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.clone()))
            .collect()
    };
    let call = ActionCall {
        action: action.into(),
        path_params: pairs(path_params),
        query: pairs(query),
        body,
    };
    areas::invoke(state, tenant, PSA_AREA, &call).await
}

/// The items of a list action's answer (`{"items": [...]}`).
fn items(answer: &Value) -> &[Value] {
    answer["items"].as_array().map_or(&[], Vec::as_slice)
}

/// A ticket the host opens on its own account (automation).
pub struct NewTicket<'a> {
    pub company_id: u64,
    pub board_id: Option<u64>,
    pub priority_id: Option<u64>,
    /// At most 100 characters.
    pub summary: &'a str,
    pub description: &'a str,
}

/// Opens a ticket through the tenant's psa connector; its id.
pub async fn open_ticket(
    state: &AppState,
    tenant: &TenantId,
    ticket: &NewTicket<'_>,
) -> Result<String, ApiError> {
    let mut body = serde_json::json!({
        "summary": ticket.summary,
        "company_id": ticket.company_id,
        "initial_description": ticket.description,
    });
    if let Some(board) = ticket.board_id {
        body["board_id"] = board.into();
    }
    if let Some(priority) = ticket.priority_id {
        body["priority_id"] = priority.into();
    }
    let created = call(state, tenant, actions::CREATE_TICKET, &[], &[], body).await?;
    from_vuln::id_text(&created["id"])
        .ok_or_else(|| ApiError::Upstream("the psa connector's new ticket has no id".into()))
}

/// An open ticket of the company whose summary starts with `prefix`
/// (what a retried creation looks for before opening another).
pub async fn find_open_ticket(
    state: &AppState,
    tenant: &TenantId,
    company_id: u64,
    prefix: &str,
) -> Result<Option<String>, ApiError> {
    let query = [
        ("company_id", company_id.to_string()),
        ("search", prefix.to_string()),
        ("closed", "false".to_string()),
        ("limit", "25".to_string()),
    ];
    let answer = call(
        state,
        tenant,
        actions::LIST_TICKETS,
        &[],
        &query,
        Value::Null,
    )
    .await?;
    Ok(items(&answer)
        .iter()
        .find(|t| t["summary"].as_str().is_some_and(|s| s.starts_with(prefix)))
        .and_then(|t| from_vuln::id_text(&t["id"])))
}

/// Adds a note to a ticket (to its resolution when `resolution`).
pub async fn add_note(
    state: &AppState,
    tenant: &TenantId,
    ticket_id: &str,
    text: &str,
    resolution: bool,
) -> Result<(), ApiError> {
    let body = serde_json::json!({"text": text, "resolution": resolution});
    let path = [("ticket_id", ticket_id.to_string())];
    call(state, tenant, actions::ADD_NOTE, &path, &[], body).await?;
    Ok(())
}

/// Moves a ticket to an upstream status.
pub async fn set_status(
    state: &AppState,
    tenant: &TenantId,
    ticket_id: &str,
    status_id: u64,
) -> Result<(), ApiError> {
    let body = serde_json::json!([{"op": "replace", "path": "status", "value": {"id": status_id}}]);
    let path = [("ticket_id", ticket_id.to_string())];
    call(state, tenant, actions::PATCH_TICKET, &path, &[], body).await?;
    Ok(())
}
