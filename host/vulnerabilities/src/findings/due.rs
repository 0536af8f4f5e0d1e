//! Where open findings stand against their remediation SLA, as the
//! vulnerability lists show it. The SLA is the workflow area's (above this
//! one): it computes due dates with its one function, and the composition
//! root hands that in as [`SlaDueDates`] (an axum extension), as the
//! inventory is handed the user directory.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use utoipa::ToSchema;

use cairn_core::db::Db;
use cairn_core::ids::TenantId;

/// An open finding against its SLA.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct FindingDue {
    /// RFC 3339; absent when no rule of the applied policy covers it.
    pub due_at: Option<String>,
    /// `within`, `due_soon`, `overdue` or `excepted`; absent without a due
    /// date.
    pub sla_state: Option<String>,
    /// Whole days until due, negative once overdue.
    pub days_left: Option<i64>,
    /// The device's tier.
    pub tier: String,
}

/// A finding's device, application, version and CVE.
pub type FindingKey = (String, String, String, String);

/// The SLA as the vulnerability lists read it.
#[async_trait]
pub trait DueDates: Send + Sync {
    /// The tenant's open findings (of `cves` when given) against their SLA
    /// at `now`.
    async fn due_of(
        &self,
        db: &Db,
        tenant: &TenantId,
        cves: Option<&[String]>,
        now: i64,
    ) -> sqlx::Result<HashMap<FindingKey, FindingDue>>;
}

/// The SLA the composition root hands the routes.
#[derive(Clone)]
pub struct SlaDueDates(pub Arc<dyn DueDates>);

/// A CVE's open findings against their SLA, on the per-CVE list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, ToSchema)]
pub struct CveDue {
    /// The soonest due date of its open findings (RFC 3339), excepted
    /// ones left out; absent when none has one.
    pub earliest_due_at: Option<String>,
    /// Its open findings overdue now.
    pub overdue: i64,
    /// Its open findings due soon (within the policy's warning days).
    pub due_soon: i64,
}

/// Each CVE's [`CveDue`] from its findings' [`FindingDue`]s.
pub fn per_cve(findings: &HashMap<FindingKey, FindingDue>) -> HashMap<String, CveDue> {
    let mut out: HashMap<String, CveDue> = HashMap::new();
    for ((_, _, _, cve), due) in findings {
        let entry = out.entry(cve.clone()).or_default();
        match due.sla_state.as_deref() {
            Some("overdue") => entry.overdue += 1,
            Some("due_soon") => entry.due_soon += 1,
            _ => {}
        }
        if due.sla_state.as_deref() == Some("excepted") {
            continue;
        }
        // RFC 3339 times of one zone order as text.
        if let Some(at) = &due.due_at {
            if entry.earliest_due_at.as_ref().is_none_or(|kept| at < kept) {
                entry.earliest_due_at = Some(at.clone());
            }
        }
    }
    out
}
