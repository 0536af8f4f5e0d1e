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
                (
                    "os_platform",
                    &["platform", "os", "operating system", "os name"],
                ),
                ("os_version", &["os build", "build"]),
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
            os_platform: row.string("os_platform"),
            os_version: row.string("os_version"),
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
    fn a_row_without_application_is_rejected_with_the_column() {
        let headers = cells(&["device_name", "application_name"]);
        let err =
            SoftwareInventory::map_row(&CsvRow::new(&headers, &cells(&["PC-1", " "]))).unwrap_err();
        assert!(err.contains("application_name"));
    }
}
