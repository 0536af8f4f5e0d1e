//! Which CPE product (vendor, product) an installed application is, in
//! three layers: a tenant's own mapping, the shipped translation table,
//! then a dictionary lookup where vendor and product must both agree. An
//! application none of them settles, or that the dictionary finds more
//! than one answer for, is left unmatched for a person to map: a wrong
//! product costs more than a missing one.

use std::collections::{BTreeSet, HashMap, HashSet};

use regex::Regex;

use crate::reference::cpe::ProductKey;
use cairn_inventory::software::InstalledSoftware;
use serde::Deserialize;

/// An application as installed: its name and publisher (or the vendor a
/// source reported; `None` when empty). Identification depends on nothing
/// else, so it is done once per `AppId`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AppId {
    pub name: String,
    pub publisher: Option<String>,
}

impl AppId {
    pub fn of(item: &InstalledSoftware) -> AppId {
        AppId {
            name: item.application_name.to_string(),
            publisher: AppId::publisher_of(item).map(str::to_string),
        }
    }

    pub fn publisher_of(item: &InstalledSoftware) -> Option<&str> {
        item.publisher.as_deref().filter(|p| !p.is_empty())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identification {
    Product(ProductKey),
    /// A rule (or the tenant) says this is never matched.
    Skipped,
    /// Nothing settled it; `candidates` are the dictionary's answers when
    /// there were several.
    Unmatched {
        reason: &'static str,
        candidates: Vec<String>,
    },
}

#[derive(Deserialize)]
struct TableFile {
    rules: Vec<RuleFile>,
    #[serde(default)]
    cna_aliases: HashMap<String, String>,
    #[serde(default)]
    cna_platform_aliases: HashMap<String, String>,
    #[serde(default)]
    version_rules: Vec<VersionRuleFile>,
    #[serde(default)]
    package_sources: HashMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VersionRuleFile {
    product: String,
    #[serde(default)]
    when: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    from_name: Option<String>,
}

/// How a product's reported version reads in its CPEs' scheme.
struct VersionRule {
    /// `vendor:product`, or `vendor:*` for every product of the vendor.
    vendor: String,
    product: Option<String>,
    rewrite: Rewrite,
}

enum Rewrite {
    /// Reported versions matching `when` are rewritten by its captures into
    /// `template` (`$1`, `${2}`).
    To { when: Regex, template: String },
    /// For reported versions matching `when` (all when absent): the release
    /// the `name` pattern's capture finds in the application's name (the
    /// release a JetBrains IDE shows beside its build number); no match
    /// means the version cannot be read in the CPE's scheme.
    FromName { when: Option<Regex>, name: Regex },
}

impl VersionRule {
    fn applies(&self, key: &ProductKey, version: &str) -> bool {
        let when = match &self.rewrite {
            Rewrite::To { when, .. } => Some(when),
            Rewrite::FromName { when, .. } => when.as_ref(),
        };
        self.vendor == key.vendor
            && self.product.as_ref().is_none_or(|p| *p == key.product)
            && when.is_none_or(|w| w.is_match(version))
    }
}

#[derive(Deserialize)]
struct RuleFile {
    name: String,
    #[serde(default)]
    publisher: Option<String>,
    #[serde(default)]
    cpe: Option<String>,
    #[serde(default)]
    skip: bool,
    #[serde(default)]
    app_bundle: bool,
}

struct Rule {
    name: Regex,
    publisher: Option<Regex>,
    /// Only for a macOS bundle (`Docker.app`): a name that alone says
    /// little elsewhere (a Linux package `docker` is another program).
    app_bundle: bool,
    /// `vendor:product`, where `$1` takes the name's first capture.
    cpe: Option<String>,
}

/// The translation table: rules, the CNA name aliases and the version
/// rules.
pub struct Translations {
    rules: Vec<Rule>,
    version_rules: Vec<VersionRule>,
    /// Linux binary package names to the source package advisories name
    /// (`libc6` → `glibc`).
    package_sources: HashMap<String, String>,
    /// CNA (vendor, product) slugs to the CPE key they are, and whether
    /// only the CNA's per-platform entries mean it.
    cna_aliases: HashMap<ProductKey, (ProductKey, bool)>,
}

/// A CNA's name for a dictionary product (`win.rar:winrar` for
/// `rarlab:winrar`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CnaAlias {
    pub key: ProductKey,
    /// The CNA names two products alike and tells them apart only by
    /// platform: Mattermost writes its desktop app and its server both as
    /// `Mattermost`, and only the desktop app's entries list a platform.
    /// Then only CNA rows for one platform mean the product.
    pub platform_only: bool,
}

impl CnaAlias {
    /// Whether a match row of this alias (its source, `nvd` or `cna`, and
    /// its CPE target) means the product.
    pub fn admits(&self, source: &str, target_sw: &str) -> bool {
        !self.platform_only || (source == crate::reference::records::SOURCE_CNA && target_sw != "*")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TableError {
    #[error("translation table is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("translation rule {index}: {reason}")]
    Rule { index: usize, reason: String },
    #[error("version rule {index}: {reason}")]
    VersionRule { index: usize, reason: String },
}

/// The table shipped with Cairn.
/// The capture group a rule's CPE names as `$1`.
const DOLLAR_ONE: usize = 1;

pub const SHIPPED_TABLE: &str = include_str!("../translations.json");

impl Translations {
    pub fn shipped() -> Translations {
        Translations::parse(SHIPPED_TABLE).expect("the shipped translation table is valid")
    }

    pub fn parse(text: &str) -> Result<Translations, TableError> {
        let file: TableFile = serde_json::from_str(text)?;
        let mut rules = Vec::with_capacity(file.rules.len());
        for (index, rule) in file.rules.into_iter().enumerate() {
            let bad = |reason: String| TableError::Rule { index, reason };
            let name = Regex::new(&rule.name).map_err(|e| bad(e.to_string()))?;
            let publisher = rule
                .publisher
                .as_deref()
                .map(Regex::new)
                .transpose()
                .map_err(|e| bad(e.to_string()))?;
            match (&rule.cpe, rule.skip) {
                (Some(cpe), false) if cpe.contains(':') => {}
                (None, true) => {}
                _ => return Err(bad("give either cpe (vendor:product) or skip: true".into())),
            }
            rules.push(Rule {
                name,
                publisher,
                app_bundle: rule.app_bundle,
                cpe: rule.cpe,
            });
        }
        let mut cna_aliases = HashMap::new();
        let scoped = |aliases: HashMap<String, String>, platform_only: bool| {
            aliases
                .into_iter()
                .map(move |(from, to)| (from, to, platform_only))
        };
        for (from, to, platform_only) in
            scoped(file.cna_aliases, false).chain(scoped(file.cna_platform_aliases, true))
        {
            if let (Some(from), Some(to)) = (ProductKey::parse(&from), ProductKey::parse(&to)) {
                cna_aliases.insert(from, (to, platform_only));
            }
        }
        let mut version_rules = Vec::with_capacity(file.version_rules.len());
        for (index, rule) in file.version_rules.into_iter().enumerate() {
            let bad = |reason: String| TableError::VersionRule { index, reason };
            let (vendor, product) = rule
                .product
                .split_once(':')
                .ok_or_else(|| bad("product must be vendor:product or vendor:*".into()))?;
            let regex = |text: &str| Regex::new(text).map_err(|e| bad(e.to_string()));
            let when = rule.when.as_deref().map(regex).transpose()?;
            let rewrite = match (when, rule.to, rule.from_name) {
                (Some(when), Some(template), None) => Rewrite::To { when, template },
                (when, None, Some(name)) => Rewrite::FromName {
                    when,
                    name: regex(&name)?,
                },
                _ => return Err(bad("give when with to, or from_name".into())),
            };
            version_rules.push(VersionRule {
                vendor: vendor.trim().to_lowercase(),
                product: Some(product.trim().to_lowercase()).filter(|p| p != "*"),
                rewrite,
            });
        }
        Ok(Translations {
            rules,
            version_rules,
            cna_aliases,
            package_sources: file.package_sources,
        })
    }

    /// The source package a Linux binary package is built from, where
    /// the table knows it and it differs.
    pub fn package_source(&self, binary: &str) -> Option<&str> {
        self.package_sources.get(binary).map(String::as_str)
    }

    /// The installed `version` of `key` as its CPEs write it: rewritten by
    /// the first version rule for the product whose `when` matches, else
    /// as reported. `None` when a rule says the version cannot be read in
    /// that scheme (then nothing is matched on it: a guess would flag).
    pub fn cpe_version<'a>(
        &self,
        key: &ProductKey,
        name: &str,
        version: &'a str,
    ) -> Option<std::borrow::Cow<'a, str>> {
        use std::borrow::Cow;
        let Some(rule) = self.version_rules.iter().find(|r| r.applies(key, version)) else {
            return Some(Cow::Borrowed(version));
        };
        match &rule.rewrite {
            Rewrite::To { when, template } => Some(Cow::Owned(
                when.replace(version, template.as_str()).into_owned(),
            )),
            // The first group that took part in the match.
            Rewrite::FromName { name: pattern, .. } => pattern
                .captures(name)
                .and_then(|found| found.iter().skip(1).flatten().next())
                .map(|release| Cow::Owned(release.as_str().to_string())),
        }
    }

    /// The CNA names that mean `key` (besides `key` itself).
    pub fn cna_keys_for(&self, key: &ProductKey) -> Vec<CnaAlias> {
        self.cna_aliases
            .iter()
            .filter(|(_, (to, _))| to == key)
            .map(|(from, (_, platform_only))| CnaAlias {
                key: from.clone(),
                platform_only: *platform_only,
            })
            .collect()
    }

    fn apply(&self, clean: &str, publisher: &str, bundle: bool) -> Option<Identification> {
        for rule in &self.rules {
            if rule.app_bundle && !bundle {
                continue;
            }
            let Some(captures) = rule.name.captures(clean) else {
                continue;
            };
            if rule
                .publisher
                .as_ref()
                .is_some_and(|p| !p.is_match(publisher))
            {
                continue;
            }
            return Some(match &rule.cpe {
                None => Identification::Skipped,
                Some(cpe) => {
                    let text = match captures.get(DOLLAR_ONE) {
                        Some(group) => cpe.replace("$1", &group.as_str().replace(' ', "_")),
                        None => cpe.clone(),
                    };
                    match ProductKey::parse(&text) {
                        Some(key) => Identification::Product(key),
                        None => Identification::Unmatched {
                            reason: "translation rule gave no product",
                            candidates: vec![],
                        },
                    }
                }
            });
        }
        None
    }
}

/// Known CPE products, for the dictionary layer.
pub trait Dictionary {
    /// The products among `keys` that exist.
    fn known<'a>(&self, keys: &'a [ProductKey]) -> Vec<&'a ProductKey>;
}

impl Dictionary for HashSet<ProductKey> {
    fn known<'a>(&self, keys: &'a [ProductKey]) -> Vec<&'a ProductKey> {
        keys.iter().filter(|k| self.contains(k)).collect()
    }
}

/// An application's name as matching reads it: lowercase; parentheticals,
/// trademark signs, a macOS `.app` suffix, a ` - ` suffix, version
/// numbers, bitness and architecture words removed. `Mozilla Firefox (x64 en-US)` and
/// `7-Zip 23.01 (x64)` become `mozilla firefox` and `7-zip`.
pub fn clean_name(name: &str) -> String {
    let mut text = name.to_lowercase().replace(['®', '™'], "");
    // macOS bundles as osquery and some RMMs report them: `Firefox.app`.
    if let Some(bundle) = text.strip_suffix(".app") {
        text = bundle.to_string();
    }
    // Parentheticals, innermost first.
    while let (Some(open), Some(close)) = (text.rfind('('), text.rfind(')')) {
        if open >= close {
            break;
        }
        text.replace_range(open..=close, " ");
    }
    if let Some(dash) = text.find(" - ") {
        text.truncate(dash);
    }
    let noise = [
        "x64", "x86", "64-bit", "32-bit", "64bit", "32bit", "amd64", "arm64", "win64", "win32",
        "edition", "version", "release", "v.",
    ];
    let words: Vec<&str> = text
        .split_whitespace()
        .filter(|w| !noise.contains(w) && !looks_like_version(w))
        .collect();
    words.join(" ")
}

/// `23.01`, `v2.43.0`, `2.6.8-i001`, `1.2.10.6`: a number with at least one
/// dot, optionally led by `v`.
fn looks_like_version(word: &str) -> bool {
    let word = word.strip_prefix('v').unwrap_or(word);
    let core = word.split(['-', '+']).next().unwrap_or("");
    core.contains('.')
        && core.chars().next().is_some_and(|c| c.is_ascii_digit())
        && core.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// A name or publisher as a CPE component: words joined by `_`.
fn slug(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join("_")
}

/// A publisher without its legal form: `Google LLC` → `google`.
pub fn clean_publisher(publisher: &str) -> String {
    let lower = publisher.to_lowercase().replace([',', '®', '™'], " ");
    let legal = [
        "inc",
        "inc.",
        "llc",
        "ltd",
        "ltd.",
        "limited",
        "corporation",
        "corp",
        "corp.",
        "gmbh",
        "co.",
        "s.a.",
        "ab",
        "the",
        "incorporated",
        "pty",
        "s.r.o.",
        "spol.",
        "r.o.",
        "software",
        "systems",
        "technologies",
        "team",
        "foundation",
        "community",
    ];
    let words: Vec<&str> = lower
        .split_whitespace()
        .filter(|w| !legal.contains(w) && !w.starts_with("http"))
        .collect();
    words.join(" ")
}

/// The application to identify.
#[derive(Debug, Clone, Copy)]
pub struct Application<'a> {
    pub name: &'a str,
    /// Publisher, or the vendor a source reported.
    pub publisher: Option<&'a str>,
}

/// Identifies one application. `overrides` are the tenant's mappings by
/// cleaned name (`None` = never match).
pub fn identify(
    app: Application<'_>,
    overrides: &HashMap<String, Option<ProductKey>>,
    table: &Translations,
    dictionary: &dyn Dictionary,
) -> Identification {
    let clean = clean_name(app.name);
    if clean.is_empty() {
        return Identification::Unmatched {
            reason: "no name left after cleaning",
            candidates: vec![],
        };
    }
    if let Some(mapping) = overrides.get(&clean) {
        return match mapping {
            Some(key) => Identification::Product(key.clone()),
            None => Identification::Skipped,
        };
    }
    let publisher = app.publisher.unwrap_or("").to_lowercase();
    let bundle = app.name.trim().to_lowercase().ends_with(".app");
    if let Some(found) = table.apply(&clean, &publisher, bundle) {
        return found;
    }
    let candidates = dictionary_candidates(&clean, &clean_publisher(&publisher));
    let known: BTreeSet<&ProductKey> = dictionary.known(&candidates).into_iter().collect();
    match known.len() {
        1 => Identification::Product((*known.iter().next().expect("one")).clone()),
        0 => Identification::Unmatched {
            reason: "no known product for this name and publisher",
            candidates: vec![],
        },
        _ => Identification::Unmatched {
            reason: "several known products fit; map it by hand",
            candidates: known.iter().map(|k| k.text()).collect(),
        },
    }
}

/// The (vendor, product) pairs worth asking the dictionary about: vendors
/// from the publisher (whole, and its first word), or the name's first word
/// when the publisher names it too (or is empty); products from the whole
/// name and from the name without that vendor word.
fn dictionary_candidates(clean: &str, publisher: &str) -> Vec<ProductKey> {
    let mut vendors: Vec<String> = vec![];
    if !publisher.is_empty() {
        vendors.push(slug(publisher));
        if let Some(first) = publisher.split_whitespace().next() {
            vendors.push(first.to_string());
        }
    }
    let first_word = clean.split_whitespace().next().unwrap_or("");
    if publisher.is_empty() || publisher.split_whitespace().any(|w| w == first_word) {
        vendors.push(first_word.to_string());
    }
    vendors.sort();
    vendors.dedup();
    let mut products = vec![slug(clean)];
    for vendor in &vendors {
        let spaced = vendor.replace('_', " ");
        if let Some(rest) = clean.strip_prefix(&format!("{spaced} ")) {
            products.push(slug(rest));
        }
    }
    let mut out = Vec::new();
    for vendor in &vendors {
        for product in &products {
            out.push(ProductKey {
                vendor: vendor.clone(),
                product: product.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning() {
        for (raw, clean) in [
            ("Mozilla Firefox (x64 en-US)", "mozilla firefox"),
            ("7-Zip 23.01 (x64)", "7-zip"),
            ("Python 3.12.1 (64-bit)", "python"),
            (
                "Microsoft Visual C++ 2015-2022 Redistributable (x86) - 14.40.33810",
                "microsoft visual c++ 2015-2022 redistributable",
            ),
            ("Git version 2.39.2", "git"),
            ("PuTTY release 0.80 (64-bit)", "putty"),
            ("Wireshark 4.2.0 64-bit", "wireshark"),
            (
                "Java(TM) SE Development Kit 17.0.9 (64-bit)",
                "java se development kit",
            ),
            ("Intel® Graphics Driver", "intel graphics driver"),
            ("OpenVPN 2.6.8-I001 amd64", "openvpn"),
            ("Google Chrome.app", "google chrome"),
            ("zoom.us.app", "zoom.us"),
        ] {
            assert_eq!(clean_name(raw), clean, "{raw}");
        }
        assert_eq!(clean_publisher("Google LLC"), "google");
        assert_eq!(
            clean_publisher("Zoom Video Communications, Inc."),
            "zoom video communications"
        );
    }
}

#[cfg(test)]
mod version_rules {
    use super::*;

    #[test]
    fn reported_versions_in_the_cpe_scheme() {
        let table = Translations::shipped();
        let key = |k: &str| ProductKey::parse(k).unwrap();
        for (product, name, reported, expected) in [
            (
                "python:python",
                "Python 3.10.6 (64-bit)",
                "3.10.6150.0",
                Some("3.10.6"),
            ),
            (
                "python:python",
                "Python 3.8.10 (64-bit)",
                "3.8.10150.0",
                Some("3.8.10"),
            ),
            ("python:python", "Python 3.12.1", "3.12.1", Some("3.12.1")),
            (
                "python:python",
                "Python 3.12.0 (64-bit)",
                "3.12.150.0",
                Some("3.12.0"),
            ),
            (
                "python:python",
                "Python 3.14.0a1 (64-bit)",
                "3.14.102.0",
                Some("3.14.0-alpha2"),
            ),
            (
                "python:python",
                "Python 3.14.0b2 (64-bit)",
                "3.14.112.0",
                Some("3.14.0-beta2"),
            ),
            (
                "python:python",
                "Python 3.14.0rc1 (64-bit)",
                "3.14.0121",
                Some("3.14.0-rc1"),
            ),
            ("python:python", "Python 3.9.13", "3.9.13", Some("3.9.13")),
            (
                "oracle:jre",
                "Java 8 Update 351 (64-bit)",
                "8.0.3510.10",
                Some("1.8.0_351"),
            ),
            (
                "oracle:jdk",
                "Java SE Development Kit 17.0.9",
                "17.0.9.0",
                Some("17.0.9.0"),
            ),
            (
                "jetbrains:intellij_idea",
                "IntelliJ IDEA Community Edition 2022.3.2",
                "223.8617.56",
                Some("2022.3.2"),
            ),
            ("jetbrains:pycharm", "PyCharm", "223.8617.56", None),
            ("jetbrains:pycharm", "PyCharm", "2023.1.4", Some("2023.1.4")),
            (
                "citrix:workspace",
                "Citrix Workspace 2309",
                "23.9.1.104",
                Some("2309.1"),
            ),
            (
                "citrix:workspace",
                "Citrix Workspace 2311",
                "23.11.0.132",
                Some("2311.0"),
            ),
            ("zoom:meetings", "Zoom", "5.16.10 (26186)", Some("5.16.10")),
            (
                "google:chrome",
                "Google Chrome",
                "120.0.6099.130",
                Some("120.0.6099.130"),
            ),
        ] {
            assert_eq!(
                table.cpe_version(&key(product), name, reported).as_deref(),
                expected,
                "{product} {reported}"
            );
        }
    }

    #[test]
    fn bad_version_rules_are_refused() {
        for (rules, reason) in [
            (
                r#"[{"product": "python", "when": "x", "to": "y"}]"#,
                "vendor:product",
            ),
            (r#"[{"product": "a:b", "to": "y"}]"#, "give when with to"),
            (r#"[{"product": "a:b", "when": "(", "to": "y"}]"#, "regex"),
            (
                r#"[{"product": "a:b", "when": "x", "too": "y"}]"#,
                "unknown field",
            ),
        ] {
            let text = format!(r#"{{"rules": [], "version_rules": {rules}}}"#);
            let error = Translations::parse(&text).err().expect(rules).to_string();
            assert!(error.contains(reason), "{error}");
        }
    }
}

#[cfg(test)]
mod golden {
    //! The golden set: real inventory rows and the product each must be.
    use super::*;

    const GOLDEN: &str = include_str!("../testdata/golden_software.tsv");

    /// Every expected product plus the same-named or broader products that
    /// must not be chosen instead.
    fn dictionary(rows: &[Vec<&str>]) -> HashSet<ProductKey> {
        let decoys = [
            "mattermost:mattermost",
            "mattermost:mattermost_server",
            "oracle:mysql_connector/odbc",
            "oracle:mysql_workbench",
            "google:chrome_remote_desktop",
            "google:earth",
            "microsoft:visual_c++",
            "microsoft:edge",
            "microsoft:teams_rooms",
            "zoom:zoom",
            "zoom:outlook_plugin",
            "python:pip",
            "oracle:java_se",
            "adobe:acrobat",
            "adobe:acrobat_reader",
            "cisco:webex",
            "dell:supportassist_for_business_pcs",
            "dell:supportassist_for_home_pcs",
            "sublimehq:sublime_text",
            "n-able:take_control",
            "box:box",
            "eclipse:jetty",
        ];
        rows.iter()
            .filter_map(|r| ProductKey::parse(r[4]))
            .chain(decoys.iter().filter_map(|d| ProductKey::parse(d)))
            .collect()
    }

    fn rows() -> Vec<Vec<&'static str>> {
        GOLDEN
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("name\t") && !l.is_empty())
            .map(|l| l.split('\t').collect())
            .collect()
    }

    /// NVD's whole CPE dictionary (70,785 products, `tests/fixtures/
    /// cpedict`), its `\`-escapes removed as Cairn stores CPE names.
    pub(super) fn nvd_dictionary() -> HashSet<ProductKey> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/cpedict/cpes.csv"
        );
        let mut reader = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let unescape = |s: &str| s.replace('\\', "").to_lowercase();
        reader
            .records()
            .map(|r| r.expect("a dictionary row"))
            .map(|r| ProductKey {
                vendor: unescape(&r[0]),
                product: unescape(&r[1]),
            })
            .collect()
    }

    /// The golden set identified against `dictionary`: correct, and the
    /// rows that were not, by kind.
    fn accuracy(rows: &[Vec<&str>], dictionary: &HashSet<ProductKey>, label: &str) {
        let table = Translations::shipped();
        let (mut correct, mut wrong, mut missing, mut false_positive) = (0, 0, 0, 0);
        let mut failures = vec![];
        for row in rows {
            let app = Application {
                name: row[0],
                publisher: Some(row[1]).filter(|p| !p.is_empty()),
            };
            let got = match identify(app, &HashMap::new(), &table, dictionary) {
                Identification::Product(key) => Some(key),
                _ => None,
            };
            let expected = ProductKey::parse(row[4]);
            match (&expected, &got) {
                (e, g) if e == g => correct += 1,
                (Some(_), None) => {
                    missing += 1;
                    failures.push(format!("MISSING {} -> {}", row[0], row[4]));
                }
                (None, Some(g)) => {
                    false_positive += 1;
                    failures.push(format!("FALSE POSITIVE {} -> {}", row[0], g.text()));
                }
                (Some(_), Some(g)) => {
                    wrong += 1;
                    failures.push(format!(
                        "WRONG {} -> {} (expected {})",
                        row[0],
                        g.text(),
                        row[4]
                    ));
                }
                _ => unreachable!(),
            }
        }
        let total = rows.len();
        println!(
            "golden set ({label}, {} products): {total} rows; correct {correct} ({:.1} %), wrong {wrong}, missing {missing}, false positives {false_positive}",
            dictionary.len(),
            100.0 * correct as f64 / total as f64
        );
        for failure in &failures {
            println!("  {failure}");
        }
        assert_eq!(false_positive, 0, "{label}: {failures:#?}");
        assert_eq!(wrong, 0, "{label}: {failures:#?}");
        assert!(correct * 100 >= total * 95, "{label}: {failures:#?}");
    }

    #[test]
    fn golden_set_accuracy() {
        let rows = rows();
        assert!(rows.len() >= 150, "golden set has {} rows", rows.len());
        accuracy(&rows, &dictionary(&rows), "expected products and decoys");
    }

    /// A name without a publisher is looked up only under a vendor the
    /// name itself gives (its first word): a product name that only one
    /// vendor of the whole dictionary uses is too often another product.
    /// macOS's own apps, reported without a publisher, would be
    /// identified as Lenovo's App Store, Instaguide's Weather, Solspace's
    /// Freeform, Jenkins' Mission Control, Bitovi's Launchpad,
    /// Zoom's screen sharing and GNU Chess; each of these products is one
    /// NVD names, and no other vendor's product has the name. (`Google
    /// Drive` by name alone would be Mattermost's plugin `google_drive`;
    /// under the vendor its first word names it is `google:drive`.)
    #[test]
    fn bare_names_are_not_identified_by_a_vendor_they_do_not_name() {
        let nvd = nvd_dictionary();
        let table = Translations::shipped();
        for (bundle, unique_elsewhere) in [
            ("App Store.app", "lenovo:app_store"),
            ("Freeform.app", "solspace:freeform"),
            ("Weather.app", "instaguide:weather"),
            ("Mission Control.app", "jenkins:mission_control"),
            ("Launchpad.app", "bitovi:launchpad"),
            ("Screen Sharing.app", "zoom:screen_sharing"),
            ("Chess.app", "gnu:chess"),
        ] {
            let key = ProductKey::parse(unique_elsewhere).unwrap();
            assert!(nvd.contains(&key), "{unique_elsewhere}");
            let app = Application {
                name: bundle,
                publisher: None,
            };
            let got = identify(app, &HashMap::new(), &table, &nvd);
            assert!(
                !matches!(got, Identification::Product(_)),
                "{bundle}: {got:?}"
            );
        }
        // A name whose first word is its vendor is identified by name alone.
        for (bundle, expected) in [
            ("Discord.app", "discord:discord"),
            ("AnyDesk.app", "anydesk:anydesk"),
            ("Parallels Desktop.app", "parallels:parallels_desktop"),
            ("Google Drive.app", "google:drive"),
        ] {
            let app = Application {
                name: bundle,
                publisher: None,
            };
            let got = identify(app, &HashMap::new(), &table, &nvd);
            assert_eq!(
                got,
                Identification::Product(ProductKey::parse(expected).unwrap()),
                "{bundle}"
            );
        }
    }

    /// A name unambiguous among a few products may not be among 70,000.
    #[test]
    fn golden_set_accuracy_against_nvds_whole_dictionary() {
        let rows = rows();
        let nvd = nvd_dictionary();
        assert!(nvd.len() > 70_000, "{}", nvd.len());
        // Each expected product is one NVD names.
        let unknown: Vec<&str> = rows
            .iter()
            .filter(|r| ProductKey::parse(r[4]).is_some_and(|k| !nvd.contains(&k)))
            .map(|r| r[4])
            .collect();
        assert!(
            unknown.is_empty(),
            "expected products NVD does not name: {unknown:?}"
        );
        accuracy(&rows, &nvd, "NVD's whole dictionary");
    }

    /// Every product the shipped table names (rules, each alternative of a
    /// `$1` rule, CNA alias targets, version rules) is one NVD names: a
    /// misspelt entry would identify software as a product no CVE has.
    #[test]
    fn a_platform_only_alias_admits_only_per_platform_cna_rows() {
        let table = Translations::shipped();
        let desktop = ProductKey::parse("mattermost:mattermost_desktop").unwrap();
        let alias = table
            .cna_keys_for(&desktop)
            .into_iter()
            .find(|a| a.key == ProductKey::parse("mattermost:mattermost").unwrap())
            .expect("Mattermost's CNA name for its desktop app");
        for (source, target, admitted) in [
            ("cna", "macos", true),
            ("cna", "windows", true),
            // The server's entries list no platform.
            ("cna", "*", false),
            // NVD's mattermost:mattermost is the server.
            ("nvd", "*", false),
            ("nvd", "macos", false),
        ] {
            assert_eq!(alias.admits(source, target), admitted, "{source} {target}");
        }
        let winrar = ProductKey::parse("rarlab:winrar").unwrap();
        let plain = &table.cna_keys_for(&winrar)[0];
        assert!(plain.admits("cna", "*") && plain.admits("nvd", "*"));
    }

    #[test]
    fn every_table_entry_names_a_product_nvd_has() {
        let nvd = nvd_dictionary();
        let vendors: HashSet<&str> = nvd.iter().map(|k| k.vendor.as_str()).collect();
        let file: serde_json::Value = serde_json::from_str(SHIPPED_TABLE).unwrap();
        let mut named: Vec<String> = vec![];
        for rule in file["rules"].as_array().unwrap() {
            let Some(cpe) = rule["cpe"].as_str() else {
                continue;
            };
            if cpe.contains("$1") {
                // `^microsoft (word|excel)$` names microsoft:word and :excel.
                let pattern = rule["name"].as_str().unwrap();
                let (open, close) = (pattern.find('(').unwrap(), pattern.find(')').unwrap());
                for choice in pattern[open + 1..close].split('|') {
                    named.push(cpe.replace("$1", &choice.replace(' ', "_")));
                }
            } else {
                named.push(cpe.to_string());
            }
        }
        named.extend(
            ["cna_aliases", "cna_platform_aliases"]
                .iter()
                .flat_map(|table| file[*table].as_object().unwrap().values())
                .map(|v| v.as_str().unwrap().to_string()),
        );
        let mut missing: Vec<String> = named
            .iter()
            .filter(|k| ProductKey::parse(k).is_none_or(|k| !nvd.contains(&k)))
            .cloned()
            .collect();
        for rule in file["version_rules"].as_array().unwrap() {
            let product = rule["product"].as_str().unwrap();
            let known = match product.split_once(':') {
                Some((vendor, "*")) => vendors.contains(vendor),
                _ => ProductKey::parse(product).is_some_and(|k| nvd.contains(&k)),
            };
            if !known {
                missing.push(product.to_string());
            }
        }
        assert!(missing.is_empty(), "not in NVD's dictionary: {missing:?}");
    }
}
