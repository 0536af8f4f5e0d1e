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

/// The area whose connectors hold tickets.
pub const PSA_AREA: &str = "psa";
/// The area whose device records are endpoint agents.
const EDR_AREA: &str = "edr";

/// Ticketing: its routes, mounted under `/api/v1/psa` when a loaded
/// connector serves that area.
pub fn area(state: &AppState) -> anyhow::Result<cairn_platform::area::Area> {
    Ok(cairn_platform::area::Area::new("ticketing").routes("/api/v1/psa", router(&state.plugins)))
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
