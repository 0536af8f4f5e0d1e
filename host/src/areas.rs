//! Every area of the service, listed once, in the order their routes are
//! mounted. Each is built from the state by its own function
//! (`cairn_platform::area`); the closures are where the composition root
//! hands an area what it asks of an area above it.

use cairn_platform::area::AreaFn;

pub const AREAS: &[AreaFn] = &[
    cairn_platform::area,
    cairn_integrations::area,
    |state| cairn_inventory::area(state, cairn_vulnerabilities::exposure()),
    cairn_integrations::csv_sources::area,
    cairn_vulnerabilities::area,
    cairn_workflow::ticketing::area,
    cairn_intelligence::news::area,
    cairn_intelligence::advisories::area,
    cairn_reporting::dashboards::area,
    cairn_reporting::partner::area,
    |state| cairn_reporting::reports::area(state, crate::shelf::portal_documents(state)),
    cairn_workflow::tags::area,
    cairn_workflow::projects::area,
    cairn_workflow::sla::area,
    |state| cairn_workflow::automation::area(state, cairn_intelligence::subscriptions::matches()),
    cairn_workflow::remediation::area,
    cairn_intelligence::research::area,
    cairn_intelligence::subscriptions::area,
    cairn_intelligence::threat_intel::area,
    cairn_portal::area,
];
