/// Why a connector call failed. The host turns these into typed API errors
/// and decides about retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The config is unusable; say which field.
    Config(String),
    /// The upstream refused the credentials (401) or the permission (403).
    Auth {
        status: u16,
        message: String,
        /// The permission to grant, e.g. `DeviceManagementManagedDevices.Read.All`.
        permission_hint: String,
    },
    /// The upstream asked to wait this many seconds.
    RateLimited { retry_after_secs: u32 },
    /// Worth retrying later (timeouts, 5xx).
    Transient(String),
    /// Any other upstream failure.
    Upstream(String),
    /// The caller's input to an action is wrong; the host answers 422
    /// naming `field` (for example `ticket_id` or `body.summary`).
    InvalidInput { field: String, message: String },
    /// The upstream has no such object; the host answers 404.
    NotFound(String),
}

impl Error {
    /// The usual mapping of an upstream HTTP status to an error.
    pub fn from_status(status: u16, body: &str) -> Error {
        Error::from_status_detail(status, &format!("upstream status {status}: {body}"), "")
    }

    /// The error of a non-2xx `status`, with `detail` (what the upstream
    /// said, as your product's error body puts it, cut to 300 characters)
    /// as its message: 401 and 403 are [`Error::Auth`] carrying
    /// `permission_hint` (name the permission or role to grant), 404
    /// [`Error::NotFound`], 429 [`Error::RateLimited`] (the host has
    /// already waited out the upstream's own `Retry-After`), 5xx
    /// [`Error::Transient`] and the rest [`Error::Upstream`].
    pub fn from_status_detail(status: u16, detail: &str, permission_hint: &str) -> Error {
        let message: String = detail.chars().take(300).collect();
        match status {
            401 | 403 => Error::Auth {
                status,
                message,
                permission_hint: permission_hint.into(),
            },
            404 => Error::NotFound(message),
            429 => Error::RateLimited {
                retry_after_secs: 30,
            },
            500..=599 => Error::Transient(message),
            _ => Error::Upstream(message),
        }
    }
}

/// The config field `field` as a base URL: trimmed, without trailing
/// slashes; a [`Error::Config`] naming the field when it is unset or empty.
///
/// ```
/// let config = cairn_sdk::json!({"base_url": " https://api.example/ "});
/// assert_eq!(cairn_sdk::base_url(&config, "base_url").unwrap(), "https://api.example");
/// assert!(cairn_sdk::base_url(&config, "site").is_err());
/// ```
pub fn base_url<'a>(config: &'a serde_json::Value, field: &str) -> Result<&'a str, Error> {
    config[field]
        .as_str()
        .map(|b| b.trim().trim_end_matches('/'))
        .filter(|b| !b.is_empty())
        .ok_or_else(|| Error::Config(format!("{field} is not set")))
}

/// A JSON value as text: a string trimmed (`None` when only whitespace) or
/// a number's digits; `None` for anything else. Upstreams send ids as
/// either.
pub fn text_of(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::String(s) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Config(m) => write!(f, "config: {m}"),
            Error::Auth {
                status, message, ..
            } => write!(f, "auth ({status}): {message}"),
            Error::RateLimited { retry_after_secs } => {
                write!(f, "rate limited; retry in {retry_after_secs} s")
            }
            Error::Transient(m) => write!(f, "transient: {m}"),
            Error::Upstream(m) => write!(f, "upstream: {m}"),
            Error::InvalidInput { field, message } => write!(f, "{field}: {message}"),
            Error::NotFound(m) => write!(f, "not found: {m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<serde_json::Error> for Error {
    fn from(err: serde_json::Error) -> Self {
        Error::Upstream(format!("unreadable upstream JSON: {err}"))
    }
}

/// `record` without the top-level `keys` (what a fetch attached, such as
/// per-device details), copied key by key: cloning the whole record and
/// removing them afterwards would copy what is dropped.
pub fn without_keys(record: &serde_json::Value, keys: &[&str]) -> serde_json::Value {
    match record.as_object() {
        Some(object) => serde_json::Value::Object(
            object
                .iter()
                .filter(|(key, _)| !keys.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        ),
        None => record.clone(),
    }
}
