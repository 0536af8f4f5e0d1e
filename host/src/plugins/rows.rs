//! Rows a connector maps records to, in the host's own types (converted from
//! the WIT types at this edge).

use serde_json::Value;

use super::runtime::connector_world::cairn::plugin::types as wit;

#[derive(Debug, Clone, PartialEq)]
pub struct InventoryRow {
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
    pub client_id: Option<String>,
    pub group_ids: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RecordRow {
    /// device, user, threat, finding or ticket.
    pub kind: &'static str,
    pub key: String,
    pub device_name: Option<String>,
    pub client_id: Option<String>,
    pub group_ids: Vec<String>,
    pub body: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum MappedRow {
    Inventory(InventoryRow),
    Record(RecordRow),
}

impl From<wit::Row> for MappedRow {
    fn from(row: wit::Row) -> Self {
        match row {
            wit::Row::Inventory(i) => MappedRow::Inventory(InventoryRow {
                device_name: i.device_name,
                device_id: i.device_id,
                os_platform: i.os_platform,
                os_version: i.os_version,
                user_email: i.user_email,
                user_name: i.user_name,
                application_name: i.application_name,
                vendor: i.vendor,
                version: i.version,
                publisher: i.publisher,
                client_id: i.client_id,
                group_ids: i.group_ids,
            }),
            wit::Row::Record(r) => MappedRow::Record(RecordRow {
                kind: match r.kind {
                    wit::RecordKind::Device => "device",
                    wit::RecordKind::User => "user",
                    wit::RecordKind::Threat => "threat",
                    wit::RecordKind::Finding => "finding",
                    wit::RecordKind::Ticket => "ticket",
                },
                key: r.key,
                device_name: r.device_name,
                client_id: r.client_id,
                group_ids: r.group_ids,
                body: serde_json::from_str(&r.body).unwrap_or(Value::String(r.body)),
            }),
        }
    }
}
