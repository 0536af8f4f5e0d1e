//! The database handle shared by every area.
//!
//! One body of SQL serves both engines through sqlx's `Any` driver: queries use
//! `$1` placeholders (SQLite accepts them too), timestamps are BIGINT Unix
//! milliseconds, ids are TEXT, JSON is TEXT (the search documents are binary
//! JSON). Where the dialects really differ (job claiming, JSON operators) a
//! caller matches on [`Backend`].
//!
//! The `Db` handle (sqlx `Any` pool + `Backend`, and on SQLite the write
//! gate `write_turn`), migrations for both engines, timestamp helpers;
//! `sqlite_extensions.rs` gives every SQLite connection, through SQLite's
//! auto-extension hook, a Unicode `lower()` (`sqlite_lower.rs`) and the
//! hooks counting writes to watched tables (`sqlite_writes.rs`) and the
//! table of rows a writer lends its statements (`sqlite_staged.rs`);
//! `changes.rs` the stamps of answers kept until their rows are written.
//! Timestamps are BIGINT Unix ms, ids are UUIDv7 text, JSON is text.

mod batches;
pub mod changes;
pub mod fence;
mod migrations;
pub mod pacing;
mod sqlite_extensions;
mod sqlite_lower;
pub mod sqlite_staged;
pub mod sqlite_writes;

pub use batches::{delete_unstamped_in_batches, WriteBatches};
pub use sqlite_lower::lower;

use std::ffi::c_int;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// Every [`Backend::name`].
    pub const NAMES: [&'static str; 2] = ["sqlite", "postgres"];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("unsupported database URL (expected sqlite:// or postgres://)")]
    UnsupportedUrl,
    #[error("cannot open the {backend} database: {reason}")]
    Open {
        backend: &'static str,
        reason: String,
    },
    #[error(transparent)]
    Sqlx(#[from] sqlx::Error),
    #[error(transparent)]
    Migrate(#[from] sqlx::migrate::MigrateError),
}

/// A SQLite file is created when missing, unless the URL says otherwise
/// (`mode=ro`, `mode=rw`).
fn normalized(url: &str, backend: Backend) -> String {
    match backend {
        Backend::Sqlite if !url.contains("mode=") => {
            let separator = if url.contains('?') { '&' } else { '?' };
            format!("{url}{separator}mode=rwc")
        }
        _ => url.to_string(),
    }
}

/// Ends every session named `name` but `conn`'s own; how many it ended.
async fn end_sessions_named(conn: &mut sqlx::AnyConnection, name: &str) -> sqlx::Result<u64> {
    // Materialized first: no other process's session is ever passed to
    // pg_terminate_backend, whatever order the planner would test the
    // conditions in. Without a timeout: every session is signalled at
    // once and the caller's next statement waits on the locks a dying one
    // still holds. Waiting up to a second for each in turn (a timeout
    // argument) took the whole 3 s a stop has left on a loaded machine
    // before anything was handed back.
    let ended: i64 = sqlx::query_scalar(
        "WITH mine AS MATERIALIZED (SELECT pid FROM pg_stat_activity \
         WHERE application_name = $1 AND pid <> pg_backend_pid()) \
         SELECT count(*) FROM mine WHERE pg_terminate_backend(pid)",
    )
    .bind(name)
    .fetch_one(conn)
    .await?;
    Ok(ended as u64)
}

/// The sessions of one handle on PostgreSQL (see [`Db::end_other_sessions`]).
struct Sessions {
    /// The handle's URL, with `application_name` set to `name`.
    url: String,
    name: String,
}

#[derive(Clone)]
pub struct Db {
    pub pool: AnyPool,
    pub backend: Backend,
    /// For the job queue's bookkeeping writes (claims, heartbeats, progress,
    /// finishes). On PostgreSQL its sessions commit without waiting for the
    /// WAL flush: a crash of the database server can forget the last fraction
    /// of a second of them, which at worst reruns an idempotent job from its
    /// last checkpoint, while sparing two fsyncs per job. Enqueues and
    /// checkpoints (with the data they describe) stay on `pool`. On SQLite
    /// it is `pool`.
    pub bookkeeping: AnyPool,
    /// On PostgreSQL, connections of sqlx's own PostgreSQL driver, for what
    /// the `Any` driver cannot say: `COPY ... FROM STDIN`, which a first
    /// sync's pages are written with (no per-row unpacking of a bound JSON
    /// array on the server). Connected when first used, and let go when
    /// idle. `None` on SQLite.
    pub copy: Option<sqlx::PgPool>,
    /// On PostgreSQL, the `application_name` every connection of this
    /// handle's pools carries, unique to the handle: what
    /// [`Db::end_other_sessions`] finds them by. `None` on SQLite, and
    /// when the URL names an application of its own.
    sessions: Option<std::sync::Arc<Sessions>>,
    write_gate: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// Writers waiting at the gate now (for the metrics).
    write_waiting: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// Requests this process is answering now.
    requests: pacing::InFlight,
    /// On the handle jobs run on: their write turns yield to requests.
    pacing: Option<std::sync::Arc<pacing::Pacing>>,
    /// Which database this handle opened: what a cache in this process
    /// keys its answers by, so two databases (tests open many) never share
    /// one.
    instance: u64,
}

impl Db {
    /// Opens a pool for `url`. SQLite gets WAL, a busy timeout and foreign keys
    /// on every connection.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Db, DbError> {
        sqlx::any::install_default_drivers();
        sqlite_without_memory_statistics();
        sqlite_extensions::install();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            return Err(DbError::UnsupportedUrl);
        };
        let url = normalized(url, backend);
        let sessions = match backend {
            Backend::Postgres if !url.contains("application_name=") => {
                let name = format!("cairn-{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
                let separator = if url.contains('?') { '&' } else { '?' };
                let url = format!("{url}{separator}application_name={name}");
                Some(std::sync::Arc::new(Sessions { url, name }))
            }
            _ => None,
        };
        let url = sessions.as_ref().map_or(url.as_str(), |s| s.url.as_str());
        let pool = Self::pool(url, backend, max_connections)
            .await
            .map_err(|e| match e {
                DbError::Sqlx(e) => DbError::Open {
                    backend: backend.name(),
                    reason: e.to_string(),
                },
                other => other,
            })?;
        let bookkeeping = match backend {
            Backend::Sqlite => pool.clone(),
            Backend::Postgres => {
                let separator = if url.contains('?') { '&' } else { '?' };
                let url = format!("{url}{separator}options=-c%20synchronous_commit%3Doff");
                // Heartbeats and progress: short statements, so half the
                // main pool (at most 8) is plenty, and a service told to
                // keep few connections keeps few in all. Connected when
                // first used: a handle that runs no jobs (a command, a
                // test's own) holds none of the server's connections.
                Self::pool_options(backend, (max_connections / 2).clamp(2, 8))
                    .connect_lazy_with(AnyConnectOptions::from_str(&url)?)
            }
        };
        let copy = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(Self::copy_pool(url, (max_connections / 2).clamp(2, 8))?),
        };
        Ok(Db {
            pool,
            backend,
            bookkeeping,
            copy,
            sessions,
            write_gate: Default::default(),
            write_waiting: Default::default(),
            requests: Default::default(),
            pacing: None,
            instance: {
                static OPENED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                OPENED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        })
    }

    /// On SQLite, this handle with a pool of its own for its queries
    /// (`max_connections`), its connections opened by the calling thread;
    /// the write turn, the bookkeeping pool and the instance stay shared.
    /// A SQLite connection works on a thread of its own, which takes the
    /// priority of the thread that opened it: the job runtime opens the
    /// pool its runs query through, so their SQL runs below the requests'.
    /// On PostgreSQL, where the server does that work, this handle.
    pub async fn with_pool_of_its_own(
        &self,
        url: &str,
        max_connections: u32,
    ) -> Result<Db, DbError> {
        if self.backend == Backend::Postgres {
            return Ok(self.clone());
        }
        let pool = Self::pool(
            &normalized(url, self.backend),
            self.backend,
            max_connections,
        )
        .await?;
        Ok(Db {
            pool,
            ..self.clone()
        })
    }

    /// This handle's database, unique among the handles this process
    /// opened (clones share it).
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// The PostgreSQL driver's own pool for [`Db::copy`], connected lazily:
    /// a process that never writes a first sync opens none of it, and an
    /// idle connection is closed after a minute.
    fn copy_pool(url: &str, max_connections: u32) -> Result<sqlx::PgPool, DbError> {
        let options = sqlx::postgres::PgConnectOptions::from_str(url)?;
        Ok(sqlx::postgres::PgPoolOptions::new()
            .max_connections(max_connections)
            .min_connections(0)
            .idle_timeout(Duration::from_secs(60))
            .acquire_timeout(Duration::from_secs(30))
            .connect_lazy_with(options))
    }

    async fn pool(url: &str, backend: Backend, max_connections: u32) -> Result<AnyPool, DbError> {
        let options = AnyConnectOptions::from_str(url)?;
        Ok(Self::pool_options(backend, max_connections)
            .connect_with(options)
            .await?)
    }

    /// How every pool of `backend` behaves, whether it connects at once
    /// ([`Db::pool`]) or when first used.
    fn pool_options(backend: Backend, max_connections: u32) -> AnyPoolOptions {
        let max_connections = max_connections.max(2);
        let mut pool = AnyPoolOptions::new()
            // A reader streaming beside a writer's transaction needs two.
            .max_connections(max_connections)
            .acquire_timeout(Duration::from_secs(30));
        if backend == Backend::Sqlite {
            // Every connection opened now, by this thread, and kept: a
            // SQLite connection works on a thread of its own, which takes
            // the priority of the thread that opened it, and one opened
            // from a job thread (`cairn_jobs::runtime`, niced) would serve
            // requests slowly ever after.
            pool = pool
                .min_connections(max_connections)
                .idle_timeout(None)
                .max_lifetime(None);
        }
        pool.after_connect(move |conn, _meta| {
            Box::pin(async move {
                if backend == Backend::Sqlite {
                    // A search's temporary sets stay in memory. (Mapping
                    // the file and a 16 MiB cache per connection were
                    // tried: reads no faster, a sync's peak memory
                    // 229 -> 554 MiB.)
                    conn.execute(
                        "PRAGMA journal_mode = WAL; PRAGMA busy_timeout = 10000; \
                             PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL; \
                             PRAGMA temp_store = MEMORY;",
                    )
                    .await?;
                }
                Ok(())
            })
        })
    }

    /// On SQLite, waits for this process's turn to write. SQLite has one
    /// writer at a time; concurrent writers otherwise meet in its busy
    /// handler, which sleeps in milliseconds. Hot write paths (the job queue)
    /// take the gate so they queue in memory instead. On a [`Db::paced`]
    /// handle, on both engines, the turn first waits what the jobs' writes
    /// owe the requests in flight.
    pub async fn write_turn(&self) -> WriteTurn<'_> {
        if let Some(pacing) = &self.pacing {
            pacing.wait().await;
        }
        let gate = match self.backend {
            Backend::Sqlite => {
                use std::sync::atomic::Ordering;
                self.write_waiting.fetch_add(1, Ordering::Relaxed);
                let turn = self.write_gate.lock().await;
                self.write_waiting.fetch_sub(1, Ordering::Relaxed);
                Some(turn)
            }
            Backend::Postgres => None,
        };
        WriteTurn {
            _gate: gate,
            paced: self
                .pacing
                .as_deref()
                .map(|pacing| (pacing, tokio::time::Instant::now())),
        }
    }

    /// The requests this process is answering, as the HTTP layer counts
    /// them (`count_in_flight`): jobs' write turns yield while any is in
    /// flight.
    pub fn requests_in_flight(&self) -> &pacing::InFlight {
        &self.requests
    }

    /// This handle, for jobs: its write turns keep the jobs' writes to
    /// `share` of the time while requests are in flight (1: never wait).
    pub fn paced(&self, share: f64) -> Db {
        Db {
            pacing: Some(std::sync::Arc::new(pacing::Pacing::new(
                share,
                self.requests.clone(),
            ))),
            ..self.clone()
        }
    }

    /// Writers waiting for their turn now (always 0 on PostgreSQL).
    pub fn writers_waiting(&self) -> usize {
        self.write_waiting
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Applies the migrations of this backend that have not run yet.
    pub async fn migrate(&self) -> Result<(), DbError> {
        migrations::migrator(self.backend)
            .await?
            .run(&self.pool)
            .await?;
        Ok(())
    }

    /// On PostgreSQL, this handle with a small pool of its own (for the
    /// bookkeeping too) opened now, by the calling task's runtime, under
    /// the same `application_name`. A connection does its I/O through the
    /// runtime that opened it: one the job runtime opened never hears back
    /// while a run blocks that runtime's threads, which is when a stop
    /// overruns its deadline and must still hand the jobs back. A clone of
    /// this handle on SQLite, and when the URL names its own application.
    pub async fn reopened(&self) -> Result<Db, DbError> {
        let Some(sessions) = &self.sessions else {
            return Ok(self.clone());
        };
        let pool = Self::pool(&sessions.url, self.backend, 2).await?;
        Ok(Db {
            bookkeeping: pool.clone(),
            pool,
            copy: None,
            ..self.clone()
        })
    }

    /// On PostgreSQL, ends every session of this handle's pools but the
    /// one asking, signalling them all at once; returns how many were
    /// ended. A process out of time at shutdown calls it before it
    /// hands its jobs back: a run starved of CPU inside a transaction holds
    /// its job's row locked, and the hand-back would wait on that lock
    /// until the process exits, leaving the job running until its lease
    /// lapses. It asks on an idle connection of the pools (a server at its
    /// connection limit refuses a new one), else on a new connection. The
    /// pools then test a connection before lending it, and replace an
    /// ended one. On SQLite, or when the URL names its own
    /// `application_name`, it ends nothing.
    pub async fn end_other_sessions(&self) -> Result<u64, DbError> {
        use sqlx::Connection;
        let Some(sessions) = &self.sessions else {
            return Ok(0);
        };
        let idle = self
            .bookkeeping
            .try_acquire()
            .or_else(|| self.pool.try_acquire());
        if let Some(mut conn) = idle {
            if let Ok(ended) = end_sessions_named(&mut conn, &sessions.name).await {
                return Ok(ended);
            }
        }
        let mut conn = sqlx::AnyConnection::connect(&sessions.url).await?;
        let ended = end_sessions_named(&mut conn, &sessions.name).await;
        let _ = conn.close().await;
        Ok(ended?)
    }

    pub async fn close(&self) {
        self.pool.close().await;
        self.bookkeeping.close().await;
        if let Some(copy) = &self.copy {
            copy.close().await;
        }
    }

    /// Whether the newest migration this build carries is applied (a
    /// database an older build left behind, or one a newer build moved on,
    /// both answer on their own terms: only a missing one is behind).
    pub async fn migrations_current(&self) -> sqlx::Result<bool> {
        let Some(newest) = migrations::newest(self.backend) else {
            return Ok(true);
        };
        let applied: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM _sqlx_migrations WHERE version = $1")
                .bind(newest)
                .fetch_one(&self.pool)
                .await?;
        Ok(applied > 0)
    }

    /// When this database was set up (its first migration applied), as
    /// Unix milliseconds: the start of any "never happened since" clock
    /// that must outlive a restart.
    pub async fn set_up_at(&self) -> sqlx::Result<Option<i64>> {
        let sql = match self.backend {
            Backend::Sqlite => {
                "SELECT CAST(strftime('%s', MIN(installed_on)) AS BIGINT) * 1000 \
                 FROM _sqlx_migrations"
            }
            Backend::Postgres => {
                "SELECT CAST(EXTRACT(EPOCH FROM MIN(installed_on)) * 1000 AS BIGINT) \
                 FROM _sqlx_migrations"
            }
        };
        sqlx::query_scalar(sql).fetch_one(&self.pool).await
    }

    /// One real round trip, for `/health`.
    pub async fn ping(&self) -> bool {
        sqlx::query("SELECT 1").execute(&self.pool).await.is_ok()
    }
}

/// Wall-clock now as Unix milliseconds, the representation of every stored
/// timestamp.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Renders a stored timestamp for a JSON response (RFC 3339, UTC).
pub fn to_rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Decodes the JSON text stored in `column`. Stored JSON is written by the
/// service itself, so text that does not decode is a broken row: an error
/// naming the column (a 500 with the detail logged), never a silent empty
/// value.
pub fn stored_json<T: serde::de::DeserializeOwned>(column: &str, raw: &str) -> sqlx::Result<T> {
    serde_json::from_str(raw).map_err(|err| sqlx::Error::ColumnDecode {
        index: column.to_string(),
        source: Box::new(err),
    })
}

/// A column of stored JSON read into a row struct: text that does not
/// decode fails the row's read with an error naming the column, as
/// [`stored_json`] does. Reads as the value it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredJson<T = serde_json::Value>(pub T);

impl<T> sqlx::Type<sqlx::Any> for StoredJson<T> {
    fn type_info() -> sqlx::any::AnyTypeInfo {
        <str as sqlx::Type<sqlx::Any>>::type_info()
    }

    fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
        <str as sqlx::Type<sqlx::Any>>::compatible(ty)
    }
}

impl<'r, T: serde::de::DeserializeOwned> sqlx::Decode<'r, sqlx::Any> for StoredJson<T> {
    fn decode(value: sqlx::any::AnyValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        let raw = <&str as sqlx::Decode<sqlx::Any>>::decode(value)?;
        Ok(StoredJson(serde_json::from_str(raw)?))
    }
}

impl<T: serde::Serialize> serde::Serialize for StoredJson<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<T> std::ops::Deref for StoredJson<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A flag column: a boolean on PostgreSQL, an integer on SQLite (or a
/// computed `0`/`1` on either). An error names the column when it is
/// neither.
pub fn flag(row: &sqlx::any::AnyRow, column: &str) -> sqlx::Result<bool> {
    use sqlx::Row;
    match row.try_get::<bool, _>(column) {
        Ok(value) => Ok(value),
        Err(_) => Ok(row.try_get::<i64, _>(column)? != 0),
    }
}

/// True when `err` is a unique-constraint violation on either backend.
pub fn is_unique_violation(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            db.is_unique_violation()
                || db.code().as_deref() == Some("23505")
                || db.message().contains("UNIQUE constraint failed")
        }
        _ => false,
    }
}

/// How an update of a tenant's row whose name is unique in the tenant
/// ended.
pub enum NamedUpdate {
    Done,
    NoSuchRow,
    NameTaken,
}

impl NamedUpdate {
    /// From the update statement's outcome: no row changed is a row the
    /// tenant does not have; a unique violation is the name taken.
    pub fn of(result: Result<sqlx::any::AnyQueryResult, sqlx::Error>) -> sqlx::Result<NamedUpdate> {
        match result {
            Ok(done) if done.rows_affected() == 1 => Ok(NamedUpdate::Done),
            Ok(_) => Ok(NamedUpdate::NoSuchRow),
            Err(err) if is_unique_violation(&err) => Ok(NamedUpdate::NameTaken),
            Err(err) => Err(err),
        }
    }
}

/// Deletes the row `id` of `tenant` from `table` (a table name of ours,
/// with `tenant_id` and `id` columns); whether there was one. Rows that
/// reference it go by their foreign keys' cascade.
pub async fn delete_tenant_row(
    db: &Db,
    table: &'static str,
    tenant: &crate::ids::TenantId,
    id: &str,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let deleted = sqlx::query(&format!(
        "DELETE FROM {table} WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(deleted == 1)
}

/// `($1, $2, ...), ($n, ...)` for `rows` rows of `columns` placeholders,
/// for a statement whose every parameter is one of these, bound in order.
pub fn values_placeholders(backend: Backend, rows: usize, columns: usize) -> String {
    values_placeholders_wrapped(backend, rows, columns, &[])
}

/// [`values_placeholders`] with the columns listed (1-based) converted on
/// the way in by a SQL template whose `{}` is the placeholder, such as
/// `CAST({} AS jsonb)` for text bound to a PostgreSQL `jsonb` column.
///
/// On SQLite the placeholders are anonymous (`?`): SQLite keeps `$n` as
/// names in a list it walks on every lookup, and sqlx looks each one up
/// while binding, so a statement of 1,000 named parameters took a
/// quadratic half a million steps to bind (an eighth of a whole rollup's
/// time). Anonymous ones bind in order, which is why nothing else in the
/// statement may be a parameter.
pub fn values_placeholders_wrapped(
    backend: Backend,
    rows: usize,
    columns: usize,
    wraps: &[(usize, &str)],
) -> String {
    (0..rows)
        .map(|r| {
            let cells: Vec<String> = (1..=columns)
                .map(|c| {
                    let placeholder = match backend {
                        Backend::Sqlite => "?".to_string(),
                        Backend::Postgres => format!("${}", r * columns + c),
                    };
                    match wraps.iter().find(|(column, _)| *column == c) {
                        Some((_, template)) => template.replace("{}", &placeholder),
                        None => placeholder,
                    }
                })
                .collect();
            format!("({})", cells.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The engine a connection (or a transaction on one) speaks.
pub fn backend_of(connection: &sqlx::AnyConnection) -> Backend {
    if connection.backend_name() == "PostgreSQL" {
        Backend::Postgres
    } else {
        Backend::Sqlite
    }
}

/// A `FROM` source over the JSON array bound as `$n`, one row per element
/// as `value`: how bulk statements take thousands of rows in one
/// parameter on either engine.
pub fn json_array_rows(backend: Backend, n: usize) -> String {
    match backend {
        Backend::Sqlite => format!("json_each(${n})"),
        Backend::Postgres => format!("jsonb_array_elements(CAST(${n} AS jsonb)) AS t(value)"),
    }
}

/// `values` lowered as `LOWER` does on both engines, as a JSON array to
/// bind for [`json_text_values`].
pub fn lowered_json(values: &[String]) -> String {
    let lowered: Vec<String> = values.iter().map(|v| lower(v)).collect();
    serde_json::to_string(&lowered).unwrap_or_default()
}

/// `tenants`' ids as a JSON array, to bind for [`json_text_values`].
pub fn tenant_ids_json(tenants: &[crate::ids::TenantId]) -> String {
    serde_json::to_string(&tenants.iter().map(|t| t.as_str()).collect::<Vec<_>>())
        .unwrap_or_default()
}

/// `SELECT value ...` over the text values of the JSON array bound as `$n`,
/// for `column IN (...)` filters on either engine.
pub fn json_text_values(backend: Backend, n: usize) -> String {
    match backend {
        Backend::Sqlite => format!("SELECT value FROM json_each(${n})"),
        Backend::Postgres => format!("SELECT jsonb_array_elements_text(CAST(${n} AS jsonb))"),
    }
}

/// Turns off SQLite's memory statistics for the process: with them on,
/// every allocation of every connection takes one global mutex, and under
/// fifty concurrent reads on two cores that lock was an eighth of the
/// search's time (`perf`). Must run before SQLite initializes; later calls
/// change nothing.
fn sqlite_without_memory_statistics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: SQLITE_CONFIG_MEMSTATUS takes one int; before
        // sqlite3_initialize it only sets a flag, afterwards it returns
        // SQLITE_MISUSE and changes nothing.
        let status = unsafe {
            libsqlite3_sys::sqlite3_config(libsqlite3_sys::SQLITE_CONFIG_MEMSTATUS, 0 as c_int)
        };
        if status != libsqlite3_sys::SQLITE_OK {
            tracing::debug!(
                status,
                "SQLite was initialized already; memory statistics stay on"
            );
        }
    });
}

/// A turn to write ([`Db::write_turn`]): on SQLite the process's one
/// writer; on a paced handle, the time it is held counts against the jobs'
/// share.
#[must_use]
pub struct WriteTurn<'a> {
    _gate: Option<tokio::sync::MutexGuard<'a, ()>>,
    paced: Option<(&'a pacing::Pacing, tokio::time::Instant)>,
}

impl Drop for WriteTurn<'_> {
    fn drop(&mut self) {
        if let Some((pacing, began)) = self.paced {
            pacing.ended(began);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn sqlite_keeps_no_memory_statistics() {
        let db = Db::connect("sqlite::memory:", 1).await.expect("opened");
        db.migrate().await.expect("migrated");
        // With statistics on, SQLite counts every byte it holds; off, the
        // count stays 0 (and no allocation takes the global mutex).
        // SAFETY: a plain read of SQLite's counter.
        let used = unsafe { libsqlite3_sys::sqlite3_memory_used() };
        assert_eq!(used, 0, "SQLite's memory statistics are off");
        db.pool.close().await;
    }

    #[tokio::test]
    async fn a_sqlite_url_without_a_mode_creates_the_file() {
        let dir = std::env::temp_dir().join(format!("cairn-db-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("new.db");
        let db = Db::connect(&format!("sqlite://{}", file.display()), 1)
            .await
            .expect("created");
        db.migrate().await.expect("migrated");
        assert!(file.exists());
        db.pool.close().await;

        let missing = dir.join("no-such-dir").join("x.db");
        let Err(err) = Db::connect(&format!("sqlite://{}", missing.display()), 1).await else {
            panic!("a file in a missing directory cannot be opened");
        };
        let message = err.to_string();
        assert!(
            message.starts_with("cannot open the sqlite database: "),
            "{message}"
        );
        assert!(!message.contains('\n'), "one line: {message}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[derive(Debug, sqlx_macros::FromRow)]
    struct WithJson {
        scope: StoredJson<Vec<String>>,
    }

    #[tokio::test]
    async fn a_stored_json_field_decodes_or_fails_the_row_naming_its_column() {
        let db = Db::connect("sqlite::memory:", 1).await.expect("opened");
        let read = |text: &'static str| {
            sqlx::query_as::<_, WithJson>("SELECT $1 AS scope")
                .bind(text)
                .fetch_one(&db.pool)
        };
        let ok = read(r#"["a"]"#).await.expect("decoded").scope;
        assert_eq!(*ok, ["a"]);
        assert_eq!(serde_json::to_string(&ok).unwrap(), r#"["a"]"#);
        for broken in ["", "{", "[1", "{\"a\": 1}"] {
            let err = read(broken).await.expect_err(broken);
            assert!(
                matches!(&err, sqlx::Error::ColumnDecode { index, .. } if index.contains("scope")),
                "{broken:?}: {err}"
            );
        }
        db.pool.close().await;
    }

    #[test]
    fn stored_json_that_does_not_decode_is_an_error_naming_its_column() {
        let scope: Vec<String> = stored_json("scope", r#"["a","b"]"#).unwrap();
        assert_eq!(scope, ["a", "b"]);
        for broken in ["", "{", "null", "42"] {
            let err = stored_json::<Vec<String>>("scope", broken).unwrap_err();
            assert!(
                matches!(&err, sqlx::Error::ColumnDecode { index, .. } if index == "scope"),
                "{broken:?}: {err}"
            );
        }
    }
}
