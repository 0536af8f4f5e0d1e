//! Who a session or token belongs to, kept in memory so that a request
//! does not look its caller up again while nothing it was read from has
//! changed, and for at most [`MAX_AGE`].
//!
//! A caller is read from [`IDENTITY_TABLES`], and kept with a stamp of
//! their writes taken before the read; it is used only while the stamp is
//! unchanged:
//! - On SQLite every committed transaction that wrote one of them, by any
//!   path, moves `sqlite_writes::commits` (one serving process per SQLite
//!   database, see docs: deployment).
//! - On PostgreSQL a statement trigger on each table (migration 0058)
//!   notifies every process at commit, as the `identity` topic of
//!   `changes`, whichever process or path wrote; while a process's
//!   listener is not connected it keeps nothing. The process that made a
//!   change does not wait for its own notification: every write request
//!   it answers ([`forget_all`]) ends what it kept.
//!
//! A revoked session, a removed member, a changed role or a customer no
//! longer reached is so refused by the next request in the process that
//! made the change, and within the notification's delay (milliseconds) in
//! the others.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::Caller;
use cairn_core::db::{changes, now_ms, sqlite_writes, Backend, Db};

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

/// How long a caller is kept however quiet its tables are: the owner's
/// bound on what a missed notification could cost.
pub const MAX_AGE: Duration = Duration::from_secs(5);

/// [`MAX_AGE`], unless a test that must tell a notification from the age
/// bound raised it ([`keep_at_most`]).
static MAX_AGE_MS: AtomicU64 = AtomicU64::new(MAX_AGE.as_millis() as u64);

/// Keeps callers at most `age`. Only the test server calls it: a refusal
/// that comes while callers are kept for minutes proves the notification,
/// where one within [`MAX_AGE`] could be the bound.
pub fn keep_at_most(age: Duration) {
    MAX_AGE_MS.store(age.as_millis() as u64, Ordering::SeqCst);
}

/// The `changes` topic the PostgreSQL triggers of migration 0058 notify,
/// for every tenant at once.
const TOPIC: &str = "identity";
const ALL_TENANTS: &str = "*";

/// This process's write requests answered (see [`forget_all`]).
static LOCAL_WRITES: AtomicU64 = AtomicU64::new(0);

/// Ends every caller this process keeps: after a request that may have
/// written an identity table was answered, so that the process that made
/// a change never uses what it kept before, whatever its listener's delay.
pub fn forget_all() {
    LOCAL_WRITES.fetch_add(1, Ordering::SeqCst);
}

/// The writes a kept caller was read after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    sqlite_commits: Option<u64>,
    changes: Option<changes::Stamp>,
    local_writes: u64,
}

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
    stamp: Stamp,
    kept_at: Instant,
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
/// are not kept (SQLite not watching, a PostgreSQL listener not connected).
fn stamp(db: &Db) -> Option<Stamp> {
    let local_writes = LOCAL_WRITES.load(Ordering::SeqCst);
    match db.backend {
        Backend::Sqlite => sqlite_writes::commits().map(|commits| Stamp {
            sqlite_commits: Some(commits),
            changes: None,
            local_writes,
        }),
        Backend::Postgres => changes::stamp(db, TOPIC, ALL_TENANTS).map(|changes| Stamp {
            sqlite_commits: None,
            changes: Some(changes),
            local_writes,
        }),
    }
}

/// The kept caller of `credential`, if nothing it was read from has been
/// written since; else the stamp to keep a fresh lookup with (`None`: do
/// not keep it).
pub fn get(db: &Db, credential: &Credential) -> Result<Caller, Option<Stamp>> {
    let stamp = stamp(db).ok_or(None)?;
    let kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    match kept.as_ref().and_then(|k| k.get(credential)) {
        Some(found)
            if found.database == db.instance()
                && found.stamp == stamp
                && found.kept_at.elapsed().as_millis()
                    < u128::from(MAX_AGE_MS.load(Ordering::SeqCst))
                && found.expires_at.is_none_or(|end| now_ms() < end) =>
        {
            Ok(found.caller.clone())
        }
        _ => Err(Some(stamp)),
    }
}

/// Keeps `caller`, read for `credential` after `stamp` was taken.
pub fn keep(
    db: &Db,
    credential: Credential,
    stamp: Stamp,
    expires_at: Option<i64>,
    caller: &Caller,
) {
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let kept = kept.get_or_insert_with(HashMap::new);
    if kept.len() >= MAX_KEPT {
        kept.clear();
    }
    kept.insert(
        credential,
        KeptCaller {
            database: db.instance(),
            stamp,
            kept_at: Instant::now(),
            expires_at,
            caller: caller.clone(),
        },
    );
}

/// Middleware: every request that may write (any method but `GET`, `HEAD`
/// and `OPTIONS`) ends what this process keeps once it is answered (see
/// [`forget_all`]). Writes are rare beside reads, so little is lost.
pub async fn forget_after_writes(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use axum::http::Method;
    let writes = !matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    let response = next.run(request).await;
    if writes {
        forget_all();
    }
    response
}
