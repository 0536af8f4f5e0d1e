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

/// What kind of source record a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    Device,
    User,
    Threat,
    Finding,
    Ticket,
}

/// A device, user, threat, finding or ticket: the key fields the host
/// indexes, and the whole record as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRecord {
    pub kind: RecordKind,
    /// Stable upstream id.
    pub key: String,
    pub device_name: Option<String>,
    pub client_id: Option<String>,
    pub group_ids: Vec<String>,
    pub body: Value,
}

/// A mapped row.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    Inventory(InventoryItem),
    Record(SourceRecord),
}
