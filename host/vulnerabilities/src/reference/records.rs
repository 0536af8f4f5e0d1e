//! The CVE records we store, read from NVD CVE API 2.0 objects and from CVE
//! JSON 5 records. Parsing is pure: bytes in, [`CveRecord`]s out.

use serde::Deserialize;
use serde_json::Value;

use crate::reference::affected;
use crate::reference::cpe::{self, Cpe};
pub use crate::reference::cpe::{cna_slug, MatchRow};

/// Which feed a row of reference data came from.
pub const SOURCE_NVD: &str = "nvd";
pub const SOURCE_CNA: &str = "cna";
pub const SOURCE_CVE5: &str = "cve5";
/// Where a stored CVE record came from.
pub const RECORD_SOURCES: [&str; 2] = [SOURCE_NVD, SOURCE_CVE5];
/// The `source` of what distribution advisories (OSV) say, and of the
/// findings they open.
pub const SOURCE_OSV: &str = "osv";

/// One CVE as stored, with the match rows of its configurations.
#[derive(Debug, Clone)]
pub struct CveRecord {
    pub id: String,
    pub description: String,
    pub status: String,
    pub published: Option<i64>,
    pub last_modified: i64,
    pub severity: Option<String>,
    pub cvss_score: Option<f64>,
    pub cvss_version: Option<String>,
    pub cvss_vector: Option<String>,
    /// The record's metrics object as given (every CVSS version and source).
    pub metrics: Value,
    pub cwe_ids: Vec<String>,
    pub references: Value,
    /// `nvd` (an NVD 2.0 object) or `cve5` (a CVE JSON 5 record).
    pub source: &'static str,
    /// Whether NVD gave configurations (only NVD records can).
    pub has_nvd_config: bool,
    pub nvd_rows: Vec<MatchRow>,
    /// Rows from the CNA's `affected[]` data, when the record carries any.
    pub cna_rows: Option<Vec<MatchRow>>,
}

/// A match row with what it belongs to.
#[derive(Debug, Clone)]
pub struct CandidateRow {
    pub cve_id: String,
    /// `nvd` or `cna`.
    pub source: String,
    pub row: MatchRow,
    pub rejected: bool,
    /// The CVE has NVD configurations: its CNA rows are not used.
    pub has_nvd_config: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0}")]
    Shape(String),
}

/// Reads an NVD time (`2021-12-10T10:15:09.143`, UTC without a zone) or an
/// RFC 3339 time into Unix milliseconds.
pub fn parse_time(raw: &str) -> Option<i64> {
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(raw) {
        return Some(at.timestamp_millis());
    }
    for format in ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(at) = chrono::NaiveDateTime::parse_from_str(raw, format) {
            return Some(at.and_utc().timestamp_millis());
        }
    }
    chrono::NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .ok()
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .map(|d| d.and_utc().timestamp_millis())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NvdCve {
    id: String,
    #[serde(default)]
    published: Option<String>,
    last_modified: String,
    #[serde(default)]
    vuln_status: Option<String>,
    #[serde(default)]
    descriptions: Vec<LangValue>,
    #[serde(default)]
    metrics: Value,
    #[serde(default)]
    weaknesses: Vec<NvdWeakness>,
    #[serde(default)]
    configurations: Vec<NvdConfiguration>,
    #[serde(default)]
    references: Value,
    /// CNA data some NVD mirrors carry (`affected[].affectedData[]`).
    #[serde(default)]
    affected: Vec<NvdAffected>,
}

#[derive(Deserialize)]
struct LangValue {
    #[serde(default)]
    lang: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct NvdWeakness {
    #[serde(default)]
    description: Vec<LangValue>,
}

#[derive(Deserialize)]
struct NvdConfiguration {
    #[serde(default)]
    operator: Option<String>,
    #[serde(default)]
    nodes: Vec<NvdNode>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NvdNode {
    #[serde(default)]
    negate: bool,
    #[serde(default)]
    cpe_match: Vec<NvdCpeMatch>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NvdCpeMatch {
    vulnerable: bool,
    criteria: String,
    #[serde(default)]
    match_criteria_id: Option<String>,
    #[serde(default)]
    version_start_including: Option<String>,
    #[serde(default)]
    version_start_excluding: Option<String>,
    #[serde(default)]
    version_end_including: Option<String>,
    #[serde(default)]
    version_end_excluding: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct NvdAffected {
    #[serde(default)]
    affected_data: Value,
}

/// An NVD API 2.0 `cve` object.
pub fn from_nvd(cve: Value) -> Result<CveRecord, RecordError> {
    let cve: NvdCve = serde_json::from_value(cve)?;
    let last_modified = parse_time(&cve.last_modified)
        .ok_or_else(|| RecordError::Shape(format!("{}: unreadable lastModified", cve.id)))?;
    let mut nvd_rows = Vec::new();
    for configuration in &cve.configurations {
        let is_and = configuration
            .operator
            .as_deref()
            .is_some_and(|o| o.eq_ignore_ascii_case("and"))
            && configuration.nodes.len() > 1;
        for (index, node) in configuration.nodes.iter().enumerate() {
            let platforms: Vec<String> = if is_and {
                configuration
                    .nodes
                    .iter()
                    .enumerate()
                    .filter(|(other, _)| *other != index)
                    .flat_map(|(_, n)| n.cpe_match.iter().map(|m| m.criteria.clone()))
                    .collect()
            } else {
                vec![]
            };
            for m in &node.cpe_match {
                let Some(parsed) = Cpe::parse(&m.criteria) else {
                    continue;
                };
                // A non-vulnerable match inside an AND configuration is the
                // platform of the others, already recorded with them.
                if is_and && !m.vulnerable {
                    continue;
                }
                nvd_rows.push(MatchRow {
                    target_sw: parsed.platform_target(),
                    vendor: parsed.vendor,
                    product: parsed.product,
                    part: parsed.part,
                    cpe_version: parsed.version,
                    cpe_update: parsed.update,
                    criteria: m.criteria.clone(),
                    match_id: m.match_criteria_id.clone(),
                    version_start: m
                        .version_start_including
                        .clone()
                        .or(m.version_start_excluding.clone()),
                    start_including: m.version_start_excluding.is_none(),
                    version_end: m
                        .version_end_including
                        .clone()
                        .or(m.version_end_excluding.clone()),
                    end_including: m.version_end_including.is_some(),
                    vulnerable: m.vulnerable,
                    negate: node.negate,
                    platforms: platforms.clone(),
                });
            }
        }
    }
    let cna_rows = (!cve.affected.is_empty()).then(|| {
        cve.affected
            .iter()
            .flat_map(|a| affected::rows_of_container(&a.affected_data, SOURCE_CNA))
            .collect()
    });
    let cwe_ids = cwe_list(
        cve.weaknesses
            .iter()
            .flat_map(|w| w.description.iter().map(|d| d.value.as_str())),
    );
    let (severity, cvss_score, cvss_version, cvss_vector) = best_nvd_metric(&cve.metrics);
    Ok(CveRecord {
        description: english(&cve.descriptions),
        status: cve.vuln_status.unwrap_or_else(|| "Unknown".into()),
        published: cve.published.as_deref().and_then(parse_time),
        last_modified,
        severity,
        cvss_score,
        cvss_version,
        cvss_vector,
        metrics: cve.metrics,
        cwe_ids,
        references: cve.references,
        source: SOURCE_NVD,
        has_nvd_config: !cve.configurations.is_empty(),
        nvd_rows,
        cna_rows,
        id: cve.id,
    })
}

/// A CVE JSON 5 record (`dataType: CVE_RECORD`).
pub fn from_cve5(record: &Value) -> Result<CveRecord, RecordError> {
    let meta = &record["cveMetadata"];
    let id = meta["cveId"]
        .as_str()
        .ok_or_else(|| RecordError::Shape("CVE 5 record without cveMetadata.cveId".into()))?
        .to_string();
    let cna = &record["containers"]["cna"];
    let modified = meta["dateUpdated"]
        .as_str()
        .or(meta["datePublished"].as_str())
        .or(meta["dateReserved"].as_str())
        .and_then(parse_time)
        .ok_or_else(|| RecordError::Shape(format!("{id}: no readable dateUpdated")))?;
    // Upstream input, not stored JSON: a record without readable
    // descriptions is imported without a summary, as NVD shows it.
    let descriptions: Vec<LangValue> =
        serde_json::from_value(cna["descriptions"].clone()).unwrap_or_default();
    let cwe_ids = cwe_list(
        cna["problemTypes"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|p| p["descriptions"].as_array().into_iter().flatten())
            .filter_map(|d| d["cweId"].as_str()),
    );
    let adps = record["containers"]["adp"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    // The CNA's score first; the CISA ADP scores what the CNA did not.
    let metrics = std::iter::once(&cna["metrics"])
        .chain(adps.iter().map(|adp| &adp["metrics"]))
        .find(|m| best_cve5_metric(m).1.is_some())
        .unwrap_or(&cna["metrics"]);
    let (severity, cvss_score, cvss_version, cvss_vector) = best_cve5_metric(metrics);
    // The CNA's affected entries and the ADP's (CISA adds CPEs).
    let mut cna_rows = affected::rows_of_container(&cna["affected"], SOURCE_CNA);
    for adp in adps {
        for row in affected::rows_of_container(&adp["affected"], "adp") {
            if !cna_rows.iter().any(|r| same_range(r, &row)) {
                cna_rows.push(row);
            }
        }
    }
    let state = meta["state"].as_str().unwrap_or("PUBLISHED");
    Ok(CveRecord {
        description: english(&descriptions),
        status: if state.eq_ignore_ascii_case("rejected") {
            "Rejected".into()
        } else {
            "Published".into()
        },
        published: meta["datePublished"].as_str().and_then(parse_time),
        last_modified: modified,
        severity,
        cvss_score,
        cvss_version,
        cvss_vector,
        metrics: metrics.clone(),
        cwe_ids,
        references: cna["references"].clone(),
        source: SOURCE_CVE5,
        has_nvd_config: false,
        nvd_rows: vec![],
        cna_rows: Some(cna_rows),
        id,
    })
}

fn english(descriptions: &[LangValue]) -> String {
    descriptions
        .iter()
        .find(|d| d.lang.starts_with("en"))
        .or(descriptions.first())
        .map(|d| d.value.clone())
        .unwrap_or_default()
}

fn cwe_list<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut ids: Vec<String> = values
        .filter(|v| v.starts_with("CWE-"))
        .map(str::to_string)
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

type Metric = (Option<String>, Option<f64>, Option<String>, Option<String>);

/// The headline score: the newest CVSS version present, NVD's own
/// (Primary) entry before a CNA's (Secondary).
fn best_nvd_metric(metrics: &Value) -> Metric {
    for key in [
        "cvssMetricV40",
        "cvssMetricV31",
        "cvssMetricV30",
        "cvssMetricV2",
    ] {
        let Some(entries) = metrics[key].as_array().filter(|e| !e.is_empty()) else {
            continue;
        };
        let entry = entries
            .iter()
            .find(|e| e["type"] == "Primary")
            .unwrap_or(&entries[0]);
        let data = &entry["cvssData"];
        let score = data["baseScore"].as_f64();
        let severity = data["baseSeverity"]
            .as_str()
            .or(entry["baseSeverity"].as_str())
            .map(str::to_lowercase)
            .or_else(|| score.map(|s| severity_of_score(s).into()));
        return (
            severity,
            score,
            data["version"].as_str().map(str::to_string),
            data["vectorString"].as_str().map(str::to_string),
        );
    }
    (None, None, None, None)
}

fn best_cve5_metric(metrics: &Value) -> Metric {
    for key in ["cvssV4_0", "cvssV3_1", "cvssV3_0", "cvssV2_0"] {
        if let Some(data) = metrics
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|m| m.get(key))
        {
            let score = data["baseScore"].as_f64();
            return (
                data["baseSeverity"]
                    .as_str()
                    .map(str::to_lowercase)
                    .or_else(|| score.map(|s| severity_of_score(s).into())),
                score,
                data["version"].as_str().map(str::to_string),
                data["vectorString"].as_str().map(str::to_string),
            );
        }
    }
    (None, None, None, None)
}

/// CVSS v3 qualitative rating of a base score.
pub fn severity_of_score(score: f64) -> &'static str {
    match score {
        s if s >= 9.0 => "critical",
        s if s >= 7.0 => "high",
        s if s >= 4.0 => "medium",
        s if s > 0.0 => "low",
        _ => "none",
    }
}

/// A CNA name as a CPE-style key: lowercase, company suffixes dropped,
/// spaces as `_`, only `[a-z0-9._+-]` kept.
/// Longest vendor or product name a person may give.
const MAX_PRODUCT_NAME: usize = 200;

/// A vendor or product name a person gave, as the CVE store writes names
/// ([`cna_slug`]: `Apache HTTP Server` → `apache_http_server`); a 422
/// naming `field` when it is too long or nothing of it is left.
pub fn cpe_name(name: &str, field: &str) -> Result<String, cairn_core::http::error::ApiError> {
    let slug = cna_slug(name);
    if slug.is_empty() || name.chars().count() > MAX_PRODUCT_NAME {
        return Err(cairn_core::http::error::ApiError::validation(
            field,
            format!(
                "must be a vendor or product name of at most {MAX_PRODUCT_NAME} characters \
                 (letters, digits, . _ + -)"
            ),
        ));
    }
    Ok(slug)
}

/// Whether two rows name the same product, platform and versions.
fn same_range(a: &MatchRow, b: &MatchRow) -> bool {
    (
        &a.vendor,
        &a.product,
        &a.target_sw,
        &a.cpe_version,
        &a.version_start,
        a.start_including,
        &a.version_end,
        a.end_including,
    ) == (
        &b.vendor,
        &b.product,
        &b.target_sw,
        &b.cpe_version,
        &b.version_start,
        b.start_including,
        &b.version_end,
        b.end_including,
    )
}

/// Whether `platform` (a device's `windows`/`macos`/`linux`) satisfies one
/// of an AND configuration's platform criteria.
pub fn platform_satisfies(criteria: &[String], platform: Option<&str>) -> bool {
    criteria.iter().any(|c| {
        Cpe::parse(c).is_some_and(|cpe| {
            cpe::platform_of(&cpe.vendor, &cpe.product).is_some_and(|p| Some(p) == platform)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> Value {
        let path = format!(
            "{}/../../tests/fixtures/nvd/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn log4shell_keeps_ranges_and_and_nodes() {
        let record = from_nvd(fixture("CVE-2021-44228")).unwrap();
        assert_eq!(record.severity.as_deref(), Some("critical"));
        assert_eq!(record.cvss_score, Some(10.0));
        assert!(record.cwe_ids.contains(&"CWE-502".to_string()));
        let siemens = record
            .nvd_rows
            .iter()
            .find(|r| r.product == "6bk1602-0aa12-0tp0_firmware")
            .unwrap();
        assert_eq!(siemens.platforms.len(), 1);
        assert!(!record
            .nvd_rows
            .iter()
            .any(|r| r.product == "6bk1602-0aa12-0tp0"));
        let log4j = record
            .nvd_rows
            .iter()
            .find(|r| r.product == "log4j" && r.version_start.as_deref() == Some("2.0.1"))
            .unwrap();
        assert!(log4j.start_including);
        assert_eq!(log4j.version_end.as_deref(), Some("2.3.1"));
        assert!(!log4j.end_including);
    }

    #[test]
    fn awaiting_analysis_has_no_configuration() {
        let record = from_nvd(fixture("CVE-2024-24691")).unwrap();
        assert!(!record.has_nvd_config);
        assert!(record.nvd_rows.is_empty());
        assert_eq!(record.severity.as_deref(), Some("critical"));
    }

    #[test]
    fn cna_affected_in_an_nvd_record() {
        let record = from_nvd(fixture("CVE-2022-22784")).unwrap();
        let rows = record.cna_rows.unwrap();
        let windows = rows.iter().find(|r| r.target_sw == "windows").unwrap();
        assert_eq!(windows.vendor, "zoom_video_communications");
        assert_eq!(windows.product, "zoom_client_for_meetings");
        assert_eq!(windows.version_end.as_deref(), Some("5.10.0"));
        assert_eq!(windows.version_start, None);
    }

    fn cve5(name: &str) -> CveRecord {
        let path = format!(
            "{}/../../tests/fixtures/cve5/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        from_cve5(&serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()).unwrap()
    }

    /// Whether `product` at `version` is affected by a real CVE 5 record.
    fn affected(record: &CveRecord, product: &str, version: &str) -> bool {
        let rows: Vec<crate::reference::records::CandidateRow> = record
            .cna_rows
            .iter()
            .flatten()
            .filter(|r| format!("{}:{}", r.vendor, r.product) == product)
            .map(|row| crate::reference::records::CandidateRow {
                cve_id: record.id.clone(),
                source: SOURCE_CNA.into(),
                row: row.clone(),
                rejected: false,
                has_nvd_config: false,
            })
            .collect();
        !crate::matching::ranges::evaluate(&rows, version, Some("windows")).is_empty()
    }

    #[test]
    fn real_cve5_records() {
        let chrome = cve5("CVE-2024-0519");
        // The CNA gives no score; CISA's ADP does.
        assert_eq!(chrome.cvss_score, Some(8.8));
        for (version, expected) in [
            ("120.0.6099.216", true),
            ("119.0.6045.199", true),
            ("120.0.6099.224", false),
            ("121.0.6167.85", false),
        ] {
            assert_eq!(
                affected(&chrome, "google:chrome", version),
                expected,
                "chrome {version}"
            );
        }
        let mozilla = cve5("CVE-2024-7519");
        for (product, version, expected) in [
            ("mozilla:firefox", "128.0.3", true),
            ("mozilla:firefox", "129.0", false),
            ("mozilla:firefox_esr", "115.13.0", true),
            ("mozilla:firefox_esr", "115.14.0", false),
            ("mozilla:firefox_esr", "128.0.3", true),
            ("mozilla:firefox_esr", "128.1.0", false),
            ("mozilla:thunderbird", "115.14.0", false),
            ("mozilla:thunderbird", "115.12.1", true),
            ("mozilla:thunderbird", "128.1.0", false),
        ] {
            assert_eq!(
                affected(&mozilla, product, version),
                expected,
                "{product} {version}"
            );
        }
    }

    #[test]
    fn slugs() {
        assert_eq!(
            cna_slug("Zoom Video Communications, Inc."),
            "zoom_video_communications"
        );
        assert_eq!(cna_slug("7-Zip"), "7-zip");
        assert_eq!(cna_slug("Google LLC"), "google");
    }
}
