//! Microsoft Graph for the connectors that read it (mdm, directory): the
//! base URL from config, collection pages followed by `@odata.nextLink`,
//! and Graph's error body (`{"error": {"code", "message"}}`) as the SDK's
//! typed errors, an auth error naming the permissions the caller needs.
//!
//! A library, not a component: each connector links it in.

use cairn_sdk::{http, Config, Error, Value};

/// `{graph_url}` from config, without a trailing slash.
pub fn graph_url(config: &Config) -> Result<&str, Error> {
    cairn_sdk::base_url(config, "graph_url")
}

/// A collection page: its `value` and its `@odata.nextLink`. Throttling
/// (429, or 503 with `Retry-After`) is waited out by the host.
pub fn get_page(url: &str, permission_hint: &str) -> Result<(Vec<Value>, Option<String>), Error> {
    let response = http::send("GET", url, &[("accept", "application/json")], &[])?;
    page_of(answer(response.status, &response.body, permission_hint)?)
}

/// The `value` list and `@odata.nextLink` of a page's body.
pub fn page_of(body: Value) -> Result<(Vec<Value>, Option<String>), Error> {
    let next = body["@odata.nextLink"].as_str().map(String::from);
    match body {
        Value::Object(mut object) => match object.remove("value") {
            Some(Value::Array(items)) => Ok((items, next)),
            _ => Err(Error::Upstream("a Graph page without a value list".into())),
        },
        _ => Err(Error::Upstream("a Graph page that is not an object".into())),
    }
}

/// Every item of a collection, following `@odata.nextLink` from `url`.
pub fn all_pages(url: &str, permission_hint: &str) -> Result<Vec<Value>, Error> {
    let (mut items, mut next) = get_page(url, permission_hint)?;
    while let Some(url) = next {
        let (more, after) = get_page(&url, permission_hint)?;
        items.extend(more);
        next = after;
    }
    Ok(items)
}

/// A Graph answer's JSON body, or the typed error its status and body say.
pub fn answer(status: u16, body: &[u8], permission_hint: &str) -> Result<Value, Error> {
    if (200..300).contains(&status) {
        return serde_json::from_slice(body).map_err(|e| {
            Error::Upstream(format!("Graph answered with a body that is not JSON: {e}"))
        });
    }
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    Err(error(status, &parsed, permission_hint))
}

/// The typed error of a non-2xx status and Graph's JSON error body, whose
/// code and message are kept in the message.
pub fn error(status: u16, body: &Value, permission_hint: &str) -> Error {
    let detail = match (
        body["error"]["code"].as_str(),
        body["error"]["message"].as_str(),
    ) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code.to_string(),
        _ => format!("status {status}"),
    };
    Error::from_status_detail(
        status,
        &format!("Graph answered {status}: {detail}"),
        permission_hint,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_sdk::json;

    #[test]
    fn graph_errors_keep_code_and_message_and_name_the_permissions() {
        let body = json!({"error": {"code": "Authorization_RequestDenied",
            "message": "Insufficient privileges to complete the operation.",
            "innerError": {"request-id": "x"}}});
        let Error::Auth {
            status,
            message,
            permission_hint,
        } = error(403, &body, "grant User.Read.All")
        else {
            panic!("an auth error")
        };
        assert_eq!(status, 403);
        assert!(message.contains("Authorization_RequestDenied: Insufficient privileges"));
        assert_eq!(permission_hint, "grant User.Read.All");
        assert!(matches!(error(503, &Value::Null, ""), Error::Transient(_)));
        assert!(matches!(
            answer(200, b"{\"value\": []}", "").map(page_of),
            Ok(Ok((items, None))) if items.is_empty()
        ));
    }
}
