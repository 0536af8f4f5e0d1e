//! Classifying a news item: a category, a severity, the CVE ids it names,
//! its vendors and products, and its relevance to the tenant (the tenant's
//! applications and vendors it names, and the CVEs it names that the
//! tenant has open findings for, with device counts).
//!
//! With a model endpoint configured the model answers the category,
//! severity, CVEs, vendors and products as JSON against [`answer_schema`];
//! without one, or when it fails or answers badly, the rules here do, and
//! the item records which one did (and why the model was not used).
//! Relevance is always computed here from the tenant's own data: a model
//! never decides what a tenant runs.

use std::collections::{BTreeMap, HashMap};

use aho_corasick::{AhoCorasick, MatchKind};
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use crate::language_model::LanguageModel;
use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_inventory::search::fold;
use cairn_inventory::storage::{named_software, NamedSoftware, SoftwareNameKind};
use cairn_vulnerabilities::findings::views::open_device_counts;
use cairn_vulnerabilities::reference::research::cve_ids_in;
use cairn_vulnerabilities::reference::store;

pub const CATEGORIES: &[&str] = &[
    "vulnerability",
    "exploit_in_the_wild",
    "breach",
    "malware",
    "patch_release",
    "advisory",
    "other",
];
pub const SEVERITIES: &[&str] = &["critical", "high", "medium", "low"];

/// Most CVE ids of one item looked up in the store.
const MAX_CVES: usize = 20;
/// Applications and vendors of the tenant an item is matched against.
const MAX_NAMES: i64 = 20_000;
/// Names shorter than this are too common as words to mean the software.
const MIN_NAME_CHARS: usize = 4;

/// Which classifier answered.
pub const BY_MODEL: &str = "model";
pub const BY_RULES: &str = "rules";

/// What a relevance names.
pub const RELEVANCE_KINDS: [&str; 3] = ["application", "vendor", "cve"];

/// What the tenant runs that an item names.
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema, PartialEq)]
pub struct Relevance {
    /// The application, vendor or CVE id.
    pub name: String,
    /// `application`, `vendor` or `cve`.
    pub kind: String,
    /// Devices running it (for a CVE: devices with an open finding of it).
    pub device_count: i64,
}

/// An item's classification.
#[derive(Debug, Clone)]
pub struct Classification {
    pub category: String,
    pub severity: String,
    pub cve_ids: Vec<String>,
    pub vendors: Vec<String>,
    pub products: Vec<String>,
    pub relevance: Vec<Relevance>,
    pub classified_by: &'static str,
    /// Why the model did not classify it, when one is configured.
    pub note: Option<String>,
}

/// The text classified.
pub struct ItemText<'a> {
    pub title: &'a str,
    pub summary: &'a str,
}

impl ItemText<'_> {
    fn whole(&self) -> String {
        format!("{}\n{}", self.title, self.summary)
    }
}

/// The tenant's software names, matched as whole words ignoring case.
pub struct TenantNames {
    names: Vec<NamedSoftware>,
    matcher: Option<AhoCorasick>,
}

impl TenantNames {
    pub async fn load(db: &Db, tenant: &TenantId) -> sqlx::Result<TenantNames> {
        let names: Vec<NamedSoftware> = named_software(db, tenant, MAX_NAMES)
            .await?
            .into_iter()
            .filter(|n| n.name.chars().count() >= MIN_NAME_CHARS)
            .collect();
        let patterns: Vec<String> = names.iter().map(|n| fold(&n.name)).collect();
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .ok();
        Ok(TenantNames { names, matcher })
    }

    /// The names `text` contains as whole words (and those equal to one
    /// of `mentioned`), each once.
    fn found_in(&self, text: &str, mentioned: &[String]) -> Vec<&NamedSoftware> {
        let folded = fold(text);
        let mut found: BTreeMap<usize, &NamedSoftware> = BTreeMap::new();
        if let Some(matcher) = &self.matcher {
            for hit in matcher.find_iter(&folded) {
                let before = folded[..hit.start()].chars().next_back();
                let after = folded[hit.end()..].chars().next();
                if !before.is_some_and(char::is_alphanumeric)
                    && !after.is_some_and(char::is_alphanumeric)
                {
                    found.insert(
                        hit.pattern().as_usize(),
                        &self.names[hit.pattern().as_usize()],
                    );
                }
            }
        }
        let mentioned: Vec<String> = mentioned.iter().map(|m| fold(m)).collect();
        for (index, name) in self.names.iter().enumerate() {
            if mentioned.contains(&fold(&name.name)) {
                found.insert(index, name);
            }
        }
        found.into_values().collect()
    }
}

/// What the store and the tenant's findings say about the CVEs an item
/// names.
struct CveFacts {
    kev: bool,
    highest_cvss: Option<f64>,
    /// Devices with an open finding, per CVE.
    affected: HashMap<String, i64>,
}

async fn cve_facts(db: &Db, tenant: &TenantId, cve_ids: &[String]) -> sqlx::Result<CveFacts> {
    let mut facts = CveFacts {
        kev: false,
        highest_cvss: None,
        affected: open_device_counts(db, tenant, cve_ids).await?,
    };
    for id in cve_ids.iter().take(MAX_CVES) {
        if let Some(detail) = store::cve_detail(db, id).await? {
            facts.kev |= detail.kev;
            facts.highest_cvss = match (facts.highest_cvss, detail.cvss_score) {
                (Some(a), Some(b)) => Some(a.max(b)),
                (a, b) => a.or(b),
            };
        }
    }
    Ok(facts)
}

/// Classifies one item: by the model when `model` is given and answers
/// well, else by the rules.
pub async fn classify(
    db: &Db,
    model: Option<&LanguageModel>,
    tenant: &TenantId,
    names: &TenantNames,
    item: &ItemText<'_>,
) -> sqlx::Result<Classification> {
    let text = item.whole();
    let mut note = None;
    let mut answer = None;
    if let Some(model) = model {
        match ask_model(model, item).await {
            Ok(value) => answer = Some(value),
            Err(err) => note = Some(err),
        }
    }
    let mut cve_ids = cve_ids_in(&text);
    if let Some(value) = &answer {
        for id in strings(&value["cve_ids"]) {
            if let Some(id) = cairn_vulnerabilities::reference::research::cve_id(&id) {
                if !cve_ids.contains(&id) {
                    cve_ids.push(id);
                }
            }
        }
    }
    cve_ids.truncate(MAX_CVES * 5);
    let facts = cve_facts(db, tenant, &cve_ids).await?;
    let (model_vendors, model_products) = answer
        .as_ref()
        .map(|v| (strings(&v["vendors"]), strings(&v["products"])))
        .unwrap_or_default();
    let mentioned: Vec<String> = model_vendors
        .iter()
        .chain(&model_products)
        .cloned()
        .collect();
    let found = names.found_in(&text, &mentioned);
    let mut relevance: Vec<Relevance> = found
        .iter()
        .map(|n| Relevance {
            name: n.name.clone(),
            kind: match n.kind {
                SoftwareNameKind::Application => "application",
                SoftwareNameKind::Vendor => "vendor",
            }
            .into(),
            device_count: n.device_count,
        })
        .collect();
    for id in &cve_ids {
        if let Some(&devices) = facts.affected.get(id) {
            relevance.push(Relevance {
                name: id.clone(),
                kind: "cve".into(),
                device_count: devices,
            });
        }
    }
    let names_of = |kind: SoftwareNameKind| -> Vec<String> {
        found
            .iter()
            .filter(|n| n.kind == kind)
            .map(|n| n.name.clone())
            .collect()
    };
    let classification = match answer {
        Some(value) => Classification {
            category: value["category"].as_str().unwrap_or("other").to_string(),
            severity: value["severity"].as_str().unwrap_or("low").to_string(),
            cve_ids,
            vendors: model_vendors,
            products: model_products,
            relevance,
            classified_by: BY_MODEL,
            note: None,
        },
        None => {
            let folded = fold(&text);
            let category = rule_category(&folded, !cve_ids.is_empty(), facts.kev);
            Classification {
                severity: rule_severity(&folded, category, &facts).to_string(),
                category: category.to_string(),
                cve_ids,
                vendors: names_of(SoftwareNameKind::Vendor),
                products: names_of(SoftwareNameKind::Application),
                relevance,
                classified_by: BY_RULES,
                note,
            }
        }
    };
    Ok(classification)
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The JSON the model must answer.
pub fn answer_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["category", "severity", "cve_ids", "vendors", "products"],
        "properties": {
            "category": {"type": "string", "enum": CATEGORIES},
            "severity": {"type": "string", "enum": SEVERITIES},
            "cve_ids": {"type": "array", "maxItems": 100,
                        "items": {"type": "string", "pattern": "^CVE-[0-9]{4}-[0-9]{4,}$"}},
            "vendors": {"type": "array", "maxItems": 20, "items": {"type": "string", "maxLength": 100}},
            "products": {"type": "array", "maxItems": 20, "items": {"type": "string", "maxLength": 100}},
        }
    })
}

const INSTRUCTIONS: &str = "You classify security news for a managed service provider. \
Answer with JSON only. category: vulnerability (a flaw disclosed), exploit_in_the_wild \
(attackers are exploiting it now), breach (data stolen or exposed), malware (a campaign or \
family), patch_release (a vendor shipped fixes), advisory (a government or vendor advisory), \
or other. severity: critical, high, medium or low, for an MSP's customers. cve_ids: every CVE \
id the text names. vendors and products: the software vendors and products it concerns, as \
their usual names.";

/// Asks the model; `Err` says why its answer was not used.
async fn ask_model(model: &LanguageModel, item: &ItemText<'_>) -> Result<Value, String> {
    let material = format!(
        "Title: {}\n\n{}",
        item.title,
        item.summary.chars().take(4000).collect::<String>()
    );
    model
        .json_answer(
            "news_classification",
            INSTRUCTIONS,
            &material,
            &answer_schema(),
        )
        .await
        .map_err(|e| e.to_string())
}

/// Keyword rules, first match wins; `text` is folded.
const CATEGORY_RULES: &[(&str, &[&str])] = &[
    (
        "exploit_in_the_wild",
        &[
            "exploited in the wild",
            "actively exploited",
            "active exploitation",
            "under active attack",
            "zero-day",
            "0-day",
            "zero day",
            "exploitation in the wild",
        ],
    ),
    (
        "breach",
        &[
            "data breach",
            "breach",
            "leaked",
            "stolen data",
            "exposed records",
            "data leak",
        ],
    ),
    (
        "malware",
        &[
            "ransomware",
            "malware",
            "trojan",
            "botnet",
            "backdoor",
            "infostealer",
            "stealer",
            "wiper",
            "spyware",
        ],
    ),
    (
        "patch_release",
        &[
            "patch tuesday",
            "security update",
            "security updates",
            "patches",
            "patched",
            "fixes",
            "released updates",
            "update released",
        ],
    ),
    ("advisory", &["advisory", "advisories", "bulletin", "alert"]),
    (
        "vulnerability",
        &[
            "vulnerability",
            "vulnerabilities",
            "flaw",
            "remote code execution",
            "privilege escalation",
            "security hole",
        ],
    ),
];

fn contains_word(text: &str, word: &str) -> bool {
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

fn rule_category(text: &str, names_cve: bool, kev: bool) -> &'static str {
    if kev {
        return "exploit_in_the_wild";
    }
    for (category, words) in CATEGORY_RULES {
        if words.iter().any(|w| contains_word(text, w)) {
            return category;
        }
    }
    if names_cve {
        "vulnerability"
    } else {
        "other"
    }
}

fn rule_severity(text: &str, category: &str, facts: &CveFacts) -> &'static str {
    let cvss = facts.highest_cvss.unwrap_or(0.0);
    if facts.kev
        || cvss >= 9.0
        || category == "exploit_in_the_wild"
        || contains_word(text, "critical")
    {
        "critical"
    } else if cvss >= 7.0
        || matches!(category, "breach" | "malware")
        || contains_word(text, "remote code execution")
        || contains_word(text, "high severity")
    {
        "high"
    } else if matches!(category, "vulnerability" | "patch_release" | "advisory") || cvss >= 4.0 {
        "medium"
    } else {
        "low"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_facts() -> CveFacts {
        CveFacts {
            kev: false,
            highest_cvss: None,
            affected: HashMap::new(),
        }
    }

    #[test]
    fn the_rules_pick_the_most_urgent_category_first() {
        let text = fold("Microsoft patches actively exploited Windows flaw");
        assert_eq!(rule_category(&text, false, false), "exploit_in_the_wild");
        let text = fold("LockBit ransomware hits hospitals");
        assert_eq!(rule_category(&text, false, false), "malware");
        let text = fold("Cisco fixes bug in IOS XE");
        assert_eq!(rule_category(&text, false, false), "patch_release");
        assert_eq!(
            rule_category("quarterly earnings", true, false),
            "vulnerability"
        );
        assert_eq!(rule_category("quarterly earnings", false, false), "other");
        assert_eq!(
            rule_category("quarterly earnings", false, true),
            "exploit_in_the_wild"
        );
    }

    #[test]
    fn words_match_whole_words_only() {
        // "prefixes" holds "fixes", "alerted" holds "alert".
        assert!(!contains_word("new prefixes alerted", "fixes"));
        assert!(!contains_word("new prefixes alerted", "alert"));
        assert!(contains_word("vendor fixes it", "fixes"));
    }

    #[test]
    fn severity_follows_the_cves_and_the_category() {
        let mut facts = no_facts();
        assert_eq!(rule_severity("a", "other", &facts), "low");
        assert_eq!(rule_severity("a", "vulnerability", &facts), "medium");
        facts.highest_cvss = Some(7.5);
        assert_eq!(rule_severity("a", "vulnerability", &facts), "high");
        facts.kev = true;
        assert_eq!(rule_severity("a", "vulnerability", &facts), "critical");
    }

    #[test]
    fn tenant_names_match_whole_words_ignoring_case() {
        let names = vec![
            NamedSoftware {
                name: "Google Chrome".into(),
                kind: SoftwareNameKind::Application,
                device_count: 3,
            },
            NamedSoftware {
                name: "Zoom".into(),
                kind: SoftwareNameKind::Application,
                device_count: 2,
            },
            NamedSoftware {
                name: "Müller GmbH".into(),
                kind: SoftwareNameKind::Vendor,
                device_count: 1,
            },
        ];
        let patterns: Vec<String> = names.iter().map(|n| fold(&n.name)).collect();
        let tenant = TenantNames {
            names,
            matcher: AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostLongest)
                .build(&patterns)
                .ok(),
        };
        let found = |text: &str| -> Vec<String> {
            tenant
                .found_in(text, &[])
                .iter()
                .map(|n| n.name.clone())
                .collect()
        };
        assert_eq!(
            found("GOOGLE CHROME 112 fixes a zero-day"),
            ["Google Chrome"]
        );
        assert!(found("Zoomed out: a look at the year").is_empty());
        assert_eq!(found("Update from MÜLLER GMBH today"), ["Müller GmbH"]);
    }
}
