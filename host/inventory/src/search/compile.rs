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
        }
    }

    /// The group's condition; `None` when it adds nothing (empty, or every
    /// rule skipped).
    pub fn group(&mut self, group: &QueryGroup) -> Result<Option<String>, SearchError> {
        let mut parts = vec![];
        for node in &group.rules {
            let part = match node {
                QueryNode::Group(inner) => self.group(inner)?,
                QueryNode::Rule(rule) => self.rule(rule)?,
            };
            parts.extend(part);
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
            .filter(|f| !matches!(f.column, Column::DocumentList(_) | Column::Term(..)))
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

    fn rule(&mut self, rule: &QueryRule) -> Result<Option<String>, SearchError> {
        let Some(field) = self.catalog.field(&rule.field) else {
            return Ok(None);
        };
        let Some(operator) = Operator::parse(&rule.operator) else {
            return Ok(None);
        };
        let (positive, negated) = operator.positive();
        if !applies(positive, field.ty) {
            return Ok(None);
        }
        let condition = match &field.column {
            Column::DocumentList(key) => {
                let element = "j.value".to_string();
                let inner = self.predicate(&element, FieldType::Text, positive, rule)?;
                let exists = format!(
                    "EXISTS (SELECT 1 FROM {} WHERE {inner})",
                    self.list_source(key)
                );
                if negated {
                    format!("(NOT {exists})")
                } else {
                    exists
                }
            }
            Column::Term(terms, key) => {
                let lookup = self.term_lookup(terms, key, field.ty, positive, rule)?;
                if negated {
                    format!("(NOT {lookup})")
                } else {
                    lookup
                }
            }
            _ => {
                let expr = self.value_expr(&field);
                let inner = self.predicate(&expr, field.ty, positive, rule)?;
                if negated {
                    format!("(NOT {inner})")
                } else {
                    inner
                }
            }
        };
        Ok(Some(condition))
    }

    /// The positive predicate of `operator` on `expr`, true only where the
    /// value is present and matches.
    fn predicate(
        &mut self,
        expr: &str,
        ty: FieldType,
        operator: Operator,
        rule: &QueryRule,
    ) -> Result<String, SearchError> {
        use Operator::*;
        if operator == IsNotEmpty {
            return Ok(match ty {
                FieldType::Text => format!("({expr} IS NOT NULL AND {expr} <> '')"),
                _ => format!("({expr} IS NOT NULL)"),
            });
        }
        let raw = super::coerce::raw_value(rule)?;
        if operator == In {
            let items = super::coerce::list(&raw);
            if items.len() > MAX_IN_VALUES {
                return Err(SearchError::Value {
                    field: rule.field.clone(),
                    message: format!("`{}` takes at most {MAX_IN_VALUES} values", rule.operator),
                });
            }
            let mut placeholders = vec![];
            for item in items {
                let param = self.param(ty, &item, rule)?;
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
        if ty != FieldType::Text {
            let param = self.param(ty, &raw, rule)?;
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

    fn param(&mut self, ty: FieldType, raw: &str, rule: &QueryRule) -> Result<String, SearchError> {
        let param = match ty {
            FieldType::Text => Param::Text(fold(raw)),
            FieldType::Number => Param::Number(super::coerce::number(raw, rule)?),
            FieldType::Boolean => Param::Int(super::coerce::boolean(raw, rule)? as i64),
            FieldType::Date => Param::Int(super::coerce::date_ms(raw, rule)?),
        };
        Ok(self.push(param))
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
    ) -> Result<String, SearchError> {
        // Text values have no number and numbers no text: naming the other
        // column's NULL keeps a number rule on the index's range.
        let (value, other) = match ty {
            FieldType::Text => ("t.text_value", "t.number_value"),
            _ => ("t.number_value", "t.text_value"),
        };
        let mut inner = self.predicate(value, ty, operator, rule)?;
        if ty == FieldType::Text && operator == Operator::StartsWith {
            inner.push_str(&self.prefix_range(value, rule)?);
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
    fn prefix_range(&mut self, expr: &str, rule: &QueryRule) -> Result<String, SearchError> {
        let prefix = fold(&super::coerce::raw_value(rule)?);
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
            Column::Document(key) | Column::DocumentList(key) | Column::Term(_, key) => {
                self.json_key(self.document, key, field.ty)
            }
        }
    }

    fn json_key(&self, column: &str, key: &str, ty: FieldType) -> String {
        match self.backend {
            Backend::Sqlite => {
                let path = format!("'$.\"{key}\"'");
                match ty {
                    FieldType::Text => format!(
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
                    FieldType::Text => {
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
/// a rule where it does not is dropped like an unknown operator.
fn applies(operator: Operator, ty: FieldType) -> bool {
    use Operator::*;
    match operator {
        IsNotEmpty | Equals | In => true,
        Contains | StartsWith | EndsWith => ty == FieldType::Text,
        Gt | Gte | Lt | Lte => matches!(ty, FieldType::Number | FieldType::Date),
        _ => false,
    }
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
