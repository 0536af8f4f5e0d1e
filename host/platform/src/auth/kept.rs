//! Who a session or token belongs to, kept in memory on SQLite so that a
//! request does not look its caller up again while nothing it was read
//! from has changed.
//!
//! A caller is read from [`IDENTITY_TABLES`]. On SQLite every committed
//! transaction that wrote one of them, by any path, moves
//! `sqlite_writes::commits` (one serving process per SQLite database, see
//! docs: deployment), and a kept caller is used only while that count is the
//! one taken before it was read: a revoked session, a removed member, a
//! changed role or a customer no longer reached is refused by the next
//! request. On PostgreSQL, where another process may revoke, every request
//! reads its caller.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Caller;
use cairn_core::db::{now_ms, sqlite_writes, Backend, Db};

/// The tables a caller is read from: a write to any of them ends every
/// kept caller.
pub const IDENTITY_TABLES: &[&str] = &[
    "users",
    "sessions",
    "tenants",
    "partner_analyst_scopes",
    "partner_groups",
    "partner_group_members",
];

/// Callers kept at most (then it starts over).
const MAX_KEPT: usize = 50_000;

/// What a caller was looked up by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Credential {
    /// A session cookie, by its token's hash.
    Session(String),
    /// A verified token's user, tenant and the customer it acts in.
    Bearer {
        user: String,
        tenant: String,
        acting: Option<String>,
    },
}

struct KeptCaller {
    database: u64,
    commits: u64,
    /// A session's end (ms); a token's end is checked with its signature.
    expires_at: Option<i64>,
    caller: Caller,
}

static KEPT: Mutex<Option<HashMap<Credential, KeptCaller>>> = Mutex::new(None);

/// Starts counting the writes of [`IDENTITY_TABLES`]: at startup, before
/// the first request.
pub fn watch() {
    if !sqlite_writes::watch(IDENTITY_TABLES) {
        tracing::warn!("SQLite already watches other tables: callers are read on every request");
    }
}

/// The stamp to keep a caller read from now on with; `None` when callers
/// are not kept (PostgreSQL, or not watching).
fn stamp(db: &Db) -> Option<u64> {
    (db.backend == Backend::Sqlite)
        .then(sqlite_writes::commits)
        .flatten()
}

/// The kept caller of `credential`, if nothing it was read from has been
/// written since; else the stamp to keep a fresh lookup with (`None`: do
/// not keep it).
pub fn get(db: &Db, credential: &Credential) -> Result<Caller, Option<u64>> {
    let stamp = stamp(db).ok_or(None)?;
    let kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    match kept.as_ref().and_then(|k| k.get(credential)) {
        Some(found)
            if found.database == db.instance()
                && found.commits == stamp
                && found.expires_at.is_none_or(|end| now_ms() < end) =>
        {
            Ok(found.caller.clone())
        }
        _ => Err(Some(stamp)),
    }
}

/// Keeps `caller`, read for `credential` after `stamp` was taken.
pub fn keep(db: &Db, credential: Credential, stamp: u64, expires_at: Option<i64>, caller: &Caller) {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let kept = kept.get_or_insert_with(HashMap::new);
    if kept.len() >= MAX_KEPT {
        kept.clear();
    }
    kept.insert(
        credential,
        KeptCaller {
            database: db.instance(),
            commits: stamp,
            expires_at,
            caller: caller.clone(),
        },
    );
}
