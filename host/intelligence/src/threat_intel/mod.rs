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
//!
//! `/api/v1/threat-intel` (a reserved id): `routes.rs` KEV, EPSS and exploit
//! references of a CVE with the tenant's exposure, EPSS high risk,
//! enrichment of one CVE now (`sources::nvd_lookup`, `sync_kev`,
//! `epss_lookup`), the research panel; `lookups.rs` IP and file-hash lookups
//! through the tenant's connectors of the `ip-reputation` and
//! `file-reputation` areas (`areas::invoke`, actions `check_ip` and
//! `check_hash`), their configs stored as those areas' integration configs
//! (`integrations::store_config`), and each answer kept per tenant in
//! `threat_intel_answers` for `cache_minutes`.

mod lookups;
mod routes;

pub use lookups::LOOKUPS;
pub use routes::{router, REFRESH_STATUSES};

/// The area's routes; it has no jobs or schedules.
pub fn area(_state: &cairn_platform::app::AppState) -> anyhow::Result<cairn_platform::area::Area> {
    Ok(cairn_platform::area::Area::new("threat intel").routes("/api/v1/threat-intel", router()))
}
