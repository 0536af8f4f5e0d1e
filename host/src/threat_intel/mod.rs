//! Threat intel on CVEs: exploitation (KEV, with ransomware use), its
//! likelihood (EPSS with percentile), exploit references, the tenant's
//! exposure, high-risk CVEs by EPSS, enrichment of one CVE now from NVD,
//! KEV and EPSS, and the research panel in one answer. Read and written
//! only through the vulnerabilities area's public functions.
//!
//! IP address and file hash lookups (connectors of the `threat-intel`
//! area) are not built yet.

mod routes;

pub use routes::router;
