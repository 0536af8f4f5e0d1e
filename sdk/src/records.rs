//! The shared record types: the normalized shape of a device, a threat, an
//! installed app, a finding, a directory user, a group and a ticket,
//! whichever product a connector speaks to.
//!
//! Two connectors of one area (SentinelOne and Defender for `edr`) fill the
//! same fields, so the host's views, joins and the asset search read one
//! shape. Declare a collection from a type with [`Collection::of`] (all of
//! its fields), and fill a record's `fields` with
//! [`RecordType::to_fields`]: fields left `None` are omitted.
//!
//! ```
//! use cairn_sdk::records::{Threat, RecordType};
//! let declared = cairn_sdk::Collection::of::<Threat>("threats");
//! assert_eq!(declared.record_type, "threat");
//! ```

use serde::Serialize;

use crate::{Collection, Field, FieldType};

/// A normalized record type: its name and declared fields.
pub trait RecordType: Serialize {
    /// The record type's name, e.g. `threat`.
    const NAME: &'static str;
    /// Every field of the type, for a collection's declaration.
    fn fields() -> Vec<Field>;

    /// The record as a [`crate::SourceRecord::fields`] object (unset fields
    /// left out).
    fn to_fields(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

impl Collection {
    /// A collection of `T` records named `name`, declaring all of `T`'s
    /// fields; `search` starts empty (device name and key).
    pub fn of<T: RecordType>(name: &str) -> Collection {
        Collection {
            name: name.into(),
            record_type: T::NAME.into(),
            fields: T::fields(),
            search: vec![],
        }
    }

    /// The same collection, searching `fields` in its list view.
    pub fn searching(mut self, fields: &[&str]) -> Collection {
        self.search = fields.iter().map(|f| f.to_string()).collect();
        self
    }
}

macro_rules! record_type {
    (
        $(#[$doc:meta])*
        $name:ident = $label:literal {
            $( $(#[$field_doc:meta])* $field:ident : $rust:ty => $kind:ident, $text:literal ),* $(,)?
        }
    ) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize)]
        pub struct $name {
            $(
                $(#[$field_doc])*
                #[serde(skip_serializing_if = "Option::is_none")]
                pub $field: Option<$rust>,
            )*
        }

        impl RecordType for $name {
            const NAME: &'static str = $label;
            fn fields() -> Vec<Field> {
                vec![$(Field {
                    name: stringify!($field).into(),
                    field_type: FieldType::$kind,
                    description: $text.into(),
                }),*]
            }
        }
    };
}

record_type! {
    /// A device as an area sees it. Common fields first, then those of one
    /// area (leave the others `None`).
    Device = "device" {
        name: String => String, "Device (computer) name",
        device_id: String => String, "The upstream's device id",
        serial_number: String => String, "Hardware serial number",
        os_platform: String => String, "windows, macos, linux, ios, android or other",
        os_version: String => String, "Operating system version",
        user: String => String, "The primary user (UPN or e-mail)",
        last_seen: String => DateTime, "When the upstream last heard from the device",
        agent_id: String => String, "edr: the agent's id",
        agent_version: String => String, "edr: the agent's version",
        infected: bool => Boolean, "edr: whether the agent reports an active infection",
        active_threats: i64 => Integer, "edr: active threats on the device",
        managed_device_id: String => String, "mdm: the managed device's id",
        compliance_state: String => String, "mdm: compliant, noncompliant, unknown, ...",
        ownership: String => String, "mdm: company or personal",
        hostname: String => String, "scanner: host name or FQDN",
        ip_addresses: Vec<String> => StringList, "scanner: IP addresses",
        risk_score: f64 => Number, "scanner: the product's risk score on a 0-10 scale",
        critical_count: i64 => Integer, "scanner: open critical findings",
        high_count: i64 => Integer, "scanner: open high findings",
        medium_count: i64 => Integer, "scanner: open medium findings",
        low_count: i64 => Integer, "scanner: open low findings",
        tags: Vec<String> => StringList, "Tags or labels",
        client_id: String => String, "The upstream client (company) of the device",
    }
}

record_type! {
    /// A threat an endpoint product detected.
    Threat = "threat" {
        threat_id: String => String, "The upstream's threat id",
        device_key: String => String, "The key of the device record it was found on",
        device_name: String => String, "The device's name",
        name: String => String, "Threat (file or detection) name",
        classification: String => String, "Malware, PUA, Ransomware, ...",
        confidence: String => String, "malicious, suspicious, ...",
        status: String => String, "active, mitigated, resolved or benign (the same words for every product)",
        status_raw: String => String, "The product's own status word, as it gave it",
        detected_at: String => DateTime, "When it was detected",
        file_hash: String => String, "SHA-256 (or SHA-1) of the file",
        file_path: String => String, "Path of the file",
    }
}

record_type! {
    /// An application installed on a device.
    App = "app" {
        device_key: String => String, "The key of the device record",
        device_name: String => String, "The device's name",
        name: String => String, "Application name",
        vendor: String => String, "Vendor or publisher",
        version: String => String, "Installed version",
    }
}

record_type! {
    /// A vulnerability finding of a scanner on an asset.
    Finding = "finding" {
        asset_key: String => String, "The key of the asset (device) record",
        device_name: String => String, "The asset's host name",
        cve_ids: Vec<String> => StringList, "CVE ids the finding names",
        plugin_id: String => String, "The scanner's check id (plugin, QID)",
        title: String => String, "The check's title",
        severity: String => String, "critical, high, medium, low or info",
        state: String => String, "open, reopened, fixed",
        port: i64 => Integer, "Port, when the finding is on one",
        first_found: String => DateTime, "When it was first found",
        last_found: String => DateTime, "When it was last found",
    }
}

record_type! {
    /// A directory user.
    User = "user" {
        upn: String => String, "User principal name",
        mail: String => String, "Primary e-mail address",
        aliases: Vec<String> => StringList, "Other addresses, lower case",
        display_name: String => String, "Display name",
        enabled: bool => Boolean, "Whether the account is enabled",
        groups: Vec<String> => StringList, "Ids of the groups the user is in",
    }
}

record_type! {
    /// A directory group.
    Group = "group" {
        group_id: String => String, "The upstream's group id",
        name: String => String, "Group name",
        members: Vec<String> => StringList, "Keys of the member users",
    }
}

record_type! {
    /// A ticket of a service desk.
    Ticket = "ticket" {
        ticket_id: String => String, "The upstream's ticket id",
        summary: String => String, "Summary line",
        status: String => String, "Status name",
        board: String => String, "Board or queue",
        company: String => String, "Company the ticket is for",
        priority: String => String, "Priority name",
        updated_at: String => DateTime, "When it last changed",
        created_at: String => DateTime, "When it was entered",
        closed: bool => Boolean, "Whether it is closed",
        owner: String => String, "The member it is assigned to",
    }
}

record_type! {
    /// A note (a comment or time note) on a ticket.
    TicketNote = "ticket_note" {
        ticket_id: String => String, "The ticket's id (the ticket record's key)",
        note_id: String => String, "The upstream's note id",
        text: String => String, "The note",
        author: String => String, "Who wrote it",
        created_at: String => DateTime, "When it was written",
        internal: bool => Boolean, "An internal note, not shown to the customer",
        resolution: bool => Boolean, "Part of the ticket's resolution",
    }
}

/// The computer name of a host name, as endpoint tools and inventory rows
/// name a machine: the first label of an FQDN (`web01` of
/// `web01.corp.example`); `None` for an IP address, which names no
/// computer.
///
/// ```
/// use cairn_sdk::records::computer_name_of;
/// assert_eq!(computer_name_of("web01.corp.example").as_deref(), Some("web01"));
/// assert_eq!(computer_name_of("10.0.0.5"), None);
/// ```
pub fn computer_name_of(hostname: &str) -> Option<String> {
    if hostname.parse::<std::net::IpAddr>().is_ok() {
        return None;
    }
    hostname
        .split('.')
        .next()
        .filter(|name| !name.is_empty())
        .map(String::from)
}

/// The platform of an operating system's name, as [`Device::os_platform`]
/// takes it: `windows`, `macos`, `ios`, `android` or `linux` (Linux
/// distributions by name too); `None` when the name says none of these.
pub fn platform_of(os_name: &str) -> Option<&'static str> {
    let os = os_name.to_lowercase();
    let linux = [
        "linux", "ubuntu", "debian", "centos", "red hat", "rhel", "suse", "fedora",
    ];
    Some(if os.contains("windows") {
        "windows"
    } else if os.contains("mac") || os.contains("darwin") {
        "macos"
    } else if os.contains("ios") || os.contains("ipados") {
        "ios"
    } else if os.contains("android") {
        "android"
    } else if linux.iter().any(|l| os.contains(l)) {
        "linux"
    } else {
        return None;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platforms_from_operating_system_names() {
        assert_eq!(platform_of("Microsoft Windows 11 Pro x64"), Some("windows"));
        assert_eq!(platform_of("Apple Mac OS X 10.5.8"), Some("macos"));
        assert_eq!(platform_of("iPadOS 17"), Some("ios"));
        assert_eq!(platform_of("Ubuntu 22.04 LTS"), Some("linux"));
        assert_eq!(platform_of("FreeBSD"), None);
    }

    #[test]
    fn unset_fields_are_left_out_and_declared_fields_cover_the_set_ones() {
        let threat = Threat {
            name: Some("eicar.com".into()),
            status: Some("active".into()),
            ..Threat::default()
        };
        let value = serde_json::to_value(&threat).unwrap();
        assert_eq!(
            value,
            serde_json::json!({"name": "eicar.com", "status": "active"})
        );
        let declared: Vec<String> = Threat::fields().into_iter().map(|f| f.name).collect();
        for key in value.as_object().unwrap().keys() {
            assert!(declared.contains(key), "{key} is not declared");
        }
        assert_eq!(Collection::of::<Threat>("threats").record_type, "threat");
    }
}
