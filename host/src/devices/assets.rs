//! The NetBIOS asset view as clients read and search it.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::db::to_rfc3339;
use crate::inventory::search::{Catalog, Column, Field, FieldType, Table};

use FieldType::{Boolean, Number, Text};

/// Searchable keys of an mdm integration's device record.
const MDM_FIELDS: &[(&str, FieldType)] = &[
    ("compliance_state", Text),
    ("management_state", Text),
    ("owner_type", Text),
    ("serial_number", Text),
    ("model", Text),
    ("manufacturer", Text),
    ("os_version", Text),
    ("user_principal_name", Text),
    ("is_encrypted", Boolean),
    ("is_supervised", Boolean),
    ("free_storage_bytes", Number),
];

/// Searchable keys of an edr integration's device (agent) record.
const EDR_FIELDS: &[(&str, FieldType)] = &[
    ("agent_version", Text),
    ("computer_name", Text),
    ("os_name", Text),
    ("site_name", Text),
    ("domain", Text),
    ("network_status", Text),
    ("machine_type", Text),
    ("infected", Boolean),
    ("is_active", Boolean),
    ("is_decommissioned", Boolean),
    ("is_up_to_date", Boolean),
    ("threat_count", Number),
];

/// Searchable keys of a scanner integration's asset record.
const SCAN_FIELDS: &[(&str, FieldType)] = &[
    ("hostname", Text),
    ("fqdn", Text),
    ("ip_address", Text),
    ("os", Text),
    ("risk_score", Number),
    ("vulnerabilities_count", Number),
    ("critical_count", Number),
    ("high_count", Number),
];

/// The devices allow-list: bare fields describe the asset's inventory rows
/// (`device_name` matches any name the asset was seen under,
/// `application_name` any application on it, `source` any reporting
/// integration); `mdm.`, `edr.` and `scan.` fields read the attached
/// records.
pub struct AssetFields;

impl AssetFields {
    /// Every field name, for the OpenAPI description and tests.
    pub fn names() -> Vec<String> {
        let bare = [
            "device_name",
            "device_id",
            "os_platform",
            "os_version",
            "user_email",
            "user_name",
            "application_name",
            "application_count",
            "source",
            "last_seen",
        ];
        let mut names: Vec<String> = bare.iter().map(|s| s.to_string()).collect();
        for (prefix, fields) in [
            ("mdm", MDM_FIELDS),
            ("edr", EDR_FIELDS),
            ("scan", SCAN_FIELDS),
        ] {
            names.extend(fields.iter().map(|(k, _)| format!("{prefix}.{k}")));
        }
        names
    }
}

impl Catalog for AssetFields {
    fn field(&self, name: &str) -> Option<Field> {
        if let Some((prefix, key)) = name.split_once('.') {
            let (column, fields) = match prefix {
                "mdm" => ("a.mdm", MDM_FIELDS),
                "edr" => ("a.edr", EDR_FIELDS),
                "scan" => ("a.scan", SCAN_FIELDS),
                _ => return None,
            };
            let &(key, ty) = fields.iter().find(|(k, _)| *k == key)?;
            return Some(Field {
                column: Column::JsonKey { column, key },
                ty,
            });
        }
        let (column, ty) = match name {
            "device_name" => (Column::List("a.names"), Text),
            "device_id" => (Column::Plain("a.device_id"), Text),
            "os_platform" => (Column::Plain("a.os_platform"), Text),
            "os_version" => (Column::Plain("a.os_version"), Text),
            "user_email" => (Column::Plain("a.user_email"), Text),
            "user_name" => (Column::Plain("a.user_name"), Text),
            "application_name" => (Column::List("a.applications"), Text),
            "application_count" => (Column::Required("a.application_count"), Number),
            "source" => (Column::List("a.sources"), Text),
            "last_seen" => (Column::Required("a.last_seen"), FieldType::Date),
            _ => return None,
        };
        Some(Field { column, ty })
    }

    fn sort_field(&self, name: &str) -> Option<Field> {
        match name {
            // Sorting uses the display name.
            "device_name" => Some(Field {
                column: Column::Required("a.device_name"),
                ty: Text,
            }),
            _ => self.field(name),
        }
    }
}

pub const COLUMNS: &str = "a.asset_key, a.device_name, a.names, a.device_id, a.os_platform, \
    a.os_version, a.user_email, a.user_name, a.application_count, a.sources, a.mdm, a.edr, a.scan, \
    a.last_seen, a.applications";

pub fn table() -> Table<'static> {
    Table {
        from: "assets a",
        columns: COLUMNS,
        tenant_column: "a.tenant_id",
        catalog: &AssetFields,
        text_fields: &["device_name", "user_email", "user_name"],
        default_sort: "device_name",
        tiebreak: "a.asset_key",
    }
}

#[derive(Debug, sqlx::FromRow)]
pub struct AssetRow {
    asset_key: String,
    device_name: String,
    names: String,
    device_id: Option<String>,
    os_platform: Option<String>,
    os_version: Option<String>,
    user_email: Option<String>,
    user_name: Option<String>,
    application_count: i64,
    sources: String,
    mdm: Option<String>,
    edr: Option<String>,
    scan: Option<String>,
    last_seen: i64,
    applications: String,
}

/// One asset: every inventory row whose device name shares its NetBIOS key
/// (first 15 characters, uppercased), with the mdm, edr and scanner records
/// that matched one of its names.
#[derive(Debug, Serialize, ToSchema)]
pub struct AssetView {
    /// The NetBIOS key.
    pub key: String,
    /// The longest name observed.
    pub device_name: String,
    /// Every name observed.
    pub names: Vec<String>,
    /// The managed-device UUID when an mdm knows the device, else the
    /// newest id a source reported.
    pub device_id: Option<String>,
    pub os_platform: Option<String>,
    pub os_version: Option<String>,
    pub user_email: Option<String>,
    pub user_name: Option<String>,
    pub application_count: i64,
    /// Reporting integrations; `scanner` when a scanner asset matched.
    pub sources: Vec<String>,
    #[schema(value_type = Option<Object>)]
    pub mdm: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub edr: Option<Value>,
    #[schema(value_type = Option<Object>)]
    pub scan: Option<Value>,
    pub last_seen: String,
    /// Application names; only in single-asset responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub applications: Option<Vec<String>>,
}

fn json(raw: Option<&str>) -> Option<Value> {
    raw.and_then(|r| serde_json::from_str(r).ok())
}

impl AssetView {
    pub fn from_row(row: AssetRow, with_applications: bool) -> AssetView {
        AssetView {
            key: row.asset_key,
            device_name: row.device_name,
            names: serde_json::from_str(&row.names).unwrap_or_default(),
            device_id: row.device_id,
            os_platform: row.os_platform,
            os_version: row.os_version,
            user_email: row.user_email,
            user_name: row.user_name,
            application_count: row.application_count,
            sources: serde_json::from_str(&row.sources).unwrap_or_default(),
            mdm: json(row.mdm.as_deref()),
            edr: json(row.edr.as_deref()),
            scan: json(row.scan.as_deref()),
            last_seen: to_rfc3339(row.last_seen),
            applications: with_applications
                .then(|| serde_json::from_str(&row.applications).unwrap_or_default()),
        }
    }
}
