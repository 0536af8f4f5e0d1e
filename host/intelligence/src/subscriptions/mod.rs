//! Subscriptions: a tenant follows a vendor or a product (even one with no
//! CVE yet); each sync asks NVD's CVE API for its CVEs (by CPE match
//! string when the CPE dictionary knows the name, else by keyword), stores
//! them in the CVE store, and records which CVEs are new or changed for
//! the tenant's activity feed.
//!
//! - `storage.rs`: `subscriptions` and `subscription_cves`;
//! - `sync.rs`: the `subscriptions_sync` job and its schedule;
//! - `routes.rs`: `/api/v1/subscriptions`.
//!
//! `subscriptions` and `subscription_cves`; `sync.rs` the
//! `subscriptions_sync` job (each subscription asked to sync in turn: NVD by
//! `virtualMatchString` when the CPE dictionary knows the name, else
//! `keywordSearch`, through `sources::nvd_search_page`, which stores the
//! records; new and changed CVEs recorded in one transaction with the
//! status), the schedule and a one-minute sweep for requests whose job did
//! not answer them (a failed run, a stop before the enqueue).

mod routes;
mod storage;
mod sync;

pub use storage::{SUB_TYPES, SYNC_STATUSES};

use std::time::Duration;

use cairn_core::db::Db;
use cairn_jobs::schedule::Schedule;
use cairn_jobs::Registry;
use cairn_platform::app::AppState;
use cairn_platform::area::Area;

pub use routes::router;

/// The subscriptions' CVEs as automation's `subscription_match` trigger
/// reads them (the composition root hands this to the workflow area).
pub fn matches() -> cairn_workflow::automation::subscriptions::Subscriptions {
    cairn_workflow::automation::subscriptions::Subscriptions(std::sync::Arc::new(Matches))
}

struct Matches;

#[async_trait::async_trait]
impl cairn_workflow::automation::subscriptions::SubscriptionMatches for Matches {
    async fn matches_since(
        &self,
        db: &Db,
        tenant: &cairn_core::ids::TenantId,
        since: i64,
        limit: i64,
    ) -> sqlx::Result<Vec<cairn_workflow::automation::subscriptions::SubscriptionMatch>> {
        let (found, _) = storage::activity(db, tenant, since, (0, limit)).await?;
        Ok(found
            .into_iter()
            .map(
                |a| cairn_workflow::automation::subscriptions::SubscriptionMatch {
                    subscription_id: a.subscription_id,
                    sub_type: a.sub_type,
                    subscription_name: a.subscription_name,
                    cve_id: a.cve_id,
                    event: a.event.to_string(),
                    at: a.at,
                },
            )
            .collect())
    }
}

/// Registers the sync job.
pub fn area(state: &AppState) -> anyhow::Result<Area> {
    let mut jobs = Registry::default();
    jobs.register(
        sync::SYNC_KIND,
        sync::SyncHandler {
            config: cairn_vulnerabilities::reference::sources::SourceConfig::from_settings(
                &state.settings,
            ),
        },
        // NVD's pacing is 6 s a request without a key.
        Duration::from_secs(10 * 60),
    );
    let hours = state.settings.subscription_sync_hours;
    let mut area = Area::new("subscriptions")
        .routes("/api/v1/subscriptions/", router())
        .jobs(jobs);
    if hours > 0 {
        for schedule in schedules(state.db.clone(), hours) {
            area = area.schedule(schedule);
        }
    }
    Ok(area)
}

/// The schedule: every `subscription_sync_hours`, a sync of every
/// subscription of every tenant that has one; and every minute, a sync
/// for any subscription still waiting (its request outlived its job: the
/// run failed, or the service stopped between the request and the
/// enqueue).
pub fn schedules(db: Db, hours: u64) -> Vec<Schedule> {
    let period = Duration::from_secs(hours.max(1) * 3600);
    let sweep = Duration::from_secs(60);
    let all = db.clone();
    vec![
        Schedule::every("subscription sync", period, move || {
            let db = all.clone();
            async move { sync::request_all(&db).await }
        })
        .first_after(period),
        Schedule::every("subscription sync sweep", sweep, move || {
            let db = db.clone();
            async move { sync::enqueue_waiting(&db).await }
        })
        .first_after(sweep),
    ]
}
