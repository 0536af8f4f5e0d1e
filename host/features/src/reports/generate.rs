//! The `report_generate` job: writes each queued report of a tenant, oldest
//! first, to `<reports dir>/<tenant>/<report>.<ext>` through a temporary
//! file renamed into place, so a download never sees half a file.

use std::path::PathBuf;

use async_trait::async_trait;

use super::content::{self, ReportType, Scope};
use super::render::{self, Format};
use super::storage;
use cairn_jobs::{JobContext, JobFailure, JobHandler};

pub const GENERATE_KIND: &str = "report_generate";

pub struct GenerateHandler {
    pub dir: PathBuf,
}

#[async_trait]
impl JobHandler for GenerateHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let db = ctx.db();
        let tenant = ctx.tenant_id();
        while let Some(id) = storage::claim_next(db, tenant).await? {
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
                storage::failed(db, tenant, &id, "the stored request is unreadable").await?;
                continue;
            };
            let tenant_name = cairn_platform::tenancy::name_of(db, tenant)
                .await?
                .unwrap_or_default();
            let for_document = format == Format::Pdf;
            let gathered =
                content::gather(db, tenant, &tenant_name, report_type, &scope, for_document).await;
            let content = match gathered {
                Ok(content) => content,
                Err(err) => {
                    storage::failed(db, tenant, &id, &err.to_string()).await?;
                    continue;
                }
            };
            ctx.progress("writing", 1, 3, "steps", &id).await?;
            let folder = self.dir.join(tenant.as_str());
            let relative = format!("{}/{id}.{}", tenant.as_str(), format.extension());
            let target = self.dir.join(&relative);
            let partial = folder.join(format!("{id}.partial"));
            let rows = render::rows_in(&content, format);
            let written = tokio::task::spawn_blocking({
                let partial = partial.clone();
                let target = target.clone();
                move || -> Result<u64, render::RenderError> {
                    std::fs::create_dir_all(partial.parent().unwrap_or(&partial))?;
                    render::write(&content, format, &partial)?;
                    std::fs::rename(&partial, &target)?;
                    Ok(std::fs::metadata(&target)?.len())
                }
            })
            .await
            .map_err(|e| JobFailure::Failed(format!("report writer: {e}")))?;
            let size = match written {
                Ok(size) => size,
                Err(err) => {
                    let _ = std::fs::remove_file(&partial);
                    storage::failed(db, tenant, &id, &err.to_string()).await?;
                    continue;
                }
            };
            let file_name = format!(
                "{}-{}.{}",
                report_type.slug(),
                &cairn_core::db::to_rfc3339(cairn_core::db::now_ms())[..10],
                format.extension()
            );
            let kept =
                storage::succeeded(db, tenant, &id, &relative, &file_name, size as i64, rows)
                    .await?;
            if !kept {
                // Deleted while it was being written.
                let _ = std::fs::remove_file(&target);
            }
            ctx.progress("done", 3, 3, "steps", &id).await?;
        }
        Ok(())
    }
}
