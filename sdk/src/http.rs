//! Outbound HTTP through the host. The host checks the URL against the
//! allow-list, attaches credentials, caps size and time, and waits out 429s.

use serde_json::Value;

use crate::Error;

/// `value` percent-encoded for a URL's query or path: every byte but the
/// unreserved ones (`A-Z a-z 0-9 - _ . ~`) as `%XX`.
///
/// ```
/// assert_eq!(cairn_sdk::http::encode("name like \"acme%\""), "name%20like%20%22acme%25%22");
/// ```
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// A response from the upstream.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The body as JSON; non-2xx statuses become the usual [`Error`].
    pub fn json(&self) -> Result<Value, Error> {
        if !(200..300).contains(&self.status) {
            return Err(Error::from_status(
                self.status,
                &String::from_utf8_lossy(&self.body),
            ));
        }
        Ok(serde_json::from_slice(&self.body)?)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Sends a request. `url` must be absolute.
pub fn send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Response, Error> {
    crate::__private::send(method, url, headers, body)
}

/// GET `url` and parse JSON.
pub fn get_json(url: &str) -> Result<Value, Error> {
    send("GET", url, &[("accept", "application/json")], &[])?.json()
}

/// POST a JSON body and parse the JSON answer.
pub fn post_json(url: &str, body: &Value) -> Result<Value, Error> {
    let bytes = serde_json::to_vec(body)?;
    send(
        "POST",
        url,
        &[
            ("accept", "application/json"),
            ("content-type", "application/json"),
        ],
        &bytes,
    )?
    .json()
}

/// A request for [`send_all`].
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub method: String,
    /// Absolute URL.
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// A GET of `url` asking for JSON.
    pub fn get_json(url: &str) -> Request {
        Request {
            method: "GET".into(),
            url: url.into(),
            headers: vec![("accept".into(), "application/json".into())],
            body: vec![],
        }
    }
}

/// Sends every request, at most the descriptor's
/// `max_concurrent_requests` at once, and answers each in the order given.
/// Use it for per-device detail calls (one request per device of a page)
/// instead of a loop of [`send`]s: the upstream's latency is paid once per
/// batch, not once per device.
pub fn send_all(requests: &[Request]) -> Vec<Result<Response, Error>> {
    crate::__private::send_all(requests)
}
