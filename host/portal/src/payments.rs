//! Paying invoices through a payments connector: hosted checkout links on
//! request, and the provider's signed webhook marking invoices paid.
//!
//! The connector knows the provider's API and event shapes; the host keeps
//! the secrets, so it verifies webhook signatures itself, by the scheme the
//! connector's descriptor declares.

use hmac::{Hmac, Mac};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Sha256;

use super::invoices::{self, InvoiceRow, InvoiceStatus};
use cairn_core::db::now_ms;
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;
use cairn_integrations::{areas, call_error};
use cairn_platform::app::AppState;
use cairn_plugins::{ActionCall, CallScope, WebhookSignature};

/// The integration that takes payments.
pub const PAYMENTS: &str = "payments";

/// A stored link is handed out again while it has at least this long left.
const LINK_REUSE_MARGIN_SECS: i64 = 60;

#[derive(Deserialize)]
struct Checkout {
    session_id: String,
    url: String,
    expires_at: Option<i64>,
}

/// The hosted payment link of a sent invoice: the stored one while it is
/// valid, else a new checkout session from the payments connector.
pub async fn payment_link(
    state: &AppState,
    tenant: &TenantId,
    invoice: InvoiceRow,
) -> Result<String, ApiError> {
    if invoice.status() != InvoiceStatus::Sent {
        return Err(ApiError::Conflict(format!(
            "only sent invoices can be paid; this one is {}",
            invoice.status
        )));
    }
    let now = now_ms() / 1000;
    if let (Some(url), Some(expires)) = (&invoice.payment_url, invoice.payment_expires_at) {
        if expires - LINK_REUSE_MARGIN_SECS > now {
            return Ok(url.clone());
        }
    }
    let input = json!({
        "invoice_id": invoice.id,
        "number": invoice.number,
        "description": invoice.description,
        "amount_cents": invoice.amount_cents,
        "currency": invoice.currency,
    });
    let call = ActionCall::with_body("create_checkout", input);
    let answer = areas::invoke(state, tenant, PAYMENTS, &call)
        .await
        .map_err(|err| match err {
            // Not configured, or no payments connector loaded: the client
            // sees that paying online is not offered, not the area's name.
            ApiError::Conflict(_) | ApiError::NotFound(_) => {
                ApiError::Conflict("online payment is not set up for this invoice's issuer".into())
            }
            other => other,
        })?;
    let checkout: Checkout = serde_json::from_value(answer)
        .map_err(|e| ApiError::Upstream(format!("the payments connector answered oddly: {e}")))?;
    invoices::set_payment_link(
        &state.db,
        tenant,
        &invoice.id,
        &checkout.url,
        &checkout.session_id,
        checkout.expires_at,
    )
    .await?;
    Ok(checkout.url)
}

/// Checks a `t=<secs>,v1=<hex>` signature header over `body` at `now`.
pub fn verify_signature(
    scheme: &WebhookSignature,
    secret: &str,
    header: &str,
    body: &[u8],
    now: i64,
) -> Result<(), &'static str> {
    let mut timestamp = None;
    let mut signatures = vec![];
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", t)) => timestamp = t.parse::<i64>().ok(),
            Some(("v1", v)) => signatures.extend(hex::decode(v).ok()),
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or("the signature has no timestamp")?;
    if (now - timestamp).unsigned_abs() > scheme.tolerance_secs {
        return Err("the signature's timestamp is outside the tolerance");
    }
    let valid = signatures.iter().any(|signature| {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        mac.verify_slice(signature).is_ok()
    });
    valid.then_some(()).ok_or("the signature does not match")
}

#[derive(Deserialize)]
struct ParsedEvent {
    event_id: String,
    invoice_id: Option<String>,
    paid_at: Option<i64>,
    #[serde(default)]
    ignored: bool,
}

/// What a webhook delivery did.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct WebhookOutcome {
    pub received: bool,
    /// `paid` when an invoice was marked paid; `duplicate` for an event seen
    /// before; `ignored` for events that change nothing here.
    pub result: &'static str,
}

/// Verifies and applies one webhook delivery for `tenant`.
pub async fn receive_webhook(
    state: &AppState,
    integration: &str,
    tenant: &TenantId,
    headers: &axum::http::HeaderMap,
    body: &[u8],
) -> Result<WebhookOutcome, ApiError> {
    let (connector, config) = areas::tenant_connector(
        &state.db,
        &state.secrets,
        &state.plugins(),
        tenant,
        integration,
    )
    .await
    .ok()
    .flatten()
    .ok_or(ApiError::NotFound("webhook"))?;
    let scheme = connector
        .descriptor
        .webhook
        .clone()
        .ok_or(ApiError::NotFound("webhook"))?;
    let signature = headers
        .get(scheme.header.as_str())
        .and_then(|v| v.to_str().ok());
    let secret = config
        .secrets
        .get(&scheme.secret_field)
        .and_then(Value::as_str)
        // Without a signing secret the tenant takes no webhooks: to the
        // (unauthenticated) sender that is no endpoint at all.
        .ok_or(ApiError::NotFound("webhook"))?;
    let header = signature
        .ok_or_else(|| ApiError::BadRequest(format!("missing {} header", scheme.header)))?;
    verify_signature(&scheme, secret, header, body, now_ms() / 1000)
        .map_err(|why| ApiError::BadRequest(format!("webhook refused: {why}")))?;
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::BadRequest("the body is not UTF-8".into()))?;
    let scope = CallScope {
        plugin: connector.descriptor.id.clone(),
        tenant_id: Some(tenant.as_str().to_string()),
        job_id: None,
    };
    let parsed = state
        .plugins()
        .invoke(
            &connector,
            scope,
            &config.full(),
            &ActionCall::with_body("parse_webhook", json!({"body": text})),
        )
        .await
        .map_err(call_error)?;
    let event: ParsedEvent = serde_json::from_value(parsed)
        .map_err(|e| ApiError::Upstream(format!("the payments connector answered oddly: {e}")))?;
    if event.ignored {
        return Ok(WebhookOutcome {
            received: true,
            result: "ignored",
        });
    }
    let Some(invoice_id) = event.invoice_id else {
        return Ok(WebhookOutcome {
            received: true,
            result: "ignored",
        });
    };
    // The event and the invoice's move commit together: a crash between
    // them can neither mark the event seen with the invoice unpaid nor
    // the other way round.
    let _turn = state.db.write_turn().await;
    let mut tx = state.db.pool.begin().await?;
    let recorded = sqlx::query(
        "INSERT INTO payment_events (tenant_id, event_id, received_at) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id, event_id) DO NOTHING",
    )
    .bind(tenant.as_str())
    .bind(&event.event_id)
    .bind(now_ms())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if recorded == 0 {
        return Ok(WebhookOutcome {
            received: true,
            result: "duplicate",
        });
    }
    let result = match invoices::transition_in(
        &mut tx,
        tenant,
        &invoice_id,
        InvoiceStatus::Paid,
        event.paid_at,
    )
    .await
    {
        Ok(_) => "paid",
        // Already paid or void, or not ours: nothing to change, and the
        // provider must not retry.
        Err(ApiError::Conflict(_) | ApiError::NotFound(_)) => "ignored",
        // Nothing commits; the provider's retry tries again.
        Err(err) => return Err(err),
    };
    tx.commit().await?;
    Ok(WebhookOutcome {
        received: true,
        result,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, t: i64, body: &str) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{t}.{body}").as_bytes());
        format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
    }

    #[test]
    fn signatures_are_checked_for_key_body_and_age() {
        let scheme = WebhookSignature {
            header: "Webhook-Signature".into(),
            secret_field: "webhook_secret".into(),
            tolerance_secs: 300,
        };
        let header = sign("whsec", 1000, "{}");
        assert!(verify_signature(&scheme, "whsec", &header, b"{}", 1100).is_ok());
        assert!(verify_signature(&scheme, "other", &header, b"{}", 1100).is_err());
        assert!(verify_signature(&scheme, "whsec", &header, b"{ }", 1100).is_err());
        assert!(verify_signature(&scheme, "whsec", &header, b"{}", 1400).is_err());
        assert!(verify_signature(&scheme, "whsec", "v1=00", b"{}", 1000).is_err());
        let rotated = format!("{header},v1=deadbeef");
        assert!(verify_signature(&scheme, "whsec", &rotated, b"{}", 1000).is_ok());
    }
}
