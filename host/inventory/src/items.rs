//! The one writer of `inventory_items`: the rows every source (a
//! connector's sync, a CSV upload) reports, upserted under an explicit
//! [`ReplaceRule`], pruned, counted and removed with their source. Other
//! areas hand rows in staged ([`StagedRows`]) and never name the table.
//!
//! A row is 15 values, each text or null, in this order:
//! `item_key, device_name, device_id, os_platform, os_version, user_email,
//! user_name, application_name, vendor, version, publisher, client_id,
//! group_ids, os_name, os_build` (15 values; `group_ids` a JSON array as
//! text). Triggers on the table queue every change for the rollup and the
//! matcher, whichever rule wrote it.

use sqlx::{Any, Transaction};

use cairn_core::db::{Backend, Db};
use cairn_core::ids::TenantId;

use crate::stamped::{self, StampedTable};
pub use crate::stamped::{ReplaceRule, StagedRowError, Upsert};

const ITEMS: StampedTable = StampedTable {
    name: "inventory_items",
    insert: "INSERT INTO inventory_items (tenant_id, source, item_key, device_name, device_id, \
         os_platform, os_version, user_email, user_name, application_name, vendor, version, \
         publisher, client_id, group_ids, os_name, os_build, seen_run, updated_at)",
    values: "$1, $2, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, \
         value->>6, value->>7, value->>8, value->>9, value->>10, value->>11, value->>12, \
         value->>13, value->>14, $3, $5",
    key: "item_key",
    staged_key: "value->>0",
    // A row whose columns all equal the page's is not rewritten.
    content: &[
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
    ],
    prune: (
        "DELETE FROM inventory_items WHERE tenant_id = $1 AND source = $2 AND item_key IN \
         (SELECT item_key FROM inventory_items \
          WHERE tenant_id = $1 AND source = $2 AND seen_run <> $3 LIMIT $4)",
        "DELETE FROM inventory_items WHERE ctid = ANY(ARRAY(SELECT ctid FROM inventory_items \
          WHERE tenant_id = $1 AND source = $2 AND seen_run <> $3 LIMIT $4)) \
         AND seen_run <> $3",
    ),
    delete_source: "DELETE FROM inventory_items WHERE tenant_id = $1 AND source = $2",
};

/// Rows of the module's layout staged for [`upsert`].
pub type StagedRows = crate::stamped::StagedRows<15>;

/// The upsert of staged rows (the module's layout) under `rule` on
/// `backend`, built once by a caller that writes many.
pub fn upsert_sql(backend: Backend, rule: ReplaceRule) -> Upsert {
    stamped::upsert_sql::<15>(&ITEMS, backend, rule)
}

/// Upserts `rows` (staged in the module's layout) for `source`
/// under `rule`, stamped `stamp`, inside `tx`. `statement` is
/// [`upsert_sql`] for the transaction's backend and `rule`, built once by
/// a caller that writes many arrays.
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

/// Inserts new items (`chunks` staged in the module's layout, best
/// with `StagedRows::for_copy`) for `source`, stamped `stamp`, with
/// PostgreSQL's COPY inside the transaction on `conn`: a first sync's
/// [`ReplaceRule::NewKeys`] as one statement. A key the source already
/// holds fails it as a unique violation. Returns the items inserted.
pub async fn copy_new<'a>(
    conn: &mut sqlx::PgConnection,
    scope: (&TenantId, &str),
    stamp: &str,
    chunks: impl IntoIterator<Item = &'a StagedRows>,
    now: i64,
) -> sqlx::Result<u64> {
    stamped::copy_new_keys(conn, &ITEMS, scope, stamp, chunks, now).await
}

/// After an upload swapped in: deletes the source's items it did not
/// stamp, in batches. Returns the items deleted.
pub async fn prune_unstamped(
    db: &Db,
    tenant: &TenantId,
    source: &str,
    stamp: &str,
) -> sqlx::Result<u64> {
    stamped::prune_unstamped(&ITEMS, db, tenant, source, stamp).await
}

/// Deletes every item of `source` for the tenant, inside `tx` (its config
/// or its uploads were removed). Returns the items deleted.
pub async fn delete_source(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    source: &str,
) -> sqlx::Result<u64> {
    stamped::delete_source(&ITEMS, tx, tenant, source).await
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx_macros::FromRow)]
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
