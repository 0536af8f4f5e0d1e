//! The one writer of `inventory_items`: the rows every source (a
//! connector's sync, a CSV upload) reports, upserted under an explicit
//! [`ReplaceRule`], pruned, counted and removed with their source. Other
//! areas hand rows in as a bound JSON array and never name the table.
//!
//! A row of the array is a JSON array of text (or null) in this order:
//! `item_key, device_name, device_id, os_platform, os_version, user_email,
//! user_name, application_name, vendor, version, publisher, client_id,
//! group_ids, os_name, os_build` (15 values; `group_ids` a JSON array as
//! text). Triggers on the table queue every change for the rollup and the
//! matcher, whichever rule wrote it.

use sqlx::{Any, Transaction};

use cairn_core::db::{delete_unstamped_in_batches, json_array_rows, Backend, Db};
use cairn_core::ids::TenantId;

/// Which row wins when a key comes again, and when a stored row is
/// rewritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplaceRule {
    /// A connector's page. The caller keeps the last row of each key (one
    /// statement may not touch a row twice); a stored row is rewritten,
    /// and stamped with the run, only when a content column differs, so an
    /// unchanged row keeps the stamp of the run that last changed it (the
    /// run's prune reads what it saw from `seen`, not from the stamp).
    ChangedContent,
    /// An upload swapped in. Every row is stamped with the upload; a key
    /// the upload already stamped is left alone, so a key repeated in the
    /// upload keeps its first row (within one array too). Rows the upload
    /// did not stamp are deleted after it by [`prune_unstamped`].
    FirstOfStamp,
}

/// The columns of an item a sync compares: a row whose columns all equal
/// the page's is not rewritten.
const CONTENT: &[&str] = &[
    "device_name",
    "device_id",
    "os_platform",
    "os_version",
    "user_email",
    "user_name",
    "application_name",
    "vendor",
    "version",
    "publisher",
    "client_id",
    "group_ids",
    "os_name",
    "os_build",
];

/// The upsert of one bound JSON array of rows (the module's layout): `$1`
/// tenant, `$2` source, `$3` the stamp (`seen_run`: a run or an upload),
/// `$4` the rows, `$5` now.
pub fn upsert_sql(backend: Backend, rule: ReplaceRule) -> String {
    let columns = "inventory_items (tenant_id, source, item_key, device_name, device_id, \
         os_platform, os_version, user_email, user_name, application_name, vendor, version, \
         publisher, client_id, group_ids, os_name, os_build, seen_run, updated_at)";
    let values = "$1, $2, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, \
         value->>6, value->>7, value->>8, value->>9, value->>10, value->>11, value->>12, \
         value->>13, value->>14, $3, $5";
    let set = CONTENT
        .iter()
        .chain(&["seen_run", "updated_at"])
        .map(|column| format!("{column} = excluded.{column}"))
        .collect::<Vec<_>>()
        .join(", ");
    let when = match rule {
        ReplaceRule::ChangedContent => CONTENT
            .iter()
            .map(|column| format!("inventory_items.{column} IS DISTINCT FROM excluded.{column}"))
            .collect::<Vec<_>>()
            .join(" OR "),
        ReplaceRule::FirstOfStamp => "inventory_items.seen_run <> excluded.seen_run".to_string(),
    };
    let conflict = format!("(tenant_id, source, item_key) DO UPDATE SET {set} WHERE {when}");
    // `WHERE true` keeps SQLite from reading ON CONFLICT as a join clause.
    match (backend, rule) {
        // One array may repeat a key: PostgreSQL keeps its first row, since
        // one statement may not update a row twice there (SQLite applies
        // them in turn, and the stamp leaves the later ones alone).
        (Backend::Postgres, ReplaceRule::FirstOfStamp) => format!(
            "INSERT INTO {columns} SELECT DISTINCT ON (value->>0) {values} \
             FROM jsonb_array_elements(CAST($4 AS jsonb)) WITH ORDINALITY AS staged(value, n) \
             ORDER BY value->>0, n ON CONFLICT {conflict}"
        ),
        _ => format!(
            "INSERT INTO {columns} SELECT {values} FROM {} WHERE true ON CONFLICT {conflict}",
            json_array_rows(backend, 4)
        ),
    }
}

/// Upserts `rows` (a JSON array in the module's layout) for `source`
/// under `rule`, stamped `stamp`, inside `tx`. `statement` is
/// [`upsert_sql`] for the transaction's backend and `rule`, built once by
/// a caller that writes many arrays.
pub async fn upsert(
    tx: &mut Transaction<'_, Any>,
    statement: &str,
    (tenant, source): (&TenantId, &str),
    stamp: &str,
    rows: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(statement)
        .bind(tenant.as_str())
        .bind(source)
        .bind(stamp)
        .bind(rows)
        .bind(now)
        .execute(&mut **tx)
        .await?
        .rows_affected())
}

/// After an upload swapped in: deletes the source's items it did not
/// stamp, in transactions of at most [`crate::seen::PRUNE_BATCH`] rows so
/// other writers get their turn. Returns the items deleted.
pub async fn prune_unstamped(
    db: &Db,
    tenant: &TenantId,
    source: &str,
    stamp: &str,
) -> sqlx::Result<u64> {
    // SQLite runs the `IN` subquery once. PostgreSQL, its statistics stale
    // right after a large write, may rescan a LIMITed subquery for every
    // row; an `ARRAY(...)` of row ids is computed once, then fetched by id.
    let statement = match db.backend {
        Backend::Sqlite => {
            "DELETE FROM inventory_items WHERE tenant_id = $1 AND source = $2 AND item_key IN \
             (SELECT item_key FROM inventory_items \
              WHERE tenant_id = $1 AND source = $2 AND seen_run <> $3 LIMIT $4)"
        }
        Backend::Postgres => {
            "DELETE FROM inventory_items WHERE ctid = ANY(ARRAY(SELECT ctid FROM inventory_items \
              WHERE tenant_id = $1 AND source = $2 AND seen_run <> $3 LIMIT $4)) \
             AND seen_run <> $3"
        }
    };
    delete_unstamped_in_batches(
        db,
        statement,
        (tenant.as_str(), source, stamp),
        crate::seen::PRUNE_BATCH,
    )
    .await
}

/// Deletes every item of `source` for the tenant, inside `tx` (its config
/// or its uploads were removed). Returns the items deleted.
pub async fn delete_source(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    source: &str,
) -> sqlx::Result<u64> {
    Ok(
        sqlx::query("DELETE FROM inventory_items WHERE tenant_id = $1 AND source = $2")
            .bind(tenant.as_str())
            .bind(source)
            .execute(&mut **tx)
            .await?
            .rows_affected(),
    )
}

/// How many items `source` holds for the tenant.
pub async fn count(db: &Db, tenant: &TenantId, source: &str) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM inventory_items WHERE tenant_id = $1 AND source = $2")
        .bind(tenant.as_str())
        .bind(source)
        .fetch_one(&db.pool)
        .await
}

/// What `source` holds for the tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct SourceCounts {
    pub items: i64,
    /// Distinct device names among them.
    pub devices: i64,
    /// Distinct application names among them.
    pub applications: i64,
}

/// How many items, devices and applications `source` holds for the
/// tenant.
pub async fn source_counts(db: &Db, tenant: &TenantId, source: &str) -> sqlx::Result<SourceCounts> {
    sqlx::query_as(
        "SELECT COUNT(*) AS items, COUNT(DISTINCT device_name) AS devices, \
         COUNT(DISTINCT application_name) AS applications \
         FROM inventory_items WHERE tenant_id = $1 AND source = $2",
    )
    .bind(tenant.as_str())
    .bind(source)
    .fetch_one(&db.pool)
    .await
}
