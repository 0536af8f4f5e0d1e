//! How each configured integration's syncs are going, from its sync jobs:
//! what dashboards show as sync health.

use serde::Serialize;
use utoipa::ToSchema;

use super::{storage, sync_kind};
use cairn_core::db::{to_rfc3339, Db};
use cairn_core::ids::TenantId;
use cairn_jobs::storage::{self as jobs, JobFilter, JobStatus};

/// Sync jobs read per area.
const HISTORY: i64 = 50;

#[derive(Debug, Serialize, ToSchema)]
pub struct SyncHealth {
    pub area: String,
    /// The connector the tenant's config names, when it names one.
    pub connector: Option<String>,
    /// The latest sync's status; none before the first.
    pub last_status: Option<JobStatus>,
    pub last_run_at: Option<String>,
    /// When a sync last succeeded (within the last 50 runs).
    pub last_success_at: Option<String>,
    /// The latest sync's error, when it failed.
    pub last_error: Option<String>,
    /// `healthy` (the latest sync succeeded), `failing` (it failed),
    /// `running`, or `never_synced`.
    pub health: String,
}

/// One entry per area the tenant configured, by area.
pub async fn sync_health(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<SyncHealth>> {
    let mut areas = storage::configured_areas(db, tenant).await?;
    areas.sort();
    let mut out = vec![];
    for (area, connector) in areas {
        let kind = sync_kind(&area);
        let filter = JobFilter {
            kind: Some(&kind),
            status: None,
            limit: HISTORY,
            offset: 0,
        };
        let (runs, _) = jobs::list(db, tenant, &filter).await?;
        let latest = runs.first();
        let succeeded = runs.iter().find(|r| r.status() == JobStatus::Success);
        let health = match latest.map(|r| r.status()) {
            None => "never_synced",
            Some(JobStatus::Success) => "healthy",
            // A superseded run's work went on in the job behind it.
            Some(JobStatus::Queued | JobStatus::Running | JobStatus::Superseded) => "running",
            Some(JobStatus::Error | JobStatus::Canceled) => "failing",
        };
        out.push(SyncHealth {
            area,
            connector,
            last_status: latest.map(|r| r.status()),
            last_run_at: latest
                .and_then(|r| r.finished_at.or(r.started_at))
                .map(to_rfc3339),
            last_success_at: succeeded.and_then(|r| r.finished_at).map(to_rfc3339),
            last_error: latest
                .filter(|r| r.status() == JobStatus::Error)
                .and_then(|r| r.error.clone()),
            health: health.into(),
        });
    }
    Ok(out)
}
