//! Microsoft Intune's discovered-apps raw export: the `AppInvRawData`
//! report (Reports > Export, or Graph `deviceManagement/reports/exportJobs`),
//! one row per application per managed device, with Intune's own column
//! names (`ApplicationName`, `ApplicationShortVersion`, `DeviceName`, ...).

use cairn_sdk::{
    column_aliases, CsvDescriptor, CsvProvider, CsvRow, CsvTarget, InventoryItem, Row,
};

struct IntuneDiscoveredApps;

impl CsvProvider for IntuneDiscoveredApps {
    fn describe() -> CsvDescriptor {
        CsvDescriptor {
            key: "intune-discovered-apps".into(),
            name: "Intune discovered apps (AppInvRawData export)".into(),
            category: "software".into(),
            target: CsvTarget::Software,
            sdk_version: String::new(),
            header_signals: vec!["ApplicationName".into(), "DeviceName".into()],
            // Canonical names are Intune's own; matching ignores case and
            // punctuation, so `Application Name` in a re-saved sheet works too.
            column_aliases: column_aliases(&[
                ("ApplicationKey", &[]),
                ("ApplicationName", &["App Name"]),
                ("ApplicationPublisher", &["Publisher"]),
                ("ApplicationShortVersion", &["Short Version"]),
                ("ApplicationVersion", &["Version"]),
                ("DeviceId", &["Device ID"]),
                ("DeviceName", &["Device"]),
                ("OSDescription", &["OS"]),
                ("OSVersion", &["OS Version"]),
                ("Platform", &[]),
                ("UserId", &[]),
                ("EmailAddress", &["Email", "UPN", "User Principal Name"]),
                ("UserName", &["User"]),
            ]),
        }
    }

    fn map_row(row: &CsvRow) -> Result<Vec<Row>, String> {
        let application = row
            .string("ApplicationName")
            .ok_or("no application name (column ApplicationName)")?;
        let device = row
            .string("DeviceName")
            .ok_or("no device name (column DeviceName)")?;
        let publisher = row.string("ApplicationPublisher");
        Ok(vec![Row::Inventory(InventoryItem {
            device_name: Some(device),
            device_id: row.string("DeviceId"),
            os_platform: row
                .string("Platform")
                .or_else(|| row.string("OSDescription")),
            os_version: row.string("OSVersion"),
            os_name: row.string("OSDescription"),
            user_email: row.string("EmailAddress").map(|e| e.to_lowercase()),
            user_name: row.string("UserName"),
            application_name: Some(application),
            vendor: publisher.clone(),
            // The short version is what the app shows; the long one carries
            // build suffixes that split one release into many.
            version: row
                .string("ApplicationShortVersion")
                .or_else(|| row.string("ApplicationVersion")),
            publisher,
            ..InventoryItem::default()
        })])
    }
}

cairn_sdk::export_csv_provider!(IntuneDiscoveredApps);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
