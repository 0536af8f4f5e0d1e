//! Counts the committed SQLite transactions that wrote one of a few watched
//! tables, whoever wrote them: what lets an answer read from those tables
//! (who a session or token belongs to) be kept until they change, with no
//! write path having to remember to say so.
//!
//! Every connection this process opens gets an update hook (see
//! `sqlite_extensions`): when a row of a watched table changes it marks the
//! connection's thread and sets the connection's WAL hook, which SQLite
//! calls after a commit has taken place and which counts the commit if it
//! was marked. (The WAL hook cannot be set when the connection opens:
//! SQLite sets its default one after running the auto-extensions.) A reader
//! takes the count before it reads and keeps its answer with it; a commit
//! after that moves the count, so nothing read before a commit outlives it.
//! sqlx runs each SQLite connection on a thread of its own, so a
//! transaction's changes and its commit are seen on one thread. A rolled
//! back change, or one that rewrote a row with the bytes it held (SQLite
//! then writes no page and calls no WAL hook), leaves the mark for the
//! thread's next commit: one count too many, never one too few.
//!
//! The WAL hook replaces SQLite's default one, which checkpoints the log
//! once it holds 1,000 pages; this one does the same.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use libsqlite3_sys as ffi;

/// SQLite's default `wal_autocheckpoint`, in pages.
const AUTOCHECKPOINT_PAGES: c_int = 1000;

static WATCHED: OnceLock<&'static [&'static str]> = OnceLock::new();
static COMMITS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static MARKED: Cell<bool> = const { Cell::new(false) };
}

/// Watches `tables` from now on. The first call decides; call it before
/// the service answers requests. Returns whether `tables` are the watched
/// ones.
pub fn watch(tables: &'static [&'static str]) -> bool {
    *WATCHED.get_or_init(|| tables) == tables
}

/// Committed transactions that wrote a watched table, in this process, on
/// any SQLite database; `None` before [`watch`].
pub fn commits() -> Option<u64> {
    WATCHED.get()?;
    Some(COMMITS.load(Ordering::SeqCst))
}

/// Gives the connection SQLite is opening the update hook (see
/// `sqlite_extensions`).
///
/// # Safety
/// `db` is a connection SQLite is opening.
pub(super) unsafe fn register(db: *mut ffi::sqlite3) -> c_int {
    // SAFETY: `db` is the connection SQLite is opening; the callback
    // matches the signature SQLite calls, and its argument is that
    // connection, which outlives its hooks.
    unsafe {
        ffi::sqlite3_update_hook(db, Some(changed), db.cast::<c_void>());
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn changed(
    db: *mut c_void,
    _operation: c_int,
    _database: *const c_char,
    table: *const c_char,
    _rowid: ffi::sqlite3_int64,
) {
    let Some(watched) = WATCHED.get() else {
        return;
    };
    if table.is_null() {
        return;
    }
    // SAFETY: SQLite passes the table's NUL-terminated name, valid for
    // this call.
    let table = unsafe { CStr::from_ptr(table) }.to_bytes();
    if watched.iter().any(|w| w.as_bytes() == table) {
        MARKED.with(|m| m.set(true));
        // SAFETY: `db` is this hook's connection (see `register`); setting
        // its WAL hook only stores a pointer SQLite reads at the commit.
        unsafe {
            ffi::sqlite3_wal_hook(
                db.cast::<ffi::sqlite3>(),
                Some(committed),
                std::ptr::null_mut(),
            );
        }
    }
}

unsafe extern "C" fn committed(
    _arg: *mut c_void,
    db: *mut ffi::sqlite3,
    database: *const c_char,
    pages: c_int,
) -> c_int {
    if MARKED.with(|m| m.replace(false)) {
        COMMITS.fetch_add(1, Ordering::SeqCst);
    }
    if pages >= AUTOCHECKPOINT_PAGES {
        // SAFETY: the connection and schema name SQLite passed to this
        // hook, called outside any statement of that connection; a busy
        // checkpoint is skipped and tried at the next commit, as SQLite's
        // own hook does.
        unsafe { ffi::sqlite3_wal_checkpoint(db, database) };
    }
    ffi::SQLITE_OK
}
