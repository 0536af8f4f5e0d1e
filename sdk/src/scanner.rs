//! The scanner area as the service's routes give it, for every scanner
//! product alike: assets (devices), their findings and the software found
//! on them, in the collections [`ASSETS`], [`FINDINGS`] and [`APPS`], served
//! at `assets`, `findings/{asset_id}`, `device-by-name/{hostname}` and
//! `apps`. A scanner connector declares [`collections`] and [`views`] and
//! maps its records into those collections.

use crate::records::{computer_name_of, App, Device, Finding, RecordType};
use crate::{Collection, InventoryItem, Related, Row, SourceRecord, View};

/// Asset ([`Device`]) records, keyed by the scanner's asset id.
pub const ASSETS: &str = "assets";
/// [`Finding`] records, each naming its asset's key in `asset_key`.
pub const FINDINGS: &str = "findings";
/// [`App`] records: one per (asset, application, version) found installed.
pub const APPS: &str = "apps";

/// The three collections; the findings list searches `finding_search`
/// (the fields the product fills, e.g. `title` or `plugin_id`).
pub fn collections(finding_search: &[&str]) -> Vec<Collection> {
    vec![
        Collection::of::<Device>(ASSETS).searching(&["name", "hostname", "os_version"]),
        Collection::of::<Finding>(FINDINGS).searching(finding_search),
        Collection::of::<App>(APPS).searching(&["name", "device_name"]),
    ]
}

/// The area's views.
pub fn views() -> Vec<View> {
    let findings = || {
        vec![Related {
            name: "findings".into(),
            collection: FINDINGS.into(),
            field: "asset_key".into(),
        }]
    };
    vec![
        View::List {
            path: "assets".into(),
            collection: ASSETS.into(),
            summary: "Assets the scanner found".into(),
        },
        View::ByKey {
            path: "findings/{asset_id}".into(),
            collection: ASSETS.into(),
            summary: "One asset by id, with its findings".into(),
            related: findings(),
        },
        View::Aggregate {
            path: "apps".into(),
            collection: APPS.into(),
            summary: "Software the scanner found installed, by name, with device counts".into(),
            by: "name".into(),
        },
        View::ByDeviceName {
            path: "device-by-name/{hostname}".into(),
            collection: ASSETS.into(),
            summary: "The asset of one host name (full or short), with its findings".into(),
            related: findings(),
        },
    ]
}

/// A host a scanner knows, to which it attributes installed software.
#[derive(Debug, Clone, Copy)]
pub struct ScannedHost<'a> {
    /// The key of the host's asset record.
    pub key: &'a str,
    /// Its host name or FQDN, as the asset record names it.
    pub hostname: Option<&'a str>,
    pub os_platform: Option<&'a str>,
    pub os_version: Option<&'a str>,
}

impl ScannedHost<'_> {
    /// The rows of an application found installed on the host: an [`App`]
    /// record in [`APPS`], keyed `{key}/{name}/{version}`, and an inventory
    /// item named by the host's computer name ([`computer_name_of`]; none
    /// for an address), so the software joins the asset of the same
    /// computer.
    pub fn installed(
        &self,
        name: String,
        version: Option<String>,
        body: serde_json::Value,
    ) -> Vec<Row> {
        let owned = |v: Option<&str>| v.map(String::from);
        let mut rows = vec![Row::Record(SourceRecord {
            collection: APPS.into(),
            key: format!(
                "{}/{name}/{}",
                self.key,
                version.as_deref().unwrap_or_default()
            ),
            device_name: owned(self.hostname),
            client_id: None,
            group_ids: vec![],
            fields: App {
                device_key: Some(self.key.to_string()),
                device_name: owned(self.hostname),
                name: Some(name.clone()),
                vendor: None,
                version: version.clone(),
            }
            .to_fields(),
            body,
        })];
        if let Some(computer) = self.hostname.and_then(computer_name_of) {
            rows.push(Row::Inventory(InventoryItem {
                device_name: Some(computer),
                device_id: Some(self.key.to_string()),
                os_platform: owned(self.os_platform),
                os_version: owned(self.os_version),
                user_email: None,
                user_name: None,
                application_name: Some(name),
                vendor: None,
                version,
                ..InventoryItem::default()
            }));
        }
        rows
    }
}
