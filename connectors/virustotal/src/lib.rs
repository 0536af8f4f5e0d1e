//! The file reputation connector for VirusTotal's API v3.
//!
//! It syncs nothing. One action, `check_hash`: input `{file_hash}` (MD5,
//! SHA-1 or SHA-256); a `GET /api/v3/files/{hash}` answered as
//! `{provider, sha256, sha1, md5, meaningful_name, type_description, size,
//! reputation, last_analysis_date, names, tags, last_analysis_stats}`,
//! the stats' hyphenated keys (`type-unsupported`) with underscores. An
//! unknown hash is VirusTotal's 404, a not-found error.
//!
//! Credentials: the host sends the `x-apikey` header from `api_key`; the
//! key never reaches this component. VirusTotal's error bodies
//! (`{"error": {"code", "message"}}`) become typed errors.

use cairn_sdk::{
    export_connector, http, json, Action, ActionRequest, AuthScheme, Config, Connector, Descriptor,
    Error, Page, Row, Value,
};

pub struct VirusTotal;

/// `code: message` of a VirusTotal error body, else the body.
pub fn error_detail(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| {
            let error = &v["error"];
            Some(format!(
                "{}: {}",
                error["code"].as_str()?,
                error["message"].as_str().unwrap_or("")
            ))
        })
        .unwrap_or_else(|| text.chars().take(300).collect())
}

/// A file report in Cairn's terms.
pub fn read_report(answer: &Value) -> Result<Value, Error> {
    let attributes = &answer["data"]["attributes"];
    if !attributes.is_object() {
        return Err(Error::Upstream(
            "VirusTotal answered without attributes".into(),
        ));
    }
    let stats: serde_json::Map<String, Value> = attributes["last_analysis_stats"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.replace('-', "_"), v.clone()))
        .collect();
    Ok(json!({
        "provider": "virustotal",
        "sha256": attributes["sha256"],
        "sha1": attributes["sha1"],
        "md5": attributes["md5"],
        "meaningful_name": attributes["meaningful_name"],
        "type_description": attributes["type_description"],
        "size": attributes["size"],
        "reputation": attributes["reputation"],
        "last_analysis_date": attributes["last_analysis_date"],
        "names": attributes["names"],
        "tags": attributes["tags"],
        "last_analysis_stats": stats,
    }))
}

fn check_hash(config: &Config, input: &Value) -> Result<Value, Error> {
    let hash = input["file_hash"]
        .as_str()
        .filter(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| Error::InvalidInput {
            field: "file_hash".into(),
            message: "an MD5, SHA-1 or SHA-256 in hex is required".into(),
        })?;
    let url = format!(
        "{}/api/v3/files/{hash}",
        cairn_sdk::base_url(config, "base_url")?
    );
    let response = http::send("GET", &url, &[("accept", "application/json")], &[])?;
    if !(200..300).contains(&response.status) {
        return Err(Error::from_status_detail(
            response.status,
            &error_detail(&response.body),
            "a VirusTotal API key (your profile > API key)",
        ));
    }
    read_report(&serde_json::from_slice(&response.body)?)
}

impl Connector for VirusTotal {
    fn describe() -> Descriptor {
        Descriptor {
            id: "virustotal".into(),
            area: "file-reputation".into(),
            name: "VirusTotal".into(),
            version: "0.1.0".into(),
            sdk_version: String::new(),
            config_schema: json!({
                "type": "object",
                "required": ["base_url", "api_key"],
                "properties": {
                    "base_url": {"type": "string", "pattern": "^https?://", "description": "API root, e.g. https://www.virustotal.com"},
                    "api_key": {"type": "string", "minLength": 1, "description": "A VirusTotal API key"}
                }
            }),
            secret_fields: vec!["api_key".into()],
            streams: vec![],
            requested_hosts: vec!["{config.base_url}".into()],
            auth: AuthScheme::StaticHeader {
                header: "x-apikey".into(),
                prefix: String::new(),
                secret_field: "api_key".into(),
            },
            collections: vec![],
            views: vec![],
            // Called by the host's threat-intel routes, not mounted.
            actions: vec![Action {
                name: "check_hash".into(),
                method: "POST".into(),
                path: None,
                summary: "The analysis report of one file hash".into(),
                input_schema: Some(json!({"type": "object", "required": ["file_hash"]})),
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
        // The EICAR test file: every account may read its report.
        let eicar = "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f";
        check_hash(config, &json!({"file_hash": eicar})).map(|_| ())
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
            "check_hash" => check_hash(config, &request.body),
            other => Err(Error::NotFound(format!("unsupported action: {other}"))),
        }
    }
}

export_connector!(VirusTotal);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_reads_the_hyphenated_stats() {
        let answer = json!({"data": {"id": "abc", "type": "file", "attributes": {
            "sha256": "abc", "md5": "def", "sha1": "ghi", "meaningful_name": "eicar.com",
            "type_description": "Text", "size": 68, "reputation": 3000,
            "last_analysis_date": 1700000000, "names": ["eicar.com"], "tags": ["text"],
            "last_analysis_stats": {"harmless": 0, "type-unsupported": 8, "suspicious": 0,
                "confirmed-timeout": 0, "timeout": 0, "failure": 0, "malicious": 62, "undetected": 6}}}});
        let read = read_report(&answer).unwrap();
        assert_eq!(read["last_analysis_stats"]["malicious"], 62);
        assert_eq!(read["last_analysis_stats"]["type_unsupported"], 8);
        assert_eq!(read["meaningful_name"], "eicar.com");
    }

    #[test]
    fn error_bodies_give_code_and_message() {
        let body = br#"{"error": {"code": "NotFoundError", "message": "File \"abc\" not found"}}"#;
        assert_eq!(error_detail(body), "NotFoundError: File \"abc\" not found");
    }
}

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
