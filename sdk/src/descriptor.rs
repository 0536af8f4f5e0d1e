use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a connector tells the host about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Descriptor {
    /// Unique id; also the route prefix (`/api/v1/<id>/...`), e.g. `rmm`.
    pub id: String,
    /// Human name of the upstream product.
    pub name: String,
    /// The connector's own version.
    pub version: String,
    /// Set by the SDK; do not fill in.
    #[serde(default)]
    pub sdk_version: String,
    /// JSON Schema of the config object the tenant stores.
    pub config_schema: Value,
    /// Config fields that are secrets: encrypted at rest, redacted on read,
    /// never passed to the component.
    pub secret_fields: Vec<String>,
    /// Streams `fetch` serves, synced in this order.
    pub streams: Vec<String>,
    /// Hosts this connector may call. `{config.field}` takes the host of a
    /// URL in the config, e.g. `{config.base_url}`.
    pub requested_hosts: Vec<String>,
    /// How the host authenticates outbound calls.
    pub auth: AuthScheme,
    /// Live actions `invoke` supports.
    #[serde(default)]
    pub actions: Vec<String>,
    /// How the upstream signs the webhooks it sends to Cairn, if it sends
    /// any. The host verifies the signature before the body reaches the
    /// component; `None`: the connector takes no webhooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookSignature>,
}

/// A webhook signature in the "timestamped HMAC-SHA256" style (as Stripe
/// signs its events).
///
/// The upstream sends a header (named by [`header`](Self::header)) whose
/// value is a comma-separated list of `key=value` pairs:
///
/// ```text
/// t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=<hex HMAC-SHA256>...]
/// ```
///
/// Each `v1` is the hex HMAC-SHA256, keyed with the tenant's
/// config field [`secret_field`](Self::secret_field), of the string
/// `"{t}.{raw body}"` (the timestamp, a dot, then the request body exactly
/// as received). Several `v1` values may be present (for example while the
/// upstream rotates its secret); one matching is enough. Other keys are
/// ignored.
///
/// The **host** verifies the signature before any component sees the
/// body: the secret is a config secret and never enters a component. It
/// rejects a request without the header, without a matching `v1`, or whose
/// `t` is more than [`tolerance_secs`](Self::tolerance_secs) away from its
/// clock, older or newer (replay protection).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookSignature {
    /// The request header carrying the signature, e.g. `Stripe-Signature`
    /// (matched ignoring case).
    pub header: String,
    /// The config field holding the signing secret; list it in
    /// [`Descriptor::secret_fields`] too.
    pub secret_field: String,
    /// The largest accepted distance of `t` from the host's clock, in
    /// seconds (Stripe uses 300).
    pub tolerance_secs: u64,
}

/// How the host attaches credentials to the component's requests.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AuthScheme {
    /// No credentials.
    None,
    /// A static header, e.g. `Authorization: ApiToken <token>`.
    StaticHeader {
        header: String,
        /// Text before the secret, e.g. `"ApiToken "`.
        prefix: String,
        secret_field: String,
    },
    /// POST `{base_url}{path}` with `{UserName, Password}` (and optionally a
    /// client-id header); the response's `AccessToken` is sent as a bearer
    /// token until 60 s before `ExpirationDate`; a 401 re-logs in once.
    TokenExchange {
        base_url_field: String,
        path: String,
        username_field: String,
        password_field: String,
        client_id_field: Option<String>,
        client_id_header: Option<String>,
    },
    /// OAuth 2.0 client credentials against `{auth_url}/<tenant>/oauth2/v2.0/token`
    /// with a client secret or a certificate (JWT client assertion).
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

/// What a CSV provider accepts and produces.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CsvDescriptor {
    /// Unique key; the route segment of `/api/v1/csv-sources/{key}` and the
    /// `source` of the rows it writes.
    pub key: String,
    pub name: String,
    pub category: String,
    pub target: CsvTarget,
    /// Set by the SDK; do not fill in.
    #[serde(default)]
    pub sdk_version: String,
    /// Canonical columns that identify the header row: the first row in
    /// which every one of them is found (by its name or an alias, ignoring
    /// case, spaces and punctuation) is the header; rows before it are
    /// preamble (report titles, dates, blank lines).
    pub header_signals: Vec<String>,
    /// Canonical column name -> the other header spellings it accepts.
    /// Matching ignores case, spaces and punctuation, so `"Device Name"`,
    /// `"device_name"` and `"DEVICE-NAME"` are one spelling. Data rows reach
    /// [`crate::CsvProvider::map_row`] keyed by canonical name.
    pub column_aliases: Vec<(String, Vec<String>)>,
}

/// Where a CSV provider's rows go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CsvTarget {
    /// Inventory items, rolled up into Software.
    Software,
    /// Reference records.
    Records,
    /// Device enrichment.
    Device,
    /// User enrichment.
    User,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(webhook: Option<WebhookSignature>) -> Descriptor {
        Descriptor {
            id: "x".into(),
            name: "X".into(),
            version: "0.1.0".into(),
            sdk_version: String::new(),
            config_schema: Value::Null,
            secret_fields: vec![],
            streams: vec![],
            requested_hosts: vec![],
            auth: AuthScheme::None,
            actions: vec![],
            webhook,
        }
    }

    #[test]
    fn webhook_is_omitted_when_absent_and_defaults_to_none() {
        let json = serde_json::to_value(descriptor(None)).unwrap();
        assert!(json.get("webhook").is_none());
        let back: Descriptor = serde_json::from_value(json).unwrap();
        assert!(back.webhook.is_none());
    }

    #[test]
    fn webhook_round_trips() {
        let signature = WebhookSignature {
            header: "Stripe-Signature".into(),
            secret_field: "webhook_secret".into(),
            tolerance_secs: 300,
        };
        let json = serde_json::to_value(descriptor(Some(signature.clone()))).unwrap();
        assert_eq!(
            json["webhook"],
            serde_json::json!({"header": "Stripe-Signature", "secret_field": "webhook_secret", "tolerance_secs": 300})
        );
        let back: Descriptor = serde_json::from_value(json).unwrap();
        assert_eq!(back.webhook, Some(signature));
    }
}

/// Builds [`CsvDescriptor::column_aliases`] from string literals:
/// `column_aliases(&[("device_name", &["hostname", "computer"])])`.
pub fn column_aliases(list: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    list.iter()
        .map(|(column, spellings)| {
            (
                column.to_string(),
                spellings.iter().map(|s| s.to_string()).collect(),
            )
        })
        .collect()
}
