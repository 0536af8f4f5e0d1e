//! The IP reputation connector for AbuseIPDB's API v2.
//!
//! It syncs nothing. One action, `check_ip`: input `{ip_address,
//! max_age_days}`; a `GET /api/v2/check` (`ipAddress`, `maxAgeInDays`,
//! `Accept: application/json`) answered as `{provider, ip_address,
//! abuse_confidence_score, total_reports, distinct_reporters,
//! last_reported_at, country_code, usage_type, isp, domain, hostnames,
//! is_public, is_whitelisted, is_tor}`.
//!
//! Credentials: the host sends the `Key` header from `api_key`; the key
//! never reaches this component. AbuseIPDB's error bodies
//! (`{"errors": [{"detail", "status"}]}`) become typed errors.

use cairn_sdk::{
    export_connector, http, json, Action, ActionRequest, AuthScheme, Config, Connector, Descriptor,
    Error, Page, Row, Value,
};

pub struct AbuseIpDb;

/// AbuseIPDB keeps reports for at most a year.
const MAX_AGE_DAYS: u64 = 365;

/// The first error detail of an AbuseIPDB error body, else the body.
pub fn error_detail(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| v["errors"][0]["detail"].as_str().map(String::from))
        .unwrap_or_else(|| text.chars().take(300).collect())
}

/// The check's answer in Cairn's terms.
pub fn read_check(answer: &Value) -> Result<Value, Error> {
    let data = &answer["data"];
    if !data.is_object() {
        return Err(Error::Upstream("AbuseIPDB answered without data".into()));
    }
    Ok(json!({
        "provider": "abuseipdb",
        "ip_address": data["ipAddress"],
        "abuse_confidence_score": data["abuseConfidenceScore"],
        "total_reports": data["totalReports"],
        "distinct_reporters": data["numDistinctUsers"],
        "last_reported_at": data["lastReportedAt"],
        "country_code": data["countryCode"],
        "usage_type": data["usageType"],
        "isp": data["isp"],
        "domain": data["domain"],
        "hostnames": data["hostnames"],
        "is_public": data["isPublic"],
        "is_whitelisted": data["isWhitelisted"],
        "is_tor": data["isTor"],
    }))
}

fn check_ip(config: &Config, input: &Value) -> Result<Value, Error> {
    let ip = input["ip_address"]
        .as_str()
        .filter(|ip| !ip.is_empty())
        .ok_or_else(|| Error::InvalidInput {
            field: "ip_address".into(),
            message: "an IP address is required".into(),
        })?;
    let days = input["max_age_days"]
        .as_u64()
        .unwrap_or(90)
        .clamp(1, MAX_AGE_DAYS);
    let url = format!(
        "{}/api/v2/check?ipAddress={}&maxAgeInDays={days}",
        cairn_sdk::base_url(config, "base_url")?,
        // An address is digits, dots, colons and hex: nothing to escape
        // but a scope id's `%`.
        ip.replace('%', "%25")
    );
    let response = http::send("GET", &url, &[("accept", "application/json")], &[])?;
    if !(200..300).contains(&response.status) {
        return Err(Error::from_status_detail(
            response.status,
            &error_detail(&response.body),
            "an AbuseIPDB API key (Account > API)",
        ));
    }
    read_check(&serde_json::from_slice(&response.body)?)
}

impl Connector for AbuseIpDb {
    fn describe() -> Descriptor {
        Descriptor {
            id: "abuseipdb".into(),
            area: "ip-reputation".into(),
            name: "AbuseIPDB".into(),
            version: "0.1.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "api_key"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://", "description": "API root, e.g. https://api.abuseipdb.com"},
                    "api_key": {"type": "string", "minLength": 1, "description": "An AbuseIPDB API key"}
                }
            }),
            secret_fields: vec!["api_key".into()],
            streams: vec![],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::StaticHeader {
                header: "Key".into(),
                prefix: String::new(),
                secret_field: "api_key".into(),
            },
            collections: vec![],
            views: vec![],
            // Called by the host's threat-intel routes, not mounted.
            actions: vec![Action {
                name: "check_ip".into(),
                method: "POST".into(),
                path: None,
                summary: "The abuse reports of one IP address".into(),
                input_schema: Some(json!({"type": "object", "required": ["ip_address"]})),
                query_schema: None,
                output_schema: None,
                role: "member".into(),
            }],
            max_concurrent_requests: 1,
            config_from: None,
            pull: None,
            webhook: None,
        }
    }

    fn check(config: &Config) -> Result<(), Error> {
        check_ip(
            config,
            &json!({"ip_address": "127.0.0.1", "max_age_days": 1}),
        )
        .map(|_| ())
    }

    fn fetch(_config: &Config, stream: &str, _cursor: Option<&str>) -> Result<Page, Error> {
        Err(Error::Config(format!(
            "unknown stream {stream}: this connector syncs nothing"
        )))
    }

    fn map_record(stream: &str, _record: &Value) -> Result<Vec<Row>, String> {
        Err(format!(
            "unknown stream {stream}: this connector syncs nothing"
        ))
    }

    fn invoke(config: &Config, request: &ActionRequest) -> Result<Value, Error> {
        match request.action.as_str() {
            "check_ip" => check_ip(config, &request.body),
            other => Err(Error::NotFound(format!("unsupported action: {other}"))),
        }
    }
}

export_connector!(AbuseIpDb);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_reads_abuseipdb_fields() {
        let answer = json!({"data": {"ipAddress": "118.25.6.39", "isPublic": true, "ipVersion": 4,
            "isWhitelisted": false, "abuseConfidenceScore": 100, "countryCode": "CN",
            "usageType": "Data Center/Web Hosting/Transit", "isp": "Tencent Cloud Computing",
            "domain": "tencent.com", "hostnames": [], "isTor": false, "totalReports": 1,
            "numDistinctUsers": 1, "lastReportedAt": "2018-12-20T20:55:14+00:00"}});
        let read = read_check(&answer).unwrap();
        assert_eq!(read["abuse_confidence_score"], 100);
        assert_eq!(read["distinct_reporters"], 1);
        assert_eq!(read["country_code"], "CN");
        assert!(read_check(&json!({"errors": []})).is_err());
    }

    #[test]
    fn error_bodies_give_their_detail() {
        let body = br#"{"errors":[{"detail":"Authentication failed. Your API key is either missing, incorrect, or revoked.","status":401}]}"#;
        assert!(error_detail(body).starts_with("Authentication failed"));
        assert_eq!(error_detail(b"plain"), "plain");
    }

    #[test]
    fn the_descriptor_names_its_area_and_header() {
        let descriptor = serde_json::to_value(AbuseIpDb::describe()).unwrap();
        assert_eq!(descriptor["area"], "ip-reputation");
        assert_eq!(descriptor["secret_fields"], json!(["api_key"]));
    }
}

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
