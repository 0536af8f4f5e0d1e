//! The SearchRequest body, as clients send it.

use serde::Deserialize;
use serde_json::Value;
use utoipa::openapi::schema::{Discriminator, OneOfBuilder, Schema};
use utoipa::openapi::{Ref, RefOr};
use utoipa::ToSchema;

/// Default page size of every inventory list and search.
pub const DEFAULT_LIMIT: i64 = cairn_core::http::paging::DEFAULT_LIMIT;
/// Largest page a caller may ask for; a larger limit is refused.
pub const MAX_LIMIT: i64 = cairn_core::http::paging::MAX_LIMIT;

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
    /// Page size; default 50, at most 500 (a larger one is refused).
    #[schema(minimum = 1)]
    pub limit: Option<i64>,
    /// A field of the allow-list, optionally with a leading `-` for
    /// descending order.
    pub sort: Option<String>,
    /// `true`: a rule whose field is not in the allow-list, or whose
    /// operator is unknown, is refused with 422 naming it. By default
    /// (the spec's rule) such a rule is skipped, and the answer's
    /// `skipped_rules` says which and why.
    #[serde(default)]
    pub strict: bool,
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

/// Rules combined by `combinator`; rules may themselves be groups. The
/// same grammar wherever a query is taken (device and application
/// searches, dashboard widget filters, report scopes): `kind` is `group`,
/// and only the outermost group may leave it out.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryGroup {
    /// Always `group`; optional on the outermost group only.
    #[serde(default)]
    #[schema(required = true)]
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

#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RuleKind {
    Rule,
}

/// One condition on one field.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(from = "RawRule")]
pub struct QueryRule {
    /// Always `rule`.
    #[serde(default)]
    #[schema(required = true)]
    pub kind: Option<RuleKind>,
    /// A field of the search's allow-list (the `field` enum of its
    /// request schema); a rule on any other is skipped (refused with 422
    /// under `strict`).
    pub field: String,
    /// One of the operators; a rule with any other is dropped (refused
    /// with 422 under `strict`).
    pub operator: Operator,
    /// The operand: a string (numbers and booleans are also accepted and
    /// coerced to the field's type); for `in`/`not_in` a comma-separated
    /// string or an array; absent for `is_empty`/`is_not_empty`.
    #[schema(value_type = Option<RuleValue>)]
    pub value: Option<Value>,
    /// The operator as the client wrote it when it is none of
    /// [`Operator`]'s: the compiler drops (or refuses) the rule, and
    /// `operator` is never read.
    #[serde(skip)]
    #[schema(ignore)]
    pub unknown_operator: Option<String>,
}

/// A rule as sent, its operator still text.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    #[serde(default)]
    kind: Option<RuleKind>,
    field: String,
    operator: String,
    value: Option<Value>,
}

impl From<RawRule> for QueryRule {
    fn from(raw: RawRule) -> QueryRule {
        let known = Operator::deserialize(serde::de::value::StrDeserializer::<
            serde::de::value::Error,
        >::new(&raw.operator))
        .ok();
        QueryRule {
            kind: raw.kind,
            field: raw.field,
            operator: known.unwrap_or(Operator::Equals),
            value: raw.value,
            unknown_operator: known.is_none().then_some(raw.operator),
        }
    }
}

/// What a rule's `value` may be (its schema only; the rule keeps the JSON
/// value and coerces it to the field's type).
#[derive(ToSchema)]
#[allow(dead_code)]
#[serde(untagged)]
pub enum RuleValue {
    Text(String),
    Number(f64),
    Flag(bool),
    /// For `in`, `not_in` and `between`.
    List(Vec<ListValue>),
}

/// One value of a [`RuleValue::List`].
#[derive(ToSchema)]
#[allow(dead_code)]
#[serde(untagged)]
pub enum ListValue {
    Text(String),
    Number(f64),
    Flag(bool),
}

impl QueryRule {
    pub fn new(field: &str, operator: Operator, value: Option<Value>) -> QueryRule {
        QueryRule {
            kind: Some(RuleKind::Rule),
            field: field.to_string(),
            operator,
            value,
            unknown_operator: None,
        }
    }
}

/// A rule or a nested group, told apart by `kind`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum QueryNode {
    Group(QueryGroup),
    Rule(QueryRule),
}

// Written by hand: what utoipa derives for an internally tagged enum (an
// `allOf` per variant, no discriminator) is more than most client
// generators can read.
impl utoipa::PartialSchema for QueryNode {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(Ref::from_schema_name("QueryGroup"))
            .item(Ref::from_schema_name("QueryRule"))
            .discriminator(Some(Discriminator::with_mapping(
                "kind",
                [
                    ("group", "#/components/schemas/QueryGroup"),
                    ("rule", "#/components/schemas/QueryRule"),
                ],
            )))
            .into()
    }
}

impl ToSchema for QueryNode {}

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

/// The operators: the spec's 16 and `between`. `gt`, `gte`, `lt`, `lte`
/// and `between` compare numbers, dates
/// and versions (in the inventory's version order: `119.0.6045.200` is
/// below `120`); the text operators apply to text fields only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
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
    /// Both ends included; the value is `[low, high]` or `"low,high"`.
    Between,
    IsEmpty,
    IsNotEmpty,
    In,
    NotIn,
}

impl Operator {
    /// Every operator, in the order the docs list them.
    pub const ALL: [Operator; 17] = {
        use Operator::*;
        [
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
            Between,
            IsEmpty,
            IsNotEmpty,
            In,
            NotIn,
        ]
    };

    /// The operator as clients spell it.
    pub fn name(self) -> &'static str {
        use Operator::*;
        match self {
            Contains => "contains",
            NotContains => "not_contains",
            Equals => "equals",
            NotEquals => "not_equals",
            StartsWith => "starts_with",
            NotStartsWith => "not_starts_with",
            EndsWith => "ends_with",
            NotEndsWith => "not_ends_with",
            Gt => "gt",
            Gte => "gte",
            Lt => "lt",
            Lte => "lte",
            Between => "between",
            IsEmpty => "is_empty",
            IsNotEmpty => "is_not_empty",
            In => "in",
            NotIn => "not_in",
        }
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
