//! The host's reading of plugin descriptors (the JSON `describe` returns).
//! Mirrors the SDK's types; the host does not depend on the SDK crate.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// A connector's descriptor in the v0.2 shape (a v0.1 descriptor is
/// upgraded to it when the connector loads).
// The upgrade: `v01::upgrade_descriptor`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ConnectorDescriptor {
    /// The product's id, unique among loaded connectors.
    pub id: String,
    /// The area it serves: its routes are `/api/v1/<area>/...`.
    pub area: String,
    pub name: String,
    pub version: String,
    pub sdk_version: String,
    #[schema(value_type = Object)]
    pub config_schema: Value,
    pub secret_fields: Vec<String>,
    pub streams: Vec<String>,
    /// A bulk pull users start on demand, never part of a sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull: Option<Pull>,
    pub requested_hosts: Vec<String>,
    pub auth: AuthScheme,
    #[serde(default)]
    pub collections: Vec<Collection>,
    #[serde(default)]
    pub views: Vec<View>,
    #[serde(default)]
    pub actions: Vec<Action>,
    #[serde(default = "one")]
    pub max_concurrent_requests: u32,
    /// Seeding: derive this area's config from another area's seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_from: Option<ConfigFrom>,
    /// How the provider signs the webhooks it sends, when it sends any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookSignature>,
    /// Remediation actions on a device (contract 0.4).
    #[serde(default)]
    pub remediations: Vec<Remediation>,
}

/// What a remediation does, so a plan can choose one for a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RemediationKind {
    UpdatePackage,
    InstallPackage,
    RunScript,
    Reboot,
}

impl RemediationKind {
    /// Whether it fixes vulnerable software by bringing it to a version.
    pub fn moves_software(self) -> bool {
        matches!(
            self,
            RemediationKind::UpdatePackage | RemediationKind::InstallPackage
        )
    }
}

/// A remediation action a connector declares (SDK 0.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Remediation {
    pub name: String,
    pub kind: RemediationKind,
    pub summary: String,
    /// JSON Schema of the inputs; the host checks a plan's inputs against it.
    #[schema(value_type = Object)]
    pub input_schema: Value,
}

fn one() -> u32 {
    1
}

/// A connector's config derived, at seeding, from another area's seed: the
/// named fields copied, and the private-key block of a PEM bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ConfigFrom {
    pub area: String,
    pub fields: Vec<String>,
    #[serde(default)]
    pub private_key_field: Option<String>,
}

/// A stream fetched only when a user starts a bulk pull, with parameters
/// merged into the config; its collections are never pruned by a sync.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Pull {
    pub stream: String,
    pub summary: String,
    #[schema(value_type = Object)]
    pub parameters: Value,
    pub collections: Vec<String>,
}

/// A kind of record a connector syncs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Collection {
    pub name: String,
    /// `device`, `threat`, `app`, `finding`, `user`, `group`, `ticket`, or
    /// the connector's own.
    pub record_type: String,
    pub fields: Vec<Field>,
    #[serde(default)]
    pub search: Vec<String>,
}

impl Collection {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Field {
    pub name: String,
    #[serde(rename = "type")]
    pub field_type: FieldType,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FieldType {
    String,
    Integer,
    Number,
    Boolean,
    DateTime,
    StringList,
}

/// A read route over a collection, served from what was synced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum View {
    List {
        path: String,
        collection: String,
        summary: String,
    },
    ByKey {
        path: String,
        collection: String,
        summary: String,
        #[serde(default)]
        related: Vec<Related>,
    },
    ByDeviceName {
        path: String,
        collection: String,
        summary: String,
        #[serde(default)]
        related: Vec<Related>,
    },
    Aggregate {
        path: String,
        collection: String,
        summary: String,
        by: String,
    },
    /// The records whose field `field` equals the path parameter.
    Children {
        path: String,
        collection: String,
        summary: String,
        field: String,
    },
    /// What a `List` would give, all of it, streamed as CSV.
    Export {
        path: String,
        collection: String,
        summary: String,
        columns: Vec<String>,
    },
}

impl View {
    pub fn path(&self) -> &str {
        match self {
            View::List { path, .. }
            | View::ByKey { path, .. }
            | View::ByDeviceName { path, .. }
            | View::Aggregate { path, .. }
            | View::Children { path, .. }
            | View::Export { path, .. } => path,
        }
    }

    pub fn collection(&self) -> &str {
        match self {
            View::List { collection, .. }
            | View::ByKey { collection, .. }
            | View::ByDeviceName { collection, .. }
            | View::Aggregate { collection, .. }
            | View::Children { collection, .. }
            | View::Export { collection, .. } => collection,
        }
    }

    pub fn summary(&self) -> &str {
        match self {
            View::List { summary, .. }
            | View::ByKey { summary, .. }
            | View::ByDeviceName { summary, .. }
            | View::Aggregate { summary, .. }
            | View::Children { summary, .. }
            | View::Export { summary, .. } => summary,
        }
    }

    fn related(&self) -> &[Related] {
        match self {
            View::ByKey { related, .. } | View::ByDeviceName { related, .. } => related,
            _ => &[],
        }
    }

    /// How many `{param}` segments the view's kind takes.
    fn params_wanted(&self) -> usize {
        match self {
            View::ByKey { .. } | View::ByDeviceName { .. } | View::Children { .. } => 1,
            View::List { .. } | View::Aggregate { .. } | View::Export { .. } => 0,
        }
    }
}

/// Records of another collection whose `field` equals the record's key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Related {
    pub name: String,
    pub collection: String,
    pub field: String,
}

/// The roles an action may require of its caller.
pub const ACTION_ROLES: [&str; 2] = ["member", "admin"];

/// A live action `invoke` serves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Action {
    pub name: String,
    pub method: String,
    /// The route under the area; `None`: only the host calls it.
    #[serde(default)]
    pub path: Option<String>,
    pub summary: String,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub input_schema: Option<Value>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub query_schema: Option<Value>,
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub output_schema: Option<Value>,
    /// `member` or `admin`.
    #[serde(default = "member")]
    pub role: String,
}

fn member() -> String {
    "member".into()
}

impl Action {
    pub fn admin_only(&self) -> bool {
        self.role == "admin"
    }
}

/// Methods an action may declare.
pub const ACTION_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];

/// Routes the host serves itself under one area (a feature joining the
/// area to Cairn's own data), as (area, method, path): a connector of that
/// area may not declare them.
pub const HOST_AREA_ROUTES: &[(&str, &str, &str)] = &[
    ("scanner", "POST", "research-finding"),
    ("psa", "POST", "tickets/from-vuln"),
    ("psa", "GET", "service/tickets/{ticket_id}/context"),
    ("psa", "GET", "service/tickets/{ticket_id}/full"),
];

/// Paths the lifecycle routes take under every area.
pub const LIFECYCLE_PATHS: &[&str] = &[
    "config",
    "auto-config",
    "test-connection",
    "sync",
    "sync-status",
    "stats",
    "bulk-pull",
    "bulk-pull/status",
];

/// The `{name}` parameters of a route path, in order; `Err` when a segment
/// is neither a lower-case literal (letters, digits, dashes) nor `{name}`.
pub fn path_params(path: &str) -> Result<Vec<&str>, String> {
    if path.is_empty() || path.starts_with('/') || path.ends_with('/') {
        return Err(format!(
            "route {path:?} must be segments joined by '/', without a leading or trailing one"
        ));
    }
    let mut params = vec![];
    for segment in path.split('/') {
        if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            let ok = name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
            if !ok || params.contains(&name) {
                return Err(format!(
                    "route {path:?}: bad or repeated parameter {segment:?}"
                ));
            }
            params.push(name);
        } else if segment.is_empty()
            || segment.starts_with('.')
            || segment.ends_with('.')
            || segment.contains("..")
            || !segment
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        {
            return Err(format!(
                "route {path:?}: segment {segment:?} must be lower-case letters, digits, dashes and inner dots, or {{name}}"
            ));
        }
    }
    Ok(params)
}

/// The route's shape with parameter names blanked: two routes of one shape
/// and method are one route.
pub fn route_shape(path: &str) -> String {
    path.split('/')
        .map(|s| if s.starts_with('{') { "{}" } else { s })
        .collect::<Vec<_>>()
        .join("/")
}

fn shaped_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
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
    Basic {
        username_field: String,
        password_field: String,
    },
    HeaderTemplate {
        header: String,
        template: String,
    },
    BasicTemplate {
        username: String,
        password_field: String,
    },
    TokenExchange {
        base_url_field: String,
        path: String,
        username_field: String,
        password_field: String,
        client_id_field: Option<String>,
        client_id_header: Option<String>,
        username_key: String,
        password_key: String,
        token_key: String,
        expiry_key: String,
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
    /// OAuth 2.0 client credentials at a token URL template (SDK 0.4.1).
    ClientCredentials {
        token_url: String,
        client_id_field: String,
        client_secret_field: String,
        scope: String,
    },
}

impl AuthScheme {
    /// Whether the host fetches a token for it (kept until it expires,
    /// fetched again once after a 401).
    pub fn fetches_tokens(&self) -> bool {
        matches!(
            self,
            AuthScheme::TokenExchange { .. }
                | AuthScheme::OauthClientCredentials { .. }
                | AuthScheme::ClientCredentials { .. }
        )
    }
}

/// The config fields a header template names (`{name}`), in order.
pub fn template_fields(template: &str) -> Vec<&str> {
    template
        .split('{')
        .skip(1)
        .filter_map(|part| part.split_once('}').map(|(name, _)| name))
        .filter(|name| !name.is_empty())
        .collect()
}

impl ConnectorDescriptor {
    /// Config fields the auth scheme and the webhook check read as secrets;
    /// each must be declared in `secret_fields`, or it would be stored in
    /// clear, read back and handed to the component.
    pub fn credential_fields(&self) -> Vec<&str> {
        let mut fields: Vec<&str> = match &self.auth {
            AuthScheme::None => vec![],
            AuthScheme::StaticHeader { secret_field, .. } => vec![secret_field],
            AuthScheme::HeaderTemplate { template, .. } => template_fields(template),
            AuthScheme::Basic { password_field, .. }
            | AuthScheme::BasicTemplate { password_field, .. } => vec![password_field],
            AuthScheme::TokenExchange { password_field, .. } => vec![password_field],
            AuthScheme::ClientCredentials {
                client_secret_field,
                ..
            } => vec![client_secret_field],
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

    /// Every route the descriptor mounts: (method, path, parameters).
    pub fn routes(&self) -> Vec<(&str, &str)> {
        let views = self.views.iter().map(|v| ("GET", v.path()));
        let actions = self
            .actions
            .iter()
            .filter_map(|a| a.path.as_deref().map(|p| (a.method.as_str(), p)));
        views.chain(actions).collect()
    }

    pub fn collection(&self, name: &str) -> Option<&Collection> {
        self.collections.iter().find(|c| c.name == name)
    }

    /// `Err` naming the first declaration the host could not serve: an
    /// unknown collection or field, a malformed or duplicate route, a route
    /// the lifecycle takes, an unreadable schema.
    pub fn check_declarations(&self) -> Result<(), String> {
        let mut names = std::collections::HashSet::new();
        for collection in &self.collections {
            if !shaped_name(&collection.name) || !names.insert(collection.name.as_str()) {
                return Err(format!(
                    "collection {:?}: names are lower-case letters, digits, '_' and '-', each once",
                    collection.name
                ));
            }
            if !shaped_name(&collection.record_type) {
                return Err(format!(
                    "collection {}: bad record type {:?}",
                    collection.name, collection.record_type
                ));
            }
            let mut fields = std::collections::HashSet::new();
            for field in &collection.fields {
                if !shaped_name(&field.name)
                    || field.name.contains('-')
                    || !fields.insert(&field.name)
                {
                    return Err(format!(
                        "collection {}: field {:?} must be lower-case letters, digits and '_', each once",
                        collection.name, field.name
                    ));
                }
            }
            if let Some(unknown) = collection
                .search
                .iter()
                .find(|f| collection.field(f).is_none())
            {
                return Err(format!(
                    "collection {}: search field {unknown} is not declared",
                    collection.name
                ));
            }
        }
        for view in &self.views {
            let collection = self.collection(view.collection()).ok_or_else(|| {
                format!("view {}: no collection {}", view.path(), view.collection())
            })?;
            if path_params(view.path())?.len() != view.params_wanted() {
                return Err(format!(
                    "view {}: this kind of view takes {} path parameter(s)",
                    view.path(),
                    view.params_wanted()
                ));
            }
            let fields: Vec<&String> = match view {
                View::Aggregate { by, .. } => vec![by],
                View::Children { field, .. } => vec![field],
                View::Export { columns, .. } => columns.iter().collect(),
                _ => vec![],
            };
            if let Some(unknown) = fields.into_iter().find(|f| collection.field(f).is_none()) {
                return Err(format!(
                    "view {}: field {unknown} is not declared",
                    view.path()
                ));
            }
            for related in view.related() {
                let other = self.collection(&related.collection).ok_or_else(|| {
                    format!("view {}: no collection {}", view.path(), related.collection)
                })?;
                if other.field(&related.field).is_none() {
                    return Err(format!(
                        "view {}: collection {} declares no field {}",
                        view.path(),
                        related.collection,
                        related.field
                    ));
                }
            }
        }
        let mut action_names = std::collections::HashSet::new();
        for action in &self.actions {
            if !shaped_name(&action.name) || !action_names.insert(action.name.as_str()) {
                return Err(format!("action {:?}: bad or repeated name", action.name));
            }
            if !ACTION_METHODS.contains(&action.method.as_str()) {
                return Err(format!(
                    "action {}: method {} is not one of {}",
                    action.name,
                    action.method,
                    ACTION_METHODS.join(", ")
                ));
            }
            if !ACTION_ROLES.contains(&action.role.as_str()) {
                return Err(format!(
                    "action {}: role must be member or admin",
                    action.name
                ));
            }
            if let Some(path) = &action.path {
                path_params(path)?;
            }
            for schema in [&action.input_schema, &action.query_schema]
                .into_iter()
                .flatten()
            {
                jsonschema::validator_for(schema)
                    .map_err(|e| format!("action {}: schema is invalid: {e}", action.name))?;
            }
        }
        let mut remediations = std::collections::HashSet::new();
        for remediation in &self.remediations {
            if !shaped_name(&remediation.name) || !remediations.insert(remediation.name.as_str()) {
                return Err(format!(
                    "remediation {:?}: names are lower-case letters, digits, '_' and '-', each once",
                    remediation.name
                ));
            }
            if remediation.input_schema["type"] != "object" {
                return Err(format!(
                    "remediation {}: inputs must be an object schema",
                    remediation.name
                ));
            }
            jsonschema::validator_for(&remediation.input_schema)
                .map_err(|e| format!("remediation {}: schema is invalid: {e}", remediation.name))?;
        }
        if let Some(pull) = &self.pull {
            if self.streams.contains(&pull.stream) {
                return Err(format!(
                    "pull stream {} is also a sync stream; a pull's stream is fetched only on demand",
                    pull.stream
                ));
            }
            if let Some(unknown) = pull
                .collections
                .iter()
                .find(|c| self.collection(c).is_none())
            {
                return Err(format!("pull: no collection {unknown}"));
            }
            if pull.parameters["type"] != "object" {
                return Err("pull: parameters must be an object schema".into());
            }
            // Parameters are merged into the config: one named like a config
            // field could send the tenant's credentials to another host.
            let config_fields = self.config_schema["properties"].as_object();
            if let Some(clash) = pull.parameters["properties"]
                .as_object()
                .into_iter()
                .flat_map(|p| p.keys())
                .find(|name| {
                    config_fields.is_some_and(|c| c.contains_key(*name))
                        || self.secret_fields.contains(name)
                })
            {
                return Err(format!(
                    "pull: parameter {clash} is a config field; a pull's parameters never replace the config"
                ));
            }
            jsonschema::validator_for(&pull.parameters)
                .map_err(|e| format!("pull: parameters schema is invalid: {e}"))?;
        }
        let mut routes = std::collections::HashSet::new();
        for (method, path) in self.routes() {
            if LIFECYCLE_PATHS.contains(&path) {
                return Err(format!("route {path} is a lifecycle route the host serves"));
            }
            if HOST_AREA_ROUTES
                .iter()
                .any(|(area, host_method, host_path)| {
                    *area == self.area
                        && *host_method == method
                        && route_shape(host_path) == route_shape(path)
                })
            {
                return Err(format!(
                    "route {method} {path} is one the host serves for area {}",
                    self.area
                ));
            }
            if !routes.insert((method, route_shape(path))) {
                return Err(format!("route {method} {path} is declared twice"));
            }
        }
        Ok(())
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
    pub column_aliases: Vec<ColumnAlias>,
}

/// A column a CSV provider reads and the other header spellings that
/// name it. Components send it as the SDK's `[column, [aliases]]` pair;
/// the API shows it as an object, which clients generated from the
/// OpenAPI document can read (a tuple has no schema most generators take).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(from = "ColumnAliasWire")]
pub struct ColumnAlias {
    pub column: String,
    pub aliases: Vec<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ColumnAliasWire {
    Pair(String, Vec<String>),
    Object {
        column: String,
        aliases: Vec<String>,
    },
}

impl From<ColumnAliasWire> for ColumnAlias {
    fn from(wire: ColumnAliasWire) -> Self {
        match wire {
            ColumnAliasWire::Pair(column, aliases)
            | ColumnAliasWire::Object { column, aliases } => ColumnAlias { column, aliases },
        }
    }
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
            "id": "acme", "area": "acme", "name": "Acme", "version": "0.1.0", "sdk_version": "0.1.0",
            "config_schema": {}, "secret_fields": secret_fields, "streams": [],
            "requested_hosts": ["{config.base_url}"],
            "auth": {"type": "token_exchange", "base_url_field": "base_url", "path": "/login",
                     "username_field": "username", "password_field": "password",
                     "username_key": "u", "password_key": "p", "token_key": "t", "expiry_key": "e"},
            "webhook": webhook_secret.map(|f| serde_json::json!(
                {"header": "Sig", "secret_field": f, "tolerance_secs": 300})),
        }))
        .unwrap()
    }

    #[test]
    fn a_pull_parameter_may_not_replace_a_config_field() {
        let mut descriptor = descriptor(&["password"], None);
        descriptor.config_schema = serde_json::json!({"type": "object", "properties": {
            "base_url": {"type": "string"}, "password": {"type": "string"}}});
        descriptor.collections = serde_json::from_value(serde_json::json!([
            {"name": "boards", "record_type": "ticket", "fields": []}]))
        .unwrap();
        let pull = |parameter: &str| Pull {
            stream: "board".into(),
            summary: "A board".into(),
            parameters: serde_json::json!({"type": "object", "properties": {parameter: {"type": "string"}}}),
            collections: vec!["boards".into()],
        };
        descriptor.pull = Some(pull("board_id"));
        assert_eq!(descriptor.check_declarations(), Ok(()));
        for clash in ["base_url", "password"] {
            descriptor.pull = Some(pull(clash));
            let refused = descriptor.check_declarations().unwrap_err();
            assert!(refused.contains(clash), "{refused}");
        }
    }

    fn declaring(collections: Value, views: Value, actions: Value) -> Result<(), String> {
        let mut descriptor = descriptor(&["password"], None);
        descriptor.collections = serde_json::from_value(collections).unwrap();
        descriptor.views = serde_json::from_value(views).unwrap();
        descriptor.actions = serde_json::from_value(actions).unwrap();
        descriptor.check_declarations()
    }

    #[test]
    fn declarations_the_host_cannot_serve_are_refused_with_the_reason() {
        let jobs = serde_json::json!([{"name": "jobs", "record_type": "backup_job",
            "fields": [{"name": "status", "type": "string"}], "search": ["status"]}]);
        let list = |path: &str, collection: &str| serde_json::json!({"type": "list", "path": path, "collection": collection, "summary": "s"});
        let action = |method: &str, path: &str| serde_json::json!({"name": "act", "method": method, "path": path, "summary": "s"});
        assert_eq!(
            declaring(
                jobs.clone(),
                serde_json::json!([list("jobs", "jobs")]),
                serde_json::json!([action("POST", "jobs/{job_id}/restore")])
            ),
            Ok(())
        );
        let refused = [
            declaring(
                jobs.clone(),
                serde_json::json!([list("jobs", "nope")]),
                serde_json::json!([]),
            ),
            declaring(
                jobs.clone(),
                serde_json::json!([list("Jobs", "jobs")]),
                serde_json::json!([]),
            ),
            declaring(
                jobs.clone(),
                serde_json::json!([list("jobs/{id}", "jobs")]),
                serde_json::json!([]),
            ),
            declaring(
                jobs.clone(),
                serde_json::json!([list("config", "jobs")]),
                serde_json::json!([]),
            ),
            declaring(
                jobs.clone(),
                serde_json::json!([list("jobs", "jobs")]),
                serde_json::json!([action("GET", "jobs")]),
            ),
            declaring(
                jobs.clone(),
                serde_json::json!([]),
                serde_json::json!([action("TRACE", "x")]),
            ),
            declaring(
                jobs.clone(),
                serde_json::json!([]),
                serde_json::json!([action("POST", "a/{x}/{x}")]),
            ),
            declaring(
                serde_json::json!([{"name": "jobs", "record_type": "backup_job", "fields": [], "search": ["status"]}]),
                serde_json::json!([]),
                serde_json::json!([]),
            ),
            declaring(
                jobs.clone(),
                serde_json::json!([{"type": "aggregate", "path": "by", "collection": "jobs", "summary": "s", "by": "nope"}]),
                serde_json::json!([]),
            ),
        ];
        let reasons: Vec<String> = refused.into_iter().map(|r| r.unwrap_err()).collect();
        assert!(reasons[0].contains("no collection nope"), "{}", reasons[0]);
        assert!(reasons[1].contains("lower-case"), "{}", reasons[1]);
        assert!(reasons[2].contains("path parameter"), "{}", reasons[2]);
        assert!(reasons[3].contains("lifecycle"), "{}", reasons[3]);
        assert!(reasons[4].contains("declared twice"), "{}", reasons[4]);
        assert!(reasons[5].contains("method TRACE"), "{}", reasons[5]);
        assert!(reasons[6].contains("repeated parameter"), "{}", reasons[6]);
        assert!(reasons[7].contains("search field status"), "{}", reasons[7]);
        assert!(reasons[8].contains("field nope"), "{}", reasons[8]);
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
