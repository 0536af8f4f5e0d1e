use serde_json::Value;

/// One installed application on one device, as a source reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InventoryItem {
    pub device_name: Option<String>,
    pub device_id: Option<String>,
    pub os_platform: Option<String>,
    pub os_version: Option<String>,
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
