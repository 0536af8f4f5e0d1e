//! Linux distribution packages matched through their distribution's own
//! security advisories in the OSV format (Debian, Ubuntu, Alpine, Rocky,
//! Alma, Red Hat publish them), never through NVD CPEs: distributions
//! backport fixes without moving the upstream version, so only their own
//! fixed package versions say whether a package is fixed.
//!
//! - [`parse`] reads one OSV record (pure);
//! - [`release_of_device`] finds a device's release (`ubuntu:22.04`) in the
//!   OS fields sources report;
//! - [`write_advisories`] and [`ranges_for`] own `vuln_osv_advisories` and
//!   `vuln_osv_ranges`;
//! - [`evaluate`] is one package version against its ranges (pure).
//!
//! Advisories name source packages; Ubuntu's also list the binaries built
//! from them, which are what an inventory reports (`libssl3` of
//! `openssl`), and both are kept as names to match.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};
use sqlx::Row;

use super::identify::{ProductKey, Translations};
use super::matching::Hit;
use super::package_versions::Family;
use super::records::parse_time;
use super::reference;
use cairn_core::db::Db;
use cairn_inventory::software::InstalledSoftware;

/// The `source` of findings from distribution advisories.
pub const SOURCE_OSV: &str = "osv";

/// One advisory as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Advisory {
    pub id: String,
    pub modified: i64,
    pub cve_ids: Vec<String>,
    pub summary: String,
    /// Withdrawn advisories keep no ranges.
    pub ranges: Vec<PackageRange>,
}

/// One affected range of one package in one release.
#[derive(Debug, Clone, PartialEq)]
pub struct PackageRange {
    pub release: String,
    /// The installed name to match: the source package or a binary of it.
    pub name: String,
    pub package: String,
    /// `None` is "from the first version".
    pub introduced: Option<String>,
    pub fixed: Option<String>,
    pub last_affected: Option<String>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OsvError {
    #[error("an OSV record needs a string id")]
    NoId,
    #[error("{0}: an OSV record needs a readable modified time")]
    NoModified(String),
    #[error("{0}: names no CVE (aliases, upstream)")]
    NoCve(String),
}

/// The release an OSV ecosystem names, as stored: `Debian:12` → `debian:12`,
/// `Ubuntu:22.04:LTS` → `ubuntu:22.04`, `Alpine:v3.19` → `alpine:3.19`,
/// `Rocky Linux:9` → `rocky:9`, `AlmaLinux:9` → `alma:9`, `Red Hat:9`
/// → `rhel:9`. Ubuntu Pro streams and every other ecosystem: `None`.
pub fn release_of_ecosystem(ecosystem: &str) -> Option<String> {
    let mut parts = ecosystem.split(':');
    let distro = parts.next()?.trim().to_ascii_lowercase();
    let rest: Vec<&str> = parts.collect();
    let version = rest.first()?.trim();
    let major = |v: &str| {
        let digits: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
        (!digits.is_empty()).then_some(digits)
    };
    match distro.as_str() {
        "debian" => major(version).map(|v| format!("debian:{v}")),
        "ubuntu" if !version.eq_ignore_ascii_case("pro") => {
            let ok = version.len() == 5 && version.as_bytes()[2] == b'.';
            ok.then(|| format!("ubuntu:{version}"))
        }
        "alpine" => {
            let v = version.trim_start_matches('v');
            let ok = v.split('.').count() == 2 && v.split('.').all(|p| major(p).is_some());
            ok.then(|| format!("alpine:{v}"))
        }
        "rocky linux" => major(version).map(|v| format!("rocky:{v}")),
        "almalinux" => major(version).map(|v| format!("alma:{v}")),
        "red hat" => rest
            .iter()
            .find_map(|p| major(p.trim()))
            .map(|v| format!("rhel:{v}")),
        _ => None,
    }
}

/// How a release's package versions order.
pub fn family_of(release: &str) -> Option<Family> {
    match release.split(':').next()? {
        "debian" | "ubuntu" => Some(Family::Dpkg),
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

/// One OSV record. Ranges of other ecosystems (npm, PyPI, Ubuntu Pro) and
/// of types other than `ECOSYSTEM` are left out; a withdrawn record keeps
/// none.
pub fn parse(record: &Value) -> Result<Advisory, OsvError> {
    let id = record["id"].as_str().ok_or(OsvError::NoId)?.to_string();
    let modified = record["modified"]
        .as_str()
        .and_then(parse_time)
        .ok_or_else(|| OsvError::NoModified(id.clone()))?;
    let mut cve_ids: Vec<String> = ["aliases", "upstream"]
        .iter()
        .flat_map(|key| record[*key].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .chain(std::iter::once(id.as_str()))
        .filter(|alias| alias.starts_with("CVE-"))
        .map(str::to_string)
        .collect();
    cve_ids.sort();
    cve_ids.dedup();
    if cve_ids.is_empty() {
        return Err(OsvError::NoCve(id));
    }
    let summary = record["summary"]
        .as_str()
        .or(record["details"].as_str())
        .unwrap_or("")
        .chars()
        .take(500)
        .collect();
    let mut ranges = vec![];
    let withdrawn = record["withdrawn"].is_string();
    for affected in record["affected"].as_array().into_iter().flatten() {
        if withdrawn {
            break;
        }
        let package = &affected["package"];
        let (Some(ecosystem), Some(source)) =
            (package["ecosystem"].as_str(), package["name"].as_str())
        else {
            continue;
        };
        let Some(release) = release_of_ecosystem(ecosystem) else {
            continue;
        };
        // Debian's "unimportant": no security impact on its packages.
        if affected["ecosystem_specific"]["urgency"].as_str() == Some("unimportant") {
            continue;
        }
        let mut names = vec![source.to_string()];
        for binary in affected["ecosystem_specific"]["binaries"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(name) = binary["binary_name"].as_str().or(binary.as_str()) {
                names.push(name.to_string());
            }
        }
        names.sort();
        names.dedup();
        for range in affected["ranges"].as_array().into_iter().flatten() {
            if range["type"].as_str() != Some("ECOSYSTEM") {
                continue;
            }
            for (introduced, fixed, last_affected) in spans(&range["events"]) {
                for name in &names {
                    ranges.push(PackageRange {
                        release: release.clone(),
                        name: name.clone(),
                        package: source.to_string(),
                        introduced: introduced.clone(),
                        fixed: fixed.clone(),
                        last_affected: last_affected.clone(),
                    });
                }
            }
        }
    }
    Ok(Advisory {
        id,
        modified,
        cve_ids,
        summary,
        ranges,
    })
}

type Span = (Option<String>, Option<String>, Option<String>);

/// OSV events in order: each `introduced` opens a span that the next
/// `fixed` or `last_affected` closes; one left open affects every later
/// version.
fn spans(events: &Value) -> Vec<Span> {
    let mut out = vec![];
    let mut open: Option<Option<String>> = None;
    for event in events.as_array().into_iter().flatten() {
        let text = |key: &str| event[key].as_str().map(str::trim).map(str::to_string);
        if let Some(introduced) = text("introduced") {
            open = Some((introduced != "0").then_some(introduced));
        } else if let Some(fixed) = text("fixed") {
            if let Some(start) = open.take() {
                out.push((start, Some(fixed), None));
            }
        } else if let Some(last) = text("last_affected") {
            if let Some(start) = open.take() {
                out.push((start, None, Some(last)));
            }
        }
    }
    if let Some(start) = open {
        out.push((start, None, None));
    }
    out
}

/// A stored range with its advisory.
#[derive(Debug, Clone)]
pub struct StoredRange {
    pub advisory_id: String,
    pub cve_ids: Vec<String>,
    pub range: PackageRange,
}

/// The CVEs a package `version` of `release` is exposed to by `ranges`,
/// one hit per CVE with the smallest fixed version above it.
pub fn evaluate(ranges: &[StoredRange], release: &str, version: &str) -> Vec<Hit> {
    let Some(family) = family_of(release) else {
        return vec![];
    };
    let version = version.trim();
    if version.is_empty() {
        return vec![];
    }
    let mut hits: Vec<Hit> = vec![];
    for stored in ranges.iter().filter(|r| r.range.release == release) {
        let range = &stored.range;
        let after_start = range
            .introduced
            .as_deref()
            .is_none_or(|start| family.compare(version, start) != Ordering::Less);
        let before_fix = range
            .fixed
            .as_deref()
            .is_none_or(|fix| family.compare(version, fix) == Ordering::Less);
        let within_last = range
            .last_affected
            .as_deref()
            .is_none_or(|last| family.compare(version, last) != Ordering::Greater);
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
                criteria: format!("osv:{release}:{}", range.package),
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

/// What writing advisories did.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsvWrite {
    pub written: u64,
    pub unchanged: u64,
}

/// Stores advisories newer than the stored ones, each replacing its
/// ranges, in one transaction; stamps the package names as changed so the
/// next scan re-matches them.
pub async fn write_advisories(db: &Db, advisories: &[Advisory]) -> sqlx::Result<OsvWrite> {
    let mut outcome = OsvWrite::default();
    if advisories.is_empty() {
        return Ok(outcome);
    }
    let rows = cairn_core::db::json_array_rows(db.backend, 1);
    let ids: Vec<&str> = advisories.iter().map(|a| a.id.as_str()).collect();
    let mut stored: HashMap<String, i64> = HashMap::new();
    for row in sqlx::query(&format!(
        "SELECT id, modified FROM vuln_osv_advisories WHERE id IN (SELECT value->>0 FROM {rows})"
    ))
    .bind(json!(ids.iter().map(|id| json!([id])).collect::<Vec<_>>()).to_string())
    .fetch_all(&db.pool)
    .await?
    {
        stored.insert(row.get("id"), row.get("modified"));
    }
    let mut newest: HashMap<&str, &Advisory> = HashMap::new();
    for advisory in advisories {
        let keep = newest
            .get(advisory.id.as_str())
            .is_none_or(|seen| seen.modified < advisory.modified);
        if keep {
            newest.insert(&advisory.id, advisory);
        }
    }
    let fresh: Vec<&Advisory> = newest
        .into_values()
        .filter(|a| stored.get(&a.id).is_none_or(|m| *m < a.modified))
        .collect();
    outcome.unchanged = advisories.len() as u64 - fresh.len() as u64;
    if fresh.is_empty() {
        return Ok(outcome);
    }
    let advisory_rows: Vec<Value> = fresh
        .iter()
        .map(|a| {
            json!([
                a.id,
                a.modified,
                serde_json::to_string(&a.cve_ids).unwrap_or_default(),
                a.summary
            ])
        })
        .collect();
    let range_rows: Vec<Value> = fresh
        .iter()
        .flat_map(|a| {
            a.ranges.iter().enumerate().map(|(seq, r)| {
                json!([
                    a.id,
                    seq,
                    r.release,
                    r.name,
                    r.package,
                    r.introduced,
                    r.fixed,
                    r.last_affected
                ])
            })
        })
        .collect();
    let generation = chrono::Utc::now().timestamp_millis();
    let names: HashSet<(&str, &str)> = fresh
        .iter()
        .flat_map(|a| a.ranges.iter().map(|r| (SOURCE_OSV, r.name.as_str())))
        .collect();
    let change_rows: Vec<Value> = names.iter().map(|(v, n)| json!([v, n])).collect();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let id_rows = serde_json::to_string(&advisory_rows).unwrap_or_default();
    sqlx::query(&format!(
        "DELETE FROM vuln_osv_ranges WHERE advisory_id IN (SELECT value->>0 FROM {rows})"
    ))
    .bind(&id_rows)
    .execute(&mut *tx)
    .await?;
    sqlx::query(&format!(
        "INSERT INTO vuln_osv_advisories (id, modified, cve_ids, summary) \
         SELECT value->>0, CAST(value->>1 AS BIGINT), value->>2, value->>3 FROM {rows} WHERE true \
         ON CONFLICT (id) DO UPDATE SET modified = excluded.modified, \
         cve_ids = excluded.cve_ids, summary = excluded.summary"
    ))
    .bind(&id_rows)
    .execute(&mut *tx)
    .await?;
    for chunk in range_rows.chunks(10_000) {
        sqlx::query(&format!(
            "INSERT INTO vuln_osv_ranges (advisory_id, seq, release, name, package, introduced, \
             fixed, last_affected) \
             SELECT value->>0, CAST(value->>1 AS BIGINT), value->>2, value->>3, value->>4, \
             value->>5, value->>6, value->>7 FROM {rows}"
        ))
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .execute(&mut *tx)
        .await?;
    }
    // A CVE the store does not know yet is known by the advisory's summary
    // until its NVD or CVE 5 record arrives.
    let placeholders: Vec<Value> = fresh
        .iter()
        .flat_map(|a| a.cve_ids.iter().map(|cve| json!([cve, a.summary])))
        .collect();
    reference::know_cves(&mut tx, db.backend, &placeholders, SOURCE_OSV, generation).await?;
    reference::stamp_products(&mut tx, db.backend, &change_rows, generation).await?;
    tx.commit().await?;
    outcome.written = fresh.len() as u64;
    Ok(outcome)
}

/// The stored ranges for installed (release, name) pairs, by pair.
pub async fn ranges_for(
    db: &Db,
    wanted: &[(String, String)],
) -> sqlx::Result<HashMap<(String, String), Vec<StoredRange>>> {
    let mut out: HashMap<(String, String), Vec<StoredRange>> = HashMap::new();
    let rows_sql = cairn_core::db::json_array_rows(db.backend, 1);
    for chunk in wanted.chunks(5_000) {
        let pairs: Vec<Value> = chunk.iter().map(|(r, n)| json!([r, n])).collect();
        let rows = sqlx::query(&format!(
            "SELECT r.advisory_id, a.cve_ids, r.release, r.name, r.package, r.introduced, \
             r.fixed, r.last_affected \
             FROM {rows_sql} CROSS JOIN vuln_osv_ranges r \
             JOIN vuln_osv_advisories a ON a.id = r.advisory_id \
             WHERE r.release = value->>0 AND r.name = value->>1"
        ))
        .bind(serde_json::to_string(&pairs).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
        for row in rows {
            let cve_ids: String = row.get("cve_ids");
            let range = PackageRange {
                release: row.get("release"),
                name: row.get("name"),
                package: row.get("package"),
                introduced: row.get("introduced"),
                fixed: row.get("fixed"),
                last_affected: row.get("last_affected"),
            };
            out.entry((range.release.clone(), range.name.clone()))
                .or_default()
                .push(StoredRange {
                    advisory_id: row.get("advisory_id"),
                    cve_ids: serde_json::from_str(&cve_ids).unwrap_or_default(),
                    range,
                });
        }
    }
    Ok(out)
}

/// The key a package name's advisory change is stamped under in
/// `vuln_product_changes`, so a changes-only scan re-matches it.
pub fn changed_key(name: &str) -> ProductKey {
    ProductKey {
        vendor: SOURCE_OSV.into(),
        product: name.to_string(),
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
/// advisories name it, else (a version with the distribution's mark) the
/// device's release, with no advisory for it. `None`: not a package of a
/// known release, so matched through CPEs.
pub fn package_release<'r>(
    releases: &'r [String],
    names: &[&str],
    version: &str,
    known: impl Fn(&str, &str) -> bool,
) -> Option<&'r str> {
    releases
        .iter()
        .find(|r| names.iter().any(|n| known(r, n)))
        .or_else(|| releases.first().filter(|_| has_distro_mark(version)))
        .map(String::as_str)
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
        for release in releases.iter() {
            for name in package_names(&item.application_name, translations) {
                pairs.push((release.clone(), name.to_string()));
            }
        }
    }
    pairs.sort();
    pairs.dedup();
    let ranges = ranges_for(db, &pairs).await?;
    let known =
        |release: &str, name: &str| ranges.contains_key(&(release.to_string(), name.to_string()));
    let mut matches = PackageMatches::default();
    for (item, releases) in software.iter().zip(&releases) {
        let version = item.version.as_deref().unwrap_or("");
        let names = package_names(&item.application_name, translations);
        let Some(release) = package_release(releases, &names, version, known) else {
            matches.of_item.push(None);
            continue;
        };
        let key: PackageKey = (
            release.to_string(),
            item.application_name.to_string(),
            version.to_string(),
        );
        if !matches.evaluated.contains_key(&key) {
            let found: Vec<StoredRange> = names
                .iter()
                .filter_map(|n| ranges.get(&(release.to_string(), n.to_string())))
                .flatten()
                .cloned()
                .collect();
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

/// How many advisories and ranges are stored.
pub async fn counts(db: &Db) -> sqlx::Result<(i64, i64)> {
    let row = sqlx::query(
        "SELECT (SELECT COUNT(*) FROM vuln_osv_advisories) AS advisories, \
         (SELECT COUNT(*) FROM vuln_osv_ranges) AS ranges",
    )
    .fetch_one(&db.pool)
    .await?;
    Ok((row.get("advisories"), row.get("ranges")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_of_ecosystems_and_devices() {
        for (ecosystem, expected) in [
            ("Debian:12", Some("debian:12")),
            ("Debian:11", Some("debian:11")),
            ("Ubuntu:22.04:LTS", Some("ubuntu:22.04")),
            ("Ubuntu:24.10", Some("ubuntu:24.10")),
            ("Ubuntu:Pro:22.04:LTS", None),
            ("Alpine:v3.19", Some("alpine:3.19")),
            ("Rocky Linux:9", Some("rocky:9")),
            ("AlmaLinux:9", Some("alma:9")),
            ("Red Hat:9", Some("rhel:9")),
            ("npm", None),
            ("PyPI", None),
        ] {
            assert_eq!(
                release_of_ecosystem(ecosystem).as_deref(),
                expected,
                "{ecosystem}"
            );
        }
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
            .map(|r| StoredRange {
                advisory_id: advisory.id.clone(),
                cve_ids: advisory.cve_ids.clone(),
                range: r.clone(),
            })
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
        // Ubuntu's two names, Debian's one, Alpine's two spans.
        assert_eq!(advisory.ranges.len(), 5);
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

    #[test]
    fn bad_records_say_why() {
        for (record, expected) in [
            (json!({"modified": "2024-01-01T00:00:00Z"}), OsvError::NoId),
            (
                json!({"id": "DSA-1-1"}),
                OsvError::NoModified("DSA-1-1".into()),
            ),
            (
                json!({"id": "DSA-1-1", "modified": "2024-01-01T00:00:00Z", "aliases": ["GHSA-x"]}),
                OsvError::NoCve("DSA-1-1".into()),
            ),
        ] {
            assert_eq!(parse(&record).unwrap_err(), expected);
        }
        let withdrawn = json!({"id": "CVE-2024-1", "modified": "2024-01-01T00:00:00Z",
            "withdrawn": "2024-02-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "x"},
                          "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}]}]}]});
        assert!(parse(&withdrawn).unwrap().ranges.is_empty());
        let unimportant = json!({"id": "DEBIAN-CVE-2024-2", "modified": "2024-01-01T00:00:00Z",
            "upstream": ["CVE-2024-2"],
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "x"},
                          "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}]}],
                          "ecosystem_specific": {"urgency": "unimportant"}},
                         {"package": {"ecosystem": "Debian:13", "name": "x"},
                          "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "1.0-2"}]}],
                          "ecosystem_specific": {"urgency": "low"}}]});
        let ranges = parse(&unimportant).unwrap().ranges;
        assert_eq!(ranges.len(), 1);
        assert_eq!(ranges[0].release, "debian:13");
    }
}
