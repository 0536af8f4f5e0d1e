//! Automation: a tenant's rules that act when findings start to match
//! them, and the log of why each acted or not.
//!
//! A rule ([`rules::RuleInput`]) has a trigger (a finding appears, its CVE
//! enters KEV, its EPSS score crosses a threshold, it becomes due soon or
//! overdue; or a daily or weekly digest), conditions over one finding and
//! up to five actions (a PSA ticket per CVE, an e-mail, a webhook). A
//! partner's rule may run over its customers' findings instead of its own
//! (all, a group, chosen ones), each customer on its own.
//!
//! A run is state, not events: each rule remembers, per tenant it runs
//! over, which findings it matches (`automation_matches`); a run compares
//! the tenant's open findings as they are now with that memory, and what
//! started to match fires ([`evaluate::plan`]). So a run repeated, or two
//! at once, act on a finding once: a run's matches, tickets, deliveries
//! and log lines are written in one transaction that commits only if the
//! run's version (`automation_rule_runs`) did not move meanwhile and the
//! job still holds its lease ([`storage::apply`]). Deliveries then go out
//! with their own attempts ([`deliver`]).
//!
//! Runs come from the writes that change findings: every findings write
//! counts itself per tenant in the same transaction, and a sweep runs the
//! rules of a tenant whose count (or the reference data: KEV, EPSS) moved,
//! whose deliveries are due, or, for the time triggers, whose last run is
//! an hour old; a job per tenant (`automation`) does the run.
//!
//! Event triggers (an SLA exception requested, approved or expiring, a
//! failing sync, a failed upload) run the same way over the events as they
//! stand now (`automation_seen`): a key not seen before fires.
//!
//! CVE subscription matches come from the intelligence area, above this
//! one, through [`subscriptions::SubscriptionMatches`].

pub mod deliver;
pub mod evaluate;
mod routes;
pub mod rules;
pub mod storage;
pub mod subscriptions;

pub use routes::DELIVERY_STATUSES;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use cairn_core::ids::TenantId;
use cairn_jobs::{JobContext, JobFailure, Registry};
use cairn_platform::app::AppState;
use evaluate::{Memory, Plan};
use rules::{Action, StoredRule};

/// The job that runs a tenant's rules and sends its due deliveries.
pub const AUTOMATION_KIND: &str = "automation";
/// A tenant's time triggers (due soon, overdue, digests) are looked at
/// this often even when nothing was written.
const RECHECK_MS: i64 = 3_600_000;

/// The automation area: `/api/v1/automation`, its job and its sweep;
/// `subscriptions` answers the `subscription_match` trigger.
pub fn area(
    state: &AppState,
    subscriptions: subscriptions::Subscriptions,
) -> anyhow::Result<cairn_platform::area::Area> {
    let mut registry = Registry::default();
    registry.register(
        AUTOMATION_KIND,
        AutomationJob {
            state: state.clone(),
            subscriptions: subscriptions.clone(),
        },
        Duration::from_secs(10 * 60),
    );
    let shared = state.clone();
    let every = Duration::from_millis(state.settings.automation_sweep_ms.max(50));
    let sweep = cairn_jobs::schedule::Schedule::every("automation sweep", every, move || {
        let state = shared.clone();
        async move { sweep(&state).await }
    });
    Ok(cairn_platform::area::Area::new("automation")
        .routes("/api/v1/automation", routes::router(subscriptions))
        .jobs(registry)
        .schedule(sweep))
}

struct AutomationJob {
    state: AppState,
    subscriptions: subscriptions::Subscriptions,
}

#[async_trait]
impl cairn_jobs::JobHandler for AutomationJob {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        run_tenant(&self.state, &self.subscriptions, ctx, ctx.tenant_id())
            .await
            .map_err(|err| JobFailure::Failed(err.to_string()))
    }
}

/// Queues the automation job of every tenant that needs a run.
async fn sweep(state: &AppState) -> anyhow::Result<()> {
    let now = state.clock.now_ms();
    let with_rules = rules::tenants_with_rules(&state.db).await?;
    let due: HashSet<String> = storage::tenants_with_due(&state.db, now)
        .await?
        .into_iter()
        .collect();
    let mut tenants: Vec<TenantId> = with_rules.into_iter().map(TenantId).collect();
    tenants.extend(
        due.iter()
            .filter(|t| !tenants.iter().any(|k| k.as_str() == t.as_str()))
            .cloned()
            .map(TenantId)
            .collect::<Vec<_>>(),
    );
    if tenants.is_empty() {
        return Ok(());
    }
    let known = storage::tenant_stamps(&state.db).await?;
    let stamps = cairn_vulnerabilities::findings::posture::stamps(&state.db, &tenants).await?;
    // A remediation verdict is news for tickets and triggers although the
    // findings it follows from were written (and evaluated) before it.
    let verdicts: HashMap<String, i64> =
        crate::remediation::latest_verdicts(&state.db, now - RECHECK_MS)
            .await?
            .into_iter()
            .collect();
    for tenant in tenants {
        let verdict_after = |evaluated: i64| {
            verdicts
                .get(tenant.as_str())
                .is_some_and(|decided| *decided >= evaluated)
        };
        let needed = due.contains(tenant.as_str())
            || match known.get(tenant.as_str()) {
                None => true,
                Some((writes, reference, at)) => {
                    (*writes, *reference) != stamps.of(&tenant)
                        || now - at >= RECHECK_MS
                        || verdict_after(*at)
                }
            };
        if needed {
            cairn_jobs::enqueue_unless_live(&state.db, &tenant, AUTOMATION_KIND, &json!({}))
                .await?;
        }
    }
    Ok(())
}

/// Queues a run of the rules over `tenant`'s findings now; the job's id.
pub async fn run_soon(state: &AppState, tenant: &TenantId) -> sqlx::Result<String> {
    Ok(state
        .jobs
        .enqueue(tenant, AUTOMATION_KIND, &json!({"after": "request"}))
        .await?
        .job_id)
}

/// Queues a run over every tenant `owner`'s rules reach: itself and, for
/// a partner with rules over its customers, each customer. The owner's
/// own job's id.
pub async fn run_rules_of(state: &AppState, owner: &TenantId) -> sqlx::Result<String> {
    let over_customers = rules::list(&state.db, owner)
        .await?
        .iter()
        .any(|r| r.input.enabled && r.input.customers.is_some());
    if over_customers {
        for customer in cairn_platform::partner::storage::customers(&state.db, owner).await? {
            run_soon(state, &TenantId(customer.id)).await?;
        }
    }
    run_soon(state, owner).await
}

/// Runs the tenant's enabled rules, then sends what is due.
async fn run_tenant(
    state: &AppState,
    subscriptions: &subscriptions::Subscriptions,
    job: &JobContext,
    tenant: &TenantId,
) -> anyhow::Result<()> {
    // Stamped before reading: a write landing during the run moves the
    // stamp past this one, and the sweep runs the rules again.
    let stamps =
        cairn_vulnerabilities::findings::posture::stamps(&state.db, std::slice::from_ref(tenant))
            .await?
            .of(tenant);
    let (rules, disabled): (Vec<StoredRule>, Vec<StoredRule>) =
        rules::running_over(&state.db, tenant)
            .await?
            .into_iter()
            .partition(|r| r.input.enabled);
    let now = state.clock.now_ms();
    for rule in &disabled {
        storage::log_disabled(&state.db, rule, tenant, now).await?;
    }
    if !rules.is_empty() {
        let findings = if rules.iter().any(|r| !r.input.trigger.is_event()) {
            open_findings(state, tenant, now).await?
        } else {
            vec![]
        };
        let verdicts = verdicts_for(state, tenant, &rules, now).await?;
        for rule in &rules {
            let run = rules::run_state(&state.db, &rule.id, tenant).await?;
            let memory = storage::memory(&state.db, tenant, &rule.id).await?;
            let over = Over {
                tenant,
                run: &run,
                subscriptions,
                verdicts: &verdicts,
            };
            let plan = plan_rule(state, over, rule, &findings, &memory, now).await?;
            let applied =
                storage::apply(&state.db, job, rule, tenant, &run, &memory, &plan, now).await;
            match applied {
                // Raced: another run of the rule over this tenant committed
                // meanwhile, over findings at least as new.
                Ok(_) | Err(storage::ApplyError::Raced) => {}
                Err(err) => return Err(err.into()),
            }
        }
    }
    storage::evaluated(&state.db, tenant, stamps, now).await?;
    deliver::send_due(state, tenant).await?;
    Ok(())
}

/// The tenant's open findings against their due dates at `now`.
async fn open_findings(
    state: &AppState,
    tenant: &TenantId,
    now: i64,
) -> sqlx::Result<Vec<crate::sla::TrackedFinding>> {
    let applied = crate::sla::applied(&state.db, tenant).await?;
    crate::sla::tracked_with(&state.db, tenant, &applied.policy, now, i64::MAX).await
}

/// How far back a failed upload or a subscription's CVE still fires a
/// rule.
const EVENTS_LOOKED_BACK_MS: i64 = 30 * 86_400_000;

/// What a rule's run is over: the tenant, where the rule's runs over it
/// stand, the subscriptions' source, and the tenant's recent remediation
/// verdicts (read once per tenant, for rules with tickets).
pub(crate) struct Over<'a> {
    pub tenant: &'a TenantId,
    pub run: &'a rules::RunState,
    pub subscriptions: &'a subscriptions::Subscriptions,
    pub verdicts: &'a [evaluate::Verdict],
}

/// The events an event trigger fires on, as they stand for `tenant` now.
async fn events(
    state: &AppState,
    over: &Over<'_>,
    trigger: &rules::Trigger,
    now: i64,
) -> anyhow::Result<Vec<evaluate::Event>> {
    let tenant = over.tenant;
    use rules::Trigger;
    let event = |key: String, summary: String, cve_id: Option<String>| evaluate::Event {
        key,
        kind: trigger.as_str().to_string(),
        summary,
        cve_id,
    };
    let exceptions = || crate::sla::exceptions::list(&state.db, tenant);
    let devices = |d: &crate::sla::exceptions::ExceptionRow| {
        if d.devices.0.is_empty() {
            "every device".to_string()
        } else {
            d.devices.0.join(", ")
        }
    };
    Ok(match trigger {
        Trigger::ExceptionRequested => exceptions()
            .await?
            .into_iter()
            .filter(|e| e.status == "pending")
            .map(|e| {
                let summary = format!(
                    "{} asked for an exception for {} on {}: {}",
                    e.requested_by_email,
                    e.cve_id,
                    devices(&e),
                    e.reason
                );
                event(
                    format!("exception:{}:pending", e.id),
                    summary,
                    Some(e.cve_id),
                )
            })
            .collect(),
        Trigger::ExceptionApproved => exceptions()
            .await?
            .into_iter()
            .filter(|e| e.status == "approved" && e.expires_at > now)
            .map(|e| {
                let summary = format!(
                    "{} approved the exception for {} on {} until {}",
                    e.decided_by_email.as_deref().unwrap_or("the customer"),
                    e.cve_id,
                    devices(&e),
                    cairn_core::db::to_rfc3339(e.expires_at)
                );
                event(
                    format!("exception:{}:approved", e.id),
                    summary,
                    Some(e.cve_id),
                )
            })
            .collect(),
        Trigger::ExceptionExpiring { days } => {
            let within = i64::from(*days) * 86_400_000;
            exceptions()
                .await?
                .into_iter()
                .filter(|e| {
                    e.status == "approved" && e.expires_at > now && e.expires_at <= now + within
                })
                .map(|e| {
                    let summary = format!(
                        "the exception for {} on {} expires at {}",
                        e.cve_id,
                        devices(&e),
                        cairn_core::db::to_rfc3339(e.expires_at)
                    );
                    event(
                        format!("exception:{}:expiring", e.id),
                        summary,
                        Some(e.cve_id),
                    )
                })
                .collect()
        }
        Trigger::SyncFailed => cairn_integrations::sync_health(&state.db, tenant)
            .await?
            .into_iter()
            .filter(|h| h.health == "failing")
            .map(|h| {
                let why = h.last_error.as_deref().unwrap_or("it was canceled");
                let summary = format!("the {} sync failed: {why}", h.area);
                event(format!("sync:{}", h.area), summary, None)
            })
            .collect(),
        Trigger::UploadFailed => {
            let since = now - EVENTS_LOOKED_BACK_MS;
            cairn_integrations::csv_sources::storage::failed_since(&state.db, tenant, since, 500)
                .await?
                .into_iter()
                .map(|u| {
                    let why = u.error.as_deref().unwrap_or("no reason given");
                    let summary =
                        format!("the upload {} ({}) failed: {why}", u.filename, u.source_key);
                    event(format!("upload:{}", u.id), summary, None)
                })
                .collect()
        }
        Trigger::RemediationFailed => {
            let since = now - EVENTS_LOOKED_BACK_MS;
            crate::remediation::decided_since(&state.db, tenant, false, since, 500)
                .await?
                .into_iter()
                .map(|i| {
                    let cves = i.cves();
                    let summary = format!(
                        "the remediation of {} {} on {} ({}) failed: {}",
                        i.application_name,
                        i.version,
                        i.device_name,
                        cves.join(", "),
                        i.reason.as_deref().unwrap_or("no reason given")
                    );
                    event(
                        format!(
                            "remediation:{}:{}:{}:{}",
                            i.plan_id, i.device_name, i.application_name, i.version
                        ),
                        summary,
                        cves.into_iter().next(),
                    )
                })
                .collect()
        }
        Trigger::SubscriptionMatch => over
            .subscriptions
            .0
            .matches_since(&state.db, tenant, now - EVENTS_LOOKED_BACK_MS, 500)
            .await?
            .into_iter()
            .map(|m| {
                let summary = format!(
                    "{} {} ({} {}, which you follow)",
                    m.cve_id,
                    if m.event == "new" {
                        "is new"
                    } else {
                        "changed"
                    },
                    m.sub_type,
                    m.subscription_name
                );
                let key = format!(
                    "subscription:{}:{}:{}:{}",
                    m.subscription_id, m.cve_id, m.event, m.at
                );
                event(key, summary, Some(m.cve_id))
            })
            .collect(),
        _ => vec![],
    })
}

/// The tenant's remediation verdicts of the last week when one of `rules`
/// keeps tickets (only tickets are told of them), else none.
pub(crate) async fn verdicts_for(
    state: &AppState,
    tenant: &TenantId,
    rules: &[StoredRule],
    now: i64,
) -> anyhow::Result<Vec<evaluate::Verdict>> {
    let tickets = rules.iter().any(|r| {
        r.input
            .actions
            .iter()
            .any(|a| matches!(a, Action::Ticket { .. }))
    });
    match tickets {
        true => verdicts(state, tenant, now).await,
        false => Ok(vec![]),
    }
}

/// The tenant's remediation verdicts of the last week, as a ticket's note
/// tells them.
async fn verdicts(
    state: &AppState,
    tenant: &TenantId,
    now: i64,
) -> anyhow::Result<Vec<evaluate::Verdict>> {
    let since = now - EVENTS_LOOKED_BACK_MS;
    let items = crate::remediation::decided_since(&state.db, tenant, true, since, 500).await?;
    Ok(items
        .into_iter()
        .map(|i| {
            let what = format!("{} {} on {}", i.application_name, i.version, i.device_name);
            let line =
                match i.state.as_str() {
                    "fixed" => format!(
                    "- {what}: fixed; the inventory synced at {} shows {} no longer vulnerable{}.",
                    i.verified_at.map(cairn_core::db::to_rfc3339).unwrap_or_default(),
                    i.application_name,
                    i.target_version
                        .as_deref()
                        .map(|t| format!(" (updated toward {t})"))
                        .unwrap_or_default()
                ),
                    _ => format!(
                        "- {what}: {}: {}",
                        i.state.replace('_', " "),
                        i.reason.as_deref().unwrap_or("no reason given")
                    ),
                };
            evaluate::Verdict {
                key: format!(
                    "verdict:{}:{}:{}:{}:{}",
                    i.plan_id, i.device_name, i.application_name, i.version, i.state
                ),
                cve_ids: i.cves(),
                device_name: i.device_name,
                line,
            }
        })
        .collect())
}

/// A rule's plan over `tenant`: its device query answered, then
/// [`evaluate::plan`]; for an event trigger, its events, then
/// [`evaluate::plan_events`].
async fn plan_rule(
    state: &AppState,
    over: Over<'_>,
    rule: &StoredRule,
    findings: &[crate::sla::TrackedFinding],
    memory: &Memory,
    now: i64,
) -> anyhow::Result<Plan> {
    let tenant = over.tenant;
    if rule.input.trigger.is_event() {
        let events = events(state, &over, &rule.input.trigger, now).await?;
        let over = evaluate::Over {
            tenant: tenant.as_str(),
            state: over.run,
            verdicts: &[],
        };
        return Ok(evaluate::plan_events(rule, over, &events, &memory.noted));
    }
    let over = evaluate::Over {
        tenant: tenant.as_str(),
        state: over.run,
        verdicts: over.verdicts,
    };
    let devices: Option<HashSet<String>> = match &rule.input.conditions.devices {
        None => None,
        Some(query) => {
            let query = cairn_inventory::devices::figures::query(query, "conditions.devices")
                .map_err(|e| anyhow::anyhow!("the rule's device query: {e}"))?;
            let scope = cairn_inventory::devices::figures::scope(&state.db, tenant, &query)
                .await
                .map_err(|e| anyhow::anyhow!("the rule's device query: {e}"))?;
            Some(
                scope
                    .names
                    .iter()
                    .map(|n| cairn_inventory::tiers::device_key(n))
                    .collect(),
            )
        }
    };
    let in_devices = |name: &str| {
        devices
            .as_ref()
            .is_none_or(|set| set.contains(&cairn_inventory::tiers::device_key(name)))
    };
    Ok(evaluate::plan(
        rule,
        over,
        findings,
        memory,
        &in_devices,
        now,
    ))
}
