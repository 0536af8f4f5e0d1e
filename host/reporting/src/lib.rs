//! Reporting: what is shown and sent. Dashboards of widgets over one
//! catalog of metrics and their daily snapshots; reports (PDF, CSV, XLSX)
//! written in the background; a partner's views across its customers.
//!
//! - Owns `dashboards`, `dashboard_widgets`, `dashboard_daily_figures` and
//!   `reports` (and the report files in the blob store).
//! - Faces: each module's `router()`; the report job (`reports::register`),
//!   report retention and the daily dashboard snapshot (schedules).
//! - Calls: the figures of the inventory (`devices::figures`) and of the
//!   vulnerabilities, the integrations' sync status and the platform's
//!   partner scope, through their public functions. Reads no table it
//!   does not own.

pub mod dashboards;
pub mod partner;
pub mod reports;
