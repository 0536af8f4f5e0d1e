//! The applications allow-list: the fields a search of the software
//! rollup may name, and its default order. A leaf: the rollup numbers
//! each application's place in this order as it writes, and the
//! applications view searches by these fields.

use super::search::{Catalog, Column, Compiler, Field, FieldType};
use cairn_core::db::Backend;

/// The applications allow-list of the spec.
pub struct ApplicationFields;

impl Catalog for ApplicationFields {
    fn field(&self, name: &str) -> Option<Field> {
        use FieldType::*;
        let (column, ty) = match name {
            // Any version installed somewhere, not only the most common;
            // compared in version order by its release key.
            "version" => (
                Column::VersionList {
                    text: "version",
                    key: "version_key",
                },
                Version,
            ),
            "platform" => (Column::DocumentList("platform"), Text),
            "device_count" => (Column::Required("a.device_count"), Number),
            "size_bytes" => (Column::Plain("a.size_bytes"), Number),
            _ => {
                let key = TEXT_FIELDS.iter().find(|k| **k == name)?;
                (Column::Document(key), Text)
            }
        };
        Some(Field { column, ty })
    }

    fn names(&self) -> Vec<String> {
        FIELDS.iter().map(|f| f.to_string()).collect()
    }

    fn sort_field(&self, name: &str) -> Option<Field> {
        match name {
            // The folded name has a column of its own, indexed for the order.
            "name" => Some(Field {
                column: Column::Required("a.sort_key"),
                ty: FieldType::Text,
            }),
            _ => self.field(name),
        }
    }
}

/// Every field of the applications allow-list.
pub const FIELDS: &[&str] = &[
    "name",
    "vendor",
    "product",
    "version",
    "device_count",
    "site",
    "publisher",
    "platform",
    "size_bytes",
    "category",
    "install_status",
];

/// The scalar text fields, each under its own name in the search document.
const TEXT_FIELDS: &[&str] = &[
    "name",
    "vendor",
    "product",
    "site",
    "publisher",
    "category",
    "install_status",
];

/// The list's default order: most installed first.
pub(crate) const DEFAULT_SORT: &str = "-device_count";
pub(crate) const TIEBREAK: &str = "a.name";

/// `ORDER BY` of the default order over `applications a`, as a search
/// sorts: what the rollup numbers each application's `place` by.
pub fn default_order(backend: Backend) -> String {
    Compiler::new(backend, &ApplicationFields, "a.search_doc", 1)
        .order_by(DEFAULT_SORT, TIEBREAK)
        .expect("the default sort is a sortable field")
}
