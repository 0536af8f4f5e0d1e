//! Research: one place to answer "does this CVE or product touch my
//! customers": a CVE's record with the tenant's affected devices and
//! applications (`cve.rs`), a product's CVEs and the versions the tenant
//! runs (`product.rs`), the history of both (`history.rs`), version
//! compliance against the tenant's minimum versions (`versions.rs`,
//! `rules.rs`) and weaknesses (`weaknesses.rs`). The CVE store, findings
//! and inventory are read only through their areas' public functions.

mod cve;
mod history;
mod product;
mod routes;
mod rules;
mod versions;
mod weaknesses;

pub use cve::{research_cve, CveResearch};
pub use routes::router;
