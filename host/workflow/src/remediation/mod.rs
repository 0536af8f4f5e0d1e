//! Remediation: plans that fix findings through the tenant's RMM
//! connector, and the proof that they did.
//!
//! A plan is made from a CVE or a device search ([`build`]): per device
//! and vulnerable application version, the connector's package update to
//! the lowest version that fixes the plan's CVEs there, or why not
//! ([`plan::items`]: excepted, no fixed version known, the connector offers
//! no update, the RMM does not manage the device or has not heard from it
//! lately, attempts spent). A new plan is a draft: nothing is sent. An
//! admin approves it; then a job per tenant ([`REMEDIATION_KIND`], queued on
//! approval and by a sweep) starts each item through the connector's
//! `remediate` (contract 0.4), asks `remediation-status` until the RMM
//! settles, and checks what the RMM reported against the inventory: an item
//! is `fixed` only once a sync that completed after the report left no open
//! finding of its CVEs on that version (the matcher caught up), and
//! `remediation_failed`, with both facts, when such a sync still shows it.
//!
//! No install loop: an item moves to `starting` before the call and is
//! never started twice (a process that died mid-call leaves it `starting`,
//! and the next run marks it failed rather than guess), and a device's
//! application is not planned again after
//! `remediation_max_attempts` attempts that did not fix it.

pub mod plan;
mod routes;
pub mod storage;

pub use routes::{Counts, PlanSummary};

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Value};

use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;
use cairn_jobs::{JobContext, JobFailure, Registry};
use cairn_platform::app::AppState;
use cairn_plugins::{
    CallError, CallScope, LoadedConnector, RemediationCall, RemediationKind, RemediationStatus,
};
use storage::{ItemKey, ItemRow, PlanRow, Transition};

/// The job that starts, follows and verifies a tenant's remediations.
pub const REMEDIATION_KIND: &str = "remediation";
/// The area whose connector remediates.
const RMM: &str = "rmm";

/// The remediation area: `/api/v1/remediation`, its job and its sweep.
pub fn area(state: &AppState) -> anyhow::Result<cairn_platform::area::Area> {
    let mut registry = Registry::default();
    registry.register(
        REMEDIATION_KIND,
        RemediationJob {
            state: state.clone(),
        },
        Duration::from_secs(10 * 60),
    );
    let shared = state.clone();
    let every = Duration::from_millis(state.settings.remediation_sweep_ms.max(50));
    let sweep = cairn_jobs::schedule::Schedule::every("remediation sweep", every, move || {
        let state = shared.clone();
        async move { sweep(&state).await }
    });
    Ok(cairn_platform::area::Area::new("remediation")
        .routes("/api/v1/remediation", routes::router())
        .jobs(registry)
        .schedule(sweep))
}

struct RemediationJob {
    state: AppState,
}

#[async_trait]
impl cairn_jobs::JobHandler for RemediationJob {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        run_tenant(&self.state, ctx.tenant_id())
            .await
            .map_err(|err| JobFailure::Failed(err.to_string()))
    }
}

/// Queues the job of every tenant with remediation work.
async fn sweep(state: &AppState) -> anyhow::Result<()> {
    for tenant in storage::tenants_with_work(&state.db).await? {
        cairn_jobs::enqueue_unless_live(&state.db, &TenantId(tenant), REMEDIATION_KIND, &json!({}))
            .await?;
    }
    Ok(())
}

pub use storage::{decided_since, latest_verdicts};

/// Queues the tenant's remediation job now.
pub async fn run_soon(state: &AppState, tenant: &TenantId) -> sqlx::Result<()> {
    cairn_jobs::enqueue_unless_live(&state.db, tenant, REMEDIATION_KIND, &json!({})).await?;
    Ok(())
}

/// The plans of `tenant` its client decides through the client portal:
/// awaiting its decision or decided by it, newest first.
pub async fn client_plans(state: &AppState, tenant: &TenantId) -> sqlx::Result<Vec<PlanSummary>> {
    let rows = storage::client_plans(&state.db, tenant).await?;
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let counts = storage::state_counts(&state.db, tenant, &ids).await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let of = Counts::of(counts.get(&row.id));
            PlanSummary::of(row, of)
        })
        .collect())
}

/// The client's decision on a plan of `tenant` awaiting it; an approval
/// starts the plan. 404 for a plan of another tenant, 409 for one not
/// awaiting the client.
pub async fn client_decide(
    state: &AppState,
    tenant: &TenantId,
    id: &str,
    approve: bool,
    by: &str,
    comment: &str,
) -> Result<PlanSummary, ApiError> {
    let row = storage::plan(&state.db, tenant, id)
        .await?
        .ok_or(ApiError::NotFound("remediation plan"))?;
    let now = state.clock.now_ms();
    let Some(decided) =
        storage::client_decide(&state.db, tenant, id, approve, by, comment, now).await?
    else {
        return Err(ApiError::Conflict(format!(
            "this plan is {}; only a plan awaiting the client's approval can be decided",
            row.status
        )));
    };
    // Counted before the run is queued: the answer is what the decision
    // made, not whatever step the run has reached by then.
    let counts =
        storage::state_counts(&state.db, tenant, std::slice::from_ref(&decided.id)).await?;
    let of = Counts::of(counts.get(&decided.id));
    if approve {
        run_soon(state, tenant).await?;
    }
    Ok(PlanSummary::of(decided, of))
}

/// The tenant's rmm connector, its full config, and its package update.
pub struct Rmm {
    pub connector: std::sync::Arc<LoadedConnector>,
    pub config: Value,
}

impl Rmm {
    pub async fn of(state: &AppState, tenant: &TenantId) -> Result<Option<Rmm>, ApiError> {
        Ok(cairn_integrations::areas::tenant_connector(
            &state.db,
            &state.secrets,
            &state.plugins(),
            tenant,
            RMM,
        )
        .await?
        .map(|(connector, stored)| Rmm {
            connector,
            config: stored.full(),
        }))
    }

    /// The name of the connector's package update, when it offers one.
    pub fn update(&self) -> Option<&str> {
        self.connector
            .descriptor
            .remediations
            .iter()
            .find(|r| r.kind == RemediationKind::UpdatePackage)
            .map(|r| r.name.as_str())
    }

    fn scope(&self, tenant: &TenantId, job: Option<&str>) -> CallScope {
        CallScope {
            plugin: self.connector.descriptor.id.clone(),
            tenant_id: Some(tenant.as_str().to_string()),
            job_id: job.map(String::from),
        }
    }
}

/// When an RMM device record's `last_seen` says it was heard from.
fn last_seen_of(fields: &Value) -> Option<i64> {
    let text = fields["last_seen"].as_str()?;
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .ok()
        .or_else(|| {
            chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
                .ok()
                .map(|t| t.and_utc().timestamp_millis())
        })
}

/// The RMM's devices among `names`, by device key. A name finds the RMM's
/// device of the same name ignoring case, else of the same 15-character
/// NetBIOS form, else of the same short host name (before the first dot),
/// as the inventory joins records to devices; every RMM device record is
/// read once.
async fn rmm_devices(
    state: &AppState,
    tenant: &TenantId,
    names: impl Iterator<Item = &str>,
) -> sqlx::Result<HashMap<String, plan::RmmDevice>> {
    use futures::TryStreamExt;
    let netbios = |name: &str| name.to_lowercase().chars().take(15).collect::<String>();
    let short = |name: &str| {
        name.to_lowercase()
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let (mut exact, mut by_netbios, mut by_short) =
        (HashMap::new(), HashMap::new(), HashMap::new());
    let mut records =
        cairn_inventory::records::collections::typed_records(&state.db, tenant, "device");
    while let Some(record) = records.try_next().await? {
        if record.source != RMM {
            continue;
        }
        let Some(name) = record.device_name.as_deref() else {
            continue;
        };
        let device = plan::RmmDevice {
            key: record.record_key.clone(),
            last_seen: last_seen_of(&record.fields.0),
        };
        by_netbios
            .entry(netbios(name))
            .or_insert_with(|| device.clone());
        by_short
            .entry(short(name))
            .or_insert_with(|| device.clone());
        exact.entry(name.to_lowercase()).or_insert(device);
    }
    let mut devices = HashMap::new();
    for name in names {
        let found = exact
            .get(&name.to_lowercase())
            .or_else(|| by_netbios.get(&netbios(name)))
            .or_else(|| by_short.get(&short(name)));
        if let Some(device) = found {
            devices.insert(cairn_inventory::tiers::device_key(name), device.clone());
        }
    }
    Ok(devices)
}

/// What a plan is asked for.
pub struct Scope<'a> {
    pub cve_id: Option<&'a str>,
    /// Device names the plan is narrowed to (a device search's answer).
    pub devices: Option<&'a [String]>,
}

/// The items of a plan over `scope` now: decided, not stored.
pub async fn build(
    state: &AppState,
    tenant: &TenantId,
    rmm: &Rmm,
    scope: &Scope<'_>,
) -> Result<Vec<plan::PlannedItem>, ApiError> {
    let now = state.clock.now_ms();
    let policy = crate::sla::applied(&state.db, tenant).await?.policy;
    let cves = scope.cve_id.map(|c| vec![c.to_string()]);
    let wanted = scope.devices.map(|names| {
        names
            .iter()
            .map(|n| cairn_inventory::tiers::device_key(n))
            .collect::<std::collections::HashSet<_>>()
    });
    let findings: Vec<crate::sla::TrackedFinding> =
        crate::sla::tracked_with_expiries(&state.db, tenant, &policy, now, now, cves.as_deref())
            .await?
            .into_iter()
            .map(|(finding, _)| finding)
            .filter(|f| f.status == "open")
            .filter(|f| {
                wanted
                    .as_ref()
                    .is_none_or(|w| w.contains(&cairn_inventory::tiers::device_key(&f.device_name)))
            })
            .collect();
    let devices = rmm_devices(
        state,
        tenant,
        findings.iter().map(|f| f.device_name.as_str()),
    )
    .await?;
    let attempts = storage::attempts(&state.db, tenant).await?;
    let under_way = storage::under_way(&state.db, tenant).await?;
    let context = plan::Context {
        update: rmm.update(),
        connector: &rmm.connector.descriptor.id,
        devices: &devices,
        attempts: &attempts,
        under_way: &under_way,
        max_attempts: state.settings.remediation_max_attempts.max(1),
        now,
        offline_after_ms: state.settings.remediation_offline_hours.max(1) * 3_600_000,
    };
    Ok(plan::items(&findings, &context))
}

/// Starts, follows and verifies every plan of `tenant` with work left.
async fn run_tenant(state: &AppState, tenant: &TenantId) -> anyhow::Result<()> {
    let plans = storage::plans_with_work(&state.db, tenant).await?;
    if plans.is_empty() {
        return Ok(());
    }
    let rmm = Rmm::of(state, tenant)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for plan in &plans {
        // This job is the tenant's only one, so an item `starting` now was
        // left by a run that died mid-call: whether the RMM took it is
        // unknown, and starting it again could install twice.
        for item in storage::items_in(&state.db, tenant, &plan.id, "starting").await? {
            storage::move_item(
                &state.db,
                &ItemKey::from(&item),
                "starting",
                &Transition {
                    state: "failed",
                    reason: Some(
                        "the service stopped while asking the RMM to start it; not repeated, since the RMM may have taken it".into(),
                    ),
                    ..Transition::default()
                },
                state.clock.now_ms(),
            )
            .await?;
        }
        match &rmm {
            Some(rmm) => run_plan(state, tenant, rmm, plan).await?,
            None => {
                for item in storage::items_in(&state.db, tenant, &plan.id, "planned").await? {
                    storage::move_item(
                        &state.db,
                        &ItemKey::from(&item),
                        "planned",
                        &Transition {
                            state: "failed",
                            reason: Some("rmm is no longer configured for this tenant".into()),
                            ..Transition::default()
                        },
                        state.clock.now_ms(),
                    )
                    .await?;
                }
            }
        }
        verify(state, tenant, plan).await?;
        storage::finish_if_settled(&state.db, tenant, &plan.id, state.clock.now_ms()).await?;
    }
    Ok(())
}

async fn run_plan(
    state: &AppState,
    tenant: &TenantId,
    rmm: &Rmm,
    plan: &PlanRow,
) -> anyhow::Result<()> {
    if plan.status == "approved" {
        storage::set_running(&state.db, tenant, &plan.id).await?;
    }
    if matches!(plan.status.as_str(), "approved" | "running") {
        start(state, tenant, rmm, plan).await?;
    }
    for from in ["pending", "running"] {
        for item in storage::items_in(&state.db, tenant, &plan.id, from).await? {
            follow(state, tenant, rmm, &item, from).await?;
        }
    }
    Ok(())
}

/// Starts the plan's planned items, each once.
async fn start(
    state: &AppState,
    tenant: &TenantId,
    rmm: &Rmm,
    plan: &PlanRow,
) -> anyhow::Result<()> {
    let max = state.settings.remediation_max_attempts.max(1);
    // Read once: this job is the tenant's only one, so the attempts it
    // starts are the only ones added meanwhile, and it counts them itself.
    let mut attempts = storage::attempts(&state.db, tenant).await?;
    for item in storage::items_in(&state.db, tenant, &plan.id, "planned").await? {
        let key = ItemKey::from(&item);
        let counted = attempts
            .entry(plan::attempt_key(&item.device_name, &item.application_name))
            .or_default();
        let tried = *counted;
        if tried >= max {
            let to = Transition {
                state: "skipped",
                reason: Some(plan::attempts_spent(tried, max)),
                ..Transition::default()
            };
            storage::move_item(&state.db, &key, "planned", &to, state.clock.now_ms()).await?;
            continue;
        }
        let (Some(action), Some(device)) = (&item.action, &item.device_key) else {
            continue;
        };
        let now = state.clock.now_ms();
        let starting = Transition {
            state: "starting",
            started_at: Some(now),
            ..Transition::default()
        };
        if !storage::move_item(&state.db, &key, "planned", &starting, now).await? {
            continue;
        }
        *counted += 1;
        let call = RemediationCall {
            action: action.clone(),
            device: device.clone(),
            inputs: item
                .inputs
                .as_deref()
                .and_then(|i| serde_json::from_str(i).ok())
                .unwrap_or_else(|| json!({})),
        };
        let started = state
            .plugins()
            .remediate(&rmm.connector, rmm.scope(tenant, None), &rmm.config, &call)
            .await;
        let to = match &started {
            Ok(handle) => Transition {
                state: "pending",
                handle: Some(handle),
                ..Transition::default()
            },
            Err(err) => Transition {
                state: "failed",
                reason: Some(format!("the RMM refused it: {err}")),
                ..Transition::default()
            },
        };
        storage::move_item(&state.db, &key, "starting", &to, state.clock.now_ms()).await?;
    }
    Ok(())
}

/// Asks the RMM where a started item stands.
async fn follow(
    state: &AppState,
    tenant: &TenantId,
    rmm: &Rmm,
    item: &ItemRow,
    from: &str,
) -> anyhow::Result<()> {
    let Some(handle) = &item.upstream_handle else {
        return Ok(());
    };
    let status = state
        .plugins()
        .remediation_status(&rmm.connector, rmm.scope(tenant, None), &rmm.config, handle)
        .await;
    let now = state.clock.now_ms();
    let to = match &status {
        Ok(RemediationStatus::Pending) => return Ok(()),
        Ok(RemediationStatus::Running) if from == "running" => return Ok(()),
        Ok(RemediationStatus::Running) => Transition {
            state: "running",
            ..Transition::default()
        },
        Ok(RemediationStatus::Succeeded(words)) => Transition {
            state: "awaiting_inventory",
            report: Some(words),
            reported_at: Some(now),
            ..Transition::default()
        },
        Ok(RemediationStatus::Failed(words)) => Transition {
            state: "failed",
            reason: Some(format!("the RMM reports that it failed: {words}")),
            report: Some(words),
            reported_at: Some(now),
            ..Transition::default()
        },
        // The RMM could not say now; ask again on the next run.
        Err(CallError::Transient(_) | CallError::RateLimited { .. } | CallError::Timeout(_)) => {
            return Ok(())
        }
        Err(err) => Transition {
            state: "failed",
            reason: Some(format!("the RMM could not say how it went: {err}")),
            reported_at: Some(now),
            ..Transition::default()
        },
    };
    storage::move_item(&state.db, &ItemKey::from(item), from, &to, now).await?;
    Ok(())
}

/// Checks each item the RMM reported done against the inventory: only a
/// sync completed after the report, with the matcher caught up, decides.
async fn verify(state: &AppState, tenant: &TenantId, plan: &PlanRow) -> anyhow::Result<()> {
    let awaiting = storage::items_in(&state.db, tenant, &plan.id, "awaiting_inventory").await?;
    if awaiting.is_empty() {
        return Ok(());
    }
    let completions = cairn_inventory::seen::completed_runs(&state.db, tenant).await?;
    let Some((source, synced_at)) = completions
        .iter()
        .max_by_key(|(_, at)| **at)
        .map(|(source, at)| (source.clone(), *at))
    else {
        return Ok(());
    };
    if cairn_inventory::changes::pending_count(&state.db, tenant).await? > 0 {
        return Ok(());
    }
    let cves: Vec<String> = awaiting.iter().flat_map(ItemRow::cves).collect();
    let open: Vec<cairn_vulnerabilities::findings::views::DueFacts> =
        cairn_vulnerabilities::findings::views::due_facts(&state.db, tenant, i64::MAX, Some(&cves))
            .await?
            .into_iter()
            .filter(|f| f.status == "open")
            .collect();
    for item in awaiting {
        if item
            .reported_at
            .is_none_or(|reported| synced_at <= reported)
        {
            continue;
        }
        let item_cves = item.cves();
        let still: Vec<&str> = open
            .iter()
            .filter(|f| {
                f.device_name == item.device_name
                    && f.application_name == item.application_name
                    && f.version == item.version
                    && item_cves.contains(&f.cve_id)
            })
            .map(|f| f.cve_id.as_str())
            .collect();
        let to = if still.is_empty() {
            Transition {
                state: "fixed",
                verified_at: Some(synced_at),
                ..Transition::default()
            }
        } else {
            Transition {
                state: "remediation_failed",
                reason: Some(format!(
                    "the RMM reported success ({:?}) on {}, but the inventory of {source} synced on {} still shows {} {} with {}",
                    item.upstream_report.as_deref().unwrap_or_default(),
                    cairn_core::db::to_rfc3339(item.reported_at.unwrap_or_default()),
                    cairn_core::db::to_rfc3339(synced_at),
                    item.application_name,
                    item.version,
                    still.join(", ")
                )),
                verified_at: Some(synced_at),
                ..Transition::default()
            }
        };
        let now = state.clock.now_ms();
        storage::move_item(
            &state.db,
            &ItemKey::from(&item),
            "awaiting_inventory",
            &to,
            now,
        )
        .await?;
    }
    Ok(())
}
