//! Rule values to the field's type. A value that cannot be read as the
//! field's type is the client's mistake and is reported, naming the field.

use serde_json::Value;

use super::query::QueryRule;
use super::SearchError;

fn invalid(rule: &QueryRule, at: &str, what: &str) -> SearchError {
    SearchError::Rule {
        path: format!("{at}.value"),
        message: format!(
            "`{}` on `{}` needs {what}",
            rule.operator.name(),
            rule.field
        ),
    }
}

/// The rule's value as text: strings as they are, numbers and booleans
/// printed, arrays joined with commas (for `in`).
pub fn raw_value(rule: &QueryRule, at: &str) -> Result<String, SearchError> {
    match &rule.value {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(Value::Bool(b)) => Ok(b.to_string()),
        Some(Value::Array(items)) => {
            let parts: Option<Vec<String>> = items
                .iter()
                .map(|v| match v {
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    Value::Bool(b) => Some(b.to_string()),
                    _ => None,
                })
                .collect();
            parts
                .map(|p| p.join(","))
                .ok_or_else(|| invalid(rule, at, "an array of strings, numbers or booleans"))
        }
        _ => Err(invalid(rule, at, "a value")),
    }
}

/// `in`/`not_in` operands: split on commas, trimmed, empties dropped.
pub fn list(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

pub fn number(raw: &str, rule: &QueryRule, at: &str) -> Result<f64, SearchError> {
    raw.trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite())
        .ok_or_else(|| invalid(rule, at, "a number"))
}

pub fn boolean(raw: &str, rule: &QueryRule, at: &str) -> Result<bool, SearchError> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        _ => Err(invalid(rule, at, "true or false")),
    }
}

/// RFC 3339, `YYYY-MM-DD` (midnight UTC) or milliseconds since the epoch.
pub fn date_ms(raw: &str, rule: &QueryRule, at: &str) -> Result<i64, SearchError> {
    let raw = raw.trim();
    if let Ok(ms) = raw.parse::<i64>() {
        return Ok(ms);
    }
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(raw) {
        return Ok(at.timestamp_millis());
    }
    if let Ok(day) = chrono::NaiveDate::parse_from_str(raw, "%Y-%m-%d") {
        return Ok(day
            .and_time(chrono::NaiveTime::MIN)
            .and_utc()
            .timestamp_millis());
    }
    Err(invalid(rule, at, "a date (RFC 3339 or YYYY-MM-DD)"))
}
