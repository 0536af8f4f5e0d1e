//! The verdict golden set (`testdata/golden_verdicts.tsv`): real inventory
//! rows against the real NVD, CVE 5 and OSV records of `tests/fixtures`,
//! through the same steps as a scan (package or CPE path, identification,
//! version rules, ranges), printed like an accuracy harness per platform.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::identify::{self, Application, Identification, ProductKey, Translations};
use super::matching::{self, CandidateRow};
use super::osv::{self, StoredRange};
use super::records::{self, CveRecord, SOURCE_CNA, SOURCE_NVD};
use cairn_inventory::software::InstalledSoftware;

const GOLDEN: &str = include_str!("testdata/golden_verdicts.tsv");

fn fixtures(folder: &str) -> Vec<Value> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(folder);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

/// The knowledge base as a scan reads it: match rows by product, the
/// dictionary of NVD's products, and the advisories' ranges.
struct Knowledge {
    rows: HashMap<ProductKey, Vec<CandidateRow>>,
    dictionary: HashSet<ProductKey>,
    ranges: HashMap<(String, String), Vec<StoredRange>>,
}

fn knowledge() -> Knowledge {
    let mut cves: Vec<CveRecord> = fixtures("nvd")
        .into_iter()
        .map(|v| records::from_nvd(v).unwrap())
        .collect();
    cves.extend(
        fixtures("cve5")
            .iter()
            .map(|v| records::from_cve5(v).unwrap()),
    );
    let mut rows: HashMap<ProductKey, Vec<CandidateRow>> = HashMap::new();
    let mut dictionary = HashSet::new();
    for record in &cves {
        let candidates = record
            .nvd_rows
            .iter()
            .map(|r| (SOURCE_NVD, r))
            .chain(record.cna_rows.iter().flatten().map(|r| (SOURCE_CNA, r)));
        for (source, row) in candidates {
            let key = ProductKey {
                vendor: row.vendor.clone(),
                product: row.product.clone(),
            };
            if source == SOURCE_NVD {
                dictionary.insert(key.clone());
            }
            rows.entry(key).or_default().push(CandidateRow {
                cve_id: record.id.clone(),
                source: source.into(),
                row: row.clone(),
                rejected: record.status == "Rejected",
                has_nvd_config: record.has_nvd_config,
            });
        }
    }
    let mut ranges: HashMap<(String, String), Vec<StoredRange>> = HashMap::new();
    for value in fixtures("osv") {
        let advisory = osv::parse(&value).unwrap();
        for range in &advisory.ranges {
            ranges
                .entry((range.release.clone(), range.name.clone()))
                .or_default()
                .push(StoredRange {
                    advisory_id: advisory.id.clone(),
                    cve_ids: advisory.cve_ids.clone(),
                    range: range.clone(),
                });
        }
    }
    Knowledge {
        rows,
        dictionary,
        ranges,
    }
}

/// The CVEs one row is found exposed to, as a scan finds them.
fn verdict(
    knowledge: &Knowledge,
    table: &Translations,
    item: &InstalledSoftware,
) -> BTreeSet<String> {
    let version = item.version.as_deref().unwrap_or("");
    let releases = osv::releases_of(item);
    let names = osv::package_names(&item.application_name, table);
    let known = |r: &str, n: &str| {
        osv::advisory_releases(r)
            .into_iter()
            .any(|r| knowledge.ranges.contains_key(&(r, n.to_string())))
    };
    if let Some(release) = osv::package_release(&releases, &names, version, known) {
        let ranges = osv::ranges_of_package(&knowledge.ranges, release, &names);
        return osv::evaluate(&ranges, release, version)
            .into_iter()
            .map(|h| h.cve_id)
            .collect();
    }
    let app = Application {
        name: &item.application_name,
        publisher: item.publisher.as_deref(),
    };
    let Identification::Product(key) =
        identify::identify(app, &HashMap::new(), table, &knowledge.dictionary)
    else {
        return BTreeSet::new();
    };
    let platform = item
        .os_platform
        .as_deref()
        .and_then(cairn_inventory::normalize::platform_label);
    let Some(version) = super::scan::version_for_cpes(table, &key, item, platform) else {
        return BTreeSet::new();
    };
    let mut rows: Vec<CandidateRow> = knowledge.rows.get(&key).cloned().unwrap_or_default();
    for alias in table.cna_keys_for(&key) {
        rows.extend(knowledge.rows.get(&alias).cloned().unwrap_or_default());
    }
    matching::evaluate(&rows, &version, platform)
        .into_iter()
        .map(|h| h.cve_id)
        .collect()
}

#[derive(Default)]
struct Tally {
    rows: usize,
    pass: usize,
    mismatch: usize,
    expected: usize,
    matched: usize,
    missing: usize,
    false_positive: usize,
}

#[test]
fn golden_verdicts() {
    let knowledge = knowledge();
    let table = Translations::shipped();
    let mut tallies: Vec<(String, Tally)> = vec![];
    let mut failures = vec![];
    for line in GOLDEN
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("name\t") && !l.trim().is_empty())
    {
        let cells: Vec<&str> = line.split('\t').collect();
        assert_eq!(cells.len(), 6, "{line}");
        let text = |s: &str| Some(Arc::<str>::from(s)).filter(|s| !s.is_empty());
        let item = InstalledSoftware {
            device_name: Arc::from("golden"),
            application_name: Arc::from(cells[0]),
            publisher: text(cells[1]),
            version: text(cells[2]),
            os_platform: text(cells[3]),
            os_version: text(cells[4]),
        };
        let expected: BTreeSet<String> = cells[5]
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty() && *c != "-")
            .map(str::to_string)
            .collect();
        let got = verdict(&knowledge, &table, &item);
        let at = match tallies.iter().position(|(p, _)| p == cells[3]) {
            Some(at) => at,
            None => {
                tallies.push((cells[3].to_string(), Tally::default()));
                tallies.len() - 1
            }
        };
        let tally = &mut tallies[at].1;
        tally.rows += 1;
        tally.expected += expected.len();
        tally.matched += expected.intersection(&got).count();
        let missing: Vec<&String> = expected.difference(&got).collect();
        let extra: Vec<&String> = got.difference(&expected).collect();
        tally.missing += missing.len();
        tally.false_positive += extra.len();
        if got == expected {
            tally.pass += 1;
        } else {
            tally.mismatch += 1;
            failures.push(format!(
                "{} {} on {} {}: missing {missing:?}, false positives {extra:?}",
                cells[0], cells[2], cells[3], cells[4]
            ));
        }
    }
    println!("platform  rows  pass  mismatch  expected CVEs  matched  missing  false positives");
    let mut total = Tally::default();
    for (platform, t) in &tallies {
        println!(
            "{platform:<8}  {:>4}  {:>4}  {:>8}  {:>13}  {:>7}  {:>7}  {:>15}",
            t.rows, t.pass, t.mismatch, t.expected, t.matched, t.missing, t.false_positive
        );
        total.rows += t.rows;
        total.pass += t.pass;
        total.expected += t.expected;
        total.matched += t.matched;
        total.false_positive += t.false_positive;
    }
    println!(
        "all: {} rows, {} pass; {} of {} expected CVEs matched; {} false positives",
        total.rows, total.pass, total.matched, total.expected, total.false_positive
    );
    for failure in &failures {
        println!("  {failure}");
    }
    assert!(total.rows >= 40, "{} rows", total.rows);
    assert_eq!(total.false_positive, 0, "{failures:#?}");
    assert!(total.matched * 100 >= total.expected * 95, "{failures:#?}");
}
