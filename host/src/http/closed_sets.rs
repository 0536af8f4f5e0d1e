//! The closed sets of words the service answers with or takes, where the
//! Rust type behind a field or parameter is a string: each is one shared
//! component of the document, its values taken from the constants the
//! areas validate and write with, so a client generator makes an enum of
//! it and the document cannot drift from the code. A component a Rust
//! enum already gives (`EntityType`, `SlaState`, `ReportType`, `Format`)
//! is only pointed at.

/// One closed set as the document names it.
pub struct ClosedSet {
    /// The shared component (`#/components/schemas/<name>`).
    pub name: &'static str,
    /// What the words are; `None` when a Rust enum's component is there.
    pub values: Option<&'static [&'static str]>,
    /// Where it applies: `Schema.property` (in the schema and in the
    /// `Page_Schema` lists of it), or `METHOD /path ?parameter`.
    pub at: &'static [&'static str],
}

/// The sets whose locations are in the document only while a connector of
/// their area is loaded (ticketing's routes with a psa connector, the
/// lookups with a threat-intel one).
pub const WITH_CONNECTORS: &[&str] = &["TicketSource", "ThreatIntelLookup"];

/// The sets of `/openapi.json`.
pub fn api() -> Vec<ClosedSet> {
    use cairn_vulnerabilities::findings::{triage, views, vocabulary};
    vec![
        ClosedSet {
            name: "TriageStatus",
            values: Some(&triage::STATUSES),
            at: &[
                "TriageView.status",
                "TriageRequest.status",
                "GET /api/v1/vulnerabilities/ ?triage",
            ],
        },
        ClosedSet {
            name: "FindingStatus",
            values: Some(&vocabulary::FINDING_STATUSES),
            at: &["FindingView.status", "SlaFinding.status"],
        },
        ClosedSet {
            name: "FindingStatusFilter",
            values: Some(&cairn_vulnerabilities::routes::STATUS_FILTERS),
            at: &[
                "GET /api/v1/vulnerabilities/ ?status",
                "GET /api/v1/vulnerabilities/cve/{cve_id}/devices ?status",
            ],
        },
        ClosedSet {
            name: "VulnerabilitySort",
            values: Some(&views::SORTS),
            at: &["GET /api/v1/vulnerabilities/ ?sort"],
        },
        ClosedSet {
            name: "SlaState",
            values: None,
            at: &[
                "FindingDue.sla_state",
                "GET /api/v1/vulnerabilities/ ?sla_state",
            ],
        },
        ClosedSet {
            name: "ScanStatus",
            values: Some(&vocabulary::SCAN_STATUSES),
            at: &["ScanView.status"],
        },
        ClosedSet {
            name: "UploadStatus",
            values: Some(&cairn_integrations::csv_sources::storage::STATUSES),
            at: &["UploadView.status"],
        },
        ClosedSet {
            name: "ReportStatus",
            values: Some(&cairn_reporting::reports::STATUSES),
            at: &["ReportView.status"],
        },
        ClosedSet {
            name: "ReportType",
            values: None,
            at: &["ReportView.report_type"],
        },
        ClosedSet {
            name: "Format",
            values: None,
            at: &["ReportView.format"],
        },
        ClosedSet {
            name: "EntityType",
            values: None,
            at: &[
                "EntityAssignment.entity_type",
                "GET /api/v1/tags/entity/bulk ?entity_type",
                "DELETE /api/v1/tags/entity/unassign ?entity_type",
                "GET /api/v1/tags/entity/{entity_type}/{entity_name} ?entity_type",
            ],
        },
        ClosedSet {
            name: "SlaExceptionStatus",
            values: Some(&cairn_workflow::sla::exceptions::STATUSES),
            at: &["SlaException.status"],
        },
        ClosedSet {
            name: "RemediationPlanStatus",
            values: Some(&cairn_workflow::remediation::storage::PLAN_STATUSES),
            at: &["RemediationPlanSummary.status"],
        },
        ClosedSet {
            name: "RemediationItemState",
            values: Some(&cairn_workflow::remediation::storage::ITEM_STATES),
            at: &["RemediationItem.state"],
        },
        ClosedSet {
            name: "AutomationDeliveryStatus",
            values: Some(&cairn_workflow::automation::DELIVERY_STATUSES),
            at: &[
                "AutomationDelivery.status",
                "GET /api/v1/automation/deliveries ?status",
            ],
        },
        ClosedSet {
            name: "SubscriptionType",
            values: Some(&cairn_intelligence::subscriptions::SUB_TYPES),
            at: &[
                "SubscriptionView.sub_type",
                "NewSubscriptionRequest.sub_type",
                "DELETE /api/v1/subscriptions/by-name/{sub_type}/{name} ?sub_type",
                "GET /api/v1/subscriptions/check ?sub_type",
            ],
        },
        ClosedSet {
            name: "CveSource",
            values: Some(&cairn_vulnerabilities::reference::sources::SOURCES),
            at: &["SourceView.source", "SourceOutcome.source"],
        },
        ClosedSet {
            name: "AdvisoryStatus",
            values: Some(&cairn_intelligence::advisories::STATUSES),
            at: &["AdvisoryView.status"],
        },
        ClosedSet {
            name: "AssetTier",
            values: None,
            at: &["AssetTierView.tier"],
        },
        ClosedSet {
            name: "NewsCategory",
            values: Some(cairn_intelligence::news::CATEGORIES),
            at: &["GET /api/v1/news-feeds/items ?category"],
        },
        ClosedSet {
            name: "NewsSeverity",
            values: Some(cairn_intelligence::news::SEVERITIES),
            at: &["GET /api/v1/news-feeds/items ?severity"],
        },
        ClosedSet {
            name: "ResearchKind",
            values: Some(&cairn_intelligence::research::HISTORY_KINDS),
            at: &["HistoryEntry.kind", "GET /api/v1/research/history ?kind"],
        },
        ClosedSet {
            name: "PartnerOverviewSort",
            values: Some(&cairn_reporting::partner::OVERVIEW_SORTS),
            at: &["GET /api/v1/partner/overview ?sort"],
        },
        ClosedSet {
            name: "SortOrder",
            values: Some(&cairn_reporting::partner::ORDERS),
            at: &["GET /api/v1/partner/overview ?order"],
        },
        ClosedSet {
            name: "PartnerTriageStatus",
            values: Some(&cairn_reporting::partner::PARTNER_TRIAGE_STATUSES),
            at: &["PartnerTriageRequest.status"],
        },
        ClosedSet {
            name: "TrackedSlaState",
            values: Some(&cairn_workflow::sla::policy::SlaState::TRACKED),
            at: &["GET /api/v1/sla/findings ?state"],
        },
        ClosedSet {
            name: "SlaPolicyScope",
            values: Some(&cairn_workflow::sla::storage::Scope::NAMES),
            at: &["SlaPolicyChange.scope", "SlaPolicyView.scope"],
        },
        ClosedSet {
            name: "SlaPolicySourceScope",
            values: Some(&cairn_workflow::sla::storage::Scope::SOURCES),
            at: &["SlaPolicySource.scope"],
        },
        ClosedSet {
            name: "ComplianceFilter",
            values: Some(&cairn_intelligence::research::COMPLIANCE_FILTERS),
            at: &["GET /api/v1/versions/compliance ?status"],
        },
        ClosedSet {
            name: "ActionRole",
            values: Some(&cairn_plugins::descriptor::ACTION_ROLES),
            at: &["Action.role"],
        },
        ClosedSet {
            name: "AutomationAction",
            values: Some(&cairn_workflow::automation::storage::DELIVERY_ACTIONS),
            at: &[
                "AutomationDelivery.action",
                "AutomationPlannedDelivery.action",
            ],
        },
        ClosedSet {
            name: "AutomationTriggerKind",
            values: Some(&cairn_workflow::automation::rules::Trigger::KINDS),
            at: &["AutomationEvent.kind"],
        },
        ClosedSet {
            name: "AutomationLogOutcome",
            values: Some(&cairn_workflow::automation::storage::LOG_OUTCOMES),
            at: &["AutomationLogLine.outcome"],
        },
        ClosedSet {
            name: "CveRecordSource",
            values: Some(&cairn_vulnerabilities::reference::records::RECORD_SOURCES),
            at: &["CveDetail.record_source"],
        },
        ClosedSet {
            name: "DraftedBy",
            values: Some(&cairn_intelligence::advisories::DRAFTED_BY),
            at: &["Draft.drafted_by"],
        },
        ClosedSet {
            name: "RecipientStatus",
            values: Some(&cairn_intelligence::advisories::RECIPIENT_STATUSES),
            at: &["RecipientView.status"],
        },
        ClosedSet {
            name: "FeedFormat",
            values: Some(&cairn_intelligence::news::FEED_FORMATS),
            at: &["FeedView.format"],
        },
        ClosedSet {
            name: "FeedFetchStatus",
            values: Some(&cairn_intelligence::news::FETCH_STATUSES),
            at: &["FeedView.last_status"],
        },
        ClosedSet {
            name: "RelevanceKind",
            values: Some(&cairn_intelligence::news::RELEVANCE_KINDS),
            at: &["Relevance.kind"],
        },
        ClosedSet {
            name: "SubscriptionSyncStatus",
            values: Some(&cairn_intelligence::subscriptions::SYNC_STATUSES),
            at: &["SubscriptionView.last_status"],
        },
        ClosedSet {
            name: "ThreatIntelLookup",
            values: Some(&cairn_intelligence::threat_intel::LOOKUPS),
            at: &["LookupAnswer.lookup"],
        },
        ClosedSet {
            name: "CveRefreshStatus",
            values: Some(&cairn_intelligence::threat_intel::REFRESH_STATUSES),
            at: &["SourceOutcome.status"],
        },
        ClosedSet {
            name: "TicketSource",
            values: Some(&cairn_workflow::ticketing::TICKET_SOURCES),
            at: &["FullTicket.source"],
        },
        ClosedSet {
            name: "UploadFormat",
            values: Some(&cairn_integrations::csv_sources::UPLOAD_FORMATS),
            at: &["UploadView.format"],
        },
        ClosedSet {
            name: "DatabaseBackend",
            values: Some(&cairn_core::db::Backend::NAMES),
            at: &["Health.backend"],
        },
        ClosedSet {
            name: "ReadinessCheckName",
            values: Some(&super::service::READINESS_CHECKS),
            at: &["ReadinessCheck.name"],
        },
        ClosedSet {
            name: "ReadinessStatus",
            values: Some(&super::service::READINESS_STATUSES),
            at: &["Readiness.status"],
        },
    ]
}

/// The sets of `/api/openapi.json`.
pub fn portal() -> Vec<ClosedSet> {
    vec![
        ClosedSet {
            name: "ExceptionStatus",
            values: Some(&cairn_workflow::sla::exceptions::STATUSES),
            at: &["PortalException.status"],
        },
        ClosedSet {
            name: "RemediationPlanStatus",
            values: Some(&cairn_workflow::remediation::storage::PLAN_STATUSES),
            at: &["PortalRemediationPlan.status"],
        },
    ]
}

/// The objects whose members are not the service's to name, each declared
/// open (`additionalProperties: true`, which a generator makes a map of
/// any value) with the reason. A bare object anywhere else fails the
/// schema check (`tests/platform/service.rs`), which also bounds how many
/// are open. Patterns are the document's locations
/// (`components.schemas.Name.property`, `paths./route.get.responses...`),
/// `*`
/// standing for any text.
pub const OPEN_OBJECTS: &[(&str, &str)] = &[
    (
        "components.schemas.*Record.record",
        "a connector's record: its fields are the ones the connector declares",
    ),
    (
        "paths./api/v1/*.get.responses.200.content.application/json.schema*.record",
        "a connector's record: its fields are the ones the connector declares",
    ),
    (
        "components.schemas.*AssetView*.edr",
        "the EDR connector's matched record",
    ),
    (
        "components.schemas.*AssetView*.mdm",
        "the MDM connector's matched record",
    ),
    (
        "components.schemas.*AssetView*.scan",
        "the scanner connector's matched record",
    ),
    (
        "components.schemas.*DeviceView*.enrichment",
        "the matched records of each connector, by area",
    ),
    (
        "components.schemas.*SourceRecordView*.body",
        "a record as its connector or CSV provider sent it",
    ),
    (
        "components.schemas.ResearchedFinding.finding",
        "a scanner's finding as the scanner connector gives it",
    ),
    (
        "components.schemas.ConfigurationContext.edr_agent",
        "the EDR connector's record of the agent",
    ),
    (
        "components.schemas.*.*_schema",
        "a JSON Schema a connector declares",
    ),
    (
        "components.schemas.Pull.parameters",
        "a JSON Schema a connector declares",
    ),
    (
        "components.schemas.ConfigView.config",
        "a connector's settings: the fields of its config schema",
    ),
    (
        "components.schemas.CredentialsRequest.credentials",
        "a connector's settings: the fields of its config schema",
    ),
    (
        "components.schemas.Share*.scope",
        "a connector's settings laid over the partner's: fields of its config schema",
    ),
    (
        "components.schemas.ThreatIntelConfigRequest.*",
        "a threat-intel connector's settings: the fields of its config schema",
    ),
    (
        "components.schemas.LookupAnswer.result",
        "the threat-intel provider's answer as it gave it",
    ),
    (
        "components.schemas.*.*references.items",
        "a reference as the CVE record (NVD, CVE 5) gives it",
    ),
    (
        "components.schemas.FullTicket.*",
        "the PSA's ticket and notes as the PSA answered",
    ),
    (
        "components.schemas.TicketContext.ticket",
        "the PSA's ticket as the PSA answered",
    ),
    (
        "paths./api/v1/psa/*.responses.200.content.application/json.schema",
        "the PSA's own objects, passed through as it answered",
    ),
    (
        "paths./api/v1/directory/user/{upn}.get.responses.200.content.application/json.schema.flags",
        "the directory connector's account flags, by name",
    ),
    (
        "paths./api/v1/rmm/clients.get.responses.200.content.application/json.schema.items",
        "the RMM's clients as the RMM answered",
    ),
    (
        "paths./api/v1/portal/webhooks/{integration}/{tenant_id}.post.requestBody.*",
        "the payments provider's event, read by its connector",
    ),
    (
        "paths./openapi.json.get.responses.200.content.application/json.schema",
        "an OpenAPI document",
    ),
    (
        "components.schemas.*Dashboard*.layout",
        "the console's grid layout, kept as the client sends it",
    ),
    (
        "components.schemas.*.params",
        "a widget's parameters: the ones its data source declares",
    ),
    (
        "components.schemas.JobView.args",
        "a job kind's own arguments",
    ),
    (
        "components.schemas.JobView.checkpoint",
        "a job kind's opaque resume token",
    ),
    (
        "components.schemas.SourceView.detail",
        "a CVE source's own state (feed dates, counts), by source",
    ),
];

/// Fields a request requires only with one value of another: `(schema,
/// field, value, required)`, written into the schema as JSON Schema's
/// `if`/`then`, so that a validator or generator that reads them knows
/// what the prose says.
pub const CONDITIONAL_REQUIREMENTS: &[(&str, &str, &str, &str)] = {
    use cairn_vulnerabilities::findings::triage::{NOT_AFFECTED, RISK_ACCEPTED};
    &[
        ("TriageRequest", "status", NOT_AFFECTED, "justification"),
        ("TriageRequest", "status", RISK_ACCEPTED, "expires_at"),
        (
            "PartnerTriageRequest",
            "status",
            NOT_AFFECTED,
            "justification",
        ),
        (
            "PartnerTriageRequest",
            "status",
            RISK_ACCEPTED,
            "expires_at",
        ),
    ]
};

/// Device queries kept as the caller sent them: the device search's query
/// schema.
pub const DEVICE_QUERIES: &[&str] = &["AssetTierRule.query", "AssetTierSearchChange.query"];
