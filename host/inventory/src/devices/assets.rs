//! The asset view as clients read it: an asset row of the rollup with the
//! user its directory knows.

use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::assets::AssetRow;
use cairn_core::db::to_rfc3339;

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
    /// The operating system in one line (`Windows 11 Pro 23H2 22631.2861`,
    /// `Ubuntu 22.04.3 LTS`): a distribution's advisories apply by the
    /// release read from it.
    pub os_version: Option<String>,
    /// The OS's name and edition (`Windows 11 Pro`), where a source gives
    /// it apart from the version.
    pub os_name: Option<String>,
    /// The OS's build (`22631.2861`), where a source gives it apart.
    pub os_build: Option<String>,
    pub user_email: Option<String>,
    pub user_name: Option<String>,
    pub application_count: i64,
    /// How much the device matters: `critical`, `high`, `standard` or
    /// `low`, set by hand or by a tier rule (`/api/v1/sla/tiers`).
    pub tier: crate::rollup::tiers::Tier,
    /// Reporting integrations; `scanner` when a scanner asset matched.
    pub sources: Vec<String>,
    /// The RMM groups (their ids at the RMM) the device's rows name; a
    /// device search field (`group_id`).
    pub group_ids: Vec<String>,
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
    /// The user as a directory area knows them, when one does.
    pub directory_user: Option<super::DirectoryUser>,
}

/// An area's detail the rollup wrote with the asset. As for the lists in
/// [`AssetView::from_row`], the view is built without a fallible step and
/// the rollup's tests read every value back; text that does not decode
/// shows as no detail.
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
            os_name: row.os_name,
            os_build: row.os_build,
            user_email: row.user_email,
            user_name: row.user_name,
            application_count: row.application_count,
            tier: crate::rollup::tiers::Tier::parse(&row.tier)
                .unwrap_or(crate::rollup::tiers::Tier::Standard),
            sources: serde_json::from_str(&row.sources).unwrap_or_default(),
            group_ids: serde_json::from_str(&row.group_ids).unwrap_or_default(),
            mdm: json(row.mdm.as_deref()),
            edr: json(row.edr.as_deref()),
            scan: json(row.scan.as_deref()),
            last_seen: to_rfc3339(row.last_seen),
            applications: with_applications
                .then(|| serde_json::from_str(&row.applications).unwrap_or_default()),
            directory_user: None,
        }
    }
}
