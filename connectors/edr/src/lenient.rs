//! SentinelOne's values are not always the documented types: ids are
//! numeric strings, and a boolean may arrive as the string `"True"`. These
//! read a value as the type wanted when it plainly is one, else `None`.

use cairn_sdk::Value;

pub use cairn_sdk::text_of as text;

/// `true`/`false`, also as the strings `"True"`, `"false"`, `"1"`, `"0"`
/// and the numbers 1 and 0.
pub fn boolean(value: &Value) -> Option<bool> {
    match value {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Some(true),
            "false" | "0" | "no" => Some(false),
            _ => None,
        },
        Value::Number(n) => match n.as_i64() {
            Some(1) => Some(true),
            Some(0) => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// An integer, also as a string of digits.
pub fn integer(value: &Value) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cairn_sdk::json;

    #[test]
    fn documented_and_stringly_values_both_read() {
        assert_eq!(boolean(&json!("True")), Some(true));
        assert_eq!(boolean(&json!(false)), Some(false));
        assert_eq!(boolean(&json!("maybe")), None);
        assert_eq!(integer(&json!("3")), Some(3));
        assert_eq!(integer(&json!(2)), Some(2));
        assert_eq!(integer(&json!("x")), None);
        assert_eq!(
            text(&json!(657613730168123595u64)).as_deref(),
            Some("657613730168123595")
        );
        assert_eq!(text(&json!("  ")), None);
    }
}
