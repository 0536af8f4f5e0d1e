//! The NetBIOS assets as the rollup stores them and the search reads them.

use serde_json::Value;

use crate::rollup::build::Asset;
use crate::search::{
    kept_rows, Catalog, Column, Field, FieldType, KeptMatches, KeptRows, Part, SearchDocument,
    Table, Term, Terms,
};

use FieldType::{Boolean, Number, Text};

// The `mdm.`, `edr.` and `scan.` fields are the scalar fields of the shared
// device record type (the SDK's `records::Device`) that each area fills:
// the common ones, then the area's own. Every connector of an area maps its
// product's devices to that one shape, so a search reads the same whichever
// product a tenant uses.

/// Searchable fields of an mdm area's device record.
const MDM_FIELDS: &[(&str, FieldType)] = &[
    ("mdm.name", Text),
    ("mdm.device_id", Text),
    ("mdm.serial_number", Text),
    ("mdm.os_platform", Text),
    ("mdm.os_version", Text),
    ("mdm.user", Text),
    ("mdm.managed_device_id", Text),
    ("mdm.compliance_state", Text),
    ("mdm.ownership", Text),
    ("mdm.tags", Text),
];

/// Searchable fields of an edr area's device (agent) record.
const EDR_FIELDS: &[(&str, FieldType)] = &[
    ("edr.name", Text),
    ("edr.device_id", Text),
    ("edr.os_platform", Text),
    ("edr.os_version", Text),
    ("edr.user", Text),
    ("edr.agent_id", Text),
    ("edr.agent_version", Text),
    ("edr.infected", Boolean),
    ("edr.active_threats", Number),
    ("edr.tags", Text),
];

/// Searchable fields of a scanner area's asset record.
const SCAN_FIELDS: &[(&str, FieldType)] = &[
    ("scan.name", Text),
    ("scan.device_id", Text),
    ("scan.hostname", Text),
    ("scan.os_platform", Text),
    ("scan.os_version", Text),
    ("scan.risk_score", Number),
    ("scan.critical_count", Number),
    ("scan.high_count", Number),
    ("scan.medium_count", Number),
    ("scan.low_count", Number),
    ("scan.tags", Text),
];

/// The devices allow-list: bare fields describe the asset's inventory rows
/// (`device_name` matches any name the asset was seen under,
/// `application_name` any application on it, `source` any reporting
/// integration, `group_id` any RMM group its rows name); `mdm.`, `edr.`
/// and `scan.` fields read the attached records (`tags` any of the
/// record's tags).
pub struct AssetFields;

impl AssetFields {
    /// Every field name, for the OpenAPI description and tests.
    pub fn names() -> Vec<String> {
        let bare = [
            "device_name",
            "device_id",
            "os_platform",
            "os_version",
            "os_name",
            "os_build",
            "user_email",
            "user_name",
            "application_name",
            "application_version",
            "application_count",
            "source",
            "last_seen",
            "tier",
            "group_id",
        ];
        let mut names: Vec<String> = bare.iter().map(|s| s.to_string()).collect();
        for fields in [MDM_FIELDS, EDR_FIELDS, SCAN_FIELDS] {
            names.extend(fields.iter().map(|(name, _)| name.to_string()));
        }
        names
    }
}

/// The scalar text fields of the asset row.
const ROW_TEXT_FIELDS: &[&str] = &[
    "device_id",
    "os_platform",
    "os_version",
    "os_name",
    "os_build",
    "user_email",
    "user_name",
];

type DetailFields = &'static [(&'static str, FieldType)];

/// Every field but `application_count` and `last_seen` (columns of the
/// asset) and `application_name` is looked up in `asset_terms` (migrations
/// 0028 and 0029), which the rollup fills from the asset's
/// [`SearchDocument`]. Terms point at the asset's integer id: a lookup's
/// set of integers is cheaper to build and probe than one of text keys.
const ASSET_TERMS: Terms = Terms {
    table: "asset_terms",
    key_column: "asset_id",
    row_key: "a.id",
};

impl Catalog for AssetFields {
    fn field(&self, name: &str) -> Option<Field> {
        if name.contains('.') {
            let &(key, ty) = [MDM_FIELDS, EDR_FIELDS, SCAN_FIELDS]
                .iter()
                .flat_map(|fields| fields.iter())
                .find(|(k, _)| *k == name)?;
            return Some(Field {
                column: Column::Term(ASSET_TERMS, key),
                ty,
            });
        }
        let (column, ty) = match name {
            "device_name" => (Column::Term(ASSET_TERMS, "device_name"), Text),
            // An asset holds hundreds of applications: a term each would
            // multiply the rollup's writes, so this list stays in the
            // document, read per asset. In an `and` group, name and
            // version rules describe one application together.
            "application_name" => (
                Column::Installed {
                    key: "installed",
                    part: Part::Name,
                },
                Text,
            ),
            "application_version" => (
                Column::Installed {
                    key: "installed",
                    part: Part::Version,
                },
                FieldType::Version,
            ),
            "source" => (Column::Term(ASSET_TERMS, "source"), Text),
            "group_id" => (Column::Term(ASSET_TERMS, "group_id"), Text),
            "application_count" => (Column::Required("a.application_count"), Number),
            "last_seen" => (Column::Required("a.last_seen"), FieldType::Date),
            // Written lower case by `tiers`, so already folded.
            "tier" => (Column::Required("a.tier"), Text),
            _ => {
                let key = ROW_TEXT_FIELDS.iter().find(|k| **k == name)?;
                (Column::Term(ASSET_TERMS, key), Text)
            }
        };
        Some(Field { column, ty })
    }

    fn names(&self) -> Vec<String> {
        AssetFields::names()
    }

    fn sort_field(&self, name: &str) -> Option<Field> {
        match name {
            // Sorting uses the display name, folded, in a column of its own
            // that an index keeps in order.
            "device_name" => Some(Field {
                column: Column::Required("a.sort_key"),
                ty: Text,
            }),
            // A list has no one value to sort by.
            "application_name" | "application_version" | "source" | "group_id" => None,
            _ if name.ends_with(".tags") => None,
            // The other term fields sort by the document's copy.
            _ => self.field(name).map(|field| match field.column {
                Column::Term(_, key) => Field {
                    column: Column::Document(key),
                    ty: field.ty,
                },
                _ => field,
            }),
        }
    }
}

/// What an asset is searched by, built once per rebuilt asset: its
/// document and the rows of `asset_terms` taken from it.
#[derive(Debug)]
pub struct AssetSearch {
    pub document: String,
    /// Only the fields the catalog looks up in terms ([`Column::Term`]).
    pub terms: Vec<Term>,
}

/// What an asset is searched by (see [`SearchDocument`]): its names,
/// applications and sources as folded lists, its row's text fields, and
/// the allow-listed keys of its mdm, edr and scanner records under their
/// prefixed names, each with its JSON type.
pub fn search(asset: &Asset) -> AssetSearch {
    let document = searchable(asset);
    AssetSearch {
        terms: document.terms(|field| {
            matches!(
                AssetFields.field(field),
                Some(Field {
                    column: Column::Term(..),
                    ..
                })
            )
        }),
        document: document.to_json(),
    }
}

fn searchable(asset: &Asset) -> SearchDocument {
    let mut doc = SearchDocument::default();
    doc.list("device_name", asset.names.iter().map(String::as_str))
        .installed(
            "installed",
            asset
                .installed
                .iter()
                .map(|(name, version)| (&**name, version.as_deref())),
        )
        .list("source", asset.sources.iter().map(String::as_str))
        .text("device_id", asset.device_id.as_deref())
        .text("os_platform", asset.os_platform.as_deref())
        .text("os_version", asset.os_version.as_deref())
        .text("os_name", asset.os_name.as_deref())
        .text("os_build", asset.os_build.as_deref())
        .text("user_email", asset.user_email.as_deref())
        .text("user_name", asset.user_name.as_deref());
    if !asset.group_ids.is_empty() {
        doc.list("group_id", asset.group_ids.iter().map(String::as_str));
    }
    let details: [(DetailFields, Option<&Value>); 3] = [
        (MDM_FIELDS, asset.mdm.as_ref()),
        (EDR_FIELDS, asset.edr.as_ref()),
        (SCAN_FIELDS, asset.scan.as_ref()),
    ];
    for (fields, record) in details {
        let Some(record) = record else { continue };
        for &(name, ty) in fields {
            let key = name.split_once('.').map_or(name, |(_, key)| key);
            let Some(value) = record.get(key) else {
                continue;
            };
            // A list of text (`tags`) is searched by each element.
            if let (Text, Value::Array(items)) = (ty, value) {
                doc.list(name, items.iter().filter_map(Value::as_str));
                continue;
            }
            let typed = match ty {
                Text | FieldType::Version => value.is_string(),
                Number | FieldType::Date => value.is_number(),
                Boolean => value.is_boolean(),
            };
            if typed {
                doc.typed(name, value);
            }
        }
    }
    doc
}

/// Every column of an asset, in [`AssetRow`]'s order. The applications
/// come last so that pages can leave them out ([`PAGE_COLUMNS`]).
pub const COLUMNS: &str = "a.asset_key, a.device_name, a.names, a.device_id, a.os_platform, \
    a.os_version, a.user_email, a.user_name, a.application_count, a.sources, a.mdm, a.edr, a.scan, \
    a.last_seen, a.os_name, a.os_build, a.tier, a.group_ids, a.applications";

/// [`COLUMNS`] as pages of assets read them: without the applications,
/// which a page does not show (a device with hundreds of applications
/// holds kilobytes of them).
const PAGE_COLUMNS: &str = "a.asset_key, a.device_name, a.names, a.device_id, a.os_platform, \
    a.os_version, a.user_email, a.user_name, a.application_count, a.sources, a.mdm, a.edr, a.scan, \
    a.last_seen, a.os_name, a.os_build, a.tier, a.group_ids";

/// Pages of asset searches: every write of assets is a rollup write.
static PAGES: KeptRows = kept_rows(crate::changes::ROLLUP_TOPIC);

pub fn table() -> Table<'static> {
    Table {
        from: "assets a",
        columns: PAGE_COLUMNS,
        document: "a.search_doc",
        tenant_column: "a.tenant_id",
        catalog: &AssetFields,
        text_fields: &["device_name", "user_email", "user_name"],
        default_sort: "device_name",
        tiebreak: "a.asset_key",
        kept_total: Some("SELECT assets_count FROM rollup_state WHERE tenant_id = $1"),
        kept_order: None,
        kept_matches: Some(KeptMatches {
            id: "a.id",
            writes: "SELECT writes FROM rollup_state WHERE tenant_id = $1",
            pages: &PAGES,
        }),
    }
}

/// One row of the rollup's `assets` table, read by [`COLUMNS`] (by name,
/// or from a packed page's array of them, so its fields follow `COLUMNS`).
#[derive(Debug, sqlx_macros::FromRow, serde::Deserialize)]
pub struct AssetRow {
    pub asset_key: String,
    pub device_name: String,
    pub names: String,
    pub device_id: Option<String>,
    pub os_platform: Option<String>,
    pub os_version: Option<String>,
    pub user_email: Option<String>,
    pub user_name: Option<String>,
    pub application_count: i64,
    pub sources: String,
    pub mdm: Option<String>,
    pub edr: Option<String>,
    pub scan: Option<String>,
    pub last_seen: i64,
    pub os_name: Option<String>,
    pub os_build: Option<String>,
    /// `critical`, `high`, `standard` or `low` (see [`crate::rollup::tiers`]).
    pub tier: String,
    /// A JSON array of the RMM group ids its rows name.
    pub group_ids: String,
    /// A JSON array of the applications; empty when read by
    /// [`PAGE_COLUMNS`], which leave it out.
    #[sqlx(default)]
    #[serde(default)]
    pub applications: String,
}
