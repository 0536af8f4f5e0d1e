//! Rows of a parse wait in a staging file (one JSON array per line) until
//! the whole file has been read; only then do they replace the source's
//! previous rows. A parse that fails leaves the old data as it was.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use tokio::io::AsyncBufReadExt;

use super::storage::{self, ParseReport, SUCCESS};
use cairn_core::db::{now_ms, Backend, WriteBatches};
use cairn_inventory::items::{self, ReplaceRule};
use cairn_inventory::records;
use cairn_jobs::{JobContext, JobFailure, LeaseLost};
use cairn_plugins::rows::{InventoryRow, RecordRow};

/// Rows per upsert at most (fewer on SQLite, see [`WriteBatches`]): the
/// inventory's writers split them into statements as their engine needs.
const INSERT_BATCH: usize = 5000;

/// Which table a staging file fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    Items,
    Records,
}

impl Destination {
    /// What the rows are, for the metrics' `area` label.
    fn area(self) -> &'static str {
        match self {
            Destination::Items => "software",
            Destination::Records => "records",
        }
    }
}

pub struct Staging {
    path: PathBuf,
    /// `None` once the file is complete (finished or reopened).
    out: Option<BufWriter<File>>,
    destination: Destination,
    pub rows: u64,
}

/// The staging file of an upload. The name carries the line layout's
/// version: a file an older build staged (items without `client_id` and
/// `group_ids`, records of 4 values) is never read as this one; its upload
/// is parsed again.
fn path_of(dir: &Path, upload_id: &str) -> PathBuf {
    dir.join(format!("{upload_id}.v3.staging"))
}

impl Staging {
    pub fn create(
        dir: &Path,
        upload_id: &str,
        destination: Destination,
    ) -> std::io::Result<Staging> {
        std::fs::create_dir_all(dir)?;
        let path = path_of(dir, upload_id);
        let out = BufWriter::with_capacity(1024 * 1024, File::create(&path)?);
        Ok(Staging {
            path,
            out: Some(out),
            destination,
            rows: 0,
        })
    }

    /// The complete staging file an earlier run of the same upload left.
    pub fn reopen(
        dir: &Path,
        upload_id: &str,
        destination: Destination,
    ) -> std::io::Result<Staging> {
        use std::io::BufRead;
        let path = path_of(dir, upload_id);
        let reader = std::io::BufReader::with_capacity(1024 * 1024, File::open(&path)?);
        let mut rows = 0;
        for line in reader.split(b'\n') {
            line?;
            rows += 1;
        }
        Ok(Staging {
            path,
            out: None,
            destination,
            rows,
        })
    }

    /// Flushes the file to disk: a run that takes over may read it.
    pub fn finish(&mut self) -> std::io::Result<()> {
        if let Some(out) = self.out.take() {
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
        }
        Ok(())
    }

    pub fn push_item(&mut self, key: &str, item: &InventoryRow) -> std::io::Result<()> {
        debug_assert_eq!(self.destination, Destination::Items);
        // The layout of `cairn_inventory::items`; an upload names no
        // client or groups.
        let line = json!([
            key,
            item.device_name,
            item.device_id,
            item.os_platform,
            item.os_version,
            item.user_email,
            item.user_name,
            item.application_name,
            item.vendor,
            item.version,
            item.publisher,
            None::<String>,
            "[]",
            item.os_name,
            item.os_build,
        ]);
        self.write(&line)
    }

    pub fn push_record(&mut self, record: &RecordRow) -> std::io::Result<()> {
        debug_assert_eq!(self.destination, Destination::Records);
        // The layout of `cairn_inventory::records`; an upload's record is
        // of its collection's type and names no client, groups or fields.
        let line = json!([
            record.collection,
            record.collection,
            record.key,
            record.device_name,
            None::<String>,
            "[]",
            "{}",
            record.body,
        ]);
        self.write(&line)
    }

    fn write(&mut self, line: &serde_json::Value) -> std::io::Result<()> {
        let out = self
            .out
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the staging file is complete"))?;
        serde_json::to_writer(&mut *out, line)?;
        out.write_all(b"\n")?;
        self.rows += 1;
        Ok(())
    }

    /// Removes what an upload staged, if anything (a canceled parse).
    pub fn remove(dir: &Path, upload_id: &str) {
        let _ = std::fs::remove_file(path_of(dir, upload_id));
        // What older builds staged.
        for old in ["staging", "v2.staging"] {
            let _ = std::fs::remove_file(dir.join(format!("{upload_id}.{old}")));
        }
    }

    /// Removes the staging file (after a failed parse).
    pub fn discard(self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// Swaps the staged rows in for the source's previous ones, in
    /// transactions of at most [`INSERT_BATCH`] rows so the database's other writers
    /// (a login, a config save, a sync page) get their turn between them:
    /// upserts every staged row from line `from_line` on, stamped with
    /// `upload_id` (a repeated key keeps its first row), deletes the
    /// source's rows the upload did not stamp, then marks the upload
    /// succeeded with `report`.
    ///
    /// Each batch commits with the job's checkpoint (how many lines are
    /// in), fenced by the job's lease: a run that lost its job writes no
    /// batch, and a run told to stop (shutdown, cancel) stops between two
    /// batches; the next run goes on from the checkpoint. Readers see the
    /// source's old and new rows side by side while the swap runs, as
    /// during an integration sync. Returns the rows the source holds.
    pub async fn replace(
        mut self,
        ctx: &JobContext,
        source: &str,
        upload_id: &str,
        report: &mut ParseReport,
        from_line: u64,
    ) -> Result<u64, JobFailure> {
        self.finish().map_err(io_failure)?;
        let db = ctx.db();
        let tenant = ctx.tenant_id();
        let file = tokio::fs::File::open(&self.path)
            .await
            .map_err(io_failure)?;
        let mut lines = tokio::io::BufReader::with_capacity(1024 * 1024, file).lines();
        let upsert = upsert_statement(db.backend, self.destination);
        let now = now_ms();
        let mut sizes = WriteBatches::new(db.backend, 200, INSERT_BATCH);
        let mut batch = Batch::new(db.backend, self.destination);
        let mut line_number = 0u64;
        let mut replaced = from_line;
        let labels = [
            ("via", "upload".to_string()),
            ("area", self.destination.area().to_string()),
            ("connector", source.to_string()),
        ];
        if from_line == 0 {
            metrics::counter!(cairn_core::telemetry::ROWS_REJECTED, &labels)
                .increment(report.rows_rejected);
        }
        ctx.progress("replacing", replaced as i64, self.rows as i64, "rows", "")
            .await?;
        loop {
            let line = lines.next_line().await.map_err(io_failure)?;
            if let Some(line) = &line {
                line_number += 1;
                if line_number <= from_line {
                    continue;
                }
                batch.push(line).map_err(|e| {
                    JobFailure::Failed(format!("staged line {line_number} cannot be read: {e}"))
                })?;
            }
            let in_batch = batch.len();
            if in_batch > 0 && (in_batch >= sizes.rows() || line.is_none()) {
                if let Some(reason) = ctx.stop_reason() {
                    return Err(LeaseLost(reason).into());
                }
                replaced += in_batch as u64;
                let checkpoint = ReplaceCheckpoint {
                    upload_id: upload_id.to_string(),
                    replaced,
                    report: report.clone(),
                };
                let _turn = db.write_turn().await;
                let started = Instant::now();
                let mut tx = db.pool.begin().await?;
                let rows = (tenant, source);
                match &batch {
                    Batch::Items(batch) => {
                        items::upsert(&mut tx, &upsert, rows, upload_id, batch, now).await?
                    }
                    Batch::Records(batch) => {
                        records::upsert(&mut tx, &upsert, rows, upload_id, batch, now).await?
                    }
                };
                ctx.save_checkpoint_in(&mut tx, &checkpoint.to_value())
                    .await?;
                tx.commit().await?;
                drop(_turn);
                sizes.record(in_batch, started.elapsed());
                metrics::counter!(cairn_core::telemetry::ROWS_WRITTEN, &labels)
                    .increment(in_batch as u64);
                batch = Batch::new(db.backend, self.destination);
                ctx.progress("replacing", replaced as i64, self.rows as i64, "rows", "")
                    .await?;
            }
            if line.is_none() {
                break;
            }
        }
        drop(lines);
        ctx.progress("pruning", 0, 1, "steps", "rows the upload no longer has")
            .await?;
        crate::storage::prune_unstamped(db, tenant, source, upload_id).await?;
        let (items, records) = crate::storage::row_counts(db, tenant, source).await?;
        let kept = (items + records) as u64;
        report.rows_imported = kept;
        report.duplicates = self.rows.saturating_sub(kept);
        storage::write_report(ctx, upload_id, report, Some((SUCCESS, None))).await?;
        let _ = tokio::fs::remove_file(&self.path).await;
        Ok(kept)
    }
}

/// The staged lines of one transaction, as the destination's writer
/// takes them.
enum Batch {
    Items(items::StagedRows),
    Records(records::StagedRows),
}

impl Batch {
    fn new(backend: Backend, destination: Destination) -> Batch {
        match destination {
            Destination::Items => Batch::Items(items::StagedRows::new(backend)),
            Destination::Records => Batch::Records(records::StagedRows::new(backend)),
        }
    }

    fn push(&mut self, line: &str) -> Result<(), items::StagedRowError> {
        match self {
            Batch::Items(rows) => rows.push_json(line),
            Batch::Records(rows) => rows.push_json(line),
        }
    }

    fn len(&self) -> usize {
        match self {
            Batch::Items(rows) => rows.len(),
            Batch::Records(rows) => rows.len(),
        }
    }
}

/// Where a parse's swap stands: which upload's staging file, how many of
/// its lines are in, and the parse's report (the file is not read again).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct ReplaceCheckpoint {
    pub upload_id: String,
    pub replaced: u64,
    pub report: ParseReport,
}

impl ReplaceCheckpoint {
    /// The checkpoint the last run saved for `upload_id`, if any.
    pub(super) fn of(ctx: &JobContext, upload_id: &str) -> Option<ReplaceCheckpoint> {
        let checkpoint: ReplaceCheckpoint =
            serde_json::from_value(ctx.checkpoint()?.clone()).ok()?;
        (checkpoint.upload_id == upload_id).then_some(checkpoint)
    }

    pub(super) fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

fn io_failure(err: std::io::Error) -> JobFailure {
    JobFailure::Failed(format!("the staged rows could not be read: {err}"))
}

/// The destination's upsert: each table's one writer, under
/// `ReplaceRule::FirstOfStamp` (a row this upload already stamped is left
/// alone, so a repeated key keeps its first row).
fn upsert_statement(backend: Backend, destination: Destination) -> items::Upsert {
    match destination {
        Destination::Items => items::upsert_sql(backend, ReplaceRule::FirstOfStamp),
        Destination::Records => records::upsert_sql(backend, ReplaceRule::FirstOfStamp),
    }
}
