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
use cairn_core::db::{stored_json, Db};
use cairn_inventory::software::InstalledSoftware;

pub use super::records::SOURCE_OSV;

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
    /// The CVEs of the advisory this range is for, where the record says
    /// so per release (Ubuntu's USN `database_specific.cves_map`: one
    /// notice, a CVE that affected one release only); `None`: all of them.
    pub cve_ids: Option<Vec<String>>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum OsvError {
    #[error("an OSV record needs a string id")]
    NoId,
    #[error("{0}: an OSV record needs a readable modified time")]
    NoModified(String),
    #[error("{0}: names no CVE (in its id, aliases, upstream or related)")]
    NoCve(String),
}

impl OsvError {
    /// The reason without the record's id, to count records by.
    pub fn kind(&self) -> &'static str {
        match self {
            OsvError::NoId => "no id",
            OsvError::NoModified(_) => "no modified time",
            OsvError::NoCve(_) => "names no CVE",
        }
    }
}

/// The release an OSV ecosystem names, as stored: `Debian:12` → `debian:12`,
/// `Ubuntu:22.04:LTS` → `ubuntu:22.04`, `Ubuntu:Pro:16.04:LTS` →
/// `ubuntu-pro:16.04` (Ubuntu Pro's own builds, `+esm`), `Alpine:v3.19` →
/// `alpine:3.19`, `Rocky Linux:9` → `rocky:9`, `AlmaLinux:9` → `alma:9`,
/// `Red Hat:enterprise_linux:9::appstream` (or the older `Red Hat:9`) →
/// `rhel:9`. Red Hat's extended-support streams (`rhel_eus:9.2`, ...),
/// Ubuntu's FIPS streams and every other ecosystem: `None`, since no
/// ordinary install of the release runs their builds.
pub fn release_of_ecosystem(ecosystem: &str) -> Option<String> {
    let parts: Vec<&str> = ecosystem.split(':').map(str::trim).collect();
    let major = |v: &str| {
        let digits: String = v.chars().take_while(|c| c.is_ascii_digit()).collect();
        (!digits.is_empty()).then_some(digits)
    };
    let ubuntu = |v: &str| v.len() == 5 && v.as_bytes()[2] == b'.' && major(v).is_some();
    let distro = parts.first()?.to_ascii_lowercase();
    match (distro.as_str(), &parts[1..]) {
        ("debian", [version, ..]) => major(version).map(|v| format!("debian:{v}")),
        ("ubuntu", [pro, version, ..]) if pro.eq_ignore_ascii_case("pro") => {
            ubuntu(version).then(|| format!("{UBUNTU_PRO}:{version}"))
        }
        ("ubuntu", [version, ..]) => ubuntu(version).then(|| format!("ubuntu:{version}")),
        ("alpine", [version, ..]) => {
            let v = version.trim_start_matches('v');
            let ok = v.split('.').count() == 2 && v.split('.').all(|p| major(p).is_some());
            ok.then(|| format!("alpine:{v}"))
        }
        ("rocky linux", [version, ..]) => major(version).map(|v| format!("rocky:{v}")),
        ("almalinux", [version, ..]) => major(version).map(|v| format!("alma:{v}")),
        ("red hat", ["enterprise_linux", version, ..]) => {
            major(version).map(|v| format!("rhel:{v}"))
        }
        // The first published shape: `Red Hat:9`.
        ("red hat", [version]) if version.bytes().all(|b| b.is_ascii_digit()) => {
            major(version).map(|v| format!("rhel:{v}"))
        }
        _ => None,
    }
}

/// The release prefix of Ubuntu Pro's ranges (`ubuntu-pro:22.04`).
pub const UBUNTU_PRO: &str = "ubuntu-pro";

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

/// The CVE ids a record names: every `CVE-YYYY-NNNN` in `aliases`,
/// `upstream` and `related` (AlmaLinux and Rocky list them there), and in
/// the id itself (`CVE-2024-1`, `UBUNTU-CVE-2023-4911`, `DEBIAN-CVE-...`).
fn cve_ids_of(record: &Value, id: &str) -> Vec<String> {
    let mut ids: Vec<String> = ["aliases", "upstream", "related"]
        .iter()
        .flat_map(|key| record[*key].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .chain(std::iter::once(id))
        .filter_map(cve_in)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// The CVE id in `text` (`UBUNTU-CVE-2023-4911` → `CVE-2023-4911`), when
/// it ends with one.
fn cve_in(text: &str) -> Option<String> {
    let upper = text.trim().to_ascii_uppercase();
    let at = upper.find("CVE-")?;
    let id = &upper[at..];
    let mut parts = id.splitn(3, '-');
    let (_, year, number) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str, min: usize| s.len() >= min && s.bytes().all(|b| b.is_ascii_digit());
    (year.len() == 4 && digits(year, 4) && digits(number, 4)).then(|| id.to_string())
}

/// The CVEs an affected entry says it is for (Ubuntu's USN records map
/// each release to its CVEs in `database_specific.cves_map`); `None` when
/// it says nothing, and the record's CVEs apply.
fn cves_of_release(affected: &Value) -> Option<Vec<String>> {
    let listed = affected["database_specific"]["cves_map"]["cves"].as_array()?;
    let mut ids: Vec<String> = listed
        .iter()
        .filter_map(|cve| cve["id"].as_str().and_then(cve_in))
        .collect();
    ids.sort();
    ids.dedup();
    (!ids.is_empty()).then_some(ids)
}

/// The binary packages an affected entry lists, in each shape published:
/// Ubuntu's current one object of `name: version` pairs, the older
/// `{"binary_name": ..}` objects, and plain strings.
fn binaries_of(affected: &Value) -> Vec<String> {
    let mut names = vec![];
    for binary in affected["ecosystem_specific"]["binaries"]
        .as_array()
        .into_iter()
        .flatten()
    {
        match binary {
            Value::String(name) => names.push(name.clone()),
            Value::Object(fields) => match fields.get("binary_name").and_then(Value::as_str) {
                Some(name) => names.push(name.to_string()),
                None => names.extend(fields.keys().cloned()),
            },
            _ => {}
        }
    }
    names
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

/// One OSV record. Ranges of other ecosystems (npm, PyPI, Ubuntu Pro) and
/// of types other than `ECOSYSTEM` are left out; a withdrawn record keeps
/// none.
pub fn parse(record: &Value) -> Result<Advisory, OsvError> {
    let id = record["id"].as_str().ok_or(OsvError::NoId)?.to_string();
    let modified = record["modified"]
        .as_str()
        .and_then(parse_time)
        .ok_or_else(|| OsvError::NoModified(id.clone()))?;
    let cve_ids = cve_ids_of(record, &id);
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
        names.extend(binaries_of(affected));
        names.sort();
        names.dedup();
        let range_cves = cves_of_release(affected);
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
                        cve_ids: range_cves.clone(),
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
    /// The CVEs the range is for: its own list, else the advisory's.
    pub cve_ids: Vec<String>,
    pub range: PackageRange,
}

impl StoredRange {
    /// `range` of the advisory `id` naming `advisory_cves`.
    pub fn of(id: &str, advisory_cves: &[String], range: PackageRange) -> StoredRange {
        StoredRange {
            advisory_id: id.to_string(),
            cve_ids: range
                .cve_ids
                .clone()
                .unwrap_or_else(|| advisory_cves.to_vec()),
            range,
        }
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
        stored.insert(row.try_get("id")?, row.try_get("modified")?);
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
                    r.last_affected,
                    r.cve_ids
                        .as_ref()
                        .map(|ids| serde_json::to_string(ids).unwrap_or_default())
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
             fixed, last_affected, cve_ids) \
             SELECT value->>0, CAST(value->>1 AS BIGINT), value->>2, value->>3, value->>4, \
             value->>5, value->>6, value->>7, value->>8 FROM {rows}"
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

/// A stored range as read, with its advisory's CVEs.
#[derive(sqlx::FromRow)]
struct RangeRow {
    advisory_id: String,
    /// The advisory's CVE ids (JSON).
    cve_ids: String,
    /// The range's own CVE ids (JSON), when its record gave them.
    range_cve_ids: Option<String>,
    release: String,
    name: String,
    package: String,
    introduced: Option<String>,
    fixed: Option<String>,
    last_affected: Option<String>,
}

/// The stored ranges for installed (release, name) pairs, by pair.
pub async fn ranges_for(db: &Db, wanted: &[(String, String)]) -> sqlx::Result<RangesByName> {
    let mut out = RangesByName::new();
    let rows_sql = cairn_core::db::json_array_rows(db.backend, 1);
    for chunk in wanted.chunks(5_000) {
        let pairs: Vec<Value> = chunk.iter().map(|(r, n)| json!([r, n])).collect();
        let rows: Vec<RangeRow> = sqlx::query_as(&format!(
            "SELECT r.advisory_id, a.cve_ids, r.cve_ids AS range_cve_ids, r.release, r.name, \
             r.package, r.introduced, r.fixed, r.last_affected \
             FROM {rows_sql} CROSS JOIN vuln_osv_ranges r \
             JOIN vuln_osv_advisories a ON a.id = r.advisory_id \
             WHERE r.release = value->>0 AND r.name = value->>1"
        ))
        .bind(serde_json::to_string(&pairs).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
        for row in rows {
            let advisory_cves: Vec<String> = stored_json("cve_ids", &row.cve_ids)?;
            let range = PackageRange {
                cve_ids: row
                    .range_cve_ids
                    .as_deref()
                    .map(|ids| stored_json("range_cve_ids", ids))
                    .transpose()?,
                release: row.release,
                name: row.name,
                package: row.package,
                introduced: row.introduced,
                fixed: row.fixed,
                last_affected: row.last_affected,
            };
            out.entry((range.release.clone(), range.name.clone()))
                .or_default()
                .push(StoredRange::of(&row.advisory_id, &advisory_cves, range));
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

/// Ranges read by (release, name), as [`ranges_for`] answers.
pub type RangesByName = HashMap<(String, String), Vec<StoredRange>>;

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

/// How many advisories and ranges are stored.
pub async fn counts(db: &Db) -> sqlx::Result<(i64, i64)> {
    let row = sqlx::query(
        "SELECT (SELECT COUNT(*) FROM vuln_osv_advisories) AS advisories, \
         (SELECT COUNT(*) FROM vuln_osv_ranges) AS ranges",
    )
    .fetch_one(&db.pool)
    .await?;
    Ok((row.try_get("advisories")?, row.try_get("ranges")?))
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
            ("Alpine:v3.19", Some("alpine:3.19")),
            ("Rocky Linux:9", Some("rocky:9")),
            ("AlmaLinux:9", Some("alma:9")),
            ("Red Hat:9", Some("rhel:9")),
            ("Red Hat:enterprise_linux:9::appstream", Some("rhel:9")),
            ("Red Hat:enterprise_linux:8::baseos", Some("rhel:8")),
            ("Red Hat:rhel_eus:9.2::appstream", None),
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

    #[test]
    fn cve_ids_wherever_each_distribution_writes_them() {
        for (record, expected) in [
            // AlmaLinux and Rocky: `related`.
            (
                json!({"id": "ALSA-2023:3661", "related": ["CVE-2023-32700"]}),
                vec!["CVE-2023-32700"],
            ),
            // Ubuntu's older records: the id and `upstream`.
            (
                json!({"id": "UBUNTU-CVE-2023-4911", "upstream": []}),
                vec!["CVE-2023-4911"],
            ),
            // Ubuntu's current records: the id alone, `aliases` empty.
            (
                json!({"id": "CVE-2023-22809", "aliases": [], "related": []}),
                vec!["CVE-2023-22809"],
            ),
            (json!({"id": "DEBIAN-CVE-2024-6387"}), vec!["CVE-2024-6387"]),
            // Debian's DSA and DLA: `aliases` or `upstream`; Red Hat:
            // `upstream`, with other ids beside.
            (
                json!({"id": "DLA-47-1", "aliases": ["CVE-2014-5461"]}),
                vec!["CVE-2014-5461"],
            ),
            (
                json!({"id": "RHSA-2025:9978", "upstream": ["CVE-2025-32462", "GHSA-aaaa-bbbb-cccc"],
                       "related": ["cve-2025-32463", "ALSA-2025:1"]}),
                vec!["CVE-2025-32462", "CVE-2025-32463"],
            ),
            (json!({"id": "ALBA-2022:8256", "related": []}), vec![]),
            (
                json!({"id": "X", "related": ["CVE-20-1", "CVE-2024-12x"]}),
                vec![],
            ),
        ] {
            assert_eq!(
                cve_ids_of(&record, record["id"].as_str().unwrap()),
                expected,
                "{record}"
            );
        }
    }

    #[test]
    fn binaries_in_every_published_shape() {
        for (binaries, expected) in [
            // Ubuntu since schema 1.6.3: one object of name: version.
            (
                json!([{"libssl3": "3.0.2-0ubuntu1.8", "openssl": "3.0.2-0ubuntu1.8"}]),
                vec!["libssl3", "openssl"],
            ),
            (
                json!([{"binary_name": "sudo-ldap", "binary_version": "1"}]),
                vec!["sudo-ldap"],
            ),
            (json!(["libc6", "libc-bin"]), vec!["libc6", "libc-bin"]),
            (json!(null), vec![]),
        ] {
            let affected = json!({"ecosystem_specific": {"binaries": binaries}});
            assert_eq!(binaries_of(&affected), expected, "{binaries}");
        }
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
        let withdrawn = json!({"id": "CVE-2024-0001", "modified": "2024-01-01T00:00:00Z",
            "withdrawn": "2024-02-01T00:00:00Z",
            "affected": [{"package": {"ecosystem": "Debian:12", "name": "x"},
                          "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}]}]}]});
        assert!(parse(&withdrawn).unwrap().ranges.is_empty());
        let unimportant = json!({"id": "DEBIAN-CVE-2024-0002", "modified": "2024-01-01T00:00:00Z",
            "upstream": ["CVE-2024-0002"],
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
