//! Research of one CVE: its record from the reference store, fetched from
//! NVD and stored when the store lacks it, so the next reader (and the
//! next match) has it too.

use crate::reference::sources::{self, SourceConfig, SourceError};
use crate::reference::store::{self, CveDetail};
use cairn_core::db::Db;

#[derive(Debug, thiserror::Error)]
pub enum ResearchError {
    #[error("{0} is not a CVE id (CVE-YYYY-NNNN)")]
    NotACveId(String),
    #[error("{0} is neither in the CVE store nor known to NVD")]
    Unknown(String),
    #[error("the CVE lookup failed: {0}")]
    Lookup(String),
    #[error("database: {0}")]
    Db(#[from] sqlx::Error),
}

/// A CVE's record and whether this request fetched it from NVD.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Researched {
    #[serde(flatten)]
    pub detail: CveDetail,
    /// The store lacked it: it was fetched from NVD now (and stored).
    pub fetched_from_nvd: bool,
}

/// `text` as a CVE id in upper case, if it is one (`CVE-` a four-digit year,
/// `-`, four or more digits).
pub fn cve_id(text: &str) -> Option<String> {
    let id = text.trim().to_uppercase();
    let mut parts = id.splitn(3, '-');
    let ok = parts.next() == Some("CVE")
        && parts
            .next()
            .is_some_and(|y| y.len() == 4 && y.bytes().all(|b| b.is_ascii_digit()))
        && parts
            .next()
            .is_some_and(|n| n.len() >= 4 && n.bytes().all(|b| b.is_ascii_digit()));
    ok.then_some(id)
}

/// The CVE ids a text names, upper-cased, each once, in order.
pub fn cve_ids_in(text: &str) -> Vec<String> {
    let mut found: Vec<String> = vec![];
    for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
        if let Some(id) = cve_id(word) {
            if !found.contains(&id) {
                found.push(id);
            }
        }
    }
    found
}

/// The record of `text` (a CVE id), from the store or else fetched from
/// NVD (and stored); whether it was fetched.
async fn one(db: &Db, config: &SourceConfig, text: &str) -> Result<Researched, ResearchError> {
    let id = cve_id(text).ok_or_else(|| ResearchError::NotACveId(text.to_string()))?;
    if let Some(detail) = store::cve_detail(db, &id).await? {
        return Ok(Researched {
            detail,
            fetched_from_nvd: false,
        });
    }
    match sources::nvd_lookup(db, config, &id).await {
        Ok(true) => {}
        Ok(false) => return Err(ResearchError::Unknown(id)),
        Err(SourceError::Db(err)) => return Err(err.into()),
        Err(err) => return Err(ResearchError::Lookup(err.to_string())),
    }
    let detail = store::cve_detail(db, &id)
        .await?
        .ok_or(ResearchError::Unknown(id))?;
    Ok(Researched {
        detail,
        fetched_from_nvd: true,
    })
}

/// The record of each of `texts` (CVE ids), in order: from the store or
/// else from NVD. A database failure fails the whole; any other failure is
/// that id's. Once any was fetched, tenants whose match is stale are
/// re-matched (once), since a new CVE may match what they run.
pub async fn cves(
    db: &Db,
    config: &SourceConfig,
    texts: &[String],
) -> Result<Vec<Result<Researched, ResearchError>>, sqlx::Error> {
    let mut out = Vec::with_capacity(texts.len());
    for text in texts {
        match one(db, config, text).await {
            Err(ResearchError::Db(err)) => return Err(err),
            other => out.push(other),
        }
    }
    if out
        .iter()
        .any(|r| r.as_ref().is_ok_and(|r| r.fetched_from_nvd))
    {
        crate::request_rescans(db).await?;
    }
    Ok(out)
}

impl From<ResearchError> for cairn_core::http::error::ApiError {
    fn from(err: ResearchError) -> Self {
        match err {
            ResearchError::NotACveId(_) => {
                cairn_core::http::error::ApiError::validation("cve_id", err.to_string())
            }
            ResearchError::Unknown(_) => {
                cairn_core::http::error::ApiError::Missing(err.to_string())
            }
            ResearchError::Lookup(_) => {
                cairn_core::http::error::ApiError::Upstream(err.to_string())
            }
            ResearchError::Db(err) => err.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cve_ids_are_found_in_free_text() {
        assert_eq!(
            cve_ids_in("[KEV] cve-2021-44228: Log4j; see CVE-2021-45046 and CVE-2021-44228."),
            ["CVE-2021-44228", "CVE-2021-45046"]
        );
        assert!(cve_ids_in("CVE-21-1 and CVE-2021-12").is_empty());
    }

    #[test]
    fn cve_ids_are_checked_and_upper_cased() {
        assert_eq!(cve_id(" cve-2024-3094 ").as_deref(), Some("CVE-2024-3094"));
        assert_eq!(cve_id("CVE-2021-44228").as_deref(), Some("CVE-2021-44228"));
        for bad in [
            "",
            "CVE-24-1234",
            "CVE-2024-123",
            "CVE-2024-12a4",
            "GHSA-xxxx",
            "CVE-2024",
        ] {
            assert_eq!(cve_id(bad), None, "{bad}");
        }
    }
}
