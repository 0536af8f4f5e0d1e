//! The rollup rebuild: after every sync (and CSV ingest) the tenant's
//! applications and assets are derived again from its inventory items.
//!
//! One rebuild per tenant at a time comes from the job queue's dedupe on
//! (tenant, kind). A request that arrives while a rebuild runs must not be
//! lost in that dedupe, so requests also bump a counter in `rollup_state`:
//! the running rebuild goes round once more when the counter moved, and a
//! sweep re-enqueues any tenant whose counter is still ahead (the narrow
//! window between a rebuild's last check and its job finishing).

pub mod build;
pub mod changes;
mod counts;
pub mod incremental;
pub mod store;
pub mod tiers;

use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;

use crate::exposure::Exposure;
pub use build::VersionCount;
use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_jobs::schedule::Schedule;
use cairn_jobs::{JobContext, JobFailure, JobHandler, Registry};
pub use store::WriteError;

/// The job kind of a rebuild.
pub const ROLLUP_KIND: &str = "rollup";

/// A rebuild reports progress at each phase; none takes this long.
const STALL_TIMEOUT: Duration = Duration::from_secs(600);

/// The rebuild's job handler, which tells `exposure` what changed.
pub fn jobs(exposure: Exposure) -> Registry {
    let mut registry = Registry::default();
    registry.register(ROLLUP_KIND, RollupHandler { exposure }, STALL_TIMEOUT);
    registry
}

/// Asks for a rebuild of the tenant's rollup; `reason` is kept on the job.
pub async fn request(db: &Db, tenant: &TenantId, reason: &str) -> sqlx::Result<()> {
    store::bump_requested(db, tenant).await?;
    cairn_jobs::enqueue(db, tenant, ROLLUP_KIND, &json!({"after": reason})).await?;
    Ok(())
}

/// What one rebuild read and wrote.
#[derive(Debug, Clone, Copy)]
pub struct RebuildStats {
    /// Inventory rows read.
    pub items: u64,
    /// Applications and assets written (or removed).
    pub applications: usize,
    pub assets: usize,
    pub rollup_at: i64,
    /// For an incremental rebuild, the queued changes it folded in.
    pub changes: Option<usize>,
}

/// What a rebuild did, as the rollup job's detail says it to clients.
impl std::fmt::Display for RebuildStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.changes {
            Some(changes) => write!(
                f,
                "{changes} inventory changes folded in: {} applications and {} assets recomputed from {} items",
                self.applications, self.assets, self.items
            ),
            None => write!(
                f,
                "{} inventory items rolled up into {} applications and {} assets",
                self.items, self.applications, self.assets
            ),
        }
    }
}

/// How a rebuild may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Fold in the queued changes where the stored rollup allows it.
    Incremental,
    /// Read the whole inventory again.
    Whole,
}

/// Derives the tenant's applications, vendors and assets from its
/// inventory as it is now; returns the items read and what they give.
pub async fn derive(db: &Db, tenant: &TenantId) -> sqlx::Result<(u64, store::Derived)> {
    let completions = crate::seen::completed_runs(db, tenant).await?;
    let mut rollup = build::Rollup::with_completed_runs(completions.clone());
    store::start_recording(db, tenant).await?;
    let mut tx = store::snapshot(db).await?;
    let changes = changes::pending_ids(&mut tx, tenant).await?;
    let items = store::read_items(&mut tx, db.backend, tenant, &mut rollup).await?;
    let records = store::read_device_records(&mut tx, tenant).await?;
    tx.commit().await?;
    // Seconds of computing for a large inventory: off the async workers.
    let derived = tokio::task::spawn_blocking(move || {
        let blank_names = rollup.blank_names().iter().cloned().collect();
        let (applications, vendors) = rollup.applications();
        let assets = rollup.assets(records);
        let (applications, tallies): (Vec<_>, Vec<_>) = applications.into_iter().unzip();
        store::Derived {
            application_documents: applications.iter().map(build::search_document).collect(),
            asset_search: assets.iter().map(crate::assets::search).collect(),
            assets,
            applications,
            tallies,
            vendors,
            blank_names,
            completions,
            changes,
        }
    })
    .await
    // A panic in the build stays a panic, for the job worker to record.
    .unwrap_or_else(|failed| std::panic::resume_unwind(failed.into_panic()));
    Ok((items, derived))
}

/// Rebuilds the tenant's applications and assets from its inventory now,
/// stamping the rows `rollup_at` (from [`store::begin`]): incrementally
/// where `mode` and the stored rollup allow, else whole.
pub async fn rebuild(
    db: &Db,
    tenant: &TenantId,
    rollup_at: i64,
    mode: Mode,
) -> Result<RebuildStats, WriteError> {
    let stats = match mode {
        Mode::Incremental => incremental::apply(db, tenant, rollup_at).await?,
        Mode::Whole => None,
    };
    let stats = match stats {
        Some(stats) => stats,
        None => {
            let (items, derived) = derive(db, tenant).await?;
            store::write(db, tenant, rollup_at, &derived).await?;
            RebuildStats {
                items,
                applications: derived.applications.len(),
                assets: derived.assets.len(),
                rollup_at,
                changes: None,
            }
        }
    };
    // A new asset is written `standard`; the tiers set by hand and by
    // rule give it its own.
    tiers::reapply(db, tenant, rollup_at).await?;
    Ok(stats)
}

/// Rebuilds until no request is left unanswered; returns the last run's
/// figures. [`WriteError::Superseded`] when a later rebuild took over, which
/// then answers the requests.
pub async fn rebuild_until_current(
    db: &Db,
    tenant: &TenantId,
    mode: Mode,
) -> Result<RebuildStats, WriteError> {
    loop {
        let (requested, rollup_at) = store::begin(db, tenant).await?;
        let stats = rebuild(db, tenant, rollup_at, mode).await?;
        if !store::finish(db, tenant, requested).await? {
            return Ok(stats);
        }
    }
}

struct RollupHandler {
    exposure: Exposure,
}

#[async_trait]
impl JobHandler for RollupHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        ctx.progress("rebuilding", 0, 1, "steps", "reading inventory")
            .await?;
        let stats = match rebuild_until_current(ctx.db(), ctx.tenant_id(), Mode::Incremental).await
        {
            Ok(stats) => stats,
            Err(WriteError::Superseded) => {
                ctx.progress("done", 1, 1, "steps", "a later rebuild took over")
                    .await?;
                return Ok(());
            }
            Err(WriteError::Db(err)) => return Err(err.into()),
        };
        // The inventory changed: its vulnerabilities may have too.
        self.exposure
            .inventory_changed(ctx.db(), ctx.tenant_id())
            .await?;
        ctx.progress("done", 1, 1, "steps", &stats.to_string())
            .await?;
        Ok(())
    }
}

/// Re-enqueues rebuilds whose request outran the job that would have
/// answered it. A tenant whose rebuild is queued or running gets none
/// behind it (its requests enqueue their own run); the next tick looks
/// again once that run has ended.
pub fn sweep(db: Db, every: Duration) -> Schedule {
    Schedule::every("rollup sweep", every, move || {
        let db = db.clone();
        async move {
            for tenant in store::behind(&db).await? {
                let tenant = TenantId(tenant);
                let args = json!({"after": "an unanswered request"});
                let queued = cairn_jobs::enqueue_unless_live(&db, &tenant, ROLLUP_KIND, &args);
                if let Err(err) = queued.await {
                    tracing::warn!(error = %err, "re-enqueueing a rollup failed");
                }
            }
            Ok::<(), sqlx::Error>(())
        }
    })
}
