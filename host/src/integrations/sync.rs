//! The sync pipeline, one handler for every connector: fetch a page, map it,
//! upsert its rows with the checkpoint in one transaction, report progress,
//! repeat; after a complete run, prune what the run did not see and ask for
//! a rollup rebuild.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{storage, SecretBox};
use crate::jobs::{JobContext, JobFailure, JobHandler};
use crate::plugins::{CallError, CallScope, MappedRow, Plugins};
use crate::settings::Settings;

pub struct SyncHandler {
    pub plugins: Arc<Plugins>,
    pub secrets: SecretBox,
    pub connector: String,
    pub caps: SyncCaps,
}

/// How much one run may take in. An upstream or a connector that pages
/// without end, or a page of millions of records, stops the run with an
/// error naming the setting; a stopped run prunes nothing.
#[derive(Debug, Clone, Copy)]
pub struct SyncCaps {
    pub pages: u64,
    pub page_records: usize,
    pub rows: u64,
}

impl SyncCaps {
    pub fn from_settings(settings: &Settings) -> SyncCaps {
        SyncCaps {
            pages: settings.sync_max_pages.max(1),
            page_records: settings.sync_max_page_records.max(1),
            rows: settings.sync_max_rows.max(1),
        }
    }
}

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

/// A plugin call's failure as the job's: what another attempt would only
/// repeat (a panic, the memory cap, a broken answer, a config or
/// credential problem) is not retried.
fn failure(err: CallError) -> JobFailure {
    match err {
        CallError::Crashed(_)
        | CallError::MemoryExceeded(_)
        | CallError::Protocol(_)
        | CallError::Config(_)
        | CallError::Auth { .. } => JobFailure::Permanent(err.to_string()),
        CallError::RateLimited { .. }
        | CallError::Transient(_)
        | CallError::Upstream(_)
        | CallError::Timeout(_) => JobFailure::Failed(err.to_string()),
    }
}

#[async_trait]
impl JobHandler for SyncHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let connector = self
            .plugins
            .connector(&self.connector)
            .ok_or_else(|| {
                JobFailure::Failed(format!("connector {} is not loaded", self.connector))
            })?
            .clone();
        let db = ctx.db();
        let tenant = ctx.tenant_id();
        let stored = storage::config(db, &self.secrets, tenant, &self.connector)
            .await?
            .ok_or_else(|| {
                JobFailure::Failed(format!(
                    "{} is not configured for this tenant",
                    self.connector
                ))
            })?;
        let config = stored.full();
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
            plugin: self.connector.clone(),
            tenant_id: Some(tenant.as_str().to_string()),
            job_id: Some(ctx.job_id().to_string()),
        };
        let streams = connector.descriptor.streams.clone();
        while at.stream_index < streams.len() {
            let stream = &streams[at.stream_index];
            if at.pages >= self.caps.pages {
                return Err(JobFailure::Permanent(format!(
                    "stopped after {} pages (the cap, CAIRN_SYNC_MAX_PAGES) with more to \
                     fetch; nothing was pruned",
                    at.pages
                )));
            }
            let (records, next) = self
                .plugins
                .fetch(
                    &connector,
                    scope.clone(),
                    &config,
                    stream,
                    at.cursor.as_deref(),
                )
                .await
                .map_err(failure)?;
            if records.len() > self.caps.page_records {
                return Err(JobFailure::Permanent(format!(
                    "a page of stream {stream} held {} records, over the cap of {} \
                     (CAIRN_SYNC_MAX_PAGE_RECORDS); nothing was pruned",
                    records.len(),
                    self.caps.page_records
                )));
            }
            let mapped = self
                .plugins
                .map_records(&connector, scope.clone(), stream, &records)
                .await
                .map_err(failure)?;
            let mut rows: Vec<MappedRow> = Vec::with_capacity(mapped.len());
            for (record, result) in records.iter().zip(mapped) {
                match result {
                    Ok(mut mapped_rows) => rows.append(&mut mapped_rows),
                    Err(reason) => {
                        at.rejected += 1;
                        if at.rejected <= 20 {
                            let key = record
                                .get("Id")
                                .or_else(|| record.get("id"))
                                .cloned()
                                .unwrap_or(Value::Null);
                            tracing::warn!(connector = %self.connector, stream, %key, %reason, "record rejected by map");
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
            {
                let _turn = db.write_turn().await;
                let mut tx = db.pool.begin().await?;
                if !storage::hold_config(&mut tx, tenant, &self.connector, stored.updated_at)
                    .await?
                {
                    return Err(JobFailure::Permanent(
                        "the integration's config was removed or replaced during this sync; \
                         nothing more was written"
                            .into(),
                    ));
                }
                storage::upsert_rows(&mut tx, tenant, &self.connector, &at.run, &rows).await?;
                ctx.save_checkpoint_in(&mut tx, &json!(next_at)).await?;
                tx.commit().await?;
            }
            ctx.progress(
                stream,
                at.rows,
                0,
                &format!("{} rows, {} records rejected", at.rows, at.rejected),
            )
            .await?;
            at = next_at;
        }
        let (items, records) = storage::prune_unseen(db, tenant, &self.connector, &at.run).await?;
        ctx.progress(
            "done",
            at.rows,
            at.rows,
            &format!(
                "{} rows, {} records rejected, pruned {items} items and {records} records",
                at.rows, at.rejected
            ),
        )
        .await?;
        crate::inventory::rollup::request(db, tenant, ctx.kind()).await?;
        Ok(())
    }
}
