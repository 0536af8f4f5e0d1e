//! Answers a connector's declared views from what was synced.

use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::collections::{self, FieldFilter, Scope};
use super::export::{self, ExportRequest};
use super::user_links;
use crate::auth::TenantId;
use crate::db::Db;
use crate::http::error::{ApiError, ApiResult};
use crate::plugins::{Collection, ConnectorDescriptor, FieldType, View};

/// Page sizes of list and aggregate views.
const DEFAULT_LIMIT: i64 = 100;
const MAX_LIMIT: i64 = 500;

/// The query parameters every list and aggregate view takes besides its
/// field filters.
pub const PAGE_PARAMS: &[&str] = &["search", "limit", "offset"];

struct Page {
    search: Option<String>,
    limit: i64,
    offset: i64,
    filters: Vec<FieldFilter>,
}

/// Reads `search`, `limit`, `offset` and, where `filterable` holds the
/// collection, a filter per declared field; anything else is a 422 naming
/// the parameter, so a misspelt filter never silently matches everything.
fn page(query: &[(String, String)], filterable: Option<&Collection>) -> ApiResult<Page> {
    let mut page = Page {
        search: None,
        limit: DEFAULT_LIMIT,
        offset: 0,
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
            "offset" => {
                page.offset = value
                    .parse()
                    .ok()
                    .filter(|o: &i64| *o >= 0)
                    .ok_or_else(|| ApiError::validation("offset", "must be 0 or more"))?
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
    if let View::Export {
        collection,
        columns,
        ..
    } = view
    {
        let declared = descriptor.collection(collection).ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!("view over an undeclared collection"))
        })?;
        let page = page(query, Some(declared))?;
        if page.limit != DEFAULT_LIMIT || page.offset != 0 {
            return Err(ApiError::validation(
                "limit",
                "an export gives every matching record; limit and offset do not apply",
            ));
        }
        return Ok(export::respond(ExportRequest {
            db: db.clone(),
            tenant: tenant.clone(),
            area: descriptor.area.clone(),
            collection: collection.clone(),
            search: page.search.map(|s| (s, declared.search.clone())),
            filters: page.filters,
            columns: columns.clone(),
            file_name: format!("{}-{collection}.csv", descriptor.area),
        }));
    }
    Ok(axum::Json(answer(db, tenant, descriptor, view, params, query).await?).into_response())
}

/// The JSON answer of `view` of `descriptor` for the tenant.
async fn answer(
    db: &Db,
    tenant: &TenantId,
    descriptor: &ConnectorDescriptor,
    view: &View,
    params: &[(String, String)],
    query: &[(String, String)],
) -> ApiResult<Value> {
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
    match view {
        View::List { .. } => {
            let page = page(query, Some(collection))?;
            let search = page
                .search
                .as_deref()
                .map(|s| (s, collection.search.as_slice()));
            let (rows, total) =
                collections::list(db, &scope, search, &page.filters, page.limit, page.offset)
                    .await?;
            Ok(json!({
                "items": rows.into_iter().map(collections::record_json).collect::<Vec<_>>(),
                "total": total,
                "limit": page.limit,
                "offset": page.offset,
            }))
        }
        View::Aggregate { by, .. } => {
            let page = page(query, None)?;
            let (groups, total) = collections::aggregate(
                db,
                &scope,
                by,
                page.search.as_deref(),
                page.limit,
                page.offset,
            )
            .await?;
            let items: Vec<Value> = groups
                .into_iter()
                .map(|g| json!({by.as_str(): g.value, "records": g.records, "devices": g.devices}))
                .collect();
            Ok(json!({"items": items, "total": total, "limit": page.limit, "offset": page.offset}))
        }
        View::Children { field, .. } => {
            page(query, None)?;
            let rows = collections::related(db, &scope, field, param).await?;
            let total = collections::related_count(db, &scope, field, param).await?;
            Ok(json!({
                "items": rows.into_iter().map(collections::record_json).collect::<Vec<_>>(),
                "total": total,
            }))
        }
        View::Export { .. } => Err(ApiError::Internal(anyhow::anyhow!(
            "an export is streamed by views::respond"
        ))),
        View::ByKey { related, .. } | View::ByDeviceName { related, .. } => {
            let is_user = collection.record_type == user_links::USER;
            let found = match view {
                // A user is keyed by their lowercased principal name.
                View::ByKey { .. } if is_user => {
                    collections::by_key(db, &scope, &crate::db::lower(param)).await?
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
            Ok(answer)
        }
    }
}
