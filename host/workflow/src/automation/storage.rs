//! `automation_matches`, `automation_tickets`, `automation_deliveries`,
//! `automation_log` and `automation_tenants`: a rule's memory, a run
//! written in one transaction with the deliveries it queues, the
//! deliveries' leases and outcomes, and the log read back.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::evaluate::{KeptTicket, MatchKey, Memory, Plan};
use super::rules::{RunState, StoredRule};
use cairn_core::db::{json_array_rows, stored_json, Db};
use cairn_core::ids::TenantId;
use cairn_jobs::JobContext;

/// A run's writes could not commit: another run of the same rule
/// committed first (its version moved), or the job lost its lease.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("another run of the rule committed first")]
    Raced,
    #[error("{0}")]
    Job(String),
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// What the rule remembers.
pub async fn memory(db: &Db, tenant: &TenantId, rule_id: &str) -> sqlx::Result<Memory> {
    let rows: Vec<(String, String, String, String, i64)> = sqlx::query_as(
        "SELECT device_name, application_name, version, cve_id, fired FROM automation_matches \
         WHERE tenant_id = $1 AND rule_id = $2",
    )
    .bind(tenant.as_str())
    .bind(rule_id)
    .fetch_all(&db.pool)
    .await?;
    let matches = rows
        .into_iter()
        .map(|(d, a, v, c, fired)| ((d, a, v, c), fired != 0))
        .collect();
    let tickets: Vec<(String, Option<String>, String, String)> = sqlx::query_as(
        "SELECT cve_id, ticket_id, devices, state FROM automation_tickets \
         WHERE tenant_id = $1 AND rule_id = $2",
    )
    .bind(tenant.as_str())
    .bind(rule_id)
    .fetch_all(&db.pool)
    .await?;
    let tickets = tickets
        .into_iter()
        .map(|(cve, ticket_id, devices, state)| {
            Ok((
                cve,
                KeptTicket {
                    ticket_id,
                    devices: stored_json::<BTreeSet<String>>("devices", &devices)?,
                    open: state == "open",
                },
            ))
        })
        .collect::<sqlx::Result<HashMap<_, _>>>()?;
    let noted = seen(db, tenant, rule_id).await?;
    Ok(Memory {
        matches,
        tickets,
        noted,
    })
}

/// The events an event trigger's rule has seen over `tenant` (for a rule
/// with tickets, the remediation verdicts its tickets were told of).
async fn seen(
    db: &Db,
    tenant: &TenantId,
    rule_id: &str,
) -> sqlx::Result<std::collections::HashSet<String>> {
    let keys: Vec<String> = sqlx::query_scalar(
        "SELECT event_key FROM automation_seen WHERE tenant_id = $1 AND rule_id = $2",
    )
    .bind(tenant.as_str())
    .bind(rule_id)
    .fetch_all(&db.pool)
    .await?;
    Ok(keys.into_iter().collect())
}

fn key_json(key: &MatchKey) -> Value {
    serde_json::json!([key.0, key.1, key.2, key.3])
}

/// Writes a run of `rule` over `tenant`'s findings in one transaction
/// under the job's lease: its matches, tickets, queued deliveries and log
/// lines, and the run's new version (from `state`, what the run read).
/// Answers the ids of the deliveries queued.
#[allow(clippy::too_many_arguments)]
pub async fn apply(
    db: &Db,
    job: &JobContext,
    rule: &StoredRule,
    tenant: &TenantId,
    state: &RunState,
    before: &Memory,
    plan: &Plan,
    now: i64,
) -> Result<Vec<String>, ApplyError> {
    let owner = rule.tenant_id.as_str();
    let tenant = tenant.as_str();
    let rows = json_array_rows(db.backend, 1);
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    job.hold_in(&mut tx)
        .await
        .map_err(|e| ApplyError::Job(e.to_string()))?;
    let moved = match state.version {
        // A first run: inserting the run's row a concurrent first run
        // inserted meanwhile fails the key, or waits for SQLite's lock
        // and then finds it.
        None => sqlx::query(
            "INSERT INTO automation_rule_runs (rule_id, tenant_id, version, evaluated_at, \
             seen_until, digest_period) VALUES ($1, $2, 1, $3, $4, $5) \
             ON CONFLICT (rule_id, tenant_id) DO NOTHING",
        )
        .bind(&rule.id)
        .bind(tenant)
        .bind(now)
        .bind(plan.seen_until)
        .bind(plan.digest_period.as_deref()),
        Some(version) => sqlx::query(
            "UPDATE automation_rule_runs SET version = version + 1, evaluated_at = $4, \
             seen_until = $5, digest_period = COALESCE($6, digest_period) \
             WHERE rule_id = $1 AND tenant_id = $2 AND version = $3",
        )
        .bind(&rule.id)
        .bind(tenant)
        .bind(version)
        .bind(now)
        .bind(plan.seen_until)
        .bind(plan.digest_period.as_deref()),
    }
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if moved == 0 {
        return Err(ApplyError::Raced);
    }
    // Matches: those gone are deleted, new ones inserted; a kept one keeps
    // its row.
    let after: HashMap<&MatchKey, bool> = plan.matches_after.iter().map(|(k, f)| (k, *f)).collect();
    let gone: Vec<Value> = before
        .matches
        .keys()
        .filter(|k| !after.contains_key(k))
        .map(key_json)
        .collect();
    let added: Vec<Value> = plan
        .matches_after
        .iter()
        .filter(|(k, _)| !before.matches.contains_key(k))
        .map(|(k, fired)| serde_json::json!([k.0, k.1, k.2, k.3, i64::from(*fired)]))
        .collect();
    for chunk in gone.chunks(5_000) {
        sqlx::query(&format!(
            "DELETE FROM automation_matches WHERE rule_id = $2 AND tenant_id = $3 AND \
             (device_name, application_name, version, cve_id) IN \
             (SELECT value->>0, value->>1, value->>2, value->>3 FROM {rows})"
        ))
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .bind(&rule.id)
        .bind(tenant)
        .execute(&mut *tx)
        .await?;
    }
    for chunk in added.chunks(5_000) {
        sqlx::query(&format!(
            "INSERT INTO automation_matches (rule_id, tenant_id, device_name, application_name, \
             version, cve_id, fired, since) \
             SELECT $2, $3, value->>0, value->>1, value->>2, value->>3, \
             CAST(value->>4 AS BIGINT), $4 FROM {rows} WHERE true \
             ON CONFLICT (rule_id, tenant_id, device_name, application_name, version, cve_id) \
             DO NOTHING"
        ))
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .bind(&rule.id)
        .bind(tenant)
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    if let Some(keys) = &plan.events_after {
        // Few: one per exception, integration or recent failed upload.
        sqlx::query("DELETE FROM automation_seen WHERE rule_id = $1 AND tenant_id = $2")
            .bind(&rule.id)
            .bind(tenant)
            .execute(&mut *tx)
            .await?;
        for key in keys {
            sqlx::query(
                "INSERT INTO automation_seen (rule_id, tenant_id, event_key, since) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (rule_id, tenant_id, event_key) DO NOTHING",
            )
            .bind(&rule.id)
            .bind(tenant)
            .bind(key)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
    }
    for (cve, (devices, open)) in &plan.tickets_after {
        sqlx::query(
            "INSERT INTO automation_tickets (tenant_id, rule_id, cve_id, company_id, ticket_id, \
             devices, state, updated_at) VALUES ($1, $2, $3, $4, NULL, $5, $6, $7) \
             ON CONFLICT (tenant_id, rule_id, cve_id) DO UPDATE SET devices = excluded.devices, \
             state = excluded.state, updated_at = excluded.updated_at, \
             ticket_id = CASE WHEN automation_tickets.state = 'closed' AND excluded.state = 'open' \
             THEN NULL ELSE automation_tickets.ticket_id END",
        )
        .bind(tenant)
        .bind(&rule.id)
        .bind(cve)
        .bind(company_of(rule, tenant))
        .bind(serde_json::to_string(devices).unwrap_or_default())
        .bind(if *open { "open" } else { "closed" })
        .bind(now)
        .execute(&mut *tx)
        .await?;
    }
    let mut ids = vec![];
    for planned in &plan.deliveries {
        let id = uuid::Uuid::now_v7().to_string();
        sqlx::query(
            "INSERT INTO automation_deliveries (id, tenant_id, owner_id, rule_id, rule_name, action, \
             target, payload, status, attempts, next_attempt_at, lease_until, answer, created_at, \
             delivered_at) \
             VALUES ($1, $2, $9, $3, $4, $5, $6, $7, 'pending', 0, $8, NULL, NULL, $8, NULL)",
        )
        .bind(&id)
        .bind(tenant)
        .bind(&rule.id)
        .bind(&rule.input.name)
        .bind(&planned.action)
        .bind(&planned.target)
        .bind(planned.payload.to_string())
        .bind(now)
        .bind(owner)
        .execute(&mut *tx)
        .await?;
        ids.push(id);
    }
    let mut lines: Vec<LogLine> = vec![];
    for f in &plan.fired {
        if plan.stopped.is_none() {
            lines.push(LogLine::finding(
                "fired",
                "started to match",
                &f.cve_id,
                &f.device_name,
            ));
        }
    }
    for event in &plan.events {
        let mut line = LogLine::rule("fired", event.summary.clone());
        line.cve_id = event.cve_id.clone();
        lines.push(line);
    }
    if let Some(stopped) = &plan.stopped {
        lines.push(LogLine::rule("stopped", stopped.clone()));
    }
    if plan.baseline > 0 {
        lines.push(LogLine::rule(
            "baseline",
            format!(
                "{} finding(s) or event(s) stood when the rule was made; not acted on (include_existing is false)",
                plan.baseline
            ),
        ));
    }
    for skip in &plan.skipped {
        lines.push(LogLine::finding(
            "skipped",
            &skip.reason,
            &skip.cve_id,
            &skip.device_name,
        ));
    }
    if plan.skipped_more > 0 {
        lines.push(LogLine::rule(
            "skipped",
            format!("{} more new finding(s) skipped", plan.skipped_more),
        ));
    }
    for (planned, id) in plan.deliveries.iter().zip(&ids) {
        let mut line = LogLine::rule(
            "queued",
            format!("{} to {}", planned.action, planned.target),
        );
        line.delivery_id = Some(id.clone());
        if planned.action.starts_with("ticket") {
            line.cve_id = Some(planned.target.clone());
        }
        lines.push(line);
    }
    for line in lines {
        write_line(&mut tx, (tenant, owner), &rule.id, now, &line).await?;
    }
    tx.commit().await?;
    Ok(ids)
}

fn company_of(rule: &StoredRule, tenant: &str) -> String {
    rule.input
        .actions
        .iter()
        .find_map(|a| a.company_for(tenant))
        .map(|c| c.to_string())
        .unwrap_or_default()
}

/// Every outcome a log line has (docs/src/automation.md says what each
/// means).
pub const LOG_OUTCOMES: [&str; 10] = [
    "fired",
    "skipped",
    "baseline",
    "stopped",
    "queued",
    "delivered",
    "failed",
    "dead",
    "rate_limited",
    "disabled",
];

/// What a delivery does upstream.
pub const DELIVERY_ACTIONS: [&str; 5] = [
    "ticket_create",
    "ticket_update",
    "ticket_close",
    "email",
    "webhook",
];

/// One line of the log to write.
#[derive(Debug, Clone)]
pub struct LogLine {
    pub outcome: &'static str,
    pub reason: String,
    pub cve_id: Option<String>,
    pub device_name: Option<String>,
    pub delivery_id: Option<String>,
}

impl LogLine {
    pub fn rule(outcome: &'static str, reason: String) -> LogLine {
        debug_assert!(
            LOG_OUTCOMES.contains(&outcome),
            "{outcome} is not in LOG_OUTCOMES"
        );
        LogLine {
            outcome,
            reason,
            cve_id: None,
            device_name: None,
            delivery_id: None,
        }
    }

    fn finding(outcome: &'static str, reason: &str, cve: &str, device: &str) -> LogLine {
        debug_assert!(
            LOG_OUTCOMES.contains(&outcome),
            "{outcome} is not in LOG_OUTCOMES"
        );
        LogLine {
            outcome,
            reason: reason.to_string(),
            cve_id: Some(cve.to_string()),
            device_name: Some(device.to_string()),
            delivery_id: None,
        }
    }
}

/// Writes a log line about `tenant`'s findings under the rule of `owner`.
async fn write_line(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    (tenant, owner): (&str, &str),
    rule_id: &str,
    at: i64,
    line: &LogLine,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO automation_log (id, tenant_id, owner_id, rule_id, at, outcome, reason, \
         cve_id, device_name, delivery_id) VALUES ($1, $2, $10, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(tenant)
    .bind(rule_id)
    .bind(at)
    .bind(line.outcome)
    .bind(&line.reason)
    .bind(line.cve_id.as_deref())
    .bind(line.device_name.as_deref())
    .bind(line.delivery_id.as_deref())
    .bind(owner)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Says in the log that a disabled rule did not run over `tenant`, at most
/// once a day per rule and tenant (runs come with every findings write).
pub async fn log_disabled(
    db: &Db,
    rule: &StoredRule,
    tenant: &TenantId,
    now: i64,
) -> sqlx::Result<()> {
    let last: Option<i64> = sqlx::query_scalar(
        "SELECT MAX(at) FROM automation_log WHERE owner_id = $1 AND rule_id = $2 \
         AND tenant_id = $3 AND outcome = 'disabled'",
    )
    .bind(&rule.tenant_id)
    .bind(&rule.id)
    .bind(tenant.as_str())
    .fetch_one(&db.pool)
    .await?;
    if last.is_some_and(|at| now - at < 86_400_000) {
        return Ok(());
    }
    let line = LogLine::rule(
        "disabled",
        "the rule is disabled: it did not run over these findings; enabled again, it acts on what started to match meanwhile".into(),
    );
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    write_line(
        &mut tx,
        (tenant.as_str(), &rule.tenant_id),
        &rule.id,
        now,
        &line,
    )
    .await?;
    tx.commit().await
}

/// Writes one log line about a delivery on its own.
pub async fn log(db: &Db, delivery: &DeliveryRow, at: i64, line: &LogLine) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let whose = (delivery.tenant_id.as_str(), delivery.owner_id.as_str());
    write_line(&mut tx, whose, &delivery.rule_id, at, line).await?;
    tx.commit().await
}

// ---- deliveries -------------------------------------------------------

/// A delivery as stored.
#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct DeliveryRow {
    pub id: String,
    pub tenant_id: String,
    pub owner_id: String,
    pub rule_id: String,
    pub rule_name: String,
    pub action: String,
    pub target: String,
    pub payload: String,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at: i64,
    pub answer: Option<String>,
    pub created_at: i64,
    pub delivered_at: Option<i64>,
}

const DELIVERY_COLUMNS: &str =
    "id, tenant_id, owner_id, rule_id, rule_name, action, target, payload, status, \
    attempts, next_attempt_at, answer, created_at, delivered_at";

/// Deliveries of the tenant that may be sent at `now` (pending and due,
/// or sending under a lapsed lease), oldest first.
pub async fn due(db: &Db, tenant: &TenantId, now: i64) -> sqlx::Result<Vec<DeliveryRow>> {
    sqlx::query_as(&format!(
        "SELECT {DELIVERY_COLUMNS} FROM automation_deliveries WHERE tenant_id = $1 \
         AND ((status = 'pending' AND next_attempt_at <= $2) \
         OR (status = 'sending' AND lease_until < $2)) ORDER BY created_at, id LIMIT 500"
    ))
    .bind(tenant.as_str())
    .bind(now)
    .fetch_all(&db.pool)
    .await
}

/// Tenants with a delivery that may be sent at `now`.
pub async fn tenants_with_due(db: &Db, now: i64) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar(
        "SELECT DISTINCT tenant_id FROM automation_deliveries \
         WHERE (status = 'pending' AND next_attempt_at <= $1) \
         OR (status = 'sending' AND lease_until < $1)",
    )
    .bind(now)
    .fetch_all(&db.pool)
    .await
}

/// Takes a delivery for one attempt, under a lease of `lease_ms`; false
/// when another process took it first. The attempt is counted before the
/// send, so a crash mid-send still counts.
pub async fn take(db: &Db, delivery: &DeliveryRow, now: i64, lease_ms: i64) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let taken = sqlx::query(
        "UPDATE automation_deliveries SET status = 'sending', attempts = attempts + 1, \
         lease_until = $3 WHERE tenant_id = $1 AND id = $2 AND attempts = $4 \
         AND ((status = 'pending' AND next_attempt_at <= $5) OR (status = 'sending' AND lease_until < $5))",
    )
    .bind(&delivery.tenant_id)
    .bind(&delivery.id)
    .bind(now + lease_ms)
    .bind(delivery.attempts)
    .bind(now)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(taken == 1)
}

/// Puts a delivery off until `at` without an attempt (a rate limit, or a
/// ticket not opened yet), saying why.
pub async fn postpone(db: &Db, delivery: &DeliveryRow, at: i64, why: &str) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "UPDATE automation_deliveries SET status = 'pending', next_attempt_at = $3, \
         lease_until = NULL, answer = $4 WHERE tenant_id = $1 AND id = $2 AND attempts = $5 \
         AND status IN ('pending', 'sending')",
    )
    .bind(&delivery.tenant_id)
    .bind(&delivery.id)
    .bind(at)
    .bind(why)
    .bind(delivery.attempts)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// How an attempt ended.
pub enum Outcome<'a> {
    Delivered {
        answer: &'a str,
    },
    /// Failed; tried again at `retry_at`, or dead when `None`.
    Failed {
        answer: &'a str,
        retry_at: Option<i64>,
    },
}

/// Records an attempt's outcome with its log line; a created ticket's id
/// is kept for the rule's later notes and closing.
pub async fn finish(
    db: &Db,
    delivery: &DeliveryRow,
    outcome: Outcome<'_>,
    ticket_id: Option<&str>,
    now: i64,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let (status, answer, next, line) = match outcome {
        Outcome::Delivered { answer } => (
            "delivered",
            answer,
            now,
            LogLine::rule("delivered", format!("{}: {answer}", delivery.action)),
        ),
        Outcome::Failed {
            answer,
            retry_at: Some(at),
        } => (
            "pending",
            answer,
            at,
            LogLine::rule(
                "failed",
                format!(
                    "{} attempt {} failed: {answer}; tried again later",
                    delivery.action,
                    delivery.attempts + 1
                ),
            ),
        ),
        Outcome::Failed {
            answer,
            retry_at: None,
        } => (
            "dead",
            answer,
            now,
            LogLine::rule(
                "dead",
                format!(
                    "{} failed {} times, last: {answer}; not tried again",
                    delivery.action,
                    delivery.attempts + 1
                ),
            ),
        ),
    };
    sqlx::query(
        "UPDATE automation_deliveries SET status = $3, answer = $4, next_attempt_at = $5, \
         lease_until = NULL, delivered_at = CASE WHEN $3 = 'delivered' THEN $6 ELSE NULL END \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(&delivery.tenant_id)
    .bind(&delivery.id)
    .bind(status)
    .bind(answer)
    .bind(next)
    .bind(now)
    .execute(&mut *tx)
    .await?;
    if let Some(ticket_id) = ticket_id {
        let cve = &delivery.target;
        sqlx::query(
            "UPDATE automation_tickets SET ticket_id = $4 \
             WHERE tenant_id = $1 AND rule_id = $2 AND cve_id = $3",
        )
        .bind(&delivery.tenant_id)
        .bind(&delivery.rule_id)
        .bind(cve)
        .bind(ticket_id)
        .execute(&mut *tx)
        .await?;
    }
    let mut line = line;
    line.delivery_id = Some(delivery.id.clone());
    if delivery.action.starts_with("ticket") {
        line.cve_id = Some(delivery.target.clone());
    }
    let whose = (delivery.tenant_id.as_str(), delivery.owner_id.as_str());
    write_line(&mut tx, whose, &delivery.rule_id, now, &line).await?;
    tx.commit().await
}

/// The ticket id the rule keeps for a CVE, once its creation was delivered.
pub async fn ticket_id(
    db: &Db,
    tenant: &str,
    rule_id: &str,
    cve: &str,
) -> sqlx::Result<Option<String>> {
    let id: Option<Option<String>> = sqlx::query_scalar(
        "SELECT ticket_id FROM automation_tickets WHERE tenant_id = $1 AND rule_id = $2 AND cve_id = $3",
    )
    .bind(tenant)
    .bind(rule_id)
    .bind(cve)
    .fetch_optional(&db.pool)
    .await?;
    Ok(id.flatten())
}

/// Deliveries of the rule (and of every rule of its owner) delivered
/// since `since`.
pub async fn delivered_since(
    db: &Db,
    owner: &str,
    rule_id: &str,
    since: i64,
) -> sqlx::Result<(i64, i64)> {
    let (rule, all): (i64, i64) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(CASE WHEN rule_id = $2 THEN 1 ELSE 0 END), 0) AS BIGINT), \
         COUNT(*) FROM automation_deliveries WHERE owner_id = $1 AND status = 'delivered' \
         AND delivered_at >= $3",
    )
    .bind(owner)
    .bind(rule_id)
    .bind(since)
    .fetch_one(&db.pool)
    .await?;
    Ok((rule, all))
}

/// A delivery as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AutomationDelivery)]
pub struct DeliveryView {
    /// Also sent as `X-Cairn-Delivery` on every attempt of a webhook.
    pub id: String,
    /// The tenant whose findings fired (a customer, for a partner's rule).
    pub tenant_id: String,
    pub rule_id: String,
    pub rule_name: String,
    /// `ticket_create`, `ticket_update`, `ticket_close`, `email` or `webhook`.
    pub action: String,
    pub target: String,
    /// `pending`, `sending`, `delivered` or `dead`.
    pub status: String,
    pub attempts: i64,
    /// The upstream's answer to the last attempt (status and the start of
    /// its body), or why the delivery waits.
    pub answer: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    pub next_attempt_at: Option<String>,
    pub delivered_at: Option<String>,
}

impl From<DeliveryRow> for DeliveryView {
    fn from(row: DeliveryRow) -> DeliveryView {
        let waiting = row.status == "pending";
        DeliveryView {
            id: row.id,
            tenant_id: row.tenant_id,
            rule_id: row.rule_id,
            rule_name: row.rule_name,
            action: row.action,
            target: row.target,
            status: row.status,
            attempts: row.attempts,
            answer: row.answer,
            created_at: cairn_core::db::to_rfc3339(row.created_at),
            next_attempt_at: waiting.then(|| cairn_core::db::to_rfc3339(row.next_attempt_at)),
            delivered_at: row.delivered_at.map(cairn_core::db::to_rfc3339),
        }
    }
}

/// The deliveries of the tenant's rules, newest first, optionally of one
/// rule or status.
pub async fn deliveries(
    db: &Db,
    tenant: &TenantId,
    rule_id: Option<&str>,
    status: Option<&str>,
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<DeliveryRow>, i64)> {
    const KEPT: &str = "FROM automation_deliveries WHERE owner_id = $1 \
         AND (CAST($2 AS TEXT) IS NULL OR rule_id = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR status = $3)";
    let rows = sqlx::query_as(&format!(
        "SELECT {DELIVERY_COLUMNS} {KEPT} ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5"
    ))
    .bind(tenant.as_str())
    .bind(rule_id)
    .bind(status)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar(&format!("SELECT COUNT(*) {KEPT}"))
        .bind(tenant.as_str())
        .bind(rule_id)
        .bind(status)
        .fetch_one(&db.pool)
        .await?;
    Ok((rows, total))
}

/// A dead delivery of the tenant's rules queued again (its attempts start
/// over): the tenant whose job sends it; `None` when there is no dead
/// delivery of that id.
pub async fn retry(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    now: i64,
) -> sqlx::Result<Option<TenantId>> {
    let _turn = db.write_turn().await;
    let moved = sqlx::query(
        "UPDATE automation_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $3 \
         WHERE owner_id = $1 AND id = $2 AND status = 'dead'",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(now)
    .execute(&db.pool)
    .await?
    .rows_affected();
    if moved == 0 {
        return Ok(None);
    }
    let whose: String =
        sqlx::query_scalar("SELECT tenant_id FROM automation_deliveries WHERE id = $1")
            .bind(id)
            .fetch_one(&db.pool)
            .await?;
    Ok(Some(TenantId(whose)))
}

// ---- the log ----------------------------------------------------------

/// One line of the log as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema, sqlx_macros::FromRow)]
#[schema(as = AutomationLogLine)]
pub struct LogRow {
    pub id: String,
    /// The tenant whose findings the line is about (a customer, for a
    /// partner's rule).
    pub tenant_id: String,
    pub rule_id: String,
    /// Unix ms.
    pub at: i64,
    /// `fired`, `skipped`, `baseline`, `stopped`, `queued`, `delivered`,
    /// `failed`, `dead`, `rate_limited` or `disabled`.
    pub outcome: String,
    /// Why, as a sentence (the condition that was false, the upstream's
    /// answer, the limit).
    pub reason: String,
    pub cve_id: Option<String>,
    pub device_name: Option<String>,
    pub delivery_id: Option<String>,
}

/// What the log is read by.
#[derive(Debug, Default)]
pub struct LogFilter<'a> {
    pub rule_id: Option<&'a str>,
    pub cve_id: Option<&'a str>,
    pub device_name: Option<&'a str>,
    pub since: Option<i64>,
    pub until: Option<i64>,
}

/// The log of the tenant's rules, newest first.
pub async fn read_log(
    db: &Db,
    tenant: &TenantId,
    filter: &LogFilter<'_>,
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<LogRow>, i64)> {
    const KEPT: &str = "FROM automation_log WHERE owner_id = $1 \
         AND (CAST($2 AS TEXT) IS NULL OR rule_id = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR cve_id = $3) \
         AND (CAST($4 AS TEXT) IS NULL OR LOWER(device_name) = LOWER($4)) \
         AND at >= $5 AND at <= $6";
    let rows = sqlx::query_as(&format!(
        "SELECT id, tenant_id, rule_id, at, outcome, reason, cve_id, device_name, delivery_id \
         {KEPT} ORDER BY at DESC, id DESC LIMIT $7 OFFSET $8"
    ))
    .bind(tenant.as_str())
    .bind(filter.rule_id)
    .bind(filter.cve_id)
    .bind(filter.device_name)
    .bind(filter.since.unwrap_or(0))
    .bind(filter.until.unwrap_or(i64::MAX))
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar(&format!("SELECT COUNT(*) {KEPT}"))
        .bind(tenant.as_str())
        .bind(filter.rule_id)
        .bind(filter.cve_id)
        .bind(filter.device_name)
        .bind(filter.since.unwrap_or(0))
        .bind(filter.until.unwrap_or(i64::MAX))
        .fetch_one(&db.pool)
        .await?;
    Ok((rows, total))
}

// ---- when to evaluate ---------------------------------------------------

/// The stamps a tenant's rules were last evaluated at:
/// `(findings writes, reference stamp, evaluated_at)`.
pub async fn tenant_stamps(db: &Db) -> sqlx::Result<HashMap<String, (i64, i64, i64)>> {
    let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(
        "SELECT tenant_id, findings_stamp, reference_stamp, evaluated_at FROM automation_tenants",
    )
    .fetch_all(&db.pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(t, f, r, e)| (t, (f, r, e)))
        .collect())
}

/// Records the stamps a tenant's rules were evaluated at.
pub async fn evaluated(
    db: &Db,
    tenant: &TenantId,
    stamps: (i64, i64),
    now: i64,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO automation_tenants (tenant_id, findings_stamp, reference_stamp, evaluated_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (tenant_id) DO UPDATE SET \
         findings_stamp = excluded.findings_stamp, reference_stamp = excluded.reference_stamp, \
         evaluated_at = excluded.evaluated_at",
    )
    .bind(tenant.as_str())
    .bind(stamps.0)
    .bind(stamps.1)
    .bind(now)
    .execute(&db.pool)
    .await?;
    Ok(())
}
