//! Dashboards: per-user dashboards (private or shared with the tenant)
//! of widgets, each showing a named metric of one catalog evaluated by one
//! engine, optionally narrowed by a device search query; and the daily
//! snapshot of the tenant's key figures that trends are drawn from.
//!
//! - `catalog.rs`: the metrics, their parameters and shapes, the widget
//!   types; `metrics.rs`: data sources checked and evaluated, through the
//!   public figures of the vulnerabilities, devices and integrations areas;
//! - `snapshots.rs`: `dashboard_daily_figures` and its hourly schedule;
//! - `storage.rs`: `dashboards` and `dashboard_widgets`;
//!   `routes.rs`: `/api/v1/dashboards`.
//!
//! Dashboards. `catalog.rs` the named metrics (parameters, shape, whether a
//! device query narrows them) and the widget types with the shapes they
//! show; `metrics.rs` checks a data source and evaluates it through the
//! owning areas' public figures (`vulnerabilities::findings::figures` over findings,
//! `devices/figures.rs` over assets and the assets a device search query
//! matches through `inventory::search::all_matching`,
//! `integrations::sync_health` from the sync jobs) and this area's
//! snapshots; `snapshots.rs` `dashboard_daily_figures` (today's row
//! rewritten hourly for tenants with a dashboard; a trend reads today live);
//! `storage.rs` `dashboards` and `dashboard_widgets`; `routes.rs`
//! `/api/v1/dashboards`.

mod catalog;
mod metrics;
mod routes;
mod snapshots;
mod storage;

pub use routes::router;
pub use snapshots::{record_all, schedule};

/// Dashboards: their routes and the daily snapshot of key figures.
pub fn area(state: &cairn_platform::app::AppState) -> anyhow::Result<cairn_platform::area::Area> {
    Ok(cairn_platform::area::Area::new("dashboards")
        .routes("/api/v1/dashboards", router())
        .schedule(schedule(state.db.clone())))
}
