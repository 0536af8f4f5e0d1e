//! The meaning of a structured search's groups, written plainly, for the
//! differential tests that compare the service with it.

use serde_json::Value;

/// Whether `item` matches `group`; `None` when every rule in it is skipped
/// (`rule` answers `None` for a rule the service skips), which the caller
/// reads as "adds nothing".
pub fn eval_group<T>(
    item: &T,
    group: &Value,
    rule: &dyn Fn(&T, &Value) -> Option<bool>,
) -> Option<bool> {
    let results: Vec<bool> = group["rules"]
        .as_array()
        .expect("a group has rules")
        .iter()
        .filter_map(|node| {
            if node["kind"] == "group" {
                eval_group(item, node, rule)
            } else {
                rule(item, node)
            }
        })
        .collect();
    if results.is_empty() {
        return None;
    }
    Some(match group["combinator"].as_str().expect("a combinator") {
        "and" => results.iter().all(|r| *r),
        "or" => results.iter().any(|r| *r),
        "none" => !results.iter().any(|r| *r),
        _ => !results.iter().all(|r| *r),
    })
}
