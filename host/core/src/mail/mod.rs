//! Outbound mail over SMTP (lettre). Without an SMTP host, messages are not
//! sent and callers log what a person needs instead.

use lettre::message::header::ContentType;
use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};

use crate::settings::Settings;

pub enum Mailer {
    Disabled,
    Smtp(Box<SmtpMailer>),
}

pub struct SmtpMailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("invalid address: {0}")]
    Address(String),
    #[error("building message: {0}")]
    Build(#[from] lettre::error::Error),
    #[error("SMTP: {0}")]
    Smtp(#[from] lettre::transport::smtp::Error),
}

impl Mailer {
    pub fn from_settings(settings: &Settings) -> anyhow::Result<Mailer> {
        if !settings.smtp_enabled() {
            return Ok(Mailer::Disabled);
        }
        let host = settings.smtp_host.as_str();
        let builder = match settings.smtp_security.as_str() {
            "tls" => AsyncSmtpTransport::<Tokio1Executor>::relay(host)?,
            "starttls" => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host)?,
            "none" => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host),
            other => anyhow::bail!("smtp_security must be tls, starttls or none, not {other}"),
        };
        let mut builder = builder.port(settings.smtp_port);
        if !settings.smtp_username.is_empty() {
            builder = builder.credentials(Credentials::new(
                settings.smtp_username.clone(),
                settings.smtp_password.clone(),
            ));
        }
        let from = settings
            .smtp_from
            .parse()
            .map_err(|_| anyhow::anyhow!("smtp_from is not a mailbox: {}", settings.smtp_from))?;
        Ok(Mailer::Smtp(Box::new(SmtpMailer {
            transport: builder.build(),
            from,
        })))
    }

    pub fn enabled(&self) -> bool {
        matches!(self, Mailer::Smtp(_))
    }

    /// Sends a plain-text message. `Ok(false)` when mail is disabled.
    pub async fn send(&self, to: &str, subject: &str, body: String) -> Result<bool, MailError> {
        self.send_to_all(&[to], subject, body).await
    }

    /// Sends one plain-text message to every address in `to` (one message,
    /// each address a recipient). `Ok(false)` when mail is disabled.
    pub async fn send_to_all(
        &self,
        to: &[&str],
        subject: &str,
        body: String,
    ) -> Result<bool, MailError> {
        let Mailer::Smtp(smtp) = self else {
            return Ok(false);
        };
        let mut message = Message::builder().from(smtp.from.clone());
        for address in to {
            let mailbox: Mailbox = address
                .parse()
                .map_err(|_| MailError::Address(address.to_string()))?;
            message = message.to(mailbox);
        }
        let message = message
            .subject(subject)
            .header(ContentType::TEXT_PLAIN)
            .body(body)?;
        smtp.transport.send(message).await?;
        Ok(true)
    }
}
