//! The verdict golden set (`testdata/golden_verdicts.tsv`): real inventory
//! rows against the real NVD, CVE 5 and OSV records of `tests/fixtures`,
//! through the same steps as a scan (package or CPE path, identification,
//! version rules, ranges), printed like an accuracy harness per platform.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use crate::matching::identify::{self, Application, Identification, Translations};
use crate::matching::packages;
use crate::matching::ranges;
use crate::reference::cpe::ProductKey;
use crate::reference::osv::{self, StoredRange};
use crate::reference::records::CandidateRow;
use crate::reference::records::{self, CveRecord, SOURCE_CNA, SOURCE_NVD};
use cairn_inventory::software::InstalledSoftware;

const GOLDEN: &str = include_str!("../testdata/golden_verdicts.tsv");

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

/// Every advisory of AlmaLinux 9's OSV set as published (the records
/// naming no CVE are left out, as an import leaves them).
fn almalinux() -> Vec<osv::Advisory> {
    use std::io::Read;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/osv/almalinux/almalinux9-all.zip");
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&path).unwrap()).unwrap();
    (0..archive.len())
        .filter_map(|index| {
            let mut text = String::new();
            archive
                .by_index(index)
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            osv::parse(&serde_json::from_str(&text).unwrap()).ok()
        })
        .collect()
}

/// The knowledge base as a scan reads it: match rows by product, the
/// dictionary of NVD's products, and the advisories' ranges.
struct Knowledge {
    rows: HashMap<ProductKey, Vec<CandidateRow>>,
    dictionary: HashSet<ProductKey>,
    ranges: osv::RangesByName,
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
    let mut ranges = osv::RangesByName::new();
    let mut advisories: Vec<osv::Advisory> = fixtures("osv")
        .iter()
        .chain(&fixtures("osv/ubuntu"))
        .map(|value| osv::parse(value).unwrap())
        .collect();
    advisories.extend(almalinux());
    for advisory in advisories {
        for range in &advisory.ranges {
            ranges
                .entry((range.release.clone(), range.name.clone()))
                .or_default()
                .push(StoredRange::of(
                    &advisory.id,
                    &advisory.cve_ids,
                    range.clone(),
                ));
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
    let releases = packages::releases_of(item);
    let names = packages::package_names(&item.application_name, table);
    if let Some(release) = packages::package_release(&releases, &names, version, &knowledge.ranges)
    {
        let ranges = packages::ranges_of_package(&knowledge.ranges, release, &names);
        return packages::evaluate(&ranges, release, version)
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
    let Some(version) = crate::scan::version_for_cpes(table, &key, item, platform) else {
        return BTreeSet::new();
    };
    let mut rows: Vec<CandidateRow> = knowledge.rows.get(&key).cloned().unwrap_or_default();
    for alias in table.cna_keys_for(&key) {
        let aliased = knowledge.rows.get(&alias.key).into_iter().flatten();
        rows.extend(
            aliased
                .filter(|c| alias.admits(&c.source, &c.row.target_sw))
                .cloned(),
        );
    }
    ranges::evaluate(&rows, &version, platform)
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
        // Per platform, and per distribution release on Linux.
        let group = match packages::releases_of(&item).first() {
            Some(release) => format!("{} {release}", cells[3]),
            None if cells[3] == "linux" => "linux (release unknown)".to_string(),
            None => cells[3].to_string(),
        };
        let at = match tallies.iter().position(|(p, _)| *p == group) {
            Some(at) => at,
            None => {
                tallies.push((group, Tally::default()));
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
    println!("| platform and release | rows | pass | mismatch | expected CVEs | matched | missing | false positives |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut total = Tally::default();
    tallies.sort_by(|a, b| a.0.cmp(&b.0));
    for (platform, t) in &tallies {
        println!(
            "| {platform} | {} | {} | {} | {} | {} | {} | {} |",
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
    assert!(total.rows >= 250, "{} rows", total.rows);
    assert_eq!(total.false_positive, 0, "{failures:#?}");
    // The bar, per platform and release as well as overall.
    for (group, t) in &tallies {
        assert!(
            t.matched * 100 >= t.expected * 97,
            "{group}: {} of {} expected CVEs: {failures:#?}",
            t.matched,
            t.expected
        );
    }
}
