//! Linux distributions' own security advisories in the OSV format
//! (Debian, Ubuntu, Alpine, Rocky, Alma, Red Hat publish them): read and
//! stored. Distributions backport fixes without moving the upstream
//! version, so only their own fixed package versions say whether a
//! package is fixed; `matching::packages` judges installed packages by
//! these ranges.
//!
//! - [`parse`] reads one OSV record (pure);
//! - [`write_advisories`] and [`ranges_for`] own `vuln_osv_advisories` and
//!   `vuln_osv_ranges`.
//!
//! Advisories name source packages; Ubuntu's also list the binaries built
//! from them, which are what an inventory reports (`libssl3` of
//! `openssl`), and both are kept as names to match.

use std::collections::{HashMap, HashSet};

use serde_json::{json, Value};
use sqlx::Row;

use crate::reference::cpe::ProductKey;
use crate::reference::records::parse_time;
use crate::reference::store;
use cairn_core::db::{stored_json, Db};

pub use crate::reference::records::SOURCE_OSV;

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
    store::know_cves(&mut tx, db.backend, &placeholders, SOURCE_OSV, generation).await?;
    store::stamp_products(&mut tx, db.backend, &change_rows, generation).await?;
    tx.commit().await?;
    outcome.written = fresh.len() as u64;
    Ok(outcome)
}

/// A stored range as read, with its advisory's CVEs.
#[derive(sqlx_macros::FromRow)]
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

/// Ranges read by (release, name), as [`ranges_for`] answers.
pub type RangesByName = HashMap<(String, String), Vec<StoredRange>>;

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
    fn releases_of_ecosystems() {
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
