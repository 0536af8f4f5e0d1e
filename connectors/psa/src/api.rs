//! ConnectWise PSA's REST API v3: the base URL, the `clientId` header,
//! `Link`-header paging over bare JSON arrays, conditions, and its error
//! bodies as typed errors. 5xx answers are retried with backoff.

use std::time::Duration;

use cairn_sdk::{http, Config, Error, Value};

/// The API under the site: `{site}/v4_6_release/apis/3.0`.
const API_PATH: &str = "/v4_6_release/apis/3.0";
/// ConnectWise's hard maximum.
pub const MAX_PAGE_SIZE: u64 = 1000;
/// Tries of a request answered 5xx.
const TRIES: u32 = 3;

const PERMISSION_HINT: &str = "give the API member's security role Inquire (and Add/Edit for \
     tickets, notes and time) on Service Desk, Companies and Time & Expense";

/// The API base of the configured site; a site given with the API path is
/// taken as it is.
pub fn base(config: &Config) -> Result<String, Error> {
    let site = cairn_sdk::base_url(config, "site")?;
    let site = site.strip_suffix(API_PATH).unwrap_or(site);
    Ok(format!("{site}{API_PATH}"))
}

/// A string as a conditions literal: double-quoted, quotes escaped.
pub fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A date as conditions take it: `[2026-01-01T00:00:00Z]`.
pub fn bracketed(date: &str) -> String {
    format!("[{date}]")
}

/// Sends one request with the `clientId` header (Basic auth is the
/// host's), retrying 5xx; the answer's status and body.
pub fn send(
    config: &Config,
    method: &str,
    url: &str,
    body: Option<&Value>,
) -> Result<http::Response, Error> {
    let client_id = config["client_id"]
        .as_str()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| Error::Config("client_id is not set".into()))?;
    let payload = body.map(Value::to_string).unwrap_or_default();
    let mut headers = vec![("clientId", client_id), ("accept", "application/json")];
    if body.is_some() {
        headers.push(("content-type", "application/json"));
    }
    let mut tries = 0;
    loop {
        tries += 1;
        let response = http::send(method, url, &headers, payload.as_bytes())?;
        if response.status >= 500 && tries < TRIES {
            std::thread::sleep(Duration::from_millis(250 * 2u64.pow(tries - 1)));
            continue;
        }
        return Ok(response);
    }
}

/// A 2xx answer's JSON (`null` for an empty body), or the typed error of
/// ConnectWise's `{"code", "message", "errors": [{"code", "message",
/// "field"}]}`, naming the field it refused.
pub fn answer(response: &http::Response) -> Result<Value, Error> {
    let status = response.status;
    if (200..300).contains(&status) {
        if response.body.is_empty() {
            return Ok(Value::Null);
        }
        return serde_json::from_slice(&response.body).map_err(|e| {
            Error::Upstream(format!(
                "ConnectWise answered with a body that is not JSON: {e}"
            ))
        });
    }
    let parsed: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
    let first = parsed["errors"].as_array().and_then(|e| e.first());
    let message = parsed["message"]
        .as_str()
        .or(parsed["code"].as_str())
        .unwrap_or("no detail");
    if status == 400 {
        if let Some(error) = first {
            let field = error["field"].as_str().unwrap_or("body");
            return Err(Error::InvalidInput {
                field: field.to_string(),
                message: format!(
                    "ConnectWise refused {field}: {}",
                    error["message"].as_str().unwrap_or(message)
                ),
            });
        }
        return Err(Error::InvalidInput {
            field: "body".into(),
            message: format!("ConnectWise refused the request: {message}"),
        });
    }
    Err(Error::from_status_detail(
        status,
        &format!("ConnectWise answered {status}: {message}"),
        PERMISSION_HINT,
    ))
}

/// The `rel="next"` URL of a `Link` header, if any.
pub fn next_link(headers: &[(String, String)]) -> Option<String> {
    let link = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("link"))
        .map(|(_, value)| value.as_str())?;
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| p.trim() == "rel=\"next\"")
            .then(|| {
                target
                    .trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
    })
}

/// One page of a list: its items and the next page's URL.
pub fn page(config: &Config, url: &str) -> Result<(Vec<Value>, Option<String>), Error> {
    let response = send(config, "GET", url, None)?;
    match answer(&response)? {
        Value::Array(items) => Ok((items, next_link(&response.headers))),
        _ => Err(Error::Upstream(format!("{url} did not answer a list"))),
    }
}

/// `path` under the API with `query` pairs (values encoded here).
pub fn url(config: &Config, path: &str, query: &[(&str, String)]) -> Result<String, Error> {
    let mut url = format!("{}/{}", base(config)?, path.trim_start_matches('/'));
    for (i, (name, value)) in query.iter().enumerate() {
        url.push(if i == 0 { '?' } else { '&' });
        url.push_str(name);
        url.push('=');
        url.push_str(&http::encode(value));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(link: &str) -> Vec<(String, String)> {
        vec![("Link".into(), link.into())]
    }

    #[test]
    fn the_next_link_is_read_from_the_header() {
        let link = "<https://x.example/v4_6_release/apis/3.0/service/tickets/?pageSize=1000&page=2>; rel=\"next\", \
                    <https://x.example/v4_6_release/apis/3.0/service/tickets/?pageSize=1000&page=230>; rel=\"last\"";
        assert_eq!(
            next_link(&headers(link)).as_deref(),
            Some("https://x.example/v4_6_release/apis/3.0/service/tickets/?pageSize=1000&page=2")
        );
        assert_eq!(
            next_link(&headers("<https://x/?page=1>; rel=\"first\"")),
            None
        );
        assert_eq!(next_link(&[]), None);
    }

    #[test]
    fn the_site_gets_the_api_path_once() {
        let config = serde_json::json!({"site": "https://api-na.myconnectwise.net/"});
        assert_eq!(
            base(&config).unwrap(),
            "https://api-na.myconnectwise.net/v4_6_release/apis/3.0"
        );
        let config =
            serde_json::json!({"site": "https://api-na.myconnectwise.net/v4_6_release/apis/3.0"});
        assert_eq!(
            base(&config).unwrap(),
            "https://api-na.myconnectwise.net/v4_6_release/apis/3.0"
        );
    }

    #[test]
    fn errors_name_the_refused_field() {
        let refused = http::Response {
            status: 400,
            headers: vec![],
            body: br#"{"code":"InvalidObject","message":"ticket object is invalid",
                "errors":[{"code":"Required","message":"The summary field is required.","resource":"ticket","field":"summary"}]}"#
                .to_vec(),
        };
        match answer(&refused) {
            Err(Error::InvalidInput { field, message }) => {
                assert_eq!(field, "summary");
                assert!(message.contains("required"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        let unauthorized = http::Response {
            status: 401,
            headers: vec![],
            body: br#"{"code":"Unauthorized","message":"UserNotAuthenticated"}"#.to_vec(),
        };
        assert!(matches!(answer(&unauthorized), Err(Error::Auth { .. })));
        assert_eq!(quoted("say \"hi\""), "\"say \\\"hi\\\"\"");
    }
}
