//! Rows of a parse wait in a staging file (one JSON array per line) until
//! the whole file has been read; only then do they replace the source's
//! previous rows, in one transaction. A parse that fails leaves the old
//! data as it was, and the database never holds half a file.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::json;
use tokio::io::AsyncBufReadExt;

use super::storage::{self, ParseReport, SUCCEEDED};
use crate::auth::TenantId;
use crate::db::{now_ms, Backend, Db};
use crate::plugins::rows::{InventoryRow, RecordRow};

/// Rows per INSERT: each statement binds one JSON array, so the count is
/// not limited by bound parameters.
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
            record.kind,
            record.key,
            record.device_name,
            record.body.to_string(),
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

    /// In one transaction: deletes the source's rows for the tenant, inserts
    /// the staged ones (a repeated key keeps its first row) and marks the
    /// upload succeeded with `report`. Returns the rows inserted.
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
        let (table, insert) = insert_statement(db.backend, self.destination);
        let now = now_ms();
        // SQLite has one writer; take the turn so this process's other
        // writers queue in memory rather than in the busy handler.
        let _turn = db.write_turn().await;
        let mut tx = db.pool.begin().await?;
        sqlx::query(&format!(
            "DELETE FROM {table} WHERE tenant_id = $1 AND source = $2"
        ))
        .bind(tenant.as_str())
        .bind(source)
        .execute(&mut *tx)
        .await?;
        let mut inserted = 0;
        let mut batch = String::with_capacity(INSERT_BATCH * 200);
        let mut in_batch = 0;
        loop {
            let line = lines.next_line().await?;
            if let Some(line) = &line {
                batch.push(if in_batch == 0 { '[' } else { ',' });
                batch.push_str(line);
                in_batch += 1;
            }
            if in_batch > 0 && (in_batch == INSERT_BATCH || line.is_none()) {
                batch.push(']');
                inserted += sqlx::query(&insert)
                    .bind(tenant.as_str())
                    .bind(source)
                    .bind(upload_id)
                    .bind(now)
                    .bind(&batch)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                batch.clear();
                in_batch = 0;
            }
            if line.is_none() {
                break;
            }
        }
        report.rows_imported = inserted;
        report.duplicates = self.rows.saturating_sub(inserted);
        storage::write_report(&mut *tx, tenant, upload_id, report, Some((SUCCEEDED, None))).await?;
        tx.commit().await?;
        drop(lines);
        let _ = tokio::fs::remove_file(&self.path).await;
        Ok(inserted)
    }
}

/// The destination table and its INSERT from one bound JSON array of rows
/// ($5); $1 tenant, $2 source, $3 upload id (the rows' `seen_run`), $4 now.
fn insert_statement(backend: Backend, destination: Destination) -> (&'static str, String) {
    let rows = match backend {
        Backend::Sqlite => "json_each($5)",
        Backend::Postgres => "jsonb_array_elements(CAST($5 AS jsonb)) AS staged(value)",
    };
    // `WHERE true` keeps SQLite from reading ON CONFLICT as a join clause.
    match destination {
        Destination::Items => (
            "inventory_items",
            format!(
                "INSERT INTO inventory_items (tenant_id, source, item_key, device_name, device_id, \
                 os_platform, os_version, user_email, user_name, application_name, vendor, version, \
                 publisher, group_ids, seen_run, updated_at) \
                 SELECT $1, $2, value->>0, value->>1, value->>2, value->>3, value->>4, value->>5, \
                 value->>6, value->>7, value->>8, value->>9, value->>10, '[]', $3, $4 \
                 FROM {rows} WHERE true ON CONFLICT (tenant_id, source, item_key) DO NOTHING"
            ),
        ),
        Destination::Records => (
            "source_records",
            format!(
                "INSERT INTO source_records (tenant_id, source, kind, record_key, device_name, \
                 client_id, group_ids, body, seen_run, updated_at) \
                 SELECT $1, $2, value->>0, value->>1, value->>2, NULL, '[]', value->>3, $3, $4 \
                 FROM {rows} WHERE true \
                 ON CONFLICT (tenant_id, source, kind, record_key) DO NOTHING"
            ),
        ),
    }
}
