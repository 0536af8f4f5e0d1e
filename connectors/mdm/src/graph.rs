//! Microsoft Graph: base URLs, `@odata.nextLink` paging and error bodies.

use cairn_sdk::{http, Config, Error, Page, Value};

/// The stream of managed devices, each with its detected apps attached.
pub const MANAGED_DEVICES: &str = "managed_devices";

/// Intune pages devices by 100 unless told otherwise.
const DEFAULT_PAGE_SIZE: u64 = 100;

/// What the app registration needs, named in every auth error.
pub const PERMISSION_HINT: &str = "grant the app registration the application permissions \
     DeviceManagementManagedDevices.Read.All and DeviceManagementApps.Read.All, with admin consent";

/// `{graph_url}` without a trailing slash.
pub fn graph_url(config: &Config) -> Result<&str, Error> {
    config["graph_url"]
        .as_str()
        .map(|b| b.trim_end_matches('/'))
        .filter(|b| !b.is_empty())
        .ok_or_else(|| Error::Config("graph_url is not set".into()))
}

fn page_size(config: &Config) -> u64 {
    config["page_size"]
        .as_u64()
        .unwrap_or(DEFAULT_PAGE_SIZE)
        .clamp(1, 1000)
}

fn first_page_url(config: &Config, top: u64) -> Result<String, Error> {
    Ok(format!(
        "{}/v1.0/deviceManagement/managedDevices?$top={top}",
        graph_url(config)?
    ))
}

/// One managed device, to check the credentials and the permissions.
pub fn first_device(config: &Config) -> Result<Vec<Value>, Error> {
    get_page(&first_page_url(config, 1)?).map(|(devices, _)| devices)
}

/// One page of devices (from `cursor`, the previous page's
/// `@odata.nextLink`) with each device's apps under `_detectedApps`.
pub fn fetch_devices(config: &Config, cursor: Option<&str>) -> Result<Page, Error> {
    let url = match cursor {
        Some(next) => next.to_string(),
        None => first_page_url(config, page_size(config))?,
    };
    let (devices, next_cursor) = get_page(&url)?;
    let records = crate::batch::attach_apps(config, devices)?;
    Ok(Page {
        records,
        next_cursor,
    })
}

/// GET a collection page: its `value` and its `@odata.nextLink`.
fn get_page(url: &str) -> Result<(Vec<Value>, Option<String>), Error> {
    let response = http::send("GET", url, &[("accept", "application/json")], &[])?;
    let body = answer(response.status, &response.body)?;
    let next = body["@odata.nextLink"].as_str().map(String::from);
    match body {
        Value::Object(mut object) => match object.remove("value") {
            Some(Value::Array(items)) => Ok((items, next)),
            _ => Err(Error::Upstream("a Graph page without a value list".into())),
        },
        _ => Err(Error::Upstream("a Graph page that is not an object".into())),
    }
}

/// A Graph answer's JSON body, or the typed error its status and error body
/// say (`{"error": {"code", "message"}}`, kept in the message).
pub fn answer(status: u16, body: &[u8]) -> Result<Value, Error> {
    if (200..300).contains(&status) {
        return serde_json::from_slice(body).map_err(|e| {
            Error::Upstream(format!("Graph answered with a body that is not JSON: {e}"))
        });
    }
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    Err(error(status, &parsed))
}

/// The typed error of a non-2xx Graph status and its JSON error body.
pub fn error(status: u16, body: &Value) -> Error {
    let detail = match (
        body["error"]["code"].as_str(),
        body["error"]["message"].as_str(),
    ) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(code), None) => code.to_string(),
        _ => format!("status {status}"),
    };
    let detail: String = detail.chars().take(300).collect();
    match status {
        401 | 403 => Error::Auth {
            status,
            message: format!("Graph refused the request ({detail})"),
            permission_hint: PERMISSION_HINT.into(),
        },
        404 => Error::NotFound(format!("Graph: {detail}")),
        429 => Error::RateLimited {
            retry_after_secs: 30,
        },
        500..=599 => Error::Transient(format!("Graph answered {status}: {detail}")),
        _ => Error::Upstream(format!("Graph answered {status}: {detail}")),
    }
}
