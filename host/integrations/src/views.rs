//! Answers a connector's declared views from what was synced.

use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::collections::{self, FieldFilter, Scope};
use super::export::{self, ExportRequest};
use super::user_links;
use cairn_core::db::Db;
use cairn_core::http::error::{ApiError, ApiResult};
use cairn_core::ids::TenantId;
use cairn_plugins::{Collection, ConnectorDescriptor, FieldType, View};

/// Page sizes of list and aggregate views.
const DEFAULT_LIMIT: i64 = 100;
const MAX_LIMIT: i64 = 500;

/// The query parameters every list and aggregate view takes besides its
/// field filters: `skip` and `limit` as every list of the API, and
/// `offset`, the deprecated spelling of `skip` (see CHANGELOG.md).
pub const PAGE_PARAMS: &[&str] = &["search", "limit", "skip", "offset"];

struct Page {
    search: Option<String>,
    limit: i64,
    skip: i64,
    filters: Vec<FieldFilter>,
}

/// Reads `search`, `limit`, `skip` (or `offset`) and, where `filterable` holds the
/// collection, a filter per declared field; anything else is a 422 naming
/// the parameter, so a misspelt filter never silently matches everything.
fn page(query: &[(String, String)], filterable: Option<&Collection>) -> ApiResult<Page> {
    let mut page = Page {
        search: None,
        limit: DEFAULT_LIMIT,
        skip: 0,
        filters: vec![],
    };
    for (name, value) in query {
        // Stored text never holds NUL (it is dropped on write), and
        // PostgreSQL refuses it in a bound value.
        let value = &value.replace('\0', "");
        match name.as_str() {
            "search" => page.search = Some(value.clone()),
            "limit" => {
                page.limit = value
                    .parse()
                    .ok()
                    .filter(|l| (1..=MAX_LIMIT).contains(l))
                    .ok_or_else(|| {
                        ApiError::validation("limit", format!("must be 1 to {MAX_LIMIT}"))
                    })?
            }
            "skip" | "offset" => {
                page.skip = value
                    .parse()
                    .ok()
                    .filter(|o: &i64| *o >= 0)
                    .ok_or_else(|| ApiError::validation(name, "must be 0 or more"))?
            }
            other => {
                let field = filterable
                    .and_then(|c| c.field(other))
                    .ok_or_else(|| ApiError::validation(other, "not a parameter of this view"))?;
                check_filter_value(other, field.field_type, value)?;
                page.filters.push(FieldFilter {
                    field: other.to_string(),
                    field_type: field.field_type,
                    value: value.clone(),
                });
            }
        }
    }
    Ok(page)
}

fn check_filter_value(name: &str, field_type: FieldType, value: &str) -> ApiResult<()> {
    let ok = match field_type {
        FieldType::Integer => value.parse::<i64>().is_ok(),
        FieldType::Number => value.parse::<f64>().is_ok_and(f64::is_finite),
        FieldType::Boolean => value == "true" || value == "false",
        FieldType::String | FieldType::DateTime | FieldType::StringList => true,
    };
    if ok {
        Ok(())
    } else {
        Err(ApiError::validation(
            name,
            format!("{value:?} is not a valid {field_type:?} value").to_lowercase(),
        ))
    }
}

/// The answer of `view` of `descriptor` for the tenant: JSON, or for an
/// export the CSV stream.
pub async fn respond(
    db: &Db,
    tenant: &TenantId,
    descriptor: &ConnectorDescriptor,
    view: &View,
    params: &[(String, String)],
    query: &[(String, String)],
) -> ApiResult<Response> {
    let area = descriptor.area.as_str();
    let collection = descriptor
        .collection(view.collection())
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("view over an undeclared collection")))?;
    let scope = Scope {
        tenant,
        area,
        collection: &collection.name,
    };
    let param = params
        .first()
        .map(|(_, v)| v.replace('\0', ""))
        .unwrap_or_default();
    let param = param.as_str();
    let answer = match view {
        View::List { .. } => {
            let page = page(query, Some(collection))?;
            let search = page
                .search
                .as_deref()
                .map(|s| (s, collection.search.as_slice()));
            let (rows, total) =
                collections::list(db, &scope, search, &page.filters, page.limit, page.skip).await?;
            json!({
                "items": rows.into_iter().map(collections::record_json).collect::<Vec<_>>(),
                "total": total,
                "limit": page.limit,
                "skip": page.skip,
                "offset": page.skip,
            })
        }
        View::Aggregate { by, .. } => {
            let page = page(query, None)?;
            let (groups, total) = collections::aggregate(
                db,
                &scope,
                by,
                page.search.as_deref(),
                page.limit,
                page.skip,
            )
            .await?;
            let items: Vec<Value> = groups
                .into_iter()
                .map(|g| json!({by.as_str(): g.value, "records": g.records, "devices": g.devices}))
                .collect();
            json!({"items": items, "total": total, "limit": page.limit, "skip": page.skip, "offset": page.skip})
        }
        View::Children { field, .. } => {
            page(query, None)?;
            let rows = collections::related(db, &scope, field, param).await?;
            // Counted only when the page is full: below the cap it is all.
            let total = match rows.len() as i64 {
                n if n < collections::RELATED_CAP => n,
                _ => collections::related_count(db, &scope, field, param).await?,
            };
            json!({
                "items": rows.into_iter().map(collections::record_json).collect::<Vec<_>>(),
                "total": total,
            })
        }
        View::Export { columns, .. } => {
            let page = page(query, Some(collection))?;
            if page.limit != DEFAULT_LIMIT || page.skip != 0 {
                return Err(ApiError::validation(
                    "limit",
                    "an export gives every matching record; limit and skip do not apply",
                ));
            }
            return Ok(export::respond(ExportRequest {
                db: db.clone(),
                tenant: tenant.clone(),
                area: area.to_string(),
                collection: collection.name.clone(),
                search: page.search.map(|s| (s, collection.search.clone())),
                filters: page.filters,
                columns: columns.clone(),
                file_name: format!("{area}-{}.csv", collection.name),
            }));
        }
        View::ByKey { related, .. } | View::ByDeviceName { related, .. } => {
            let is_user = collection.record_type == user_links::USER;
            let found = match view {
                // A user is keyed by their lowercased principal name.
                View::ByKey { .. } if is_user => {
                    collections::by_key(db, &scope, &cairn_core::db::lower(param)).await?
                }
                View::ByKey { .. } => collections::by_key(db, &scope, param).await?,
                _ => collections::by_device_name(db, &scope, param).await?,
            };
            let record = found.ok_or_else(|| {
                ApiError::Missing(format!(
                    "no synced {} record matches {param:?}",
                    collection.name
                ))
            })?;
            let key = record.record_key.clone();
            let mut attached = Map::new();
            if is_user {
                user_links::attach(db, tenant, area, &record, &mut attached).await?;
            }
            let mut answer = collections::record_json(record);
            for link in related {
                let scope = Scope {
                    tenant,
                    area,
                    collection: &link.collection,
                };
                let rows = collections::related(db, &scope, &link.field, &key).await?;
                attached.insert(
                    link.name.clone(),
                    Value::Array(rows.into_iter().map(collections::record_json).collect()),
                );
            }
            if let Value::Object(object) = &mut answer {
                object.extend(attached);
            }
            answer
        }
    };
    Ok(axum::Json(answer).into_response())
}
