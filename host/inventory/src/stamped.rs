//! What the inventory's two source tables share: rows a source reports,
//! each stamped with the run or upload that wrote it (`seen_run`), written
//! from one bound JSON array under a [`ReplaceRule`]. `items` and
//! `records` describe their table as a [`StampedTable`] (its SQL text
//! spelled out, so `tests/table_owners.rs` reads who writes it) and face
//! the other areas; this module builds and runs the statements.

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
    /// did not stamp are deleted after it by `prune_unstamped`.
    FirstOfStamp,
}

/// One stamped table, as its owning module spells it.
pub(crate) struct StampedTable {
    pub name: &'static str,
    /// `INSERT INTO name (tenant_id, source, ..., seen_run, updated_at)`.
    pub insert: &'static str,
    /// The `SELECT` list matching `insert`, from a staged row `value`:
    /// `$1` tenant, `$2` source, `$3` the stamp, `$5` now.
    pub values: &'static str,
    /// The key after tenant and source: its columns, and the same as
    /// staged values (`value->>0`).
    pub key: &'static str,
    pub staged_key: &'static str,
    /// The columns [`ReplaceRule::ChangedContent`] compares.
    pub content: &'static [&'static str],
    /// Deletes up to `$4` of the source's rows not stamped `$3`, on SQLite
    /// and on PostgreSQL (see [`prune_unstamped`]).
    pub prune: (&'static str, &'static str),
    /// `DELETE FROM name WHERE tenant_id = $1 AND source = $2`.
    pub delete_source: &'static str,
}

/// The upsert of one bound JSON array of `table`'s rows: `$1` tenant, `$2`
/// source, `$3` the stamp (`seen_run`: a run or an upload), `$4` the rows,
/// `$5` now.
pub(crate) fn upsert_sql(table: &StampedTable, backend: Backend, rule: ReplaceRule) -> String {
    let name = table.name;
    let set = table
        .content
        .iter()
        .chain(&["seen_run", "updated_at"])
        .map(|column| format!("{column} = excluded.{column}"))
        .collect::<Vec<_>>()
        .join(", ");
    let when = match rule {
        ReplaceRule::ChangedContent => table
            .content
            .iter()
            .map(|column| format!("{name}.{column} IS DISTINCT FROM excluded.{column}"))
            .collect::<Vec<_>>()
            .join(" OR "),
        ReplaceRule::FirstOfStamp => format!("{name}.seen_run <> excluded.seen_run"),
    };
    let conflict = format!(
        "(tenant_id, source, {}) DO UPDATE SET {set} WHERE {when}",
        table.key
    );
    let (insert, values) = (table.insert, table.values);
    // `WHERE true` keeps SQLite from reading ON CONFLICT as a join clause.
    match (backend, rule) {
        // One array may repeat a key: PostgreSQL keeps its first row, since
        // one statement may not update a row twice there (SQLite applies
        // them in turn, and the stamp leaves the later ones alone).
        (Backend::Postgres, ReplaceRule::FirstOfStamp) => format!(
            "{insert} SELECT DISTINCT ON ({key}) {values} \
             FROM jsonb_array_elements(CAST($4 AS jsonb)) WITH ORDINALITY AS staged(value, n) \
             ORDER BY {key}, n ON CONFLICT {conflict}",
            key = table.staged_key
        ),
        _ => format!(
            "{insert} SELECT {values} FROM {} WHERE true ON CONFLICT {conflict}",
            json_array_rows(backend, 4)
        ),
    }
}

/// Runs an [`upsert_sql`] statement on `rows`, inside `tx`.
pub(crate) async fn upsert(
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

/// After an upload swapped in: deletes the source's rows it did not stamp,
/// in transactions of at most [`crate::seen::PRUNE_BATCH`] rows so other
/// writers get their turn. Returns the rows deleted.
pub(crate) async fn prune_unstamped(
    table: &StampedTable,
    db: &Db,
    tenant: &TenantId,
    source: &str,
    stamp: &str,
) -> sqlx::Result<u64> {
    // SQLite runs the `IN` subquery once. PostgreSQL, its statistics stale
    // right after a large write, may rescan a LIMITed subquery for every
    // row; an `ARRAY(...)` of row ids is computed once, then fetched by id.
    let statement = match db.backend {
        Backend::Sqlite => table.prune.0,
        Backend::Postgres => table.prune.1,
    };
    delete_unstamped_in_batches(
        db,
        statement,
        (tenant.as_str(), source, stamp),
        crate::seen::PRUNE_BATCH,
    )
    .await
}

/// Deletes every row of `source` for the tenant, inside `tx`. Returns the
/// rows deleted.
pub(crate) async fn delete_source(
    table: &StampedTable,
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    source: &str,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(table.delete_source)
        .bind(tenant.as_str())
        .bind(source)
        .execute(&mut **tx)
        .await?
        .rows_affected())
}
