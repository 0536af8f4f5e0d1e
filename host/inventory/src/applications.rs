//! The software rollup as clients read it: the search allow-list, the row
//! and its JSON view.

use serde::Serialize;
use utoipa::ToSchema;

pub use super::application_fields::{default_order, ApplicationFields, FIELDS};
use super::application_fields::{DEFAULT_SORT, TIEBREAK};
use super::rollup::VersionCount;
use super::search::{kept_pages, KeptOrder, KeptPages, Table};
use cairn_core::db::to_rfc3339;

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

/// Read by name from [`COLUMNS`], or from a packed page's array of them
/// (see `search::run`), so its fields follow `COLUMNS`' order.
#[derive(Debug, sqlx_macros::FromRow, serde::Deserialize)]
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

/// A list the rollup wrote with the row. The view is built without a
/// fallible step (pages are also served from memory), so text that does
/// not decode shows empty; the rollup's own tests read every list back.
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
