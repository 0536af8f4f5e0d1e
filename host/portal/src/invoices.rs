//! Invoices: the portal's view, the admin's input, and the status machine
//! draft -> sent -> paid, draft -> void, sent -> void (paid and void are
//! final).

use serde::{Deserialize, Serialize};
use sqlx::{Any, Transaction};
use utoipa::ToSchema;

use cairn_core::db::{now_ms, Db};
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InvoiceStatus {
    Draft,
    Sent,
    Paid,
    Void,
}

impl InvoiceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            InvoiceStatus::Draft => "draft",
            InvoiceStatus::Sent => "sent",
            InvoiceStatus::Paid => "paid",
            InvoiceStatus::Void => "void",
        }
    }

    fn parse(raw: &str) -> InvoiceStatus {
        match raw {
            "sent" => InvoiceStatus::Sent,
            "paid" => InvoiceStatus::Paid,
            "void" => InvoiceStatus::Void,
            _ => InvoiceStatus::Draft,
        }
    }

    /// Whether an invoice may move from `self` to `next`.
    pub fn can_become(self, next: InvoiceStatus) -> bool {
        use InvoiceStatus::*;
        matches!(
            (self, next),
            (Draft, Sent) | (Draft, Void) | (Sent, Paid) | (Sent, Void)
        )
    }
}

/// An invoice as the portal shows it. Amounts are integer cents, `currency`
/// an upper-case ISO 4217 code, `dueAt`/`paidAt` Unix epoch seconds.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Invoice {
    pub id: String,
    pub number: String,
    pub description: String,
    pub amount_cents: i64,
    pub currency: String,
    pub status: InvoiceStatus,
    /// Hosted payment link, once one was requested.
    pub payment_url: Option<String>,
    pub due_at: Option<i64>,
    pub paid_at: Option<i64>,
}

/// The same invoice with what only the tenant sees, in the snake_case of
/// every `/api/v1` answer (the portal's own [`Invoice`] keeps the spec's
/// camelCase). Amounts are integer cents, `due_at`/`paid_at` Unix epoch
/// seconds.
#[derive(Debug, Serialize, ToSchema)]
pub struct AdminInvoice {
    pub id: String,
    pub client_id: String,
    pub number: String,
    pub description: String,
    pub amount_cents: i64,
    pub currency: String,
    pub status: InvoiceStatus,
    /// Hosted payment link, once the client asked for one.
    pub payment_url: Option<String>,
    pub due_at: Option<i64>,
    pub paid_at: Option<i64>,
    pub created_at: String,
}

#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct InvoiceRow {
    pub id: String,
    pub client_id: String,
    pub number: String,
    pub description: String,
    pub amount_cents: i64,
    pub currency: String,
    pub status: String,
    pub payment_url: Option<String>,
    pub payment_session_id: Option<String>,
    pub payment_expires_at: Option<i64>,
    pub due_at: Option<i64>,
    pub paid_at: Option<i64>,
    pub created_at: i64,
}

impl InvoiceRow {
    pub fn status(&self) -> InvoiceStatus {
        InvoiceStatus::parse(&self.status)
    }

    pub fn view(self) -> Invoice {
        Invoice {
            status: self.status(),
            id: self.id,
            number: self.number,
            description: self.description,
            amount_cents: self.amount_cents,
            currency: self.currency,
            payment_url: self.payment_url,
            due_at: self.due_at,
            paid_at: self.paid_at,
        }
    }

    pub fn admin_view(self) -> AdminInvoice {
        AdminInvoice {
            status: self.status(),
            id: self.id,
            client_id: self.client_id,
            number: self.number,
            description: self.description,
            amount_cents: self.amount_cents,
            currency: self.currency,
            payment_url: self.payment_url,
            due_at: self.due_at,
            paid_at: self.paid_at,
            created_at: cairn_core::db::to_rfc3339(self.created_at),
        }
    }
}

const COLUMNS: &str = "id, client_id, number, description, amount_cents, currency, status, \
    payment_url, payment_session_id, payment_expires_at, due_at, paid_at, created_at";

/// What an admin sends to change an invoice: the fields to change (a
/// creation is read the same way; `NewInvoice` says which fields it
/// requires). The camelCase spellings of earlier versions
/// (`amountCents`, `dueAt`) are still read (deprecated).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InvoiceInput {
    pub number: Option<String>,
    pub description: Option<String>,
    #[serde(alias = "amountCents")]
    pub amount_cents: Option<i64>,
    /// ISO 4217, e.g. `USD` (stored upper-case).
    pub currency: Option<String>,
    /// Unix epoch seconds.
    #[serde(alias = "dueAt")]
    pub due_at: Option<i64>,
}

/// What an admin sends to create an invoice: every field but `due_at` is
/// required, and a missing one is refused naming it (`number is
/// required`). The handler reads it as an `InvoiceInput`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct NewInvoice {
    /// 1 to 64 characters, unique for the client.
    number: String,
    /// At most 2000 characters.
    description: String,
    /// A positive number of cents.
    amount_cents: i64,
    /// ISO 4217, e.g. `USD` (stored upper-case).
    currency: String,
    /// Unix epoch seconds.
    due_at: Option<i64>,
}

pub struct Checked {
    pub number: String,
    pub description: String,
    pub amount_cents: i64,
    pub currency: String,
    pub due_at: Option<i64>,
}

fn required<T>(value: Option<T>, field: &str) -> Result<T, ApiError> {
    value.ok_or_else(|| ApiError::validation(field, "is required"))
}

/// Validates a full invoice (create) or `input` laid over `current` (update).
pub fn check(input: InvoiceInput, current: Option<&InvoiceRow>) -> Result<Checked, ApiError> {
    let number = input.number.or(current.map(|c| c.number.clone()));
    let description = input.description.or(current.map(|c| c.description.clone()));
    let amount = input.amount_cents.or(current.map(|c| c.amount_cents));
    let currency = input.currency.or(current.map(|c| c.currency.clone()));
    let number = required(number, "number")?.trim().to_string();
    if number.is_empty() || number.len() > 64 {
        return Err(ApiError::validation("number", "must be 1 to 64 characters"));
    }
    let description = required(description, "description")?.trim().to_string();
    if description.len() > 2000 {
        return Err(ApiError::validation(
            "description",
            "at most 2000 characters",
        ));
    }
    let amount_cents = required(amount, "amount_cents")?;
    if amount_cents <= 0 {
        return Err(ApiError::validation(
            "amount_cents",
            "must be a positive number of cents",
        ));
    }
    let currency = required(currency, "currency")?.trim().to_ascii_uppercase();
    if currency.len() != 3 || !currency.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(ApiError::validation(
            "currency",
            "must be an ISO 4217 code such as USD",
        ));
    }
    let due_at = input.due_at.or(current.and_then(|c| c.due_at));
    if due_at.is_some_and(|d| d < 0) {
        return Err(ApiError::validation("due_at", "must be Unix epoch seconds"));
    }
    Ok(Checked {
        number,
        description,
        amount_cents,
        currency,
        due_at,
    })
}

pub async fn insert(
    db: &Db,
    tenant: &TenantId,
    client_id: &str,
    c: &Checked,
) -> Result<InvoiceRow, ApiError> {
    let _turn = db.write_turn().await;
    let now = now_ms();
    let result = sqlx::query_as(&format!(
        "INSERT INTO invoices (id, tenant_id, client_id, number, description, amount_cents, currency, \
         status, due_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'draft', $8, $9, $9) \
         RETURNING {COLUMNS}"
    ))
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(tenant.as_str())
    .bind(client_id)
    .bind(&c.number)
    .bind(&c.description)
    .bind(c.amount_cents)
    .bind(&c.currency)
    .bind(c.due_at)
    .bind(now)
    .fetch_one(&db.pool)
    .await;
    result.map_err(|err| duplicate_number(err, &c.number))
}

fn duplicate_number(err: sqlx::Error, number: &str) -> ApiError {
    if cairn_core::db::is_unique_violation(&err) {
        ApiError::Conflict(format!("invoice number {number} is already used"))
    } else {
        err.into()
    }
}

/// Changes a draft's fields; other statuses are fixed documents.
pub async fn update(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    input: InvoiceInput,
) -> Result<InvoiceRow, ApiError> {
    let current = get(db, tenant, Reader::Staff { client_id: None }, id)
        .await?
        .ok_or(ApiError::NotFound("invoice"))?;
    if current.status() != InvoiceStatus::Draft {
        return Err(ApiError::Conflict(format!(
            "only draft invoices can be edited; this one is {}",
            current.status
        )));
    }
    let c = check(input, Some(&current))?;
    let _turn = db.write_turn().await;
    let row: Option<InvoiceRow> = sqlx::query_as(&format!(
        "UPDATE invoices SET number = $3, description = $4, amount_cents = $5, currency = $6, due_at = $7, \
         updated_at = $8 WHERE tenant_id = $1 AND id = $2 AND status = 'draft' RETURNING {COLUMNS}"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .bind(&c.number)
    .bind(&c.description)
    .bind(c.amount_cents)
    .bind(&c.currency)
    .bind(c.due_at)
    .bind(now_ms())
    .fetch_optional(&db.pool)
    .await
    .map_err(|err| duplicate_number(err, &c.number))?;
    row.ok_or_else(|| ApiError::Conflict("the invoice changed meanwhile; reload it".into()))
}

/// Moves an invoice along the status machine; the UPDATE re-checks the
/// status it read, so two racing moves cannot both win.
pub async fn transition(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    next: InvoiceStatus,
    paid_at: Option<i64>,
) -> Result<InvoiceRow, ApiError> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let row = transition_in(&mut tx, tenant, id, next, paid_at).await?;
    tx.commit().await?;
    Ok(row)
}

/// [`transition`] inside the caller's transaction, for a move that must
/// commit together with another write (a payment event).
pub async fn transition_in(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    id: &str,
    next: InvoiceStatus,
    paid_at: Option<i64>,
) -> Result<InvoiceRow, ApiError> {
    let current: InvoiceRow = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM invoices WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&mut **tx)
    .await?
    .ok_or(ApiError::NotFound("invoice"))?;
    let from = current.status();
    if !from.can_become(next) {
        return Err(ApiError::Conflict(format!(
            "an invoice that is {} cannot become {}",
            from.as_str(),
            next.as_str()
        )));
    }
    let paid_at = (next == InvoiceStatus::Paid).then(|| paid_at.unwrap_or(now_ms() / 1000));
    let row: Option<InvoiceRow> = sqlx::query_as(&format!(
        "UPDATE invoices SET status = $3, paid_at = COALESCE($4, paid_at), updated_at = $5 \
         WHERE tenant_id = $1 AND id = $2 AND status = $6 RETURNING {COLUMNS}"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .bind(next.as_str())
    .bind(paid_at)
    .bind(now_ms())
    .bind(from.as_str())
    .fetch_optional(&mut **tx)
    .await?;
    row.ok_or_else(|| ApiError::Conflict("the invoice changed meanwhile; reload it".into()))
}

/// Who reads invoices, and so which ones they see.
#[derive(Debug, Clone, Copy)]
pub enum Reader<'a> {
    /// The MSP's staff: every invoice of the tenant, or of one client.
    Staff { client_id: Option<&'a str> },
    /// A client through the portal: its own invoices once sent. Drafts are
    /// the MSP's work in progress and do not exist for the client.
    Client(&'a str),
}

impl<'a> Reader<'a> {
    fn client_id(self) -> Option<&'a str> {
        match self {
            Reader::Staff { client_id } => client_id,
            Reader::Client(id) => Some(id),
        }
    }

    fn hides_drafts(self) -> i64 {
        i64::from(matches!(self, Reader::Client(_)))
    }
}

/// One invoice of the tenant, as `reader` may see it.
pub async fn get(
    db: &Db,
    tenant: &TenantId,
    reader: Reader<'_>,
    id: &str,
) -> sqlx::Result<Option<InvoiceRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM invoices WHERE tenant_id = $1 AND id = $2 \
         AND (CAST($3 AS TEXT) IS NULL OR client_id = $3) \
         AND (CAST($4 AS BIGINT) = 0 OR status <> 'draft')"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .bind(reader.client_id())
    .bind(reader.hides_drafts())
    .fetch_optional(&db.pool)
    .await
}

/// Invoices of the tenant that `reader` may see, newest first.
pub async fn list(db: &Db, tenant: &TenantId, reader: Reader<'_>) -> sqlx::Result<Vec<InvoiceRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM invoices WHERE tenant_id = $1 \
         AND (CAST($2 AS TEXT) IS NULL OR client_id = $2) \
         AND (CAST($3 AS BIGINT) = 0 OR status <> 'draft') ORDER BY created_at DESC, id DESC"
    ))
    .bind(tenant.as_str())
    .bind(reader.client_id())
    .bind(reader.hides_drafts())
    .fetch_all(&db.pool)
    .await
}

/// Stores the hosted payment link the provider made.
pub async fn set_payment_link(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    url: &str,
    session_id: &str,
    expires_at: Option<i64>,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "UPDATE invoices SET payment_url = $3, payment_session_id = $4, payment_expires_at = $5, \
         updated_at = $6 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(url)
    .bind(session_id)
    .bind(expires_at)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::InvoiceStatus::*;

    #[test]
    fn only_the_documented_transitions_are_allowed() {
        let all = [Draft, Sent, Paid, Void];
        let allowed = [(Draft, Sent), (Draft, Void), (Sent, Paid), (Sent, Void)];
        for from in all {
            for to in all {
                assert_eq!(
                    from.can_become(to),
                    allowed.contains(&(from, to)),
                    "{from:?} -> {to:?}"
                );
            }
        }
    }
}
