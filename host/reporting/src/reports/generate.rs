//! The `report_generate` job: writes each queued report of a tenant, oldest
//! first, to a temporary file and puts it in the reports store under
//! `<tenant>/<report>.<ext>` before its row names it, so a download never
//! sees half a file.

use async_trait::async_trait;

use super::content::{self, ReportType, Scope};
use super::render::{self, Format};
use super::storage::{self, Written};
use cairn_core::blobs::{BlobStore, Outgoing};
use cairn_jobs::{JobContext, JobFailure, JobHandler};

pub const GENERATE_KIND: &str = "report_generate";

pub struct GenerateHandler {
    pub store: BlobStore,
    /// The service's clock: a report reads the SLA's states as the API
    /// does at the same moment.
    pub clock: cairn_core::clock::Clock,
    /// Where a report asked to be published goes (the client portal).
    pub shelf: super::publish::Shelves,
}

#[async_trait]
impl JobHandler for GenerateHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let db = ctx.db();
        let tenant = ctx.tenant_id();
        while let Some(id) = storage::claim_next(ctx).await? {
            ctx.progress("reading", 0, 3, "steps", &id).await?;
            let Some((report_type, format, scope)) = storage::request_of(db, tenant, &id).await?
            else {
                continue;
            };
            let parsed = (
                serde_json::from_value::<ReportType>(serde_json::Value::String(report_type)),
                serde_json::from_value::<Format>(serde_json::Value::String(format)),
                serde_json::from_str::<Scope>(&scope),
            );
            let (Ok(report_type), Ok(format), Ok(scope)) = parsed else {
                storage::failed(ctx, &id, "the stored request is unreadable").await?;
                continue;
            };
            let tenant_name = cairn_platform::tenancy::name_of(db, tenant)
                .await?
                .unwrap_or_default();
            let for_document = format == Format::Pdf;
            let gathered = content::gather(
                db,
                tenant,
                &tenant_name,
                report_type,
                &scope,
                for_document,
                self.clock.now_ms(),
            )
            .await;
            let content = match gathered {
                Ok(content) => content,
                Err(err) => {
                    storage::failed(ctx, &id, &err.to_string()).await?;
                    continue;
                }
            };
            ctx.progress("writing", 1, 3, "steps", &id).await?;
            let key = format!("{}/{id}.{}", tenant.as_str(), format.extension());
            let partial = self.store.tmp_dir().join(format!("{id}.partial"));
            let rows = render::rows_in(&content, format);
            let written = tokio::task::spawn_blocking({
                let partial = partial.clone();
                move || -> Result<u64, render::RenderError> {
                    std::fs::create_dir_all(partial.parent().unwrap_or(&partial))?;
                    render::write(&content, format, &partial)?;
                    Ok(std::fs::metadata(&partial)?.len())
                }
            })
            .await
            .map_err(|e| JobFailure::Failed(format!("report writer: {e}")))?;
            let size = match written {
                Ok(size) => size,
                Err(err) => {
                    let _ = std::fs::remove_file(&partial);
                    storage::failed(ctx, &id, &err.to_string()).await?;
                    continue;
                }
            };
            let file_name = format!(
                "{}-{}.{}",
                report_type.slug(),
                &cairn_core::db::to_rfc3339(cairn_core::db::now_ms())[..10],
                format.extension()
            );
            // A copy for the portal, taken before the store moves the file.
            let publish_to = storage::publish_to(db, tenant, &id).await?;
            let copy = self.store.tmp_dir().join(format!("{id}.publish"));
            if publish_to.is_some() {
                if let Err(err) = std::fs::copy(&partial, &copy) {
                    return Err(JobFailure::Failed(format!(
                        "copying the report to publish: {err}"
                    )));
                }
            }
            let outgoing = Outgoing {
                file: &partial,
                size,
                content_type: format.content_type(),
                name: &file_name,
            };
            if let Err(err) = self.store.put(outgoing, &key).await {
                // The store is down (or refused): another attempt may do.
                return Err(JobFailure::Failed(format!("storing the report: {err}")));
            }
            let written = Written {
                key: &key,
                file_name: &file_name,
                size_bytes: size as i64,
                row_count: rows,
            };
            let kept = storage::succeeded(ctx, &id, written).await;
            if !matches!(kept, Ok(true)) {
                // Deleted while it was being written, or this run lost its
                // job: nothing names the file.
                if let Err(err) = self.store.remove(&key).await {
                    tracing::warn!(report_id = %id, error = %err, "removing an unrecorded report failed");
                }
            }
            let kept = kept?;
            if let Some(client) = publish_to {
                let outcome = match kept {
                    true => {
                        let file = cairn_core::uploads::Received {
                            tmp: copy.clone(),
                            name: file_name.clone(),
                            size,
                            content_type: format.content_type().to_string(),
                        };
                        self.shelf
                            .publish(tenant, &client, file)
                            .await
                            .map_err(|e| format!("{e:#}"))
                    }
                    false => Err("the report was deleted while it was written".to_string()),
                };
                // Whatever happened, the copy is not left behind.
                let _ = std::fs::remove_file(&copy);
                match &outcome {
                    Ok(document) => storage::published(db, tenant, &id, Ok(document)).await?,
                    Err(why) => {
                        tracing::warn!(report_id = %id, error = %why, "publishing a report to the portal failed");
                        storage::published(db, tenant, &id, Err(why)).await?
                    }
                }
            }
            ctx.progress("done", 3, 3, "steps", &id).await?;
        }
        Ok(())
    }
}
