//! SentinelOne's lists, paged by `pagination.nextCursor`, and its errors.

use cairn_sdk::{http, Config, Error, Page, Value};

pub const AGENTS: &str = "agents";
pub const THREATS: &str = "threats";

const DEFAULT_PAGE_SIZE: u64 = 1000;

const PERMISSION_HINT: &str =
    "give the API token's user the Endpoints.view and Threats.view permissions";

fn api(config: &Config) -> Result<String, Error> {
    let base = cairn_sdk::base_url(config, "base_url")?;
    // A base URL given with the API path is taken as it is.
    let console = base.strip_suffix("/web/api/v2.1").unwrap_or(base);
    Ok(format!("{console}/web/api/v2.1"))
}

fn page_size(config: &Config) -> u64 {
    config["page_size"]
        .as_u64()
        .unwrap_or(DEFAULT_PAGE_SIZE)
        .clamp(1, 1000)
}

/// One page of `stream` from `cursor`; agents with their applications
/// under `_apps`.
pub fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error> {
    let path = match stream {
        AGENTS => "agents",
        THREATS => "threats",
        other => return Err(Error::Config(format!("unknown stream {other}"))),
    };
    let mut url = format!("{}/{path}?limit={}", api(config)?, page_size(config));
    if let Some(cursor) = cursor {
        url.push_str(&format!("&cursor={}", http::encode(cursor)));
    }
    let (mut records, next_cursor) = list(&url)?;
    if stream == AGENTS {
        attach_apps(config, &mut records)?;
    }
    Ok(Page {
        records,
        next_cursor,
    })
}

/// One agent, to check the token and its permissions.
pub fn first_agent(config: &Config) -> Result<Vec<Value>, Error> {
    list(&format!("{}/agents?limit=1", api(config)?)).map(|(agents, _)| agents)
}

/// A list answer's `data` and its next cursor (absent or null on the last
/// page).
fn list(url: &str) -> Result<(Vec<Value>, Option<String>), Error> {
    let response = http::send("GET", url, &[("accept", "application/json")], &[])?;
    let mut body = answer(response.status, &response.body)?;
    let next = body["pagination"]["nextCursor"]
        .as_str()
        .filter(|c| !c.is_empty())
        .map(String::from);
    match body["data"].take() {
        Value::Array(items) => Ok((items, next)),
        _ => Err(Error::Upstream("a SentinelOne list without data".into())),
    }
}

/// Each agent's installed applications under `_apps`: one request per
/// agent, the page's agents at once.
fn attach_apps(config: &Config, agents: &mut [Value]) -> Result<(), Error> {
    let api = api(config)?;
    let requests: Vec<http::Request> = agents
        .iter()
        .map(|agent| {
            let id = crate::lenient::text(&agent["id"]).unwrap_or_default();
            http::Request::get_json(&format!(
                "{api}/agents/applications?ids={}",
                http::encode(&id)
            ))
        })
        .collect();
    for (agent, answer) in agents.iter_mut().zip(http::send_all(&requests)) {
        let answer = answer?;
        let mut body = match answer.status {
            // The agent went away between its page and its applications.
            404 => continue,
            status => self::answer(status, &answer.body)?,
        };
        if let Value::Object(object) = agent {
            let apps = match body["data"].take() {
                Value::Array(apps) => apps,
                _ => Vec::new(),
            };
            object.insert("_apps".into(), Value::Array(apps));
        }
    }
    Ok(())
}

/// The JSON body of a 2xx answer, or the typed error of SentinelOne's
/// `{"errors": [{"code", "title", "detail"}]}`.
fn answer(status: u16, body: &[u8]) -> Result<Value, Error> {
    if (200..300).contains(&status) {
        return serde_json::from_slice(body).map_err(|e| {
            Error::Upstream(format!(
                "SentinelOne answered with a body that is not JSON: {e}"
            ))
        });
    }
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let first = &parsed["errors"][0];
    let detail = match (first["title"].as_str(), first["detail"].as_str()) {
        (Some(title), Some(detail)) => format!("{title}: {detail}"),
        (Some(title), None) => title.to_string(),
        _ => format!("status {status}"),
    };
    Err(Error::from_status_detail(
        status,
        &format!("SentinelOne answered {status}: {detail}"),
        PERMISSION_HINT,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_sdk::json;

    #[test]
    fn errors_keep_the_title_and_name_the_permissions() {
        let body =
            br#"{"errors":[{"code":4010010,"detail":null,"title":"Authentication Failed"}]}"#;
        let Err(Error::Auth {
            status,
            message,
            permission_hint,
        }) = answer(401, body)
        else {
            panic!("an auth error")
        };
        assert_eq!(status, 401);
        assert!(message.contains("Authentication Failed"));
        assert!(permission_hint.contains("Endpoints.view"));
        assert!(matches!(answer(503, b""), Err(Error::Transient(_))));
        assert_eq!(answer(200, b"{\"data\": []}").unwrap(), json!({"data": []}));
    }

    #[test]
    fn the_api_path_is_added_once() {
        let config = json!({"base_url": "https://console.example/web/api/v2.1/"});
        assert_eq!(
            api(&config).unwrap(),
            "https://console.example/web/api/v2.1"
        );
        let config = json!({"base_url": "https://console.example"});
        assert_eq!(
            api(&config).unwrap(),
            "https://console.example/web/api/v2.1"
        );
        assert_eq!(http::encode("a b/c"), "a%20b%2Fc");
    }
}
