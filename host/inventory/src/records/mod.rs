//! The one owner of `source_records`: what connectors and CSV sources
//! report beside inventory items (devices, users, threats, findings, ...),
//! upserted under an explicit [`ReplaceRule`], pruned, counted, removed
//! with their source, and read by the declared views (`collections`).
//! Other areas hand rows in staged ([`StagedRows`]) and never name the
//! table.
//!
//! A row is 8 values in this order: `kind, record_type, record_key,
//! device_name, client_id, group_ids, fields, body` (`group_ids` a JSON
//! array as text, `fields` and `body` JSON objects as text). Triggers on the table queue every change
//! for the rollup, whichever rule wrote it.

pub mod collections;

use serde::Serialize;
use sqlx::{Any, Transaction};
use utoipa::ToSchema;

use cairn_core::db::{Backend, Db, StoredJson};
use cairn_core::ids::TenantId;

use crate::stamped::{self, StampedTable};
pub use crate::stamped::{ReplaceRule, StagedRowError, Upsert};

const RECORDS: StampedTable = StampedTable {
    name: "source_records",
    insert: "INSERT INTO source_records (tenant_id, source, kind, record_type, record_key, \
         device_name, client_id, group_ids, fields, body, seen_run, updated_at)",
    values: "$1, $2, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, \
         value->>6, value->>7, $3, $5",
    key: "kind, record_key",
    staged_key: "value->>0, value->>2",
    // A record whose columns all equal the row's is not rewritten.
    content: &[
        "record_type",
        "device_name",
        "client_id",
        "group_ids",
        "fields",
        "body",
    ],
    prune: (
        "DELETE FROM source_records WHERE tenant_id = $1 AND source = $2 \
         AND (kind, record_key) IN (SELECT kind, record_key FROM source_records \
          WHERE tenant_id = $1 AND source = $2 AND seen_run <> $3 LIMIT $4)",
        "DELETE FROM source_records WHERE ctid = ANY(ARRAY(SELECT ctid FROM source_records \
          WHERE tenant_id = $1 AND source = $2 AND seen_run <> $3 LIMIT $4)) \
         AND seen_run <> $3",
    ),
    delete_source: "DELETE FROM source_records WHERE tenant_id = $1 AND source = $2",
};

/// Rows of the module's layout staged for [`upsert`].
pub type StagedRows = crate::stamped::StagedRows<8>;

/// The upsert of staged rows (the module's layout) under `rule` on
/// `backend`, built once by a caller that writes many. A record's key is
/// (`kind`, `record_key`).
pub fn upsert_sql(backend: Backend, rule: ReplaceRule) -> Upsert {
    stamped::upsert_sql::<8>(&RECORDS, backend, rule)
}

/// Upserts `rows` (staged in the module's layout) for `source`,
/// stamped `stamp`, inside `tx`. `statement` is [`upsert_sql`] for the
/// transaction's backend and the caller's rule, built once by a caller
/// that writes many arrays.
pub async fn upsert(
    tx: &mut Transaction<'_, Any>,
    statement: &Upsert,
    scope: (&TenantId, &str),
    stamp: &str,
    rows: &StagedRows,
    now: i64,
) -> sqlx::Result<u64> {
    stamped::upsert(tx, statement, scope, stamp, rows, now).await
}

/// Inserts new records (`chunks` staged in the module's layout, best
/// with `StagedRows::for_copy`) for `source`, stamped `stamp`, with
/// PostgreSQL's COPY inside the transaction on `conn`: a first sync's
/// [`ReplaceRule::NewKeys`] as one statement. A key the source already
/// holds fails it as a unique violation. Returns the records inserted.
pub async fn copy_new<'a>(
    conn: &mut sqlx::PgConnection,
    scope: (&TenantId, &str),
    stamp: &str,
    chunks: impl IntoIterator<Item = &'a StagedRows>,
    now: i64,
) -> sqlx::Result<u64> {
    stamped::copy_new_keys(conn, &RECORDS, scope, stamp, chunks, now).await
}

/// After an upload swapped in: deletes the source's records it did not
/// stamp, in batches. Returns the records deleted.
pub async fn prune_unstamped(
    db: &Db,
    tenant: &TenantId,
    source: &str,
    stamp: &str,
) -> sqlx::Result<u64> {
    stamped::prune_unstamped(&RECORDS, db, tenant, source, stamp).await
}

/// Deletes every record of `source` for the tenant, inside `tx` (its
/// config or its uploads were removed). Returns the records deleted.
pub async fn delete_source(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    source: &str,
) -> sqlx::Result<u64> {
    stamped::delete_source(&RECORDS, tx, tenant, source).await
}

/// How many records `source` holds for the tenant.
pub async fn count(db: &Db, tenant: &TenantId, source: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM source_records WHERE tenant_id = $1 AND source = $2")
        .bind(tenant.as_str())
        .bind(source)
        .fetch_one(&db.pool)
        .await
}

/// How many records `source` holds for the tenant, and for how many
/// distinct device names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx_macros::FromRow)]
pub struct RecordCounts {
    pub records: i64,
    pub devices: i64,
}

/// How many records, and distinct device names among them, `source` holds
/// for the tenant.
pub async fn source_counts(db: &Db, tenant: &TenantId, source: &str) -> sqlx::Result<RecordCounts> {
    sqlx::query_as(
        "SELECT COUNT(*) AS records, COUNT(DISTINCT device_name) AS devices \
         FROM source_records WHERE tenant_id = $1 AND source = $2",
    )
    .bind(tenant.as_str())
    .bind(source)
    .fetch_one(&db.pool)
    .await
}

/// How many records `source` holds for the tenant, by kind.
pub async fn counts_by_kind(
    db: &Db,
    tenant: &TenantId,
    source: &str,
) -> sqlx::Result<Vec<(String, i64)>> {
    sqlx::query_as(
        "SELECT kind, COUNT(*) FROM source_records WHERE tenant_id = $1 AND source = $2 \
         GROUP BY kind ORDER BY kind",
    )
    .bind(tenant.as_str())
    .bind(source)
    .fetch_all(&db.pool)
    .await
}

/// A record a CSV source wrote.
#[derive(Debug, Serialize, ToSchema, sqlx_macros::FromRow)]
pub struct SourceRecordView {
    /// `device`, `user`, `finding`, ...
    pub kind: String,
    pub record_key: String,
    pub device_name: Option<String>,
    #[schema(value_type = Object)]
    pub body: StoredJson,
}

/// A page of the records `source` holds for the tenant, by kind and key,
/// and how many it holds in all.
pub async fn of_source(
    db: &Db,
    tenant: &TenantId,
    source: &str,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<SourceRecordView>, i64)> {
    let rows: Vec<SourceRecordView> = sqlx::query_as(
        "SELECT kind, record_key, device_name, body FROM source_records \
         WHERE tenant_id = $1 AND source = $2 ORDER BY kind, record_key LIMIT $3 OFFSET $4",
    )
    .bind(tenant.as_str())
    .bind(source)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = count(db, tenant, source).await?;
    Ok((rows, total))
}

/// The source's device record for `name`: the exact name first (case
/// ignored), else a record whose name is the name's first 15 characters or
/// whose first 15 characters are the name.
pub async fn device_record(
    db: &Db,
    tenant: &TenantId,
    source: &str,
    name: &str,
) -> sqlx::Result<Option<SourceRecordView>> {
    let lower = name.to_lowercase();
    let short: String = lower.chars().take(crate::normalize::NETBIOS_LEN).collect();
    sqlx::query_as(
        "SELECT kind, record_key, device_name, body FROM source_records \
         WHERE tenant_id = $1 AND source = $2 AND kind = 'device' \
         AND (LOWER(device_name) = $3 OR LOWER(device_name) = $4 \
              OR SUBSTR(LOWER(device_name), 1, 15) = $3) \
         ORDER BY CASE WHEN LOWER(device_name) = $3 THEN 0 ELSE 1 END, record_key LIMIT 1",
    )
    .bind(tenant.as_str())
    .bind(source)
    .bind(&lower)
    .bind(&short)
    .fetch_optional(&db.pool)
    .await
}
