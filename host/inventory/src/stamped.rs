//! What the inventory's two source tables share: rows a source reports,
//! each stamped with the run or upload that wrote it (`seen_run`), written
//! from one bound JSON array under a [`ReplaceRule`]. `items` and
//! `records` describe their table as a [`StampedTable`] (its SQL text
//! spelled out, so `tests/table_owners.rs` reads who writes it) and face
//! the other areas; this module builds and runs the statements.

use std::sync::Arc;

use serde_json::value::RawValue;
use sqlx::{Any, Transaction};

use cairn_core::db::sqlite_staged::{self, LentRows, STAGED_TABLE};
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
    /// A first sync of a source that held no rows: plain inserts stamped
    /// with the run, without the upsert's conflict handling. A key already
    /// stored fails the statement as a unique violation (the database's
    /// own check, so nothing is lost or doubled); the caller then writes
    /// the page again under [`ReplaceRule::ChangedContent`]. PostgreSQL
    /// looks every key of an upsert up in the unique index before it
    /// inserts it, apart from the insert's own check: about a sixth of the
    /// server's work in a first sync.
    NewKeys,
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

impl StampedTable {
    /// `COPY name (tenant_id, source, ..., seen_run, updated_at) FROM
    /// STDIN`: the columns of `insert`, in its order, which `values`
    /// fills from `$1`, `$2`, the staged values in turn, `$3` and `$5`
    /// (a test holds each table to that).
    fn copy_statement(&self) -> String {
        let target = self.insert.trim_start_matches("INSERT INTO ");
        format!("COPY {target} FROM STDIN")
    }
}

/// Rows of a stamped table staged for one upsert: `N` values a row, each
/// text or null, in the owning module's layout. They are held in the form
/// the engine takes best. SQLite reads the values where they lie, through
/// `staged_rows` (`cairn_core::db::sqlite_staged`), one statement a
/// chunk: bound as parameters, each value was copied three times on its
/// way, and a bound JSON array unpacked through `json_each` and `->>` was
/// about twice as slow again (500,000 items: 9.1 s against 5.3 s).
/// PostgreSQL gets one JSON array per statement: one round trip for
/// thousands of rows.
#[derive(Debug, Clone)]
pub struct StagedRows<const N: usize> {
    rows: usize,
    form: Staged,
    /// Rows the caller said are coming: either form reserves text for
    /// them once it has seen the first row's size.
    expected: usize,
}

#[derive(Debug, Clone)]
enum Staged {
    /// Every row's values, row after row; shared with the statement that
    /// reads them.
    Values(Arc<Values>),
    /// `[row,row,...]`, each row a JSON array: kept whole, so binding it
    /// copies nothing.
    Json(String),
}

/// Values, one after another, their texts end to end in one string: a
/// chunk of rows is two allocations, not one per value (a chunk of 5,000
/// inventory rows holds 75,000 values).
#[derive(Debug, Clone)]
struct Values {
    /// Values a row.
    width: usize,
    text: String,
    /// Each value's byte range in `text`; `None` is null.
    spans: Vec<Option<(usize, usize)>>,
}

impl Values {
    fn with_capacity(width: usize, values: usize) -> Self {
        Values {
            width,
            text: String::new(),
            spans: Vec::with_capacity(values),
        }
    }

    fn push(&mut self, value: Option<&str>) {
        self.spans.push(value.map(|value| {
            let start = self.text.len();
            self.text.push_str(value);
            (start, self.text.len())
        }));
    }

    /// The values from `first` on, `count` of them.
    fn range(&self, first: usize, count: usize) -> impl Iterator<Item = Option<&str>> {
        self.spans[first..first + count]
            .iter()
            .map(|span| span.map(|(start, end)| &self.text[start..end]))
    }
}

impl LentRows for Values {
    fn rows(&self) -> usize {
        self.spans.len() / self.width
    }

    fn width(&self) -> usize {
        self.width
    }

    fn value(&self, row: usize, column: usize) -> Option<&str> {
        self.spans[row * self.width + column].map(|(start, end)| &self.text[start..end])
    }
}

/// A staged row that is not a JSON array of the table's values.
#[derive(Debug, thiserror::Error)]
pub enum StagedRowError {
    #[error("a staged row is not a JSON array: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error("a staged row holds {found} values where the table's layout has {expected}")]
    Width { found: usize, expected: usize },
}

impl<const N: usize> StagedRows<N> {
    /// No rows yet, staged for `backend`.
    pub fn new(backend: Backend) -> Self {
        Self::with_capacity(backend, 0)
    }

    /// No rows yet, staged for `backend`, with room for `rows`: a page's
    /// staged values grown by doubling were copied again at each step, and
    /// each step faulted in fresh memory (about a fifth of a sync's page
    /// faults, once the allocator hands freed memory straight back).
    pub fn with_capacity(backend: Backend, rows: usize) -> Self {
        let form = match backend {
            Backend::Sqlite => Staged::Values(Arc::new(Values::with_capacity(N, rows * N))),
            Backend::Postgres => Staged::Json(String::new()),
        };
        StagedRows {
            rows: 0,
            form,
            expected: rows,
        }
    }

    /// No rows yet, staged for [`copy_new_keys`] on PostgreSQL: values as
    /// SQLite takes them, which COPY's text reads without a JSON array's
    /// escaping. An upsert of them (a first sync's page that met a stored
    /// key after all) still works: they are turned into the array then.
    pub fn for_copy(rows: usize) -> Self {
        Self::with_capacity(Backend::Sqlite, rows)
    }

    /// How many rows are staged.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Stages one row.
    pub fn push(&mut self, row: [Option<&str>; N]) {
        match &mut self.form {
            Staged::Values(values) => {
                let values = Arc::make_mut(values);
                if self.rows == 0 {
                    // Rows of one table are alike in size: the first
                    // one's text, and a quarter more, for every row coming.
                    let text: usize = row.iter().flatten().map(|v| v.len()).sum();
                    values.text.reserve(text * self.expected.max(1) * 5 / 4);
                }
                for value in row {
                    values.push(value);
                }
            }
            // An array of strings and nulls always serializes.
            Staged::Json(json) => {
                if let Ok(text) = serde_json::to_string(row.as_slice()) {
                    if self.rows == 0 {
                        // Rows of one table are alike in size: the first
                        // one's, and a quarter more, for every row coming.
                        json.reserve((text.len() + 1) * self.expected.max(1) * 5 / 4);
                    }
                    append_row(json, &text);
                }
            }
        }
        self.rows += 1;
    }

    /// Stages one row given as a JSON array of `N` values (a line of a
    /// staging file): a string is its text, a null is null, and any other
    /// value (a record's `body` object) is its JSON text, as `->>` reads
    /// them on both engines.
    pub fn push_json(&mut self, row: &str) -> Result<(), StagedRowError> {
        let values: Vec<&RawValue> = serde_json::from_str(row)?;
        if values.len() != N {
            return Err(StagedRowError::Width {
                found: values.len(),
                expected: N,
            });
        }
        match &mut self.form {
            Staged::Values(staged) => {
                let staged = Arc::make_mut(staged);
                for value in values {
                    staged.push(text_of(value)?.as_deref());
                }
            }
            Staged::Json(json) => append_row(json, row.trim()),
        }
        self.rows += 1;
        Ok(())
    }

    /// The rows' values, row after row, whichever form holds them.
    fn values(&self) -> Result<Arc<Values>, StagedRowError> {
        match &self.form {
            Staged::Values(values) => Ok(Arc::clone(values)),
            Staged::Json(_) => {
                let array = self.json();
                let rows: Vec<Vec<&RawValue>> = serde_json::from_str(array.as_ref())?;
                let mut values = Values::with_capacity(N, rows.len() * N);
                for value in rows.into_iter().flatten() {
                    values.push(text_of(value)?.as_deref());
                }
                Ok(Arc::new(values))
            }
        }
    }

    /// The rows as one JSON array, whichever form holds them.
    fn json(&self) -> std::borrow::Cow<'_, str> {
        match &self.form {
            Staged::Json(json) if self.rows > 0 => json.as_str().into(),
            Staged::Json(_) => "[]".into(),
            Staged::Values(values) => {
                let rows: Vec<Vec<Option<&str>>> = (0..self.rows)
                    .map(|row| values.range(row * N, N).collect())
                    .collect();
                serde_json::to_string(&rows)
                    .unwrap_or_else(|_| "[]".into())
                    .into()
            }
        }
    }
}

/// Appends one row's JSON to a staged array, which stays closed.
fn append_row(array: &mut String, row: &str) {
    if array.pop().is_some() {
        array.push(',');
    } else {
        array.push('[');
    }
    array.push_str(row);
    array.push(']');
}

/// A staged value as `->>` reads it: a string's text, null, or the JSON
/// text of anything else.
fn text_of(value: &RawValue) -> serde_json::Result<Option<String>> {
    let raw = value.get();
    Ok(match raw.as_bytes().first() {
        Some(b'"') => Some(serde_json::from_str(raw)?),
        Some(b'n') => None,
        _ => Some(raw.to_string()),
    })
}

/// A stamped table's upsert under one [`ReplaceRule`] on one engine,
/// built once by a caller that writes many arrays: `tenant`, `source`, the
/// stamp (`seen_run`: a run or an upload), now, and the rows.
#[derive(Debug, Clone)]
pub struct Upsert {
    form: UpsertForm,
}

#[derive(Debug, Clone)]
enum UpsertForm {
    /// PostgreSQL: `$1` tenant, `$2` source, `$3` stamp, `$4` the rows as
    /// one JSON array, `$5` now.
    Json(String),
    /// SQLite: one statement binding tenant, source, stamp, now and the
    /// id the rows are lent under, reading them from `staged_rows`.
    Lent(String),
}

/// The upsert of `table`'s rows of `N` values under `rule` on `backend`.
pub(crate) fn upsert_sql<const N: usize>(
    table: &StampedTable,
    backend: Backend,
    rule: ReplaceRule,
) -> Upsert {
    let name = table.name;
    let set = table
        .content
        .iter()
        .chain(&["seen_run", "updated_at"])
        .map(|column| format!("{column} = excluded.{column}"))
        .collect::<Vec<_>>()
        .join(", ");
    let when = match rule {
        ReplaceRule::ChangedContent => Some(
            table
                .content
                .iter()
                .map(|column| format!("{name}.{column} IS DISTINCT FROM excluded.{column}"))
                .collect::<Vec<_>>()
                .join(" OR "),
        ),
        ReplaceRule::FirstOfStamp => Some(format!("{name}.seen_run <> excluded.seen_run")),
        ReplaceRule::NewKeys => None,
    };
    let conflict = match when {
        Some(when) => format!(
            " ON CONFLICT (tenant_id, source, {}) DO UPDATE SET {set} WHERE {when}",
            table.key
        ),
        None => String::new(),
    };
    let (insert, values) = (table.insert, table.values);
    // `WHERE true` keeps SQLite from reading ON CONFLICT as a join clause.
    let form = match (backend, rule) {
        // SQLite applies rows in turn, so a key repeated in one array keeps
        // what the rule says (under `FirstOfStamp` the stamp leaves the
        // later rows alone), across statements as within one.
        (Backend::Sqlite, _) => {
            let columns = (0..N)
                .map(|i| format!("v{i}"))
                .collect::<Vec<_>>()
                .join(", ");
            UpsertForm::Lent(format!(
                "{insert} SELECT ?, ?, {columns}, ?, ? FROM {STAGED_TABLE}(?) WHERE true{conflict}"
            ))
        }
        // One array may repeat a key: PostgreSQL keeps its first row, since
        // one statement may not update a row twice there.
        (Backend::Postgres, ReplaceRule::FirstOfStamp) => UpsertForm::Json(format!(
            "{insert} SELECT DISTINCT ON ({key}) {values} \
             FROM jsonb_array_elements(CAST($4 AS jsonb)) WITH ORDINALITY AS staged(value, n) \
             ORDER BY {key}, n{conflict}",
            key = table.staged_key
        )),
        (Backend::Postgres, ReplaceRule::ChangedContent | ReplaceRule::NewKeys) => {
            UpsertForm::Json(format!(
                "{insert} SELECT {values} FROM {}{conflict}",
                json_array_rows(backend, 4)
            ))
        }
    };
    Upsert { form }
}

/// Runs an [`upsert_sql`] upsert on `rows`, inside `tx`. Returns the rows
/// inserted or rewritten.
pub(crate) async fn upsert<const N: usize>(
    tx: &mut Transaction<'_, Any>,
    upsert: &Upsert,
    (tenant, source): (&TenantId, &str),
    stamp: &str,
    rows: &StagedRows<N>,
    now: i64,
) -> sqlx::Result<u64> {
    if rows.is_empty() {
        return Ok(0);
    }
    match &upsert.form {
        UpsertForm::Json(statement) => {
            let json = rows.json();
            Ok(sqlx::query(statement)
                .bind(tenant.as_str())
                .bind(source)
                .bind(stamp)
                .bind(json.as_ref())
                .bind(now)
                .execute(&mut **tx)
                .await?
                .rows_affected())
        }
        UpsertForm::Lent(statement) => {
            let values = rows
                .values()
                .map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
            let lent = sqlite_staged::lend(values);
            Ok(sqlx::query(statement)
                .bind(tenant.as_str())
                .bind(source)
                .bind(stamp)
                .bind(now)
                .bind(lent.id())
                .execute(&mut **tx)
                .await?
                .rows_affected())
        }
    }
}

/// Inserts `chunks` of new rows with PostgreSQL's `COPY ... FROM STDIN`,
/// stamped `stamp`, inside the transaction on `conn`: a first sync's
/// plain inserts ([`ReplaceRule::NewKeys`]) as one statement, so the
/// server parses COPY's text instead of unpacking a bound JSON array
/// value by value (twenty pages of 26,000 items in psql: 3.4-3.6 s
/// against 4.0-4.3 s). The table's statement triggers fire as for an
/// insert. A key already stored fails it as a unique violation, and
/// then the transaction is to be dropped. Returns the rows inserted.
pub(crate) async fn copy_new_keys<'a, const N: usize>(
    conn: &mut sqlx::PgConnection,
    table: &StampedTable,
    (tenant, source): (&TenantId, &str),
    stamp: &str,
    chunks: impl IntoIterator<Item = &'a StagedRows<N>>,
    now: i64,
) -> sqlx::Result<u64> {
    let chunks: Vec<_> = chunks.into_iter().filter(|c| !c.is_empty()).collect();
    if chunks.is_empty() {
        return Ok(0);
    }
    let now = now.to_string();
    let mut text = String::new();
    let mut copy = conn.copy_in_raw(&table.copy_statement()).await?;
    for chunk in chunks {
        let values = match chunk.values() {
            Ok(values) => values,
            Err(e) => {
                copy.abort("a staged row is not the table's layout").await?;
                return Err(sqlx::Error::Decode(Box::new(e)));
            }
        };
        text.clear();
        for row in 0..values.rows() {
            copy_field(&mut text, Some(tenant.as_str()), '\t');
            copy_field(&mut text, Some(source), '\t');
            for value in values.range(row * N, N) {
                copy_field(&mut text, value, '\t');
            }
            copy_field(&mut text, Some(stamp), '\t');
            copy_field(&mut text, Some(&now), '\n');
        }
        copy.send(text.as_bytes()).await?;
    }
    copy.finish().await
}

/// One value of a COPY text row and the character after it: `\N` for
/// null, and the four characters COPY's text format reads specially
/// escaped with a backslash (so a value `\.` is never the end of data).
fn copy_field(text: &mut String, value: Option<&str>, then: char) {
    match value {
        None => text.push_str("\\N"),
        Some(value) if !value.contains(['\\', '\t', '\n', '\r']) => text.push_str(value),
        Some(value) => {
            for c in value.chars() {
                match c {
                    '\\' => text.push_str("\\\\"),
                    '\t' => text.push_str("\\t"),
                    '\n' => text.push_str("\\n"),
                    '\r' => text.push_str("\\r"),
                    c => text.push(c),
                }
            }
        }
    }
    text.push(then);
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
