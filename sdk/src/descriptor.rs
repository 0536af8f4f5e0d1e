use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a connector tells the host about itself.
///
/// The host mounts everything a descriptor declares under
/// `/api/v1/<area>/...`: the lifecycle routes (`config`, `test-connection`,
/// `sync`, `sync-status`, `stats`), every [`View`] over the declared
/// [`Collection`]s, and every [`Action`] with a path. Nothing else is needed
/// for a new integration: no host change.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Descriptor {
    /// The product's own id, unique among loaded connectors, e.g. `acme-rmm`:
    /// 2 to 40 lower-case letters, digits and inner dashes, starting with a
    /// letter. A tenant picks a connector for an area by this id.
    pub id: String,
    /// The area the connector serves, and its route prefix
    /// (`/api/v1/<area>/...`): one of the spec's neutral names (`edr`,
    /// `mdm`, `directory`, `scanner`, `rmm`, `psa`, `payments`,
    /// `threat-intel`) or a new one (`backup`). Several connectors may serve
    /// one area; each tenant uses one of them. Same rules as `id`.
    pub area: String,
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
    /// A bulk pull a user starts on demand (`POST /api/v1/<area>/bulk-pull`),
    /// never part of a sync; `None` for most connectors. See [`Pull`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull: Option<Pull>,
    /// Hosts this connector may call. `{config.field}` takes the host of a
    /// URL in the config, e.g. `{config.base_url}`.
    pub requested_hosts: Vec<String>,
    /// How the host authenticates outbound calls.
    pub auth: AuthScheme,
    /// The record collections `map_record` fills (by
    /// [`SourceRecord::collection`](crate::SourceRecord::collection)).
    #[serde(default)]
    pub collections: Vec<Collection>,
    /// Read routes over the collections, served by the host from what was
    /// synced (no upstream call).
    #[serde(default)]
    pub views: Vec<View>,
    /// Live actions `invoke` serves.
    #[serde(default)]
    pub actions: Vec<Action>,
    /// At most this many requests of one [`crate::http::send_all`] run at
    /// once (the operator's cap may lower it). Ask for what the upstream's
    /// rate limits allow.
    #[serde(default = "one")]
    pub max_concurrent_requests: u32,
    /// Seeding: when the operator's deployment settings seed no config for
    /// this area, derive one from another area's seed (one app
    /// registration serving two products). `None` for most connectors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_from: Option<ConfigFrom>,
    /// How the upstream signs the webhooks it sends to Cairn, if it sends
    /// any. The host verifies the signature before the body reaches the
    /// component; `None`: the connector takes no webhooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookSignature>,
}

fn one() -> u32 {
    1
}

/// The schema of a config with no fields, the default of
/// [`Descriptor::config_schema`] and of [`Pull::parameters`].
fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// Everything empty but what has a sensible default: an object config
/// schema without fields, no authentication, one request at a time. A
/// connector fills `id`, `area`, `name` and `version` and what it declares,
/// and takes the rest with `..Default::default()`; fields added by later
/// minor SDK releases come with defaults, so such a descriptor keeps
/// compiling.
impl Default for Descriptor {
    fn default() -> Self {
        Descriptor {
            id: String::new(),
            area: String::new(),
            name: String::new(),
            version: String::new(),
            sdk_version: String::new(),
            config_schema: empty_object_schema(),
            secret_fields: vec![],
            streams: vec![],
            pull: None,
            requested_hosts: vec![],
            auth: AuthScheme::None,
            collections: vec![],
            views: vec![],
            actions: vec![],
            max_concurrent_requests: one(),
            config_from: None,
            webhook: None,
        }
    }
}

/// Where a seeded config comes from: another area's seed, copying
/// `fields`, and from `private_key_field` (a PEM bundle) its private-key
/// block only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigFrom {
    pub area: String,
    pub fields: Vec<String>,
    #[serde(default)]
    pub private_key_field: Option<String>,
}

/// A kind of record the connector syncs, stored by the host per tenant and
/// served through [`View`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collection {
    /// Unique within the connector, e.g. `threats`.
    pub name: String,
    /// What the records are. One of the shared record types
    /// (see [`crate::records`]): `device` (joined to the asset view by
    /// device name), `threat`, `app`, `finding`, `user`, `group`, `ticket`;
    /// or a name of the connector's own (`backup_job`).
    pub record_type: String,
    /// The normalized fields a record carries (its `fields` object). List
    /// views filter on them by query parameter (`?status=active`) and
    /// aggregated views group by one.
    pub fields: Vec<Field>,
    /// Fields the list view's `search` parameter looks in (contains,
    /// ignoring case). Empty: device name and key.
    #[serde(default)]
    pub search: Vec<String>,
}

/// One normalized field of a collection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    /// Lower-case letters, digits and underscores, e.g. `classification`.
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: FieldType,
    /// Shown in the OpenAPI document.
    #[serde(default)]
    pub description: String,
}

/// A normalized field's JSON type.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    #[default]
    String,
    Integer,
    Number,
    Boolean,
    /// RFC 3339 text.
    DateTime,
    /// A JSON array of strings; a filter matches when any element equals.
    StringList,
}

/// A read route over a collection, mounted at `/api/v1/<area>/<path>`.
/// Paths are lower-case segments of letters, digits, dashes and inner dots
/// (`export.csv`), and `{name}` parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum View {
    /// `GET <path>?search=&<field>=&limit=&offset=`: the collection's
    /// records, paginated; `search` looks in the collection's search fields,
    /// every other parameter naming a declared field filters on it
    /// (equality, ignoring case).
    List {
        path: String,
        collection: String,
        summary: String,
    },
    /// `GET <path>` with one `{param}`: the record with that key, with its
    /// related records.
    ByKey {
        path: String,
        collection: String,
        summary: String,
        #[serde(default)]
        related: Vec<Related>,
    },
    /// `GET <path>` with one `{param}`: the record whose device name
    /// matches, ignoring case: exactly, by its 15-character NetBIOS form, or
    /// by the short host of an FQDN (`web01` finds `web01.corp.example`).
    ByDeviceName {
        path: String,
        collection: String,
        summary: String,
        #[serde(default)]
        related: Vec<Related>,
    },
    /// `GET <path>`: the collection grouped by the value of `by`, each
    /// group with its record count and distinct device count, most devices
    /// first; `search` filters the groups.
    Aggregate {
        path: String,
        collection: String,
        summary: String,
        by: String,
    },
    /// `GET <path>` with one `{param}`: the records of the collection whose
    /// field `field` equals the parameter, e.g. a ticket's notes at
    /// `tickets/{ticket_id}/notes` (at most 1,000, newest first), as
    /// `{"items", "total"}`.
    Children {
        path: String,
        collection: String,
        summary: String,
        field: String,
    },
    /// `GET <path>?search=&<field>=`: the records a [`View::List`] with the
    /// same parameters would give, all of them, streamed as CSV
    /// (`text/csv`): a header, then one line per record with its key and
    /// the `columns` (declared fields). A cell that a spreadsheet would
    /// read as a formula (starting with `=`, `+`, `-`, `@`, tab or carriage
    /// return) is prefixed with `'`.
    Export {
        path: String,
        collection: String,
        summary: String,
        columns: Vec<String>,
    },
}

/// A bulk pull: a stream the host fetches only when a user asks, as a
/// durable background job with a checkpoint (`POST /api/v1/<area>/bulk-pull`
/// with the parameters, `GET /api/v1/<area>/bulk-pull/status`).
///
/// The host calls [`crate::Connector::fetch`] with `stream` and the tenant's
/// config with the user's parameters merged in (so `config["board_id"]`
/// reads a `board_id` parameter), page by page as in a sync, and maps every
/// record with [`crate::Connector::map_record`]. Unlike a sync, a pull never
/// deletes what it did not see, and a sync never deletes what a pull
/// stored: the records of `collections` are kept until the next pull
/// replaces them or the area's config is removed. A resumed pull starts
/// again from its last written page, so records must have stable keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pull {
    /// The stream `fetch` serves for the pull; not one of `streams`.
    pub stream: String,
    /// Shown in the OpenAPI document.
    pub summary: String,
    /// JSON Schema of the parameters (an object); the host validates the
    /// request body against it and answers 422 naming the field. A
    /// parameter may not be named like a config field: the host refuses a
    /// connector whose pull could replace its config (its hosts, its
    /// credentials).
    pub parameters: Value,
    /// The collections the pull's records go to.
    pub collections: Vec<String>,
}

/// Records of another collection attached to a record in a view, e.g. an
/// agent's threats: the records of `collection` whose field `field` equals
/// the record's key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Related {
    /// The key the related records appear under in the answer.
    pub name: String,
    pub collection: String,
    pub field: String,
}

/// A live action: a call the host forwards to [`crate::Connector::invoke`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// Unique within the connector; what `invoke` receives.
    pub name: String,
    /// `GET`, `POST`, `PUT`, `PATCH` or `DELETE`.
    pub method: String,
    /// The route under the area (`service/tickets/{ticket_id}/notes`); its
    /// `{name}` segments reach `invoke` as path parameters. `None`: the
    /// action is not mounted as a route, only the host calls it (a payment
    /// link for the client portal).
    #[serde(default)]
    pub path: Option<String>,
    pub summary: String,
    /// JSON Schema of the request body; `None`: the action takes no body.
    /// The host validates the body against it and answers 422 naming the
    /// field.
    #[serde(default)]
    pub input_schema: Option<Value>,
    /// JSON Schema of the query parameters, as an object schema whose
    /// properties are the parameters (values are strings unless typed
    /// `integer`, `number` or `boolean`).
    #[serde(default)]
    pub query_schema: Option<Value>,
    /// JSON Schema of the answer, shown in the OpenAPI document.
    #[serde(default)]
    pub output_schema: Option<Value>,
    /// Who may call it: `member` (any member of the tenant) or `admin`
    /// (admins and owners).
    #[serde(default = "member")]
    pub role: String,
}

fn member() -> String {
    "member".into()
}

/// A `GET` for any member, without path, body or schemas.
impl Default for Action {
    fn default() -> Self {
        Action {
            name: String::new(),
            method: "GET".into(),
            path: None,
            summary: String::new(),
            input_schema: None,
            query_schema: None,
            output_schema: None,
            role: member(),
        }
    }
}

/// A pull without parameters (an empty object schema).
impl Default for Pull {
    fn default() -> Self {
        Pull {
            stream: String::new(),
            summary: String::new(),
            parameters: empty_object_schema(),
            collections: vec![],
        }
    }
}

/// Stripe's convention: a five-minute tolerance.
impl Default for WebhookSignature {
    fn default() -> Self {
        WebhookSignature {
            header: String::new(),
            secret_field: String::new(),
            tolerance_secs: 300,
        }
    }
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
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AuthScheme {
    /// No credentials.
    #[default]
    None,
    /// A static header, e.g. `Authorization: ApiToken <token>`.
    StaticHeader {
        header: String,
        /// Text before the secret, e.g. `"ApiToken "`.
        prefix: String,
        secret_field: String,
    },
    /// HTTP Basic: `Authorization: Basic base64(username:password)` from
    /// the two config fields (list `password_field` in `secret_fields`).
    Basic {
        username_field: String,
        password_field: String,
    },
    /// A header built from several config fields, e.g. Tenable's
    /// `X-ApiKeys: accessKey={access_key}; secretKey={secret_key}`: each
    /// `{name}` is replaced by the config field `name`. Every field the
    /// template names is a credential: list it in `secret_fields` too.
    HeaderTemplate { header: String, template: String },
    /// HTTP Basic whose user name is built from config fields, e.g.
    /// ConnectWise PSA's `{company_id}+{public_key}` with the private key as
    /// the password: each `{name}` of `username` is replaced by the config
    /// field `name`. List `password_field` in `secret_fields`.
    BasicTemplate {
        username: String,
        password_field: String,
    },
    /// POST `{base_url}{path}` with a JSON object holding the user name
    /// under `username_key` and the password under `password_key` (and
    /// optionally a client-id header); the answer's `token_key` is sent as
    /// a bearer token until 60 s before the time in `expiry_key` (RFC 3339,
    /// or a date-time without zone taken as UTC); a 401 logs in again once.
    TokenExchange {
        base_url_field: String,
        path: String,
        username_field: String,
        password_field: String,
        client_id_field: Option<String>,
        client_id_header: Option<String>,
        /// The login body's user-name key, e.g. `UserName`.
        username_key: String,
        /// The login body's password key, e.g. `Password`.
        password_key: String,
        /// The answer's token key, e.g. `AccessToken`.
        token_key: String,
        /// The answer's expiry key, e.g. `ExpirationDate`; absent from the
        /// answer: the token is kept for 15 minutes.
        expiry_key: String,
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
    /// OAuth 2.0 client credentials with a client secret, at a token URL the
    /// connector names (SDK 0.4.1), e.g. NinjaOne's
    /// `"{base_url}/ws/oauth/token"`: `{field}` in `token_url` is the config
    /// field's value, and the URL must fall under `requested_hosts`. The
    /// host posts `grant_type=client_credentials`, the client id and secret
    /// and `scope` as a form, sends the answer's `access_token` as
    /// `Authorization: Bearer`, and keeps it for its `expires_in` seconds
    /// (an hour when absent).
    ClientCredentials {
        token_url: String,
        client_id_field: String,
        client_secret_field: String,
        /// Space-separated scopes; empty sends none.
        scope: String,
    },
}

/// What a CSV provider accepts and produces. `Default` gives empty texts
/// and lists and the `software` target.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CsvTarget {
    /// Inventory items, rolled up into Software.
    #[default]
    Software,
    /// Reference records.
    Records,
    /// Device enrichment.
    Device,
    /// User enrichment.
    User,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(webhook: Option<WebhookSignature>) -> Descriptor {
        Descriptor {
            id: "x".into(),
            area: "x".into(),
            name: "X".into(),
            version: "0.1.0".into(),
            sdk_version: String::new(),
            config_schema: Value::Null,
            secret_fields: vec![],
            streams: vec![],
            pull: None,
            requested_hosts: vec![],
            auth: AuthScheme::None,
            collections: vec![],
            views: vec![],
            actions: vec![],
            max_concurrent_requests: 1,
            config_from: None,
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

    /// A descriptor written as `..Default::default()` reads back as the
    /// host reads a JSON descriptor that leaves the same fields out.
    #[test]
    fn defaults_are_what_a_descriptor_without_those_fields_means() {
        let declared = Descriptor {
            id: "acme-backup".into(),
            area: "backup".into(),
            name: "Acme Backup".into(),
            version: "0.1.0".into(),
            actions: vec![Action {
                name: "restore".into(),
                summary: "Restore a device".into(),
                ..Action::default()
            }],
            ..Descriptor::default()
        };
        let json = serde_json::to_value(&declared).unwrap();
        let sparse = serde_json::json!({
            "id": "acme-backup", "area": "backup", "name": "Acme Backup", "version": "0.1.0",
            "config_schema": {"type": "object", "properties": {}}, "secret_fields": [],
            "streams": [], "requested_hosts": [], "auth": {"type": "none"},
            "actions": [{"name": "restore", "method": "GET", "summary": "Restore a device"}],
        });
        let read: Descriptor = serde_json::from_value(sparse).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), json);
        assert_eq!(declared.max_concurrent_requests, 1);
        assert_eq!(declared.actions[0].role, "member");
        assert_eq!(Pull::default().parameters["type"], "object");
        assert_eq!(WebhookSignature::default().tolerance_secs, 300);
        assert_eq!(CsvDescriptor::default().target, CsvTarget::Software);
    }
}
