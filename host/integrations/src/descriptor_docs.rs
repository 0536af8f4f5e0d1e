//! OpenAPI operations of declared routes, written as OpenAPI JSON from the
//! declarations and read into utoipa's types.

use serde_json::{json, Map, Value};
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::RefOr;

use super::views::PAGE_PARAMS;
use cairn_plugins::descriptor::path_params;
use cairn_plugins::{Action, Collection, ConnectorDescriptor, FieldType, View};

/// What a connector declares at a route.
pub enum Declared<'a> {
    View(&'a View),
    Action(&'a Action),
}

fn error(description: &str) -> Value {
    json!({"description": description,
           "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}})
}

fn field_schema(field_type: FieldType) -> Value {
    match field_type {
        FieldType::String => json!({"type": "string"}),
        FieldType::DateTime => json!({"type": "string", "format": "date-time"}),
        FieldType::Integer => json!({"type": "integer"}),
        FieldType::Number => json!({"type": "number"}),
        FieldType::Boolean => json!({"type": "boolean"}),
        FieldType::StringList => json!({"type": "array", "items": {"type": "string"}}),
    }
}

/// The JSON Schema of one stored record of `collection` as views answer it.
fn record_schema(collection: &Collection) -> Value {
    let mut fields = Map::new();
    for field in &collection.fields {
        let mut schema = field_schema(field.field_type);
        if !field.description.is_empty() {
            schema["description"] = json!(field.description);
        }
        fields.insert(field.name.clone(), schema);
    }
    json!({
        "type": "object",
        "required": ["key", "fields", "record", "changed_at"],
        "properties": {
            "key": {"type": "string", "description": "The upstream's stable id"},
            "device_name": {"type": ["string", "null"]},
            "client_id": {"type": ["string", "null"]},
            "group_ids": {"type": "array", "items": {"type": "string"}},
            "fields": {"type": "object", "description": format!("The normalized `{}` fields", collection.record_type),
                       "properties": fields},
            "record": {"type": "object", "description": "The upstream record as synced"},
            "changed_at": {"type": "string", "format": "date-time",
                           "description": "When a sync first saw this record or last found it changed; a sync that finds it unchanged leaves it as it is"}
        }
    })
}

/// The component schema name of an area's collection's records
/// (`EdrThreatsRecord`): views answer references to it rather than the
/// schema inline, so generated clients get one named type per collection.
fn record_name(area: &str, collection: &str) -> String {
    let pascal = |text: &str| -> String {
        text.split(|c: char| !c.is_ascii_alphanumeric())
            .map(|word| {
                let mut chars = word.chars();
                chars.next().map_or_else(String::new, |first| {
                    first.to_ascii_uppercase().to_string() + chars.as_str()
                })
            })
            .collect()
    };
    format!("{}{}Record", pascal(area), pascal(collection))
}

fn record_ref(descriptor: &ConnectorDescriptor, collection: &Collection) -> Value {
    json!({"$ref": format!("#/components/schemas/{}", record_name(&descriptor.area, &collection.name))})
}

/// The named record schema of every collection `descriptor` declares (see
/// [`record_name`]).
pub fn record_components(descriptor: &ConnectorDescriptor) -> Vec<(String, RefOr<Schema>)> {
    descriptor
        .collections
        .iter()
        .filter_map(|collection| {
            let schema = serde_json::from_value(record_schema(collection)).ok()?;
            Some((record_name(&descriptor.area, &collection.name), schema))
        })
        .collect()
}

fn page_of(items: Value) -> Value {
    json!({"type": "object", "required": ["items", "total", "limit", "skip", "offset"],
           "properties": {"items": {"type": "array", "items": items},
                          "total": {"type": "integer"}, "limit": {"type": "integer"},
                          "skip": {"type": "integer"},
                          "offset": {"type": "integer", "deprecated": true,
                                     "description": "The same as `skip`; removed in a later version"}}})
}

fn query_param(name: &str, schema: Value, description: &str) -> Value {
    json!({"name": name, "in": "query", "required": false, "schema": schema, "description": description})
}

fn page_params() -> Vec<Value> {
    PAGE_PARAMS
        .iter()
        .map(|name| match *name {
            "search" => query_param(name, json!({"type": "string"}), "Contains, ignoring case"),
            "limit" => query_param(
                name,
                json!({"type": "integer", "minimum": 1, "maximum": 500}),
                "Page size (default 100)",
            ),
            "skip" => query_param(
                name,
                json!({"type": "integer", "minimum": 0}),
                "Records to skip; default 0",
            ),
            _ => {
                let mut param = query_param(
                    name,
                    json!({"type": "integer", "minimum": 0}),
                    "Deprecated: the same as `skip`",
                );
                param["deprecated"] = json!(true);
                param
            }
        })
        .collect()
}

/// The view's parameters and 200 answer schema.
fn view_parts(descriptor: &ConnectorDescriptor, view: &View) -> (Vec<Value>, Value) {
    let Some(collection) = descriptor.collection(view.collection()) else {
        return (vec![], json!({"type": "object"}));
    };
    match view {
        View::List { .. } | View::Export { .. } => {
            let mut params = page_params();
            if matches!(view, View::Export { .. }) {
                params.retain(|p| p["name"] == "search");
            }
            for field in &collection.fields {
                let schema = match field.field_type {
                    FieldType::StringList => json!({"type": "string"}),
                    other => field_schema(other),
                };
                params.push(query_param(
                    &field.name,
                    schema,
                    &format!(
                        "Only records whose `{}` equals this (ignoring case)",
                        field.name
                    ),
                ));
            }
            let answer = match view {
                View::Export { columns, .. } => json!({"type": "string", "description": format!(
                    "CSV: a header line `key,{}`, then one line per matching record. A cell starting with =, +, -, @, tab or carriage return is prefixed with ' so a spreadsheet never runs it.",
                    columns.join(","))}),
                _ => page_of(record_ref(descriptor, collection)),
            };
            (params, answer)
        }
        View::Children { field, .. } => {
            let answer = json!({"type": "object", "required": ["items", "total"], "properties": {
                "items": {"type": "array", "items": record_ref(descriptor, collection),
                          "description": format!("Records whose `{field}` is the path value, newest first (at most 1000)")},
                "total": {"type": "integer", "description": "All such records"}}});
            (vec![], answer)
        }
        View::Aggregate { by, .. } => {
            let group = json!({"type": "object", "properties": {
                by.as_str(): {"type": "string"},
                "records": {"type": "integer"},
                "devices": {"type": "integer", "description": "Distinct device names"}}});
            (page_params(), page_of(group))
        }
        View::ByKey { related, .. } | View::ByDeviceName { related, .. } => {
            let mut schema = record_schema(collection);
            for link in related {
                if let Some(other) = descriptor.collection(&link.collection) {
                    schema["properties"][link.name.as_str()] = json!({
                        "type": "array", "items": record_ref(descriptor, other),
                        "description": format!("Records of {} whose {} is this record's key (at most 1000)", other.name, link.field)});
                }
            }
            if collection.record_type == super::user_links::USER {
                super::user_links::document(&mut schema);
            }
            (vec![], schema)
        }
    }
}

/// A declared JSON Schema as utoipa reads it; one it cannot read is shown
/// as an object.
fn schema_or_object(schema: Option<&Value>) -> Value {
    let Some(schema) = schema else {
        return json!({"type": "object"});
    };
    let mut schema = schema.clone();
    spell_out_any(&mut schema);
    match serde_json::from_value::<utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>>(
        schema.clone(),
    ) {
        Ok(_) => schema,
        Err(_) => json!({"type": "object"}),
    }
}

/// Every JSON type: the "any value" schema spelt so that utoipa's types
/// can hold it. Connectors write it as `{}`, which utoipa cannot read back,
/// and an array whose `items` it cannot read silently loses them (the
/// array then has no item schema a client generator can use).
const ANY_TYPE: [&str; 7] = [
    "string", "number", "integer", "boolean", "object", "array", "null",
];

/// Replaces each empty sub-schema of `schema` (a property, an array's
/// items, additional properties, a member of a combination) with
/// [`ANY_TYPE`].
fn spell_out_any(schema: &mut Value) {
    let Some(object) = schema.as_object_mut() else {
        return;
    };
    let any = |value: &mut Value| {
        if value.as_object().is_some_and(Map::is_empty) {
            *value = json!({ "type": ANY_TYPE });
        } else {
            spell_out_any(value);
        }
    };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        properties.values_mut().for_each(any);
    }
    for key in ["items", "additionalProperties"] {
        if let Some(value) = object.get_mut(key) {
            any(value);
        }
    }
    for key in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(members)) = object.get_mut(key) {
            members.iter_mut().for_each(any);
        }
    }
}

/// The OpenAPI operation of one declared route.
pub fn operation(descriptor: &ConnectorDescriptor, declared: &Declared<'_>) -> Operation {
    let (path, summary) = match declared {
        Declared::View(view) => (view.path(), view.summary()),
        Declared::Action(action) => (
            action.path.as_deref().unwrap_or_default(),
            action.summary.as_str(),
        ),
    };
    let mut parameters: Vec<Value> = path_params(path)
        .unwrap_or_default()
        .into_iter()
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect();
    let mut responses = Map::new();
    let mut operation = json!({
        "tags": [descriptor.area],
        "summary": summary,
        "operationId": format!("{}_{}", descriptor.area, path.replace(['/', '{', '}', '-'], "_")),
    });
    match declared {
        Declared::View(view) => {
            let (params, answer) = view_parts(descriptor, view);
            parameters.extend(params);
            operation["description"] = json!(format!(
                "Served from what the tenant's {} connector synced (declared by {}).",
                descriptor.area, descriptor.id
            ));
            let media = match view {
                View::Export { .. } => "text/csv",
                _ => "application/json",
            };
            responses.insert(
                "200".into(),
                json!({"description": "OK", "content": {media: {"schema": answer}}}),
            );
            responses.insert(
                "409".into(),
                error("Several connectors serve this area and the tenant chose none"),
            );
        }
        Declared::Action(action) => {
            operation["operationId"] = json!(format!("{}_{}", descriptor.area, action.name));
            operation["description"] = json!(format!(
                "A live call through the tenant's {} connector.{}",
                descriptor.area,
                if action.admin_only() {
                    " Admins and owners only."
                } else {
                    ""
                }
            ));
            if let Some(properties) = action
                .query_schema
                .as_ref()
                .and_then(|s| s["properties"].as_object())
            {
                let required: Vec<&str> = action
                    .query_schema
                    .as_ref()
                    .and_then(|s| s["required"].as_array())
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                for (name, schema) in properties {
                    parameters.push(json!({"name": name, "in": "query", "required": required.contains(&name.as_str()),
                                           "schema": schema_or_object(Some(schema))}));
                }
            }
            if let Some(input) = &action.input_schema {
                operation["requestBody"] = json!({"required": true, "content": {"application/json": {"schema": schema_or_object(Some(input))}}});
            }
            responses.insert("200".into(), json!({"description": "The connector's answer", "content": {"application/json": {"schema": schema_or_object(action.output_schema.as_ref())}}}));
            responses.insert(
                "409".into(),
                error("The area is not configured for this tenant"),
            );
            // Even an action without a body or query: the connector checks
            // its path values, and the stored config may not be usable.
            responses.insert(
                "422".into(),
                error("A value the connector or the upstream refused (a path value, the body), or a config it cannot use; `field` names it"),
            );
            responses.insert(
                "502".into(),
                error("`upstream_auth_error` or `upstream_error`"),
            );
            if action.admin_only() {
                responses.insert("403".into(), error("Needs role admin or owner"));
            }
        }
    }
    operation["parameters"] = Value::Array(parameters);
    operation["responses"] = Value::Object(responses);
    serde_json::from_value(operation).unwrap_or_else(|e| {
        tracing::warn!(area = %descriptor.area, path, "declared route documented without detail: {e}");
        Operation::new()
    })
}

/// Folds the operation another connector of the area declares at the same
/// route into the first one's: its parameters join (each name once), and
/// the description names every connector serving the route.
pub fn merge(first: &mut Operation, other: Operation) {
    let mut parameters = first.parameters.take().unwrap_or_default();
    for parameter in other.parameters.unwrap_or_default() {
        if !parameters.iter().any(|p| p.name == parameter.name) {
            parameters.push(parameter);
        }
    }
    first.parameters = Some(parameters);
    if let (Some(mine), Some(theirs)) = (&mut first.description, other.description) {
        if !mine.contains(&theirs) {
            mine.push(' ');
            mine.push_str(&theirs);
        }
    }
}
