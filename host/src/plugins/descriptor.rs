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
