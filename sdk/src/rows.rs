use serde_json::Value;

/// One installed application on one device, as a source reports it.
///
/// Build it with `..InventoryItem::default()` after the fields you set:
/// fields are added in minor releases.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InventoryItem {
    pub device_name: Option<String>,
    pub device_id: Option<String>,
    pub os_platform: Option<String>,
    /// The operating system in one line, as the device view shows it:
    /// `Ubuntu 22.04.3 LTS`, `Windows 11 Pro 23H2 22631.2861`. A
    /// distribution's release is read from it.
    pub os_version: Option<String>,
    /// The operating system's name and edition as the source gives it
    /// apart from its version (`Windows 11 Pro`, `Ubuntu`), when it does.
    /// Since SDK 0.3.2; a connector that sets it needs a host of API 0.5.1
    /// or later.
    pub os_name: Option<String>,
    /// The operating system's build as the source gives it apart
    /// (`22631.2861`, `14393`), when it does. Since SDK 0.3.2, as
    /// `os_name`.
    pub os_build: Option<String>,
    pub user_email: Option<String>,
    pub user_name: Option<String>,
    pub application_name: Option<String>,
    pub vendor: Option<String>,
    pub version: Option<String>,
    pub publisher: Option<String>,
    /// rmm: the upstream client (company) the device belongs to.
    pub client_id: Option<String>,
    /// rmm: the upstream groups the device is in.
    pub group_ids: Vec<String>,
}

/// A record of one of the descriptor's [`Collection`](crate::Collection)s:
/// the key fields the host indexes, the collection's normalized fields, and
/// the whole upstream record.
///
/// Build `fields` from a typed record of [`crate::records`] where one fits
/// (`threat.to_fields()`), so every connector of an area speaks
/// the same shape; the host keeps only the fields the collection declares.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRecord {
    /// The collection's declared name, e.g. `threats`.
    pub collection: String,
    /// Stable upstream id, unique within the collection.
    pub key: String,
    /// The device the record is about, if any: joins it to the asset view
    /// and serves by-device-name views.
    pub device_name: Option<String>,
    pub client_id: Option<String>,
    pub group_ids: Vec<String>,
    /// The declared fields, as a JSON object.
    pub fields: Value,
    /// The upstream record, as served by detail views.
    pub body: Value,
}

/// A mapped row.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    Inventory(InventoryItem),
    Record(SourceRecord),
}
