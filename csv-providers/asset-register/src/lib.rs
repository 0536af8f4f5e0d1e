//! An asset register: the spreadsheet an MSP keeps of each customer's
//! hardware (site, owner, serial, asset tag, warranty). Its rows enrich the
//! devices the integrations report, matched on the exact hostname or its
//! 15-character NetBIOS form.

use cairn_sdk::{column_aliases, CsvDescriptor, CsvProvider, CsvRow, CsvTarget, Row, SourceRecord};

struct AssetRegister;

impl CsvProvider for AssetRegister {
    fn describe() -> CsvDescriptor {
        CsvDescriptor {
            key: "asset-register".into(),
            name: "Asset register".into(),
            category: "assets".into(),
            target: CsvTarget::Device,
            sdk_version: String::new(),
            header_signals: vec!["device_name".into(), "serial_number".into()],
            column_aliases: column_aliases(&[
                (
                    "device_name",
                    &[
                        "hostname",
                        "host name",
                        "computer name",
                        "device",
                        "asset name",
                        "machine name",
                    ],
                ),
                (
                    "serial_number",
                    &["serial", "serial no", "s/n", "service tag"],
                ),
                (
                    "asset_tag",
                    &["tag", "asset no", "asset number", "asset id"],
                ),
                ("site", &["location", "office", "branch"]),
                (
                    "owner",
                    &["assigned to", "custodian", "user", "primary user"],
                ),
                ("manufacturer", &["make", "vendor"]),
                ("model", &["model name"]),
                ("purchase_date", &["purchased", "bought"]),
                (
                    "warranty_end",
                    &["warranty expiry", "warranty expires", "warranty"],
                ),
                ("notes", &["comments", "remarks"]),
            ]),
        }
    }

    fn map_row(row: &CsvRow) -> Result<Vec<Row>, String> {
        let device = row
            .string("device_name")
            .ok_or("no hostname (column device_name)")?;
        Ok(vec![Row::Record(SourceRecord {
            collection: "device".into(),
            fields: cairn_sdk::Value::Null,
            key: device.to_lowercase(),
            device_name: Some(device),
            client_id: None,
            group_ids: vec![],
            body: row.to_json(),
        })])
    }
}

cairn_sdk::export_csv_provider!(AssetRegister);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
