//! CVE JSON 5 `affected[]` entries, as CNAs and the CISA ADP really write
//! them, read into match rows. Pure.
//!
//! The schema is loose and CNAs use it loosely; what each reading rests on:
//! - a start of `0`, `*`, `unspecified`, `n/a`, `all`, empty, or equal to
//!   the upper bound (Chrome writes `version` = `lessThan`) is no start;
//! - operator strings (`"< 8.8.2"`, `">= 2.0.0, < 2.3.1"`, GitHub's
//!   style) are ranges, in `version` and in the bounds;
//! - every `versions[]` entry is its own range. Where one product has
//!   several open-started ranges (Mozilla's ESR `< 115.14` and `< 128.1`),
//!   each above the lowest starts at its own release branch (`128`), the
//!   shortest prefix of its bound above the bound below: otherwise a fixed
//!   `115.14` would fall inside `< 128.1`;
//! - `unaffected` entries, `changes[]` and `defaultStatus: affected` are
//!   honoured by subtracting unaffected spans from affected ones. A
//!   default of `affected` counts only where the entry also names what is
//!   unaffected (the Linux kernel's style); alone it would flag everything;
//! - a `versionType` that is not orderable (`git`, commit ids) is skipped,
//!   never guessed; so is an affected entry without any bound;
//! - `cpes` (CVE 5.1, and the CISA ADP's entries) name the dictionary's
//!   product directly and win over the vendor and product text;
//! - an entry naming only a `packageName` in a source repository's
//!   `collectionURL` (Red Hat writes the upstream project so:
//!   `xz` at `https://github.com/tukaani-project/xz`) is keyed by the
//!   repository's owner and the package (`tukaani-project:xz`), for the
//!   translation table's CNA aliases to name in the dictionary's words;
//! - an entry whose `collectionURL` is a distribution's package index is
//!   that distribution's build of the package: its `cpes` name the
//!   operating system, not the package, and the distribution's own
//!   advisories (OSV) judge its builds, so it yields no CPE rows.

use std::cmp::Ordering;

use serde::Deserialize;
use serde_json::Value;

use crate::reference::cpe::{self, Cpe};
use crate::reference::cpe::{cna_slug, MatchRow};
use cairn_inventory::version::compare_release;

/// One `affected[]` entry.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Entry {
    vendor: Option<String>,
    product: Option<String>,
    platforms: Vec<String>,
    versions: Vec<Value>,
    default_status: Option<String>,
    cpes: Vec<String>,
    package_name: Option<String>,
    #[serde(rename = "collectionURL")]
    collection_url: Option<String>,
}

/// Package indexes of distributions (see the module docs): entries there
/// are a distribution's build, judged by its own advisories.
const DISTRIBUTION_COLLECTIONS: [&str; 4] = [
    "access.redhat.com",
    "packages.debian.org",
    "security-tracker.debian.org",
    "ubuntu.com",
];

/// The host of a collection URL and its path's first segment:
/// `https://github.com/tukaani-project/xz` → (`github.com`,
/// `Some("tukaani-project")`).
fn collection_parts(url: &str) -> Option<(String, Option<String>)> {
    let rest = url.trim().split_once("://").map_or(url.trim(), |(_, r)| r);
    let mut parts = rest.split('/').filter(|p| !p.is_empty());
    let host = parts.next()?.to_lowercase();
    let host = host.strip_prefix("www.").unwrap_or(&host).to_string();
    Some((host, parts.next().map(str::to_string)))
}

/// Whether an entry is a distribution's build of a package.
fn is_distribution_build(entry: &Entry) -> bool {
    entry.package_name.is_some()
        && entry
            .collection_url
            .as_deref()
            .and_then(collection_parts)
            .is_some_and(|(host, _)| {
                DISTRIBUTION_COLLECTIONS
                    .iter()
                    .any(|d| host == *d || host.ends_with(&format!(".{d}")))
            })
}

/// The key of an entry that names only a package in a source repository:
/// the repository's owner and the package. A registry without an owner in
/// its path (`https://pypi.org`) names no vendor, so no key.
fn package_key(entry: &Entry) -> Option<(String, String)> {
    let package = entry.package_name.as_deref()?;
    let (_, owner) = collection_parts(entry.collection_url.as_deref()?)?;
    let (vendor, product) = (cna_slug(&owner?), cna_slug(package));
    (!vendor.is_empty() && !product.is_empty()).then_some((vendor, product))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct VersionEntry {
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    less_than: Option<String>,
    #[serde(default)]
    less_than_or_equal: Option<String>,
    #[serde(default)]
    version_type: Option<String>,
    #[serde(default)]
    changes: Vec<Change>,
}

#[derive(Deserialize)]
struct Change {
    at: String,
    status: String,
}

/// Version types whose versions order like release numbers. Anything else
/// (`git`, `original_commit_for_fix`, ...) is left out.
const ORDERABLE_TYPES: [&str; 16] = [
    "custom", "semver", "maven", "python", "pypi", "npm", "generic", "version", "nuget", "gem",
    "go", "composer", "cargo", "rpm", "deb", "release",
];

/// Starts that mean "from the beginning".
const OPEN_STARTS: [&str; 7] = ["", "0", "*", "unspecified", "n/a", "all", "-"];

/// One end of a span of versions.
#[derive(Debug, Clone, PartialEq)]
struct Edge {
    version: String,
    inclusive: bool,
}

/// A span of versions; `None` is unbounded on that side.
#[derive(Debug, Clone, PartialEq)]
struct Span {
    start: Option<Edge>,
    end: Option<Edge>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Status {
    Affected,
    Unaffected,
}

impl Status {
    fn parse(text: &str) -> Option<Status> {
        match text.trim().to_ascii_lowercase().as_str() {
            "affected" => Some(Status::Affected),
            "unaffected" => Some(Status::Unaffected),
            // `unknown` says nothing either way.
            _ => None,
        }
    }
}

fn edge(version: &str, inclusive: bool) -> Option<Edge> {
    Some(Edge {
        version: version.to_string(),
        inclusive,
    })
}

/// The tighter of two bounds on one side: the later start
/// (`wins: Greater`) or the earlier end (`wins: Less`). `None` is
/// unbounded, so the other always wins; at the same version the bound is
/// inclusive only if both are.
fn tighter(a: &Option<Edge>, b: &Option<Edge>, wins: Ordering) -> Option<Edge> {
    match (a, b) {
        (None, x) | (x, None) => x.clone(),
        (Some(x), Some(y)) => Some(match compare_release(&x.version, &y.version) {
            Ordering::Equal => Edge {
                version: x.version.clone(),
                inclusive: x.inclusive && y.inclusive,
            },
            order if order == wins => x.clone(),
            _ => y.clone(),
        }),
    }
}

impl Span {
    fn is_empty(&self) -> bool {
        match (&self.start, &self.end) {
            (Some(s), Some(e)) => match compare_release(&s.version, &e.version) {
                Ordering::Greater => true,
                Ordering::Equal => !(s.inclusive && e.inclusive),
                Ordering::Less => false,
            },
            _ => false,
        }
    }

    /// Whether every version of `other` is inside `self`.
    fn covers(&self, other: &Span) -> bool {
        let start_ok = match (&self.start, &other.start) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(a), Some(b)) => match compare_release(&a.version, &b.version) {
                Ordering::Less => true,
                Ordering::Equal => a.inclusive || !b.inclusive,
                Ordering::Greater => false,
            },
        };
        let end_ok = match (&self.end, &other.end) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(a), Some(b)) => match compare_release(&a.version, &b.version) {
                Ordering::Greater => true,
                Ordering::Equal => a.inclusive || !b.inclusive,
                Ordering::Less => false,
            },
        };
        start_ok && end_ok
    }

    /// What is left of `self` without `other`: up to two spans.
    fn minus(&self, other: &Span) -> Vec<Span> {
        let mut out = vec![];
        if let Some(cut) = &other.start {
            let below = Span {
                start: self.start.clone(),
                end: tighter(
                    &self.end,
                    &edge(&cut.version, !cut.inclusive),
                    Ordering::Less,
                ),
            };
            out.push(below);
        }
        if let Some(cut) = &other.end {
            let above = Span {
                start: tighter(
                    &self.start,
                    &edge(&cut.version, !cut.inclusive),
                    Ordering::Greater,
                ),
                end: self.end.clone(),
            };
            out.push(above);
        }
        out.retain(|s| !s.is_empty());
        out
    }
}

/// A bound as written: operators stripped (`"< 8.8.2"` → `8.8.2`); `None`
/// for `*` (no bound).
fn bound_text(raw: &str) -> Option<&str> {
    let text = raw
        .trim()
        .trim_start_matches(['<', '>', '='])
        .trim_start_matches('v')
        .trim();
    (!text.is_empty() && text != "*").then_some(text)
}

/// An upper bound; `6.1.*` with `lessThanOrEqual` is every 6.1 release,
/// i.e. below 6.2.
fn upper(raw: &str, inclusive: bool) -> Option<Option<Edge>> {
    let Some(text) = bound_text(raw) else {
        return Some(None);
    };
    if let Some(prefix) = text.strip_suffix(".*") {
        if !inclusive {
            return Some(edge(prefix, false));
        }
        let (head, last) = prefix.rsplit_once('.').unwrap_or(("", prefix));
        let next = last.parse::<u64>().ok()? + 1;
        let successor = if head.is_empty() {
            next.to_string()
        } else {
            format!("{head}.{next}")
        };
        return Some(edge(&successor, false));
    }
    comparable(text).then(|| edge(text, inclusive))
}

fn comparable(version: &str) -> bool {
    version.bytes().any(|b| b.is_ascii_digit())
}

/// `">= 2.0.0, < 2.3.1"` → that span; `None` when a clause is not read.
fn operator_span(text: &str) -> Option<Span> {
    let mut span = Span {
        start: None,
        end: None,
    };
    for clause in text
        .split([',', '&'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        let (op, rest) = [">=", "<=", ">", "<", "==", "="]
            .iter()
            .find_map(|op| clause.strip_prefix(op).map(|rest| (*op, rest.trim())))?;
        if !comparable(rest) {
            return None;
        }
        match op {
            ">=" => span.start = edge(rest, true),
            ">" => span.start = edge(rest, false),
            "<=" => span.end = edge(rest, true),
            "<" => span.end = edge(rest, false),
            _ => {
                span.start = edge(rest, true);
                span.end = edge(rest, true);
            }
        }
    }
    Some(span)
}

/// The spans one `versions[]` entry states, each with its status; empty
/// when the entry cannot be read safely.
fn spans_of(entry: &VersionEntry) -> Vec<(Span, Status)> {
    let Some(status) = entry.status.as_deref().and_then(Status::parse) else {
        return vec![];
    };
    if let Some(kind) = entry.version_type.as_deref() {
        if !ORDERABLE_TYPES.contains(&kind.trim().to_ascii_lowercase().as_str()) {
            return vec![];
        }
    }
    let version = entry.version.as_deref().unwrap_or("").trim();
    let end = match (&entry.less_than, &entry.less_than_or_equal) {
        (Some(raw), _) => upper(raw, false),
        (None, Some(raw)) => upper(raw, true),
        (None, None) => None,
    };
    let bounded = end.is_some();
    let Some(mut span) = (if version.starts_with(['<', '>', '=']) {
        operator_span(version)
    } else {
        let end_text = end.clone().flatten().map(|e| e.version);
        let open = OPEN_STARTS.contains(&version.to_ascii_lowercase().as_str())
            || end_text.as_deref() == Some(version);
        match (open, bounded) {
            (true, true) => Some(Span {
                start: None,
                end: None,
            }),
            // "Every version" with no bound says too little to flag
            // anything on.
            (true, false) => None,
            (false, _) if !comparable(version) => None,
            (false, true) => Some(Span {
                start: edge(version, true),
                end: None,
            }),
            (false, false) => Some(Span {
                start: edge(version, true),
                end: edge(version, true),
            }),
        }
    }) else {
        return vec![];
    };
    match end {
        Some(Some(end)) => span.end = Some(end),
        Some(None) => {}
        // A bound was given but could not be read.
        None if entry.less_than.is_some() || entry.less_than_or_equal.is_some() => return vec![],
        None => {}
    }
    if span.is_empty() {
        return vec![];
    }
    if entry.changes.is_empty() || span.start.is_none() {
        return vec![(span, status)];
    }
    // `changes[]`: the status switches at each `at`, in version order.
    let mut changes: Vec<(&str, Status)> = entry
        .changes
        .iter()
        .filter_map(|c| Some((c.at.trim(), Status::parse(&c.status)?)))
        .filter(|(at, _)| comparable(at))
        .collect();
    changes.sort_by(|a, b| compare_release(a.0, b.0));
    let mut out = vec![];
    let (mut from, mut current) = (span.start.clone(), status);
    for (at, next) in changes {
        out.push((
            Span {
                start: from,
                end: edge(at, false),
            },
            current,
        ));
        (from, current) = (edge(at, true), next);
    }
    out.push((
        Span {
            start: from,
            end: span.end.clone(),
        },
        current,
    ));
    out.retain(|(s, _)| !s.is_empty());
    out
}

/// The shortest prefix of `bound` (by `.`) above `below`: where the release
/// branch that `bound` fixes starts.
fn branch_start(bound: &str, below: &str) -> Option<String> {
    let parts: Vec<&str> = bound.split('.').collect();
    (1..parts.len())
        .map(|n| parts[..n].join("."))
        .find(|prefix| compare_release(prefix, below) == Ordering::Greater)
}

/// The product keys an entry names: its CPEs' (vendor, product, target),
/// else its vendor and product text as slugs.
fn keys_of(entry: &Entry) -> Vec<(String, String, String)> {
    if is_distribution_build(entry) {
        return vec![];
    }
    let mut keys: Vec<(String, String, String)> = entry
        .cpes
        .iter()
        .filter_map(|c| Cpe::parse(c))
        .map(|c| {
            let target = c.platform_target();
            let target = if cpe::is_any(&target) {
                "*".to_string()
            } else {
                target
            };
            (c.vendor, c.product, target)
        })
        .collect();
    if keys.is_empty() {
        let named = |text: &Option<String>| {
            text.as_deref()
                .filter(|t| !t.trim().is_empty() && !t.trim().eq_ignore_ascii_case("n/a"))
                .map(str::to_string)
        };
        match (named(&entry.vendor), named(&entry.product)) {
            (Some(vendor), Some(product)) => {
                let (product_name, named_platform) = split_platform(&product);
                let target = target_of(entry, named_platform);
                let (vendor, product) = (cna_slug(&vendor), cna_slug(product_name));
                if vendor.is_empty() || product.is_empty() {
                    return vec![];
                }
                keys.push((vendor, product, target));
            }
            _ => keys.extend(
                package_key(entry)
                    .map(|(vendor, product)| (vendor, product, target_of(entry, None))),
            ),
        }
    }
    keys.sort();
    keys.dedup();
    keys
}

/// The platform an entry is for: the one its product names, else its one
/// listed platform (several restrict nothing), else any (`*`).
fn target_of(entry: &Entry, named_platform: Option<&str>) -> String {
    named_platform
        .map(str::to_string)
        .or_else(|| match entry.platforms.as_slice() {
            [one] => Some(one.to_lowercase().replace(' ', "_")),
            _ => None,
        })
        .unwrap_or_else(|| "*".into())
}

/// `Zoom Client for Meetings for Windows` → (`Zoom Client for Meetings`,
/// `windows`): CNAs often name the platform in the product.
fn split_platform(product: &str) -> (&str, Option<&'static str>) {
    let lower = product.to_lowercase();
    for (suffix, platform) in [
        (" for windows", "windows"),
        (" for macos", "macos"),
        (" for mac", "macos"),
        (" for linux", "linux"),
        (" for android", "android"),
        (" for ios", "iphone_os"),
    ] {
        if lower.ends_with(suffix) {
            return (&product[..product.len() - suffix.len()], Some(platform));
        }
    }
    (product, None)
}

/// What one container (the CNA's, or one ADP's) says about one product.
#[derive(Default)]
struct Statement {
    criteria: String,
    affected: Vec<Span>,
    unaffected: Vec<Span>,
}

/// The match rows of one container's `affected[]` array. An entry that is
/// not an object of the expected shape is skipped.
pub fn rows_of_container(affected: &Value, source_label: &str) -> Vec<MatchRow> {
    let entries: Vec<Entry> = affected
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| serde_json::from_value(e.clone()).ok())
        .collect();
    // Statements by product key, in first-seen order.
    let mut statements: Vec<((String, String, String), Statement)> = vec![];
    for entry in &entries {
        let mut affected = vec![];
        let mut unaffected = vec![];
        for version in &entry.versions {
            let Ok(version) = serde_json::from_value::<VersionEntry>(version.clone()) else {
                continue;
            };
            for (span, status) in spans_of(&version) {
                match status {
                    Status::Affected => affected.push(span),
                    Status::Unaffected => unaffected.push(span),
                }
            }
        }
        let default_affected = entry
            .default_status
            .as_deref()
            .and_then(Status::parse)
            .is_some_and(|s| s == Status::Affected);
        if default_affected && !unaffected.is_empty() {
            affected.push(Span {
                start: None,
                end: None,
            });
        }
        if affected.is_empty() {
            continue;
        }
        let criteria = format!(
            "{source_label}:{}:{}",
            entry.vendor.as_deref().unwrap_or(""),
            entry.product.as_deref().unwrap_or("")
        );
        for key in keys_of(entry) {
            let at = match statements.iter().position(|(k, _)| *k == key) {
                Some(at) => at,
                None => {
                    statements.push((
                        key,
                        Statement {
                            criteria: criteria.clone(),
                            ..Default::default()
                        },
                    ));
                    statements.len() - 1
                }
            };
            let statement = &mut statements[at].1;
            statement.affected.extend(affected.iter().cloned());
            statement.unaffected.extend(unaffected.iter().cloned());
        }
    }
    let mut rows = vec![];
    for ((vendor, product, target_sw), mut statement) in statements {
        start_open_branches(&mut statement.affected);
        let mut spans = statement.affected;
        for cut in &statement.unaffected {
            spans = spans.iter().flat_map(|s| s.minus(cut)).collect();
        }
        for (index, span) in spans.iter().enumerate() {
            // A span inside another (or a repeat of an earlier one) adds
            // nothing but a second row for the same finding.
            let redundant = spans.iter().enumerate().any(|(other, wider)| {
                other != index && wider.covers(span) && (!span.covers(wider) || other < index)
            });
            if redundant {
                continue;
            }
            let base = MatchRow {
                vendor: vendor.clone(),
                product: product.clone(),
                part: "a".into(),
                cpe_version: "*".into(),
                cpe_update: "*".into(),
                target_sw: target_sw.clone(),
                criteria: statement.criteria.clone(),
                match_id: None,
                version_start: None,
                start_including: true,
                version_end: None,
                end_including: false,
                vulnerable: true,
                negate: false,
                platforms: vec![],
            };
            let row = match (&span.start, &span.end) {
                // Every version: only reachable through defaultStatus with
                // nothing subtracted, which `rows_of_container` excludes.
                (None, None) => continue,
                (Some(s), Some(e)) if s == e => MatchRow {
                    cpe_version: s.version.clone(),
                    ..base
                },
                (start, end) => MatchRow {
                    version_start: start.as_ref().map(|s| s.version.clone()),
                    start_including: start.as_ref().is_none_or(|s| s.inclusive),
                    version_end: end.as_ref().map(|e| e.version.clone()),
                    end_including: end.as_ref().is_some_and(|e| e.inclusive),
                    ..base
                },
            };
            rows.push(row);
        }
    }
    rows
}

/// Several open-started ranges of one product: each above the lowest
/// starts at its release branch (see the module docs).
fn start_open_branches(spans: &mut [Span]) {
    let mut open: Vec<usize> = (0..spans.len())
        .filter(|&i| spans[i].start.is_none() && spans[i].end.is_some())
        .collect();
    if open.len() < 2 {
        return;
    }
    let end_of = |spans: &[Span], i: usize| spans[i].end.as_ref().map(|e| e.version.clone());
    open.sort_by(|&a, &b| {
        compare_release(
            &end_of(spans, a).unwrap_or_default(),
            &end_of(spans, b).unwrap_or_default(),
        )
    });
    let bounds: Vec<String> = open
        .iter()
        .map(|&i| end_of(spans, i).unwrap_or_default())
        .collect();
    for k in 1..open.len() {
        if compare_release(&bounds[k], &bounds[k - 1]) == Ordering::Equal {
            spans[open[k]].start = spans[open[k - 1]].start.clone();
            continue;
        }
        if let Some(start) = branch_start(&bounds[k], &bounds[k - 1]) {
            spans[open[k]].start = edge(&start, true);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `(vendor:product, start, end)` with `[`/`(` marking inclusion.
    fn ranges(affected: Value) -> Vec<String> {
        rows_of_container(&affected, "cna")
            .into_iter()
            .map(|r| {
                let key = format!("{}:{}", r.vendor, r.product);
                let target = if r.target_sw == "*" {
                    String::new()
                } else {
                    format!(" on {}", r.target_sw)
                };
                if r.version_start.is_none() && r.version_end.is_none() {
                    return format!("{key} = {}{target}", r.cpe_version);
                }
                format!(
                    "{key} {}{}, {}{}{target}",
                    if r.start_including { "[" } else { "(" },
                    r.version_start.unwrap_or_else(|| "-inf".into()),
                    r.version_end.unwrap_or_else(|| "inf".into()),
                    if r.end_including { "]" } else { ")" },
                )
            })
            .collect()
    }

    #[test]
    fn how_cnas_write_ranges() {
        for (case, affected, expected) in [
            (
                "Chrome: version equal to lessThan is no start",
                json!([{"vendor": "Google", "product": "Chrome", "versions": [
                    {"version": "120.0.6099.224", "status": "affected",
                     "lessThan": "120.0.6099.224", "versionType": "custom"}]}]),
                vec!["google:chrome [-inf, 120.0.6099.224)"],
            ),
            (
                "Red Hat: the upstream package by repository, the RHEL builds skipped",
                json!([
                    {"packageName": "xz", "collectionURL": "https://github.com/tukaani-project/xz",
                     "defaultStatus": "unaffected", "versions": [
                        {"status": "affected", "version": "5.6.0"},
                        {"status": "affected", "version": "5.6.1"}]},
                    {"vendor": "Red Hat", "product": "Red Hat Enterprise Linux 9",
                     "collectionURL": "https://access.redhat.com/downloads/content/package-browser/",
                     "packageName": "xz", "defaultStatus": "affected",
                     "cpes": ["cpe:/o:redhat:enterprise_linux:9"], "versions": [
                        {"status": "affected", "version": "0", "lessThan": "5.2.5-9.el9"},
                        {"status": "unaffected", "version": "5.2.5-9.el9"}]}]),
                vec!["tukaani-project:xz = 5.6.0", "tukaani-project:xz = 5.6.1"],
            ),
            (
                "a package in a registry names no vendor",
                json!([{"vendor": "n/a", "product": "n/a", "packageName": "requests",
                        "collectionURL": "https://pypi.org", "versions": [
                    {"version": "0", "lessThan": "2.32.0", "status": "affected"}]}]),
                vec![],
            ),
            (
                "GitHub: operators in the version string",
                json!([{"vendor": "notepad-plus-plus", "product": "notepad-plus-plus", "versions": [
                    {"version": "< 8.8.2", "status": "affected"}]}]),
                vec!["notepad-plus-plus:notepad-plus-plus [-inf, 8.8.2)"],
            ),
            (
                "GitHub: two clauses",
                json!([{"vendor": "pallets", "product": "jinja", "versions": [
                    {"version": ">= 2.0.0, < 2.3.1", "status": "affected"},
                    {"version": "<= 1.2", "status": "affected"}]}]),
                vec!["pallets:jinja [2.0.0, 2.3.1)", "pallets:jinja [-inf, 1.2]"],
            ),
            (
                "operators in lessThan",
                json!([{"vendor": "v", "product": "p", "versions": [
                    {"version": "1.0", "lessThan": "< 1.4", "status": "affected"}]}]),
                vec!["v:p [1.0, 1.4)"],
            ),
            (
                "open starts",
                json!([
                    {"vendor": "v", "product": "a", "versions": [
                        {"version": "0", "lessThan": "2", "status": "affected"}]},
                    {"vendor": "v", "product": "b", "versions": [
                        {"version": "n/a", "lessThanOrEqual": "3.1", "status": "affected"}]},
                    {"vendor": "v", "product": "c", "versions": [
                        {"version": "*", "lessThan": "4", "status": "affected"}]}]),
                vec!["v:a [-inf, 2)", "v:b [-inf, 3.1]", "v:c [-inf, 4)"],
            ),
            (
                "Mozilla: one bound per ESR branch, each its own range",
                json!([
                    {"vendor": "Mozilla", "product": "Firefox ESR", "versions": [
                        {"version": "unspecified", "lessThan": "115.14", "status": "affected", "versionType": "custom"}]},
                    {"vendor": "Mozilla", "product": "Firefox ESR", "versions": [
                        {"version": "unspecified", "lessThan": "128.1", "status": "affected", "versionType": "custom"}]}]),
                vec![
                    "mozilla:firefox_esr [-inf, 115.14)",
                    "mozilla:firefox_esr [128, 128.1)",
                ],
            ),
            (
                "exact versions; git and unknown statuses skipped",
                json!([{"vendor": "v", "product": "p", "versions": [
                    {"version": "1.2.3", "status": "affected"},
                    {"version": "abc123", "lessThan": "def456", "status": "affected", "versionType": "git"},
                    {"version": "2.0", "lessThan": "2.1", "status": "unknown"},
                    {"version": "unspecified", "status": "affected"}]}]),
                vec!["v:p = 1.2.3"],
            ),
            (
                "changes[]: fixed from a point on",
                json!([{"vendor": "v", "product": "p", "versions": [
                    {"version": "1.0", "lessThan": "3.0", "status": "affected", "changes": [
                        {"at": "2.5", "status": "affected"},
                        {"at": "1.5", "status": "unaffected"}]}]}]),
                vec!["v:p [1.0, 1.5)", "v:p [2.5, 3.0)"],
            ),
            (
                "Linux kernel: affected by default, fixed branches unaffected",
                json!([{"vendor": "Linux", "product": "Linux", "defaultStatus": "affected", "versions": [
                    {"version": "4.19", "status": "affected"},
                    {"version": "0", "lessThan": "4.19", "status": "unaffected", "versionType": "semver"},
                    {"version": "6.1.75", "lessThanOrEqual": "6.1.*", "status": "unaffected", "versionType": "semver"},
                    {"version": "6.8", "lessThanOrEqual": "*", "status": "unaffected", "versionType": "original_commit_for_fix"},
                    {"version": "6.7", "lessThanOrEqual": "*", "status": "unaffected", "versionType": "semver"}]}]),
                vec!["linux:linux [4.19, 6.1.75)", "linux:linux [6.2, 6.7)"],
            ),
            (
                "default affected without unaffected entries flags nothing more",
                json!([{"vendor": "v", "product": "p", "defaultStatus": "affected", "versions": [
                    {"version": "2.0", "status": "affected"}]}]),
                vec!["v:p = 2.0"],
            ),
            (
                "CPEs name the product; platform from the name",
                json!([
                    {"vendor": "google", "product": "chrome",
                     "cpes": ["cpe:2.3:a:google:chrome:*:*:*:*:*:*:*:*"],
                     "versions": [{"version": "0", "lessThan": "129", "status": "affected"}]},
                    {"vendor": "Zoom", "product": "Zoom Workplace for Windows",
                     "versions": [{"version": "0", "lessThan": "6.1", "status": "affected"}]}]),
                vec![
                    "google:chrome [-inf, 129)",
                    "zoom:zoom_workplace [-inf, 6.1) on windows",
                ],
            ),
            (
                "malformed entries are skipped, the rest read",
                json!([
                    "not an object",
                    {"vendor": "v", "product": "p", "versions": [
                        42,
                        {"version": {"nested": true}, "status": "affected"},
                        {"version": "1.0", "lessThan": "no digits", "status": "affected"},
                        {"version": "1.0", "lessThan": "2.0", "status": "affected"}]},
                    {"vendor": "n/a", "product": "n/a", "versions": [
                        {"version": "1.0", "status": "affected"}]}]),
                vec!["v:p [1.0, 2.0)"],
            ),
        ] {
            assert_eq!(ranges(affected), expected, "{case}");
        }
    }

    #[test]
    fn branch_starts() {
        assert_eq!(branch_start("128.1", "115.14").as_deref(), Some("128"));
        assert_eq!(branch_start("5.2.3", "5.1.9").as_deref(), Some("5.2"));
        assert_eq!(branch_start("5.1.9", "5.1.8"), None);
    }
}
