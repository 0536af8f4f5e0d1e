//! The generic software inventory: one row per application on a device, in
//! whatever spelling of the usual columns an operator's spreadsheet uses.
//! `POST /api/v1/inventory/upload` feeds this provider.

use cairn_sdk::{
    column_aliases, CsvDescriptor, CsvProvider, CsvRow, CsvTarget, InventoryItem, Row,
};

struct SoftwareInventory;

impl CsvProvider for SoftwareInventory {
    fn describe() -> CsvDescriptor {
        CsvDescriptor {
            key: "software-inventory".into(),
            name: "Software inventory".into(),
            category: "software".into(),
            target: CsvTarget::Software,
            sdk_version: String::new(),
            header_signals: vec!["device_name".into(), "application_name".into()],
            column_aliases: column_aliases(&[
                (
                    "device_name",
                    &[
                        "device",
                        "hostname",
                        "host",
                        "computer",
                        "computer name",
                        "machine",
                        "machine name",
                        "asset name",
                        "endpoint",
                    ],
                ),
                (
                    "device_id",
                    &["device id", "asset id", "computer id", "serial"],
                ),
                (
                    "user_email",
                    &["email", "e-mail", "user email", "mail", "upn"],
                ),
                (
                    "user_name",
                    &["user", "username", "logged on user", "last user", "owner"],
                ),
                (
                    "application_name",
                    &[
                        "application",
                        "app",
                        "app name",
                        "software",
                        "software name",
                        "program",
                        "program name",
                        "product",
                        "display name",
                        "title",
                    ],
                ),
                ("vendor", &["manufacturer", "maker"]),
                (
                    "version",
                    &[
                        "app version",
                        "application version",
                        "software version",
                        "display version",
                        "ver",
                    ],
                ),
                ("publisher", &["published by"]),
                ("os_platform", &["platform", "os platform", "os family"]),
                (
                    "os_name",
                    &["os", "operating system", "os name", "os edition", "edition"],
                ),
                (
                    "os_version",
                    &["os release", "operating system version", "release"],
                ),
                ("os_build", &["os build", "build", "os build number"]),
            ]),
        }
    }

    fn map_row(row: &CsvRow) -> Result<Vec<Row>, String> {
        let application = row
            .string("application_name")
            .ok_or("no application name (column application_name)")?;
        let device = row
            .string("device_name")
            .ok_or("no device name (column device_name)")?;
        let publisher = row.string("publisher");
        Ok(vec![Row::Inventory(InventoryItem {
            device_name: Some(device),
            device_id: row.string("device_id"),
            os_platform: row.string("os_platform").or_else(|| row.string("os_name")),
            os_version: os_version(row),
            os_name: row.string("os_name"),
            os_build: row.string("os_build"),
            user_email: row.string("user_email").map(|e| e.to_lowercase()),
            user_name: row.string("user_name"),
            application_name: Some(application),
            // Spreadsheets often carry only one of the two.
            vendor: row.string("vendor").or_else(|| publisher.clone()),
            version: row.string("version"),
            publisher,
            ..InventoryItem::default()
        })])
    }
}

/// The OS version the device keeps: the OS name when a platform column
/// says less (`Windows` beside `Windows 11 Pro`), the version and the
/// build, each once (`Windows 11 Pro 23H2 22631.2861`). The host moves a
/// platform that names more than the platform (`Ubuntu`) into it too.
fn os_version(row: &CsvRow) -> Option<String> {
    let platform = row.string("os_platform");
    let name = row.string("os_name").filter(|_| platform.is_some());
    let mut text = String::new();
    for part in [name, row.string("os_version"), row.string("os_build")]
        .into_iter()
        .flatten()
    {
        if !text.to_lowercase().contains(&part.to_lowercase()) {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&part);
        }
    }
    (!text.is_empty()).then_some(text)
}

cairn_sdk::export_csv_provider!(SoftwareInventory);

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_row_becomes_one_inventory_item() {
        let headers = cells(&["device_name", "application_name", "publisher", "version"]);
        let row = cells(&["PC-1", "7-Zip", "Igor Pavlov", "23.01"]);
        let rows = SoftwareInventory::map_row(&CsvRow::new(&headers, &row)).unwrap();
        let Row::Inventory(item) = &rows[0] else {
            panic!("not inventory")
        };
        assert_eq!(item.vendor.as_deref(), Some("Igor Pavlov"));
        assert_eq!(item.version.as_deref(), Some("23.01"));
    }

    #[test]
    fn the_os_columns_each_reach_the_device() {
        let headers = cells(&[
            "device_name",
            "application_name",
            "os_platform",
            "os_name",
            "os_version",
            "os_build",
        ]);
        for (platform, name, version, build, expected) in [
            ("Ubuntu", "", "22.04", "", (Some("Ubuntu"), Some("22.04"))),
            ("", "Ubuntu", "22.04", "", (Some("Ubuntu"), Some("22.04"))),
            (
                "",
                "Windows 11 Pro 23H2",
                "",
                "",
                (Some("Windows 11 Pro 23H2"), None),
            ),
            (
                "Windows",
                "Windows 11 Pro",
                "23H2",
                "22631.2861",
                (Some("Windows"), Some("Windows 11 Pro 23H2 22631.2861")),
            ),
            (
                "Windows",
                "",
                "10.0.22631",
                "10.0.22631",
                (Some("Windows"), Some("10.0.22631")),
            ),
            ("", "", "", "", (None, None)),
        ] {
            let row = cells(&["PC-1", "7-Zip", platform, name, version, build]);
            let rows = SoftwareInventory::map_row(&CsvRow::new(&headers, &row)).unwrap();
            let Row::Inventory(item) = &rows[0] else {
                panic!("not inventory")
            };
            assert_eq!(
                (item.os_platform.as_deref(), item.os_version.as_deref()),
                expected,
                "{row:?}"
            );
        }
    }

    #[test]
    fn a_row_without_application_is_rejected_with_the_column() {
        let headers = cells(&["device_name", "application_name"]);
        let err =
            SoftwareInventory::map_row(&CsvRow::new(&headers, &cells(&["PC-1", " "]))).unwrap_err();
        assert!(err.contains("application_name"));
    }
}

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
