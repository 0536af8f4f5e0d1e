//! The sync pipeline, one handler per area, running whichever connector the
//! tenant's config for the area uses: fetch a page, map it,
//! upsert its rows with the checkpoint in one transaction, report progress,
//! repeat; after a complete run, prune what the run did not see and ask for
//! a rollup rebuild.
//!
//! A bulk pull runs the same pipeline over the connector's pull stream,
//! with the user's parameters merged into the config; it prunes nothing,
//! and a sync's prune keeps the pull's collections.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use tokio::sync::oneshot;
use tokio_util::task::AbortOnDropHandle;

use super::{areas, storage};
use cairn_core::db::{is_unique_violation, Backend};
use cairn_core::secrets::SecretBox;
use cairn_core::settings::Settings;
use cairn_inventory::items::ReplaceRule;
use cairn_inventory::seen;
use cairn_jobs::{JobContext, JobFailure, JobHandler};
use cairn_plugins::{
    CallError, CallScope, ConnectorDescriptor, LivePlugins, LoadedConnector, MappedRow, Plugins,
};

pub struct SyncHandler {
    /// Read once per run: a run ends on the module it started with, even if
    /// the connectors are reloaded meanwhile.
    pub plugins: Arc<LivePlugins>,
    pub secrets: SecretBox,
    /// The area this handler syncs; rows are stored under it.
    pub area: String,
    pub caps: SyncCaps,
    pub mode: RunMode,
}

/// What a run fetches, and what it does once complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// The connector's streams; prune what the run did not see, then
    /// rebuild the rollup.
    Sync,
    /// The connector's pull stream, with the job's `parameters` merged into
    /// the config; nothing pruned.
    Pull,
}

/// How much one run may take in, and how many of its pages it may write at
/// once. An upstream or a connector that pages without end, or a page of
/// millions of records, stops the run with an error naming the setting; a
/// stopped run prunes nothing.
#[derive(Debug, Clone, Copy)]
pub struct SyncCaps {
    pub pages: u64,
    pub page_records: usize,
    pub rows: u64,
    /// Pages written at once on PostgreSQL (SQLite has one writer).
    pub page_writes: usize,
}

impl SyncCaps {
    pub fn from_settings(settings: &Settings) -> SyncCaps {
        SyncCaps {
            pages: settings.sync_max_pages.max(1),
            page_records: settings.sync_max_page_records.max(1),
            rows: settings.sync_max_rows.max(1),
            page_writes: settings.sync_page_writes.max(1),
        }
    }
}

/// Pages a sync holds at once on SQLite: one being written, two prepared
/// behind it (measured: two left the writer idle between pages, three kept
/// it busy at no extra peak memory).
const SQLITE_PAGES_IN_FLIGHT: usize = 3;

/// Where a run stands: written with every page.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Checkpoint {
    /// The run's id (the job id): rows are stamped with it, and a complete
    /// run prunes rows stamped otherwise.
    run: String,
    stream_index: usize,
    cursor: Option<String>,
    rows: i64,
    rejected: i64,
    /// Pages fetched so far, all streams together.
    #[serde(default)]
    pages: u64,
}

/// A fetched page: its records' JSON texts and the cursor of the next.
type Page = (Vec<String>, Option<String>);

type FetchResult = Result<Page, CallError>;

/// Where a page starts: a stream and a cursor in it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Position {
    stream_index: usize,
    cursor: Option<String>,
}

/// What a fetch needs, owned, so a page can be fetched on a task of its own.
#[derive(Clone)]
struct PageFetcher {
    plugins: Arc<Plugins>,
    connector: Arc<LoadedConnector>,
    scope: CallScope,
    config: Value,
}

impl PageFetcher {
    async fn fetch(&self, stream: &str, cursor: Option<&str>) -> FetchResult {
        self.plugins
            .fetch(
                &self.connector,
                self.scope.clone(),
                &self.config,
                stream,
                cursor,
            )
            .await
    }
}

/// A plugin call's failure as the job's: what another attempt would only
/// repeat (a panic, the memory cap, a broken answer, a config or
/// credential problem) is not retried.
fn failure(err: CallError) -> JobFailure {
    match err {
        CallError::Crashed(_)
        | CallError::MemoryExceeded(_)
        | CallError::Protocol(_)
        | CallError::Config(_)
        | CallError::InvalidInput { .. }
        | CallError::Auth { .. } => JobFailure::Permanent(err.to_string()),
        CallError::RateLimited { .. }
        | CallError::Transient(_)
        | CallError::Upstream(_)
        | CallError::NotFound(_)
        | CallError::Timeout(_) => JobFailure::Failed(err.to_string()),
    }
}

#[async_trait]
impl JobHandler for SyncHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let db = ctx.db();
        let tenant = ctx.tenant_id();
        let area = self.area.as_str();
        let plugins = self.plugins.current();
        let stored = storage::config(db, &self.secrets, tenant, area)
            .await?
            .ok_or_else(|| {
                JobFailure::Failed(format!("{area} is not configured for this tenant"))
            })?;
        let connector = areas::resolve(&plugins, area, stored.connector.as_deref())
            .map_err(|e| JobFailure::Permanent(e.to_string()))?;
        let (streams, config) = match self.mode {
            RunMode::Sync => (connector.descriptor.streams.clone(), stored.full()),
            RunMode::Pull => {
                let pull = connector.descriptor.pull.as_ref().ok_or_else(|| {
                    JobFailure::Permanent(format!(
                        "this tenant's {area} connector ({}) has no bulk pull",
                        connector.descriptor.id
                    ))
                })?;
                let mut config = stored.full();
                if let (Value::Object(config), Some(parameters)) =
                    (&mut config, ctx.args()["parameters"].as_object())
                {
                    config.extend(parameters.clone());
                }
                (vec![pull.stream.clone()], config)
            }
        };
        let mut at: Checkpoint = ctx
            .checkpoint()
            .and_then(|c| serde_json::from_value(c.clone()).ok())
            .unwrap_or_else(|| Checkpoint {
                run: ctx.job_id().to_string(),
                stream_index: 0,
                cursor: None,
                rows: 0,
                rejected: 0,
                pages: 0,
            });
        let scope = CallScope {
            plugin: connector.descriptor.id.clone(),
            tenant_id: Some(tenant.as_str().to_string()),
            job_id: Some(ctx.job_id().to_string()),
        };
        // The next page is fetched while this one is mapped and written, so
        // the upstream's latency and the database's overlap. A prefetch
        // left behind (a cap, a failure, a canceled run) is aborted.
        let fetcher = PageFetcher {
            plugins: plugins.clone(),
            connector: connector.clone(),
            scope: scope.clone(),
            config: config.clone(),
        };
        let mut prefetched: Option<(Position, AbortOnDropHandle<FetchResult>)> = None;
        // Pages are written on tasks of their own while the next is fetched
        // and mapped; on PostgreSQL several at once, since one connection's
        // insert leaves the server's other cores idle. SQLite has one
        // writer: the pages behind the one being written are prepared
        // meanwhile, then wait their turn, so the writer never waits for a
        // page to be prepared.
        let in_flight = match db.backend {
            Backend::Sqlite => SQLITE_PAGES_IN_FLIGHT,
            Backend::Postgres => self.caps.page_writes.max(1),
        };
        // The connector API says nothing of how many rows are coming: the
        // rows the source holds from its last run are the estimate.
        let (items, records) = storage::row_counts(db, tenant, area).await?;
        // A source that holds nothing yet gets plain inserts on PostgreSQL,
        // which otherwise looks each key up before inserting it (see
        // `ReplaceRule::NewKeys`). SQLite's upsert checks a key as part of
        // its insert; it keeps the one path.
        let new_keys = Arc::new(AtomicBool::new(
            db.backend == Backend::Postgres && items + records == 0,
        ));
        let mut writes = PageWrites {
            pending: Default::default(),
            estimate: items + records,
            counted: (at.rows, at.rejected),
            labels: [
                ("via", "sync".to_string()),
                ("area", area.to_string()),
                ("connector", connector.descriptor.id.clone()),
            ],
            last_committed: None,
        };
        while at.stream_index < streams.len() {
            let stream = &streams[at.stream_index];
            if at.pages >= self.caps.pages {
                return Err(JobFailure::Permanent(format!(
                    "stopped after {} pages (the cap, CAIRN_SYNC_MAX_PAGES) with more to \
                     fetch; nothing was pruned",
                    at.pages
                )));
            }
            let here = Position {
                stream_index: at.stream_index,
                cursor: at.cursor.clone(),
            };
            let (records, next) = {
                let prefetch = prefetched.take();
                let fetch = async {
                    match prefetch {
                        Some((position, handle)) if position == here => handle
                            .await
                            .map_err(|e| JobFailure::Failed(format!("page fetch stopped: {e}")))?
                            .map_err(failure),
                        _ => fetcher
                            .fetch(stream, at.cursor.as_deref())
                            .await
                            .map_err(failure),
                    }
                };
                tokio::pin!(fetch);
                // While the page is on its way, pages written meanwhile get
                // their checkpoint: a slow upstream must not hold the
                // checkpoint behind pages that are in.
                loop {
                    let next = tokio::select! {
                        biased;
                        fetched = &mut fetch => Awaited::Page(fetched),
                        written = writes.oldest_written(), if !writes.is_empty() => {
                            Awaited::Written(written)
                        }
                    };
                    match next {
                        Awaited::Page(fetched) => break fetched?,
                        Awaited::Written(written) => writes.checkpoint_oldest(ctx, written).await?,
                    }
                }
            };
            if records.len() > self.caps.page_records {
                return Err(JobFailure::Permanent(format!(
                    "a page of stream {stream} held {} records, over the cap of {} \
                     (CAIRN_SYNC_MAX_PAGE_RECORDS); nothing was pruned",
                    records.len(),
                    self.caps.page_records
                )));
            }
            let upcoming = match &next {
                Some(cursor) => Some(Position {
                    stream_index: at.stream_index,
                    cursor: Some(cursor.clone()),
                }),
                None => (at.stream_index + 1 < streams.len()).then(|| Position {
                    stream_index: at.stream_index + 1,
                    cursor: None,
                }),
            };
            if let Some(position) = upcoming {
                let fetcher = fetcher.clone();
                let stream = streams[position.stream_index].clone();
                let cursor = position.cursor.clone();
                let handle =
                    tokio::spawn(async move { fetcher.fetch(&stream, cursor.as_deref()).await });
                prefetched = Some((position, AbortOnDropHandle::new(handle)));
            }
            let mapped = plugins
                .map_records(&connector, scope.clone(), stream, &records)
                .await
                .map_err(failure)?;
            // A record maps to many rows (a computer and its software):
            // room for all of them at once, not grown by doubling.
            let mapped_rows = mapped.iter().map(|r| r.as_ref().map_or(0, Vec::len)).sum();
            let mut rows: Vec<MappedRow> = Vec::with_capacity(mapped_rows);
            for (index, result) in mapped.into_iter().enumerate() {
                match result.and_then(|mapped| conform(&connector.descriptor, mapped)) {
                    Ok(mut mapped_rows) => rows.append(&mut mapped_rows),
                    Err(reason) => {
                        at.rejected += 1;
                        if at.rejected <= 20 {
                            tracing::warn!(connector = %connector.descriptor.id, stream, page = at.pages, index, %reason, "record rejected");
                        }
                    }
                }
            }
            at.rows += rows.len() as i64;
            at.pages += 1;
            if at.rows as u64 > self.caps.rows {
                return Err(JobFailure::Permanent(format!(
                    "this run mapped {} rows, over the cap of {} (CAIRN_SYNC_MAX_ROWS); \
                     nothing was pruned",
                    at.rows, self.caps.rows
                )));
            }
            let moved =
                !records.is_empty() || next.as_deref() != at.cursor.as_deref() || next.is_none();
            let next_at = match next {
                Some(cursor) => Checkpoint {
                    cursor: Some(cursor),
                    ..at.clone()
                },
                None => Checkpoint {
                    stream_index: at.stream_index + 1,
                    cursor: None,
                    ..at.clone()
                },
            };
            if writes.len() >= in_flight {
                writes.finish_oldest(ctx).await?;
            }
            writes.start(
                PageWrite {
                    ctx: ctx.clone(),
                    area: self.area.clone(),
                    config_updated_at: stored.updated_at,
                    run: at.run.clone(),
                    page: at.pages as i64 - 1,
                    rows,
                    new_keys: new_keys.clone(),
                    in_order: None,
                },
                stream.clone(),
                next_at.clone(),
                moved,
            );
            at = next_at;
        }
        while !writes.is_empty() {
            writes.finish_oldest(ctx).await?;
        }
        if self.mode == RunMode::Pull {
            seen::forget_run(db, ctx, tenant, area, &at.run).await?;
            let message = format!(
                "{} rows, {} records rejected, {}",
                at.rows,
                at.rejected,
                ran_by(&connector)
            );
            ctx.progress("done", at.rows, at.rows, "rows", &message)
                .await?;
            return Ok(());
        }
        let kept = connector
            .descriptor
            .pull
            .as_ref()
            .map(|p| p.collections.as_slice())
            .unwrap_or_default();
        let (items, records) =
            seen::prune_unseen_keeping(db, ctx, tenant, area, &at.run, kept).await?;
        ctx.progress(
            "done",
            at.rows,
            at.rows,
            "rows",
            &format!(
                "{} rows, {} records rejected, pruned {items} items and {records} records, {}",
                at.rows,
                at.rejected,
                ran_by(&connector)
            ),
        )
        .await?;
        cairn_inventory::rollup::request(db, tenant, ctx.kind()).await?;
        Ok(())
    }
}

/// The module a run used, in its last words: connectors may be reloaded
/// while it runs, and it ends on the module it began with.
fn ran_by(connector: &LoadedConnector) -> String {
    format!(
        "by {} {} (module {})",
        connector.descriptor.id,
        connector.descriptor.version,
        &connector.sha256[..12.min(connector.sha256.len())]
    )
}

/// What the sync loop waited for first: the page it is fetching, or the
/// oldest page it is writing.
enum Awaited {
    Page(Result<Page, JobFailure>),
    Written(Result<(), JobFailure>),
}

/// One page's rows and what their transaction checks: that the run still
/// holds its job and that the config it read is still the tenant's.
struct PageWrite {
    ctx: JobContext,
    area: String,
    config_updated_at: i64,
    run: String,
    /// The page's number in the run (pages fetched before it).
    page: i64,
    rows: Vec<MappedRow>,
    /// Whether the run's pages may be plain inserts
    /// ([`ReplaceRule::NewKeys`]): the source held no rows when the run
    /// began, on PostgreSQL. Shared by the run's pages; the first page
    /// that meets a stored key turns it off for the rest.
    new_keys: Arc<AtomicBool>,
    /// On SQLite, set by [`PageWrites::start`].
    in_order: Option<InOrder>,
}

/// SQLite's pages are written one at a time and in order, and each page's
/// transaction also saves the run's checkpoint and progress after it.
/// Saved on their own, they queued for the one write turn behind the
/// pages written meanwhile, and the run waited there instead of mapping
/// and preparing the next page (measured: a first sync 4.6-4.8 s against
/// 4.8-5.0 s).
struct InOrder {
    /// Resolves once the page before is committed (`None`: the run's first
    /// page); an error if it was not, and then this page writes nothing,
    /// so a saved checkpoint never passes a page that is not in.
    previous: Option<oneshot::Receiver<()>>,
    /// Told once this page is committed.
    committed: oneshot::Sender<()>,
    /// Where the run stands once the page is in; `None` when the page
    /// moved nothing (the checkpoint stays as it is).
    after: Option<Checkpoint>,
    stream: String,
    /// The rows the run is expected to write, for progress.
    estimate: i64,
}

impl PageWrite {
    async fn write(mut self) -> Result<(), JobFailure> {
        // Prepared before the page waits for its turn, so on SQLite it
        // overlaps the page being written. CPU work in place: a write runs
        // on a blocking-pool thread of its own (`PageWrites::start`).
        let rows = std::mem::take(&mut self.rows);
        let db = self.ctx.db();
        // A first sync's page on PostgreSQL goes in with COPY, on a
        // connection of the PostgreSQL driver (SQLite's pages, which keep
        // the run's checkpoint in their transaction, never do).
        let copy = match &db.copy {
            Some(pool) if self.in_order.is_none() && self.new_keys.load(Ordering::Relaxed) => {
                Some(pool.clone())
            }
            _ => None,
        };
        let writer = match copy {
            Some(_) => storage::PageWriter::Copy,
            None => storage::PageWriter::Statements(db.backend),
        };
        let prepared = storage::prepare_rows(writer, &rows);
        drop(rows);
        if let Some(previous) = self.in_order.as_mut().and_then(|o| o.previous.take()) {
            previous.await.map_err(|_| {
                JobFailure::Failed("an earlier page of this run was not written".into())
            })?;
        }
        let _turn = self.ctx.db().write_turn().await;
        if !self.new_keys.load(Ordering::Relaxed) {
            self.attempt(Cow::Owned(prepared), ReplaceRule::ChangedContent)
                .await??;
            committed(&mut self.in_order);
            return Ok(());
        }
        // The plain inserts may have to give way to an upsert of the same
        // page, so they write it by reference and keep it.
        let attempt = match &copy {
            Some(pool) => self.attempt_copy(pool, &prepared).await?,
            None => {
                self.attempt(Cow::Borrowed(&prepared), ReplaceRule::NewKeys)
                    .await?
            }
        };
        let written = match attempt {
            // The source holds one of the page's keys after all (a key two
            // pages share, or another writer): the attempt's transaction is
            // gone, and this page and the run's later ones upsert.
            Err(err) if is_unique_violation(&err) => {
                self.new_keys.store(false, Ordering::Relaxed);
                tracing::debug!(run = %self.run, page = self.page, "a key of a first sync's page was stored; upserting from here");
                self.attempt(Cow::Owned(prepared), ReplaceRule::ChangedContent)
                    .await?
            }
            written => written,
        };
        written?;
        committed(&mut self.in_order);
        Ok(())
    }

    /// Writes the page under `rule` in a transaction of its own. The outer
    /// error stops the run (the config or the job's lease changed); the
    /// inner one is the rows' own, which the caller may answer.
    async fn attempt(
        &self,
        prepared: Cow<'_, storage::PreparedPage>,
        rule: ReplaceRule,
    ) -> Result<sqlx::Result<()>, JobFailure> {
        let db = self.ctx.db();
        let tenant = self.ctx.tenant_id();
        let mut tx = db.pool.begin().await?;
        if !storage::hold_config(&mut tx, tenant, &self.area, self.config_updated_at).await? {
            return Err(config_replaced());
        }
        self.ctx.check_lease_in(&mut tx).await?;
        let at = (self.run.as_str(), self.page);
        if let Err(err) =
            storage::write_prepared(&mut tx, tenant, &self.area, at, prepared, rule).await
        {
            return Ok(Err(err));
        }
        if let Some(InOrder {
            after: Some(after),
            stream,
            estimate,
            ..
        }) = &self.in_order
        {
            self.ctx.save_checkpoint_in(&mut tx, &json!(after)).await?;
            let detail = format!("{} rows, {} records rejected", after.rows, after.rejected);
            let done = (stream.as_str(), after.rows, *estimate, "rows");
            self.ctx.progress_in(&mut tx, done, &detail).await?;
        }
        tx.commit().await?;
        Ok(Ok(()))
    }

    /// [`PageWrite::attempt`] of a page of new keys with COPY, in a
    /// transaction on `pool` (`Db::copy`): the same checks, the same
    /// errors. Only for pages that keep no checkpoint in their
    /// transaction (PostgreSQL's).
    async fn attempt_copy(
        &self,
        pool: &sqlx::PgPool,
        prepared: &storage::PreparedPage,
    ) -> Result<sqlx::Result<()>, JobFailure> {
        let tenant = self.ctx.tenant_id();
        let mut tx = pool.begin().await?;
        if !storage::hold_config_on_postgres(&mut tx, tenant, &self.area, self.config_updated_at)
            .await?
        {
            return Err(config_replaced());
        }
        self.ctx.check_lease_on_postgres(&mut tx).await?;
        let at = (self.run.as_str(), self.page);
        if let Err(err) = storage::copy_prepared(&mut tx, tenant, &self.area, at, prepared).await {
            return Ok(Err(err));
        }
        tx.commit().await?;
        Ok(Ok(()))
    }
}

/// Why a run stops when its config changed under it.
fn config_replaced() -> JobFailure {
    JobFailure::Permanent(
        "the integration's config was removed or replaced during this sync; \
         nothing more was written"
            .into(),
    )
}

/// Tells the page after this one, if it waits, that this one is in.
fn committed(in_order: &mut Option<InOrder>) {
    if let Some(order) = in_order.take() {
        let _ = order.committed.send(());
    }
}

/// Pages being written, oldest first, each with where the run stands once
/// it and every page before it are in. The checkpoint moves only in that
/// order, so a run resumed after a crash may write a page again (rows are
/// upserts stamped with the run) but never skips one.
#[derive(Default)]
struct PageWrites {
    pending: std::collections::VecDeque<PendingPage>,
    /// The rows the run is expected to write (the last run's).
    estimate: i64,
    /// Rows written and rejected as far as the metrics have counted.
    counted: (i64, i64),
    labels: [(&'static str, String); 3],
    /// On SQLite, resolves once the last page started is committed.
    last_committed: Option<oneshot::Receiver<()>>,
}

/// A page being written: its stream, where the run stands once it is in,
/// and its write.
struct PendingPage {
    stream: String,
    after: Checkpoint,
    /// Whether the page brought records or moved the cursor: only such a
    /// page is progress, so a sync polling an upstream that never moves
    /// meets the stale-sync guard.
    moved: bool,
    write: AbortOnDropHandle<Result<(), JobFailure>>,
    /// Cancels the write when the page is dropped (a blocking thread's
    /// work is not stopped by an abort).
    _cancel: tokio_util::sync::DropGuard,
    /// Whether the page's own transaction saved the checkpoint and the
    /// progress after it ([`InOrder`]).
    saved_in_page: bool,
}

impl PageWrites {
    fn len(&self) -> usize {
        self.pending.len()
    }

    fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Starts a page's write on a thread of its own: a blocking-pool thread
    /// that drives it to the end, so its statements go out back to back.
    /// As a task of the job runtime, whose one worker (on two cores) the
    /// run's own guest calls hold an epoch tick at a time, the write waited
    /// for that worker between statements and the database sat idle
    /// (measured: SQLite's first sync 11.0-11.3 s against 8.1-9.7 s off the
    /// job runtime). Dropping the page cancels its write, as dropping a task
    /// would: its transaction is rolled back.
    fn start(&mut self, mut write: PageWrite, stream: String, after: Checkpoint, moved: bool) {
        let saved_in_page = write.ctx.db().backend == Backend::Sqlite;
        if saved_in_page {
            let (committed, next) = oneshot::channel();
            write.in_order = Some(InOrder {
                previous: self.last_committed.replace(next),
                committed,
                after: moved.then(|| after.clone()),
                stream: stream.clone(),
                estimate: self.estimate,
            });
        }
        let cancel = tokio_util::sync::CancellationToken::new();
        let canceled = cancel.clone();
        let runtime = tokio::runtime::Handle::current();
        let write = tokio::task::spawn_blocking(move || {
            runtime.block_on(async move {
                tokio::select! {
                    written = write.write() => written,
                    () = canceled.cancelled() => {
                        Err(JobFailure::Failed("the page's write was canceled".into()))
                    }
                }
            })
        });
        self.pending.push_back(PendingPage {
            stream,
            after,
            moved,
            write: AbortOnDropHandle::new(write),
            _cancel: cancel.drop_guard(),
            saved_in_page,
        });
    }

    /// Waits for the oldest page's write, leaving it first in line: a wait
    /// given up (in a `select!`) loses nothing. Pending forever when no page
    /// is being written.
    async fn oldest_written(&mut self) -> Result<(), JobFailure> {
        match self.pending.front_mut() {
            Some(page) => (&mut page.write)
                .await
                .map_err(|e| JobFailure::Failed(format!("a page write stopped: {e}")))?,
            None => std::future::pending().await,
        }
    }

    /// Waits for the oldest page, then checkpoints it.
    async fn finish_oldest(&mut self, ctx: &JobContext) -> Result<(), JobFailure> {
        let written = self.oldest_written().await;
        self.checkpoint_oldest(ctx, written).await
    }

    /// Given how the oldest page's write ended, saves the checkpoint after
    /// it and reports progress. A failure drops (and so aborts) the later
    /// pages.
    async fn checkpoint_oldest(
        &mut self,
        ctx: &JobContext,
        written: Result<(), JobFailure>,
    ) -> Result<(), JobFailure> {
        let Some(PendingPage {
            stream,
            after,
            moved,
            saved_in_page,
            ..
        }) = self.pending.pop_front()
        else {
            return Ok(());
        };
        written?;
        // A page that moved nothing leaves the checkpoint as it is: saving
        // one counts as progress too.
        if !moved {
            return Ok(());
        }
        if !saved_in_page {
            ctx.save_checkpoint(&json!(after)).await?;
        }
        let (rows, rejected) = self.counted;
        metrics::counter!(cairn_core::telemetry::ROWS_WRITTEN, &self.labels)
            .increment((after.rows - rows).max(0) as u64);
        metrics::counter!(cairn_core::telemetry::ROWS_REJECTED, &self.labels)
            .increment((after.rejected - rejected).max(0) as u64);
        self.counted = (after.rows, after.rejected);
        if saved_in_page {
            return Ok(());
        }
        ctx.progress(
            &stream,
            after.rows,
            self.estimate,
            "rows",
            &format!("{} rows, {} records rejected", after.rows, after.rejected),
        )
        .await?;
        Ok(())
    }
}

/// One record's rows as the descriptor declares them: a source record must
/// belong to a declared collection (else the whole record is rejected), takes
/// that collection's record type, and keeps only its declared fields.
fn conform(
    descriptor: &ConnectorDescriptor,
    rows: Vec<MappedRow>,
) -> Result<Vec<MappedRow>, String> {
    rows.into_iter()
        .map(|row| match row {
            MappedRow::Record(mut record) => {
                let collection = descriptor
                    .collection(&record.collection)
                    .ok_or_else(|| format!("collection {} is not declared", record.collection))?;
                record.record_type = collection.record_type.as_str().into();
                if let Value::Object(fields) = &mut record.fields {
                    fields.retain(|name, _| collection.field(name).is_some());
                }
                Ok(MappedRow::Record(record))
            }
            inventory => Ok(inventory),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_plugins::RecordRow;
    use serde_json::json;

    fn record(collection: &str, fields: Value) -> MappedRow {
        MappedRow::Record(RecordRow {
            collection: collection.into(),
            record_type: collection.into(),
            key: "k".into(),
            device_name: None,
            client_id: None,
            group_ids: vec![],
            fields,
            body: "{}".into(),
        })
    }

    #[test]
    fn records_take_their_collections_type_and_only_declared_fields() {
        let descriptor: ConnectorDescriptor = serde_json::from_value(json!({
            "id": "acme", "area": "edr", "name": "Acme", "version": "1", "sdk_version": "0.2.0",
            "config_schema": {}, "secret_fields": [], "streams": [], "requested_hosts": [],
            "auth": {"type": "none"},
            "collections": [{"name": "agents", "record_type": "device",
                             "fields": [{"name": "agent_version", "type": "string"}]}]
        }))
        .unwrap();
        let conformed = conform(
            &descriptor,
            vec![record(
                "agents",
                json!({"agent_version": "23.4", "secret_sauce": 1}),
            )],
        )
        .unwrap();
        let MappedRow::Record(agent) = &conformed[0] else {
            panic!("a record")
        };
        assert_eq!(agent.record_type, "device");
        assert_eq!(agent.fields, json!({"agent_version": "23.4"}));
        let refused = conform(&descriptor, vec![record("threats", json!({}))]).unwrap_err();
        assert_eq!(refused, "collection threats is not declared");
    }
}
