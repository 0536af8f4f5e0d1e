//! The meaning of a structured search's groups, written plainly, for the
//! differential tests that compare the service with it.

use serde_json::{json, Value};

/// A search rule as a client writes it; a null `value` is left out.
pub fn rule(field: &str, operator: &str, value: Value) -> Value {
    let mut rule = json!({"kind": "rule", "field": field, "operator": operator});
    if !value.is_null() {
        rule["value"] = value;
    }
    rule
}

/// A search group as a client writes it.
pub fn group(combinator: &str, rules: Vec<Value>) -> Value {
    json!({"kind": "group", "combinator": combinator, "rules": rules})
}

/// Every operator of the spec, and one the service does not know, which a
/// search drops (spec rule 8) or refuses under `strict`.
pub const OPERATORS: [&str; 17] = [
    "contains",
    "not_contains",
    "equals",
    "not_equals",
    "starts_with",
    "not_starts_with",
    "ends_with",
    "not_ends_with",
    "gt",
    "gte",
    "lt",
    "lte",
    "is_empty",
    "is_not_empty",
    "in",
    "not_in",
    "bogus",
];

/// Whether the service knows `operator` (a search drops a rule with any
/// other).
pub fn known(operator: &str) -> bool {
    operator != "bogus" && OPERATORS.contains(&operator)
}

/// An operator's positive form and whether it was negated (`not_x`, and
/// `is_empty` as the negation of `is_not_empty`).
pub fn positive(operator: &str) -> (&str, bool) {
    match operator.strip_prefix("not_") {
        Some(p) => (p, true),
        None if operator == "is_empty" => ("is_not_empty", true),
        None => (operator, false),
    }
}

/// A field's type as a search types it: what decides which operators a
/// rule on it may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Text,
    /// Numbers and dates.
    Number,
    Boolean,
    /// Text that also compares in version order.
    Version,
}

/// Whether a search takes `operator` on a field of `kind`; it refuses the
/// whole request (422) otherwise, as it refuses an unknown operator.
pub fn takes(kind: FieldKind, operator: &str) -> bool {
    use FieldKind::*;
    match positive(operator).0 {
        "equals" | "is_not_empty" | "in" => true,
        "contains" | "starts_with" | "ends_with" => matches!(kind, Text | Version),
        "gt" | "gte" | "lt" | "lte" | "between" => matches!(kind, Number | Version),
        _ => false,
    }
}

/// Mostly an operator that `kind` takes, so that most random queries are
/// answered; one in `1 / any_odds` draws keeps any operator, which the
/// search may refuse.
pub fn random_operator(rng: &mut impl rand::Rng, kind: FieldKind, any_odds: u32) -> &'static str {
    loop {
        let operator = OPERATORS[rng.gen_range(0..OPERATORS.len())];
        if takes(kind, operator) || rng.gen_ratio(1, any_odds) {
            return operator;
        }
    }
}

/// Whether `item` matches `group`; `None` for an empty group, which the
/// caller reads as "adds nothing". `rule` is only asked about rules the
/// search takes (see [`refused`]).
pub fn eval_group<T>(item: &T, group: &Value, rule: &dyn Fn(&T, &Value) -> bool) -> Option<bool> {
    let results: Vec<bool> = group["rules"]
        .as_array()
        .expect("a group has rules")
        .iter()
        .filter_map(|node| {
            if node["kind"] == "group" {
                eval_group(item, node, rule)
            } else if !known(node["operator"].as_str().unwrap_or("")) {
                // Dropped, as if not written.
                None
            } else {
                Some(rule(item, node))
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

/// Whether any rule of `group` is one the search refuses (`refuses` says
/// it of one rule): the whole request is then a 422.
pub fn refused(group: &Value, refuses: &dyn Fn(&Value) -> bool) -> bool {
    group["rules"]
        .as_array()
        .expect("a group has rules")
        .iter()
        .any(|node| {
            if node["kind"] == "group" {
                refused(node, refuses)
            } else {
                refuses(node)
            }
        })
}
