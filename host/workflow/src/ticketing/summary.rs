//! The text of a ticket raised from a vulnerability: a summary within the
//! upstream's 100 characters and a description listing what an analyst
//! needs to act. Pure, so every rule is unit-tested.

use cairn_vulnerabilities::findings::views::FindingView;
use cairn_vulnerabilities::reference::store::CveDetail;

/// PSA products cap a ticket's summary at 100 characters.
pub const SUMMARY_CHARS: usize = 100;
/// Devices listed one per line in a description; the rest are counted.
const LISTED_DEVICES: usize = 50;

/// `[KEV] CVE-…: <application> on <n> device(s)`, cut to
/// [`SUMMARY_CHARS`] characters (not bytes) with an ellipsis.
pub fn summary(cve_id: &str, detail: Option<&CveDetail>, findings: &[FindingView]) -> String {
    let kev = if detail.is_some_and(|d| d.kev) {
        "[KEV] "
    } else {
        ""
    };
    let mut applications: Vec<&str> = findings
        .iter()
        .map(|f| f.application_name.as_str())
        .collect();
    applications.sort_unstable();
    applications.dedup();
    let devices = distinct_devices(findings).len();
    let what = match applications.as_slice() {
        [] => String::new(),
        [one] => format!(": {one}"),
        [first, rest @ ..] => format!(": {first} and {} more", rest.len()),
    };
    let on = match devices {
        0 => String::new(),
        1 => " on 1 device".into(),
        n => format!(" on {n} devices"),
    };
    truncated(&format!("{kev}{cve_id}{what}{on}"), SUMMARY_CHARS)
}

fn truncated(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(chars - 1).collect();
    cut.push('…');
    cut
}

/// The findings' devices, each once (ignoring case), by name.
pub fn distinct_devices(findings: &[FindingView]) -> Vec<&str> {
    let mut devices: Vec<&str> = findings.iter().map(|f| f.device_name.as_str()).collect();
    devices.sort_unstable_by_key(|d| d.to_lowercase());
    devices.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
    devices
}

/// The description: the CVE's severity, KEV and EPSS, its description,
/// then each affected device with the installed version and the fix.
pub fn description(cve_id: &str, detail: Option<&CveDetail>, findings: &[FindingView]) -> String {
    let mut out = String::new();
    match detail {
        Some(d) => {
            let severity = d
                .severity
                .as_deref()
                .map_or_else(|| "severity unknown".to_string(), str::to_uppercase);
            match (d.cvss_score, &d.cvss_version) {
                (Some(score), Some(version)) => out.push_str(&format!(
                    "{cve_id} ({severity}, CVSS {version} {score:.1})\n"
                )),
                _ => out.push_str(&format!("{cve_id} ({severity})\n")),
            }
            if d.kev {
                out.push_str(&format!(
                    "Known exploited: in CISA's KEV catalog since {}{}.{}\n",
                    d.kev_date_added.as_deref().unwrap_or("an unknown date"),
                    d.kev_due_date
                        .as_deref()
                        .map(|due| format!(", remediation due {due}"))
                        .unwrap_or_default(),
                    d.kev_required_action
                        .as_deref()
                        .map(|action| format!(" Required action: {action}"))
                        .unwrap_or_default(),
                ));
            } else {
                out.push_str("Not in CISA's KEV catalog.\n");
            }
            match (d.epss_score, d.epss_percentile) {
                (Some(score), Some(percentile)) => out.push_str(&format!(
                    "EPSS: {:.1}% chance of exploitation in 30 days (percentile {:.0}).\n",
                    score * 100.0,
                    percentile * 100.0
                )),
                _ => out.push_str("EPSS: no score.\n"),
            }
            if !d.description.is_empty() {
                out.push('\n');
                out.push_str(&d.description);
                out.push('\n');
            }
        }
        None => out.push_str(&format!(
            "{cve_id}: not in Cairn's CVE knowledge base yet.\n"
        )),
    }
    let devices = distinct_devices(findings);
    out.push_str(&format!("\nAffected devices ({}):\n", devices.len()));
    for device in devices.iter().take(LISTED_DEVICES) {
        for finding in findings
            .iter()
            .filter(|f| f.device_name.eq_ignore_ascii_case(device))
        {
            let fix = finding
                .fix_version
                .as_deref()
                .map(|fix| format!(", fixed in {fix}"))
                .unwrap_or_else(|| ", no fixed version known".into());
            out.push_str(&format!(
                "- {}: {} {}{fix}\n",
                finding.device_name, finding.application_name, finding.version
            ));
        }
    }
    if devices.len() > LISTED_DEVICES {
        out.push_str(&format!(
            "- and {} more devices (see Cairn)\n",
            devices.len() - LISTED_DEVICES
        ));
    }
    out.push_str("\nRaised by Cairn from its vulnerability findings.");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(device: &str, application: &str, version: &str, fix: Option<&str>) -> FindingView {
        FindingView {
            device_name: device.into(),
            application_name: application.into(),
            version: version.into(),
            cve_id: "CVE-2021-44228".into(),
            cpe: None,
            status: "open".into(),
            fix_version: fix.map(String::from),
            source: "nvd".into(),
            criteria: String::new(),
            match_id: None,
            version_range: String::new(),
            first_seen: String::new(),
            last_seen: String::new(),
            fixed_at: None,
            triage_status: "to_evaluate".into(),
            sla: None,
        }
    }

    fn detail(kev: bool) -> CveDetail {
        CveDetail {
            cve_id: "CVE-2021-44228".into(),
            description:
                "Apache Log4j2 JNDI features do not protect against attacker controlled LDAP."
                    .into(),
            status: "Analyzed".into(),
            published: None,
            last_modified: String::new(),
            severity: Some("critical".into()),
            cvss_score: Some(10.0),
            cvss_version: Some("3.1".into()),
            cvss_vector: None,
            weaknesses: vec![],
            references: serde_json::json!([]),
            epss_score: Some(0.97),
            epss_percentile: Some(0.999),
            kev,
            kev_date_added: kev.then(|| "2021-12-10".into()),
            kev_due_date: kev.then(|| "2021-12-24".into()),
            kev_required_action: kev.then(|| "Apply updates per vendor instructions.".into()),
            kev_ransomware_use: None,
            record_source: "nvd".into(),
        }
    }

    #[test]
    fn the_summary_names_kev_the_application_and_the_device_count() {
        let findings = [
            finding("WEB01", "Apache Log4j", "2.14.1", Some("2.17.1")),
            finding("web01", "Apache Log4j", "2.14.1", Some("2.17.1")),
            finding("APP02", "Apache Log4j", "2.16.0", Some("2.17.1")),
        ];
        assert_eq!(
            summary("CVE-2021-44228", Some(&detail(true)), &findings),
            "[KEV] CVE-2021-44228: Apache Log4j on 2 devices"
        );
        assert_eq!(
            summary("CVE-2021-44228", Some(&detail(false)), &findings[..1]),
            "CVE-2021-44228: Apache Log4j on 1 device"
        );
        assert_eq!(summary("CVE-2021-44228", None, &[]), "CVE-2021-44228");
    }

    #[test]
    fn a_long_summary_is_cut_to_100_characters_not_bytes() {
        let name = "Ünïcödé Äpplication ".repeat(10);
        let findings = [finding("WEB01", &name, "1.0", None)];
        let text = summary("CVE-2024-12345", None, &findings);
        assert_eq!(text.chars().count(), SUMMARY_CHARS);
        assert!(text.ends_with('…'));
        assert!(text.starts_with("CVE-2024-12345: Ünïcödé"));
    }

    #[test]
    fn the_description_lists_kev_epss_devices_versions_and_fixes() {
        let findings = [
            finding("WEB01", "Apache Log4j", "2.14.1", Some("2.17.1")),
            finding("APP02", "Apache Log4j", "2.16.0", None),
        ];
        let text = description("CVE-2021-44228", Some(&detail(true)), &findings);
        for expected in [
            "CVE-2021-44228 (CRITICAL, CVSS 3.1 10.0)",
            "in CISA's KEV catalog since 2021-12-10, remediation due 2021-12-24.",
            "EPSS: 97.0% chance",
            "JNDI features",
            "Affected devices (2):",
            "- WEB01: Apache Log4j 2.14.1, fixed in 2.17.1",
            "- APP02: Apache Log4j 2.16.0, no fixed version known",
        ] {
            assert!(text.contains(expected), "{expected:?} in {text}");
        }
        let text = description("CVE-2021-44228", Some(&detail(false)), &[]);
        assert!(text.contains("Not in CISA's KEV catalog."));
        assert!(text.contains("Affected devices (0):"));
    }
}
