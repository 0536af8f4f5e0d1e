//! Whether an installed version is inside the versions a CVE's match rows
//! name, and what version fixes it. Pure: rows in, hits out.

use std::cmp::Ordering;

use crate::reference::cpe;
use crate::reference::records::CandidateRow;
use crate::reference::records::{platform_satisfies, MatchRow, SOURCE_CNA};
use cairn_inventory::version::compare_release;

/// One CVE an installed version is vulnerable to, with its provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub cve_id: String,
    pub source: String,
    pub criteria: String,
    pub match_id: Option<String>,
    /// The range evaluated, e.g. `>= 2.0.1, < 2.3.1`.
    pub range: String,
    pub fix_version: Option<String>,
}

/// Whether a version string can be compared at all: it has a digit.
fn comparable(version: &str) -> bool {
    version.bytes().any(|b| b.is_ascii_digit())
}

/// The rows of one product that apply to a device of `platform`, leaving
/// out rejected CVEs, non-vulnerable and negated entries, CNA rows of CVEs
/// NVD configured, and targets or AND-platforms the device is not.
fn applies(candidate: &CandidateRow, platform: Option<&str>) -> bool {
    let row = &candidate.row;
    if candidate.rejected || !row.vulnerable || row.negate {
        return false;
    }
    if candidate.source == SOURCE_CNA && candidate.has_nvd_config {
        return false;
    }
    match cpe::target_platform(&row.target_sw) {
        cpe::Target::Elsewhere => return false,
        cpe::Target::Platform(target) if platform.is_some_and(|p| p != target) => return false,
        _ => {}
    }
    row.platforms.is_empty() || platform_satisfies(&row.platforms, platform)
}

/// `Some(range text)` when `version` is inside the row's versions.
fn contains(row: &MatchRow, version: &str) -> Option<String> {
    if row.version_start.is_some() || row.version_end.is_some() {
        let mut parts = vec![];
        if let Some(start) = &row.version_start {
            let order = compare_release(version, start);
            let inside = if row.start_including {
                order != Ordering::Less
            } else {
                order == Ordering::Greater
            };
            if !inside {
                return None;
            }
            parts.push(format!(
                "{} {start}",
                if row.start_including { ">=" } else { ">" }
            ));
        }
        if let Some(end) = &row.version_end {
            let order = compare_release(version, end);
            let inside = if row.end_including {
                order != Ordering::Greater
            } else {
                order == Ordering::Less
            };
            if !inside {
                return None;
            }
            parts.push(format!(
                "{} {end}",
                if row.end_including { "<=" } else { "<" }
            ));
        }
        return Some(parts.join(", "));
    }
    match row.cpe_version.as_str() {
        "-" => None,
        v if cpe::is_any(v) => Some("all versions".into()),
        exact => {
            let exact = if cpe::is_any(&row.cpe_update) || row.cpe_update == "-" {
                exact.to_string()
            } else {
                format!("{exact}-{}", update_suffix(&row.cpe_update))
            };
            (compare_release(version, &exact) == Ordering::Equal).then(|| format!("= {exact}"))
        }
    }
}

/// A CPE `update` as installed versions spell it: Java's `update_351` and
/// `update351` are `_351` (`1.8.0_351`), sudo's `patch1` is `p1`
/// (`1.9.5p1`); other updates (`rc1`, `sp2`, `p1`) as they are.
fn update_suffix(update: &str) -> String {
    let update = update.to_ascii_lowercase();
    if let Some(number) = update
        .strip_prefix("update")
        .map(|n| n.trim_start_matches(['_', '-']))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    {
        return number.to_string();
    }
    match update.strip_prefix("patch") {
        Some(number) if number.bytes().all(|b| b.is_ascii_digit()) => format!("p{number}"),
        _ => update,
    }
}

/// The CVEs `version` of a product is vulnerable to on `platform`, one hit
/// per CVE (NVD's row preferred), with the smallest exclusive upper bound
/// above the version among the CVE's applicable rows as its fix.
pub fn evaluate(rows: &[CandidateRow], version: &str, platform: Option<&str>) -> Vec<Hit> {
    let version = version.trim();
    if version.is_empty() || !comparable(version) {
        return vec![];
    }
    let mut hits: Vec<Hit> = Vec::new();
    for candidate in rows.iter().filter(|c| applies(c, platform)) {
        let Some(range) = contains(&candidate.row, version) else {
            continue;
        };
        if let Some(existing) = hits.iter_mut().find(|h| h.cve_id == candidate.cve_id) {
            if existing.source == SOURCE_CNA && candidate.source != SOURCE_CNA {
                existing.source = candidate.source.clone();
                existing.criteria = candidate.row.criteria.clone();
                existing.match_id = candidate.row.match_id.clone();
                existing.range = range;
            }
            continue;
        }
        hits.push(Hit {
            cve_id: candidate.cve_id.clone(),
            source: candidate.source.clone(),
            criteria: candidate.row.criteria.clone(),
            match_id: candidate.row.match_id.clone(),
            range,
            fix_version: None,
        });
    }
    for hit in &mut hits {
        hit.fix_version = rows
            .iter()
            .filter(|c| c.cve_id == hit.cve_id && applies(c, platform))
            .filter(|c| !c.row.end_including)
            .filter_map(|c| c.row.version_end.as_deref())
            .filter(|end| compare_release(end, version) == Ordering::Greater)
            .min_by(|a, b| compare_release(a, b))
            .map(str::to_string);
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(criteria: &str) -> MatchRow {
        let cpe = cpe::Cpe::parse(criteria).unwrap();
        MatchRow {
            vendor: cpe.vendor,
            product: cpe.product,
            part: cpe.part,
            cpe_version: cpe.version,
            cpe_update: cpe.update,
            target_sw: cpe.target_sw,
            criteria: criteria.into(),
            match_id: Some("M".into()),
            version_start: None,
            start_including: true,
            version_end: None,
            end_including: false,
            vulnerable: true,
            negate: false,
            platforms: vec![],
        }
    }

    fn candidate(cve: &str, row: MatchRow) -> CandidateRow {
        CandidateRow {
            cve_id: cve.into(),
            source: "nvd".into(),
            row,
            rejected: false,
            has_nvd_config: true,
        }
    }

    fn cves(rows: &[CandidateRow], version: &str, platform: Option<&str>) -> Vec<String> {
        evaluate(rows, version, platform)
            .into_iter()
            .map(|h| h.cve_id)
            .collect()
    }

    #[test]
    fn bounds() {
        let base = row("cpe:2.3:a:apache:log4j:*:*:*:*:*:*:*:*");
        let rows = vec![
            candidate(
                "START-INCL",
                MatchRow {
                    version_start: Some("2.0".into()),
                    version_end: Some("2.3".into()),
                    ..base.clone()
                },
            ),
            candidate(
                "START-EXCL",
                MatchRow {
                    version_start: Some("2.0".into()),
                    start_including: false,
                    version_end: Some("2.3".into()),
                    ..base.clone()
                },
            ),
            candidate(
                "END-INCL",
                MatchRow {
                    version_end: Some("2.3".into()),
                    end_including: true,
                    ..base.clone()
                },
            ),
        ];
        assert_eq!(cves(&rows, "2.0", None), ["START-INCL", "END-INCL"]);
        assert_eq!(cves(&rows, "2.0.0", None), ["START-INCL", "END-INCL"]);
        assert_eq!(
            cves(&rows, "2.1", None),
            ["START-INCL", "START-EXCL", "END-INCL"]
        );
        assert_eq!(cves(&rows, "2.3", None), ["END-INCL"]);
        assert!(cves(&rows, "2.3.1", None).is_empty());
        assert_eq!(cves(&rows, "2.0-rc1", None), ["END-INCL"]);
        assert!(cves(&rows, "", None).is_empty());
        assert!(cves(&rows, "unknown", None).is_empty());
        let hits = evaluate(&rows, "2.1", None);
        assert_eq!(hits[0].fix_version.as_deref(), Some("2.3"));
        assert_eq!(hits[0].range, ">= 2.0, < 2.3");
        assert_eq!(hits[2].fix_version, None);
    }

    #[test]
    fn exclusions() {
        let firefox = row("cpe:2.3:a:mozilla:firefox:*:*:*:*:*:*:*:*");
        let android = row("cpe:2.3:a:mozilla:firefox:*:*:*:*:*:android:*:*");
        let windows = row("cpe:2.3:a:zoom:meetings:*:*:*:*:*:windows:*:*");
        let ranged = |r: MatchRow| MatchRow {
            version_end: Some("100".into()),
            ..r
        };
        let mut rejected = candidate("REJECTED", ranged(firefox.clone()));
        rejected.rejected = true;
        let not_vulnerable = candidate(
            "NOT-VULNERABLE",
            MatchRow {
                vulnerable: false,
                ..ranged(firefox.clone())
            },
        );
        let and_node = candidate(
            "AND-WINDOWS",
            MatchRow {
                platforms: vec!["cpe:2.3:o:microsoft:windows:-:*:*:*:*:*:*:*".into()],
                ..ranged(firefox.clone())
            },
        );
        let mut cna = candidate("CNA-SHADOWED", ranged(firefox.clone()));
        cna.source = "cna".into();
        let rows = vec![
            rejected,
            not_vulnerable,
            candidate("ANDROID", ranged(android)),
            candidate("WINDOWS-ONLY", ranged(windows)),
            and_node,
            cna,
        ];
        assert_eq!(
            cves(&rows, "99", Some("windows")),
            ["WINDOWS-ONLY", "AND-WINDOWS"]
        );
        assert!(cves(&rows, "99", Some("macos")).is_empty());
    }

    #[test]
    fn exact_versions_and_updates() {
        let rows = vec![
            candidate(
                "EXACT",
                row("cpe:2.3:a:google:chrome:112.0.5615.49:*:*:*:*:*:*:*"),
            ),
            candidate("RC", row("cpe:2.3:a:apache:log4j:2.0:rc1:*:*:*:*:*:*")),
            candidate("NA", row("cpe:2.3:a:vendor:thing:-:*:*:*:*:*:*:*")),
        ];
        assert_eq!(cves(&rows, "112.0.5615.49", None), ["EXACT"]);
        assert_eq!(cves(&rows, "2.0-rc1", None), ["RC"]);
        assert!(cves(&rows, "2.0", None).is_empty());
        let rows = vec![
            candidate(
                "JAVA",
                row("cpe:2.3:a:oracle:jre:1.8.0:update_351:*:*:*:*:*:*"),
            ),
            candidate(
                "JAVA-NO-SEP",
                row("cpe:2.3:a:oracle:jdk:1.8.0:update361:*:*:*:*:*:*"),
            ),
            candidate(
                "SUDO",
                row("cpe:2.3:a:sudo_project:sudo:1.9.5:p1:*:*:*:*:*:*"),
            ),
            candidate(
                "SUDO-PATCH",
                row("cpe:2.3:a:sudo_project:sudo:1.9.4:patch2:*:*:*:*:*:*"),
            ),
        ];
        assert_eq!(cves(&rows, "1.8.0_351", None), ["JAVA"]);
        assert_eq!(cves(&rows, "1.8.0_361", None), ["JAVA-NO-SEP"]);
        assert_eq!(cves(&rows, "1.9.5p1", None), ["SUDO"]);
        assert_eq!(cves(&rows, "1.9.4p2", None), ["SUDO-PATCH"]);
        assert!(cves(&rows, "1.9.5", None).is_empty());
    }
}
