//! Research: one place to answer "does this CVE or product touch my
//! customers": a CVE's record with the tenant's affected devices and
//! applications (`cve.rs`), a product's CVEs and the versions the tenant
//! runs (`product.rs`), the history of both (`history.rs`), version
//! compliance against the tenant's minimum versions (`versions.rs`,
//! `rules.rs`) and weaknesses (`weaknesses.rs`). The CVE store, findings
//! and inventory are read only through their areas' public functions.
//!
//! `/api/v1/research`, `/versions` and `/weaknesses`. `cve.rs` a CVE
//! researched for a tenant (the record through `vulnerabilities::research`,
//! findings through `views`, tags through `tags::tags_of`); `product.rs` a
//! product (by CPE name or by the tenant's application through its stored
//! identifications) with its CVEs and the versions the tenant runs;
//! `history.rs` `research_history`; `versions.rs` the version definitions
//! (vulnerable, fix version, compliant, outdated) over
//! `inventory::storage::application_summaries` and
//! `vulnerabilities::findings::figures::open_findings`; `rules.rs` `version_rules`;
//! `weaknesses.rs` the routes over `vulnerabilities::findings::weaknesses` (which
//! counts through `vuln_cve_cwes`, the CVE-to-CWE index `write_cves` keeps).

mod cve;
mod history;
mod product;
mod routes;
mod rules;
mod versions;
mod weaknesses;

pub use cve::{research_cve, CveResearch};
pub use history::KINDS as HISTORY_KINDS;
pub use routes::{router, COMPLIANCE_FILTERS};

/// The area's routes; it has no jobs or schedules.
pub fn area(_state: &cairn_platform::app::AppState) -> anyhow::Result<cairn_platform::area::Area> {
    Ok(cairn_platform::area::Area::new("research").routes("/api/v1", router()))
}
