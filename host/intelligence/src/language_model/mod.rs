//! An OpenAI-compatible chat completions endpoint, asked for one JSON
//! answer against a schema. News classification and advisory drafts use
//! it when the operator configures one (`model_base_url`, `model_name`,
//! `model_api_key`); every caller has a deterministic fallback, so an
//! absent, slow or confused model never stops a feature.
//!
//! Requests go through the one outbound path (`plugins::outbound`): the
//! endpoint's origin only, the operator's address rule, size and time caps,
//! 429 waits.
//!
//! An OpenAI-compatible chat completions endpoint asked for one JSON answer
//! against a JSON Schema (sent as `response_format: json_schema`, validated
//! on return); every caller has a deterministic fallback. Its requests, like
//! feed fetches, use `Outbound::for_host_feature` (exactly the URL's origin,
//! the operator's address rule and plain-http grants, its bearer only to
//! that origin).

use std::time::Duration;

use serde_json::{json, Value};

use cairn_core::settings::Settings;
use cairn_plugins::outbound::{describe, Outbound};

/// The largest answer read from the endpoint.
const MAX_ANSWER_BYTES: usize = 1024 * 1024;

/// Why the model gave no usable answer.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the model endpoint may not be reached: {0}")]
    Refused(String),
    #[error("the model endpoint failed: {0}")]
    Transport(String),
    #[error("the model endpoint answered {0}")]
    Status(u16),
    #[error("the model's answer is not JSON of the asked shape: {0}")]
    Malformed(String),
}

/// The configured endpoint, with its outbound path built once (a batch
/// classifies hundreds of items through it).
#[derive(Clone)]
pub struct LanguageModel {
    /// The path to `<base>/chat/completions`, or why it may not be reached.
    endpoint: Result<(Outbound, url::Url), String>,
    model: String,
    timeout: Duration,
}

impl LanguageModel {
    /// The endpoint the operator configured, if any.
    pub fn from_settings(settings: &Settings) -> Option<LanguageModel> {
        let base_url = settings.model_base_url.trim().trim_end_matches('/');
        if base_url.is_empty() {
            return None;
        }
        let timeout = Duration::from_secs(settings.model_timeout_secs.max(1));
        let bearer = Some(settings.model_api_key.as_str()).filter(|key| !key.is_empty());
        Some(LanguageModel {
            endpoint: Outbound::for_host_feature(
                settings,
                &format!("{base_url}/chat/completions"),
                bearer,
                timeout,
                MAX_ANSWER_BYTES,
            ),
            model: settings.model_name.clone(),
            timeout,
        })
    }

    /// Asks for a JSON object matching `schema` (named `name` to the
    /// endpoint), with `system` as the instructions and `user` as the
    /// material. The answer is parsed and validated here: a model that
    /// ignores the requested format is an error, never a half-read value.
    pub async fn json_answer(
        &self,
        name: &str,
        system: &str,
        user: &str,
        schema: &Value,
    ) -> Result<Value, ModelError> {
        let (outbound, url) = self
            .endpoint
            .as_ref()
            .map_err(|e| ModelError::Refused(e.clone()))?;
        let request = json!({
            "model": self.model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": name, "strict": true, "schema": schema},
            },
        });
        let headers = [("Content-Type", "application/json")];
        // The whole exchange, 429 waits included, fits the timeout.
        let answer = tokio::time::timeout(
            self.timeout,
            outbound.host_request(
                "language-model",
                "POST",
                url,
                &headers,
                request.to_string().into_bytes(),
            ),
        )
        .await
        .map_err(|_| ModelError::Transport(format!("request timed out after {:?}", self.timeout)))?
        .map_err(|e| ModelError::Transport(describe(&e)))?;
        if !(200..300).contains(&answer.status) {
            return Err(ModelError::Status(answer.status));
        }
        let envelope: Value = serde_json::from_slice(&answer.body)
            .map_err(|e| ModelError::Malformed(format!("envelope: {e}")))?;
        let content = envelope["choices"][0]["message"]["content"]
            .as_str()
            .ok_or_else(|| ModelError::Malformed("no choices[0].message.content".into()))?;
        let value: Value = serde_json::from_str(strip_fence(content))
            .map_err(|e| ModelError::Malformed(format!("content: {e}")))?;
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| ModelError::Malformed(format!("schema: {e}")))?;
        if let Some(error) = validator.iter_errors(&value).next() {
            return Err(ModelError::Malformed(format!(
                "{} at {}",
                error,
                error.instance_path()
            )));
        }
        Ok(value)
    }
}

/// Models sometimes wrap JSON in a Markdown code fence despite the format
/// asked for; the fence is not part of the answer.
fn strip_fence(content: &str) -> &str {
    let trimmed = content.trim();
    trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))
        .map_or(trimmed, str::trim)
}

#[cfg(test)]
mod tests {
    use super::strip_fence;

    #[test]
    fn a_fenced_answer_is_read_without_its_fence() {
        assert_eq!(strip_fence("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(strip_fence("  {\"a\":1} "), "{\"a\":1}");
    }
}
