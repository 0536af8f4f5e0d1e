//! Query trees to parameterized SQL, one body of SQL for both backends
//! except where JSON is read.
//!
//! Every predicate a rule produces is two-valued (never NULL), so `NOT`
//! around it, and the `none` and `not_all` combinators, mean exactly "does
//! not match". User text only ever travels as a bound parameter; field names
//! reach SQL only through the catalog, which maps allowed names to fixed
//! expressions.

use sqlx::any::AnyArguments;
use sqlx::Arguments;

use super::query::{Combinator, Operator, QueryGroup, QueryNode, QueryRule};
use super::{fold, SearchError};
use cairn_core::db::Backend;

/// A field's type: what values are coerced to and which operators apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    Text,
    Number,
    Boolean,
    /// Stored as milliseconds since the epoch; values may be RFC 3339,
    /// `YYYY-MM-DD` or milliseconds.
    Date,
    /// Text that also compares in the inventory's version order
    /// ([`crate::version::compare_release`]): the text operators read the
    /// version as written, `gt`, `gte`, `lt`, `lte` and `between` its
    /// [`release_key`](crate::version::release_key), and `equals` and
    /// `in` the release (`120` equals `120.0`).
    Version,
}

impl FieldType {
    /// The type's name in error messages.
    fn name(self) -> &'static str {
        match self {
            FieldType::Text => "text",
            FieldType::Number => "number",
            FieldType::Boolean => "boolean",
            FieldType::Date => "date",
            FieldType::Version => "version",
        }
    }
}

/// Where a field's value lives. Text is only ever read from the row's
/// [`SearchDocument`](super::SearchDocument), where it is folded, so that
/// both engines compare the same strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Column {
    /// A number or date column of the searched table.
    Plain(&'static str),
    /// A `NOT NULL` column: sorts without the missing-values-last term, so
    /// an index on it can serve the order. A text column here must hold
    /// folded values (a sort key).
    Required(&'static str),
    /// A key of the search document; only values of the field's JSON type
    /// count, anything else reads as missing.
    Document(&'static str),
    /// A key of the search document holding a list of folded text; a rule
    /// matches when an element does, and a negated rule when no element
    /// matches its positive form.
    DocumentList(&'static str),
    /// A list in the search document of versions (`text`) and, in the same
    /// order, their release keys (`key`): a rule matches when an element
    /// does.
    VersionList {
        text: &'static str,
        key: &'static str,
    },
    /// One part of the elements of the document's list `key`, each
    /// `[name, version, release key]` of one installed application. In an
    /// `and` group the positive rules on such parts describe one element
    /// together: an application named so *and* of that version.
    Installed { key: &'static str, part: Part },
    /// A field (the key) of a [`Terms`] table, which holds a row per value
    /// (so a list field is several rows): a rule matches a row that has a
    /// value matching it, a negated rule one that has none. Not sortable;
    /// a catalog sorts such a field by its document key.
    Term(Terms, &'static str),
}

/// A child table beside the searched one with a row per searchable value
/// (`field`, folded `text_value` or `number_value`), indexed by
/// `(tenant_id, field, text_value, number_value, key)`: a rule on a
/// [`Column::Term`] is one index range turned into a set of keys, where a
/// document key is read and parsed on every row of the tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terms {
    pub table: &'static str,
    /// The searched row's key column in the terms table.
    pub key_column: &'static str,
    /// The same key as the search's `FROM` names it (`a.id`).
    pub row_key: &'static str,
}

/// A rule on a part of an installed application: its path, the rule
/// and its field.
type PartRule<'r> = (String, &'r QueryRule, Field);

/// A part of an [`Column::Installed`] element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Name,
    Version,
}

/// The placeholder every search binds the tenant to.
pub const TENANT_PLACEHOLDER: &str = "$1";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub column: Column,
    pub ty: FieldType,
}

/// The allow-list of one search.
pub trait Catalog: Sync {
    fn field(&self, name: &str) -> Option<Field>;

    /// Every rule field, for OpenAPI and for the error naming an unknown
    /// one.
    fn names(&self) -> Vec<String>;

    /// The field `sort` names; by default the rule field of that name.
    fn sort_field(&self, name: &str) -> Option<Field> {
        self.field(name)
    }
}

/// Values one `in` rule may list.
pub const MAX_IN_VALUES: usize = 1000;

#[derive(Debug, Clone, PartialEq)]
enum Param {
    Text(String),
    Number(f64),
    Int(i64),
}

/// SQL text and the parameters it binds, numbered from a chosen start so
/// the caller can put its own (the tenant) first.
pub struct Compiler<'c> {
    backend: Backend,
    catalog: &'c dyn Catalog,
    document: &'static str,
    first: usize,
    params: Vec<Param>,
    /// Refuse rules on unknown fields or with unknown operators instead of
    /// skipping them.
    strict: bool,
    skipped: Vec<SkippedRule>,
}

/// A rule a search left out (spec rule 8: a field not in the allow-list
/// is skipped, an unknown operator dropped), and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct SkippedRule {
    /// Where the rule is in the request (`query.rules[1].rules[0]`).
    pub path: String,
    /// Why, as a sentence.
    pub reason: String,
}

/// The nodes of an `and` group with every `and` subgroup's nodes in its
/// place, at any depth, each with its path in the request.
fn and_nodes<'g>(group: &'g QueryGroup, path: &str) -> Vec<(String, &'g QueryNode)> {
    let mut out = vec![];
    for (index, node) in group.rules.iter().enumerate() {
        let at = format!("{path}.rules[{index}]");
        match node {
            QueryNode::Group(inner) if inner.combinator == Combinator::And => {
                out.extend(and_nodes(inner, &at));
            }
            _ => out.push((at, node)),
        }
    }
    out
}

impl<'c> Compiler<'c> {
    pub fn new(
        backend: Backend,
        catalog: &'c dyn Catalog,
        document: &'static str,
        first_placeholder: usize,
    ) -> Self {
        Compiler {
            backend,
            catalog,
            document,
            first: first_placeholder,
            params: vec![],
            strict: false,
            skipped: vec![],
        }
    }

    /// Refuse (422) rather than skip a rule on a field not in the
    /// allow-list or with an unknown operator.
    pub fn strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// The rules left out so far, in request order.
    pub fn take_skipped(&mut self) -> Vec<SkippedRule> {
        std::mem::take(&mut self.skipped)
    }

    /// The group's condition; `None` when it adds nothing (empty). `path`
    /// names the group in errors (`query`, `query.rules[2]`).
    pub fn group(&mut self, group: &QueryGroup, path: &str) -> Result<Option<String>, SearchError> {
        let mut parts = vec![];
        // An `and` group's `and` subgroups are its own rules (A and (B and
        // C) is A and B and C), so what pairs below sees them together
        // however a client nested them.
        let nodes = if group.combinator == Combinator::And {
            and_nodes(group, path)
        } else {
            group
                .rules
                .iter()
                .enumerate()
                .map(|(index, node)| (format!("{path}.rules[{index}]"), node))
                .collect()
        };
        // In an `and` group with a positive rule on an installed
        // application's version, the positive rules on parts of one
        // installed application (per list) are one condition on one
        // element: "Chrome below 120" is one application, not a Chrome
        // and some application below 120. Without a version rule, each
        // name rule stands alone.
        let joins_parts = group.combinator == Combinator::And
            && nodes.iter().any(|(_, node)| match node {
                QueryNode::Rule(rule) => {
                    rule.unknown_operator.is_none()
                        && !rule.operator.positive().1
                        && matches!(
                            self.catalog.field(&rule.field),
                            Some(Field {
                                column: Column::Installed {
                                    part: Part::Version,
                                    ..
                                },
                                ..
                            })
                        )
                }
                QueryNode::Group(_) => false,
            });
        let mut together: Vec<(&'static str, Vec<PartRule<'_>>)> = vec![];
        for (at, node) in nodes {
            let rule = match node {
                QueryNode::Group(inner) => {
                    parts.extend(self.group(inner, &at)?);
                    continue;
                }
                QueryNode::Rule(rule) => rule,
            };
            let Some(field) = self.known_field(rule, &at)? else {
                continue;
            };
            if let (Column::Installed { key, .. }, true, false) =
                (&field.column, joins_parts, rule.operator.positive().1)
            {
                match together.iter_mut().find(|(k, _)| k == key) {
                    Some((_, rules)) => rules.push((at, rule, field)),
                    None => together.push((key, vec![(at, rule, field)])),
                }
                continue;
            }
            parts.push(self.rule(rule, &field, &at)?);
        }
        for (key, rules) in together {
            parts.push(self.installed(key, &rules)?);
        }
        if parts.is_empty() {
            return Ok(None);
        }
        let (joiner, negate) = match group.combinator {
            Combinator::And => (" AND ", false),
            Combinator::Or => (" OR ", false),
            Combinator::None => (" OR ", true),
            Combinator::NotAll => (" AND ", true),
        };
        let joined = format!("({})", parts.join(joiner));
        Ok(Some(if negate {
            format!("(NOT {joined})")
        } else {
            joined
        }))
    }

    /// Checks every rule of `group` against the catalog without keeping
    /// the SQL: what a stored filter is checked with before it is saved.
    pub fn check(&mut self, group: &QueryGroup, path: &str) -> Result<(), SearchError> {
        self.group(group, path).map(|_| ())
    }

    /// The rule's field, known to the catalog and taking its operator;
    /// `None` when the rule is skipped (an unknown operator or field,
    /// unless strict).
    fn known_field(&mut self, rule: &QueryRule, at: &str) -> Result<Option<Field>, SearchError> {
        let unknown = rule.unknown_operator.as_ref().map(|operator| {
            (
                format!("{at}.operator"),
                format!(
                    "`{operator}` is not an operator; the operators are {}",
                    Operator::ALL.map(Operator::name).join(", ")
                ),
            )
        });
        let field = self.catalog.field(&rule.field);
        let unknown = unknown.or_else(|| {
            field.is_none().then(|| {
                (
                    format!("{at}.field"),
                    format!(
                        "`{}` is not a field of this search; the fields are {}",
                        rule.field,
                        self.catalog.names().join(", ")
                    ),
                )
            })
        });
        if let Some((path, message)) = unknown {
            if self.strict {
                return Err(SearchError::Rule { path, message });
            }
            self.skipped.push(SkippedRule {
                path: at.to_string(),
                reason: message,
            });
            return Ok(None);
        }
        let Some(field) = field else {
            return Ok(None);
        };
        // A known operator its field's type has no meaning for is the
        // client's mistake, not an unknown word: refused either way.
        let (positive, _) = rule.operator.positive();
        if !applies(positive, field.ty) {
            return Err(SearchError::Rule {
                path: format!("{at}.operator"),
                message: format!(
                    "`{}` does not apply to `{}`, a {} field",
                    rule.operator.name(),
                    rule.field,
                    field.ty.name()
                ),
            });
        }
        Ok(Some(field))
    }

    /// Appends the bound values, in placeholder order.
    pub fn bind_into(&self, args: &mut AnyArguments<'_>) {
        for param in &self.params {
            // Adding an owned String, f64 or i64 to AnyArguments cannot fail.
            let _ = match param {
                Param::Text(t) => args.add(t.clone()),
                Param::Number(n) => args.add(*n),
                Param::Int(i) => args.add(*i),
            };
        }
    }

    /// The bound values as one string, each tagged with its type and
    /// text lengthed, so two different lists of values never spell the
    /// same: with the SQL, what identifies a search's answer.
    pub fn values_key(&self) -> String {
        let mut key = String::new();
        for param in &self.params {
            match param {
                Param::Text(t) => key.push_str(&format!("t{}:{t}", t.len())),
                Param::Number(n) => key.push_str(&format!("n{:x};", n.to_bits())),
                Param::Int(i) => key.push_str(&format!("i{i};")),
            }
        }
        key
    }

    /// The next free placeholder number.
    pub fn next_placeholder(&self) -> usize {
        self.first + self.params.len()
    }

    /// `ORDER BY` for `sort` (a field, optionally with a leading `-`), with
    /// `tiebreak` last so pages never overlap. Missing values sort last in
    /// both directions, on both backends.
    pub fn order_by(&self, sort: &str, tiebreak: &str) -> Result<String, SearchError> {
        let (name, descending) = match sort.strip_prefix('-') {
            Some(name) => (name, true),
            None => (sort, false),
        };
        let field = self
            .catalog
            .sort_field(name)
            .filter(|f| {
                !matches!(
                    f.column,
                    Column::DocumentList(_)
                        | Column::VersionList { .. }
                        | Column::Installed { .. }
                        | Column::Term(..)
                )
            })
            .ok_or_else(|| SearchError::Sort(name.to_string()))?;
        let expr = self.value_expr(&field);
        let direction = if descending { "DESC" } else { "ASC" };
        Ok(match field.column {
            Column::Required(_) => format!("{expr} {direction}, {tiebreak} ASC"),
            _ => format!("({expr}) IS NULL, {expr} {direction}, {tiebreak} ASC"),
        })
    }

    fn push(&mut self, param: Param) -> String {
        self.params.push(param);
        format!("${}", self.first + self.params.len() - 1)
    }

    fn rule(&mut self, rule: &QueryRule, field: &Field, at: &str) -> Result<String, SearchError> {
        let (positive, negated) = rule.operator.positive();
        let condition = match &field.column {
            Column::DocumentList(key) => {
                let inner = self.predicate("j.value", FieldType::Text, positive, rule, at)?;
                format!(
                    "EXISTS (SELECT 1 FROM {} WHERE {inner})",
                    self.list_source(key)
                )
            }
            Column::VersionList { text, key } => {
                let (list, ty) = match comparison(positive) {
                    true => (key, FieldType::Version),
                    false => (text, FieldType::Text),
                };
                let element = self.binary("j.value");
                let inner = self.predicate(&element, ty, positive, rule, at)?;
                format!(
                    "EXISTS (SELECT 1 FROM {} WHERE {inner})",
                    self.list_source(list)
                )
            }
            Column::Installed { key, .. } => {
                let positive_rule = QueryRule {
                    operator: positive,
                    ..rule.clone()
                };
                self.installed(key, &[(at.to_string(), &positive_rule, field.clone())])?
            }
            Column::Term(terms, key) => {
                self.term_lookup(terms, key, field.ty, positive, rule, at)?
            }
            _ => {
                let expr = self.value_expr(field);
                self.predicate(&expr, field.ty, positive, rule, at)?
            }
        };
        Ok(if negated {
            format!("(NOT {condition})")
        } else {
            condition
        })
    }

    /// One element of the document's list `key` (installed applications)
    /// matching every one of `rules` (positive operators only).
    fn installed(&mut self, key: &str, rules: &[PartRule<'_>]) -> Result<String, SearchError> {
        let mut conditions = vec![];
        for (at, rule, field) in rules {
            let Column::Installed { part, .. } = field.column else {
                continue;
            };
            let (expr, ty) = match (part, comparison(rule.operator)) {
                (Part::Name, _) => (self.element_part("j.value", 0), FieldType::Text),
                (Part::Version, false) => (self.element_part("j.value", 1), FieldType::Text),
                (Part::Version, true) => (
                    self.binary(&self.element_part("j.value", 2)),
                    FieldType::Version,
                ),
            };
            conditions.push(self.predicate(&expr, ty, rule.operator, rule, at)?);
        }
        Ok(format!(
            "EXISTS (SELECT 1 FROM {} WHERE {})",
            self.list_source(key),
            conditions.join(" AND ")
        ))
    }

    /// The positive predicate of `operator` on `expr`, true only where the
    /// value is present and matches.
    fn predicate(
        &mut self,
        expr: &str,
        ty: FieldType,
        operator: Operator,
        rule: &QueryRule,
        at: &str,
    ) -> Result<String, SearchError> {
        use Operator::*;
        if operator == IsNotEmpty {
            return Ok(match ty {
                FieldType::Text | FieldType::Version => {
                    format!("({expr} IS NOT NULL AND {expr} <> '')")
                }
                _ => format!("({expr} IS NOT NULL)"),
            });
        }
        let raw = super::coerce::raw_value(rule, at)?;
        if operator == In {
            let items = super::coerce::list(&raw);
            if items.len() > MAX_IN_VALUES {
                return Err(SearchError::Rule {
                    path: format!("{at}.value"),
                    message: format!(
                        "`{}` takes at most {MAX_IN_VALUES} values",
                        rule.operator.name()
                    ),
                });
            }
            let mut placeholders = vec![];
            for item in items {
                let param = self.param(ty, &item, rule, at)?;
                placeholders.push(param);
            }
            if placeholders.is_empty() {
                return Ok("(1 = 0)".into());
            }
            return Ok(format!(
                "({expr} IS NOT NULL AND {expr} IN ({}))",
                placeholders.join(", ")
            ));
        }
        if operator == Between {
            let bounds = super::coerce::list(&raw);
            let [low, high] = bounds.as_slice() else {
                return Err(SearchError::Rule {
                    path: format!("{at}.value"),
                    message: "`between` takes two values, low and high: [\"1.0\", \"2.0\"] or \"1.0,2.0\"".into(),
                });
            };
            let low = self.param(ty, low, rule, at)?;
            let high = self.param(ty, high, rule, at)?;
            return Ok(format!(
                "({expr} IS NOT NULL AND {expr} >= {low} AND {expr} <= {high})"
            ));
        }
        if ty != FieldType::Text {
            let param = self.param(ty, &raw, rule, at)?;
            let op = match operator {
                Equals => "=",
                Gt => ">",
                Gte => ">=",
                Lt => "<",
                Lte => "<=",
                _ => unreachable!("applies() admits only these for non-text fields"),
            };
            return Ok(format!("({expr} IS NOT NULL AND {expr} {op} {param})"));
        }
        let raw = fold(&raw);
        let pattern = match operator {
            Equals => {
                let param = self.push(Param::Text(raw));
                return Ok(format!("({expr} IS NOT NULL AND {expr} = {param})"));
            }
            Contains => format!("%{}%", escape_like(&raw)),
            StartsWith => format!("{}%", escape_like(&raw)),
            EndsWith => format!("%{}", escape_like(&raw)),
            _ => unreachable!("applies() admits only these for text fields"),
        };
        let param = self.push(Param::Text(pattern));
        Ok(format!(
            "({expr} IS NOT NULL AND {expr} LIKE {param} ESCAPE '\\')"
        ))
    }

    fn param(
        &mut self,
        ty: FieldType,
        raw: &str,
        rule: &QueryRule,
        at: &str,
    ) -> Result<String, SearchError> {
        let param = match ty {
            FieldType::Text => Param::Text(fold(raw)),
            FieldType::Version => Param::Text(crate::version::release_key(raw.trim())),
            FieldType::Number => Param::Number(super::coerce::number(raw, rule, at)?),
            FieldType::Boolean => Param::Int(super::coerce::boolean(raw, rule, at)? as i64),
            FieldType::Date => Param::Int(super::coerce::date_ms(raw, rule, at)?),
        };
        Ok(self.push(param))
    }

    /// `expr` compared byte by byte, as release keys need: PostgreSQL
    /// otherwise compares text in the database's collation.
    fn binary(&self, expr: &str) -> String {
        match self.backend {
            Backend::Sqlite => expr.to_string(),
            Backend::Postgres => format!("({expr} COLLATE \"C\")"),
        }
    }

    /// Element `index` of a JSON array held in `element` (a row of
    /// [`Self::list_source`]), as text.
    fn element_part(&self, element: &str, index: usize) -> String {
        match self.backend {
            Backend::Sqlite => format!("json_extract({element}, '$[{index}]')"),
            Backend::Postgres => format!("(CAST({element} AS jsonb) ->> {index})"),
        }
    }

    /// Whether the row has a value of `key` in its terms table matching
    /// `operator`: the keys of the matching index range, as a set.
    fn term_lookup(
        &mut self,
        terms: &Terms,
        key: &str,
        ty: FieldType,
        operator: Operator,
        rule: &QueryRule,
        at: &str,
    ) -> Result<String, SearchError> {
        // Text values have no number and numbers no text: naming the other
        // column's NULL keeps a number rule on the index's range.
        let (value, other) = match ty {
            FieldType::Text => ("t.text_value", "t.number_value"),
            _ => ("t.number_value", "t.text_value"),
        };
        let mut inner = self.predicate(value, ty, operator, rule, at)?;
        if ty == FieldType::Text && operator == Operator::StartsWith {
            inner.push_str(&self.prefix_range(value, rule, at)?);
        }
        Ok(format!(
            "{} IN (SELECT t.{} FROM {} t WHERE t.tenant_id = {TENANT_PLACEHOLDER} \
             AND t.field = '{key}' AND {other} IS NULL AND {inner})",
            terms.row_key, terms.key_column, terms.table
        ))
    }

    /// ` AND expr >= prefix AND expr < successor`: the byte range of
    /// the values starting with the rule's folded prefix, beside its `LIKE`
    /// so the index narrows to that range (SQLite applies no `LIKE`
    /// optimization to a case-sensitive column). Only for terms, whose text
    /// compares byte by byte on both engines (`COLLATE "C"` on PostgreSQL).
    fn prefix_range(
        &mut self,
        expr: &str,
        rule: &QueryRule,
        at: &str,
    ) -> Result<String, SearchError> {
        let prefix = fold(&super::coerce::raw_value(rule, at)?);
        if prefix.is_empty() {
            return Ok(String::new());
        }
        let upper = prefix_successor(&prefix);
        let lower = self.push(Param::Text(prefix));
        Ok(match upper {
            Some(upper) => {
                let upper = self.push(Param::Text(upper));
                format!(" AND {expr} >= {lower} AND {expr} < {upper}")
            }
            None => format!(" AND {expr} >= {lower}"),
        })
    }

    /// The SQL expression of a scalar field.
    fn value_expr(&self, field: &Field) -> String {
        match &field.column {
            Column::Plain(expr) | Column::Required(expr) => expr.to_string(),
            Column::Document(key)
            | Column::DocumentList(key)
            | Column::VersionList { text: key, .. }
            | Column::Installed { key, .. }
            | Column::Term(_, key) => self.json_key(self.document, key, field.ty),
        }
    }

    fn json_key(&self, column: &str, key: &str, ty: FieldType) -> String {
        match self.backend {
            Backend::Sqlite => {
                let path = format!("'$.\"{key}\"'");
                match ty {
                    FieldType::Text | FieldType::Version => format!(
                        "(CASE WHEN json_type({column}, {path}) = 'text' THEN json_extract({column}, {path}) END)"
                    ),
                    FieldType::Number | FieldType::Date => format!(
                        "(CASE WHEN json_type({column}, {path}) IN ('integer', 'real') THEN json_extract({column}, {path}) END)"
                    ),
                    FieldType::Boolean => format!(
                        "(CASE json_type({column}, {path}) WHEN 'true' THEN 1 WHEN 'false' THEN 0 END)"
                    ),
                }
            }
            Backend::Postgres => {
                let node = format!("(CAST({column} AS jsonb) -> '{key}')");
                let text = format!("(CAST({column} AS jsonb) ->> '{key}')");
                match ty {
                    FieldType::Text | FieldType::Version => {
                        format!("(CASE WHEN jsonb_typeof({node}) = 'string' THEN {text} END)")
                    }
                    FieldType::Number | FieldType::Date => format!(
                        "(CASE WHEN jsonb_typeof({node}) = 'number' THEN CAST({text} AS DOUBLE PRECISION) END)"
                    ),
                    FieldType::Boolean => format!(
                        "(CASE WHEN jsonb_typeof({node}) = 'boolean' THEN (CASE WHEN {text} = 'true' THEN 1 ELSE 0 END) END)"
                    ),
                }
            }
        }
    }

    /// A row source of the elements of a list in the search document, as
    /// `j.value`; none when the key is absent.
    fn list_source(&self, key: &str) -> String {
        let document = self.document;
        match self.backend {
            Backend::Sqlite => format!("json_each({document}, '$.\"{key}\"') AS j"),
            Backend::Postgres => format!(
                "jsonb_array_elements_text(CAST({document} AS jsonb) -> '{key}') AS j(value)"
            ),
        }
    }
}

/// Whether an operator (in its positive form) means anything for a type;
/// a rule where it does not is refused.
fn applies(operator: Operator, ty: FieldType) -> bool {
    use Operator::*;
    match operator {
        IsNotEmpty | Equals | In => true,
        Contains | StartsWith | EndsWith => matches!(ty, FieldType::Text | FieldType::Version),
        Gt | Gte | Lt | Lte | Between => {
            matches!(ty, FieldType::Number | FieldType::Date | FieldType::Version)
        }
        _ => false,
    }
}

/// Whether an operator compares by order (on a version field, by release
/// key rather than by text).
fn comparison(operator: Operator) -> bool {
    use Operator::*;
    matches!(operator, Gt | Gte | Lt | Lte | Between)
}

/// The least string above every string starting with `prefix` in byte
/// (UTF-8, so code point) order: the prefix with its last character that
/// can be raised raised by one; `None` when none can.
fn prefix_successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let raised = match last {
            '\u{D7FF}' => Some('\u{E000}'),
            other => char::from_u32(u32::from(other) + 1),
        };
        if let Some(raised) = raised {
            chars.push(raised);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Makes user text literal inside a LIKE pattern (escape character `\`).
pub fn escape_like(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '%' | '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_range_holds_exactly_the_strings_starting_with_it() {
        assert_eq!(prefix_successor("pc-0999").as_deref(), Some("pc-099:"));
        assert_eq!(prefix_successor("é").as_deref(), Some("ê"));
        assert_eq!(prefix_successor("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_successor("\u{D7FF}").as_deref(), Some("\u{E000}"));
        assert_eq!(prefix_successor("\u{10FFFF}"), None);
        let samples = [
            "müller",
            "müllerß",
            "müller\u{10FFFF}",
            "müllex",
            "mülles",
            "müll",
            "mümmel",
        ];
        let upper = prefix_successor("müller").unwrap();
        for sample in samples {
            let in_range = sample >= "müller" && sample < upper.as_str();
            assert_eq!(in_range, sample.starts_with("müller"), "{sample}");
        }
    }

    #[test]
    fn like_metacharacters_are_escaped() {
        assert_eq!(escape_like(r"50%_a\b"), r"50\%\_a\\b");
    }
}
