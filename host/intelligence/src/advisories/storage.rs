//! `advisories` and `advisory_recipients`: every statement takes the
//! tenant. An advisory and its recipients are written in one transaction;
//! a recipient moves from `pending` to `sent` (or `failed` after its
//! attempts) only after the mail server took the message.

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, stored_json, to_rfc3339, Db, StoredJson};
use cairn_core::ids::TenantId;

/// An advisory's states: being sent, sent to everyone, failed for
/// everyone, or sent to some.
pub const STATUSES: [&str; 4] = ["sending", "sent", "failed", "partial"];
/// A recipient's states: to send, sent, or given up after
/// [`MAX_ATTEMPTS`].
pub const RECIPIENT_STATUSES: [&str; 3] = ["pending", "sent", "failed"];
/// Times a recipient's message is tried before it is `failed`.
pub const MAX_ATTEMPTS: i64 = 3;

/// A recipient to record.
pub struct NewRecipient {
    pub email: String,
    pub name: Option<String>,
    pub devices: Vec<String>,
    /// Added by the caller, not found among the affected users.
    pub explicit: bool,
}

/// An advisory to record.
pub struct NewAdvisory<'a> {
    pub request_key: &'a str,
    pub subject: &'a str,
    pub body: &'a str,
    pub cve_id: Option<&'a str>,
    pub application: Option<&'a str>,
    pub versions: &'a [String],
    pub created_by: &'a str,
    pub recipients: Vec<NewRecipient>,
}

/// Records the advisory with its recipients, unless the tenant has one
/// with the same request key: then that one's id and `false`.
pub async fn create(
    db: &Db,
    tenant: &TenantId,
    advisory: NewAdvisory<'_>,
) -> sqlx::Result<(String, bool)> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let existing: Option<String> =
        sqlx::query_scalar("SELECT id FROM advisories WHERE tenant_id = $1 AND request_key = $2")
            .bind(tenant.as_str())
            .bind(advisory.request_key)
            .fetch_optional(&mut *tx)
            .await?;
    if let Some(id) = existing {
        return Ok((id, false));
    }
    let id = uuid::Uuid::now_v7().to_string();
    sqlx::query(
        "INSERT INTO advisories (id, tenant_id, request_key, subject, body, cve_id, application, \
         versions, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(advisory.request_key)
    .bind(advisory.subject)
    .bind(advisory.body)
    .bind(advisory.cve_id)
    .bind(advisory.application)
    .bind(serde_json::to_string(advisory.versions).unwrap_or_default())
    .bind(advisory.created_by)
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    for recipient in &advisory.recipients {
        sqlx::query(
            "INSERT INTO advisory_recipients (tenant_id, advisory_id, email, name, devices, \
             explicit, status) VALUES ($1, $2, $3, $4, $5, $6, 'pending')",
        )
        .bind(tenant.as_str())
        .bind(&id)
        .bind(&recipient.email)
        .bind(recipient.name.as_deref())
        .bind(serde_json::to_string(&recipient.devices).unwrap_or_default())
        .bind(i64::from(recipient.explicit))
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok((id, true))
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RecipientView {
    pub email: String,
    pub name: Option<String>,
    /// The affected devices the recipient is on.
    pub devices: Vec<String>,
    /// Added by the sender rather than found among the affected users.
    pub explicit: bool,
    /// `pending`, `sent` or `failed`.
    pub status: String,
    pub error: Option<String>,
    pub attempts: i64,
    pub sent_at: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AdvisoryView {
    pub id: String,
    pub subject: String,
    pub body: String,
    pub cve_id: Option<String>,
    pub application: Option<String>,
    pub versions: Vec<String>,
    /// The member who sent it.
    pub created_by: Option<String>,
    pub created_at: String,
    /// `sending` while any recipient is pending, then `sent`, `partial`
    /// (some failed) or `failed` (all failed).
    pub status: String,
    pub recipient_count: i64,
    pub sent_count: i64,
    pub failed_count: i64,
    /// Only in the answer for one advisory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Vec<RecipientView>>,
}

const ADVISORY_COLUMNS: &str = "a.id, a.subject, a.body, a.cve_id, a.application, a.versions, \
    a.created_by, a.created_at, \
    (SELECT COUNT(*) FROM advisory_recipients r WHERE r.advisory_id = a.id) AS recipients, \
    (SELECT COUNT(*) FROM advisory_recipients r \
     WHERE r.advisory_id = a.id AND r.status = 'sent') AS sent, \
    (SELECT COUNT(*) FROM advisory_recipients r \
     WHERE r.advisory_id = a.id AND r.status = 'failed') AS failed";

fn advisory_view(r: sqlx::any::AnyRow) -> sqlx::Result<AdvisoryView> {
    let (count, sent, failed): (i64, i64, i64) = (
        r.try_get("recipients")?,
        r.try_get("sent")?,
        r.try_get("failed")?,
    );
    let [sending, all_sent, all_failed, partial] = STATUSES;
    let status = if sent + failed < count {
        sending
    } else if failed == 0 {
        all_sent
    } else if sent == 0 {
        all_failed
    } else {
        partial
    };
    Ok(AdvisoryView {
        id: r.try_get("id")?,
        subject: r.try_get("subject")?,
        body: r.try_get("body")?,
        cve_id: r.try_get("cve_id")?,
        application: r.try_get("application")?,
        versions: stored_json("versions", r.try_get("versions")?)?,
        created_by: r.try_get("created_by")?,
        created_at: to_rfc3339(r.try_get("created_at")?),
        status: status.into(),
        recipient_count: count,
        sent_count: sent,
        failed_count: failed,
        recipients: None,
    })
}

pub async fn list(
    db: &Db,
    tenant: &TenantId,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<AdvisoryView>, i64)> {
    let rows = sqlx::query(&format!(
        "SELECT {ADVISORY_COLUMNS} FROM advisories a WHERE a.tenant_id = $1 \
         ORDER BY a.created_at DESC, a.id DESC LIMIT $2 OFFSET $3"
    ))
    .bind(tenant.as_str())
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM advisories WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_one(&db.pool)
        .await?;
    Ok((
        rows.into_iter()
            .map(advisory_view)
            .collect::<sqlx::Result<_>>()?,
        total,
    ))
}

/// One advisory with its recipients.
pub async fn one(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<Option<AdvisoryView>> {
    let Some(row) = sqlx::query(&format!(
        "SELECT {ADVISORY_COLUMNS} FROM advisories a WHERE a.tenant_id = $1 AND a.id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await?
    else {
        return Ok(None);
    };
    let mut view = advisory_view(row)?;
    let recipients = sqlx::query(
        "SELECT email, name, devices, explicit, status, error, attempts, sent_at \
         FROM advisory_recipients WHERE tenant_id = $1 AND advisory_id = $2 ORDER BY email",
    )
    .bind(tenant.as_str())
    .bind(id)
    .fetch_all(&db.pool)
    .await?
    .into_iter()
    .map(|r| {
        Ok(RecipientView {
            email: r.try_get("email")?,
            name: r.try_get("name")?,
            devices: stored_json("devices", r.try_get("devices")?)?,
            explicit: r.try_get::<i64, _>("explicit")? != 0,
            status: r.try_get("status")?,
            error: r.try_get("error")?,
            attempts: r.try_get("attempts")?,
            sent_at: r.try_get::<Option<i64>, _>("sent_at")?.map(to_rfc3339),
        })
    })
    .collect::<sqlx::Result<_>>()?;
    view.recipients = Some(recipients);
    Ok(Some(view))
}

/// A message waiting to be sent.
#[derive(Debug, sqlx_macros::FromRow)]
pub struct PendingMessage {
    pub advisory_id: String,
    pub email: String,
    pub devices: StoredJson<Vec<String>>,
    pub subject: String,
    pub body: String,
}

/// The tenant's pending messages, oldest advisory first.
pub async fn pending(db: &Db, tenant: &TenantId, limit: i64) -> sqlx::Result<Vec<PendingMessage>> {
    sqlx::query_as(
        "SELECT r.advisory_id, r.email, r.devices, a.subject, a.body \
         FROM advisory_recipients r JOIN advisories a ON a.id = r.advisory_id \
         WHERE r.tenant_id = $1 AND r.status = 'pending' \
         ORDER BY a.created_at, r.advisory_id, r.email LIMIT $2",
    )
    .bind(tenant.as_str())
    .bind(limit)
    .fetch_all(&db.pool)
    .await
}

/// Records one attempt: sent, or failed with `error` (pending again until
/// its attempts are spent).
pub async fn record_attempt(
    db: &Db,
    tenant: &TenantId,
    advisory_id: &str,
    email: &str,
    error: Option<&str>,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    let query = match error {
        None => sqlx::query(
            "UPDATE advisory_recipients SET status = 'sent', sent_at = $4, error = NULL, \
             attempts = attempts + 1 WHERE tenant_id = $1 AND advisory_id = $2 AND email = $3",
        )
        .bind(tenant.as_str())
        .bind(advisory_id)
        .bind(email)
        .bind(now_ms()),
        Some(error) => sqlx::query(
            "UPDATE advisory_recipients SET attempts = attempts + 1, error = $4, \
             status = CASE WHEN attempts + 1 >= $5 THEN 'failed' ELSE 'pending' END \
             WHERE tenant_id = $1 AND advisory_id = $2 AND email = $3",
        )
        .bind(tenant.as_str())
        .bind(advisory_id)
        .bind(email)
        .bind(error)
        .bind(MAX_ATTEMPTS),
    };
    query.execute(&db.pool).await?;
    Ok(())
}
