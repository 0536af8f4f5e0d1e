//! A badge (door access) system's user roster. Its rows enrich directory
//! users matched by email; `badge_admin` marks people who administer the
//! badge system, a privilege worth seeing beside their accounts.

use cairn_sdk::{
    column_aliases, json, CsvDescriptor, CsvProvider, CsvRow, CsvTarget, Row, SourceRecord,
};

struct BadgeRoster;

impl CsvProvider for BadgeRoster {
    fn describe() -> CsvDescriptor {
        CsvDescriptor {
            key: "badge-roster".into(),
            name: "Badge system roster".into(),
            category: "identity".into(),
            target: CsvTarget::User,
            sdk_version: String::new(),
            header_signals: vec!["email".into(), "badge_id".into()],
            column_aliases: column_aliases(&[
                (
                    "email",
                    &[
                        "e-mail",
                        "email address",
                        "mail",
                        "upn",
                        "user principal name",
                    ],
                ),
                (
                    "name",
                    &[
                        "full name",
                        "display name",
                        "employee",
                        "employee name",
                        "cardholder",
                    ],
                ),
                (
                    "badge_id",
                    &[
                        "badge",
                        "badge number",
                        "badge no",
                        "card number",
                        "card id",
                    ],
                ),
                (
                    "badge_admin",
                    &[
                        "admin",
                        "is admin",
                        "administrator",
                        "badge administrator",
                        "admin rights",
                    ],
                ),
                ("department", &["dept", "team"]),
                ("active", &["enabled", "is active"]),
            ]),
        }
    }

    fn map_row(row: &CsvRow) -> Result<Vec<Row>, String> {
        let email = row
            .get("email")
            .ok_or("no email (column email)")?
            .to_lowercase();
        if !email.contains('@') {
            return Err(format!("{email:?} is not an email address (column email)"));
        }
        let admin = match row.get("badge_admin") {
            None => false,
            Some(raw) => row
                .flag("badge_admin")
                .ok_or_else(|| format!("badge_admin is {raw:?}; use yes or no"))?,
        };
        Ok(vec![Row::Record(SourceRecord {
            collection: "user".into(),
            fields: cairn_sdk::Value::Null,
            key: email.clone(),
            device_name: None,
            client_id: None,
            group_ids: vec![],
            body: json!({
                "email": email,
                "name": row.get("name"),
                "badge_id": row.get("badge_id"),
                "department": row.get("department"),
                "active": row.flag("active").unwrap_or(true),
                "flags": { "badge_admin": admin },
            }),
        })])
    }
}

cairn_sdk::export_csv_provider!(BadgeRoster);

#[cfg(all(not(target_feature = "atomics"), target_arch = "wasm32"))]
#[global_allocator]
static ALLOCATOR: cairn_sdk::SizeClassAllocator = cairn_sdk::SizeClassAllocator::new();
