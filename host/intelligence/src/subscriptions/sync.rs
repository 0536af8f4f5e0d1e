//! The `subscriptions_sync` job: each subscription of the tenant whose
//! sync was asked for, in turn, asks NVD for its CVEs page by page and
//! records what is new or changed. One subscription failing is its own
//! state; the others go on.

use async_trait::async_trait;

use super::storage::{self, Pending, SyncOutcome, PRODUCT};
use cairn_core::db::{now_ms, Db};
use cairn_jobs::{JobContext, JobFailure, JobHandler};
use cairn_vulnerabilities::reference::sources::{self, NvdSearch, SourceConfig, SourceError};
use cairn_vulnerabilities::reference::store;

pub const SYNC_KIND: &str = "subscriptions_sync";

/// Pages of one subscription's search at most (2,000 CVEs a page at
/// NVD's largest).
const MAX_PAGES: u64 = 50;

pub struct SyncHandler {
    pub config: SourceConfig,
}

/// Asks a sync of every subscription of every tenant that has one.
pub async fn request_all(db: &Db) -> sqlx::Result<()> {
    for tenant in storage::tenants_with_subscriptions(db).await? {
        storage::request_sync(db, &tenant).await?;
        cairn_jobs::enqueue(db, &tenant, SYNC_KIND, &serde_json::json!({})).await?;
    }
    Ok(())
}

/// Queues a sync for every tenant with a subscription asked to sync more
/// than half a minute ago (a sync already queued absorbs it).
pub async fn enqueue_waiting(db: &Db) -> sqlx::Result<()> {
    for tenant in storage::tenants_waiting(db, now_ms() - 30_000).await? {
        cairn_jobs::enqueue(db, &tenant, SYNC_KIND, &serde_json::json!({})).await?;
    }
    Ok(())
}

/// How to ask NVD for a subscription: by CPE match string when the CPE
/// dictionary knows the name (for a product without a vendor, when
/// exactly one vendor has it), else by keyword.
pub async fn search_for(db: &Db, pending: &Pending) -> sqlx::Result<NvdSearch> {
    let keyword = NvdSearch::Keyword(pending.name.clone());
    if pending.sub_type == PRODUCT {
        let vendors =
            store::known_vendors(db, pending.vendor.as_deref(), Some(&pending.name_key)).await?;
        return Ok(match vendors.as_slice() {
            [vendor] => NvdSearch::Cpe {
                vendor: vendor.clone(),
                product: Some(pending.name_key.clone()),
            },
            _ => keyword,
        });
    }
    let known = store::known_vendors(db, Some(&pending.name_key), None).await?;
    Ok(if known.is_empty() {
        keyword
    } else {
        NvdSearch::Cpe {
            vendor: pending.name_key.clone(),
            product: None,
        }
    })
}

/// Every CVE of `search`, paging through NVD; whether any record was new
/// to the CVE store or newer than its copy.
async fn search_all(
    ctx: &JobContext,
    config: &SourceConfig,
    search: &NvdSearch,
) -> Result<(Vec<(String, i64)>, bool), SourceError> {
    let mut cves = vec![];
    let mut written = false;
    let mut start = 0;
    for page_number in 0..MAX_PAGES {
        if page_number > 0 {
            tokio::select! {
                _ = tokio::time::sleep(config.nvd_delay) => {}
                _ = ctx.stop_token().cancelled() => return Err(SourceError::Stopped),
            }
        }
        let page =
            sources::nvd_search_page(ctx.db(), config, search, start, config.nvd_results_per_page)
                .await?;
        written |= page.written > 0;
        let count = page.cves.len() as u64;
        cves.extend(page.cves);
        start += count;
        if count == 0 || start >= page.total {
            return Ok((cves, written));
        }
    }
    Err(SourceError::Upstream(format!(
        "more than {MAX_PAGES} pages of CVEs; name a product rather than a vendor"
    )))
}

#[async_trait]
impl JobHandler for SyncHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let db = ctx.db();
        let tenant = ctx.tenant_id();
        let mut done = 0;
        let mut store_changed = false;
        while let Some(pending) = storage::next_pending(db, tenant).await? {
            // Pending subscriptions are taken one at a time: the one in
            // hand is all that is known to be left.
            ctx.progress("syncing", done, done + 1, "subscriptions", &pending.name)
                .await?;
            let started = now_ms();
            let search = search_for(db, &pending).await?;
            let query = match &search {
                NvdSearch::Cpe { vendor, product } => format!(
                    "virtualMatchString=cpe:2.3:*:{vendor}{}",
                    product
                        .as_deref()
                        .map(|p| format!(":{p}"))
                        .unwrap_or_default()
                ),
                NvdSearch::Keyword(words) => format!("keywordSearch={words}"),
            };
            match search_all(ctx, &self.config, &search).await {
                Ok((cves, written)) => {
                    store_changed |= written;
                    storage::record_sync(
                        db,
                        tenant,
                        &pending,
                        started,
                        &query,
                        SyncOutcome::Synced(&cves),
                    )
                    .await?;
                }
                Err(SourceError::Db(err)) => return Err(err.into()),
                Err(SourceError::Stopped) => return Err(JobFailure::Failed("stopped".into())),
                Err(err) => {
                    let reason = err.to_string();
                    tracing::warn!(subscription = %pending.name, error = %reason, "subscription sync failed");
                    storage::record_sync(
                        db,
                        tenant,
                        &pending,
                        started,
                        &query,
                        SyncOutcome::Failed(&reason),
                    )
                    .await?;
                }
            }
            done += 1;
        }
        // New CVEs may match what tenants run.
        if store_changed {
            cairn_vulnerabilities::request_rescans(db).await?;
        }
        Ok(())
    }
}
