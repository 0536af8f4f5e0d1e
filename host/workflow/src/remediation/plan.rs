//! What a plan does for each device: pure decisions over the tenant's
//! findings, the RMM's devices and the attempts made before.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Value};

use crate::sla::TrackedFinding;
use cairn_inventory::tiers::device_key;

/// The RMM's view of one device.
#[derive(Debug, Clone)]
pub struct RmmDevice {
    /// The device's key in the connector's device collection.
    pub key: String,
    /// When the RMM last heard from it (Unix ms), when it says.
    pub last_seen: Option<i64>,
}

/// What a plan is made against.
pub struct Context<'a> {
    /// The connector's package-update remediation, when it offers one.
    pub update: Option<&'a str>,
    pub connector: &'a str,
    /// The RMM's devices by [`device_key`] of their names.
    pub devices: &'a HashMap<String, RmmDevice>,
    /// Attempts so far (under way, failed or disproved), by
    /// [`attempt_key`].
    pub attempts: &'a HashMap<(String, String), i64>,
    /// Those under way now, by [`attempt_key`]: not planned twice at once.
    pub under_way: &'a std::collections::HashSet<(String, String)>,
    pub max_attempts: i64,
    pub now: i64,
    pub offline_after_ms: i64,
}

/// The key attempts are counted under: one application on one device.
pub fn attempt_key(device: &str, application: &str) -> (String, String) {
    (device_key(device), application.to_lowercase())
}

/// One device's vulnerable application version, and what the plan does
/// about it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedItem {
    pub device_name: String,
    pub application_name: String,
    pub version: String,
    /// The plan's CVEs this version has on the device.
    pub cve_ids: Vec<String>,
    /// The lowest version that fixes them all.
    pub target_version: Option<String>,
    pub action: Option<String>,
    pub inputs: Option<Value>,
    pub device_key: Option<String>,
    /// Why it will not be remediated, as a sentence; `None`: it will.
    pub skipped: Option<String>,
}

fn when(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_default()
}

/// The plan's items for `findings` (the tenant's tracked findings, already
/// narrowed to the plan's CVEs and devices): one per device, application
/// and version with an open finding, in that order.
pub fn items(findings: &[TrackedFinding], context: &Context<'_>) -> Vec<PlannedItem> {
    let mut grouped: BTreeMap<(String, String, String), Vec<&TrackedFinding>> = BTreeMap::new();
    for finding in findings.iter().filter(|f| f.status == "open") {
        grouped
            .entry((
                finding.device_name.clone(),
                finding.application_name.clone(),
                finding.version.clone(),
            ))
            .or_default()
            .push(finding);
    }
    grouped
        .into_iter()
        .map(|((device, application, version), found)| {
            item(device, application, version, &found, context)
        })
        .collect()
}

fn item(
    device_name: String,
    application_name: String,
    version: String,
    found: &[&TrackedFinding],
    context: &Context<'_>,
) -> PlannedItem {
    let open: Vec<&&TrackedFinding> = found.iter().filter(|f| f.exception_id.is_none()).collect();
    let cves = |of: &[&&TrackedFinding]| -> Vec<String> {
        of.iter()
            .map(|f| f.cve_id.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let mut planned = PlannedItem {
        device_name,
        application_name,
        version,
        cve_ids: cves(&found.iter().collect::<Vec<_>>()),
        target_version: None,
        action: None,
        inputs: None,
        device_key: None,
        skipped: None,
    };
    if open.is_empty() {
        planned.skipped = Some(format!(
            "excepted: exception {} sets it aside",
            found[0].exception_id.as_deref().unwrap_or_default()
        ));
        return planned;
    }
    planned.cve_ids = cves(&open);
    let fixes: Vec<&str> = open
        .iter()
        .filter_map(|f| f.fix_version.as_deref())
        .collect();
    let Some(target) = cairn_inventory::version::newest(fixes.iter().copied()) else {
        planned.skipped = Some(format!(
            "no fixed version of {} is known for {}",
            planned.application_name,
            planned.cve_ids.join(", ")
        ));
        return planned;
    };
    if fixes.len() < open.len() {
        let unknown: Vec<&str> = open
            .iter()
            .filter(|f| f.fix_version.is_none())
            .map(|f| f.cve_id.as_str())
            .collect();
        planned.skipped = Some(format!(
            "no fixed version is known for {}, so an update cannot be chosen",
            unknown.join(", ")
        ));
        return planned;
    }
    planned.target_version = Some(target.to_string());
    let Some(update) = context.update else {
        planned.skipped = Some(format!(
            "the rmm connector {} offers no package update",
            context.connector
        ));
        return planned;
    };
    let Some(device) = context.devices.get(&device_key(&planned.device_name)) else {
        planned.skipped = Some(format!(
            "not managed by the RMM: the rmm connector has no device named {}",
            planned.device_name
        ));
        return planned;
    };
    if let Some(seen) = device.last_seen {
        if context.now - seen > context.offline_after_ms {
            planned.skipped = Some(format!(
                "offline: the RMM last heard from it on {}, more than {} hours ago",
                when(seen),
                context.offline_after_ms / 3_600_000
            ));
            return planned;
        }
    }
    let key = attempt_key(&planned.device_name, &planned.application_name);
    if context.under_way.contains(&key) {
        planned.skipped = Some(
            "a remediation of it is under way; it is judged by the next inventory first".into(),
        );
        return planned;
    }
    let tried = context.attempts.get(&key).copied().unwrap_or(0);
    if tried >= context.max_attempts {
        planned.skipped = Some(attempts_spent(tried, context.max_attempts));
        return planned;
    }
    planned.action = Some(update.to_string());
    planned.inputs = Some(json!({
        "package": planned.application_name,
        "version": target,
    }));
    planned.device_key = Some(device.key.clone());
    planned
}

/// The reason an item is left out after `tried` failed attempts.
pub fn attempts_spent(tried: i64, max: i64) -> String {
    format!(
        "remediated {tried} times already without a fix (the limit is {max}); not repeated, so an install cannot loop"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_inventory::tiers::Tier;

    fn finding(device: &str, version: &str, cve: &str, fix: Option<&str>) -> TrackedFinding {
        TrackedFinding {
            device_name: device.into(),
            application_name: "Google Chrome".into(),
            version: version.into(),
            cve_id: cve.into(),
            status: "open".into(),
            severity: Some("high".into()),
            kev: false,
            epss_score: None,
            cvss_score: None,
            vendor: Some("google".into()),
            product: Some("chrome".into()),
            fix_version: fix.map(String::from),
            tier: Tier::Standard,
            first_seen: 0,
            fixed_at: None,
            due_at: None,
            sla_state: None,
            days_left: None,
            fixed_on_time: None,
            exception_id: None,
        }
    }

    const NOW: i64 = 1_800_000_000_000;
    const HOUR: i64 = 3_600_000;

    #[test]
    fn each_device_gets_an_update_or_a_reason() {
        let devices: HashMap<String, RmmDevice> = [
            ("ws-01", Some(NOW - HOUR)),
            ("ws-02", Some(NOW - 240 * HOUR)),
            ("ws-03", None),
            ("ws-04", Some(NOW)),
            ("ws-07", Some(NOW)),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, (name, last_seen))| {
            (
                device_key(name),
                RmmDevice {
                    key: format!("{}", 100 + i),
                    last_seen,
                },
            )
        })
        .collect();
        let attempts: HashMap<(String, String), i64> = [
            (attempt_key("WS-04", "google chrome"), 2),
            (attempt_key("WS-07", "google chrome"), 1),
        ]
        .into();
        let under_way: std::collections::HashSet<(String, String)> =
            [attempt_key("WS-07", "Google Chrome")].into();
        let context = Context {
            update: Some("update_package"),
            connector: "acme-rmm",
            devices: &devices,
            attempts: &attempts,
            under_way: &under_way,
            max_attempts: 2,
            now: NOW,
            offline_after_ms: 24 * HOUR,
        };
        let mut excepted = finding("WS-05", "119.0", "CVE-2023-6345", Some("119.0.6045.199"));
        excepted.exception_id = Some("ex-1".into());
        let mut fixed = finding("WS-03", "118.0", "CVE-2023-6345", Some("119.0.6045.199"));
        fixed.status = "fixed".into();
        // Findings, then per item: device, target version, reason's start.
        type Expected<'a> = Vec<(&'a str, Option<&'a str>, Option<&'a str>)>;
        let cases: Vec<(Vec<TrackedFinding>, Expected)> = vec![
            // Two CVEs on one version: one item, the newer of the fixes.
            (
                vec![
                    finding("WS-01", "119.0", "CVE-2023-6345", Some("119.0.6045.199")),
                    finding("WS-01", "119.0", "CVE-2023-7024", Some("120.0.6099.129")),
                ],
                vec![("WS-01", Some("120.0.6099.129"), None)],
            ),
            (
                vec![finding(
                    "WS-02",
                    "119.0",
                    "CVE-2023-6345",
                    Some("119.0.6045.199"),
                )],
                vec![(
                    "WS-02",
                    Some("119.0.6045.199"),
                    Some("offline: the RMM last heard"),
                )],
            ),
            // No last contact known: not taken for offline.
            (
                vec![
                    finding("WS-03", "119.0", "CVE-2023-6345", Some("119.0.6045.199")),
                    fixed,
                ],
                vec![("WS-03", Some("119.0.6045.199"), None)],
            ),
            (
                vec![finding(
                    "WS-04",
                    "119.0",
                    "CVE-2023-6345",
                    Some("119.0.6045.199"),
                )],
                vec![(
                    "WS-04",
                    Some("119.0.6045.199"),
                    Some("remediated 2 times already"),
                )],
            ),
            (
                vec![excepted],
                vec![("WS-05", None, Some("excepted: exception ex-1"))],
            ),
            (
                vec![finding(
                    "WS-06",
                    "119.0",
                    "CVE-2023-6345",
                    Some("119.0.6045.199"),
                )],
                vec![(
                    "WS-06",
                    Some("119.0.6045.199"),
                    Some("not managed by the RMM"),
                )],
            ),
            (
                vec![finding(
                    "WS-07",
                    "119.0",
                    "CVE-2023-6345",
                    Some("119.0.6045.199"),
                )],
                vec![(
                    "WS-07",
                    Some("119.0.6045.199"),
                    Some("a remediation of it is under way"),
                )],
            ),
            (
                vec![
                    finding("WS-01", "119.0", "CVE-2023-6345", Some("119.0.6045.199")),
                    finding("WS-01", "119.0", "CVE-2099-0001", None),
                ],
                vec![(
                    "WS-01",
                    None,
                    Some("no fixed version is known for CVE-2099-0001"),
                )],
            ),
            (
                vec![finding("WS-01", "119.0", "CVE-2099-0001", None)],
                vec![("WS-01", None, Some("no fixed version of Google Chrome"))],
            ),
        ];
        for (findings, expected) in cases {
            let planned = items(&findings, &context);
            assert_eq!(planned.len(), expected.len(), "{findings:?}");
            for (item, (device, target, reason)) in planned.iter().zip(expected) {
                assert_eq!(item.device_name, device);
                assert_eq!(item.target_version.as_deref(), target, "{item:?}");
                match reason {
                    None => {
                        assert_eq!(item.skipped, None);
                        assert_eq!(item.action.as_deref(), Some("update_package"));
                        assert_eq!(item.inputs.as_ref().unwrap()["version"], target.unwrap());
                        assert!(item.device_key.is_some());
                    }
                    Some(start) => {
                        let said = item.skipped.as_deref().unwrap_or_default();
                        assert!(said.starts_with(start), "{said:?} for {device}");
                        assert_eq!(item.action, None);
                    }
                }
            }
        }
        let without = Context {
            update: None,
            ..context
        };
        let planned = items(
            &[finding(
                "WS-01",
                "119.0",
                "CVE-2023-6345",
                Some("119.0.6045.199"),
            )],
            &without,
        );
        assert_eq!(
            planned[0].skipped.as_deref(),
            Some("the rmm connector acme-rmm offers no package update")
        );
    }
}
