//! Exceptions: a CVE's findings (on some devices, or all) set aside from
//! the SLA until an expiry, once someone other than the requester
//! approved. Table `sla_exceptions`; each row keeps who asked and when,
//! and who decided, when and why.

use serde::Serialize;
use utoipa::ToSchema;

use cairn_core::db::{Db, StoredJson};
use cairn_core::ids::TenantId;

/// An exception as stored.
/// An exception's states as its views show them.
pub const STATUSES: [&str; 4] = ["pending", "approved", "rejected", "expired"];

#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct ExceptionRow {
    pub id: String,
    pub cve_id: String,
    pub devices: StoredJson<Vec<String>>,
    pub reason: String,
    pub compensating_control: Option<String>,
    pub expires_at: i64,
    pub status: String,
    pub requested_by: String,
    pub requested_by_email: String,
    pub requested_at: i64,
    pub decided_by_email: Option<String>,
    pub decided_at: Option<i64>,
    pub decision_comment: Option<String>,
}

/// An exception as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = SlaException)]
pub struct ExceptionView {
    pub id: String,
    pub cve_id: String,
    /// Device names it covers; empty: every device with the CVE.
    pub devices: Vec<String>,
    pub reason: String,
    pub compensating_control: Option<String>,
    /// Unix ms.
    pub expires_at: i64,
    /// `pending`, `approved`, `rejected`, or `expired` (approved, and
    /// past its expiry: the findings are due again): [`STATUSES`].
    pub status: String,
    pub requested_by: String,
    /// Unix ms.
    pub requested_at: i64,
    pub decided_by: Option<String>,
    /// Unix ms.
    pub decided_at: Option<i64>,
    pub decision_comment: Option<String>,
}

impl ExceptionRow {
    /// The row as seen at `now`.
    pub fn view(self, now: i64) -> ExceptionView {
        let status = if self.status == "approved" && self.expires_at <= now {
            "expired".to_string()
        } else {
            self.status
        };
        ExceptionView {
            id: self.id,
            cve_id: self.cve_id,
            devices: self.devices.0,
            reason: self.reason,
            compensating_control: self.compensating_control,
            expires_at: self.expires_at,
            status,
            requested_by: self.requested_by_email,
            requested_at: self.requested_at,
            decided_by: self.decided_by_email,
            decided_at: self.decided_at,
            decision_comment: self.decision_comment,
        }
    }

    /// Whether, at `now`, it sets aside the finding of `cve` on `device`.
    pub fn covers(&self, cve: &str, device: &str, now: i64) -> bool {
        self.status == "approved"
            && self.expires_at > now
            && self.cve_id == cve
            && (self.devices.is_empty()
                || self
                    .devices
                    .iter()
                    .any(|d| super::storage::device_key(d) == super::storage::device_key(device)))
    }
}

const COLUMNS: &str = "id, cve_id, devices, reason, compensating_control, expires_at, status, \
     requested_by, requested_by_email, requested_at, decided_by_email, decided_at, decision_comment";

/// A request, checked.
pub struct Request<'a> {
    pub cve_id: &'a str,
    pub devices: &'a [String],
    pub reason: &'a str,
    pub compensating_control: Option<&'a str>,
    pub expires_at: i64,
    pub by_user: &'a str,
    pub by_email: &'a str,
    pub at: i64,
}

/// Records a pending request; its id.
pub async fn request(db: &Db, tenant: &TenantId, request: &Request<'_>) -> sqlx::Result<String> {
    let id = uuid::Uuid::now_v7().to_string();
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO sla_exceptions (id, tenant_id, cve_id, devices, reason, compensating_control, \
         expires_at, status, requested_by, requested_by_email, requested_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9, $10)",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(request.cve_id)
    .bind(serde_json::to_string(request.devices).unwrap_or_default())
    .bind(request.reason)
    .bind(request.compensating_control)
    .bind(request.expires_at)
    .bind(request.by_user)
    .bind(request.by_email)
    .bind(request.at)
    .execute(&db.pool)
    .await?;
    Ok(id)
}

/// The tenant's exceptions, newest first.
pub async fn list(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<ExceptionRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sla_exceptions WHERE tenant_id = $1 ORDER BY requested_at DESC, id DESC"
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await
}

/// The tenant's approved exceptions not yet past `now`.
pub async fn in_force(db: &Db, tenant: &TenantId, now: i64) -> sqlx::Result<Vec<ExceptionRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sla_exceptions WHERE tenant_id = $1 AND status = 'approved' \
         AND expires_at > $2"
    ))
    .bind(tenant.as_str())
    .bind(now)
    .fetch_all(&db.pool)
    .await
}

/// One of the tenant's exceptions.
pub async fn get(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<Option<ExceptionRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM sla_exceptions WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await
}

/// Who decides, how and why.
pub struct Decision<'a> {
    pub approve: bool,
    /// The decider as the exception shows them (an e-mail, or a portal
    /// client's name).
    pub by: &'a str,
    /// The user who may not decide: the requester, when the decider is a
    /// member (`None` for a customer deciding through the portal).
    pub user_id: Option<&'a str>,
    pub comment: &'a str,
    pub at: i64,
}

/// Why a decision was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum DecideError {
    #[error("exception not found")]
    NotFound,
    #[error("no one decides an exception they requested")]
    OwnRequest,
    #[error("the exception is already {0}")]
    Decided(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

impl From<DecideError> for cairn_core::http::error::ApiError {
    fn from(err: DecideError) -> Self {
        use cairn_core::http::error::ApiError;
        match err {
            DecideError::NotFound => ApiError::NotFound("exception"),
            DecideError::OwnRequest => ApiError::Forbidden(err.to_string()),
            DecideError::Decided(_) => ApiError::Conflict(err.to_string()),
            DecideError::Db(err) => err.into(),
        }
    }
}

/// Approves or rejects one of the tenant's pending exceptions; the
/// exception as decided.
pub async fn decide(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    decision: &Decision<'_>,
) -> Result<ExceptionRow, DecideError> {
    let row = get(db, tenant, id).await?.ok_or(DecideError::NotFound)?;
    if decision.user_id == Some(row.requested_by.as_str()) {
        return Err(DecideError::OwnRequest);
    }
    let decided = {
        let _turn = db.write_turn().await;
        sqlx::query(
            "UPDATE sla_exceptions SET status = $3, decided_by_email = $4, decided_at = $5, \
             decision_comment = $6 WHERE tenant_id = $1 AND id = $2 AND status = 'pending'",
        )
        .bind(tenant.as_str())
        .bind(id)
        .bind(if decision.approve {
            "approved"
        } else {
            "rejected"
        })
        .bind(decision.by)
        .bind(decision.at)
        .bind(decision.comment)
        .execute(&db.pool)
        .await?
    };
    if decided.rows_affected() != 1 {
        let now = get(db, tenant, id).await?.ok_or(DecideError::NotFound)?;
        return Err(DecideError::Decided(now.view(decision.at).status));
    }
    get(db, tenant, id).await?.ok_or(DecideError::NotFound)
}

/// How long before its expiry the requester hears that an exception ends.
pub const REMIND_BEFORE_MS: i64 = 7 * super::policy::DAY_MS;

/// Tells each requester whose approved exception expires within
/// [`REMIND_BEFORE_MS`] of `now`, once per exception, by mail; returns how
/// many were told. A mail that fails is tried again at the next run.
pub async fn send_reminders(
    db: &Db,
    mailer: &cairn_core::mail::Mailer,
    now: i64,
) -> sqlx::Result<usize> {
    if !mailer.enabled() {
        return Ok(0);
    }
    let due: Vec<(String, String, String, i64)> = sqlx::query_as(
        "SELECT id, cve_id, requested_by_email, expires_at FROM sla_exceptions \
         WHERE status = 'approved' AND reminded_at IS NULL AND expires_at > $1 \
         AND expires_at <= $2",
    )
    .bind(now)
    .bind(now + REMIND_BEFORE_MS)
    .fetch_all(&db.pool)
    .await?;
    let mut told = 0;
    for (id, cve_id, to, expires_at) in due {
        let date = chrono::DateTime::from_timestamp_millis(expires_at)
            .map(|at| at.format("%Y-%m-%d %H:%M UTC").to_string())
            .unwrap_or_default();
        let subject = format!("The SLA exception for {cve_id} expires on {date}");
        let body = format!(
            "The exception you asked for {cve_id} expires on {date}. Its findings are due \
             again from then on: fix them, or ask for a new exception before it ends.\n"
        );
        if let Err(err) = mailer.send(&to, &subject, body).await {
            tracing::warn!(exception_id = %id, error = %err, "an exception reminder was not sent");
            continue;
        }
        let _turn = db.write_turn().await;
        sqlx::query("UPDATE sla_exceptions SET reminded_at = $2 WHERE id = $1")
            .bind(&id)
            .bind(now)
            .execute(&db.pool)
            .await?;
        told += 1;
    }
    Ok(told)
}

/// What each of `tenants`' exceptions are as of: how many there are, the
/// latest request and the latest decision. Any request or decision moves
/// it.
pub async fn stamps(
    db: &Db,
    tenants: &[TenantId],
) -> sqlx::Result<std::collections::HashMap<String, (i64, i64, i64)>> {
    let ids = cairn_core::db::tenant_ids_json(tenants);
    let rows: Vec<(String, i64, i64, i64)> = sqlx::query_as(&format!(
        "SELECT tenant_id, COUNT(*), CAST(MAX(requested_at) AS BIGINT), \
         CAST(COALESCE(MAX(decided_at), 0) AS BIGINT) FROM sla_exceptions \
         WHERE tenant_id IN ({}) GROUP BY tenant_id",
        cairn_core::db::json_text_values(db.backend, 1)
    ))
    .bind(&ids)
    .fetch_all(&db.pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(tenant, n, requested, decided)| (tenant, (n, requested, decided)))
        .collect())
}
