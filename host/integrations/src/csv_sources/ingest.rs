//! The `csv_parse` job: parses a tenant's waiting uploads one after another,
//! oldest first. A blocking thread reads the file and finds the header; the
//! job maps rows through the provider component in batches, stages what it
//! returns and, once the whole file is read, swaps it in (see `staging`).

use std::path::{Path, PathBuf};

use cairn_core::blobs::{BlobStore, StoreError};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use super::parse::{self, header, Format, ParseError};
use super::staging::{Destination, ReplaceCheckpoint, Staging};
use super::storage::{self, ParseReport, Rejection, UploadRow, ERROR};
use cairn_core::ids::TenantId;
use cairn_inventory::normalize::DeviceOs;
use cairn_jobs::{JobContext, JobFailure, JobHandler, LeaseLost, StopReason};
use cairn_plugins::rows::{InventoryRow, MappedRow, RowText};
use cairn_plugins::{CallScope, LivePlugins, LoadedCsvProvider};

pub const CSV_PARSE_KIND: &str = "csv_parse";
/// Rows per call into the provider.
const MAP_BATCH: usize = 5000;
/// Rejections kept on the upload (the count is always exact).
const MAX_REJECTIONS: usize = 20;
const SAMPLE_ROWS: usize = 5;
/// The queue's last attempt at a job (`max_attempts`).
const LAST_ATTEMPT: i64 = 3;
/// A parse that reports nothing for this long has stalled.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(300);

pub struct CsvParseHandler {
    pub plugins: Arc<LivePlugins>,
    /// Where uploads wait for their parse (shared by every process).
    pub uploads: BlobStore,
    /// This process's staged rows (see `staging`): a run taken over by
    /// another process parses again.
    pub staging_dir: PathBuf,
}

/// The key an upload's file waits under for its parse.
pub fn upload_key(tenant: &TenantId, upload_id: &str) -> String {
    format!("{}/{upload_id}", tenant.as_str())
}

/// How one upload's parse ended without success.
enum Outcome {
    /// The file is unusable; the message tells the operator why.
    Rejected(String),
    /// The job itself failed (database, lease); the upload is retried.
    Job(JobFailure),
}

impl From<JobFailure> for Outcome {
    fn from(err: JobFailure) -> Self {
        Outcome::Job(err)
    }
}

impl From<LeaseLost> for Outcome {
    fn from(err: LeaseLost) -> Self {
        Outcome::Job(err.into())
    }
}

impl From<sqlx::Error> for Outcome {
    fn from(err: sqlx::Error) -> Self {
        Outcome::Job(err.into())
    }
}

impl From<std::io::Error> for Outcome {
    fn from(err: std::io::Error) -> Self {
        Outcome::Job(JobFailure::Failed(format!("staging: {err}")))
    }
}

/// What the reading thread hands the job.
enum Chunk {
    Header { row: u64, columns: Vec<String> },
    Rows(Vec<(u64, Vec<String>)>),
    Failed(ParseError),
}

#[async_trait]
impl JobHandler for CsvParseHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        // The uploads this run refused: the job then ends `error` with
        // their reasons, as each upload does, not `success` (the uploads it
        // parsed are in and stay in).
        let mut refused: Vec<String> = vec![];
        while let Some(upload) =
            storage::next_waiting(ctx.db(), ctx.tenant_id(), ctx.affinity()).await?
        {
            let key = upload_key(ctx.tenant_id(), &upload.id);
            let mut report = ParseReport::default();
            match self.parse(ctx, &upload, &key, &mut report).await {
                Ok(()) => {}
                Err(Outcome::Rejected(reason)) => {
                    self.fail(ctx, &upload, &report, &reason).await?;
                    refused.push(format!("{}: {reason}", upload.filename));
                }
                Err(Outcome::Job(JobFailure::LeaseLost(LeaseLost(StopReason::Canceled)))) => {
                    Staging::remove(&self.staging_dir, &upload.id);
                    self.fail(ctx, &upload, &report, "the parse was canceled")
                        .await?;
                    return Err(LeaseLost(StopReason::Canceled).into());
                }
                Err(Outcome::Job(JobFailure::Failed(err))) if ctx.attempt() >= LAST_ATTEMPT => {
                    // The queue gives up on the job now; the upload must
                    // not wait for a parse that will never come.
                    let reason = format!("the parse failed {LAST_ATTEMPT} times: {err}");
                    self.fail(ctx, &upload, &report, &reason).await?;
                    return Err(JobFailure::Failed(err));
                }
                Err(Outcome::Job(err)) => return Err(err),
            }
            if let Err(err) = self.uploads.remove(&key).await {
                tracing::warn!(upload_id = %upload.id, error = %err, "removing a parsed upload's file failed");
            }
        }
        // One parse is queued per tenant, whatever the store keeping its
        // files, so an upload kept by another process's store waited for
        // this run: queue its parse now (it starts when this one ends)
        // rather than at the next sweep.
        if let Some(store) =
            storage::other_store_waiting(ctx.db(), ctx.tenant_id(), ctx.affinity()).await?
        {
            cairn_jobs::enqueue_held(
                ctx.db(),
                ctx.tenant_id(),
                CSV_PARSE_KIND,
                &json!({}),
                &store,
            )
            .await?;
        }
        match refused.as_slice() {
            [] => Ok(()),
            // Logged per upload by `fail`; another attempt would refuse the
            // same file, so no retry.
            [one] => Err(JobFailure::Reported(format!("The upload failed: {one}"))),
            many => Err(JobFailure::Reported(format!(
                "{} uploads failed: {}",
                many.len(),
                many.join("; ")
            ))),
        }
    }
}

impl CsvParseHandler {
    async fn fail(
        &self,
        ctx: &JobContext,
        upload: &UploadRow,
        report: &ParseReport,
        reason: &str,
    ) -> Result<(), JobFailure> {
        tracing::info!(upload_id = %upload.id, source = %upload.source_key, %reason, "upload failed");
        storage::write_report(ctx, &upload.id, report, Some((ERROR, Some(reason)))).await?;
        Ok(())
    }

    async fn parse(
        &self,
        ctx: &JobContext,
        upload: &UploadRow,
        key: &str,
        report: &mut ParseReport,
    ) -> Result<(), Outcome> {
        let provider = self
            .plugins
            .current()
            .csv_provider(&upload.source_key)
            .cloned()
            .ok_or_else(|| {
                Outcome::Rejected(format!(
                    "the CSV provider {} is not loaded any more",
                    upload.source_key
                ))
            })?;
        let destination = match provider.descriptor.target.as_str() {
            "software" => Destination::Items,
            _ => Destination::Records,
        };
        let staging_dir = &self.staging_dir;
        // A run handed back during the swap (a shutdown, a lost lease) left
        // its staged rows and how far the swap got: go on from there.
        let resumed = ReplaceCheckpoint::of(ctx, &upload.id).and_then(|checkpoint| {
            let staging = Staging::reopen(staging_dir, &upload.id, destination).ok()?;
            Some((staging, checkpoint))
        });
        let (staging, from_line) = match resumed {
            Some((staging, checkpoint)) => {
                *report = checkpoint.report;
                tracing::info!(upload_id = %upload.id, rows_done = checkpoint.replaced,
                    "resuming the swap of a parsed upload");
                (staging, checkpoint.replaced)
            }
            None => {
                let fetched = self.uploads.fetch(key).await.map_err(|err| match err {
                    StoreError::Missing => Outcome::Rejected(
                        "the uploaded file is no longer in the store; upload it again".into(),
                    ),
                    other => {
                        Outcome::Job(JobFailure::Failed(format!("fetching the upload: {other}")))
                    }
                })?;
                let staged = self
                    .parse_into_staging(
                        ctx,
                        &provider,
                        upload,
                        &fetched.path,
                        staging_dir,
                        destination,
                        report,
                    )
                    .await;
                fetched.release().await;
                (staged?, 0)
            }
        };
        let inserted = staging
            .replace(ctx, &upload.source_key, &upload.id, report, from_line)
            .await
            .map_err(Outcome::Job)?;
        tracing::info!(
            upload_id = %upload.id, source = %upload.source_key, rows = inserted,
            rejected = report.rows_rejected, "upload imported"
        );
        if matches!(provider.descriptor.target.as_str(), "software" | "device") {
            cairn_inventory::rollup::request(
                ctx.db(),
                ctx.tenant_id(),
                &format!("csv upload {}", upload.id),
            )
            .await?;
        }
        Ok(())
    }

    /// Reads the whole file into a staging file and saves a checkpoint that
    /// names it, so that a run handed back during the swap need not parse
    /// again.
    #[allow(clippy::too_many_arguments)]
    async fn parse_into_staging(
        &self,
        ctx: &JobContext,
        provider: &Arc<LoadedCsvProvider>,
        upload: &UploadRow,
        path: &Path,
        staging_dir: &Path,
        destination: Destination,
        report: &mut ParseReport,
    ) -> Result<Staging, Outcome> {
        let format = match parse::detect(path) {
            Ok(format) => format,
            Err(err) => {
                return Err(Outcome::Rejected(format!(
                    "the upload cannot be read: {err}"
                )))
            }
        };
        storage::start(
            ctx.db(),
            ctx.tenant_id(),
            &upload.id,
            ctx.job_id(),
            format.as_str(),
        )
        .await?;
        ctx.progress("parsing", 0, 0, "rows", &upload.filename)
            .await?;
        let mut staging = Staging::create(staging_dir, &upload.id, destination)?;
        let read = self
            .read_and_stage(ctx, provider, upload, path, format, &mut staging, report)
            .await;
        if let Err(err) = read {
            staging.discard();
            return Err(err);
        }
        if report.rows_read == 0 {
            staging.discard();
            return Err(Outcome::Rejected(
                "the file has a header row but no data rows".into(),
            ));
        }
        if staging.rows == 0 {
            staging.discard();
            let first = report
                .rejections
                .first()
                .map(|r| format!(" (row {}: {})", r.row, r.reason))
                .unwrap_or_default();
            return Err(Outcome::Rejected(format!(
                "none of the {} data rows could be imported{first}",
                report.rows_read
            )));
        }
        staging.finish()?;
        let checkpoint = ReplaceCheckpoint {
            upload_id: upload.id.clone(),
            replaced: 0,
            report: report.clone(),
        };
        ctx.save_checkpoint(&checkpoint.to_value()).await?;
        Ok(staging)
    }

    #[allow(clippy::too_many_arguments)]
    async fn read_and_stage(
        &self,
        ctx: &JobContext,
        provider: &Arc<LoadedCsvProvider>,
        upload: &UploadRow,
        path: &Path,
        format: Format,
        staging: &mut Staging,
        report: &mut ParseReport,
    ) -> Result<(), Outcome> {
        let mut chunks = spawn_reader(provider, path, format, upload.sheet.clone());
        // Every set shares one engine, so `provider` (read at the start of
        // the parse) runs in the set serving now as in its own.
        let plugins = self.plugins.current();
        let scope = CallScope {
            plugin: provider.descriptor.key.clone(),
            tenant_id: Some(ctx.tenant_id().as_str().to_string()),
            job_id: Some(ctx.job_id().to_string()),
        };
        let software = provider.descriptor.target == "software";
        let mut columns: Vec<String> = vec![];
        let mut filled: Vec<u64> = vec![];
        let mut text_bytes: u64 = 0;
        while let Some(chunk) = chunks.recv().await {
            let rows = match chunk {
                Chunk::Failed(err) => return Err(Outcome::Rejected(err.to_string())),
                Chunk::Header {
                    row,
                    columns: matched,
                } => {
                    report.header_row = Some(row);
                    filled = vec![0; matched.len()];
                    report.columns = matched.clone();
                    columns = matched;
                    continue;
                }
                Chunk::Rows(rows) => rows,
            };
            let mut numbers = Vec::with_capacity(rows.len());
            let mut clean = Vec::with_capacity(rows.len());
            for (number, mut cells) in rows {
                report.rows_read += 1;
                // The row's text with a separator per cell and a line end.
                text_bytes += cells.iter().map(|c| c.len() as u64 + 1).sum::<u64>() + 1;
                cells.resize(columns.len().max(cells.len()), String::new());
                if let Some(reason) = control_character(&columns, &cells) {
                    reject(report, number, reason);
                    continue;
                }
                for (count, cell) in filled.iter_mut().zip(&cells) {
                    if !cell.trim().is_empty() {
                        *count += 1;
                    }
                }
                if report.sample_rows.len() < SAMPLE_ROWS {
                    report.sample_rows.push(sample(&columns, &cells));
                }
                numbers.push(number);
                clean.push(cells);
            }
            if !clean.is_empty() {
                let mapped = plugins
                    .map_rows(provider, scope.clone(), &columns, &clean)
                    .await
                    .map_err(|e| Outcome::Rejected(format!("the provider failed: {e}")))?;
                for (number, result) in numbers.into_iter().zip(mapped) {
                    match result {
                        Ok(rows) => stage(staging, report, number, software, rows)?,
                        Err(reason) => reject(report, number, reason),
                    }
                }
            }
            report.fill_rate = fill_rate(&columns, &filled, report.rows_read);
            storage::write_report(ctx, &upload.id, report, None).await?;
            // A CSV's rows are estimated from the share of its bytes read
            // so far; a workbook is compressed, so its total is what has
            // been read until the end.
            let estimate = match format {
                Format::Csv if text_bytes > 0 => {
                    (report.rows_read as f64 * upload.size_bytes as f64 / text_bytes as f64) as i64
                }
                _ => report.rows_read as i64,
            };
            ctx.progress(
                "parsing",
                report.rows_read as i64,
                estimate,
                "rows",
                &upload.filename,
            )
            .await?;
        }
        if report.header_row.is_none() {
            return Err(Outcome::Rejected("the file is empty".into()));
        }
        Ok(())
    }
}

/// Reads the file on a blocking thread: skips preamble rows until the
/// provider's header signals match, then sends data rows in batches.
/// Dropping the receiver stops it.
fn spawn_reader(
    provider: &LoadedCsvProvider,
    path: &Path,
    format: Format,
    sheet: Option<String>,
) -> mpsc::Receiver<Chunk> {
    let (tx, rx) = mpsc::channel(4);
    let columns = header::Columns::new(
        &provider.descriptor.header_signals,
        &provider.descriptor.column_aliases,
    );
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let mut header_found = false;
        let mut searched = 0;
        let mut batch: Vec<(u64, Vec<String>)> = Vec::with_capacity(MAP_BATCH);
        let result = parse::read_rows(&path, format, sheet.as_deref(), &mut |row, cells| {
            if cells.iter().all(|c| c.trim().is_empty()) {
                return true;
            }
            if !header_found {
                searched += 1;
                if columns.is_header(&cells) {
                    header_found = true;
                    let matched = columns.match_header(&cells);
                    return tx
                        .blocking_send(Chunk::Header {
                            row,
                            columns: matched,
                        })
                        .is_ok();
                }
                return searched < header::MAX_PREAMBLE_ROWS;
            }
            batch.push((row, cells));
            if batch.len() >= MAP_BATCH {
                return tx
                    .blocking_send(Chunk::Rows(std::mem::take(&mut batch)))
                    .is_ok();
            }
            true
        });
        let last = match result {
            Err(err) => Some(Chunk::Failed(err)),
            Ok(()) if !header_found && searched > 0 => Some(Chunk::Failed(ParseError::NoHeader {
                searched,
                expected: columns.expected(),
            })),
            Ok(()) if !batch.is_empty() => Some(Chunk::Rows(batch)),
            Ok(()) => None,
        };
        if let Some(last) = last {
            let _ = tx.blocking_send(last);
        }
    });
    rx
}

fn reject(report: &mut ParseReport, row: u64, reason: String) {
    report.rows_rejected += 1;
    if report.rejections.len() < MAX_REJECTIONS {
        report.rejections.push(Rejection {
            row,
            reason: shortened(&reason),
        });
    }
}

/// What the upload keeps of a cell or a reason: enough to recognise it.
fn shortened(text: &str) -> String {
    const KEEP: usize = 200;
    match text.char_indices().nth(KEEP) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

/// Control characters other than tab and line breaks (which quoted CSV
/// cells may hold) mark a corrupt row.
fn control_character(columns: &[String], cells: &[String]) -> Option<String> {
    cells.iter().enumerate().find_map(|(i, cell)| {
        cell.chars()
            .find(|c| c.is_control() && !matches!(c, '\t' | '\r' | '\n'))
            .map(|c| {
                let column = columns.get(i).map(String::as_str).unwrap_or("?");
                format!(
                    "column {column} contains the control character U+{:04X}",
                    c as u32
                )
            })
    })
}

fn sample(columns: &[String], cells: &[String]) -> Value {
    let object: Map<String, Value> = columns
        .iter()
        .zip(cells)
        .map(|(column, cell)| (column.clone(), json!(shortened(cell))))
        .collect();
    Value::Object(object)
}

fn fill_rate(columns: &[String], filled: &[u64], rows: u64) -> Map<String, Value> {
    columns
        .iter()
        .zip(filled)
        .map(|(column, count)| {
            let rate = if rows == 0 {
                0.0
            } else {
                (*count as f64 / rows as f64 * 1000.0).round() / 1000.0
            };
            (column.clone(), json!(rate))
        })
        .collect()
}

/// Stages what the provider made of one row, checking it fits the
/// source's target.
fn stage(
    staging: &mut Staging,
    report: &mut ParseReport,
    number: u64,
    software: bool,
    rows: Vec<MappedRow>,
) -> Result<(), Outcome> {
    for row in rows {
        match (software, row) {
            (true, MappedRow::Inventory(item)) => {
                let item = normalized(item);
                staging.push_item(&item_key(&item), &item)?;
            }
            (false, MappedRow::Record(record)) => staging.push_record(&record)?,
            (true, MappedRow::Record(_)) => reject(
                report,
                number,
                "the provider returned a record for a software source".into(),
            ),
            (false, MappedRow::Inventory(_)) => reject(
                report,
                number,
                "the provider returned an inventory item for a record source".into(),
            ),
        }
    }
    Ok(())
}

/// The row's operating system as connectors' rows store it
/// ([`DeviceOs`]): `Ubuntu` beside `22.04` is `linux` / `Ubuntu 22.04`,
/// so the distribution and edition stay.
fn normalized(mut item: InventoryRow) -> InventoryRow {
    let os = DeviceOs::of(
        item.os_platform.as_deref(),
        item.os_version.as_deref(),
        item.os_name.as_deref(),
    );
    let (platform, version, name) = (os.platform.map(RowText::from), os.version, os.name);
    item.os_platform = platform;
    item.os_version = version.map(Into::into);
    item.os_name = name.map(Into::into);
    item
}

/// One row per (device, application, version) within a source.
fn item_key(item: &InventoryRow) -> String {
    let part = |v: &Option<RowText>| v.as_deref().unwrap_or("").trim().to_lowercase();
    format!(
        "{}\u{1f}{}\u{1f}{}",
        part(&item.device_name),
        part(&item.application_name),
        part(&item.version)
    )
}
