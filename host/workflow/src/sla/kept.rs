//! Each tenant's SLA standing, kept between reads so that a partner's
//! view over hundreds of customers is not a read of every finding.
//!
//! What is kept is a digest that does not depend on the time of the read:
//! the due dates of the open findings no exception covers (sorted), the
//! latest expiry of the exceptions covering the others, and the fixes with
//! whether each came by its due date. The standing at any later moment is
//! counted from it with the states of [`super::policy::state`], so it
//! agrees with the findings list. A digest is used while its stamp holds:
//! the tenant's findings and triage writes and the reference data
//! ([`cairn_vulnerabilities::findings::posture::stamps`]), the asset
//! tiers, every policy change, the tenant's exceptions and the partner's
//! groups it is in; at most [`KEEP_AT_MOST`], like the partner's posture
//! figures, for what moves with no write (a risk acceptance expiring).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::policy::{state, SlaState, DAY_MS};
use super::{Standing, TrackedFinding};
use cairn_core::db::Db;
use cairn_core::ids::TenantId;
pub use cairn_vulnerabilities::findings::posture::KEEP_AT_MOST;

/// The longest period a standing counts fixes over, in days.
pub const MAX_PERIOD_DAYS: i64 = 366;

/// A tenant's findings as the standing needs them, at any time after the
/// digest was built.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Digest {
    /// Due dates of the open findings no approved exception covers,
    /// ascending.
    due: Vec<i64>,
    /// Open findings with neither a due date nor an exception.
    untracked: i64,
    /// Open findings approved exceptions cover: the latest expiry among
    /// them, and the finding's due date.
    excepted: Vec<(i64, Option<i64>)>,
    /// Fixes with a due date: when, and whether by it; ascending.
    fixed: Vec<(i64, bool)>,
    due_soon_days: i64,
}

impl Digest {
    /// From the tenant's findings, each with the latest expiry of the
    /// approved exceptions covering it when open (from
    /// [`super::tracked_with_expiries`]).
    pub fn of(findings: &[(TrackedFinding, Option<i64>)], due_soon_days: i64) -> Digest {
        let mut digest = Digest {
            due_soon_days,
            ..Digest::default()
        };
        for (finding, expiry) in findings {
            if finding.status == "open" {
                match (expiry, finding.due_at) {
                    (Some(expiry), due) => digest.excepted.push((*expiry, due)),
                    (None, Some(due)) => digest.due.push(due),
                    (None, None) => digest.untracked += 1,
                }
            } else if let (Some(on_time), Some(at)) = (finding.fixed_on_time, finding.fixed_at) {
                digest.fixed.push((at, on_time));
            }
        }
        digest.due.sort_unstable();
        digest.fixed.sort_unstable();
        digest
    }

    /// The standing at `now` over the last `period_days` (at most
    /// [`MAX_PERIOD_DAYS`]).
    pub fn standing_at(&self, now: i64, period_days: i64) -> Standing {
        let mut out = Standing {
            open: (self.due.len() + self.excepted.len()) as i64 + self.untracked,
            within: 0,
            due_soon: 0,
            overdue: 0,
            excepted: 0,
            untracked: self.untracked,
            fixed: 0,
            fixed_on_time: 0,
            compliance_percent: None,
            period_days,
        };
        // `state` orders the due dates: overdue before `now`, due soon up
        // to `due_soon_days` after it, within past that (the test below
        // holds the two to the same counts).
        let overdue = self.due.partition_point(|due| *due < now);
        let soon = self
            .due
            .partition_point(|due| *due <= now + self.due_soon_days * DAY_MS);
        out.overdue += overdue as i64;
        out.due_soon += (soon - overdue) as i64;
        out.within += (self.due.len() - soon) as i64;
        for &(expiry, due) in &self.excepted {
            match due {
                _ if expiry > now => out.excepted += 1,
                Some(due) => match state(due, now, self.due_soon_days) {
                    SlaState::Overdue => out.overdue += 1,
                    SlaState::DueSoon => out.due_soon += 1,
                    _ => out.within += 1,
                },
                None => out.untracked += 1,
            }
        }
        let since = now - period_days * DAY_MS;
        let from = self.fixed.partition_point(|(at, _)| *at < since);
        for &(_, on_time) in &self.fixed[from..] {
            out.fixed += 1;
            out.fixed_on_time += i64::from(on_time);
        }
        if out.fixed > 0 {
            let percent = out.fixed_on_time as f64 * 100.0 / out.fixed as f64;
            out.compliance_percent = Some((percent * 10.0).round() / 10.0);
        }
        out
    }
}

/// Everything a digest depends on that a write moves.
#[derive(Debug, Clone, PartialEq)]
struct Stamp {
    findings: (i64, i64),
    tiers: i64,
    policies: i64,
    exceptions: (i64, i64, i64),
    groups: Vec<String>,
}

struct Kept {
    stamp: Stamp,
    at: Instant,
    /// The service's clock when it was built.
    built_at: i64,
    digest: Arc<Digest>,
}

/// Tenants kept at most (a bound on memory; past it, the store starts over).
const MAX_KEPT: usize = 100_000;

type Store = Mutex<HashMap<(u64, String), Kept>>;

fn store() -> &'static Store {
    static STORE: OnceLock<Store> = OnceLock::new();
    STORE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The standing of each of `tenants` at `now` over the last
/// `period_days`; `partner` is theirs, when they are its customers.
/// Kept digests answer where their stamp holds; the others are built
/// from the findings.
pub async fn standings(
    db: &Db,
    partner: Option<&TenantId>,
    tenants: &[TenantId],
    now: i64,
    period_days: i64,
) -> sqlx::Result<HashMap<String, Standing>> {
    if tenants.is_empty() {
        return Ok(HashMap::new());
    }
    let findings = cairn_vulnerabilities::findings::posture::stamps(db, tenants).await?;
    let tiers = cairn_inventory::tiers::stamps(db, tenants).await?;
    let exceptions = super::exceptions::stamps(db, tenants).await?;
    let policies = super::storage::policy_changes_count(db).await?;
    let mut groups: HashMap<String, Vec<String>> = HashMap::new();
    if let Some(partner) = partner {
        for (group, customer) in
            cairn_platform::partner::storage::group_members(db, partner).await?
        {
            groups.entry(customer).or_default().push(group);
        }
    }
    let stamp_of = |tenant: &TenantId| {
        let mut groups = groups.get(tenant.as_str()).cloned().unwrap_or_default();
        groups.sort();
        Stamp {
            findings: findings.of(tenant),
            tiers: tiers.get(tenant.as_str()).copied().unwrap_or(0),
            policies,
            exceptions: exceptions.get(tenant.as_str()).copied().unwrap_or_default(),
            groups,
        }
    };
    let mut out = HashMap::new();
    let mut stale = vec![];
    {
        let kept = store().lock().unwrap_or_else(|e| e.into_inner());
        for tenant in tenants {
            let stamp = stamp_of(tenant);
            match kept.get(&(db.instance(), tenant.0.clone())) {
                Some(k)
                    if k.stamp == stamp && k.at.elapsed() < KEEP_AT_MOST && k.built_at <= now =>
                {
                    out.insert(tenant.0.clone(), k.digest.standing_at(now, period_days));
                }
                _ => stale.push((tenant.clone(), stamp)),
            }
        }
    }
    for (tenant, stamp) in stale {
        let digest = Arc::new(build(db, &tenant, now).await?);
        out.insert(tenant.0.clone(), digest.standing_at(now, period_days));
        let mut kept = store().lock().unwrap_or_else(|e| e.into_inner());
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(
            (db.instance(), tenant.0),
            Kept {
                stamp,
                at: Instant::now(),
                built_at: now,
                digest,
            },
        );
    }
    Ok(out)
}

/// The tenant's digest from its findings now.
async fn build(db: &Db, tenant: &TenantId, now: i64) -> sqlx::Result<Digest> {
    let applied = super::applied(db, tenant).await?;
    let since = now - MAX_PERIOD_DAYS * DAY_MS;
    let findings =
        super::tracked_with_expiries(db, tenant, &applied.policy, now, since, None).await?;
    Ok(Digest::of(&findings, applied.policy.due_soon_days))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sla::policy::Tier;

    fn finding(status: &str, due_at: Option<i64>, fixed_at: Option<i64>) -> TrackedFinding {
        TrackedFinding {
            device_name: "WS-01".into(),
            application_name: "7-Zip".into(),
            version: "24.08".into(),
            cve_id: "CVE-2025-0411".into(),
            status: status.into(),
            severity: None,
            kev: false,
            epss_score: None,
            cvss_score: None,
            vendor: None,
            product: None,
            fix_version: None,
            tier: Tier::Standard,
            first_seen: 0,
            fixed_at,
            due_at,
            sla_state: None,
            days_left: None,
            fixed_on_time: match (due_at, fixed_at) {
                (Some(due), Some(fixed)) => Some(fixed <= due),
                _ => None,
            },
            exception_id: None,
        }
    }

    /// The standing a digest gives at each moment is the one counted
    /// finding by finding with `state`, as the findings list shows them.
    #[test]
    fn a_digest_counts_as_the_findings_list_does() {
        let day = DAY_MS;
        let base = 1_000 * day;
        let findings = vec![
            (finding("open", Some(base - day), None), None),
            (finding("open", Some(base), None), None),
            (finding("open", Some(base + 3 * day), None), None),
            (finding("open", Some(base + 7 * day), None), None),
            (finding("open", Some(base + 7 * day + 1), None), None),
            (finding("open", Some(base + 40 * day), None), None),
            (finding("open", None, None), None),
            (
                finding("open", Some(base - 2 * day), None),
                Some(base + 2 * day),
            ),
            (finding("open", None, None), Some(base + 10 * day)),
            (finding("fixed", Some(base), Some(base - 5 * day)), None),
            (
                finding("fixed", Some(base - 20 * day), Some(base - 10 * day)),
                None,
            ),
            (
                finding("fixed", Some(base - 200 * day), Some(base - 100 * day)),
                None,
            ),
        ];
        let digest = Digest::of(&findings, 7);
        for now in [
            base - 50 * day,
            base - day,
            base,
            base + 1,
            base + 2 * day,
            base + 30 * day,
        ] {
            for period in [1, 30, 366] {
                let mut expected = Standing {
                    open: 0,
                    within: 0,
                    due_soon: 0,
                    overdue: 0,
                    excepted: 0,
                    untracked: 0,
                    fixed: 0,
                    fixed_on_time: 0,
                    compliance_percent: None,
                    period_days: period,
                };
                for (f, expiry) in &findings {
                    if f.status == "open" {
                        expected.open += 1;
                        match (expiry.filter(|e| *e > now), f.due_at) {
                            (Some(_), _) => expected.excepted += 1,
                            (None, None) => expected.untracked += 1,
                            (None, Some(due)) => match state(due, now, 7) {
                                SlaState::Overdue => expected.overdue += 1,
                                SlaState::DueSoon => expected.due_soon += 1,
                                _ => expected.within += 1,
                            },
                        }
                    } else if f.fixed_at.unwrap() >= now - period * day {
                        expected.fixed += 1;
                        expected.fixed_on_time += i64::from(f.fixed_on_time.unwrap());
                    }
                }
                if expected.fixed > 0 {
                    let percent = expected.fixed_on_time as f64 * 100.0 / expected.fixed as f64;
                    expected.compliance_percent = Some((percent * 10.0).round() / 10.0);
                }
                let got = digest.standing_at(now, period);
                assert_eq!(
                    format!("{got:?}"),
                    format!("{expected:?}"),
                    "at {now}, over {period} days"
                );
            }
        }
    }
}
