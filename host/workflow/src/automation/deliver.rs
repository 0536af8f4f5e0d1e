//! Sending the deliveries due for a tenant's findings: tickets through the
//! psa connector of the rule's owner (the tenant, or its partner for a
//! partner's rule), e-mail through the mailer, webhooks through the one
//! outbound path, each attempt counted, retried with backoff and given up
//! (`dead`) after [`MAX_ATTEMPTS`].
//!
//! Exactly once: a delivery is queued in the transaction of the run that
//! caused it, and taken for an attempt by one process at a time. The one
//! window left is a process dying after the upstream accepted and before
//! the outcome is written: the attempt is made again once its lease
//! lapses. A webhook repeats its `X-Cairn-Delivery` id (receivers drop a
//! repeat), and a ticket creation first looks for the ticket it may have
//! opened (by company and CVE in the summary) before opening one.

use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use super::rules::{self, Action};
use super::storage::{self, DeliveryRow, Outcome};
use crate::ticketing;
use cairn_core::db::stored_json;
use cairn_core::ids::TenantId;
use cairn_platform::app::AppState;
use cairn_plugins::outbound::{describe, Outbound};

/// Attempts before a delivery is given up.
pub const MAX_ATTEMPTS: i64 = 5;
/// Actions the rules of one tenant (a partner's, over all its customers)
/// deliver in any hour at most, together.
pub const TENANT_ACTIONS_PER_HOUR: i64 = 1_000;
const HOUR_MS: i64 = 3_600_000;
/// A webhook's answer kept, at most.
const ANSWER_CHARS: usize = 300;

/// Sends what is due for the tenant; how many were delivered.
pub async fn send_due(state: &AppState, tenant: &TenantId) -> anyhow::Result<usize> {
    // An attempt holds its delivery for two job leases: a process that
    // died mid-attempt hands it on about when its job is taken over.
    let lease_ms = 2_000 * state.settings.job_lease_secs.max(1) as i64;
    let mut delivered = 0;
    // Read once per rule, not once per delivery: a run queues several.
    let mut rules_read: std::collections::HashMap<String, Option<rules::StoredRule>> =
        std::collections::HashMap::new();
    for delivery in storage::due(&state.db, tenant, state.clock.now_ms()).await? {
        let now = state.clock.now_ms();
        let owner = TenantId(delivery.owner_id.clone());
        let rule = match rules_read.get(&delivery.rule_id) {
            Some(rule) => rule.clone(),
            None => {
                let rule = rules::get(&state.db, &owner, &delivery.rule_id).await?;
                rules_read.insert(delivery.rule_id.clone(), rule.clone());
                rule
            }
        };
        if rule.is_none() {
            // Deleted since it queued this: nothing to sign a webhook with,
            // and no one asked for it any more.
            if storage::take(&state.db, &delivery, now, lease_ms).await? {
                let answer = "the rule was deleted; not sent";
                let dead = Outcome::Failed {
                    answer,
                    retry_at: None,
                };
                storage::finish(&state.db, &delivery, dead, None, now).await?;
            }
            continue;
        }
        let per_hour = rule
            .as_ref()
            .map_or(i64::MAX, |r| i64::from(r.input.max_actions_per_hour));
        let (by_rule, by_tenant) = storage::delivered_since(
            &state.db,
            &delivery.owner_id,
            &delivery.rule_id,
            now - HOUR_MS,
        )
        .await?;
        if by_rule >= per_hour || by_tenant >= TENANT_ACTIONS_PER_HOUR {
            let why = if by_rule >= per_hour {
                format!("rate-limited: the rule delivered {by_rule} actions in the last hour (limit {per_hour})")
            } else {
                format!("rate-limited: the owner's rules delivered {by_tenant} actions in the last hour (limit {TENANT_ACTIONS_PER_HOUR})")
            };
            if delivery.answer.as_deref() != Some(why.as_str()) {
                let mut line = storage::LogLine::rule("rate_limited", why.clone());
                line.delivery_id = Some(delivery.id.clone());
                storage::log(&state.db, &delivery, now, &line).await?;
            }
            storage::postpone(&state.db, &delivery, now + HOUR_MS / 12, &why).await?;
            continue;
        }
        // Notes and closing need the ticket the creation opened.
        let ticket_id = if matches!(delivery.action.as_str(), "ticket_update" | "ticket_close") {
            match storage::ticket_id(
                &state.db,
                tenant.as_str(),
                &delivery.rule_id,
                &delivery.target,
            )
            .await?
            {
                Some(id) => Some(id),
                None => {
                    let why = "waiting for the ticket's creation to be delivered";
                    storage::postpone(&state.db, &delivery, now + 1_000, why).await?;
                    continue;
                }
            }
        } else {
            None
        };
        if !storage::take(&state.db, &delivery, now, lease_ms).await? {
            continue;
        }
        let attempt = delivery.attempts + 1;
        // Tickets go through the rule owner's psa connector (a partner's,
        // for its customers).
        let sent = send(
            state,
            &owner,
            &delivery,
            rule.as_ref(),
            ticket_id.as_deref(),
            attempt,
        )
        .await;
        let now = state.clock.now_ms();
        match sent {
            Ok((answer, opened)) => {
                storage::finish(
                    &state.db,
                    &delivery,
                    Outcome::Delivered { answer: &answer },
                    opened.as_deref(),
                    now,
                )
                .await?;
                delivered += 1;
            }
            Err(answer) => {
                let retry_at = (attempt < MAX_ATTEMPTS).then(|| {
                    let base = state.settings.automation_retry_ms.max(1) as i64;
                    now + base.saturating_mul(1 << (attempt - 1).min(20))
                });
                storage::finish(
                    &state.db,
                    &delivery,
                    Outcome::Failed {
                        answer: &answer,
                        retry_at,
                    },
                    None,
                    now,
                )
                .await?;
            }
        }
    }
    Ok(delivered)
}

/// One attempt: the upstream's answer, and a ticket's id when one was
/// opened; `Err` with the answer or failure as a sentence.
async fn send(
    state: &AppState,
    owner: &TenantId,
    delivery: &DeliveryRow,
    rule: Option<&rules::StoredRule>,
    ticket_id: Option<&str>,
    attempt: i64,
) -> Result<(String, Option<String>), String> {
    let payload: Value = stored_json("payload", &delivery.payload).map_err(|e| e.to_string())?;
    match delivery.action.as_str() {
        "ticket_create" => {
            // An earlier attempt may have opened it before dying.
            if attempt > 1 {
                if let Some(found) = ticketing::find_open_ticket(
                    state,
                    owner,
                    payload["company_id"].as_u64().unwrap_or(0),
                    &delivery.target,
                )
                .await
                .map_err(|e| e.to_string())?
                {
                    return Ok((format!("ticket {found} found open upstream"), Some(found)));
                }
            }
            let id = ticketing::open_ticket(
                state,
                owner,
                &ticketing::NewTicket {
                    company_id: payload["company_id"].as_u64().unwrap_or(0),
                    board_id: payload["board_id"].as_u64(),
                    priority_id: payload["priority_id"].as_u64(),
                    summary: payload["summary"].as_str().unwrap_or(""),
                    description: payload["description"].as_str().unwrap_or(""),
                },
            )
            .await
            .map_err(|e| e.to_string())?;
            Ok((format!("ticket {id} opened"), Some(id)))
        }
        "ticket_update" | "ticket_close" => {
            let ticket_id = ticket_id.unwrap_or_default();
            let text = payload["text"].as_str().unwrap_or("");
            let close = delivery.action == "ticket_close";
            ticketing::add_note(state, owner, ticket_id, text, close)
                .await
                .map_err(|e| e.to_string())?;
            if let (true, Some(status)) = (close, payload["close_status_id"].as_u64()) {
                ticketing::set_status(state, owner, ticket_id, status)
                    .await
                    .map_err(|e| e.to_string())?;
                return Ok((format!("ticket {ticket_id} closed (status {status})"), None));
            }
            Ok((format!("note added to ticket {ticket_id}"), None))
        }
        "email" => {
            if !state.mailer.enabled() {
                return Err("no SMTP server is configured (CAIRN_SMTP_HOST)".into());
            }
            let subject = payload["subject"].as_str().unwrap_or("[Cairn]");
            let body = payload["body"].as_str().unwrap_or("").to_string();
            // One message for every address: a run is one e-mail.
            let to: Vec<&str> = payload["to"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            state
                .mailer
                .send_to_all(&to, subject, body)
                .await
                .map_err(|e| format!("mail to {} failed: {e}", to.join(", ")))?;
            Ok((format!("sent to {}", to.join(", ")), None))
        }
        "webhook" => {
            let secret = rule.and_then(|r| {
                r.input.actions.iter().find_map(|a| match a {
                    Action::Webhook {
                        url,
                        secret: Some(sealed),
                        ..
                    } if *url == delivery.target => state.secrets.open(sealed).ok(),
                    _ => None,
                })
            });
            post_webhook(state, delivery, &payload["body"], secret.as_deref()).await
        }
        other => Err(format!("unknown action {other}")),
    }
}

/// The signature header's value: `t=<unix seconds>,v1=<hex HMAC-SHA256 of
/// "<t>.<body>" under the secret>`.
pub fn signature(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!(
        "t={timestamp},v1={}",
        hex::encode(mac.finalize().into_bytes())
    )
}

async fn post_webhook(
    state: &AppState,
    delivery: &DeliveryRow,
    body: &Value,
    secret: Option<&str>,
) -> Result<(String, Option<String>), String> {
    let (outbound, url) = Outbound::for_host_feature(
        &state.settings,
        &delivery.target,
        None,
        Duration::from_secs(15),
        64 * 1024,
    )?;
    let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
    let timestamp = state.clock.now_ms() / 1000;
    let signed = secret.map(|s| signature(s, timestamp, &bytes));
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("X-Cairn-Delivery", delivery.id.as_str()),
        ("X-Cairn-Event", "automation.fired"),
        ("User-Agent", "Cairn-Automation/1"),
    ];
    if let Some(signed) = &signed {
        headers.push(("X-Cairn-Signature", signed.as_str()));
    }
    let answer = outbound
        .host_request("automation webhook", "POST", &url, &headers, bytes)
        .await
        .map_err(|e| describe(&e))?;
    let text: String = String::from_utf8_lossy(&answer.body)
        .chars()
        .take(ANSWER_CHARS)
        .collect();
    let said = if text.trim().is_empty() {
        format!("HTTP {}", answer.status)
    } else {
        format!("HTTP {}: {}", answer.status, text.trim())
    };
    if (200..300).contains(&answer.status) {
        Ok((said, None))
    } else {
        Err(said)
    }
}
