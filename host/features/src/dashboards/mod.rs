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

mod catalog;
mod metrics;
mod routes;
mod snapshots;
mod storage;

pub use routes::router;
pub use snapshots::{record_all, spawn_schedule};
