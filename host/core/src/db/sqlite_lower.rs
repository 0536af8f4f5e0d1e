//! SQLite's built-in `lower()` folds ASCII letters only, while PostgreSQL's
//! lowers every letter: `LOWER(name) LIKE LOWER($1)` found `École` for
//! `école` on one engine and not on the other. Every SQLite connection this
//! process opens gets a `lower()` that lowers each character by the Unicode
//! simple mapping, as PostgreSQL's does, so the two engines agree.

use std::ffi::{c_char, c_int};

use libsqlite3_sys as ffi;

/// Lower-cases `text` one character at a time by the Unicode simple
/// lowercase mapping (no context rules such as the final sigma), which is
/// what PostgreSQL's `lower()` does under a UTF-8 libc locale.
pub fn lower(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            c if c.is_ascii() => out.push(c.to_ascii_lowercase()),
            // The one letter whose full mapping (two characters) differs
            // from its simple one.
            '\u{130}' => out.push('i'),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// Gives the connection SQLite is opening the Unicode `lower()` (see
/// `sqlite_extensions`).
///
/// # Safety
/// `db` is a connection SQLite is opening.
pub(super) unsafe fn register(db: *mut ffi::sqlite3) -> c_int {
    // SAFETY: `db` is the connection SQLite is opening; the name is a
    // NUL-terminated static string; `lower_function` matches `xFunc`.
    unsafe {
        ffi::sqlite3_create_function_v2(
            db,
            c"lower".as_ptr(),
            1,
            ffi::SQLITE_UTF8 | ffi::SQLITE_DETERMINISTIC | ffi::SQLITE_INNOCUOUS,
            std::ptr::null_mut(),
            Some(lower_function),
            None,
            None,
            None,
        )
    }
}

unsafe extern "C" fn lower_function(
    context: *mut ffi::sqlite3_context,
    argc: c_int,
    argv: *mut *mut ffi::sqlite3_value,
) {
    // SAFETY: SQLite passes `argc` (1, as registered) valid values; the text
    // pointer and its byte length describe one value that outlives this
    // call; SQLITE_TRANSIENT makes SQLite copy the result before `lowered`
    // is dropped.
    unsafe {
        if argc != 1 {
            ffi::sqlite3_result_null(context);
            return;
        }
        let value = *argv;
        if ffi::sqlite3_value_type(value) == ffi::SQLITE_NULL {
            ffi::sqlite3_result_null(context);
            return;
        }
        let text = ffi::sqlite3_value_text(value);
        let length = ffi::sqlite3_value_bytes(value);
        if text.is_null() || length <= 0 {
            ffi::sqlite3_result_value(context, value);
            return;
        }
        let bytes = std::slice::from_raw_parts(text, length as usize);
        match std::str::from_utf8(bytes) {
            Ok(text) => {
                let lowered = lower(text);
                ffi::sqlite3_result_text(
                    context,
                    lowered.as_ptr().cast::<c_char>(),
                    lowered.len() as c_int,
                    ffi::SQLITE_TRANSIENT(),
                );
            }
            // Not UTF-8 (a blob cast to text): left as it is.
            Err(_) => ffi::sqlite3_result_value(context, value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::lower;

    #[test]
    fn lowers_every_letter_one_character_at_a_time() {
        assert_eq!(lower("ÉCOLE Straße"), "école straße");
        assert_eq!(lower("ΣΊΣΥΦΟΣ"), "σίσυφοσ");
        assert_eq!(lower("İSTANBUL"), "istanbul");
        assert_eq!(lower("MÜLLER-PC_01%"), "müller-pc_01%");
    }
}
