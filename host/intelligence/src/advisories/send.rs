//! The `advisories_send` job: sends a tenant's pending advisory messages,
//! at most `advisory_mails_per_minute` a minute per process, recording
//! each recipient once the mail server took the message. A recipient is
//! tried up to [`storage::MAX_ATTEMPTS`] times.
//!
//! A process killed between the mail server's answer and the record may
//! send that one message again when the job resumes; every other message
//! goes out once.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use governor::{DefaultDirectRateLimiter, Quota, RateLimiter};

use super::storage::{self, PendingMessage};
use cairn_core::mail::Mailer;
use cairn_core::settings::Settings;
use cairn_jobs::{JobContext, JobFailure, JobHandler};

pub const SEND_KIND: &str = "advisories_send";

/// Messages read per round.
const BATCH: i64 = 50;
/// Pause after a failed attempt, so a mail server's hiccup can pass.
const FAILURE_PAUSE: Duration = Duration::from_secs(1);

pub struct SendHandler {
    mailer: Arc<Mailer>,
    limiter: Arc<DefaultDirectRateLimiter>,
}

impl SendHandler {
    pub fn new(settings: &Settings) -> anyhow::Result<SendHandler> {
        let per_minute =
            NonZeroU32::new(settings.advisory_mails_per_minute.max(1)).unwrap_or(NonZeroU32::MIN);
        Ok(SendHandler {
            mailer: Arc::new(Mailer::from_settings(settings)?),
            limiter: Arc::new(RateLimiter::direct(Quota::per_minute(per_minute))),
        })
    }
}

#[async_trait]
impl JobHandler for SendHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let db = ctx.db();
        let tenant = ctx.tenant_id();
        let mut attempted = 0;
        loop {
            let batch = storage::pending(db, tenant, BATCH).await?;
            if batch.is_empty() {
                return Ok(());
            }
            // The messages known to be waiting: this batch and those done.
            let total = attempted + batch.len() as i64;
            for message in batch {
                self.limiter.until_ready().await;
                let error = match self
                    .mailer
                    .send(&message.email, &message.subject, personal_body(&message))
                    .await
                {
                    Ok(true) => None,
                    Ok(false) => Some("mail is not configured (smtp_host)".to_string()),
                    Err(err) => Some(err.to_string()),
                };
                storage::record_attempt(
                    db,
                    tenant,
                    &message.advisory_id,
                    &message.email,
                    error.as_deref(),
                )
                .await?;
                attempted += 1;
                match error {
                    None => {}
                    Some(reason) => {
                        tracing::warn!(advisory_id = %message.advisory_id, error = %reason, "advisory message not sent");
                        tokio::time::sleep(FAILURE_PAUSE).await;
                    }
                }
                ctx.progress("sending", attempted, total, "mails", &message.advisory_id)
                    .await?;
            }
        }
    }
}

/// The advisory's text with the recipient's own affected devices.
fn personal_body(message: &PendingMessage) -> String {
    let devices = &message.devices;
    let mut body = message.body.clone();
    if !devices.is_empty() {
        body.push_str(&format!(
            "\n\nYour affected device(s): {}\n",
            devices.join(", ")
        ));
    }
    body
}
