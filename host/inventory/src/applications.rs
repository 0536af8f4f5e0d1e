//! The software rollup as clients read it: the search allow-list, the row
//! and its JSON view.

use serde::Serialize;
use utoipa::ToSchema;

use super::rollup::build::Application;
use super::rollup::VersionCount;
use super::search::{
    kept_pages, Catalog, Column, Compiler, Field, FieldType, KeptOrder, KeptPages, SearchDocument,
    Table,
};
use cairn_core::db::{to_rfc3339, Backend};

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

/// What an application is searched by (see [`SearchDocument`]).
pub fn search_document(app: &Application) -> String {
    let mut doc = SearchDocument::default();
    doc.text("name", Some(&app.name))
        .text("vendor", app.vendor.as_deref())
        .text("publisher", app.publisher.as_deref())
        .list(
            "version",
            app.version_counts.iter().map(|v| v.version.as_str()),
        )
        .keys(
            "version_key",
            app.version_counts
                .iter()
                .map(|v| crate::version::release_key(&v.version)),
        )
        .list("platform", app.platforms.iter().map(String::as_str));
    doc.to_json()
}

pub const COLUMNS: &str = "a.id, a.name, a.vendor, a.device_count, a.most_common_version, \
    a.newest_version, a.oldest_version, a.version_counts, a.platforms, a.sources, a.publisher, \
    a.product, a.site, a.size_bytes, a.category, a.install_status, a.rollup_at";

/// First pages of the default order, kept between rollups.
static PAGES: KeptPages = kept_pages(crate::rollup::store::ROLLUP_TOPIC);

pub fn table() -> Table<'static> {
    Table {
        from: "applications a",
        columns: COLUMNS,
        document: "a.search_doc",
        tenant_column: "a.tenant_id",
        catalog: &ApplicationFields,
        text_fields: &["name", "vendor", "publisher"],
        default_sort: DEFAULT_SORT,
        tiebreak: TIEBREAK,
        kept_total: Some("SELECT applications_count FROM rollup_state WHERE tenant_id = $1"),
        kept_order: Some(KeptOrder {
            sort: DEFAULT_SORT,
            place: "a.place",
            current: "EXISTS (SELECT 1 FROM rollup_state s \
                      WHERE s.tenant_id = $1 AND s.places_at = s.rollup_at)",
            pages: &PAGES,
        }),
        kept_matches: None,
    }
}

/// The list's default order: most installed first.
const DEFAULT_SORT: &str = "-device_count";
const TIEBREAK: &str = "a.name";

/// `ORDER BY` of the default order over `applications a`, as a search
/// sorts: what the rollup numbers each application's `place` by.
pub fn default_order(backend: Backend) -> String {
    Compiler::new(backend, &ApplicationFields, "a.search_doc", 1)
        .order_by(DEFAULT_SORT, TIEBREAK)
        .expect("the default sort is a sortable field")
}

/// Read by name from [`COLUMNS`], or from a packed page's array of them
/// (see `search::run`), so its fields follow `COLUMNS`' order.
#[derive(Debug, sqlx::FromRow, serde::Deserialize)]
pub struct ApplicationRow {
    id: String,
    name: String,
    vendor: Option<String>,
    device_count: i64,
    most_common_version: Option<String>,
    newest_version: Option<String>,
    oldest_version: Option<String>,
    version_counts: String,
    platforms: String,
    sources: String,
    publisher: Option<String>,
    product: Option<String>,
    site: Option<String>,
    size_bytes: Option<f64>,
    category: Option<String>,
    install_status: Option<String>,
    rollup_at: i64,
}

/// One application of the software rollup.
#[derive(Debug, Serialize, ToSchema)]
pub struct ApplicationView {
    pub id: String,
    /// Normalized name (installer-id suffixes removed).
    pub name: String,
    /// The vendor on the most devices.
    pub vendor: Option<String>,
    /// Distinct device names across all versions.
    pub device_count: i64,
    pub most_common_version: Option<String>,
    pub newest_version: Option<String>,
    pub oldest_version: Option<String>,
    /// Devices per version, most devices first.
    pub version_counts: Vec<VersionCount>,
    /// Deduplicated case-insensitively, in Title case (`Windows`, `macOS`,
    /// `Linux`); the `platform` search field matches any case.
    pub platforms: Vec<String>,
    /// Reporting integrations and CSV providers, sorted.
    pub sources: Vec<String>,
    pub publisher: Option<String>,
    /// Filled only when a source reports it.
    pub product: Option<String>,
    pub site: Option<String>,
    pub size_bytes: Option<f64>,
    pub category: Option<String>,
    pub install_status: Option<String>,
    /// Distinct CVEs with an open finding on this application (any
    /// version, any device of the tenant).
    pub cve_count: i64,
    /// When the rebuild that produced this row ran.
    pub rollup_at: String,
}

fn parse<T: serde::de::DeserializeOwned + Default>(raw: &str) -> T {
    serde_json::from_str(raw).unwrap_or_default()
}

impl ApplicationRow {
    /// The rolled-up name, as CVE counts are keyed.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The row as clients read it, with its distinct open CVEs counted by
    /// the caller (see `storage::cves_by_rolled_up_name`).
    pub fn into_view(self, cve_count: i64) -> ApplicationView {
        ApplicationView {
            id: self.id,
            name: self.name,
            vendor: self.vendor,
            device_count: self.device_count,
            most_common_version: self.most_common_version,
            newest_version: self.newest_version,
            oldest_version: self.oldest_version,
            version_counts: parse(&self.version_counts),
            platforms: parse::<Vec<String>>(&self.platforms)
                .iter()
                .map(|label| crate::normalize::platform_display(label))
                .collect(),
            sources: parse(&self.sources),
            publisher: self.publisher,
            product: self.product,
            site: self.site,
            size_bytes: self.size_bytes,
            category: self.category,
            install_status: self.install_status,
            cve_count,
            rollup_at: to_rfc3339(self.rollup_at),
        }
    }
}
