//! Reference data: the CVE knowledge base every tenant shares, how it is
//! read from its publishers' formats, stored, and loaded. Nothing here
//! knows a tenant's software or findings.
//!
//! - Parsing (pure): `records` (NVD API 2.0 objects and CVE JSON 5 records
//!   into one model; `affected` reads CNA `affected[]` entries), `cpe`
//!   (CPE 2.3 names and the `vendor:product` key), `feeds` (KEV, EPSS,
//!   CWE), `osv` (distribution advisories, parsed and stored).
//! - Storage: `store` owns the global tables (`vuln_cves`,
//!   `vuln_match_rows`, `vuln_cpe_products`, `vuln_kev`, `vuln_epss`,
//!   `vuln_cwes`, source state, product change stamps); `osv` owns
//!   `vuln_osv_advisories` and `vuln_osv_ranges`; `attempts` every load
//!   attempt; `data_state` says how current the store is.
//! - Loads: `import` (`cairn vuln import`, offline files), `sources` (NVD,
//!   KEV, EPSS as jobs of the reserved tenant and `cairn vuln sync`),
//!   `research` (one CVE from the store, else fetched from NVD and kept).

pub mod affected;
pub mod attempts;
pub mod cpe;
pub mod data_state;
pub mod feeds;
pub mod import;
pub mod osv;
pub mod records;
pub mod research;
pub(crate) mod research_routes;
pub mod sources;
pub mod store;
