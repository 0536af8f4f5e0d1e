//! News feeds: per-tenant RSS, Atom and JSON Feed subscriptions, refreshed
//! by a durable job with conditional GET, items stored once and classified
//! (category, severity, CVEs, vendors and products, relevance to the
//! tenant's inventory) by a model endpoint when configured, else by rules.
//!
//! - `fetch.rs`: the outbound fetch and the parse (`feed-rs`);
//! - `classify.rs`: both classifiers and the relevance;
//! - `refresh.rs`: the `news_refresh` and `news_classify` jobs;
//! - `storage.rs`: the tables; `routes.rs`: `/api/v1/news-feeds`;
//! - `defaults.rs`: the feeds `seed` adds.
//!
//! News feeds. `fetch.rs` GETs a feed through the outbound path
//! (conditional, with the last `ETag`/`Last-Modified`) and reads RSS, Atom
//! or JSON Feed with `feed-rs`, keying each item by guid, else link, else
//! title and date; `classify.rs` the rules classifier, the model's schema,
//! and the relevance (the tenant's application and vendor names matched as
//! whole folded words by one Aho-Corasick automaton, and the CVEs it has
//! open findings of); `refresh.rs` the `news_refresh` and `news_classify`
//! jobs; `storage.rs` `news_feeds`, `news_items`, `news_item_cves` and the
//! per-user `news_item_reads`; `routes.rs` `/api/v1/news-feeds`;
//! `defaults.rs` the seeded feeds. A schedule in `mod.rs` queues a refresh
//! of every tenant with feeds.

mod classify;
mod defaults;
mod fetch;
mod refresh;
mod routes;
mod storage;

use std::time::Duration;

use cairn_core::db::Db;
use cairn_jobs::schedule::Schedule;
use cairn_jobs::Registry;
use cairn_platform::app::AppState;
use cairn_platform::area::Area;

pub use classify::{CATEGORIES, RELEVANCE_KINDS, SEVERITIES};
pub use routes::router;
pub use storage::{FEED_FORMATS, FETCH_STATUSES};

/// Registers the refresh and classification jobs.
pub fn area(state: &AppState) -> anyhow::Result<Area> {
    let minutes = state.settings.news_refresh_minutes;
    Ok(Area::new("news")
        .routes("/api/v1/news-feeds", router())
        .jobs(jobs(&state.settings))
        .schedule_if(minutes > 0, || schedule(state.db.clone(), minutes)))
}

fn jobs(settings: &cairn_core::settings::Settings) -> Registry {
    let mut registry = Registry::default();
    // A model request may take `model_timeout_secs`; a feed 30 s.
    let stall = Duration::from_secs(settings.model_timeout_secs.max(30) * 3);
    registry.register(
        refresh::REFRESH_KIND,
        refresh::RefreshHandler {
            settings: settings.clone(),
        },
        stall,
    );
    registry.register(
        refresh::CLASSIFY_KIND,
        refresh::ClassifyHandler {
            settings: settings.clone(),
        },
        stall,
    );
    registry
}

/// The schedule: every `news_refresh_minutes`, a refresh of each tenant
/// with feeds (a refresh already waiting absorbs the new one).
pub fn schedule(db: Db, minutes: u64) -> Schedule {
    let period = Duration::from_secs(minutes.max(1) * 60);
    Schedule::every("news refresh", period, move || {
        let db = db.clone();
        async move { refresh::enqueue_all(&db).await }
    })
    .first_after(period)
}
