//! Threat intel on CVEs: exploitation (KEV, with ransomware use), its
//! likelihood (EPSS with percentile), exploit references, the tenant's
//! exposure, high-risk CVEs by EPSS, enrichment of one CVE now from NVD,
//! KEV and EPSS, and the research panel in one answer. Read and written
//! only through the vulnerabilities area's public functions.
//!
//! IP address and file hash lookups (`lookups.rs`) go through the tenant's
//! connectors of two areas, `ip-reputation` and `file-reputation`, so a
//! tenant may use any product for each; `POST /threat-intel/config`
//! configures both (stored as those areas' integration configs) and the
//! time answers are reused.

mod lookups;
mod routes;

pub use routes::router;
