//! A CVE researched: its record (from the store, else fetched from NVD
//! and stored) with what it means for the tenant.

use serde::Serialize;
use utoipa::ToSchema;

use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_vulnerabilities::findings::views::{self, AffectedVersion, FindingView};
use cairn_vulnerabilities::reference::research::{self, ResearchError, Researched};
use cairn_vulnerabilities::reference::sources::SourceConfig;
use cairn_workflow::tags::{self, EntityType, TagView};

/// Findings listed with a researched CVE at most; the counts cover all.
const LISTED_FINDINGS: i64 = 100;

#[derive(Debug, Serialize, ToSchema)]
pub struct CveResearch {
    /// The record: description, CVSS, CWE, references, KEV and EPSS.
    #[serde(flatten)]
    pub record: Researched,
    /// The tenant's devices with an open finding of it.
    pub affected_device_count: i64,
    /// Its open findings on the tenant's devices (the first 100 by device).
    pub affected_findings: Vec<FindingView>,
    /// The application versions it is open on, with the version that
    /// fixes it where known.
    pub affected_applications: Vec<AffectedVersion>,
    /// The tenant's tags on this CVE.
    pub tags: Vec<TagView>,
}

/// Researches `text` (a CVE id) for `tenant`.
pub async fn research_cve(
    db: &Db,
    config: &SourceConfig,
    tenant: &TenantId,
    text: &str,
) -> Result<CveResearch, ResearchError> {
    let id = research::cve_id(text).ok_or_else(|| ResearchError::NotACveId(text.to_string()))?;
    let record = research::cves(db, config, std::slice::from_ref(&id))
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| ResearchError::Unknown(id.clone()))??;
    let (affected_findings, _) =
        views::cve_findings(db, tenant, &id, "open", 0, LISTED_FINDINGS).await?;
    let affected_device_count = views::open_device_counts(db, tenant, std::slice::from_ref(&id))
        .await?
        .get(&id)
        .copied()
        .unwrap_or(0);
    Ok(CveResearch {
        record,
        affected_device_count,
        affected_findings,
        affected_applications: views::cve_affected_versions(db, tenant, &id).await?,
        tags: tags::tags_of(db, tenant, EntityType::Cve, &id).await?,
    })
}
