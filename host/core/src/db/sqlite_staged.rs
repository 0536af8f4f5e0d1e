//! `staged_rows`: rows held in this process's memory, read by a SQLite
//! statement as a table. A writer lends its rows ([`lend`]), binds the id
//! it gets, and selects from `staged_rows(?)`:
//!
//! ```sql
//! INSERT INTO t (a, b) SELECT v0, v1 FROM staged_rows(?)
//! ```
//!
//! Bound as parameters of multi-row `VALUES`, each value was copied three
//! times on its way (sqlx's `Any` arguments, sqlx's SQLite arguments,
//! SQLite's own copy of a transient binding), one allocation each; here
//! SQLite reads each value where it lies and copies it once, into the row
//! it writes (docs: benchmarks, "The sync's writes").
//!
//! It is an eponymous virtual table, registered on every connection this
//! process opens (see `sqlite_extensions`), with [`STAGED_COLUMNS`] value
//! columns `v0`, `v1`, ... (null past a row's width) and the hidden
//! argument `id`. Rows come in the order they were lent. An id that is not
//! lent, or no id, fails the statement with a sentence.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, CString};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use libsqlite3_sys as ffi;

/// The table's name in SQL.
pub const STAGED_TABLE: &str = "staged_rows";

/// Value columns every row offers: `v0` to `v31`.
pub const STAGED_COLUMNS: usize = 32;

/// Rows a writer lends to its statements: text or null values, `width` a
/// row.
pub trait LentRows: Send + Sync + 'static {
    /// How many rows.
    fn rows(&self) -> usize;
    /// Values a row: at most [`STAGED_COLUMNS`].
    fn width(&self) -> usize;
    /// Row `row`'s value in `column` (both below their counts).
    fn value(&self, row: usize, column: usize) -> Option<&str>;
}

static LENT: LazyLock<Mutex<HashMap<i64, Arc<dyn LentRows>>>> = LazyLock::new(Default::default);
static NEXT_ID: AtomicI64 = AtomicI64::new(1);

/// Rows lent under [`Lent::id`] until this is dropped. A statement that
/// started reading them keeps them to its end either way.
#[derive(Debug)]
pub struct Lent {
    id: i64,
}

impl Lent {
    /// What to bind as `staged_rows(?)`.
    pub fn id(&self) -> i64 {
        self.id
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        lent().remove(&self.id);
    }
}

/// Lends `rows` to this process's SQLite statements.
///
/// # Panics
/// If a row is wider than [`STAGED_COLUMNS`]: a caller's layout, fixed in
/// its code.
pub fn lend(rows: Arc<dyn LentRows>) -> Lent {
    assert!(
        rows.width() <= STAGED_COLUMNS,
        "staged rows of {} values are wider than {STAGED_COLUMNS}",
        rows.width()
    );
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    lent().insert(id, rows);
    Lent { id }
}

fn lent() -> std::sync::MutexGuard<'static, HashMap<i64, Arc<dyn LentRows>>> {
    // The map is left whole by every holder (insert, remove, clone), so a
    // poisoned lock holds a consistent map.
    LENT.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The hidden column a statement passes the id in.
const ID_COLUMN: c_int = STAGED_COLUMNS as c_int;

/// Registers the table on a connection SQLite is opening.
///
/// # Safety
/// `db` is a connection SQLite is opening.
pub(super) unsafe fn register(db: *mut ffi::sqlite3) -> c_int {
    let name = CString::new(STAGED_TABLE).expect("a name without NUL");
    // SAFETY: `MODULE` is static, so it outlives the connection; SQLite
    // copies the name.
    unsafe { ffi::sqlite3_create_module_v2(db, name.as_ptr(), &MODULE, std::ptr::null_mut(), None) }
}

static MODULE: ffi::sqlite3_module = ffi::sqlite3_module {
    iVersion: 1,
    // Without `xCreate` the table is eponymous only: no `CREATE VIRTUAL
    // TABLE` can name it, it exists on every connection as it is.
    xCreate: None,
    xConnect: Some(connect),
    xBestIndex: Some(best_index),
    xDisconnect: Some(disconnect),
    xDestroy: Some(disconnect),
    xOpen: Some(open),
    xClose: Some(close),
    xFilter: Some(filter),
    xNext: Some(next),
    xEof: Some(eof),
    xColumn: Some(column),
    xRowid: Some(rowid),
    xUpdate: None,
    xBegin: None,
    xSync: None,
    xCommit: None,
    xRollback: None,
    xFindFunction: None,
    xRename: None,
    xSavepoint: None,
    xRelease: None,
    xRollbackTo: None,
    xShadowName: None,
    xIntegrity: None,
};

/// A cursor: SQLite's part first, as SQLite requires.
#[repr(C)]
struct Cursor {
    base: ffi::sqlite3_vtab_cursor,
    rows: Option<Arc<dyn LentRows>>,
    row: usize,
}

unsafe extern "C" fn connect(
    db: *mut ffi::sqlite3,
    _aux: *mut std::ffi::c_void,
    _argc: c_int,
    _argv: *const *const c_char,
    vtab: *mut *mut ffi::sqlite3_vtab,
    _error: *mut *mut c_char,
) -> c_int {
    let columns: Vec<String> = (0..STAGED_COLUMNS).map(|i| format!("v{i}")).collect();
    let schema = CString::new(format!("CREATE TABLE x({}, id HIDDEN)", columns.join(", ")))
        .expect("a schema without NUL");
    // SAFETY: `db` is the connection SQLite is connecting the table on;
    // `vtab` is where SQLite takes the table, which `disconnect` frees.
    unsafe {
        let status = ffi::sqlite3_declare_vtab(db, schema.as_ptr());
        if status != ffi::SQLITE_OK {
            return status;
        }
        // Reads nothing but what the statement lent it: safe to use from
        // triggers and views.
        ffi::sqlite3_vtab_config(db, ffi::SQLITE_VTAB_INNOCUOUS);
        *vtab = Box::into_raw(Box::new(std::mem::zeroed::<ffi::sqlite3_vtab>()));
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn disconnect(vtab: *mut ffi::sqlite3_vtab) -> c_int {
    // SAFETY: made by `connect` with `Box::into_raw`; SQLite disconnects
    // once. Its error message, if any, is SQLite's to have freed.
    drop(unsafe { Box::from_raw(vtab) });
    ffi::SQLITE_OK
}

unsafe extern "C" fn best_index(
    vtab: *mut ffi::sqlite3_vtab,
    info: *mut ffi::sqlite3_index_info,
) -> c_int {
    // SAFETY: SQLite hands a valid plan to fill, its arrays
    // `nConstraint` long.
    unsafe {
        let info = &mut *info;
        let count = usize::try_from(info.nConstraint).unwrap_or(0);
        let mut unusable = false;
        for i in 0..count {
            let constraint = &*info.aConstraint.add(i);
            if constraint.iColumn != ID_COLUMN
                || c_int::from(constraint.op) != ffi::SQLITE_INDEX_CONSTRAINT_EQ
            {
                continue;
            }
            if constraint.usable == 0 {
                unusable = true;
                continue;
            }
            let usage = &mut *info.aConstraintUsage.add(i);
            usage.argvIndex = 1;
            usage.omit = 1;
            info.estimatedCost = 1.0;
            info.idxNum = 1;
            return ffi::SQLITE_OK;
        }
        if unusable {
            // Another plan may give the id first.
            return ffi::SQLITE_CONSTRAINT;
        }
        set_error(
            vtab,
            "staged_rows needs the id of lent rows: staged_rows(?)",
        );
        ffi::SQLITE_ERROR
    }
}

unsafe extern "C" fn open(
    _vtab: *mut ffi::sqlite3_vtab,
    cursor: *mut *mut ffi::sqlite3_vtab_cursor,
) -> c_int {
    let opened = Box::new(Cursor {
        // SAFETY: SQLite's part is plain data it fills in itself.
        base: unsafe { std::mem::zeroed() },
        rows: None,
        row: 0,
    });
    // SAFETY: SQLite takes the cursor, which `close` frees; `base` is its
    // first field of a `repr(C)` struct.
    unsafe { *cursor = Box::into_raw(opened).cast::<ffi::sqlite3_vtab_cursor>() };
    ffi::SQLITE_OK
}

unsafe extern "C" fn close(cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    // SAFETY: made by `open`; SQLite closes a cursor once.
    drop(unsafe { Box::from_raw(cursor.cast::<Cursor>()) });
    ffi::SQLITE_OK
}

unsafe extern "C" fn filter(
    cursor: *mut ffi::sqlite3_vtab_cursor,
    _index: c_int,
    _index_text: *const c_char,
    argc: c_int,
    argv: *mut *mut ffi::sqlite3_value,
) -> c_int {
    // SAFETY: a cursor `open` made; `argv` holds `argc` values, the id
    // first as `best_index` asked.
    unsafe {
        let cursor = &mut *cursor.cast::<Cursor>();
        let id = if argc >= 1 {
            ffi::sqlite3_value_int64(*argv)
        } else {
            0
        };
        cursor.row = 0;
        cursor.rows = lent().get(&id).cloned();
        if cursor.rows.is_none() {
            set_error(
                cursor.base.pVtab,
                &format!("no staged rows are lent under id {id}"),
            );
            return ffi::SQLITE_ERROR;
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn next(cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    // SAFETY: a cursor `open` made.
    unsafe { (*cursor.cast::<Cursor>()).row += 1 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn eof(cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    // SAFETY: a cursor `open` made.
    let cursor = unsafe { &*cursor.cast::<Cursor>() };
    let rows = cursor.rows.as_ref().map_or(0, |rows| rows.rows());
    c_int::from(cursor.row >= rows)
}

unsafe extern "C" fn column(
    cursor: *mut ffi::sqlite3_vtab_cursor,
    context: *mut ffi::sqlite3_context,
    index: c_int,
) -> c_int {
    // SAFETY: a cursor `open` made, on a row before `eof`; `context` is
    // where SQLite takes the value.
    unsafe {
        let cursor = &*cursor.cast::<Cursor>();
        let value = match (&cursor.rows, usize::try_from(index)) {
            (Some(rows), Ok(index)) if index < rows.width() => rows.value(cursor.row, index),
            _ => None,
        };
        match value {
            // Static: the text stays where it is, held by this cursor,
            // until the statement closes it; SQLite copies it into the row
            // it writes. A value is far below 2 GiB (a page's size cap).
            Some(text) => ffi::sqlite3_result_text(
                context,
                text.as_ptr().cast::<c_char>(),
                c_int::try_from(text.len()).unwrap_or(c_int::MAX),
                ffi::SQLITE_STATIC(),
            ),
            None => ffi::sqlite3_result_null(context),
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn rowid(
    cursor: *mut ffi::sqlite3_vtab_cursor,
    rowid: *mut ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: a cursor `open` made; `rowid` is where SQLite takes it.
    unsafe { *rowid = (*cursor.cast::<Cursor>()).row as i64 };
    ffi::SQLITE_OK
}

/// Sets the table's error message, which SQLite reports as the
/// statement's and then frees.
///
/// # Safety
/// `vtab` is a table `connect` made.
unsafe fn set_error(vtab: *mut ffi::sqlite3_vtab, message: &str) {
    let Ok(message) = CString::new(message) else {
        return;
    };
    // SAFETY: the old message was allocated by SQLite (or is null), and
    // SQLite frees the new one with `sqlite3_free`.
    unsafe {
        ffi::sqlite3_free((*vtab).zErrMsg.cast());
        (*vtab).zErrMsg = ffi::sqlite3_mprintf(c"%s".as_ptr(), message.as_ptr());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::Db;

    /// Rows as a test writes them.
    struct Table(Vec<Vec<Option<&'static str>>>);

    impl LentRows for Table {
        fn rows(&self) -> usize {
            self.0.len()
        }
        fn width(&self) -> usize {
            self.0.first().map_or(0, Vec::len)
        }
        fn value(&self, row: usize, column: usize) -> Option<&str> {
            self.0[row][column]
        }
    }

    type Read = Vec<(Option<String>, Option<String>, Option<String>)>;

    async fn read(db: &Db, id: i64) -> sqlx::Result<Read> {
        sqlx::query_as(&format!("SELECT v0, v1, v2 FROM {STAGED_TABLE}(?)"))
            .bind(id)
            .fetch_all(&db.pool)
            .await
    }

    #[tokio::test]
    async fn a_statement_reads_the_lent_rows_in_order() {
        let db = Db::connect("sqlite::memory:", 1).await.expect("opened");
        let owned = |row: [Option<&str>; 3]| -> (Option<String>, Option<String>, Option<String>) {
            let [a, b, c] = row.map(|v| v.map(str::to_owned));
            (a, b, c)
        };
        let cases: [(&str, Vec<Vec<Option<&'static str>>>); 5] = [
            ("no rows", vec![]),
            ("one row", vec![vec![Some("a"), Some("b"), Some("c")]]),
            (
                "nulls and empty text stay apart",
                vec![vec![None, Some(""), None], vec![Some(""), None, Some("x")]],
            ),
            (
                "text beyond ASCII, and quotes",
                vec![vec![Some("Zürich ☃"), Some("it's"), Some("a\"b;--")]],
            ),
            (
                "narrower rows read null past their width",
                vec![vec![Some("only")], vec![Some("two")]],
            ),
        ];
        for (case, rows) in cases {
            let expected: Read = rows
                .iter()
                .map(|row| {
                    let at = |i: usize| row.get(i).copied().flatten();
                    owned([at(0), at(1), at(2)])
                })
                .collect();
            let lent = lend(Arc::new(Table(rows)));
            let got = read(&db, lent.id()).await.expect(case);
            assert_eq!(got, expected, "{case}");
        }
        let many: Vec<Vec<Option<&'static str>>> = (0..5000)
            .map(|_| vec![Some("k"), None, Some("v")])
            .collect();
        let lent = lend(Arc::new(Table(many)));
        assert_eq!(read(&db, lent.id()).await.expect("many").len(), 5000);
        db.pool.close().await;
    }

    #[tokio::test]
    async fn rows_no_longer_lent_or_no_id_fail_with_a_sentence() {
        let db = Db::connect("sqlite::memory:", 1).await.expect("opened");
        let lent = lend(Arc::new(Table(vec![vec![Some("a")]])));
        let id = lent.id();
        drop(lent);
        let error = read(&db, id).await.expect_err("returned rows").to_string();
        assert!(
            error.contains(&format!("no staged rows are lent under id {id}")),
            "{error}"
        );
        let error = sqlx::query(&format!("SELECT v0 FROM {STAGED_TABLE}"))
            .execute(&db.pool)
            .await
            .expect_err("read without an id")
            .to_string();
        assert!(error.contains("needs the id of lent rows"), "{error}");
        db.pool.close().await;
    }

    #[tokio::test]
    async fn an_insert_writes_lent_rows_and_a_repeated_key_keeps_the_rule() {
        let db = Db::connect("sqlite::memory:", 1).await.expect("opened");
        // One connection: each holds its own in-memory database.
        let mut conn = db.pool.acquire().await.expect("a connection");
        sqlx::query("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)")
            .execute(&mut *conn)
            .await
            .unwrap();
        let rows = vec![
            vec![Some("a"), Some("1")],
            vec![Some("b"), None],
            vec![Some("a"), Some("2")],
        ];
        let lent = lend(Arc::new(Table(rows)));
        let written = sqlx::query(&format!(
            "INSERT INTO t (k, v) SELECT v0, v1 FROM {STAGED_TABLE}(?) WHERE true \
             ON CONFLICT (k) DO UPDATE SET v = excluded.v"
        ))
        .bind(lent.id())
        .execute(&mut *conn)
        .await
        .expect("inserted")
        .rows_affected();
        assert_eq!(written, 3);
        let stored: Vec<(String, Option<String>)> = sqlx::query_as("SELECT k, v FROM t ORDER BY k")
            .fetch_all(&mut *conn)
            .await
            .unwrap();
        // Applied in the order lent: the later row of `a` wins.
        assert_eq!(
            stored,
            vec![("a".into(), Some("2".into())), ("b".into(), None)]
        );
        drop(conn);
        db.pool.close().await;
    }
}
