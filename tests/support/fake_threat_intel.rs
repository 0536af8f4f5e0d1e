//! Fake AbuseIPDB API v2 and VirusTotal API v3 on 127.0.0.1, speaking their
//! wire formats: `GET /api/v2/check` with the `Key` header (401 and 429
//! with `Retry-After` in AbuseIPDB's `{"errors": [...]}` body) and
//! `GET /api/v3/files/{hash}` with `x-apikey` (`last_analysis_stats` with
//! hyphenated keys; 404 `NotFoundError` for an unknown hash, 401
//! `WrongCredentialsError`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

pub const ABUSE_KEY: &str = "abuseipdb-key-for-tests-5e1f";
pub const VT_KEY: &str = "virustotal-key-for-tests-77c0";
/// The EICAR test file's SHA-256 and MD5: the hashes the fake knows.
pub const EICAR_SHA256: &str = "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f";
pub const EICAR_MD5: &str = "44d88612fea8a8f36de82e1278abb02f";
/// The address the fake reports as abusive.
pub const ABUSIVE_IP: &str = "118.25.6.39";

#[derive(Default)]
pub struct Recorded {
    /// Each request's path and query.
    pub requests: Vec<String>,
    /// Answer this many next AbuseIPDB requests with 429.
    pub throttle_next: usize,
}

#[derive(Clone)]
pub struct FakeThreatIntel {
    pub base_url: String,
    pub data: Arc<Mutex<Recorded>>,
}

impl FakeThreatIntel {
    pub async fn start() -> FakeThreatIntel {
        let data = Arc::new(Mutex::new(Recorded::default()));
        let app = axum::Router::new()
            .route("/api/v2/check", get(check))
            .route("/api/v3/files/{hash}", get(file))
            .with_state(data.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        FakeThreatIntel {
            base_url: format!("http://{addr}"),
            data,
        }
    }

    pub fn requests(&self) -> Vec<String> {
        self.data.lock().unwrap().requests.clone()
    }
}

async fn check(
    State(data): State<Arc<Mutex<Recorded>>>,
    headers: HeaderMap,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let mut data = data.lock().unwrap();
    let mut line: Vec<String> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
    line.sort();
    data.requests
        .push(format!("/api/v2/check?{}", line.join("&")));
    if headers.get("Key").and_then(|v| v.to_str().ok()) != Some(ABUSE_KEY) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"errors": [{"detail": "Authentication failed. Your API key is either missing, incorrect, or revoked. Note: The APIv2 key differs from the APIv1 key.", "status": 401}]})),
        )
            .into_response();
    }
    if data.throttle_next > 0 {
        data.throttle_next -= 1;
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [("Retry-After", "1"), ("X-RateLimit-Remaining", "0")],
            axum::Json(json!({"errors": [{"detail": "Daily rate limit of 1000 requests exceeded for this endpoint. See headers for additional details.", "status": 429}]})),
        )
            .into_response();
    }
    let ip = query.get("ipAddress").cloned().unwrap_or_default();
    let abusive = ip == ABUSIVE_IP;
    axum::Json(json!({"data": {
        "ipAddress": ip, "isPublic": true, "ipVersion": 4, "isWhitelisted": false,
        "abuseConfidenceScore": if abusive { 100 } else { 0 },
        "countryCode": if abusive { "CN" } else { "US" },
        "usageType": "Data Center/Web Hosting/Transit", "isp": "Example Hosting",
        "domain": "example.net", "hostnames": [], "isTor": false,
        "totalReports": if abusive { 12 } else { 0 },
        "numDistinctUsers": if abusive { 7 } else { 0 },
        "lastReportedAt": if abusive { json!("2026-11-20T20:55:14+00:00") } else { json!(null) }
    }}))
    .into_response()
}

async fn file(
    State(data): State<Arc<Mutex<Recorded>>>,
    headers: HeaderMap,
    Path(hash): Path<String>,
) -> Response {
    data.lock()
        .unwrap()
        .requests
        .push(format!("/api/v3/files/{hash}"));
    if headers.get("x-apikey").and_then(|v| v.to_str().ok()) != Some(VT_KEY) {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(
                json!({"error": {"code": "WrongCredentialsError", "message": "Wrong API key"}}),
            ),
        )
            .into_response();
    }
    if hash != EICAR_SHA256 && hash != EICAR_MD5 {
        return (
            StatusCode::NOT_FOUND,
            axum::Json(json!({"error": {"code": "NotFoundError", "message": format!("File \"{hash}\" not found")}})),
        )
            .into_response();
    }
    axum::Json(json!({"data": {"id": EICAR_SHA256, "type": "file",
    "links": {"self": format!("https://www.virustotal.com/api/v3/files/{EICAR_SHA256}")},
    "attributes": {
        "sha256": EICAR_SHA256, "md5": EICAR_MD5,
        "sha1": "3395856ce81f2b7382dee72602f798b642f14140",
        "meaningful_name": "eicar.com", "type_description": "Text", "size": 68,
        "reputation": 3590, "last_analysis_date": 1763700000,
        "names": ["eicar.com", "eicar.txt"], "tags": ["text", "via-tor"],
        "last_analysis_stats": {"harmless": 0, "type-unsupported": 9, "suspicious": 0,
            "confirmed-timeout": 0, "timeout": 0, "failure": 1, "malicious": 63, "undetected": 4}
    }}}))
    .into_response()
}
