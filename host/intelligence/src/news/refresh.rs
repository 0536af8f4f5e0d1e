//! The two news jobs: `news_refresh` fetches every feed of a tenant
//! (conditional GET), stores the new items and classifies them;
//! `news_classify` classifies a batch (the items never classified or asked
//! to be classified again). Both report progress per feed or item.

use async_trait::async_trait;

use super::classify::{self, ItemText, TenantNames};
use super::fetch::{self, Fetched};
use super::storage::{self, FetchOutcome};
use crate::language_model::LanguageModel;
use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_core::settings::Settings;
use cairn_jobs::{JobContext, JobFailure, JobHandler};

pub const REFRESH_KIND: &str = "news_refresh";
pub const CLASSIFY_KIND: &str = "news_classify";

/// Most items one classification batch takes.
pub const MAX_BATCH: i64 = 200;

pub struct RefreshHandler {
    pub settings: Settings,
}

#[async_trait]
impl JobHandler for RefreshHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let db = ctx.db();
        let tenant = ctx.tenant_id();
        let feeds = storage::feeds_to_fetch(db, tenant).await?;
        let total = feeds.len() as i64;
        for (done, feed) in feeds.iter().enumerate() {
            ctx.progress("fetching", done as i64, total, "feeds", &feed.url)
                .await?;
            // One feed failing is that feed's state, not the job's.
            let added = match fetch::fetch(&self.settings, &feed.url, &feed.validators).await {
                Ok(Fetched::NotModified) => {
                    storage::record_fetch(db, tenant, &feed.id, FetchOutcome::NotModified).await?
                }
                Ok(Fetched::Document(document)) => {
                    let outcome = FetchOutcome::Read {
                        items: &document.items,
                        validators: &document.validators,
                        format: document.format,
                    };
                    storage::record_fetch(db, tenant, &feed.id, outcome).await?
                }
                Err(err) => {
                    let reason = err.to_string();
                    storage::record_fetch(db, tenant, &feed.id, FetchOutcome::Failed(&reason))
                        .await?
                }
            };
            tracing::info!(feed = %feed.url, new_items = added.len(), "news feed fetched");
        }
        let pending = storage::items_to_classify(db, tenant, MAX_BATCH).await?;
        classify_items(ctx, &self.settings, pending).await
    }
}

pub struct ClassifyHandler {
    pub settings: Settings,
}

#[async_trait]
impl JobHandler for ClassifyHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let limit = ctx.args()["limit"]
            .as_i64()
            .unwrap_or(MAX_BATCH)
            .clamp(1, MAX_BATCH);
        let items = storage::items_to_classify(ctx.db(), ctx.tenant_id(), limit).await?;
        classify_items(ctx, &self.settings, items).await
    }
}

async fn classify_items(
    ctx: &JobContext,
    settings: &Settings,
    items: Vec<storage::ItemToClassify>,
) -> Result<(), JobFailure> {
    let total = items.len() as i64;
    if total == 0 {
        return Ok(());
    }
    let db = ctx.db();
    let tenant = ctx.tenant_id();
    let model = LanguageModel::from_settings(settings);
    let names = TenantNames::load(db, tenant).await?;
    for (done, item) in items.iter().enumerate() {
        ctx.progress("classifying", done as i64, total, "items", &item.id)
            .await?;
        classify_one(db, model.as_ref(), tenant, &names, item).await?;
    }
    ctx.progress("classifying", total, total, "items", "")
        .await?;
    Ok(())
}

/// Classifies one item and stores the answer.
pub async fn classify_one(
    db: &Db,
    model: Option<&LanguageModel>,
    tenant: &TenantId,
    names: &TenantNames,
    item: &storage::ItemToClassify,
) -> sqlx::Result<()> {
    let text = ItemText {
        title: &item.title,
        summary: &item.summary,
    };
    let classification = classify::classify(db, model, tenant, names, &text).await?;
    storage::save_classification(db, tenant, &item.id, &classification).await
}

/// Queues a refresh of every tenant with feeds (the schedule).
pub async fn enqueue_all(db: &Db) -> sqlx::Result<()> {
    for tenant in storage::tenants_with_feeds(db).await? {
        cairn_jobs::enqueue(db, &tenant, REFRESH_KIND, &serde_json::json!({})).await?;
    }
    Ok(())
}
