//! Pages of a sort the table's writer keeps numbered ([`KeptOrder`]): the
//! rows whose place falls in the page, read as blocks of [`BLOCK`] rows
//! that are kept in memory until the rows are written again.
//!
//! Analysts page through the list and dashboards ask for its first page
//! again and again, while the rows move only when the rollup writes, and
//! every one of its writes is counted under the order's topic
//! ([`cairn_core::db::changes`]). A page is cut from the blocks it spans;
//! blocks are read whole (one index seek and one packed row each), so a
//! reader paging on hits the block the page before it read.

use std::sync::Arc;
use std::time::Duration;

use serde_json::value::RawValue;
use sqlx::Row;

use super::{Page, SearchError, Table};
use cairn_core::db::changes::{Kept, Stamp};
use cairn_core::db::{Backend, Db};
use cairn_core::ids::TenantId;

/// A sort whose order the table's writer keeps numbered in a column (1,
/// 2, ... with no gaps), written in the same transaction as the rows, so
/// a page of it is the rows whose place falls in the page: one index seek
/// where `OFFSET` would step over every row before the page.
pub struct KeptOrder {
    /// The sort numbered (`-device_count`).
    pub sort: &'static str,
    /// The column holding each row's place.
    pub place: &'static str,
    /// A condition (`$1`: the tenant) that holds while the places describe
    /// the rows: false while a rebuild is under way, whose batches move
    /// rows before the places are numbered again.
    pub current: &'static str,
    /// The blocks read in this order: see [`kept_pages`].
    pub pages: &'static KeptPages,
}

/// Rows per block: ten default pages. A block of applications is about
/// 300 KB of JSON.
const BLOCK: i64 = 500;

/// Blocks of a [`KeptOrder`] per tenant, by number (rows `n * BLOCK + 1`
/// to `(n + 1) * BLOCK` in place order).
pub type KeptPages = Kept<Block, i64>;

/// A table's kept blocks, current while `topic`'s stamp is unchanged: every
/// committed write of the table's rows, places and kept total must be
/// counted under `topic`.
pub const fn kept_pages(topic: &'static str) -> KeptPages {
    // Every tenant's blocks together stay under 64 MiB (some 200 blocks of
    // applications). The age bounds a block kept across a write nothing
    // counted (a hand edit in the database).
    Kept::new(topic, Duration::from_secs(60), 64 << 20)
}

/// Rows as the engine packed them, each still JSON text, with the total
/// read beside them and the stamp taken before.
#[derive(Clone)]
pub struct Block {
    stamp: Stamp,
    rows: Arc<[Box<RawValue>]>,
    total: i64,
}

/// The page `skip`, `limit` in `order`: `None` when the places do not
/// answer it (past the end, or a rebuild is numbering them again), for the
/// plain query to answer. The table's `kept_total` reads the total beside
/// the rows (`NULL`: not known, then `count_all` counts).
pub(super) async fn page<T, F>(
    db: &Db,
    tenant: &TenantId,
    table: &Table<'_>,
    order: &KeptOrder,
    (skip, limit): (i64, i64),
    count_all: impl Fn() -> F,
) -> Result<Option<Page<T>>, SearchError>
where
    T: serde::de::DeserializeOwned,
    F: std::future::Future<Output = sqlx::Result<i64>>,
{
    // Nothing may be kept (PostgreSQL without its listener), or the
    // blocks spanned were read on either side of a write: the page alone
    // is read.
    let read_page = async || -> Result<Option<Page<T>>, SearchError> {
        let page = (skip, skip.saturating_add(limit));
        let Some((rows, total)) = read(db, tenant, table, order, page, &count_all).await? else {
            return Ok(None);
        };
        decoded(rows.iter().map(|row| &**row), total, (skip, limit)).map(Some)
    };
    let first = skip / BLOCK;
    let last = skip.saturating_add(limit - 1) / BLOCK;
    let mut blocks: Vec<Block> = Vec::with_capacity(2);
    for number in first..=last {
        let (stamp, _turn) = match order.pages.get_or_turn(db, tenant.as_str(), &number).await {
            Ok(block) => {
                blocks.push(block);
                continue;
            }
            Err(None) => return read_page().await,
            Err(Some(missed)) => missed,
        };
        let from = number * BLOCK;
        let range = (from, from.saturating_add(BLOCK));
        let Some((rows, total)) = read(db, tenant, table, order, range, &count_all).await? else {
            break;
        };
        let weight = rows.iter().map(|row| row.get().len()).sum();
        let block = Block {
            stamp,
            rows: rows.into(),
            total,
        };
        order
            .pages
            .keep(db, tenant.as_str(), number, stamp, block.clone(), weight);
        blocks.push(block);
    }
    // A page across two blocks read on either side of a write would mix
    // two states of the rows.
    if blocks.windows(2).any(|pair| pair[0].stamp != pair[1].stamp) {
        return read_page().await;
    }
    let Some(total) = blocks.first().map(|block| block.total) else {
        return Ok(None);
    };
    let rows: Vec<&RawValue> = blocks
        .iter()
        .flat_map(|block| block.rows.iter().map(|row| &**row))
        .skip((skip - first * BLOCK) as usize)
        .take(limit as usize)
        .collect();
    // A block short of what the total says lies past rows being numbered
    // again.
    if rows.is_empty() || (rows.len() as i64) < limit.min(total - skip) {
        return Ok(None);
    }
    decoded(rows, total, (skip, limit)).map(Some)
}

/// The page of `rows`, each decoded from its JSON.
fn decoded<'r, T: serde::de::DeserializeOwned>(
    rows: impl IntoIterator<Item = &'r RawValue>,
    total: i64,
    (skip, limit): (i64, i64),
) -> Result<Page<T>, SearchError> {
    let items = rows
        .into_iter()
        .map(|row| serde_json::from_str(row.get()).map_err(decode_error))
        .collect::<Result<_, _>>()?;
    Ok(Page::new(items, total, (skip, limit)))
}

/// The rows placed after `from` up to `to`, and the total (kept, or
/// counted by `count_all` when not known); `None` when no row is (past
/// the end, or the places are being numbered again).
async fn read<F>(
    db: &Db,
    tenant: &TenantId,
    table: &Table<'_>,
    order: &KeptOrder,
    (from, to): (i64, i64),
    count_all: &impl Fn() -> F,
) -> Result<Option<(Vec<Box<RawValue>>, i64)>, SearchError>
where
    F: std::future::Future<Output = sqlx::Result<i64>>,
{
    // The rows and the kept total in one statement, and the rows as one
    // value: packed into a JSON array by the engine, they cross to the
    // service as one row rather than hundreds (on SQLite each row is a
    // message from the connection's thread, and each converts through
    // `AnyRow`).
    let total_column = table
        .kept_total
        .map_or("NULL".to_string(), |kept| format!("({kept})"));
    let seek = format!(
        "SELECT {} AS page, {total_column} AS kept_total FROM {} WHERE {} = $1 \
         AND {place} > $2 AND {place} <= $3 AND {}",
        packed_rows(db.backend, table.columns, order.place),
        table.from,
        table.tenant_column,
        order.current,
        place = order.place
    );
    let packed = sqlx::query(&seek)
        .bind(tenant.as_str())
        .bind(from)
        .bind(to)
        .fetch_one(&db.pool)
        .await?;
    let Some(text) = packed.try_get::<Option<String>, _>("page")? else {
        return Ok(None);
    };
    let rows: Vec<Box<RawValue>> = serde_json::from_str(&text).map_err(decode_error)?;
    if rows.is_empty() {
        return Ok(None);
    }
    let total = match packed.try_get::<Option<i64>, _>("kept_total")? {
        Some(total) => total,
        None => count_all().await?,
    };
    Ok(Some((rows, total)))
}

pub(super) fn decode_error(err: serde_json::Error) -> SearchError {
    SearchError::Database(sqlx::Error::ColumnDecode {
        index: "page".into(),
        source: Box::new(err),
    })
}

/// The rows of a query as one JSON text: an array holding, per row in the
/// order of `place`, the array of `columns`' values (text as strings,
/// numbers as numbers, NULL as null), which a row struct whose fields
/// follow `columns` decodes from. NULL when there is no row.
pub(super) fn packed_rows(backend: Backend, columns: &str, place: &str) -> String {
    match backend {
        Backend::Sqlite => format!(
            "CASE WHEN COUNT(*) = 0 THEN NULL ELSE json_group_array(json_array({columns}) ORDER BY {place}) END"
        ),
        Backend::Postgres => {
            format!("CAST(json_agg(json_build_array({columns}) ORDER BY {place}) AS TEXT)")
        }
    }
}
