//! Whether the CVE store findings are matched against holds anything, and
//! how current it is: answers that count findings say so, so an empty
//! list on a new machine reads as "nothing loaded yet", not "nothing
//! vulnerable".

use serde::Serialize;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, Db};
use cairn_core::settings::Settings;

/// How current the CVE store is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CveStore {
    /// No CVE record: every scan finds nothing.
    Empty,
    /// NVD has not loaded for more than twice its interval, or its last
    /// attempt failed: recent CVEs may be missing.
    Stale,
    Current,
}

/// The CVE store's state, as list, statistics and scan answers carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct DataState {
    pub cve_store: CveStore,
    /// What it means and what to do, when the store is not current.
    pub detail: Option<String>,
}

/// Reads the state: one indexed probe of the CVE table and the NVD
/// source's attempts.
pub async fn data_state(db: &Db, settings: &Settings) -> sqlx::Result<DataState> {
    let any: Option<String> = sqlx::query_scalar("SELECT id FROM vuln_cves LIMIT 1")
        .fetch_optional(&db.pool)
        .await?;
    let attempts = crate::reference::attempts::of(db, crate::reference::sources::NVD).await?;
    let failing = attempts
        .as_ref()
        .filter(|a| a.failures > 0)
        .and_then(|a| a.last_error.clone());
    let how = "load it with `cairn vuln bootstrap`, or offline with `cairn vuln import`; \
               GET /api/v1/vulnerabilities/sources shows each source";
    if any.is_none() {
        let why = match failing {
            Some(error) => format!(" (the last NVD load failed: {error})"),
            None => String::new(),
        };
        return Ok(DataState {
            cve_store: CveStore::Empty,
            detail: Some(format!(
                "The CVE store is empty{why}, so no finding can be matched: {how}."
            )),
        });
    }
    let interval = crate::reference::sources::interval(settings, crate::reference::sources::NVD)
        .as_millis() as i64;
    let last_success = attempts.as_ref().and_then(|a| a.last_success_at);
    let old = last_success.is_some_and(|at| now_ms() - at > 2 * interval);
    let detail = match (failing, old) {
        (Some(error), _) => Some(format!(
            "NVD has not loaded since its last attempt failed ({error}); recent CVEs may be \
             missing: {how}."
        )),
        (None, true) => Some(format!(
            "NVD last loaded more than twice its interval ago; recent CVEs may be missing: {how}."
        )),
        (None, false) => None,
    };
    Ok(DataState {
        cve_store: if detail.is_some() {
            CveStore::Stale
        } else {
            CveStore::Current
        },
        detail,
    })
}
