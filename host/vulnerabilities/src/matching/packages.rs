//! Installed Linux packages judged by their distribution's advisories
//! (`reference::osv`), never through NVD CPEs: which release a device
//! runs, which installed items are that release's packages, and whether a
//! version is below a range's fix, in its family's version order
//! (`package_versions`).
//!
//! - [`release_of_device`] finds a device's release (`ubuntu:22.04`) in the
//!   OS fields sources report;
//! - [`match_packages`] finds the packages among installed software and
//!   evaluates each distinct version once;
//! - [`evaluate`] is one package version against its ranges (pure).

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use crate::matching::identify::Translations;
use crate::matching::package_versions::Family;
use crate::matching::ranges::Hit;
use crate::reference::cpe::ProductKey;
use crate::reference::osv::{ranges_for, RangesByName, StoredRange, SOURCE_OSV, UBUNTU_PRO};
use cairn_core::db::Db;
use cairn_inventory::software::InstalledSoftware;

/// The releases whose ranges judge a package of `release`: the release's
/// own and, for Ubuntu, its Pro stream ([`evaluate`] says which judges
/// which build).
pub fn advisory_releases(release: &str) -> Vec<String> {
    match release.strip_prefix("ubuntu:") {
        Some(version) => vec![release.to_string(), format!("{UBUNTU_PRO}:{version}")],
        None => vec![release.to_string()],
    }
}

/// Whether a Debian-family version is an Ubuntu Pro (ESM) build:
/// `1.0.2g-1ubuntu4.20+esm6`.
pub fn is_esm_build(version: &str) -> bool {
    version.contains("+esm")
}

/// How a release's package versions order.
pub fn family_of(release: &str) -> Option<Family> {
    match release.split(':').next()? {
        "debian" | "ubuntu" | UBUNTU_PRO => Some(Family::Dpkg),
        "alpine" => Some(Family::Apk),
        "rocky" | "alma" | "rhel" => Some(Family::Rpm),
        _ => None,
    }
}

/// The releases whose advisories apply to a device, from its OS fields
/// (`Ubuntu 22.04.3 LTS`, `Debian GNU/Linux 12 (bookworm)`, `Alpine Linux
/// v3.19`, `Rocky Linux 9.3`, `Red Hat Enterprise Linux 9.2`). A RHEL
/// device also reads Rocky's advisories, whose package versions are
/// RHEL's rebuilt; empty when the release is not recognised.
pub fn release_of_device(os_platform: Option<&str>, os_version: Option<&str>) -> Vec<String> {
    let text =
        format!("{} {}", os_platform.unwrap_or(""), os_version.unwrap_or("")).to_ascii_lowercase();
    let numbers: Vec<&str> = text
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|n| n.trim_matches('.'))
        .filter(|n| n.starts_with(|c: char| c.is_ascii_digit()))
        .collect();
    let major = numbers
        .first()
        .map(|n| n.split('.').next().unwrap_or("").to_string());
    let major_minor = numbers.iter().find_map(|n| {
        let mut parts = n.split('.');
        let (a, b) = (parts.next()?, parts.next()?);
        Some(format!("{a}.{b}"))
    });
    if text.contains("ubuntu") {
        return major_minor
            .filter(|v| v.len() == 5)
            .map(|v| vec![format!("ubuntu:{v}")])
            .unwrap_or_default();
    }
    if text.contains("debian") {
        let codename = [
            ("trixie", "13"),
            ("bookworm", "12"),
            ("bullseye", "11"),
            ("buster", "10"),
        ]
        .iter()
        .find(|(name, _)| text.contains(name))
        .map(|(_, v)| v.to_string());
        return major
            .or(codename)
            .map(|v| vec![format!("debian:{v}")])
            .unwrap_or_default();
    }
    if text.contains("alpine") {
        return major_minor
            .map(|v| vec![format!("alpine:{v}")])
            .unwrap_or_default();
    }
    let Some(major) = major else {
        return vec![];
    };
    if text.contains("rocky") {
        vec![format!("rocky:{major}")]
    } else if text.contains("alma") {
        vec![format!("alma:{major}")]
    } else if text.contains("red hat") || text.contains("rhel") {
        vec![format!("rhel:{major}"), format!("rocky:{major}")]
    } else {
        vec![]
    }
}

/// Whether a package version carries a distribution's mark (`ubuntu`,
/// `+deb12u1`, `.el9`, `-r0`), i.e. was built by the distribution.
pub fn has_distro_mark(version: &str) -> bool {
    let lower = version.to_ascii_lowercase();
    // A backport to a release: `3.10.6-1~22.04`, `1.2-1~deb12u1`.
    let backport = lower.rsplit_once('~').is_some_and(|(_, release)| {
        let digits: Vec<&str> = release.split('.').collect();
        digits.len() == 2
            && digits
                .iter()
                .all(|d| d.len() == 2 && d.bytes().all(|b| b.is_ascii_digit()))
    });
    backport
        || lower.contains("ubuntu")
        || lower.contains("deb1")
        || lower.contains("+deb")
        || lower.contains("~deb")
        || lower.contains(".el")
        || lower
            .rsplit_once("-r")
            .is_some_and(|(_, r)| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()))
}

/// A package version as its upstream wrote it, for a package matched
/// through CPEs: epoch and packaging revision removed (`1:120.0.6099.129-1`
/// → `120.0.6099.129`), a `+build` suffix dropped (`100.0+build2` →
/// `100.0`), and Debian's `~` pre-release mark read as one (`1.0~rc1` →
/// `1.0-rc1`, which sorts before `1.0`).
pub fn upstream_version(version: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let bare = without_revision(version);
    let bare = match bare.find("+build") {
        Some(at) => &bare[..at],
        None => bare,
    };
    if bare.contains('~') {
        Cow::Owned(bare.replace('~', "-"))
    } else {
        Cow::Borrowed(bare)
    }
}

fn without_revision(version: &str) -> &str {
    let without_epoch = match version.split_once(':') {
        Some((epoch, rest)) if epoch.bytes().all(|b| b.is_ascii_digit()) => rest,
        _ => version,
    };
    match without_epoch.rsplit_once('-') {
        // A packaging revision starts with a digit (`1`, `0ubuntu1`) after
        // a dotted version; a word (`2.0-rc1`) or a date's day
        // (`2024-01-05`) is part of the version.
        Some((upstream, revision))
            if upstream.contains('.') && revision.starts_with(|c: char| c.is_ascii_digit()) =>
        {
            upstream
        }
        _ => without_epoch,
    }
}

/// The CVEs a package `version` of `release` is exposed to by `ranges`,
/// one hit per CVE with the smallest fixed version above it.
///
/// Two rules read a version as its distribution built it:
/// - **Epochs.** Inventories often drop a package's epoch (`8.9p1-3ubuntu0.13`
///   for `1:8.9p1-3ubuntu0.13`). A version without one is compared with
///   each bound under that bound's epoch, since a release ships one build
///   line of a package; read as epoch 0 it would sort below every fix.
/// - **Ubuntu Pro builds** (`+esm`) are judged by the Pro stream's ranges
///   (`ubuntu-pro:22.04`) for a CVE that has one there, and every other
///   version by the release's own. For a CVE its own stream is silent on,
///   a version is judged by the other stream: a standard build by Pro's
///   (a release past standard support lists its fixes only there, and a
///   build below Pro's fix lacks it), a Pro build by the release's fixed
///   ranges only (a standard range with no fix says the standard archive
///   has none, not that Pro's build lacks one).
pub fn evaluate(ranges: &[StoredRange], release: &str, version: &str) -> Vec<Hit> {
    let Some(family) = family_of(release) else {
        return vec![];
    };
    let version = version.trim();
    if version.is_empty() {
        return vec![];
    }
    // Ubuntu's Pro stream; no other release has one.
    let pro = release
        .strip_prefix("ubuntu:")
        .map(|v| format!("{UBUNTU_PRO}:{v}"));
    let pro = pro.as_deref();
    let esm = pro.is_some() && is_esm_build(version);
    let own_stream = match pro {
        Some(pro) if esm => pro,
        _ => release,
    };
    let judged_by_own: HashSet<&str> = ranges
        .iter()
        .filter(|r| r.range.release == own_stream)
        .flat_map(|r| r.cve_ids.iter().map(String::as_str))
        .collect();
    let compare = |bound: &str| family.compare(&with_epoch_of(version, bound), bound);
    let mut hits: Vec<Hit> = vec![];
    for stored in ranges {
        let range = &stored.range;
        let applies = if range.release == own_stream {
            true
        } else if range.release == release || Some(range.release.as_str()) == pro {
            let silent = stored
                .cve_ids
                .iter()
                .all(|c| !judged_by_own.contains(c.as_str()));
            silent && (!esm || range.fixed.is_some())
        } else {
            false
        };
        if !applies {
            continue;
        }
        let after_start = range
            .introduced
            .as_deref()
            .is_none_or(|start| compare(start) != Ordering::Less);
        let before_fix = range
            .fixed
            .as_deref()
            .is_none_or(|fix| compare(fix) == Ordering::Less);
        let within_last = range
            .last_affected
            .as_deref()
            .is_none_or(|last| compare(last) != Ordering::Greater);
        if !(after_start && before_fix && within_last) {
            continue;
        }
        let mut text = vec![];
        if let Some(start) = &range.introduced {
            text.push(format!(">= {start}"));
        }
        if let Some(fix) = &range.fixed {
            text.push(format!("< {fix}"));
        }
        if let Some(last) = &range.last_affected {
            text.push(format!("<= {last}"));
        }
        if text.is_empty() {
            text.push("no fixed version yet".into());
        }
        for cve in &stored.cve_ids {
            let hit = Hit {
                cve_id: cve.clone(),
                source: SOURCE_OSV.into(),
                criteria: format!("osv:{}:{}", range.release, range.package),
                match_id: Some(stored.advisory_id.clone()),
                range: text.join(", "),
                fix_version: range.fixed.clone(),
            };
            match hits.iter_mut().find(|h| h.cve_id == *cve) {
                None => hits.push(hit),
                // Keep the earliest fix among the advisories naming it.
                Some(existing) => {
                    let better = match (&existing.fix_version, &hit.fix_version) {
                        (None, Some(_)) => true,
                        (Some(a), Some(b)) => family.compare(b, a) == Ordering::Less,
                        _ => false,
                    };
                    if better {
                        *existing = hit;
                    }
                }
            }
        }
    }
    hits
}

/// `version` under the epoch of `bound` when it has none of its own
/// (`8.9p1-3` against `1:8.9p1-4` → `1:8.9p1-3`).
fn with_epoch_of<'a>(version: &'a str, bound: &str) -> std::borrow::Cow<'a, str> {
    fn epoch_of(v: &str) -> Option<&str> {
        v.split_once(':')
            .map(|(e, _)| e)
            .filter(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()))
    }
    match (epoch_of(version), epoch_of(bound)) {
        (None, Some(epoch)) => std::borrow::Cow::Owned(format!("{epoch}:{version}")),
        _ => std::borrow::Cow::Borrowed(version),
    }
}

/// An installed package's evaluation: (release, name, version).
pub type PackageKey = (String, String, String);

/// Which installed items are distribution packages, and what they are
/// exposed to.
#[derive(Default)]
pub struct PackageMatches {
    /// Per item of the software read: its evaluation's key when the item is
    /// a distribution package (then never matched through CPEs).
    pub of_item: Vec<Option<PackageKey>>,
    /// Per evaluation: the finding's product key (`ubuntu:sudo`) and hits.
    pub evaluated: HashMap<PackageKey, (ProductKey, Vec<Hit>)>,
}

/// The names an installed package is known by in advisories: its own and
/// the source package it is built from, where that differs.
pub fn package_names<'a>(name: &'a str, translations: &'a Translations) -> Vec<&'a str> {
    let mut names = vec![name];
    names.extend(translations.package_source(name).filter(|s| *s != name));
    names
}

/// The release whose advisories decide for an installed item, when it is
/// a distribution package: the first of the device's releases whose
/// advisories (its own or its Pro stream's, in `ranges`) name it, else (a
/// version with the distribution's mark) the device's release, with no
/// advisory for it. `None`: not a package of a known release, so matched
/// through CPEs.
pub fn package_release<'r>(
    releases: &'r [String],
    names: &[&str],
    version: &str,
    ranges: &RangesByName,
) -> Option<&'r str> {
    let named = |release: &str| {
        advisory_releases(release).into_iter().any(|r| {
            names
                .iter()
                .any(|n| ranges.contains_key(&(r.clone(), n.to_string())))
        })
    };
    releases
        .iter()
        .find(|r| named(r))
        .or_else(|| releases.first().filter(|_| has_distro_mark(version)))
        .map(String::as_str)
}

/// Why [`not_assessable`] leaves an installation out, as a sentence.
pub const NOT_ASSESSABLE: &str = "a distribution's build (its version carries the distribution's revision) on a device whose distribution release is not known: only that distribution's advisories can judge it, since distributions backport fixes without moving the upstream version";

/// Whether an installation is a distribution's build on a Linux device
/// whose release is not known: no advisory applies without the release,
/// and its upstream version would flag fixed packages, so it is neither
/// matched nor guessed (`GET /vulnerabilities/not-assessed` lists it).
pub fn not_assessable(item: &InstalledSoftware) -> bool {
    has_distro_mark(item.version.as_deref().unwrap_or(""))
        && releases_of(item).is_empty()
        && item
            .os_platform
            .as_deref()
            .and_then(cairn_inventory::normalize::platform_label)
            == Some("linux")
}

/// The releases a software item's device runs, when it is a Linux device.
pub fn releases_of(item: &InstalledSoftware) -> Vec<String> {
    let platform = item
        .os_platform
        .as_deref()
        .and_then(cairn_inventory::normalize::platform_label);
    match platform {
        Some("linux") => release_of_device(item.os_platform.as_deref(), item.os_version.as_deref()),
        _ => vec![],
    }
}

/// The ranges that judge a package of `release` known by `names`, from
/// ranges read by (release, name): the release's and its Pro stream's.
pub fn ranges_of_package(ranges: &RangesByName, release: &str, names: &[&str]) -> Vec<StoredRange> {
    advisory_releases(release)
        .iter()
        .flat_map(|r| names.iter().map(move |n| (r.clone(), n.to_string())))
        .filter_map(|key| ranges.get(&key))
        .flatten()
        .cloned()
        .collect()
}

/// Finds the distribution packages among `software` and evaluates each
/// distinct (release, name, version) once.
pub async fn match_packages(
    db: &Db,
    translations: &Translations,
    software: &[InstalledSoftware],
) -> sqlx::Result<PackageMatches> {
    // Devices share a handful of OS texts: read each once.
    let mut by_os: HashMap<(Option<&str>, Option<&str>), Vec<String>> = HashMap::new();
    for item in software {
        by_os
            .entry((item.os_platform.as_deref(), item.os_version.as_deref()))
            .or_insert_with(|| releases_of(item));
    }
    let releases: Vec<&Vec<String>> = software
        .iter()
        .map(|item| &by_os[&(item.os_platform.as_deref(), item.os_version.as_deref())])
        .collect();
    let mut pairs: Vec<(String, String)> = vec![];
    for (item, releases) in software.iter().zip(&releases) {
        for release in releases.iter().flat_map(|r| advisory_releases(r)) {
            for name in package_names(&item.application_name, translations) {
                pairs.push((release.clone(), name.to_string()));
            }
        }
    }
    pairs.sort();
    pairs.dedup();
    let ranges = ranges_for(db, &pairs).await?;
    let mut matches = PackageMatches::default();
    for (item, releases) in software.iter().zip(&releases) {
        let version = item.version.as_deref().unwrap_or("");
        let names = package_names(&item.application_name, translations);
        let Some(release) = package_release(releases, &names, version, &ranges) else {
            matches.of_item.push(None);
            continue;
        };
        let key: PackageKey = (
            release.to_string(),
            item.application_name.to_string(),
            version.to_string(),
        );
        if !matches.evaluated.contains_key(&key) {
            let found = ranges_of_package(&ranges, release, &names);
            let product = ProductKey {
                vendor: release.split(':').next().unwrap_or("").to_string(),
                product: item.application_name.to_string(),
            };
            let hits = evaluate(&found, release, version);
            matches.evaluated.insert(key.clone(), (product, hits));
        }
        matches.of_item.push(Some(key));
    }
    Ok(matches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::osv::{parse, Advisory, PackageRange};
    use serde_json::json;

    #[test]
    fn releases_of_devices() {
        for (platform, version, expected) in [
            (
                Some("linux"),
                Some("Ubuntu 22.04.3 LTS"),
                vec!["ubuntu:22.04"],
            ),
            (Some("Ubuntu"), Some("22.04"), vec!["ubuntu:22.04"]),
            (
                Some("linux"),
                Some("Debian GNU/Linux 12 (bookworm)"),
                vec!["debian:12"],
            ),
            (Some("Debian"), Some("bookworm"), vec!["debian:12"]),
            (
                Some("linux"),
                Some("Alpine Linux v3.19.1"),
                vec!["alpine:3.19"],
            ),
            (
                Some("linux"),
                Some("Rocky Linux 9.3 (Blue Onyx)"),
                vec!["rocky:9"],
            ),
            (Some("AlmaLinux"), Some("9.4"), vec!["alma:9"]),
            (
                Some("linux"),
                Some("Red Hat Enterprise Linux 9.2 (Plow)"),
                vec!["rhel:9", "rocky:9"],
            ),
            (Some("linux"), Some("Arch Linux"), vec![]),
            (Some("windows"), Some("10.0.19045"), vec![]),
        ] {
            assert_eq!(
                release_of_device(platform, version),
                expected,
                "{version:?}"
            );
        }
    }

    #[test]
    fn package_versions_and_marks() {
        for (package, upstream) in [
            ("120.0.6099.129-1", "120.0.6099.129"),
            ("1:2.3.4-5ubuntu1", "2.3.4"),
            ("8.6", "8.6"),
            ("2.0-rc1", "2.0-rc1"),
            ("2024-01-05", "2024-01-05"),
            ("100.0+build2-0ubuntu0.22.04.1", "100.0"),
            ("2.4.0~rc1-1", "2.4.0-rc1"),
        ] {
            assert_eq!(upstream_version(package), upstream, "{package}");
        }
        assert!(has_distro_mark("3.10.6-1~22.04"));
        assert!(has_distro_mark("1.2-1~deb12u1"));
        assert!(!has_distro_mark("2.4.0~rc1-1"));
        assert!(has_distro_mark("1.9.9-1ubuntu2.4"));
        assert!(has_distro_mark("1.9.13p3-1+deb12u1"));
        assert!(has_distro_mark("1.9.5p2-3.el9"));
        assert!(has_distro_mark("1.9.15_p5-r0"));
        assert!(!has_distro_mark("120.0.6099.129-1"));
    }

    fn stored(advisory: &Advisory) -> Vec<StoredRange> {
        advisory
            .ranges
            .iter()
            .map(|r| StoredRange::of(&advisory.id, &advisory.cve_ids, r.clone()))
            .collect()
    }

    #[test]
    fn parses_and_evaluates_distribution_advisories() {
        let record = json!({
            "schema_version": "1.6.0",
            "id": "UBUNTU-CVE-2023-22809",
            "modified": "2024-01-10T12:00:00Z",
            "upstream": ["CVE-2023-22809"],
            "affected": [
                {"package": {"ecosystem": "Ubuntu:22.04:LTS", "name": "sudo"},
                 "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1.9.9-1ubuntu2.2"}]}],
                 "ecosystem_specific": {"binaries": [{"binary_name": "sudo-ldap", "binary_version": "1.9.9-1ubuntu2.2"}]}},
                {"package": {"ecosystem": "Ubuntu:Pro:16.04:LTS", "name": "sudo"},
                 "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1.8.16-0ubuntu1.10+esm1"}]}]},
                {"package": {"ecosystem": "Debian:12", "name": "sudo"},
                 "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1.9.13p3-1"}]},
                            {"type": "GIT", "events": [{"introduced": "abc"}, {"fixed": "def"}]}]},
                {"package": {"ecosystem": "Alpine:v3.19", "name": "sudo"},
                 "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "1.9.0"}, {"fixed": "1.9.12_p2-r0"}, {"introduced": "1.9.14"}]}]}
            ]
        });
        let advisory = parse(&record).unwrap();
        assert_eq!(advisory.cve_ids, ["CVE-2023-22809"]);
        // Ubuntu's two names, Ubuntu Pro's one, Debian's one, Alpine's two
        // spans.
        assert_eq!(advisory.ranges.len(), 6);
        let ranges = stored(&advisory);
        let cves = |release: &str, version: &str| -> Vec<(String, Option<String>)> {
            evaluate(&ranges, release, version)
                .into_iter()
                .map(|h| (h.cve_id, h.fix_version))
                .collect()
        };
        let fixed = |v: &str| vec![("CVE-2023-22809".to_string(), Some(v.to_string()))];
        assert_eq!(
            cves("ubuntu:22.04", "1.9.9-1ubuntu2"),
            fixed("1.9.9-1ubuntu2.2")
        );
        assert!(cves("ubuntu:22.04", "1.9.9-1ubuntu2.2").is_empty());
        assert!(cves("ubuntu:22.04", "1.9.9-1ubuntu2.10").is_empty());
        assert_eq!(cves("debian:12", "1.9.13p2-1"), fixed("1.9.13p3-1"));
        assert!(cves("debian:12", "1.9.13p3-1+deb12u1").is_empty());
        assert!(cves("debian:11", "1.9.5p2-3").is_empty());
        assert!(cves("alpine:3.19", "1.8.31-r0").is_empty());
        assert_eq!(cves("alpine:3.19", "1.9.12_p1-r0"), fixed("1.9.12_p2-r0"));
        assert!(cves("alpine:3.19", "1.9.13_p1-r0").is_empty());
        assert_eq!(
            cves("alpine:3.19", "1.9.15_p5-r0"),
            vec![("CVE-2023-22809".to_string(), None)]
        );
    }

    /// Each version rule beside `evaluate`'s doc, one vector a line:
    /// (release, installed, ranges as (release, introduced, fixed)), and
    /// whether it is affected.
    #[test]
    fn epochs_and_ubuntu_pro_builds() {
        type Case<'a> = (
            &'a str,
            &'a str,
            Vec<(&'a str, &'a str, Option<&'a str>)>,
            bool,
        );
        let cases: Vec<Case> = vec![
            // An inventory without the epoch: compared under the fix's.
            (
                "ubuntu:22.04",
                "8.9p1-3ubuntu0.13",
                vec![("ubuntu:22.04", "0", Some("1:8.9p1-3ubuntu0.10"))],
                false,
            ),
            (
                "ubuntu:22.04",
                "8.9p1-3ubuntu0.6",
                vec![("ubuntu:22.04", "0", Some("1:8.9p1-3ubuntu0.10"))],
                true,
            ),
            (
                "ubuntu:22.04",
                "1:8.9p1-3ubuntu0.13",
                vec![("ubuntu:22.04", "0", Some("1:8.9p1-3ubuntu0.10"))],
                false,
            ),
            // A stated epoch is kept: 0 is below 1 whatever follows.
            (
                "ubuntu:22.04",
                "0:9.0p1-1",
                vec![("ubuntu:22.04", "0", Some("1:8.9p1-3ubuntu0.10"))],
                true,
            ),
            (
                "alma:9",
                "20200406-25.el9",
                vec![("alma:9", "0", Some("9:20200406-26.el9_2"))],
                true,
            ),
            (
                "alma:9",
                "20200406-26.el9_2",
                vec![("alma:9", "0", Some("9:20200406-26.el9_2"))],
                false,
            ),
            // A Pro build judged by the Pro stream where it names the CVE.
            (
                "ubuntu:16.04",
                "1.8.16-0ubuntu1.10+esm1",
                vec![
                    ("ubuntu:16.04", "0", None),
                    ("ubuntu-pro:16.04", "0", Some("1.8.16-0ubuntu1.10+esm1")),
                ],
                false,
            ),
            (
                "ubuntu:16.04",
                "1.8.16-0ubuntu1.10",
                vec![
                    ("ubuntu:16.04", "0", None),
                    ("ubuntu-pro:16.04", "0", Some("1.8.16-0ubuntu1.10+esm1")),
                ],
                true,
            ),
            (
                "ubuntu:16.04",
                "1.8.16-0ubuntu1.9+esm2",
                vec![
                    ("ubuntu:16.04", "0", None),
                    ("ubuntu-pro:16.04", "0", Some("1.8.16-0ubuntu1.10+esm1")),
                ],
                true,
            ),
            // A standard build where only Pro lists the CVE: below Pro's fix.
            (
                "ubuntu:16.04",
                "1.8.16-0ubuntu1.10",
                vec![("ubuntu-pro:16.04", "0", Some("1.8.16-0ubuntu1.10+esm1"))],
                true,
            ),
            (
                "ubuntu:16.04",
                "1.8.16-0ubuntu1.11",
                vec![("ubuntu-pro:16.04", "0", Some("1.8.16-0ubuntu1.10+esm1"))],
                false,
            ),
            // Pro ranges never reach another release.
            (
                "ubuntu:22.04",
                "1.8.16-0ubuntu1.10",
                vec![("ubuntu-pro:16.04", "0", Some("1.8.16-0ubuntu1.10+esm1"))],
                false,
            ),
            // Pro silent: the standard archive's "no fix" does not speak
            // for a Pro build; a standard fix still does.
            (
                "ubuntu:16.04",
                "1.8.16-0ubuntu1.10+esm1",
                vec![("ubuntu:16.04", "0", None)],
                false,
            ),
            (
                "ubuntu:22.04",
                "1.9.9-1ubuntu2+esm1",
                vec![("ubuntu:22.04", "0", Some("1.9.9-1ubuntu2.2"))],
                true,
            ),
            (
                "ubuntu:22.04",
                "1.9.9-1ubuntu2.2+esm1",
                vec![("ubuntu:22.04", "0", Some("1.9.9-1ubuntu2.2"))],
                false,
            ),
        ];
        for (release, version, ranges, affected) in cases {
            let stored: Vec<StoredRange> = ranges
                .iter()
                .map(|(r, introduced, fixed)| StoredRange {
                    advisory_id: "A".into(),
                    cve_ids: vec!["CVE-2024-6387".into()],
                    range: PackageRange {
                        release: r.to_string(),
                        name: "p".into(),
                        package: "p".into(),
                        introduced: (*introduced != "0").then(|| introduced.to_string()),
                        fixed: fixed.map(str::to_string),
                        last_affected: None,
                        cve_ids: None,
                    },
                })
                .collect();
            assert_eq!(
                !evaluate(&stored, release, version).is_empty(),
                affected,
                "{release} {version} against {ranges:?}"
            );
        }
    }
}
