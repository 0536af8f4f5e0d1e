//! Remediation SLAs: how many days a finding has to be fixed in, by
//! policy, and where each open finding stands against its due date.
//!
//! A policy ([`policy::Policy`]) is set for a tenant (its default) or, by a
//! partner, for all its customers, a group of them or one customer. The
//! policy that applies to a tenant is the narrowest its partner set
//! (customer, then group, then the partner's default), else its own
//! default, else [`policy::Policy::built_in`]. Due dates are computed when
//! asked, from the findings as they are now and the device tiers, by the
//! one function in `policy`, so every surface shows the same figures and a
//! policy change applies at once; the change records how many open
//! findings' due dates it moved.
//!
//! An exception ([`exceptions`]) approved by someone other than its
//! requester (or by the customer, through the portal API) sets a CVE's
//! findings aside (`excepted`) until it expires; then they are due again
//! on their own dates. A week before that, an hourly schedule mails the
//! requester once.
//!
//! Device tiers are the inventory's (`cairn_inventory::tiers`: set by
//! hand, by a device search, or by rules); this area serves their routes.
//!
//! Not yet here: the exception register as files, due dates on the
//! vulnerability lists, reports and console.

pub mod exceptions;
pub mod kept;
pub mod policy;
mod routes;
pub mod storage;

use std::collections::HashMap;

use serde::Serialize;
use utoipa::ToSchema;

use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_vulnerabilities::findings::due::{DueDates, FindingDue, FindingKey, SlaDueDates};
use cairn_vulnerabilities::findings::views::{due_facts, DueFacts};
use policy::{days_left, state, Policy, SlaState, Tier};
use storage::{device_key, Scope};

/// The SLA area: `/api/v1/sla`.
pub fn area(state: &cairn_platform::app::AppState) -> anyhow::Result<cairn_platform::area::Area> {
    let shared = state.clone();
    let reminders = cairn_jobs::schedule::Schedule::every(
        "sla exception reminders",
        std::time::Duration::from_secs(3600),
        move || {
            let state = shared.clone();
            async move {
                let now = state.clock.now_ms();
                exceptions::send_reminders(&state.db, &state.mailer, now)
                    .await
                    .map(|_| ())
            }
        },
    );
    Ok(cairn_platform::area::Area::new("sla")
        .routes("/api/v1/sla", routes::router())
        .schedule(reminders))
}

/// The SLA as the vulnerability lists read it (the composition root hands
/// it to them).
pub fn due_dates() -> SlaDueDates {
    SlaDueDates(std::sync::Arc::new(DueDatesOfPolicies))
}

struct DueDatesOfPolicies;

#[async_trait::async_trait]
impl DueDates for DueDatesOfPolicies {
    async fn due_of(
        &self,
        db: &Db,
        tenant: &TenantId,
        cves: Option<&[String]>,
        now: i64,
    ) -> sqlx::Result<HashMap<FindingKey, FindingDue>> {
        if cves.is_some_and(|cves| cves.is_empty()) {
            return Ok(HashMap::new());
        }
        let applied = applied(db, tenant).await?;
        // Fixed findings are left out: `i64::MAX` as the period's start.
        let tracked =
            tracked_with_expiries(db, tenant, &applied.policy, now, i64::MAX, cves).await?;
        Ok(tracked
            .into_iter()
            .map(|(f, _)| {
                let due = FindingDue {
                    due_at: f.due_at.map(cairn_core::db::to_rfc3339),
                    sla_state: f.sla_state.map(|s| s.as_str().to_string()),
                    days_left: f.days_left,
                    tier: f.tier.as_str().to_string(),
                };
                (
                    (f.device_name, f.application_name, f.version, f.cve_id),
                    due,
                )
            })
            .collect())
    }
}

/// Where the policy that applies to a tenant was set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[schema(as = SlaPolicySource)]
pub struct PolicySource {
    /// The tenant that set it (the tenant itself, or its partner); absent
    /// for the built-in policy.
    pub owner_id: Option<String>,
    /// `default`, `group`, `customer` or `built_in`.
    pub scope: String,
    /// The group's or customer's id; empty otherwise.
    pub scope_id: String,
}

/// The policy that applies to a tenant, and where it comes from.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AppliedSlaPolicy)]
pub struct Applied {
    pub policy: Policy,
    pub source: PolicySource,
}

/// A policy change not yet saved, to see what it would do.
struct Pending<'a> {
    owner: &'a TenantId,
    scope: &'a Scope,
    policy: Option<&'a Policy>,
}

/// `owner`'s policy for `scope`, as stored or as `pending` would make it.
async fn lookup(
    db: &Db,
    owner: &TenantId,
    scope: &Scope,
    pending: Option<&Pending<'_>>,
) -> sqlx::Result<Option<Applied>> {
    let source = |scope: &Scope| {
        let (kind, id) = scope.parts();
        PolicySource {
            owner_id: Some(owner.as_str().to_string()),
            scope: kind.into(),
            scope_id: id.into(),
        }
    };
    if let Some(pending) = pending.filter(|p| p.owner == owner && p.scope == scope) {
        return Ok(pending.policy.map(|policy| Applied {
            policy: policy.clone(),
            source: source(scope),
        }));
    }
    Ok(storage::policy(db, owner, scope).await?.map(|row| Applied {
        source: source(scope),
        policy: row.rules.0,
    }))
}

/// The policy that applies to `tenant` now.
pub async fn applied(db: &Db, tenant: &TenantId) -> sqlx::Result<Applied> {
    applied_with(db, tenant, None).await
}

async fn applied_with(
    db: &Db,
    tenant: &TenantId,
    pending: Option<&Pending<'_>>,
) -> sqlx::Result<Applied> {
    if let Some(partner) = cairn_platform::partner::partner_of(db, tenant).await? {
        let customer = Scope::Customer(tenant.as_str().to_string());
        if let Some(applied) = lookup(db, &partner, &customer, pending).await? {
            return Ok(applied);
        }
        // Of the groups the customer is in, the first by name with a
        // policy wins.
        let member_of: Vec<String> = cairn_platform::partner::storage::group_members(db, &partner)
            .await?
            .into_iter()
            .filter(|(_, customer)| customer == tenant.as_str())
            .map(|(group, _)| group)
            .collect();
        for group in cairn_platform::partner::storage::groups(db, &partner).await? {
            if !member_of.contains(&group.id) {
                continue;
            }
            if let Some(applied) = lookup(db, &partner, &Scope::Group(group.id), pending).await? {
                return Ok(applied);
            }
        }
        if let Some(applied) = lookup(db, &partner, &Scope::Default, pending).await? {
            return Ok(applied);
        }
    }
    if let Some(applied) = lookup(db, tenant, &Scope::Default, pending).await? {
        return Ok(applied);
    }
    Ok(Applied {
        policy: Policy::built_in(),
        source: PolicySource {
            owner_id: None,
            scope: "built_in".into(),
            scope_id: String::new(),
        },
    })
}

/// One finding against its due date.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = SlaFinding)]
pub struct TrackedFinding {
    pub device_name: String,
    pub application_name: String,
    pub version: String,
    pub cve_id: String,
    /// `open` or `fixed`.
    pub status: String,
    pub severity: Option<String>,
    pub kev: bool,
    pub epss_score: Option<f64>,
    pub cvss_score: Option<f64>,
    /// The product identified (absent for a scanner's own finding).
    pub vendor: Option<String>,
    pub product: Option<String>,
    /// The lowest version that fixes it, when known.
    pub fix_version: Option<String>,
    /// The device's tier.
    pub tier: Tier,
    /// Unix ms.
    pub first_seen: i64,
    /// Unix ms; absent while open.
    pub fixed_at: Option<i64>,
    /// Unix ms; absent when no rule of the policy covers the finding.
    pub due_at: Option<i64>,
    /// For an open finding with a due date: where it stands now.
    pub sla_state: Option<SlaState>,
    /// For an open finding with a due date: whole days until it is due,
    /// negative once overdue.
    pub days_left: Option<i64>,
    /// For a fixed finding with a due date: whether it was fixed by then.
    pub fixed_on_time: Option<bool>,
    /// The approved exception that sets the open finding aside now.
    pub exception_id: Option<String>,
}

/// The tier of `device` among `tiers` (from
/// [`cairn_inventory::tiers::by_device_name`]).
fn tier_of(tiers: &HashMap<String, Tier>, device: &str) -> Tier {
    tiers
        .get(&device_key(device))
        .copied()
        .unwrap_or(Tier::Standard)
}

fn track(
    facts: DueFacts,
    policy: &Policy,
    tier: Tier,
    now: i64,
    exception: Option<&exceptions::ExceptionRow>,
) -> TrackedFinding {
    let due_at = policy.due_at(&facts, tier);
    let open = facts.status == "open";
    let exception_id = exception.filter(|_| open).map(|e| e.id.clone());
    let counted = open && exception_id.is_none();
    TrackedFinding {
        sla_state: match exception_id {
            Some(_) => Some(SlaState::Excepted),
            None => due_at
                .filter(|_| counted)
                .map(|due| state(due, now, policy.due_soon_days)),
        },
        days_left: due_at.filter(|_| counted).map(|due| days_left(due, now)),
        exception_id,
        fixed_on_time: match (due_at, facts.fixed_at) {
            (Some(due), Some(fixed)) if !open => Some(fixed <= due),
            _ => None,
        },
        due_at,
        tier,
        kev: facts.kev != 0,
        device_name: facts.device_name,
        application_name: facts.application_name,
        version: facts.version,
        cve_id: facts.cve_id,
        status: facts.status,
        severity: facts.severity,
        epss_score: facts.epss_score,
        cvss_score: facts.cvss_score,
        vendor: facts.vendor,
        product: facts.product,
        fix_version: facts.fix_version,
        first_seen: facts.first_seen,
        fixed_at: facts.fixed_at,
    }
}

/// The tenant's open findings, and those fixed at or after `fixed_since`,
/// against `policy`'s due dates at `now`.
pub async fn tracked_with(
    db: &Db,
    tenant: &TenantId,
    policy: &Policy,
    now: i64,
    fixed_since: i64,
) -> sqlx::Result<Vec<TrackedFinding>> {
    Ok(
        tracked_with_expiries(db, tenant, policy, now, fixed_since, None)
            .await?
            .into_iter()
            .map(|(finding, _)| finding)
            .collect(),
    )
}

/// [`tracked_with`] (of `cves` only, when given), each open finding with
/// the latest expiry among the approved exceptions covering it at `now`
/// (when it stops being excepted).
pub async fn tracked_with_expiries(
    db: &Db,
    tenant: &TenantId,
    policy: &Policy,
    now: i64,
    fixed_since: i64,
    cves: Option<&[String]>,
) -> sqlx::Result<Vec<(TrackedFinding, Option<i64>)>> {
    let tiers = cairn_inventory::tiers::by_device_name(db, tenant).await?;
    let excepted = exceptions::in_force(db, tenant, now).await?;
    Ok(due_facts(db, tenant, fixed_since, cves)
        .await?
        .into_iter()
        .map(|facts| {
            let tier = tier_of(&tiers, &facts.device_name);
            let covering: Vec<&exceptions::ExceptionRow> = excepted
                .iter()
                .filter(|e| e.covers(&facts.cve_id, &facts.device_name, now))
                .collect();
            let expiry = covering.iter().map(|e| e.expires_at).max();
            let finding = track(facts, policy, tier, now, covering.first().copied());
            let expiry = expiry.filter(|_| finding.exception_id.is_some());
            (finding, expiry)
        })
        .collect())
}

/// A tenant's standing: open findings by state and, over the period,
/// how many fixes came on time.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = SlaStanding)]
pub struct Standing {
    pub open: i64,
    pub within: i64,
    pub due_soon: i64,
    pub overdue: i64,
    /// Open findings an approved exception sets aside.
    pub excepted: i64,
    /// Open findings no rule of the policy covers.
    pub untracked: i64,
    /// Findings with a due date fixed in the period.
    pub fixed: i64,
    pub fixed_on_time: i64,
    /// `fixed_on_time` of `fixed`, in percent (one decimal); absent when
    /// nothing with a due date was fixed in the period.
    pub compliance_percent: Option<f64>,
    /// Days the period reaches back from now.
    pub period_days: i64,
}

/// The tenant's standing at `now` over the last `period_days` (1 to
/// [`kept::MAX_PERIOD_DAYS`]).
pub async fn standing_of(
    db: &Db,
    tenant: &TenantId,
    now: i64,
    period_days: i64,
) -> sqlx::Result<Standing> {
    let partner = cairn_platform::partner::partner_of(db, tenant).await?;
    let mut standings = kept::standings(
        db,
        partner.as_ref(),
        std::slice::from_ref(tenant),
        now,
        period_days,
    )
    .await?;
    Ok(standings
        .remove(tenant.as_str())
        .unwrap_or_else(|| kept::Digest::default().standing_at(now, period_days)))
}

/// How many of `tenant`'s open findings `pending` would give another due
/// date. A tenant whose applied policy it leaves as it is reads nothing
/// more; the others read their findings once and weigh both policies.
async fn moved_by(db: &Db, tenant: &TenantId, pending: &Pending<'_>) -> sqlx::Result<i64> {
    let was = applied_with(db, tenant, None).await?.policy;
    let will_be = applied_with(db, tenant, Some(pending)).await?.policy;
    if was == will_be {
        return Ok(0);
    }
    let tiers = cairn_inventory::tiers::by_device_name(db, tenant).await?;
    // Fixed findings are left out: `i64::MAX` as the period's start.
    let moved = due_facts(db, tenant, i64::MAX, None)
        .await?
        .iter()
        .filter(|facts| {
            let tier = tier_of(&tiers, &facts.device_name);
            was.due_at(facts, tier) != will_be.due_at(facts, tier)
        })
        .count();
    Ok(moved as i64)
}

/// Saves (or, with `None`, removes) `owner`'s policy for `scope` and
/// records the change with `by`; returns how many open findings of the
/// tenants it may cover (the owner and its customers) had their due date
/// moved.
pub async fn change_policy(
    db: &Db,
    owner: &TenantId,
    scope: &Scope,
    after: Option<&Policy>,
    by: &str,
    now: i64,
) -> sqlx::Result<i64> {
    let before = storage::policy(db, owner, scope)
        .await?
        .map(|row| row.rules.0);
    let mut covered = vec![owner.clone()];
    covered.extend(
        cairn_platform::partner::storage::customers(db, owner)
            .await?
            .into_iter()
            .map(|c| TenantId(c.id)),
    );
    let pending = Pending {
        owner,
        scope,
        policy: after,
    };
    let mut moved = 0;
    for tenant in &covered {
        moved += moved_by(db, tenant, &pending).await?;
    }
    storage::change_policy(
        db,
        &storage::Change {
            owner,
            scope,
            before: before.as_ref(),
            after,
            by,
            at: now,
            moved,
        },
    )
    .await?;
    Ok(moved)
}
