//! Rows of a parse wait in a staging file (one JSON array per line) until
//! the whole file has been read; only then do they replace the source's
//! previous rows. A parse that fails leaves the old data as it was.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use tokio::io::AsyncBufReadExt;

use super::storage::{self, ParseReport, SUCCEEDED};
use cairn_core::db::{now_ms, Backend, Db, WriteBatches};
use cairn_core::ids::TenantId;
use cairn_plugins::rows::{InventoryRow, RecordRow};

/// Rows per upsert at most (fewer on SQLite, see [`WriteBatches`]): each
/// statement binds one JSON array, so the count is not limited by bound
/// parameters.
const INSERT_BATCH: usize = 5000;

/// Which table a staging file fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    Items,
    Records,
}

pub struct Staging {
    path: PathBuf,
    out: BufWriter<File>,
    destination: Destination,
    pub rows: u64,
}

impl Staging {
    pub fn create(
        dir: &Path,
        upload_id: &str,
        destination: Destination,
    ) -> std::io::Result<Staging> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{upload_id}.staging"));
        let out = BufWriter::with_capacity(1024 * 1024, File::create(&path)?);
        Ok(Staging {
            path,
            out,
            destination,
            rows: 0,
        })
    }

    pub fn push_item(&mut self, key: &str, item: &InventoryRow) -> std::io::Result<()> {
        debug_assert_eq!(self.destination, Destination::Items);
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
        ]);
        self.write(&line)
    }

    pub fn push_record(&mut self, record: &RecordRow) -> std::io::Result<()> {
        debug_assert_eq!(self.destination, Destination::Records);
        let line = json!([
            record.collection,
            record.key,
            record.device_name,
            record.body,
        ]);
        self.write(&line)
    }

    fn write(&mut self, line: &serde_json::Value) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.out, line)?;
        self.out.write_all(b"\n")?;
        self.rows += 1;
        Ok(())
    }

    /// Removes the staging file (after a failed parse).
    pub fn discard(self) {
        let _ = std::fs::remove_file(&self.path);
    }

    /// Swaps the staged rows in for the source's previous ones, in
    /// transactions of at most [`INSERT_BATCH`] rows so the database's other writers
    /// (a login, a config save, a sync page) get their turn between them:
    /// upserts every staged row stamped with `upload_id` (a repeated key
    /// keeps its first row), deletes the source's rows the upload did not
    /// stamp, then marks the upload succeeded with `report`.
    ///
    /// Readers see the source's old and new rows side by side while the swap
    /// runs, as during an integration sync. A swap cut off by a failure is
    /// finished by the job's next attempt, which parses the kept upload again
    /// and stamps the same `upload_id`. Returns the rows the source holds.
    pub async fn replace(
        mut self,
        db: &Db,
        tenant: &TenantId,
        source: &str,
        upload_id: &str,
        report: &mut ParseReport,
    ) -> anyhow::Result<u64> {
        self.out.flush()?;
        let file = tokio::fs::File::open(&self.path).await?;
        let mut lines = tokio::io::BufReader::with_capacity(1024 * 1024, file).lines();
        let upsert = upsert_statement(db.backend, self.destination);
        let now = now_ms();
        let mut sizes = WriteBatches::new(db.backend, 200, INSERT_BATCH);
        let mut batch = String::with_capacity(INSERT_BATCH * 200);
        let mut in_batch = 0;
        loop {
            let line = lines.next_line().await?;
            if let Some(line) = &line {
                batch.push(if in_batch == 0 { '[' } else { ',' });
                batch.push_str(line);
                in_batch += 1;
            }
            if in_batch > 0 && (in_batch >= sizes.rows() || line.is_none()) {
                batch.push(']');
                let _turn = db.write_turn().await;
                let started = Instant::now();
                sqlx::query(&upsert)
                    .bind(tenant.as_str())
                    .bind(source)
                    .bind(upload_id)
                    .bind(now)
                    .bind(&batch)
                    .execute(&db.pool)
                    .await?;
                sizes.record(in_batch, started.elapsed());
                batch.clear();
                in_batch = 0;
            }
            if line.is_none() {
                break;
            }
        }
        drop(lines);
        crate::storage::prune_unstamped(db, tenant, source, upload_id).await?;
        let (items, records) = crate::storage::row_counts(db, tenant, source).await?;
        let kept = (items + records) as u64;
        report.rows_imported = kept;
        report.duplicates = self.rows.saturating_sub(kept);
        storage::write_report(db, tenant, upload_id, report, Some((SUCCEEDED, None))).await?;
        let _ = tokio::fs::remove_file(&self.path).await;
        Ok(kept)
    }
}

/// The destination's upsert from one bound JSON array of rows ($5); $1
/// tenant, $2 source, $3 upload id (the rows' `seen_run`), $4 now. A row
/// this upload already stamped is left alone, so a repeated key keeps its
/// first row; PostgreSQL also drops the repeats within one array, since one
/// statement may not update a row twice there.
fn upsert_statement(backend: Backend, destination: Destination) -> String {
    let (key, columns, values, conflict) = match destination {
        Destination::Items => (
            "value->>0",
            "inventory_items (tenant_id, source, item_key, device_name, device_id, os_platform, \
             os_version, user_email, user_name, application_name, vendor, version, publisher, \
             group_ids, seen_run, updated_at)",
            "$1, $2, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, \
             value->>6, value->>7, value->>8, value->>9, value->>10, '[]', $3, $4",
            "(tenant_id, source, item_key) DO UPDATE SET device_name = excluded.device_name, \
             device_id = excluded.device_id, os_platform = excluded.os_platform, \
             os_version = excluded.os_version, user_email = excluded.user_email, \
             user_name = excluded.user_name, application_name = excluded.application_name, \
             vendor = excluded.vendor, version = excluded.version, publisher = excluded.publisher, \
             client_id = NULL, group_ids = excluded.group_ids, seen_run = excluded.seen_run, \
             updated_at = excluded.updated_at WHERE inventory_items.seen_run <> excluded.seen_run",
        ),
        Destination::Records => (
            "value->>0, value->>1",
            "source_records (tenant_id, source, kind, record_type, record_key, device_name, \
             client_id, group_ids, body, seen_run, updated_at)",
            "$1, $2, value->>0, value->>0, value->>1, value->>2, NULL, '[]', value->>3, $3, $4",
            "(tenant_id, source, kind, record_key) DO UPDATE SET \
             device_name = excluded.device_name, client_id = excluded.client_id, \
             group_ids = excluded.group_ids, body = excluded.body, seen_run = excluded.seen_run, \
             updated_at = excluded.updated_at WHERE source_records.seen_run <> excluded.seen_run",
        ),
    };
    // `WHERE true` keeps SQLite from reading ON CONFLICT as a join clause.
    match backend {
        Backend::Sqlite => format!(
            "INSERT INTO {columns} SELECT {values} FROM json_each($5) WHERE true \
             ON CONFLICT {conflict}"
        ),
        Backend::Postgres => format!(
            "INSERT INTO {columns} SELECT DISTINCT ON ({key}) {values} \
             FROM jsonb_array_elements(CAST($5 AS jsonb)) WITH ORDINALITY AS staged(value, n) \
             ORDER BY {key}, n ON CONFLICT {conflict}"
        ),
    }
}
