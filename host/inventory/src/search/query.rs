//! The SearchRequest body, as clients send it.

use serde::Deserialize;
use serde_json::Value;
use utoipa::ToSchema;

/// Default page size of every inventory list and search.
pub const DEFAULT_LIMIT: i64 = 50;
/// Largest page a caller may ask for; larger limits are cut to it.
pub const MAX_LIMIT: i64 = 500;

/// A structured search: a query tree, optional free text, a sort and a page.
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// The rules; absent or empty means everything.
    pub query: Option<QueryGroup>,
    /// Free text matched (case-insensitively, as a substring) against the
    /// search's main text fields.
    pub search: Option<String>,
    /// Rows to skip; default 0.
    #[schema(minimum = 0)]
    pub skip: Option<i64>,
    /// Page size; default 50, at most 500 (larger values are cut to 500).
    #[schema(minimum = 1)]
    pub limit: Option<i64>,
    /// A field of the allow-list, optionally with a leading `-` for
    /// descending order.
    pub sort: Option<String>,
}

/// Free text and a page: the query string of every plain inventory and
/// devices list.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// Substring to look for (case-insensitive).
    pub search: Option<String>,
    /// Default 0.
    #[param(minimum = 0)]
    pub skip: Option<i64>,
    /// Default 50, at most 500.
    #[param(minimum = 1)]
    pub limit: Option<i64>,
}

/// Rules combined by `combinator`; rules may themselves be groups.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct QueryGroup {
    /// Always `group` (optional at the top level).
    #[serde(default)]
    pub kind: Option<GroupKind>,
    pub combinator: Combinator,
    #[serde(default)]
    #[schema(no_recursion)]
    pub rules: Vec<QueryNode>,
}

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum GroupKind {
    Group,
}

/// One condition on one field.
#[derive(Debug, Clone, Deserialize, ToSchema)]
pub struct QueryRule {
    pub field: String,
    /// One of the 16 operators; a rule with another operator is dropped.
    pub operator: String,
    /// The operand: a string (numbers and booleans are also accepted and
    /// coerced to the field's type); for `in`/`not_in` a comma-separated
    /// string or an array; absent for `is_empty`/`is_not_empty`.
    #[schema(value_type = Option<Object>)]
    pub value: Option<Value>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QueryNode {
    Group(QueryGroup),
    Rule(QueryRule),
}

/// `and`: every rule; `or`: any rule; `none`: no rule; `not_all`: not every
/// rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Combinator {
    And,
    Or,
    None,
    NotAll,
}

/// The 16 operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Contains,
    NotContains,
    Equals,
    NotEquals,
    StartsWith,
    NotStartsWith,
    EndsWith,
    NotEndsWith,
    Gt,
    Gte,
    Lt,
    Lte,
    IsEmpty,
    IsNotEmpty,
    In,
    NotIn,
}

impl Operator {
    pub fn parse(name: &str) -> Option<Operator> {
        use Operator::*;
        Some(match name {
            "contains" => Contains,
            "not_contains" => NotContains,
            "equals" => Equals,
            "not_equals" => NotEquals,
            "starts_with" => StartsWith,
            "not_starts_with" => NotStartsWith,
            "ends_with" => EndsWith,
            "not_ends_with" => NotEndsWith,
            "gt" => Gt,
            "gte" => Gte,
            "lt" => Lt,
            "lte" => Lte,
            "is_empty" => IsEmpty,
            "is_not_empty" => IsNotEmpty,
            "in" => In,
            "not_in" => NotIn,
            _ => return None,
        })
    }

    /// The positive form of a `not_` operator (and `is_empty`, the negation
    /// of `is_not_empty`), with whether it was negated.
    pub fn positive(self) -> (Operator, bool) {
        use Operator::*;
        match self {
            NotContains => (Contains, true),
            NotEquals => (Equals, true),
            NotStartsWith => (StartsWith, true),
            NotEndsWith => (EndsWith, true),
            IsEmpty => (IsNotEmpty, true),
            NotIn => (In, true),
            other => (other, false),
        }
    }
}
