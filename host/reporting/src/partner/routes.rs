//! `/api/v1/partner/overview`, `/cves/{cve_id}`, `/applications`, `/triage`.

use std::collections::{BTreeMap, HashMap};

use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use cairn_core::db::{now_ms, to_rfc3339};
use cairn_core::http::error::{ApiError, ApiResult, ErrorBody};
use cairn_core::http::json::{Json, Path, Query};
use cairn_core::ids::TenantId;
use cairn_inventory::rollup::VersionCount;
use cairn_platform::app::AppState;
use cairn_platform::partner::{CustomerRow, PartnerCaller};
use cairn_vulnerabilities::findings::posture::{self, Posture};
use cairn_vulnerabilities::findings::triage::{self, Change, NOT_AFFECTED, RISK_ACCEPTED};
use cairn_vulnerabilities::reference::research::cve_id;
use cairn_workflow::sla::kept::{self, MAX_PERIOD_DAYS};
use cairn_workflow::sla::Standing;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(overview))
        .routes(routes!(cve_exposure))
        .routes(routes!(applications))
        .routes(routes!(partner_triage))
}

/// Inventory older than this reads as `stale`.
const FRESH_FOR_MS: i64 = 2 * 86_400_000;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OverviewQuery {
    /// Only the customers of this group.
    group_id: Option<String>,
    /// `name` (default), `devices`, `open_findings`, `critical`, `high`,
    /// `kev_findings`, `high_epss_findings`, `oldest_open_kev_days`,
    /// `last_data_at`, `overdue`, `due_soon` or `sla_compliance`.
    sort: Option<String>,
    /// `asc` or `desc`; default `asc` for `name`, `desc` otherwise.
    order: Option<String>,
    /// The period the SLA compliance counts fixes over, in days back from
    /// now (1 to 366; default 30).
    sla_days: Option<i64>,
}

/// When an area's sync last succeeded for a customer.
#[derive(Serialize, ToSchema)]
pub struct AreaSync {
    area: String,
    last_success_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct CustomerOverview {
    customer_id: String,
    name: String,
    devices: i64,
    open_findings: i64,
    critical: i64,
    high: i64,
    kev_findings: i64,
    /// Open findings whose CVE's EPSS score is at least 0.1.
    high_epss_findings: i64,
    /// Days since the oldest open KEV finding was first seen; null without
    /// one.
    oldest_open_kev_days: Option<i64>,
    /// Each area whose sync ever succeeded, with when it last did.
    syncs: Vec<AreaSync>,
    /// When the customer's inventory was last rebuilt (from a sync or an
    /// upload); null before any data.
    last_data_at: Option<String>,
    /// `current` (data from the last two days), `stale` (older) or
    /// `no_data`.
    freshness: &'static str,
    /// Open findings against their SLA due dates now, and the share of
    /// fixes over `sla_days` that came by their due date: the figures of
    /// `GET /api/v1/sla/customers`.
    sla: Standing,
}

#[derive(Serialize, ToSchema)]
pub struct Overview {
    customers: Vec<CustomerOverview>,
    /// Sums over the customers listed.
    totals: Posture,
    /// Devices over the customers listed.
    devices: i64,
    generated_at: String,
}

/// What the partner overview sorts by.
pub const OVERVIEW_SORTS: [&str; 12] = [
    "name",
    "devices",
    "open_findings",
    "critical",
    "high",
    "kev_findings",
    "high_epss_findings",
    "oldest_open_kev_days",
    "last_data_at",
    "overdue",
    "due_soon",
    "sla_compliance",
];

/// A sort's direction.
pub const ORDERS: [&str; 2] = ["asc", "desc"];

/// Per customer the caller reaches: devices, open critical and high
/// findings, KEV and high-EPSS findings, the oldest open KEV finding's age,
/// the last successful sync per area, how fresh the data is, and where its
/// open findings stand against their SLA due dates. Figures
/// are kept per customer until its findings, triage or the CVE data change
/// (at most five minutes), so a partner with hundreds of customers reads
/// in one pass.
#[utoipa::path(get, path = "/overview", tag = "partner", params(OverviewQuery),
    responses(
        (status = 200, body = Overview),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No such group"),
        (status = 422, body = ErrorBody),
    ))]
async fn overview(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Query(query): Query<OverviewQuery>,
) -> ApiResult<Json<Overview>> {
    let sort = query.sort.as_deref().unwrap_or("name");
    let keys = OVERVIEW_SORTS;
    if !keys.contains(&sort) {
        return Err(ApiError::validation(
            "sort",
            format!("must be one of {}", keys.join(", ")),
        ));
    }
    let descending = match query.order.as_deref() {
        None => sort != "name",
        Some(order) if order == ORDERS[0] => false,
        Some(order) if order == ORDERS[1] => true,
        Some(_) => return Err(ApiError::validation("order", "must be asc or desc")),
    };
    let sla_days = query.sla_days.unwrap_or(30);
    if !(1..=MAX_PERIOD_DAYS).contains(&sla_days) {
        return Err(ApiError::validation("sla_days", "must be 1 to 366"));
    }
    let customers = partner
        .chosen_customers(&state.db, None, query.group_id.as_deref())
        .await?;
    let tenants = tenant_ids(&customers);
    let postures = posture::postures(&state.db, &tenants).await?;
    let mut standings = kept::standings(
        &state.db,
        Some(&partner.partner),
        &tenants,
        state.clock.now_ms(),
        sla_days,
    )
    .await?;
    let briefs = cairn_inventory::tenants::briefs(&state.db, &tenants).await?;
    let kinds: Vec<String> = state
        .plugins()
        .areas()
        .into_iter()
        .map(cairn_integrations::sync_kind)
        .collect();
    let mut syncs: HashMap<String, Vec<AreaSync>> = HashMap::new();
    for (tenant, kind, at) in
        cairn_jobs::storage::last_successes(&state.db, &tenants, &kinds).await?
    {
        syncs.entry(tenant).or_default().push(AreaSync {
            area: kind.trim_end_matches("_sync").to_string(),
            last_success_at: to_rfc3339(at),
        });
    }
    let now = now_ms();
    let mut rows: Vec<(CustomerOverview, Option<i64>)> = customers
        .into_iter()
        .map(|c| {
            let figures = postures.get(&c.id).copied().unwrap_or_default();
            let brief = briefs.get(&c.id).copied().unwrap_or_default();
            let mut areas = syncs.remove(&c.id).unwrap_or_default();
            let sla = standings
                .remove(&c.id)
                .unwrap_or_else(|| kept::Digest::default().standing_at(now, sla_days));
            areas.sort_by(|a, b| a.area.cmp(&b.area));
            let freshness = match brief.rebuilt_at {
                None => "no_data",
                Some(at) if now - at <= FRESH_FOR_MS => "current",
                Some(_) => "stale",
            };
            (
                CustomerOverview {
                    customer_id: c.id,
                    name: c.name,
                    devices: brief.devices,
                    open_findings: figures.open_findings,
                    critical: figures.critical,
                    high: figures.high,
                    kev_findings: figures.kev_findings,
                    high_epss_findings: figures.high_epss_findings,
                    oldest_open_kev_days: figures.oldest_open_kev_since.map(posture::age_days),
                    syncs: areas,
                    last_data_at: brief.rebuilt_at.map(to_rfc3339),
                    freshness,
                    sla,
                },
                brief.rebuilt_at,
            )
        })
        .collect();
    rows.sort_by(|(a, a_at), (b, b_at)| {
        let by = match sort {
            "devices" => a.devices.cmp(&b.devices),
            "open_findings" => a.open_findings.cmp(&b.open_findings),
            "critical" => a.critical.cmp(&b.critical),
            "high" => a.high.cmp(&b.high),
            "kev_findings" => a.kev_findings.cmp(&b.kev_findings),
            "high_epss_findings" => a.high_epss_findings.cmp(&b.high_epss_findings),
            "oldest_open_kev_days" => a.oldest_open_kev_days.cmp(&b.oldest_open_kev_days),
            "last_data_at" => a_at.cmp(b_at),
            "overdue" => a.sla.overdue.cmp(&b.sla.overdue),
            "due_soon" => a.sla.due_soon.cmp(&b.sla.due_soon),
            "sla_compliance" => a
                .sla
                .compliance_percent
                .partial_cmp(&b.sla.compliance_percent)
                .unwrap_or(std::cmp::Ordering::Equal),
            _ => a.name.to_lowercase().cmp(&b.name.to_lowercase()),
        };
        let by = if descending { by.reverse() } else { by };
        by.then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.customer_id.cmp(&b.customer_id))
    });
    let customers: Vec<CustomerOverview> = rows.into_iter().map(|(c, _)| c).collect();
    let totals = customers.iter().fold(Posture::default(), |t, c| Posture {
        open_findings: t.open_findings + c.open_findings,
        critical: t.critical + c.critical,
        high: t.high + c.high,
        kev_findings: t.kev_findings + c.kev_findings,
        high_epss_findings: t.high_epss_findings + c.high_epss_findings,
        oldest_open_kev_since: None,
    });
    Ok(Json(Overview {
        devices: customers.iter().map(|c| c.devices).sum(),
        customers,
        totals,
        generated_at: to_rfc3339(now),
    }))
}

fn tenant_ids(customers: &[CustomerRow]) -> Vec<TenantId> {
    customers.iter().map(|c| TenantId(c.id.clone())).collect()
}

fn checked_cve(text: &str) -> ApiResult<String> {
    cve_id(text).ok_or_else(|| {
        ApiError::validation("cve_id", format!("{text} is not a CVE id (CVE-YYYY-NNNN)"))
    })
}

#[derive(Serialize, ToSchema)]
pub struct ExposedDevice {
    device_name: String,
    application_name: String,
    version: String,
    /// The first version that fixes the CVE, when the data names one.
    fix_version: Option<String>,
    first_seen: String,
}

#[derive(Serialize, ToSchema)]
pub struct ExposedCustomer {
    customer_id: String,
    name: String,
    /// Distinct devices with an open finding of the CVE.
    devices: i64,
    findings: Vec<ExposedDevice>,
}

#[derive(Serialize, ToSchema)]
pub struct CveAcrossCustomers {
    cve_id: String,
    /// Customers exposed (those the caller reaches).
    customers_exposed: i64,
    /// Customers looked at.
    customers_checked: i64,
    devices_exposed: i64,
    customers: Vec<ExposedCustomer>,
}

/// Every customer the caller reaches that is exposed to a CVE, with each
/// device, application, installed version and fix version of its open
/// findings (triaged-away findings left out, as in the customer's own
/// lists). Customers without an open finding are not listed.
#[utoipa::path(get, path = "/cves/{cve_id}", tag = "partner",
    params(("cve_id" = String, Path)),
    responses(
        (status = 200, body = CveAcrossCustomers),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
async fn cve_exposure(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Path(text): Path<String>,
) -> ApiResult<Json<CveAcrossCustomers>> {
    let id = checked_cve(&text)?;
    let customers = partner.customers(&state.db).await?;
    let names: HashMap<&str, &str> = customers
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str()))
        .collect();
    let found = posture::exposures(&state.db, &tenant_ids(&customers), &id).await?;
    let mut by_customer: BTreeMap<(String, String), Vec<ExposedDevice>> = BTreeMap::new();
    for e in found {
        let name = names.get(e.tenant_id.as_str()).copied().unwrap_or_default();
        by_customer
            .entry((name.to_lowercase(), e.tenant_id.clone()))
            .or_default()
            .push(ExposedDevice {
                device_name: e.device_name,
                application_name: e.application_name,
                version: e.version,
                fix_version: e.fix_version,
                first_seen: e.first_seen,
            });
    }
    let exposed: Vec<ExposedCustomer> = by_customer
        .into_iter()
        .map(|((_, customer_id), findings)| {
            let mut devices: Vec<&str> = findings.iter().map(|f| f.device_name.as_str()).collect();
            devices.sort_unstable();
            devices.dedup();
            ExposedCustomer {
                name: names
                    .get(customer_id.as_str())
                    .copied()
                    .unwrap_or_default()
                    .to_string(),
                devices: devices.len() as i64,
                customer_id,
                findings,
            }
        })
        .collect();
    Ok(Json(CveAcrossCustomers {
        cve_id: id,
        customers_exposed: exposed.len() as i64,
        customers_checked: customers.len() as i64,
        devices_exposed: exposed.iter().map(|c| c.devices).sum(),
        customers: exposed,
    }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ApplicationsQuery {
    /// Part of the application's name, any case (at least 2 characters).
    name: String,
}

#[derive(Serialize, ToSchema)]
pub struct CustomerApplication {
    name: String,
    vendor: Option<String>,
    device_count: i64,
    newest_version: Option<String>,
    /// Devices per installed version.
    versions: Vec<VersionCount>,
}

#[derive(Serialize, ToSchema)]
pub struct ApplicationsOfCustomer {
    customer_id: String,
    customer_name: String,
    applications: Vec<CustomerApplication>,
}

#[derive(Serialize, ToSchema)]
pub struct ApplicationsAcrossCustomers {
    customers: Vec<ApplicationsOfCustomer>,
    /// True when more than 2,000 applications matched and the rest were
    /// left out: narrow the name.
    truncated: bool,
}

/// Applications whose name contains `name`, with their installed versions,
/// per customer the caller reaches (customers without one not listed).
#[utoipa::path(get, path = "/applications", tag = "partner", params(ApplicationsQuery),
    responses(
        (status = 200, body = ApplicationsAcrossCustomers),
        (status = 403, body = ErrorBody),
        (status = 422, body = ErrorBody),
    ))]
async fn applications(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Query(query): Query<ApplicationsQuery>,
) -> ApiResult<Json<ApplicationsAcrossCustomers>> {
    const LIMIT: i64 = 2_000;
    let needle = query.name.trim();
    if needle.chars().count() < 2 || needle.chars().count() > 200 {
        return Err(ApiError::validation("name", "must be 2 to 200 characters"));
    }
    let customers = partner.customers(&state.db).await?;
    let found = cairn_inventory::tenants::applications_named(
        &state.db,
        &tenant_ids(&customers),
        needle,
        LIMIT + 1,
    )
    .await?;
    let truncated = found.len() as i64 > LIMIT;
    let mut by_customer: HashMap<String, Vec<CustomerApplication>> = HashMap::new();
    for app in found.into_iter().take(LIMIT as usize) {
        by_customer
            .entry(app.tenant_id)
            .or_default()
            .push(CustomerApplication {
                name: app.name,
                vendor: app.vendor,
                device_count: app.device_count,
                newest_version: app.newest_version,
                versions: app.versions,
            });
    }
    let listed = customers
        .into_iter()
        .filter_map(|c| {
            by_customer
                .remove(&c.id)
                .map(|applications| ApplicationsOfCustomer {
                    customer_id: c.id,
                    customer_name: c.name,
                    applications,
                })
        })
        .collect();
    Ok(Json(ApplicationsAcrossCustomers {
        customers: listed,
        truncated,
    }))
}

/// The triage statuses a partner sets across customers at once.
pub const PARTNER_TRIAGE_STATUSES: [&str; 2] = [NOT_AFFECTED, RISK_ACCEPTED];

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PartnerTriageRequest {
    cve_id: String,
    /// `not_affected` or `risk_accepted`.
    status: String,
    /// Required for `not_affected`.
    justification: Option<String>,
    /// RFC 3339, in the future; required for `risk_accepted`.
    expires_at: Option<String>,
    comment: Option<String>,
    /// These customers; with `group_id` absent too, every customer the
    /// caller reaches.
    customer_ids: Option<Vec<String>>,
    /// The customers of this group.
    group_id: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct CustomerTriage {
    customer_id: String,
    /// `vendor:product` of each product triaged; empty when the customer
    /// has no finding of the CVE.
    products: Vec<String>,
}

#[derive(Serialize, ToSchema)]
pub struct PartnerTriageResult {
    cve_id: String,
    status: String,
    /// Every chosen customer, with what was triaged in it.
    customers: Vec<CustomerTriage>,
}

/// Set "not affected" or "risk accepted" for a CVE in many customers at
/// once (partner admins and analysts): each chosen customer's products
/// with findings of the CVE get the status, recorded in the customer's
/// triage history under the partner user's id and in the partner's audit
/// trail.
#[utoipa::path(post, path = "/triage", tag = "partner", request_body = PartnerTriageRequest,
    responses(
        (status = 200, body = PartnerTriageResult),
        (status = 403, body = ErrorBody),
        (status = 404, body = ErrorBody, description = "No such group"),
        (status = 422, body = ErrorBody),
    ))]
async fn partner_triage(
    State(state): State<AppState>,
    partner: PartnerCaller,
    Json(body): Json<PartnerTriageRequest>,
) -> ApiResult<Json<PartnerTriageResult>> {
    let id = checked_cve(&body.cve_id)?;
    let status = match body.status.as_str() {
        NOT_AFFECTED => NOT_AFFECTED,
        RISK_ACCEPTED => RISK_ACCEPTED,
        _ => {
            return Err(ApiError::validation(
                "status",
                format!("must be {}", PARTNER_TRIAGE_STATUSES.join(" or ")),
            ))
        }
    };
    let terms = cairn_vulnerabilities::checked_terms(
        status,
        body.justification.as_deref(),
        body.expires_at.as_deref(),
    )?;
    let comment = body.comment.as_deref().unwrap_or("").trim();
    if comment.chars().count() > 2000 {
        return Err(ApiError::validation("comment", "at most 2000 characters"));
    }
    let comment = if comment.is_empty() {
        format!("set by partner user {}", partner.caller.email)
    } else {
        format!("{comment} (set by partner user {})", partner.caller.email)
    };
    let customers = partner
        .chosen_customers(
            &state.db,
            body.customer_ids.as_deref(),
            body.group_id.as_deref(),
        )
        .await?;
    let mut results = vec![];
    for customer in customers {
        let tenant = TenantId(customer.id.clone());
        let mut products = vec![];
        for (vendor, product) in triage::products_of_cve(&state.db, &tenant, &id).await? {
            let change = Change {
                cve_id: &id,
                vendor: &vendor,
                product: &product,
                status,
                justification: terms.justification,
                expires_at: terms.expires_at,
                assignee_id: None,
                comment: &comment,
                by: partner.caller.user_id.as_str(),
            };
            triage::set(&state.db, &tenant, &change).await?;
            products.push(format!("{vendor}:{product}"));
        }
        results.push(CustomerTriage {
            customer_id: customer.id,
            products,
        });
    }
    Ok(Json(PartnerTriageResult {
        cve_id: id,
        status: status.to_string(),
        customers: results,
    }))
}
