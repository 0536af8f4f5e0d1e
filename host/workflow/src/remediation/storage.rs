//! The plans and their items (`remediation_plans`, `remediation_items`).

use std::collections::HashMap;

use sqlx::Row;

use super::plan::{attempt_key, PlannedItem};
use cairn_core::db::Db;
use cairn_core::ids::TenantId;

/// A plan as stored.
#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct PlanRow {
    pub id: String,
    pub tenant_id: String,
    pub cve_id: Option<String>,
    pub devices: Option<String>,
    pub connector_id: String,
    pub status: String,
    pub created_by: String,
    pub created_at: i64,
    pub approved_by: Option<String>,
    pub approved_at: Option<i64>,
    pub finished_at: Option<i64>,
    pub client_decided_by: Option<String>,
    pub client_decided_at: Option<i64>,
    pub client_comment: Option<String>,
}

/// An item as stored.
#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct ItemRow {
    pub plan_id: String,
    pub device_name: String,
    pub application_name: String,
    pub version: String,
    pub cve_ids: String,
    pub target_version: Option<String>,
    pub action: Option<String>,
    pub inputs: Option<String>,
    pub device_key: Option<String>,
    pub state: String,
    pub reason: Option<String>,
    pub upstream_handle: Option<String>,
    pub upstream_report: Option<String>,
    pub started_at: Option<i64>,
    pub reported_at: Option<i64>,
    pub verified_at: Option<i64>,
    /// When it reached its verdict (`fixed`, `failed`,
    /// `remediation_failed`).
    pub decided_at: Option<i64>,
}

impl ItemRow {
    pub fn cves(&self) -> Vec<String> {
        serde_json::from_str(&self.cve_ids).unwrap_or_default()
    }
}

/// A plan's states: a draft (the dry run), waiting for its client,
/// approved, running, done, rejected by the client, or cancelled.
pub const PLAN_STATUSES: [&str; 7] = [
    "draft",
    "awaiting_client",
    "approved",
    "running",
    "done",
    "rejected",
    "cancelled",
];

/// An item's states, from planned (or skipped) to its verdict.
pub const ITEM_STATES: [&str; 10] = [
    "planned",
    "skipped",
    "starting",
    "pending",
    "running",
    "awaiting_inventory",
    "fixed",
    "remediation_failed",
    "failed",
    "cancelled",
];

/// An item's final states, which a later inventory or the RMM decided.
pub const VERDICTS: &[&str] = &["fixed", "failed", "remediation_failed"];

/// States in which an item is still under way.
pub const UNDER_WAY: &[&str] = &["starting", "pending", "running", "awaiting_inventory"];

const PLAN_COLUMNS: &str = "id, tenant_id, cve_id, devices, connector_id, status, created_by, \
     created_at, approved_by, approved_at, finished_at, client_decided_by, client_decided_at, \
     client_comment";
const ITEM_COLUMNS: &str = "plan_id, device_name, application_name, version, cve_ids, \
     target_version, action, inputs, device_key, state, reason, upstream_handle, \
     upstream_report, started_at, reported_at, verified_at, decided_at";

/// What a new plan is about.
pub struct NewPlan<'a> {
    pub cve_id: Option<&'a str>,
    pub devices: Option<&'a serde_json::Value>,
    pub connector_id: &'a str,
    pub created_by: &'a str,
}

/// Stores a draft plan and its items in one transaction; its id.
pub async fn create(
    db: &Db,
    tenant: &TenantId,
    plan: &NewPlan<'_>,
    items: &[PlannedItem],
    now: i64,
) -> sqlx::Result<String> {
    let id = uuid::Uuid::now_v7().to_string();
    let mut tx = db.pool.begin().await?;
    sqlx::query(
        "INSERT INTO remediation_plans (id, tenant_id, cve_id, devices, connector_id, status, \
         created_by, created_at) VALUES ($1, $2, $3, $4, $5, 'draft', $6, $7)",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(plan.cve_id)
    .bind(plan.devices.map(|d| d.to_string()))
    .bind(plan.connector_id)
    .bind(plan.created_by)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    for item in items {
        sqlx::query(
            "INSERT INTO remediation_items (plan_id, tenant_id, device_name, application_name, \
             version, cve_ids, target_version, action, inputs, device_key, state, reason) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        )
        .bind(&id)
        .bind(tenant.as_str())
        .bind(&item.device_name)
        .bind(&item.application_name)
        .bind(&item.version)
        .bind(serde_json::to_string(&item.cve_ids).unwrap_or_default())
        .bind(&item.target_version)
        .bind(&item.action)
        .bind(item.inputs.as_ref().map(|i| i.to_string()))
        .bind(&item.device_key)
        .bind(if item.skipped.is_some() {
            "skipped"
        } else {
            "planned"
        })
        .bind(&item.skipped)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(id)
}

/// The tenant's plans, newest first, and how many there are.
pub async fn plans(
    db: &Db,
    tenant: &TenantId,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<PlanRow>, i64)> {
    let rows = sqlx::query_as(&format!(
        "SELECT {PLAN_COLUMNS} FROM remediation_plans WHERE tenant_id = $1 \
         ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
    ))
    .bind(tenant.as_str())
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar("SELECT COUNT(*) FROM remediation_plans WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_one(&db.pool)
        .await?;
    Ok((rows, total))
}

pub async fn plan(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<Option<PlanRow>> {
    sqlx::query_as(&format!(
        "SELECT {PLAN_COLUMNS} FROM remediation_plans WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await
}

/// A plan's items by device, application and version.
pub async fn items(db: &Db, tenant: &TenantId, plan_id: &str) -> sqlx::Result<Vec<ItemRow>> {
    sqlx::query_as(&format!(
        "SELECT {ITEM_COLUMNS} FROM remediation_items WHERE tenant_id = $1 AND plan_id = $2 \
         ORDER BY device_name, application_name, version"
    ))
    .bind(tenant.as_str())
    .bind(plan_id)
    .fetch_all(&db.pool)
    .await
}

/// Counts of a plan's items by state.
pub async fn state_counts(
    db: &Db,
    tenant: &TenantId,
    plan_ids: &[String],
) -> sqlx::Result<HashMap<String, HashMap<String, i64>>> {
    let mut counts: HashMap<String, HashMap<String, i64>> = HashMap::new();
    if plan_ids.is_empty() {
        return Ok(counts);
    }
    let rows = sqlx::query(&format!(
        "SELECT plan_id, state, COUNT(*) AS n FROM remediation_items \
         WHERE tenant_id = $1 AND plan_id IN ({}) GROUP BY plan_id, state",
        cairn_core::db::json_text_values(db.backend, 2)
    ))
    .bind(tenant.as_str())
    .bind(serde_json::to_string(plan_ids).unwrap_or_default())
    .fetch_all(&db.pool)
    .await?;
    for row in rows {
        counts
            .entry(row.try_get("plan_id")?)
            .or_default()
            .insert(row.try_get("state")?, row.try_get("n")?);
    }
    Ok(counts)
}

/// Approves a draft, into `to` (`approved`, or `awaiting_client` when the
/// tenant's client approves too): the plan as the approval left it, which
/// a run started after may already have moved on from; `None` when it is
/// not a draft (any more).
pub async fn approve(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    by: &str,
    to: &str,
    now: i64,
) -> sqlx::Result<Option<PlanRow>> {
    sqlx::query_as(&format!(
        "UPDATE remediation_plans SET status = $5, approved_by = $3, approved_at = $4 \
         WHERE tenant_id = $1 AND id = $2 AND status = 'draft' RETURNING {PLAN_COLUMNS}"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .bind(by)
    .bind(now)
    .bind(to)
    .fetch_optional(&db.pool)
    .await
}

/// Cancels a plan that has not finished: its items not yet started are
/// cancelled; those under way go on and are still verified. False when
/// the plan was done or cancelled already.
pub async fn cancel(db: &Db, tenant: &TenantId, id: &str, now: i64) -> sqlx::Result<bool> {
    let mut tx = db.pool.begin().await?;
    let cancelled = sqlx::query(
        "UPDATE remediation_plans SET status = 'cancelled', finished_at = $3 \
         WHERE tenant_id = $1 AND id = $2 \
         AND status IN ('draft', 'awaiting_client', 'approved', 'running')",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(now)
    .execute(&mut *tx)
    .await?
    .rows_affected()
        == 1;
    if cancelled {
        sqlx::query(
            "UPDATE remediation_items SET state = 'cancelled', reason = 'the plan was cancelled' \
             WHERE tenant_id = $1 AND plan_id = $2 AND state = 'planned'",
        )
        .bind(tenant.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(cancelled)
}

/// Tenants with an approved or running plan, or an item under way.
pub async fn tenants_with_work(db: &Db) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT tenant_id FROM remediation_plans WHERE status IN ('approved', 'running') \
         UNION SELECT tenant_id FROM remediation_items \
         WHERE state IN ('starting', 'pending', 'running', 'awaiting_inventory')",
    )
    .fetch_all(&db.pool)
    .await
}

/// The tenant's plans that have work left: approved, running, or
/// cancelled with items still under way.
pub async fn plans_with_work(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<PlanRow>> {
    sqlx::query_as(&format!(
        "SELECT {PLAN_COLUMNS} FROM remediation_plans p WHERE tenant_id = $1 AND \
         (status IN ('approved', 'running') OR EXISTS (SELECT 1 FROM remediation_items i \
          WHERE i.plan_id = p.id AND i.state IN ('starting', 'pending', 'running', 'awaiting_inventory'))) \
         ORDER BY created_at"
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await
}

pub async fn set_running(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE remediation_plans SET status = 'running' \
         WHERE tenant_id = $1 AND id = $2 AND status = 'approved'",
    )
    .bind(tenant.as_str())
    .bind(id)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Ends a running plan none of whose items is planned or under way.
pub async fn finish_if_settled(db: &Db, tenant: &TenantId, id: &str, now: i64) -> sqlx::Result<()> {
    sqlx::query(
        "UPDATE remediation_plans SET status = 'done', finished_at = $3 \
         WHERE tenant_id = $1 AND id = $2 AND status = 'running' AND NOT EXISTS \
         (SELECT 1 FROM remediation_items WHERE plan_id = $2 AND state IN \
          ('planned', 'starting', 'pending', 'running', 'awaiting_inventory'))",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(now)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Attempts so far per device and application: those under way, failed or
/// disproved by an inventory (a fix ends the findings, so it is never
/// planned again).
pub async fn attempts(db: &Db, tenant: &TenantId) -> sqlx::Result<HashMap<(String, String), i64>> {
    let rows = sqlx::query(
        "SELECT device_name, application_name, COUNT(*) AS n FROM remediation_items \
         WHERE tenant_id = $1 AND state IN \
         ('starting', 'pending', 'running', 'awaiting_inventory', 'failed', 'remediation_failed') \
         GROUP BY device_name, application_name",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    let mut attempts = HashMap::new();
    for row in rows {
        let key = attempt_key(
            row.try_get::<&str, _>("device_name")?,
            row.try_get::<&str, _>("application_name")?,
        );
        *attempts.entry(key).or_default() += row.try_get::<i64, _>("n")?;
    }
    Ok(attempts)
}

/// The key of one item.
pub struct ItemKey<'a> {
    pub plan_id: &'a str,
    pub device_name: &'a str,
    pub application_name: &'a str,
    pub version: &'a str,
}

impl<'a> From<&'a ItemRow> for ItemKey<'a> {
    fn from(row: &'a ItemRow) -> Self {
        ItemKey {
            plan_id: &row.plan_id,
            device_name: &row.device_name,
            application_name: &row.application_name,
            version: &row.version,
        }
    }
}

const ITEM_KEY: &str =
    "plan_id = $1 AND device_name = $2 AND application_name = $3 AND version = $4";

/// Moves an item from `from` to the new state; false when it was not in
/// `from` (another run moved it).
pub async fn move_item(
    db: &Db,
    key: &ItemKey<'_>,
    from: &str,
    to: &Transition<'_>,
    now: i64,
) -> sqlx::Result<bool> {
    let decided = VERDICTS.contains(&to.state).then_some(now);
    Ok(sqlx::query(&format!(
        "UPDATE remediation_items SET state = $6, \
         reason = COALESCE($7, reason), upstream_handle = COALESCE($8, upstream_handle), \
         upstream_report = COALESCE($9, upstream_report), started_at = COALESCE($10, started_at), \
         reported_at = COALESCE($11, reported_at), verified_at = COALESCE($12, verified_at), \
         decided_at = COALESCE($13, decided_at) \
         WHERE {ITEM_KEY} AND state = $5"
    ))
    .bind(key.plan_id)
    .bind(key.device_name)
    .bind(key.application_name)
    .bind(key.version)
    .bind(from)
    .bind(to.state)
    .bind(to.reason.as_deref())
    .bind(to.handle)
    .bind(to.report)
    .bind(to.started_at)
    .bind(to.reported_at)
    .bind(to.verified_at)
    .bind(decided)
    .execute(&db.pool)
    .await?
    .rows_affected()
        == 1)
}

/// A new state and the facts that come with it (`None`: unchanged).
#[derive(Default)]
pub struct Transition<'a> {
    pub state: &'a str,
    pub reason: Option<String>,
    pub handle: Option<&'a str>,
    pub report: Option<&'a str>,
    pub started_at: Option<i64>,
    pub reported_at: Option<i64>,
    pub verified_at: Option<i64>,
}

/// The items of `plan_id` in `state`.
pub async fn items_in(
    db: &Db,
    tenant: &TenantId,
    plan_id: &str,
    state: &str,
) -> sqlx::Result<Vec<ItemRow>> {
    sqlx::query_as(&format!(
        "SELECT {ITEM_COLUMNS} FROM remediation_items \
         WHERE tenant_id = $1 AND plan_id = $2 AND state = $3 \
         ORDER BY device_name, application_name, version"
    ))
    .bind(tenant.as_str())
    .bind(plan_id)
    .bind(state)
    .fetch_all(&db.pool)
    .await
}

/// Items that reached a verdict at or after `since`, newest first, the
/// failed ones only unless `fixed_too`: automation's events and its
/// tickets' notes.
pub async fn decided_since(
    db: &Db,
    tenant: &TenantId,
    fixed_too: bool,
    since: i64,
    limit: i64,
) -> sqlx::Result<Vec<ItemRow>> {
    sqlx::query_as(&format!(
        "SELECT {ITEM_COLUMNS} FROM remediation_items \
         WHERE tenant_id = $1 AND decided_at >= $2 \
         AND (state IN ('failed', 'remediation_failed') OR ($4 = 1 AND state = 'fixed')) \
         ORDER BY decided_at DESC LIMIT $3"
    ))
    .bind(tenant.as_str())
    .bind(since)
    .bind(limit)
    .bind(i64::from(fixed_too))
    .fetch_all(&db.pool)
    .await
}

/// Each tenant's latest verdict at or after `since`.
pub async fn latest_verdicts(db: &Db, since: i64) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT tenant_id, MAX(decided_at) FROM remediation_items \
         WHERE decided_at >= $1 GROUP BY tenant_id",
    )
    .bind(since)
    .fetch_all(&db.pool)
    .await
}

/// Whether the tenant's plans need its client's approval too.
pub async fn client_approval(db: &Db, tenant: &TenantId) -> sqlx::Result<bool> {
    let set: Option<i64> =
        sqlx::query_scalar("SELECT client_approval FROM remediation_settings WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_optional(&db.pool)
            .await?;
    Ok(set.unwrap_or(0) != 0)
}

pub async fn set_client_approval(
    db: &Db,
    tenant: &TenantId,
    on: bool,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO remediation_settings (tenant_id, client_approval, updated_at) \
         VALUES ($1, $2, $3) ON CONFLICT (tenant_id) DO UPDATE SET \
         client_approval = excluded.client_approval, updated_at = excluded.updated_at",
    )
    .bind(tenant.as_str())
    .bind(i64::from(on))
    .bind(now)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// The tenant's plans its client sees: awaiting its decision or decided
/// by it, newest first.
pub async fn client_plans(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<PlanRow>> {
    sqlx::query_as(&format!(
        "SELECT {PLAN_COLUMNS} FROM remediation_plans WHERE tenant_id = $1 \
         AND (status = 'awaiting_client' OR client_decided_at IS NOT NULL) \
         ORDER BY created_at DESC, id DESC LIMIT 500"
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await
}

/// The client's decision on a plan awaiting it: the plan as the decision
/// left it; `None` when it is not awaiting one. A rejection cancels the
/// plan's items.
pub async fn client_decide(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    approve: bool,
    by: &str,
    comment: &str,
    now: i64,
) -> sqlx::Result<Option<PlanRow>> {
    let mut tx = db.pool.begin().await?;
    let decided: Option<PlanRow> = sqlx::query_as(&format!(
        "UPDATE remediation_plans SET status = $3, client_decided_by = $4, \
         client_decided_at = $5, client_comment = $6, finished_at = $7 \
         WHERE tenant_id = $1 AND id = $2 AND status = 'awaiting_client' \
         RETURNING {PLAN_COLUMNS}"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .bind(if approve { "approved" } else { "rejected" })
    .bind(by)
    .bind(now)
    .bind((!comment.is_empty()).then_some(comment))
    .bind((!approve).then_some(now))
    .fetch_optional(&mut *tx)
    .await?;
    if decided.is_some() && !approve {
        sqlx::query(
            "UPDATE remediation_items SET state = 'cancelled', \
             reason = 'the client rejected the plan' \
             WHERE tenant_id = $1 AND plan_id = $2 AND state = 'planned'",
        )
        .bind(tenant.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(decided)
}

/// The tenant's items started at or after `since`, counted by state: the
/// attempts of a period and what became of them.
pub async fn outcomes_since(
    db: &Db,
    tenant: &TenantId,
    since: i64,
) -> sqlx::Result<HashMap<String, i64>> {
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "SELECT state, COUNT(*) FROM remediation_items \
         WHERE tenant_id = $1 AND started_at >= $2 GROUP BY state",
    )
    .bind(tenant.as_str())
    .bind(since)
    .fetch_all(&db.pool)
    .await?;
    Ok(rows.into_iter().collect())
}

/// The device and application of every item under way now, by
/// [`attempt_key`].
pub async fn under_way(
    db: &Db,
    tenant: &TenantId,
) -> sqlx::Result<std::collections::HashSet<(String, String)>> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT DISTINCT device_name, application_name FROM remediation_items \
         WHERE tenant_id = $1 AND state IN ('starting', 'pending', 'running', 'awaiting_inventory')",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    Ok(rows
        .iter()
        .map(|(device, application)| attempt_key(device, application))
        .collect())
}
