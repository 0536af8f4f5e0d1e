//! What every SQLite connection this process opens is given when it
//! opens: the Unicode `lower()` (`sqlite_lower`), the hooks that count
//! writes to watched tables (`sqlite_writes`) and the table of rows lent
//! by this process (`sqlite_staged`). sqlx's `Any` driver does not
//! expose the raw connection, so they are registered through SQLite's
//! auto-extension hook, which runs for every connection opened afterwards.

use std::ffi::{c_char, c_int};
use std::sync::Once;

use libsqlite3_sys as ffi;

use super::{sqlite_lower, sqlite_staged, sqlite_writes};

/// Registers them for every SQLite connection opened from now on.
/// Idempotent.
pub fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // SAFETY: `on_open` has the signature SQLite's auto-extension hook
        // calls, and stays valid for the life of the process.
        let status = unsafe { ffi::sqlite3_auto_extension(Some(on_open)) };
        if status != ffi::SQLITE_OK {
            tracing::error!(
                status,
                "registering SQLite's lower(), write hooks and staged rows failed"
            );
        }
    });
}

unsafe extern "C" fn on_open(
    db: *mut ffi::sqlite3,
    _error: *mut *mut c_char,
    _api: *const ffi::sqlite3_api_routines,
) -> c_int {
    // SAFETY: `db` is the connection SQLite is opening.
    unsafe {
        let status = sqlite_lower::register(db);
        if status != ffi::SQLITE_OK {
            return status;
        }
        let status = sqlite_staged::register(db);
        if status != ffi::SQLITE_OK {
            return status;
        }
        sqlite_writes::register(db)
    }
}
