//! What a searchable row is searched by: its text fields case-folded in
//! Rust, its numbers and booleans as they are, in one small JSON object the
//! rollup writes beside the row.
//!
//! SQL's `LOWER` only lower-cases, one character at a time (on SQLite too,
//! through `db::sqlite_lower`), so `STRASSE` would not find `Straße` nor a
//! final `ς` a `Σ`. Folding once here, on the stored values and on the
//! query alike, gives the full rule and one answer on both engines, over
//! keys that can be indexed.

use serde_json::{Map, Value};

/// The one case-folding rule of search: Unicode case folding (CaseFolding.txt,
/// full mappings), so `MÜLLER` finds `müller`, `STRASSE` finds `Straße`
/// and a final `ς` finds `Σ`.
pub fn fold(text: &str) -> String {
    unicase::UniCase::new(text).to_folded_case()
}

/// A row's search document, built field by field.
#[derive(Debug, Default)]
pub struct SearchDocument(Map<String, Value>);

impl SearchDocument {
    /// A text field, folded; absent when `None`.
    pub fn text(&mut self, key: &str, value: Option<&str>) -> &mut Self {
        if let Some(value) = value {
            self.0.insert(key.to_string(), Value::String(fold(value)));
        }
        self
    }

    /// A list of text values, each folded.
    pub fn list<'v>(&mut self, key: &str, values: impl IntoIterator<Item = &'v str>) -> &mut Self {
        let values = values.into_iter().map(|v| Value::String(fold(v))).collect();
        self.0.insert(key.to_string(), Value::Array(values));
        self
    }

    /// A list of keys kept as they are (not folded): release keys, which
    /// compare byte by byte.
    pub fn keys(&mut self, key: &str, values: impl IntoIterator<Item = String>) -> &mut Self {
        let values = values.into_iter().map(Value::String).collect();
        self.0.insert(key.to_string(), Value::Array(values));
        self
    }

    /// A list of installed applications, each `[name, version, release
    /// key]` (name and version folded; the version parts absent when
    /// unknown), for [`Column::Installed`](super::Column::Installed).
    pub fn installed<'v>(
        &mut self,
        key: &str,
        values: impl IntoIterator<Item = (&'v str, Option<&'v str>)>,
    ) -> &mut Self {
        let values = values
            .into_iter()
            .map(|(name, version)| {
                let mut element = vec![Value::String(fold(name))];
                if let Some(version) = version {
                    element.push(Value::String(fold(version)));
                    element.push(Value::String(crate::version::release_key(version)));
                }
                Value::Array(element)
            })
            .collect();
        self.0.insert(key.to_string(), Value::Array(values));
        self
    }

    /// A number or boolean, kept with its JSON type: a rule on a number field
    /// reads only numbers, one on a boolean field only booleans.
    pub fn typed(&mut self, key: &str, value: &Value) -> &mut Self {
        match value {
            Value::String(text) => {
                self.text(key, Some(text));
            }
            Value::Number(_) | Value::Bool(_) => {
                self.0.insert(key.to_string(), value.clone());
            }
            _ => {}
        }
        self
    }

    pub fn to_json(&self) -> String {
        Value::Object(self.0.clone()).to_string()
    }

    /// The fields `wanted` takes as the rows of a terms table (see
    /// [`Terms`](super::Terms)): one per value, one per element of a list,
    /// booleans as 0 and 1.
    pub fn terms(&self, wanted: impl Fn(&str) -> bool) -> Vec<Term> {
        let mut rows = Vec::with_capacity(self.0.len());
        for (key, value) in self.0.iter().filter(|(key, _)| wanted(key)) {
            let values = match value {
                Value::Array(items) => items.as_slice(),
                other => std::slice::from_ref(other),
            };
            for value in values {
                let value = match value {
                    Value::String(text) => TermValue::Text(text.clone()),
                    Value::Number(n) => TermValue::Number(n.as_f64().unwrap_or_default()),
                    Value::Bool(b) => TermValue::Number(f64::from(u8::from(*b))),
                    _ => continue,
                };
                rows.push(Term {
                    field: key.clone(),
                    value,
                });
            }
        }
        rows
    }
}

/// One searchable value of a row.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub field: String,
    pub value: TermValue,
}

#[derive(Debug, Clone, PartialEq)]
pub enum TermValue {
    /// Folded.
    Text(String),
    Number(f64),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_is_folded_beyond_ascii_and_types_are_kept() {
        let mut doc = SearchDocument::default();
        doc.text("name", Some("ÉCOLE Müller"))
            .list("names", ["ΣΊΣΥΦΟΣ", "WS-01", "Straße"])
            .typed("count", &json!(3))
            .typed("flag", &json!(true))
            .typed("label", &json!("Ärger"))
            .typed("nothing", &Value::Null)
            .text("absent", None);
        let doc: Value = serde_json::from_str(&doc.to_json()).unwrap();
        assert_eq!(
            doc,
            json!({"name": "école müller", "names": ["σίσυφοσ", "ws-01", "strasse"], "count": 3,
                   "flag": true, "label": "ärger"})
        );
    }

    #[test]
    fn terms_are_a_row_per_value_with_booleans_as_numbers() {
        let mut doc = SearchDocument::default();
        doc.list("names", ["WS-01", "Straße"])
            .typed("count", &json!(3.5))
            .typed("flag", &json!(true))
            .text("label", Some("Ärger"))
            .text("left_out", Some("x"));
        let mut terms: Vec<(String, String)> = doc
            .terms(|field| field != "left_out")
            .into_iter()
            .map(|t| (t.field, format!("{:?}", t.value)))
            .collect();
        terms.sort();
        let expected = [
            ("count", "Number(3.5)"),
            ("flag", "Number(1.0)"),
            ("label", "Text(\"ärger\")"),
            ("names", "Text(\"strasse\")"),
            ("names", "Text(\"ws-01\")"),
        ];
        assert_eq!(
            terms,
            expected
                .map(|(f, v)| (f.to_string(), v.to_string()))
                .to_vec()
        );
    }
}
