//! A remediation SLA policy and the one computation of a finding's due
//! date and state from it. Every surface that shows a due date calls
//! [`Policy::due_at`] and [`state`], so the figures agree everywhere.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use cairn_vulnerabilities::findings::views::DueFacts;

pub const DAY_MS: i64 = 86_400_000;

/// The longest a rule may give, in days (ten years).
pub const MAX_DAYS: i64 = 3650;

pub use cairn_inventory::tiers::Tier;

/// When a finding's clock starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[schema(as = SlaClockStart)]
#[serde(rename_all = "snake_case")]
pub enum ClockStart {
    /// When Cairn first saw the finding on the device.
    #[default]
    FirstSeen,
    /// When the CVE was published (first seen when it has no date).
    Published,
}

/// One rule: the findings it covers and the days they get. A condition
/// left out covers every finding; the first rule that covers a finding
/// gives its days.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = SlaRule)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// CVE severities covered (`critical`, `high`, `medium`, `low`,
    /// `none`, and `unscored` for a CVE without a score).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severities: Option<Vec<String>>,
    /// `true`: only CVEs in CISA's KEV catalog; `false`: only others.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kev: Option<bool>,
    /// Only CVEs whose EPSS probability is at least this (0 to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epss_at_least: Option<f64>,
    /// Device tiers covered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<Tier>>,
    /// Days from the clock's start to the due date, 1 to 3,650.
    pub days: i64,
}

const SEVERITIES: &[&str] = &["critical", "high", "medium", "low", "none", "unscored"];

impl Rule {
    fn covers(&self, facts: &DueFacts, tier: Tier) -> bool {
        let severity = facts.severity.as_deref().unwrap_or("unscored");
        self.severities
            .as_ref()
            .is_none_or(|s| s.iter().any(|s| s == severity))
            && self.kev.is_none_or(|kev| kev == (facts.kev != 0))
            && self
                .epss_at_least
                .is_none_or(|least| facts.epss_score.is_some_and(|score| score >= least))
            && self.tiers.as_ref().is_none_or(|t| t.contains(&tier))
    }
}

/// A policy: its rules in order, and how the clock runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(as = SlaPolicy)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// 1 to 100 characters.
    pub name: String,
    /// First match wins; a finding no rule covers has no due date. At
    /// least one, at most 50.
    pub rules: Vec<Rule>,
    /// A CVE in CISA's KEV catalog is due on CISA's date instead.
    #[serde(default = "yes")]
    pub kev_due_date: bool,
    #[serde(default)]
    pub clock_start: ClockStart,
    /// A finding is `due_soon` this many days before its due date (0 to
    /// 90; default 7).
    #[serde(default = "seven")]
    pub due_soon_days: i64,
    /// The longest an exception may set a finding aside, in days (1 to
    /// 365; default 90).
    #[serde(default = "ninety")]
    pub max_exception_days: i64,
}

fn yes() -> bool {
    true
}

fn seven() -> i64 {
    7
}

fn ninety() -> i64 {
    90
}

/// A policy that breaks a rule of its shape: the field (as a JSON path)
/// and why.
#[derive(Debug, PartialEq, Eq)]
pub struct Invalid {
    pub field: String,
    pub message: String,
}

impl Policy {
    /// The policy that applies where no one set one: 15 days for critical,
    /// 30 for high, 90 for medium, 180 for the rest, KEV CVEs on CISA's
    /// date (the spans CISA's BOD 19-02 and 22-01 set for agencies).
    pub fn built_in() -> Policy {
        let rule = |severities: Option<&[&str]>, days| Rule {
            severities: severities.map(|names| names.iter().map(|s| s.to_string()).collect()),
            kev: None,
            epss_at_least: None,
            tiers: None,
            days,
        };
        Policy {
            name: "Built-in".into(),
            rules: vec![
                rule(Some(&["critical"]), 15),
                rule(Some(&["high"]), 30),
                rule(Some(&["medium"]), 90),
                rule(None, 180),
            ],
            kev_due_date: true,
            clock_start: ClockStart::FirstSeen,
            due_soon_days: 7,
            max_exception_days: 90,
        }
    }

    /// Checks the policy's shape; the first fault found.
    pub fn check(&self) -> Result<(), Invalid> {
        let invalid = |field: String, message: &str| {
            Err(Invalid {
                field,
                message: message.into(),
            })
        };
        let name = self.name.trim();
        if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
            return invalid("name".into(), "must be 1 to 100 printable characters");
        }
        if self.rules.is_empty() || self.rules.len() > 50 {
            return invalid("rules".into(), "must hold 1 to 50 rules");
        }
        if !(0..=90).contains(&self.due_soon_days) {
            return invalid("due_soon_days".into(), "must be 0 to 90");
        }
        if !(1..=365).contains(&self.max_exception_days) {
            return invalid("max_exception_days".into(), "must be 1 to 365");
        }
        for (i, rule) in self.rules.iter().enumerate() {
            if !(1..=MAX_DAYS).contains(&rule.days) {
                return invalid(format!("rules[{i}].days"), "must be 1 to 3650");
            }
            if let Some(severities) = &rule.severities {
                if severities.is_empty()
                    || severities.iter().any(|s| !SEVERITIES.contains(&s.as_str()))
                {
                    return invalid(
                        format!("rules[{i}].severities"),
                        "must list critical, high, medium, low, none or unscored",
                    );
                }
            }
            if rule
                .epss_at_least
                .is_some_and(|p| !(0.0..=1.0).contains(&p) || p.is_nan())
            {
                return invalid(format!("rules[{i}].epss_at_least"), "must be 0 to 1");
            }
            if rule.tiers.as_ref().is_some_and(Vec::is_empty) {
                return invalid(format!("rules[{i}].tiers"), "must name at least one tier");
            }
        }
        Ok(())
    }

    /// When the finding is due (Unix ms), or `None` when no rule covers it.
    pub fn due_at(&self, facts: &DueFacts, tier: Tier) -> Option<i64> {
        if self.kev_due_date && facts.kev != 0 {
            if let Some(due) = facts.kev_due_date.as_deref().and_then(end_of_day_ms) {
                return Some(due);
            }
        }
        let start = match self.clock_start {
            ClockStart::FirstSeen => facts.first_seen,
            ClockStart::Published => facts.published.unwrap_or(facts.first_seen),
        };
        let rule = self.rules.iter().find(|rule| rule.covers(facts, tier))?;
        Some(start + rule.days * DAY_MS)
    }
}

/// The end (23:59:59.999 UTC) of a `YYYY-MM-DD` day, as Unix ms.
fn end_of_day_ms(date: &str) -> Option<i64> {
    let day = chrono::NaiveDate::parse_from_str(date, "%Y-%m-%d").ok()?;
    let start = day.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis();
    Some(start + DAY_MS - 1)
}

/// Where an open finding stands against its due date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SlaState {
    Within,
    DueSoon,
    Overdue,
    /// An approved exception sets it aside until the exception expires.
    Excepted,
}

impl SlaState {
    /// The states the SLA findings list filters on: an excepted finding
    /// is not tracked against a due date.
    pub const TRACKED: [&'static str; 3] = ["within", "due_soon", "overdue"];

    pub fn as_str(self) -> &'static str {
        match self {
            SlaState::Within => "within",
            SlaState::DueSoon => "due_soon",
            SlaState::Overdue => "overdue",
            SlaState::Excepted => "excepted",
        }
    }
}

/// The state of a finding due at `due` at `now`, with `due_soon_days` of
/// warning.
pub fn state(due: i64, now: i64, due_soon_days: i64) -> SlaState {
    if now > due {
        SlaState::Overdue
    } else if due - now <= due_soon_days * DAY_MS {
        SlaState::DueSoon
    } else {
        SlaState::Within
    }
}

/// Whole days from `now` to `due`: negative once overdue (-1 on the first
/// day over).
pub fn days_left(due: i64, now: i64) -> i64 {
    (due - now).div_euclid(DAY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(severity: Option<&str>, kev: Option<&str>, epss: Option<f64>) -> DueFacts {
        DueFacts {
            device_name: "WS-01".into(),
            application_name: "7-Zip".into(),
            version: "24.08".into(),
            cve_id: "CVE-2025-0411".into(),
            status: "open".into(),
            first_seen: 1_700_000_000_000,
            fixed_at: None,
            severity: severity.map(String::from),
            published: Some(1_600_000_000_000),
            kev: i64::from(kev.is_some()),
            kev_due_date: kev.map(String::from),
            epss_score: epss,
            cvss_score: None,
            vendor: Some("7-zip".into()),
            product: Some("7-zip".into()),
            fix_version: None,
        }
    }

    fn rule(days: i64) -> Rule {
        Rule {
            severities: None,
            kev: None,
            epss_at_least: None,
            tiers: None,
            days,
        }
    }

    #[test]
    fn the_first_rule_that_covers_a_finding_gives_its_days() {
        let policy = Policy {
            name: "Contract".into(),
            rules: vec![
                Rule {
                    tiers: Some(vec![Tier::Critical]),
                    severities: Some(vec!["critical".into(), "high".into()]),
                    ..rule(3)
                },
                Rule {
                    epss_at_least: Some(0.5),
                    ..rule(10)
                },
                Rule {
                    severities: Some(vec!["high".into()]),
                    ..rule(30)
                },
                Rule {
                    severities: Some(vec!["unscored".into()]),
                    ..rule(60)
                },
            ],
            kev_due_date: false,
            clock_start: ClockStart::FirstSeen,
            due_soon_days: 7,
            max_exception_days: 90,
        };
        let seen = 1_700_000_000_000;
        // (severity, epss, tier, days given; None when no rule covers it)
        type Case = (Option<&'static str>, Option<f64>, Tier, Option<i64>);
        let cases: &[Case] = &[
            (Some("high"), None, Tier::Critical, Some(3)),
            (Some("high"), None, Tier::Standard, Some(30)),
            (Some("high"), Some(0.7), Tier::Standard, Some(10)),
            (Some("high"), Some(0.49), Tier::Low, Some(30)),
            (Some("medium"), Some(0.5), Tier::Standard, Some(10)),
            (Some("medium"), None, Tier::Critical, None),
            (None, None, Tier::Standard, Some(60)),
        ];
        for &(severity, epss, tier, days) in cases {
            let due = policy.due_at(&facts(severity, None, epss), tier);
            assert_eq!(
                due,
                days.map(|d| seen + d * DAY_MS),
                "{severity:?} {epss:?} {tier:?}"
            );
        }
    }

    #[test]
    fn kev_cves_are_due_on_cisas_date_when_the_policy_says_so() {
        let kev = facts(Some("low"), Some("2025-02-13"), None);
        let mut policy = Policy::built_in();
        let cisa = policy.due_at(&kev, Tier::Standard).unwrap();
        assert_eq!(
            chrono::DateTime::from_timestamp_millis(cisa)
                .unwrap()
                .to_rfc3339(),
            "2025-02-13T23:59:59.999+00:00"
        );
        policy.kev_due_date = false;
        assert_eq!(
            policy.due_at(&kev, Tier::Standard),
            Some(kev.first_seen + 180 * DAY_MS),
            "the low rule instead"
        );
        policy.clock_start = ClockStart::Published;
        assert_eq!(
            policy.due_at(&kev, Tier::Standard),
            Some(kev.published.unwrap() + 180 * DAY_MS)
        );
    }

    #[test]
    fn a_finding_is_due_soon_then_overdue() {
        let due = 100 * DAY_MS;
        let cases = [
            (due - 8 * DAY_MS, SlaState::Within, 8),
            (due - 7 * DAY_MS, SlaState::DueSoon, 7),
            (due - 1, SlaState::DueSoon, 0),
            (due, SlaState::DueSoon, 0),
            (due + 1, SlaState::Overdue, -1),
            (due + 3 * DAY_MS, SlaState::Overdue, -3),
        ];
        for (now, expected, days) in cases {
            assert_eq!(state(due, now, 7), expected, "{now}");
            assert_eq!(days_left(due, now), days, "{now}");
        }
    }

    #[test]
    fn bad_policies_name_the_field() {
        let ok = Policy::built_in();
        assert_eq!(ok.check(), Ok(()));
        let cases: Vec<(Policy, &str)> = vec![
            (
                Policy {
                    name: " ".into(),
                    ..ok.clone()
                },
                "name",
            ),
            (
                Policy {
                    rules: vec![],
                    ..ok.clone()
                },
                "rules",
            ),
            (
                Policy {
                    due_soon_days: 91,
                    ..ok.clone()
                },
                "due_soon_days",
            ),
            (
                Policy {
                    rules: vec![rule(0)],
                    ..ok.clone()
                },
                "rules[0].days",
            ),
            (
                Policy {
                    rules: vec![
                        rule(5),
                        Rule {
                            severities: Some(vec!["urgent".into()]),
                            ..rule(5)
                        },
                    ],
                    ..ok.clone()
                },
                "rules[1].severities",
            ),
            (
                Policy {
                    rules: vec![Rule {
                        epss_at_least: Some(1.5),
                        ..rule(5)
                    }],
                    ..ok.clone()
                },
                "rules[0].epss_at_least",
            ),
            (
                Policy {
                    rules: vec![Rule {
                        tiers: Some(vec![]),
                        ..rule(5)
                    }],
                    ..ok.clone()
                },
                "rules[0].tiers",
            ),
        ];
        for (policy, field) in cases {
            assert_eq!(policy.check().unwrap_err().field, field);
        }
    }
}
