//! A fake NVD CVE API 2.0 on 127.0.0.1, with the KEV catalog and the EPSS
//! CSV beside it: `startIndex`/`resultsPerPage` paging with NVD's page
//! envelope, `lastModStartDate`/`lastModEndDate` filtering, one record by
//! `cveId` (an unknown id: an empty page), `virtualMatchString` (a CPE
//! match string's vendor and product against the configurations) and
//! `keywordSearch` (every word in the description), and refusals on
//! request (403 as NVD rate-limits, 503 as it fails).

use std::io::Write;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{json, Value};

/// The vendored real-world fixtures (`tests/fixtures`, sources in its README).
pub fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Every NVD record of `fixtures/nvd`, as NVD API `cve` objects.
pub fn fixture_records() -> Vec<Value> {
    let mut paths: Vec<_> = std::fs::read_dir(fixtures().join("nvd"))
        .expect("nvd fixtures")
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}

/// A 7-Zip record NVD rejected: it must never match.
pub fn rejected_record() -> Value {
    json!({
        "id": "CVE-2099-0001",
        "sourceIdentifier": "cve@mitre.org",
        "published": "2025-01-01T00:00:00.000",
        "lastModified": "2025-02-01T00:00:00.000",
        "vulnStatus": "Rejected",
        "descriptions": [{"lang": "en", "value": "Rejected reason: not a vulnerability."}],
        "metrics": {},
        "configurations": [{"nodes": [{"operator": "OR", "negate": false, "cpeMatch": [
            {"vulnerable": true, "criteria": "cpe:2.3:a:7-zip:7-zip:*:*:*:*:*:*:*:*",
             "versionEndExcluding": "99.0", "matchCriteriaId": "00000000-0000-0000-0000-000000000001"}
        ]}]}],
        "references": []
    })
}

/// A PuTTY record with a start-excluding and an end-including bound, under
/// an id the real EPSS fixture scores (CVE-1999-0001).
pub fn putty_record() -> Value {
    json!({
        "id": "CVE-1999-0001",
        "sourceIdentifier": "cve@mitre.org",
        "published": "1999-12-30T05:00:00.000",
        "lastModified": "2025-04-03T01:03:51.193",
        "vulnStatus": "Modified",
        "descriptions": [{"lang": "en", "value": "Test record for PuTTY bounds."}],
        "metrics": {"cvssMetricV2": [{"source": "nvd@nist.gov", "type": "Primary",
            "cvssData": {"version": "2.0", "vectorString": "AV:N/AC:L/Au:N/C:N/I:N/A:P", "baseScore": 5.0},
            "baseSeverity": "MEDIUM"}]},
        "configurations": [{"nodes": [{"operator": "OR", "negate": false, "cpeMatch": [
            {"vulnerable": true, "criteria": "cpe:2.3:a:putty:putty:*:*:*:*:*:*:*:*",
             "versionStartExcluding": "0.70", "versionEndIncluding": "0.80",
             "matchCriteriaId": "00000000-0000-0000-0000-000000000002"}
        ]}]}],
        "references": []
    })
}

/// CVE-2024-24691 as its CNA published it (CVE JSON 5): NVD has no
/// configuration for it, so this is the only way to match it.
pub fn zoom_cve5_record() -> Value {
    json!({
        "dataType": "CVE_RECORD",
        "dataVersion": "5.1",
        "cveMetadata": {"cveId": "CVE-2024-24691", "assignerShortName": "Zoom", "state": "PUBLISHED",
            "datePublished": "2024-02-14T00:00:00.000Z", "dateUpdated": "2024-09-20T15:15:16.393Z"},
        "containers": {"cna": {
            "affected": [{"vendor": "Zoom Communications, Inc.", "product": "Zoom Desktop Client for Windows",
                "defaultStatus": "unaffected",
                "versions": [{"version": "0", "lessThan": "5.16.5", "status": "affected", "versionType": "custom"}]}],
            "descriptions": [{"lang": "en", "value": "Improper input validation in Zoom Desktop Client for Windows."}],
            "metrics": [{"cvssV3_1": {"version": "3.1", "baseScore": 9.6, "baseSeverity": "CRITICAL",
                "vectorString": "CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:C/C:H/I:H/A:H"}}],
            "problemTypes": [{"descriptions": [{"cweId": "CWE-176", "lang": "en", "type": "CWE"}]}],
            "references": [{"url": "https://www.zoom.com/en/trust/security-bulletin/ZSB-24008/"}]
        }}
    })
}

#[derive(Default)]
pub struct NvdData {
    pub records: Vec<Value>,
    /// Statuses to answer with, one per request, before serving normally.
    pub refusals: Vec<(usize, u16)>,
    /// Every request's query string and `apiKey` header.
    pub requests: Vec<(String, Option<String>)>,
    /// Scores FIRST's EPSS API answers with (CVE, score, percentile), on
    /// top of the fixture's.
    pub epss_scores: Vec<(String, f64, f64)>,
}

#[derive(Clone)]
pub struct FakeNvd {
    pub base_url: String,
    pub data: Arc<Mutex<NvdData>>,
}

impl FakeNvd {
    pub fn api_url(&self) -> String {
        format!("{}/rest/json/cves/2.0", self.base_url)
    }
    pub fn kev_url(&self) -> String {
        format!("{}/kev.json", self.base_url)
    }
    pub fn epss_url(&self) -> String {
        format!("{}/epss_scores-current.csv.gz", self.base_url)
    }
    pub fn epss_api_url(&self) -> String {
        format!("{}/data/v1/epss", self.base_url)
    }

    pub async fn start(records: Vec<Value>) -> FakeNvd {
        let data = Arc::new(Mutex::new(NvdData {
            records,
            ..Default::default()
        }));
        let app = axum::Router::new()
            .route("/rest/json/cves/2.0", get(cves))
            .route("/kev.json", get(kev))
            .route("/epss_scores-current.csv.gz", get(epss))
            .route("/data/v1/epss", get(epss_api))
            .with_state(data.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeNvd {
            base_url: format!("http://{addr}"),
            data,
        }
    }
}

fn nvd_time(raw: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    chrono::DateTime::parse_from_rfc3339(raw).ok().or_else(|| {
        chrono::NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M:%S%.f")
            .ok()
            .map(|t| t.and_utc().fixed_offset())
    })
}

async fn cves(
    State(data): State<Arc<Mutex<NvdData>>>,
    headers: HeaderMap,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let mut data = data.lock().unwrap();
    let raw_query: Vec<String> = {
        let mut pairs: Vec<_> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
        pairs.sort();
        pairs
    };
    data.requests.push((
        raw_query.join("&"),
        headers
            .get("apiKey")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    ));
    let request_number = data.requests.len();
    if let Some((_, status)) = data.refusals.iter().find(|(n, _)| *n == request_number) {
        let status = StatusCode::from_u16(*status).unwrap();
        return (status, "refused by the fake").into_response();
    }
    let per_page: usize = query
        .get("resultsPerPage")
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    if per_page > 2000 {
        return (StatusCode::NOT_FOUND, "").into_response();
    }
    let start: usize = query
        .get("startIndex")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let window = match (query.get("lastModStartDate"), query.get("lastModEndDate")) {
        (Some(a), Some(b)) => match (nvd_time(a), nvd_time(b)) {
            (Some(a), Some(b)) if (b - a).num_days() <= 120 => Some((a, b)),
            _ => return (StatusCode::BAD_REQUEST, "bad date range").into_response(),
        },
        (None, None) => None,
        _ => return (StatusCode::BAD_REQUEST, "both dates or neither").into_response(),
    };
    let matching: Vec<&Value> = data
        .records
        .iter()
        .filter(|r| {
            query
                .get("cveId")
                .is_none_or(|id| r["id"].as_str() == Some(id.as_str()))
        })
        .filter(|r| {
            query
                .get("virtualMatchString")
                .is_none_or(|wanted| names_cpe(r, wanted))
        })
        .filter(|r| {
            query
                .get("keywordSearch")
                .is_none_or(|words| describes(r, words))
        })
        .filter(|r| match window {
            None => true,
            Some((a, b)) => r["lastModified"]
                .as_str()
                .and_then(nvd_time)
                .is_some_and(|t| t >= a && t <= b),
        })
        .collect();
    let page: Vec<Value> = matching
        .iter()
        .skip(start)
        .take(per_page)
        .map(|r| json!({"cve": r}))
        .collect();
    axum::Json(json!({
        "resultsPerPage": page.len(),
        "startIndex": start,
        "totalResults": matching.len(),
        "format": "NVD_CVE",
        "version": "2.0",
        "timestamp": "2026-11-23T12:00:00.000",
        "vulnerabilities": page,
    }))
    .into_response()
}

/// Whether a CPE criteria of the record's configurations fits the match
/// string's given parts (`cpe:2.3:*:vendor[:product]`; `*` fits any).
fn names_cpe(record: &Value, wanted: &str) -> bool {
    let wanted: Vec<&str> = wanted.split(':').collect();
    let configurations = record["configurations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    configurations.iter().any(|configuration| {
        configuration["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|node| {
                node["cpeMatch"].as_array().into_iter().flatten().any(|m| {
                    let parts: Vec<&str> =
                        m["criteria"].as_str().unwrap_or("").split(':').collect();
                    wanted
                        .iter()
                        .enumerate()
                        .all(|(i, w)| *w == "*" || parts.get(i) == Some(w))
                })
            })
    })
}

/// Whether every word is in an English description (ignoring case), as
/// NVD's `keywordSearch` does.
fn describes(record: &Value, words: &str) -> bool {
    let text: String = record["descriptions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|d| d["lang"] == "en")
        .filter_map(|d| d["value"].as_str())
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    words
        .split_whitespace()
        .all(|w| text.contains(&w.to_lowercase()))
}

/// FIRST's EPSS API: `?cve=` with its envelope and numbers as strings.
async fn epss_api(
    State(data): State<Arc<Mutex<NvdData>>>,
    Query(query): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let wanted = query.get("cve").cloned().unwrap_or_default();
    let plain =
        std::fs::read_to_string(fixtures().join("epss/epss_scores-current_first200.csv")).unwrap();
    let mut scores: Vec<(String, f64, f64)> = plain
        .lines()
        .filter_map(|line| {
            let mut cells = line.split(',');
            let cve = cells.next()?.to_string();
            Some((
                cve,
                cells.next()?.parse().ok()?,
                cells.next()?.parse().ok()?,
            ))
        })
        .collect();
    scores.extend(data.lock().unwrap().epss_scores.iter().cloned());
    let found: Vec<Value> = scores
        .iter()
        .rev()
        .filter(|(cve, _, _)| *cve == wanted)
        .take(1)
        .map(|(cve, score, percentile)| {
            json!({"cve": cve, "epss": format!("{score:.9}"), "percentile": format!("{percentile:.9}"),
                   "date": "2026-11-24"})
        })
        .collect();
    axum::Json(
        json!({"status": "OK", "status-code": 200, "version": "1.0", "access": "public",
                      "total": found.len(), "offset": 0, "limit": 100, "data": found}),
    )
    .into_response()
}

async fn kev() -> Response {
    let bytes = std::fs::read(fixtures().join("kev/known_exploited_vulnerabilities_selected.json"))
        .unwrap();
    ([("content-type", "application/json")], bytes).into_response()
}

async fn epss() -> Response {
    let plain = std::fs::read(fixtures().join("epss/epss_scores-current_first200.csv")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&plain).unwrap();
    ([("content-type", "application/gzip")], gz.finish().unwrap()).into_response()
}
