//! A partner's views across its customers (`/api/v1/partner/overview`,
//! `/cves/{cve_id}`, `/applications`) and triage set once for many
//! customers (`/api/v1/partner/triage`).
//!
//! Every view starts from the customers the caller reaches
//! (`cairn_platform::partner::PartnerCaller`) and reads the owning areas'
//! functions over exactly those tenants: the vulnerabilities area's kept
//! per-tenant posture and exposures, the inventory's kept device counts and
//! applications, the job queue's last successful syncs. Nothing here reads
//! another area's tables.

mod routes;

pub use routes::{router, ORDERS, OVERVIEW_SORTS, PARTNER_TRIAGE_STATUSES};

/// The area's routes; it has no jobs or schedules.
pub fn area(_state: &cairn_platform::app::AppState) -> anyhow::Result<cairn_platform::area::Area> {
    Ok(cairn_platform::area::Area::new("partner views").routes("/api/v1/partner", router()))
}
