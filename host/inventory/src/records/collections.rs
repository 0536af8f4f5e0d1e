//! Reads of synced collections for the declared views: lists with search
//! and field filters, one record by key or by device name, aggregates and
//! related records. Every query is scoped by tenant and area (the rows'
//! `source`), and a collection is the rows' `kind`.
//!
//! Normalized fields live in the `fields` JSON text column. A field's value
//! is read with `json_extract` on SQLite and `->>` on PostgreSQL; its name
//! is always bound, never pasted. Text compares through `LOWER` on both
//! sides (Unicode on both engines: SQLite's is ours).

use serde_json::Value;

use cairn_core::db::{Backend, Db, StoredJson};
use cairn_core::ids::TenantId;
use cairn_plugins::FieldType;

/// What a view reads: the tenant's rows of one collection in one area.
pub struct Scope<'a> {
    pub tenant: &'a TenantId,
    pub area: &'a str,
    pub collection: &'a str,
}

/// A filter on one declared field, its value already checked against the
/// field's type.
pub struct FieldFilter {
    pub field: String,
    pub field_type: FieldType,
    pub value: String,
}

#[derive(Debug, sqlx_macros::FromRow)]
pub struct StoredRecord {
    pub record_key: String,
    pub device_name: Option<String>,
    pub client_id: Option<String>,
    pub group_ids: StoredJson,
    pub fields: StoredJson,
    pub body: StoredJson,
    pub updated_at: i64,
}

const COLUMNS: &str = "record_key, device_name, client_id, group_ids, fields, body, updated_at";

/// SQL text of field `$n` of a row (the field's name bound at `$n`).
fn field_text(backend: Backend, n: usize) -> String {
    match backend {
        Backend::Sqlite => format!("CAST(json_extract(fields, '$.' || ${n}) AS TEXT)"),
        Backend::Postgres => format!("(CAST(fields AS jsonb) ->> ${n})"),
    }
}

/// A condition that field `$n` matches value `$m` as its type says:
/// equality ignoring case for text, numerically for numbers, any element
/// for string lists.
fn field_matches(backend: Backend, field_type: FieldType, n: usize, m: usize) -> String {
    let text = field_text(backend, n);
    match (field_type, backend) {
        (FieldType::String | FieldType::DateTime, _) => format!("LOWER({text}) = LOWER(${m})"),
        (FieldType::Integer | FieldType::Number, Backend::Sqlite) => {
            format!("CAST({text} AS REAL) = CAST(${m} AS REAL)")
        }
        (FieldType::Integer | FieldType::Number, Backend::Postgres) => {
            format!("CAST({text} AS DOUBLE PRECISION) = CAST(${m} AS DOUBLE PRECISION)")
        }
        // SQLite reads JSON true/false as 1/0; the value is bound that way.
        (FieldType::Boolean, _) => format!("{text} = ${m}"),
        (FieldType::StringList, Backend::Sqlite) => format!(
            "EXISTS (SELECT 1 FROM json_each(fields, '$.' || ${n}) \
             WHERE LOWER(CAST(value AS TEXT)) = LOWER(${m}))"
        ),
        (FieldType::StringList, Backend::Postgres) => format!(
            "EXISTS (SELECT 1 FROM jsonb_array_elements_text(\
             CASE WHEN jsonb_typeof(CAST(fields AS jsonb) -> ${n}) = 'array' \
             THEN CAST(fields AS jsonb) -> ${n} ELSE '[]'::jsonb END) AS element(value) \
             WHERE LOWER(value) = LOWER(${m}))"
        ),
    }
}

/// A boolean filter's value as each engine reads a JSON boolean.
fn boolean_value(backend: Backend, value: &str) -> String {
    let truthy = value == "true";
    match backend {
        Backend::Sqlite => if truthy { "1" } else { "0" }.into(),
        Backend::Postgres => if truthy { "true" } else { "false" }.into(),
    }
}

/// `%` and `_` in a user's search are literal.
fn like_pattern(search: &str) -> String {
    let escaped = search
        .replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_");
    format!("%{escaped}%")
}

/// A list's conditions after the scope (`$1` to `$3`) and the values they
/// bind, in order.
struct Conditions {
    sql: String,
    binds: Vec<String>,
}

fn conditions(
    backend: Backend,
    search: Option<(&str, &[String])>,
    filters: &[FieldFilter],
) -> Conditions {
    let mut sql = String::new();
    let mut binds: Vec<String> = vec![];
    let mut next = 4;
    if let Some((search, fields)) = search.filter(|(s, _)| !s.is_empty()) {
        let pattern_at = next;
        binds.push(like_pattern(search));
        next += 1;
        let mut alternatives = vec![
            format!("LOWER(COALESCE(device_name, '')) LIKE LOWER(${pattern_at}) ESCAPE '\\'"),
            format!("LOWER(record_key) LIKE LOWER(${pattern_at}) ESCAPE '\\'"),
        ];
        for field in fields {
            binds.push(field.clone());
            alternatives.push(format!(
                "LOWER(COALESCE({}, '')) LIKE LOWER(${pattern_at}) ESCAPE '\\'",
                field_text(backend, next)
            ));
            next += 1;
        }
        sql.push_str(&format!(" AND ({})", alternatives.join(" OR ")));
    }
    for filter in filters {
        binds.push(filter.field.clone());
        binds.push(match filter.field_type {
            FieldType::Boolean => boolean_value(backend, &filter.value),
            _ => filter.value.clone(),
        });
        sql.push_str(&format!(
            " AND {}",
            field_matches(backend, filter.field_type, next, next + 1)
        ));
        next += 2;
    }
    Conditions { sql, binds }
}

const SCOPE: &str = "tenant_id = $1 AND source = $2 AND kind = $3";

/// A page of the collection's records, by device name then key, and the
/// total matching.
pub async fn list(
    db: &Db,
    scope: &Scope<'_>,
    search: Option<(&str, &[String])>,
    filters: &[FieldFilter],
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<StoredRecord>, i64)> {
    let conditions = conditions(db.backend, search, filters);
    let n = 4 + conditions.binds.len();
    let select = format!(
        "SELECT {COLUMNS} FROM source_records WHERE {SCOPE}{} \
         ORDER BY device_name, record_key LIMIT ${n} OFFSET ${}",
        conditions.sql,
        n + 1
    );
    let mut query = sqlx::query_as(&select)
        .bind(scope.tenant.as_str())
        .bind(scope.area)
        .bind(scope.collection);
    for value in &conditions.binds {
        query = query.bind(value.as_str());
    }
    let rows = query.bind(limit).bind(offset).fetch_all(&db.pool).await?;
    let count = format!(
        "SELECT COUNT(*) FROM source_records WHERE {SCOPE}{}",
        conditions.sql
    );
    let mut query = sqlx::query_scalar(&count)
        .bind(scope.tenant.as_str())
        .bind(scope.area)
        .bind(scope.collection);
    for value in &conditions.binds {
        query = query.bind(value.as_str());
    }
    let total = query.fetch_one(&db.pool).await?;
    Ok((rows, total))
}

/// Every record a [`list`] with the same search and filters matches, for
/// streaming: its SQL owned, so the stream of [`Matching::rows`] can
/// outlive the request that built it.
pub struct Matching {
    sql: String,
    binds: Vec<String>,
}

impl Matching {
    pub fn new(
        backend: Backend,
        search: Option<(&str, &[String])>,
        filters: &[FieldFilter],
    ) -> Matching {
        let conditions = conditions(backend, search, filters);
        Matching {
            sql: format!(
                "SELECT {COLUMNS} FROM source_records WHERE {SCOPE}{} \
                 ORDER BY device_name, record_key",
                conditions.sql
            ),
            binds: conditions.binds,
        }
    }

    pub fn rows<'a>(
        &'a self,
        db: &'a Db,
        scope: &'a Scope<'a>,
    ) -> futures::stream::BoxStream<'a, sqlx::Result<StoredRecord>> {
        let mut query = sqlx::query_as(&self.sql)
            .bind(scope.tenant.as_str())
            .bind(scope.area)
            .bind(scope.collection);
        for value in &self.binds {
            query = query.bind(value.as_str());
        }
        query.fetch(&db.pool)
    }
}

/// The record with key `key`.
pub async fn by_key(db: &Db, scope: &Scope<'_>, key: &str) -> sqlx::Result<Option<StoredRecord>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM source_records WHERE {SCOPE} AND record_key = $4"
    ))
    .bind(scope.tenant.as_str())
    .bind(scope.area)
    .bind(scope.collection)
    .bind(key)
    .fetch_optional(&db.pool)
    .await
}

/// The record whose device name matches `name`, ignoring case: exactly
/// first; else by the 15-character NetBIOS form of either name; else by the
/// short host (before the first dot) of either. The newest sync wins a tie.
pub async fn by_device_name(
    db: &Db,
    scope: &Scope<'_>,
    name: &str,
) -> sqlx::Result<Option<StoredRecord>> {
    device_named(
        db,
        scope.tenant,
        scope.area,
        ("kind", scope.collection),
        name,
    )
    .await
}

/// [`by_device_name`] among the area's records typed `record_type`, in
/// whichever collection (an EDR agent for a ticket's configuration).
pub async fn typed_by_device_name(
    db: &Db,
    tenant: &TenantId,
    area: &str,
    record_type: &str,
    name: &str,
) -> sqlx::Result<Option<StoredRecord>> {
    device_named(db, tenant, area, ("record_type", record_type), name).await
}

/// `column` is `kind` or `record_type`, never a caller's text.
async fn device_named(
    db: &Db,
    tenant: &TenantId,
    area: &str,
    (column, value): (&'static str, &str),
    name: &str,
) -> sqlx::Result<Option<StoredRecord>> {
    let short = |column: &str| match db.backend {
        Backend::Sqlite => format!(
            "CASE WHEN INSTR({column}, '.') > 0 THEN SUBSTR({column}, 1, INSTR({column}, '.') - 1) \
             ELSE {column} END"
        ),
        Backend::Postgres => format!("split_part({column}, '.', 1)"),
    };
    let stored = "LOWER(device_name)";
    let wanted = "LOWER($4)";
    let (stored_short, wanted_short) = (short(stored), short(wanted));
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM source_records \
         WHERE tenant_id = $1 AND source = $2 AND {column} = $3 AND device_name IS NOT NULL AND (\
           {stored} = {wanted} \
           OR SUBSTR({stored}, 1, 15) = SUBSTR({wanted}, 1, 15) \
           OR {stored_short} = {wanted_short}) \
         ORDER BY CASE WHEN {stored} = {wanted} THEN 0 \
                       WHEN SUBSTR({stored}, 1, 15) = SUBSTR({wanted}, 1, 15) THEN 1 ELSE 2 END, \
                  updated_at DESC, record_key \
         LIMIT 1"
    ))
    .bind(tenant.as_str())
    .bind(area)
    .bind(value)
    .bind(name)
    .fetch_optional(&db.pool)
    .await
}

/// At most this many related records of one kind are attached to a record.
pub const RELATED_CAP: i64 = 1000;

/// Records of `scope`'s collection whose field `field` equals `key`.
pub async fn related(
    db: &Db,
    scope: &Scope<'_>,
    field: &str,
    key: &str,
) -> sqlx::Result<Vec<StoredRecord>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM source_records WHERE {SCOPE} AND {} = $5 \
         ORDER BY updated_at DESC, record_key LIMIT {RELATED_CAP}",
        field_text(db.backend, 4)
    ))
    .bind(scope.tenant.as_str())
    .bind(scope.area)
    .bind(scope.collection)
    .bind(field)
    .bind(key)
    .fetch_all(&db.pool)
    .await
}

/// How many records of `scope`'s collection have field `field` equal to
/// `key` ([`related`] gives at most [`RELATED_CAP`] of them).
pub async fn related_count(
    db: &Db,
    scope: &Scope<'_>,
    field: &str,
    key: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM source_records WHERE {SCOPE} AND {} = $5",
        field_text(db.backend, 4)
    ))
    .bind(scope.tenant.as_str())
    .bind(scope.area)
    .bind(scope.collection)
    .bind(field)
    .bind(key)
    .fetch_one(&db.pool)
    .await
}

/// A record of some source, for joins across sources.
#[derive(Debug, sqlx_macros::FromRow)]
pub struct SourcedRecord {
    pub source: String,
    pub record_key: String,
    pub device_name: Option<String>,
    pub body: StoredJson,
}

/// The tenant's records typed `record_type` of every source but
/// `except_source` whose key, ignoring case, is one of `keys`.
pub async fn of_type_by_keys(
    db: &Db,
    tenant: &TenantId,
    record_type: &str,
    except_source: &str,
    keys: &[String],
) -> sqlx::Result<Vec<SourcedRecord>> {
    sqlx::query_as(&format!(
        "SELECT source, record_key, device_name, body FROM source_records \
         WHERE tenant_id = $1 AND record_type = $2 AND source <> $3 AND LOWER(record_key) IN ({}) \
         ORDER BY source, record_key LIMIT {RELATED_CAP}",
        cairn_core::db::json_text_values(db.backend, 4)
    ))
    .bind(tenant.as_str())
    .bind(record_type)
    .bind(except_source)
    .bind(cairn_core::db::lowered_json(keys))
    .fetch_all(&db.pool)
    .await
}

/// The tenant's records typed `record_type` whose text field `field`,
/// ignoring case, is one of `values`.
pub async fn of_type_by_field(
    db: &Db,
    tenant: &TenantId,
    record_type: &str,
    field: &str,
    values: &[String],
) -> sqlx::Result<Vec<SourcedRecord>> {
    sqlx::query_as(&format!(
        "SELECT source, record_key, device_name, body FROM source_records \
         WHERE tenant_id = $1 AND record_type = $2 AND LOWER({}) IN ({}) \
         ORDER BY device_name, source, record_key LIMIT {RELATED_CAP}",
        field_text(db.backend, 3),
        cairn_core::db::json_text_values(db.backend, 4)
    ))
    .bind(tenant.as_str())
    .bind(record_type)
    .bind(field)
    .bind(cairn_core::db::lowered_json(values))
    .fetch_all(&db.pool)
    .await
}

/// The user (field `user`) of each device record (typed `device`, any
/// area) named, ignoring case, one of `device_names`: (device name as
/// stored, user, area), at most [`RELATED_CAP`] per call.
pub async fn users_of_device_records(
    db: &Db,
    tenant: &TenantId,
    device_names: &[String],
) -> sqlx::Result<Vec<(String, String, String)>> {
    if device_names.is_empty() {
        return Ok(vec![]);
    }
    sqlx::query_as(&format!(
        "SELECT device_name, {user}, source FROM source_records \
         WHERE tenant_id = $1 AND record_type = 'device' AND device_name IS NOT NULL \
         AND {user} IS NOT NULL AND {user} <> '' AND LOWER(device_name) IN ({names}) \
         ORDER BY device_name, source LIMIT {RELATED_CAP}",
        user = field_text(db.backend, 2),
        names = cairn_core::db::json_text_values(db.backend, 3)
    ))
    .bind(tenant.as_str())
    .bind("user")
    .bind(cairn_core::db::lowered_json(device_names))
    .fetch_all(&db.pool)
    .await
}

/// The record typed `record_type` with key `key` in area `area`, whichever
/// collection holds it.
pub async fn typed_by_key(
    db: &Db,
    tenant: &TenantId,
    area: &str,
    record_type: &str,
    key: &str,
) -> sqlx::Result<Option<StoredRecord>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM source_records \
         WHERE tenant_id = $1 AND source = $2 AND record_type = $3 AND record_key = $4 \
         ORDER BY kind LIMIT 1"
    ))
    .bind(tenant.as_str())
    .bind(area)
    .bind(record_type)
    .bind(key)
    .fetch_optional(&db.pool)
    .await
}

/// Every record typed `record_type` with key `key` in area `area`, with
/// its collection (a ticket both synced and bulk-pulled).
pub async fn typed_by_key_in_each(
    db: &Db,
    tenant: &TenantId,
    area: &str,
    record_type: &str,
    key: &str,
) -> sqlx::Result<Vec<(String, StoredRecord)>> {
    let rows = sqlx::query(&format!(
        "SELECT kind, {COLUMNS} FROM source_records \
         WHERE tenant_id = $1 AND source = $2 AND record_type = $3 AND record_key = $4 \
         ORDER BY kind"
    ))
    .bind(tenant.as_str())
    .bind(area)
    .bind(record_type)
    .bind(key)
    .fetch_all(&db.pool)
    .await?;
    rows.iter()
        .map(|row| {
            use sqlx::{FromRow, Row};
            Ok((row.try_get("kind")?, StoredRecord::from_row(row)?))
        })
        .collect()
}

/// A record of some area with its normalized fields, for another area that
/// derives data from every record of a type.
#[derive(Debug, sqlx_macros::FromRow)]
pub struct TypedRecord {
    pub source: String,
    pub kind: String,
    pub record_key: String,
    pub device_name: Option<String>,
    pub fields: StoredJson,
}

/// Every record of the tenant typed `record_type`, streamed in no
/// particular order.
pub fn typed_records<'a>(
    db: &'a Db,
    tenant: &'a TenantId,
    record_type: &'a str,
) -> futures::stream::BoxStream<'a, sqlx::Result<TypedRecord>> {
    sqlx::query_as(
        "SELECT source, kind, record_key, device_name, fields FROM source_records \
         WHERE tenant_id = $1 AND record_type = $2",
    )
    .bind(tenant.as_str())
    .bind(record_type)
    .fetch(&db.pool)
}

/// What changes whenever a record typed `record_type` of the tenant is
/// written or removed: their count and newest write.
pub async fn typed_version(db: &Db, tenant: &TenantId, record_type: &str) -> sqlx::Result<String> {
    let (count, newest): (i64, Option<i64>) = sqlx::query_as(
        "SELECT COUNT(*), MAX(updated_at) FROM source_records \
         WHERE tenant_id = $1 AND record_type = $2",
    )
    .bind(tenant.as_str())
    .bind(record_type)
    .fetch_one(&db.pool)
    .await?;
    Ok(format!("{count}:{}", newest.unwrap_or(0)))
}

/// A user record and the fields that name them.
#[derive(Debug, sqlx_macros::FromRow)]
pub struct UserRecord {
    pub source: String,
    pub record_key: String,
    pub fields: StoredJson,
}

/// The tenant's records typed `user` of `sources` whose key, `mail` or one
/// of whose `aliases` is, ignoring case, one of `addresses`.
pub async fn users_named(
    db: &Db,
    tenant: &TenantId,
    sources: &[String],
    addresses: &[String],
) -> sqlx::Result<Vec<UserRecord>> {
    let addresses_in = cairn_core::db::json_text_values(db.backend, 3);
    let aliases = match db.backend {
        Backend::Sqlite => "SELECT value FROM json_each(COALESCE(json_extract(fields, '$.aliases'), '[]'))".to_string(),
        Backend::Postgres => "SELECT jsonb_array_elements_text(CASE WHEN jsonb_typeof(CAST(fields AS jsonb) -> 'aliases') = 'array' \
             THEN CAST(fields AS jsonb) -> 'aliases' ELSE CAST('[]' AS jsonb) END) AS value".to_string(),
    };
    let mail = match db.backend {
        Backend::Sqlite => "CAST(json_extract(fields, '$.mail') AS TEXT)",
        Backend::Postgres => "(CAST(fields AS jsonb) ->> 'mail')",
    };
    sqlx::query_as(&format!(
        "SELECT source, record_key, fields FROM source_records \
         WHERE tenant_id = $1 AND record_type = 'user' AND source IN ({}) AND ( \
           LOWER(record_key) IN ({addresses_in}) OR LOWER({mail}) IN ({addresses_in}) \
           OR EXISTS (SELECT 1 FROM ({aliases}) AS alias WHERE LOWER(alias.value) IN ({addresses_in}))) \
         ORDER BY source, record_key LIMIT {RELATED_CAP}",
        cairn_core::db::json_text_values(db.backend, 2),
    ))
    .bind(tenant.as_str())
    .bind(serde_json::to_string(sources).unwrap_or_default())
    .bind(cairn_core::db::lowered_json(addresses))
    .fetch_all(&db.pool)
    .await
}

/// One group of an aggregate view.
#[derive(Debug, sqlx_macros::FromRow)]
pub struct Group {
    pub value: String,
    pub records: i64,
    pub devices: i64,
}

/// The collection grouped by field `by` (ignoring case; a group shows its
/// first spelling), each with its record and distinct device counts, most
/// devices first; `search` keeps groups whose value contains it.
pub async fn aggregate(
    db: &Db,
    scope: &Scope<'_>,
    by: &str,
    search: Option<&str>,
    limit: i64,
    offset: i64,
) -> sqlx::Result<(Vec<Group>, i64)> {
    let value = field_text(db.backend, 4);
    let search_sql = if search.is_some_and(|s| !s.is_empty()) {
        format!(" AND LOWER({value}) LIKE LOWER($5) ESCAPE '\\'")
    } else {
        String::new()
    };
    let grouped = format!(
        "FROM source_records WHERE {SCOPE} AND {value} IS NOT NULL{search_sql} GROUP BY LOWER({value})"
    );
    let pattern = search.filter(|s| !s.is_empty()).map(like_pattern);
    let (limit_at, offset_at) = if pattern.is_some() { (6, 7) } else { (5, 6) };
    let select = format!(
        "SELECT MIN({value}) AS value, COUNT(*) AS records, \
         COUNT(DISTINCT LOWER(device_name)) AS devices {grouped} \
         ORDER BY devices DESC, records DESC, MIN({value}) LIMIT ${limit_at} OFFSET ${offset_at}"
    );
    let mut query = sqlx::query_as(&select)
        .bind(scope.tenant.as_str())
        .bind(scope.area)
        .bind(scope.collection)
        .bind(by);
    if let Some(pattern) = &pattern {
        query = query.bind(pattern.as_str());
    }
    let groups = query.bind(limit).bind(offset).fetch_all(&db.pool).await?;
    let count = format!("SELECT COUNT(*) FROM (SELECT 1 AS one {grouped}) AS groups");
    let mut query = sqlx::query_scalar(&count)
        .bind(scope.tenant.as_str())
        .bind(scope.area)
        .bind(scope.collection)
        .bind(by);
    if let Some(pattern) = &pattern {
        query = query.bind(pattern.as_str());
    }
    let total = query.fetch_one(&db.pool).await?;
    Ok((groups, total))
}

/// A stored record as views answer it.
pub fn record_json(row: StoredRecord) -> Value {
    serde_json::json!({
        "key": row.record_key,
        "device_name": row.device_name,
        "client_id": row.client_id,
        "group_ids": row.group_ids.0,
        "fields": row.fields.0,
        "record": row.body.0,
        "changed_at": cairn_core::db::to_rfc3339(row.updated_at),
    })
}
