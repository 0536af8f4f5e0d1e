//! The host's reading of plugin descriptors (the JSON `describe` returns).
//! Mirrors the SDK's types; the host does not depend on the SDK crate.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectorDescriptor {
    pub id: String,
    pub name: String,
    pub version: String,
    pub sdk_version: String,
    #[schema(value_type = Object)]
    pub config_schema: Value,
    pub secret_fields: Vec<String>,
    pub streams: Vec<String>,
    pub requested_hosts: Vec<String>,
    pub auth: AuthScheme,
    #[serde(default)]
    pub actions: Vec<String>,
    /// How the provider signs the webhooks it sends, when it sends any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookSignature>,
}

/// Timestamped HMAC-SHA256 webhook signatures (`t=<secs>,v1=<hex>` over
/// `"{t}.{body}"`), verified by the host with the config secret
/// `secret_field`; older than `tolerance_secs` is refused.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookSignature {
    pub header: String,
    pub secret_field: String,
    pub tolerance_secs: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AuthScheme {
    None,
    StaticHeader {
        header: String,
        prefix: String,
        secret_field: String,
    },
    TokenExchange {
        base_url_field: String,
        path: String,
        username_field: String,
        password_field: String,
        client_id_field: Option<String>,
        client_id_header: Option<String>,
    },
    OauthClientCredentials {
        auth_url_field: String,
        tenant_field: String,
        client_id_field: String,
        client_secret_field: Option<String>,
        thumbprint_field: Option<String>,
        private_key_field: Option<String>,
        scope: String,
    },
}

impl ConnectorDescriptor {
    /// Config fields the auth scheme and the webhook check read as secrets;
    /// each must be declared in `secret_fields`, or it would be stored in
    /// clear, read back and handed to the component.
    pub fn credential_fields(&self) -> Vec<&str> {
        let mut fields: Vec<&str> = match &self.auth {
            AuthScheme::None => vec![],
            AuthScheme::StaticHeader { secret_field, .. } => vec![secret_field],
            AuthScheme::TokenExchange { password_field, .. } => vec![password_field],
            AuthScheme::OauthClientCredentials {
                client_secret_field,
                private_key_field,
                ..
            } => client_secret_field
                .iter()
                .chain(private_key_field)
                .map(String::as_str)
                .collect(),
        };
        fields.extend(self.webhook.iter().map(|w| w.secret_field.as_str()));
        fields
    }

    /// `Err` naming the first credential field not declared secret.
    pub fn check_secret_fields(&self) -> Result<(), String> {
        match self
            .credential_fields()
            .into_iter()
            .find(|f| !self.secret_fields.iter().any(|s| s == f))
        {
            Some(field) => Err(format!(
                "config field {field} holds a credential but is not in secret_fields"
            )),
            None => Ok(()),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct CsvDescriptor {
    pub key: String,
    pub name: String,
    pub category: String,
    pub target: String,
    pub sdk_version: String,
    pub header_signals: Vec<String>,
    pub column_aliases: Vec<(String, Vec<String>)>,
}

/// True when `version` (the component's `cairn-sdk` version) is one this
/// host supports.
pub fn sdk_supported(version: &str) -> bool {
    let major_minor: String = version.split('.').take(2).collect::<Vec<_>>().join(".");
    super::SUPPORTED_SDK.contains(&major_minor.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(secret_fields: &[&str], webhook_secret: Option<&str>) -> ConnectorDescriptor {
        serde_json::from_value(serde_json::json!({
            "id": "acme", "name": "Acme", "version": "0.1.0", "sdk_version": "0.1.0",
            "config_schema": {}, "secret_fields": secret_fields, "streams": [],
            "requested_hosts": ["{config.base_url}"],
            "auth": {"type": "token_exchange", "base_url_field": "base_url", "path": "/login",
                     "username_field": "username", "password_field": "password"},
            "webhook": webhook_secret.map(|f| serde_json::json!(
                {"header": "Sig", "secret_field": f, "tolerance_secs": 300})),
        }))
        .unwrap()
    }

    #[test]
    fn credential_fields_must_be_declared_secret() {
        assert!(descriptor(&["password"], None)
            .check_secret_fields()
            .is_ok());
        let err = descriptor(&[], None).check_secret_fields().unwrap_err();
        assert!(err.contains("password"), "{err}");
        let err = descriptor(&["password"], Some("hook_secret"))
            .check_secret_fields()
            .unwrap_err();
        assert!(err.contains("hook_secret"), "{err}");
        assert!(
            descriptor(&["password", "hook_secret"], Some("hook_secret"))
                .check_secret_fields()
                .is_ok()
        );
    }
}
