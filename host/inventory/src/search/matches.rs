//! A search's matches kept in memory, in the search's order, while the
//! tenant's rolled-up rows stay as they were.
//!
//! A structured search spends its time finding every match: its total
//! needs them all, and its first page the sets its rules look up (a three
//! rule device search over 100,000 assets reads 66,000 terms for one of
//! them). Analysts page through one search and dashboards ask the same
//! one again and again, while the rows change only when a rollup writes.
//! So the first request reads the id of every match in order, and the
//! pages after it are read by id from that list, its length the total.
//!
//! An answer is only ever given from matches read at the tenant's current
//! write count (`rollup_state.writes`, moved by every transaction that
//! writes the rows, see `rollup::store::hold`): the page's own statement
//! reads the count beside the rows, so a write committed by any process
//! makes the next request read the matches again. The count is read
//! before the matches it is kept with: a write landing between the two
//! leaves the kept count behind the tenant's, and the next request reads
//! again rather than trust a list newer than its count.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use hashlink::LruCache;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use sqlx::any::AnyArguments;
use sqlx::{Arguments, Row};

use super::ordered::{decode_error, packed_rows};
use super::{SearchError, Table};
use cairn_core::db::changes;
use cairn_core::db::{Backend, Db};
use cairn_core::ids::TenantId;

/// How a table's searches keep their matches.
pub struct KeptMatches {
    /// A unique integer column of the searched table, as its `FROM` names
    /// it (`a.id`).
    pub id: &'static str,
    /// A query (`$1`: the tenant) answering the number the table's writer
    /// moves in every transaction that writes its rows; no row, nothing is
    /// kept.
    pub writes: &'static str,
    /// The pages read by id, kept while the topic counting every write of
    /// the table's rows is unchanged (see [`kept_rows`]): a page asked
    /// again is answered without a round trip to the database.
    pub pages: &'static KeptRows,
}

/// A page's rows as the engine packed them, in the page's order.
pub type PageRows = Arc<[Box<RawValue>]>;

/// Pages of kept matches, per search (statement and values) and bounds.
pub type KeptRows = changes::Kept<PageRows, (String, String, i64, i64)>;

/// The pages of a table whose every committed write is counted under
/// `topic` ([`cairn_core::db::changes`]).
pub const fn kept_rows(topic: &'static str) -> KeptRows {
    // Every tenant's pages together stay under 32 MiB (a page of 50
    // assets is some 30 KB); the age bounds a page kept across a write
    // nothing counted (a hand edit in the database).
    changes::Kept::new(topic, Duration::from_secs(60), 32 << 20)
}

/// Matches one search keeps as ids; above it, only their number (the
/// pages are read from the database).
const MAX_IDS_PER_SEARCH: usize = 250_000;
/// Ids all kept searches hold together: 32 MiB.
const MAX_IDS: usize = 4_000_000;
const MAX_SEARCHES: usize = 1_024;

/// One search: the database, the tenant, its statement and its values.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Key {
    database: u64,
    tenant: String,
    statement: String,
    values: String,
}

#[derive(Clone)]
enum Matches {
    /// Every match's id, in the search's order.
    Ids(Arc<[i64]>),
    /// More matches than one search keeps: only how many.
    Counted(i64),
}

#[derive(Clone)]
struct Kept {
    writes: i64,
    matches: Matches,
}

struct Store {
    searches: LruCache<Key, Kept>,
    ids: usize,
    /// The turn to read each search's matches, while someone holds it.
    readers: HashMap<Key, Weak<tokio::sync::Mutex<()>>>,
}

impl Store {
    fn get(&mut self, key: &Key) -> Option<Kept> {
        self.searches.get(key).cloned()
    }

    /// The turn to read `key`'s matches: one for all who ask at once.
    fn reader(&mut self, key: &Key) -> Arc<tokio::sync::Mutex<()>> {
        if let Some(turn) = self.readers.get(key).and_then(Weak::upgrade) {
            return turn;
        }
        self.readers.retain(|_, turn| turn.strong_count() > 0);
        let turn = Arc::new(tokio::sync::Mutex::new(()));
        self.readers.insert(key.clone(), Arc::downgrade(&turn));
        turn
    }

    fn put(&mut self, key: Key, kept: Kept) {
        self.ids += size(&kept);
        if let Some(old) = self.searches.insert(key, kept) {
            self.ids -= size(&old);
        }
        while self.ids > MAX_IDS || self.searches.len() > MAX_SEARCHES {
            match self.searches.remove_lru() {
                Some((_, old)) => self.ids -= size(&old),
                None => break,
            }
        }
    }
}

fn size(kept: &Kept) -> usize {
    match &kept.matches {
        Matches::Ids(ids) => ids.len(),
        Matches::Counted(_) => 0,
    }
}

static STORE: LazyLock<Mutex<Store>> = LazyLock::new(|| {
    Mutex::new(Store {
        // Bounded by `put`, which also counts ids.
        searches: LruCache::new_unbounded(),
        ids: 0,
        readers: HashMap::new(),
    })
});

fn store() -> std::sync::MutexGuard<'static, Store> {
    // A panic while holding the lock leaves a consistent map (every
    // change is one call), so a poisoned lock is still usable.
    STORE
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A search compiled: what [`answer`] reads.
pub(super) struct Compiled<'s, A> {
    /// `WHERE` condition, the tenant's first.
    pub filter: &'s str,
    pub order: &'s str,
    /// The compiler's [`values_key`](super::Compiler::values_key).
    pub values: String,
    /// The next free placeholder after the arguments.
    pub next: usize,
    /// The tenant and the search's values, bound.
    pub arguments: A,
}

/// What the kept matches answer.
pub(super) enum Answer<T> {
    Page(super::Page<T>),
    /// Only the total: the page is read as without kept matches.
    Total(i64),
    /// Nothing: the tenant has no write count, or the rows moved while
    /// the matches were read.
    Unknown,
}

/// The page at `(skip, limit)` from the search's kept matches, read first
/// when none are kept at the tenant's write count. `count` counts the
/// matches of a search with more than [`MAX_IDS_PER_SEARCH`].
pub(super) async fn answer<'a, T, A, C, F>(
    db: &Db,
    tenant: &TenantId,
    table: &Table<'_>,
    kept: &KeptMatches,
    search: Compiled<'_, A>,
    (skip, limit): (i64, i64),
    count: C,
) -> Result<Answer<T>, SearchError>
where
    T: DeserializeOwned,
    A: Fn() -> AnyArguments<'a>,
    C: Fn() -> F,
    F: std::future::Future<Output = Result<i64, sqlx::Error>>,
{
    let statement = format!(
        "SELECT {} AS kept_id FROM {} WHERE {} ORDER BY {} LIMIT ${}",
        kept.id, table.from, search.filter, search.order, search.next
    );
    let key = Key {
        database: db.instance(),
        tenant: tenant.as_str().to_string(),
        statement,
        values: search.values,
    };
    if let Some(answer) = from_kept(db, tenant, table, kept, &key, (skip, limit)).await? {
        return Ok(answered(answer, "kept"));
    }
    // One request reads a search's matches at a time; the others asking
    // for it meanwhile wait and answer from what it kept, rather than all
    // read the same matches at once.
    let turn = store().reader(&key);
    let _reading = turn.lock().await;
    if let Some(answer) = from_kept(db, tenant, table, kept, &key, (skip, limit)).await? {
        return Ok(answered(answer, "kept"));
    }
    // Read before the matches: see the module's comment.
    let Some(writes) = writes(db, tenant, kept).await? else {
        return Ok(answered(Answer::Unknown, "unkept"));
    };
    let mut arguments = (search.arguments)();
    let _ = arguments.add(MAX_IDS_PER_SEARCH as i64 + 1);
    // Planned with its values, as the page is (see `run`).
    let ids: Vec<i64> = sqlx::query_scalar_with(&key.statement, arguments)
        .persistent(false)
        .fetch_all(&db.pool)
        .await?;
    let matches = if ids.len() > MAX_IDS_PER_SEARCH {
        Matches::Counted(count().await?)
    } else {
        Matches::Ids(ids.into())
    };
    store().put(key.clone(), Kept { writes, matches });
    // Unknown when a write landed while the matches were read.
    let answer = from_kept(db, tenant, table, kept, &key, (skip, limit)).await?;
    Ok(answered(answer.unwrap_or(Answer::Unknown), "read"))
}

/// The page from the search's kept matches, if they are kept at the
/// tenant's write count.
async fn from_kept<T>(
    db: &Db,
    tenant: &TenantId,
    table: &Table<'_>,
    kept: &KeptMatches,
    key: &Key,
    (skip, limit): (i64, i64),
) -> Result<Option<Answer<T>>, SearchError>
where
    T: DeserializeOwned,
{
    // The lock is let go before any await.
    let found = store().get(key);
    let Some(found) = found else {
        return Ok(None);
    };
    Ok(match found.matches {
        Matches::Ids(ids) => {
            let len = ids.len() as i64;
            let question = (key.statement.clone(), key.values.clone(), skip, limit);
            // Kept at a stamp taken before the rows were read, and the
            // rows were read at the write count the ids were kept with: an
            // unchanged stamp means neither moved since.
            let rows = match kept.pages.get(db, tenant.as_str(), &question) {
                Ok(rows) => Some(rows),
                Err(stamp) => {
                    let from = skip.min(len) as usize;
                    let to = skip.saturating_add(limit).min(len) as usize;
                    let rows = by_id(db, tenant, table, kept, &ids[from..to], found.writes).await?;
                    if let (Some(stamp), Some(rows)) = (stamp, &rows) {
                        let weight = rows.iter().map(|row| row.get().len()).sum();
                        kept.pages
                            .keep(db, tenant.as_str(), question, stamp, rows.clone(), weight);
                    }
                    rows
                }
            };
            match rows {
                Some(rows) => {
                    let items = rows
                        .iter()
                        .map(|row| serde_json::from_str(row.get()).map_err(decode_error))
                        .collect::<Result<Vec<T>, _>>()?;
                    Some(Answer::Page(super::Page::new(items, len, (skip, limit))))
                }
                None => None,
            }
        }
        Matches::Counted(total) => {
            (writes(db, tenant, kept).await? == Some(found.writes)).then_some(Answer::Total(total))
        }
    })
}

/// Counts how the page was answered: `outcome` when from kept ids.
fn answered<T>(answer: Answer<T>, outcome: &'static str) -> Answer<T> {
    let outcome = match answer {
        Answer::Page(_) => outcome,
        Answer::Total(_) => "counted",
        Answer::Unknown => "unkept",
    };
    metrics::counter!(cairn_core::telemetry::SEARCH_PAGES, "outcome" => outcome).increment(1);
    answer
}

/// The tenant's write count now.
async fn writes(db: &Db, tenant: &TenantId, kept: &KeptMatches) -> sqlx::Result<Option<i64>> {
    sqlx::query_scalar(kept.writes)
        .bind(tenant.as_str())
        .fetch_optional(&db.pool)
        .await
}

/// The rows of `ids` as the engine packed them, in that order, when the
/// tenant's write count is still `writes`, read in one statement with the
/// count.
async fn by_id(
    db: &Db,
    tenant: &TenantId,
    table: &Table<'_>,
    kept: &KeptMatches,
    ids: &[i64],
    writes_then: i64,
) -> Result<Option<PageRows>, SearchError> {
    if ids.is_empty() {
        let now = writes(db, tenant, kept).await?;
        return Ok((now == Some(writes_then)).then(|| Arc::from(Vec::new())));
    }
    let placeholders: Vec<String> = (2..ids.len() + 2).map(|n| format!("${n}")).collect();
    // Without statistics SQLite prefers the tenant's index to the ids and
    // steps through every row of the tenant; a unary `+` keeps the tenant
    // test off the index (PostgreSQL has no `+` for text, and statistics).
    let tenant_column = match db.backend {
        Backend::Sqlite => format!("+{}", table.tenant_column),
        Backend::Postgres => table.tenant_column.to_string(),
    };
    // The rows packed by the engine into one value, as the ordered pages
    // are (one message from SQLite's connection thread rather than one a
    // row, and no `AnyRow` conversion of every column), with their ids
    // packed in the same order beside them.
    let select = format!(
        "SELECT {} AS page, {} AS page_ids, ({}) AS kept_writes FROM {} \
         WHERE {tenant_column} = $1 AND {} IN ({})",
        packed_rows(db.backend, table.columns, kept.id),
        packed_rows(db.backend, kept.id, kept.id),
        kept.writes,
        table.from,
        kept.id,
        placeholders.join(", ")
    );
    let mut query = sqlx::query(&select).bind(tenant.as_str());
    for id in ids {
        query = query.bind(*id);
    }
    let packed = query.fetch_one(&db.pool).await?;
    if packed.try_get::<Option<i64>, _>("kept_writes")? != Some(writes_then) {
        return Ok(None);
    }
    let (Some(rows), Some(row_ids)) = (
        packed.try_get::<Option<String>, _>("page")?,
        packed.try_get::<Option<String>, _>("page_ids")?,
    ) else {
        return Ok(None);
    };
    let rows: Vec<Box<RawValue>> = serde_json::from_str(&rows).map_err(decode_error)?;
    // Each id was packed as a one-element array (`packed_rows` packs rows).
    let row_ids: Vec<(i64,)> = serde_json::from_str(&row_ids).map_err(decode_error)?;
    if rows.len() != ids.len() || row_ids.len() != ids.len() {
        return Ok(None);
    }
    let mut by_id: HashMap<i64, Box<RawValue>> =
        row_ids.into_iter().map(|(id,)| id).zip(rows).collect();
    let mut ordered = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(row) = by_id.remove(id) else {
            return Ok(None);
        };
        ordered.push(row);
    }
    Ok(Some(ordered.into()))
}
