//! The parts of the OpenAPI document that no handler declares: info,
//! security schemes, tags, and the error answers every operation shares.

use serde_json::{json, Map, Value};
use utoipa::openapi::path::ParameterIn;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{Content, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Cairn",
        description = "Multi-tenant vulnerability and asset management API. Every route under \
                       `/api/v1` needs a session cookie (`cairn.session_token`) or a bearer JWT, \
                       except register, login and the public invite routes. Errors are JSON \
                       `{detail, type}` (`field` on validation errors, `path` on 500s).",
        license(name = "Apache-2.0", identifier = "Apache-2.0")
    ),
    // The query tree is recursive, so its node types are registered here
    // rather than inlined where they are used.
    components(schemas(
        cairn_inventory::search::QueryNode,
        cairn_inventory::search::QueryRule,
        cairn_inventory::search::QueryGroup,
    )),
    modifiers(&SecuritySchemes),
    security(("session_cookie" = []), ("bearer" = [])),
    tags(
        (name = "service", description = "Health, version, docs"),
        (name = "auth", description = "Accounts, sessions and tokens"),
        (name = "tenant", description = "The caller's organization and members"),
        (name = "invites", description = "Inviting people into a tenant"),
        (name = "partner", description = "A managed service provider's partner tenant over its customer tenants: customers, groups, analysts' access, audit, branding, and views across customers"),
        (name = "jobs", description = "Background jobs: syncs and file parsing"),
        (name = "integrations", description = "Loaded connectors and CSV providers"),
        (name = "admin", description = "The operator's routes: reloading the connectors directory"),
        (name = "inventory", description = "Software rollup, items, vendors and structured search"),
        (name = "devices", description = "Assets (NetBIOS view), device names and asset search"),
        (name = "portal", description = "Running the client portal: clients, keys, invoices, payment webhooks"),
        (name = "research", description = "A CVE or a product researched against the tenant's devices, and the history"),
        (name = "versions", description = "Versions in use, compliance with minimum versions, outdated software"),
        (name = "weaknesses", description = "CWE weaknesses with their CVE counts"),
        (name = "tags", description = "Tags on CVEs, vendors and products"),
        (name = "projects", description = "Projects of vendors and products and their CVEs"),
        (name = "sla", description = "Remediation SLAs: policies per tenant, partner group and customer, device tiers, and each open finding's due date and state"),
        (name = "subscriptions", description = "Vendor and product subscriptions synced from NVD"),
        (name = "threat-intel", description = "Exploitation and likelihood of CVEs (KEV, EPSS), enrichment"),
    )
)]
struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "operator_token",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                super::admin::ADMIN_TOKEN_HEADER,
                "The operator's token, the `admin_token` setting (CAIRN_ADMIN_TOKEN)",
            ))),
        );
        components.add_security_scheme(
            "session_cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(
                cairn_platform::auth::SESSION_COOKIE,
            ))),
        );
    }
}

/// The interface version of `/api/v1`, apart from the service's own: it
/// follows what a client sees (semver; a 0.x minor step may break), and
/// CHANGELOG.md says what changed.
pub const API_VERSION: &str = "0.7.2";

pub fn base() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = API_VERSION.to_string();
    doc
}

/// Documents the answers operations give that no handler declares: the
/// extractors' 400 (malformed JSON, wrong content type, a bad path value)
/// and 422 (a body or query value of the wrong shape), 401 where a
/// credential is needed, 404 where the path names something, and 429 from
/// the rate limit on `/api`. A response an operation declares itself is
/// kept as it is.
pub fn document_common_errors(doc: &mut utoipa::openapi::OpenApi) {
    let global_secured = doc.security.as_ref().is_some_and(|s| !s.is_empty());
    for (path, item) in doc.paths.paths.iter_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            let parameters = operation.parameters.as_deref().unwrap_or_default();
            let has = |place: ParameterIn| parameters.iter().any(|p| p.parameter_in == place);
            let (in_path, in_query) = (has(ParameterIn::Path), has(ParameterIn::Query));
            let json_body = operation
                .request_body
                .as_ref()
                .is_some_and(|body| body.content.contains_key("application/json"));
            let any_body = operation.request_body.is_some();
            let secured = match &operation.security {
                None => global_secured,
                // No requirement, or an empty one among the alternatives:
                // no credential needed.
                Some(requirements) => {
                    !requirements.is_empty()
                        && !requirements.contains(&SecurityRequirement::default())
                }
            };
            let errors = [
                (
                    "400",
                    any_body || in_path,
                    "Malformed request: unreadable JSON or form, wrong content type, or a path value of the wrong type",
                ),
                (
                    "401",
                    secured,
                    "No valid credential",
                ),
                ("404", in_path, "Nothing by that name or id in the caller's tenant"),
                (
                    "422",
                    json_body || in_query,
                    "A body or query value of the wrong shape; `field` names it",
                ),
                (
                    "429",
                    path.starts_with("/api/"),
                    "Rate limited; `Retry-After` says when to try again",
                ),
            ];
            for (status, applies, description) in errors {
                if applies {
                    operation
                        .responses
                        .responses
                        .entry(status.to_string())
                        .or_insert_with(|| error_response(description));
                }
            }
        }
    }
}

fn error_response(description: &str) -> RefOr<Response> {
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                Content::new(Some(Ref::from_schema_name("ErrorBody"))),
            )
            .build(),
    )
}

/// The document as clients receive it: `doc` serialized, then the
/// conventions utoipa's types cannot state made explicit for client
/// generators (openapi-python-client, openapi-generator):
/// - an operation needing no credential says `security: []` (utoipa writes
///   `[{}]`, which generators read as "some scheme");
/// - a response that is not JSON is a binary string (a PDF, a spreadsheet,
///   a CSV file, a document), so generated clients keep its bytes;
/// - a redirect declares its `Location` header;
/// - "any value" is `{}` (see [`any_value_as_empty`]);
/// - each structured search has its own request schemas whose `field` is
///   the enum of its allow-list (`searches`: schema prefix, the searches'
///   fields, and the operations taking it); device queries held elsewhere
///   (dashboard filters, report scopes) use the device schemas.
pub fn finish(
    doc: &utoipa::openapi::OpenApi,
    searches: &[Search],
    closed: &[super::closed_sets::ClosedSet],
) -> Value {
    let mut doc = serde_json::to_value(doc).expect("the OpenAPI document serializes");
    closed_sets(&mut doc, closed);
    conditional_requirements(&mut doc["components"]["schemas"]);
    timestamps_as_date_time(&mut doc["components"]);
    timestamps_as_date_time(&mut doc["paths"]);
    if let Some(paths) = doc["paths"].as_object_mut() {
        for item in paths.values_mut().filter_map(Value::as_object_mut) {
            for operation in item.values_mut().filter_map(Value::as_object_mut) {
                finish_operation(operation);
            }
        }
    }
    if !searches.is_empty() {
        search_schemas(&mut doc, searches);
        for at in super::closed_sets::DEVICE_QUERIES {
            let (schema, property) = at.split_once('.').unwrap_or_default();
            let pointer = format!("/components/schemas/{schema}/properties/{property}");
            let field = doc.pointer_mut(&pointer);
            let field = field.unwrap_or_else(|| panic!("device query {at} is not in the document"));
            let mut query = serde_json::json!({"$ref": "#/components/schemas/DeviceQueryGroup"});
            if let Some(description) = field.get("description") {
                query["description"] = description.clone();
            }
            *field = query;
        }
    }
    any_value_as_empty(&mut doc);
    // Which patterns match depends on the connectors loaded (their
    // routes and records); the schema check loads every one and bounds
    // how many objects are open.
    for root in ["components", "paths"] {
        declare_open(&mut doc[root], root.to_string());
    }
    doc
}

/// Whether a schema is an object that names no member and says nothing of
/// the others: a generator makes it an object with no readable field.
fn is_bare_object(schema: &Map<String, Value>) -> bool {
    let is_object = match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => false,
    };
    is_object
        && ![
            "properties",
            "additionalProperties",
            "allOf",
            "oneOf",
            "anyOf",
            "$ref",
            "patternProperties",
        ]
        .iter()
        .any(|k| schema.contains_key(*k))
}

/// Declares open each bare object [`super::closed_sets::OPEN_OBJECTS`]
/// names; `at` is the location of `value` (members joined by `.`, the
/// `properties` level left out).
fn declare_open(value: &mut Value, at: String) {
    match value {
        Value::Object(map) => {
            if is_bare_object(map) {
                let open = super::closed_sets::OPEN_OBJECTS
                    .iter()
                    .any(|(pattern, _)| glob(pattern, &at));
                if open {
                    map.insert("additionalProperties".into(), Value::Bool(true));
                }
            }
            for (key, member) in map.iter_mut() {
                let at = match key.as_str() {
                    "properties" => at.clone(),
                    _ => format!("{at}.{key}"),
                };
                declare_open(member, at);
            }
        }
        Value::Array(items) => {
            for item in items {
                declare_open(item, at.clone());
            }
        }
        _ => {}
    }
}

/// `text` against `pattern`, where `*` stands for any text.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(found) => rest = &rest[found + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

/// Makes each closed set a shared component and points its fields and
/// parameters at it. A place that names no field or parameter of the
/// document is a mistake of the table, and fails every start (and so
/// every test).
fn closed_sets(doc: &mut Value, sets: &[super::closed_sets::ClosedSet]) {
    for set in sets {
        if let Some(values) = set.values {
            doc["components"]["schemas"][set.name] = serde_json::json!({
                "type": "string",
                "enum": values,
            });
        }
        assert!(
            doc["components"]["schemas"][set.name].is_object(),
            "closed set {}: no such component",
            set.name
        );
        let reference = format!("#/components/schemas/{}", set.name);
        for at in set.at {
            let mut found = 0;
            match at.split_once(" ?") {
                Some((operation, parameter)) => {
                    let (method, path) = operation.split_once(' ').unwrap_or_default();
                    let parameters = &mut doc["paths"][path][method.to_lowercase()]["parameters"];
                    for p in parameters.as_array_mut().into_iter().flatten() {
                        if p["name"] == parameter {
                            p["schema"] = to_closed(&p["schema"], &reference);
                            found += 1;
                        }
                    }
                }
                None => {
                    let (schema, property) = at.split_once('.').unwrap_or_default();
                    for owner in [
                        format!("/components/schemas/{schema}"),
                        format!("/components/schemas/Page_{schema}/properties/items/items"),
                    ] {
                        let pointer = format!("{owner}/properties/{property}");
                        if let Some(field) = doc.pointer_mut(&pointer) {
                            *field = to_closed(field, &reference);
                            found += 1;
                        }
                    }
                }
            }
            // A location of a connector's area is there only while such a
            // connector is loaded; a prose-only string left behind still
            // fails the schema check, which loads every connector.
            assert!(
                found > 0 || super::closed_sets::WITH_CONNECTORS.contains(&set.name),
                "closed set {}: {at} is not in the document",
                set.name
            );
        }
    }
}

/// [`super::closed_sets::CONDITIONAL_REQUIREMENTS`] as `if`/`then` in the
/// schemas of this document that have them.
fn conditional_requirements(schemas: &mut Value) {
    for (schema, field, value, required) in super::closed_sets::CONDITIONAL_REQUIREMENTS {
        let Some(schema) = schemas.get_mut(*schema).and_then(Value::as_object_mut) else {
            continue;
        };
        let condition = serde_json::json!({
            "if": {"properties": {*field: {"const": value}}, "required": [field]},
            "then": {"required": [required], "properties": {*required: {"not": {"type": "null"}}}},
        });
        let all = schema
            .entry("allOf")
            .or_insert_with(|| Value::Array(vec![]));
        if let Some(all) = all.as_array_mut() {
            all.push(condition);
        }
    }
}

/// A string schema (maybe nullable) as a reference to `reference`,
/// keeping its description.
fn to_closed(schema: &Value, reference: &str) -> Value {
    let nullable = schema["type"]
        .as_array()
        .is_some_and(|types| types.iter().any(|t| t == "null"));
    let mut closed = match nullable {
        true => serde_json::json!({"oneOf": [{"type": "null"}, {"$ref": reference}]}),
        false => serde_json::json!({"$ref": reference}),
    };
    if let Some(description) = schema.get("description") {
        closed["description"] = description.clone();
    }
    closed
}

/// Every string property named as a moment (`*_at`) is RFC 3339 in this
/// service's answers: it says so with `format: date-time`.
fn timestamps_as_date_time(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    let is_string = match &property["type"] {
                        Value::String(t) => t == "string",
                        Value::Array(types) => types.iter().any(|t| t == "string"),
                        _ => false,
                    };
                    if name.ends_with("_at") && is_string && property.get("format").is_none() {
                        property["format"] = Value::from("date-time");
                    }
                }
            }
            map.values_mut().for_each(timestamps_as_date_time);
        }
        Value::Array(items) => items.iter_mut().for_each(timestamps_as_date_time),
        _ => {}
    }
}

/// A schema whose `type` lists every JSON type is "any value", which
/// generators read best as `{}` (they reject an `array` or `object` member
/// without items or properties in a type union). utoipa's types cannot
/// hold `{}`, so connector schemas reach here spelt out.
fn any_value_as_empty(value: &mut Value) {
    const EVERY_TYPE: [&str; 7] = [
        "string", "number", "integer", "boolean", "object", "array", "null",
    ];
    match value {
        Value::Object(map) => {
            let every = map.len() == 1
                && map
                    .get("type")
                    .and_then(Value::as_array)
                    .is_some_and(|types| {
                        types.len() == EVERY_TYPE.len()
                            && EVERY_TYPE.iter().all(|t| types.iter().any(|x| x == t))
                    });
            if every {
                map.clear();
            } else {
                map.values_mut().for_each(any_value_as_empty);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(any_value_as_empty),
        _ => {}
    }
}

/// One structured search as OpenAPI names it.
pub struct Search {
    /// Prefix of its schemas (`Device` gives `DeviceSearchRequest`).
    pub prefix: &'static str,
    pub fields: Vec<String>,
    /// `(path, method)` of each operation whose body is its request.
    pub operations: &'static [(&'static str, &'static str)],
}

fn finish_operation(operation: &mut Map<String, Value>) {
    if operation
        .get("security")
        .and_then(Value::as_array)
        .is_some_and(|alternatives| alternatives.iter().any(|a| a == &json!({})))
    {
        operation.insert("security".into(), json!([]));
    }
    // An optional body (`Option<T>`): it may be left out, not sent as
    // `null`, so its schema is T's.
    if let Some(body) = operation.get_mut("requestBody") {
        if body.get("required").is_none() {
            for media in body["content"]
                .as_object_mut()
                .into_iter()
                .flat_map(|c| c.values_mut())
            {
                let alternatives = media["schema"]["oneOf"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                if let [null, schema] = alternatives.as_slice() {
                    if null == &json!({"type": "null"}) {
                        media["schema"] = schema.clone();
                    }
                }
            }
        }
    }
    let Some(responses) = operation
        .get_mut("responses")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (status, response) in responses.iter_mut() {
        if status.starts_with('3') && response.get("headers").is_none() {
            response["headers"] = json!({"Location": {
                "description": "Where the resource is",
                "required": true,
                "schema": {"type": "string", "format": "uri-reference"}}});
        }
        let Some(content) = response.get_mut("content").and_then(Value::as_object_mut) else {
            continue;
        };
        // A page or plain text alone (docs, metrics) stays text; a file
        // that may be of several types is bytes whatever its type.
        let alone = content.len() == 1;
        let mut binary = false;
        for (media_type, body) in content.iter_mut() {
            let textual = media_type.ends_with("json")
                || alone
                    && (media_type.starts_with("text/html")
                        || media_type.starts_with("text/plain"));
            if textual {
                continue;
            }
            binary = true;
            let description = body["schema"].get("description").cloned();
            body["schema"] = json!({"type": "string", "format": "binary"});
            if let Some(description) = description {
                body["schema"]["description"] = description;
            }
        }
        // Generators take the bytes of a response they know as binary
        // (`application/octet-stream`) and skip or decode as text the
        // others: it leads the list, the types the file may have follow.
        if binary && !content.contains_key("application/octet-stream") {
            let mut ordered = Map::new();
            ordered.insert(
                "application/octet-stream".into(),
                json!({"schema": {"type": "string", "format": "binary"}}),
            );
            ordered.extend(std::mem::take(content));
            *content = ordered;
        }
    }
}

/// Replaces the shared query schemas by one set per search (see
/// [`finish`]); the first search's set also serves every other
/// reference to a query group.
fn search_schemas(doc: &mut Value, searches: &[Search]) {
    let shared: Vec<(&str, Value)> = SHARED_QUERY_SCHEMAS
        .into_iter()
        .filter_map(|name| {
            let schemas = doc["components"]["schemas"].as_object_mut()?;
            Some((name, schemas.remove(name)?))
        })
        .collect();
    for search in searches {
        for (name, schema) in &shared {
            let mut schema = schema.clone();
            prefix_query_refs(&mut schema, search.prefix);
            if *name == "QueryRule" {
                schema["properties"]["field"]["enum"] = json!(search.fields);
            }
            doc["components"]["schemas"][format!("{}{name}", search.prefix)] = schema;
        }
        for (path, method) in search.operations {
            prefix_query_refs(
                &mut doc["paths"][*path][*method]["requestBody"],
                search.prefix,
            );
        }
    }
    // What still names a shared schema holds a device query.
    prefix_query_refs(doc, searches[0].prefix);
}

/// The schemas every structured search shares before [`search_schemas`]
/// gives each search its own.
const SHARED_QUERY_SCHEMAS: [&str; 4] = ["SearchRequest", "QueryGroup", "QueryRule", "QueryNode"];

/// Points every reference to a [`SHARED_QUERY_SCHEMAS`] schema within
/// `value` (a `$ref`, or a discriminator's mapping) at the one named with
/// `prefix`.
fn prefix_query_refs(value: &mut Value, prefix: &str) {
    match value {
        Value::String(text) => {
            let named = text.strip_prefix("#/components/schemas/");
            if named.is_some_and(|name| SHARED_QUERY_SCHEMAS.contains(&name)) {
                *text = text.replacen("schemas/", &format!("schemas/{prefix}"), 1);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| prefix_query_refs(v, prefix)),
        Value::Object(map) => map.values_mut().for_each(|v| prefix_query_refs(v, prefix)),
        _ => {}
    }
}
