//! The host names no product and no upstream field: what an integration is
//! comes from its connector's descriptor. This reads every Rust file under
//! `host/` and fails on a product name (any case) or a field name one of
//! those products' APIs uses (exact case).
//!
//! The one exception is `host/plugins/src/v01.rs`, which holds the login
//! keys the frozen v0.1 contract fixed for token exchange (`UserName`,
//! `Password`, `AccessToken`, `ExpirationDate`) so v0.1 components keep
//! working; it may name those keys and nothing else on the lists.

use std::path::{Path, PathBuf};

/// Integration products (and their makers) Cairn speaks to or will.
const PRODUCTS: &[&str] = &[
    "sentinelone",
    "sentinel one",
    "sentinel-one",
    "intune",
    "entra",
    "azure ad",
    "microsoft graph",
    "graph.microsoft",
    "defender",
    "crowdstrike",
    "qualys",
    "tenable",
    "nessus",
    "nexpose",
    "rapid7",
    "connectwise",
    "automate",
    "labtech",
    "stripe",
    "kaseya",
    "ninjaone",
    "ninjarmm",
    "datto",
    "jamf",
    "okta",
];

/// Field, header and path names of those products' APIs.
const UPSTREAM_FIELDS: &[&str] = &[
    "complianceState",
    "managedDeviceOwnerType",
    "userPrincipalName",
    "agentVersion",
    "computerName",
    "networkStatus",
    "threatInfo",
    "mitigationStatus",
    "ComputerName",
    "OperatingSystemName",
    "LastUserName",
    "UserName",
    "AccessToken",
    "ExpirationDate",
    "@odata",
    "proxyAddresses",
    "nextCursor",
    "X-ApiKeys",
    "ApiToken ",
    "whsec_",
    "cwa/api",
    "v4_6_release",
    "web/api/v2",
    "deviceManagement",
];

/// The v0.1 contract's token-exchange keys, allowed in its adapter only.
const V01_ADAPTER: &str = "host/plugins/src/v01.rs";
const V01_KEYS: &[&str] = &["UserName", "AccessToken", "ExpirationDate"];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("readable directory")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn the_host_names_no_product_and_no_upstream_field() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = vec![];
    rust_files(&root.join("host"), &mut files);
    assert!(files.len() > 50, "found the host's sources");
    let mut found = vec![];
    for file in files {
        let relative = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in text.lines().enumerate() {
            let lowered = line.to_lowercase();
            for product in PRODUCTS {
                if lowered.contains(product) {
                    found.push(format!("{relative}:{}: product {product:?}", number + 1));
                }
            }
            for field in UPSTREAM_FIELDS {
                let allowed = relative == V01_ADAPTER && V01_KEYS.contains(field);
                if line.contains(field) && !allowed {
                    found.push(format!(
                        "{relative}:{}: upstream field {field:?}",
                        number + 1
                    ));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the host names vendors:\n{}",
        found.join("\n")
    );
}

/// The check itself catches what it is for.
#[test]
fn the_lists_catch_a_vendor_line() {
    let line = "let id = record[\"agentVersion\"]; // from SentinelOne";
    assert!(PRODUCTS.iter().any(|p| line.to_lowercase().contains(p)));
    assert!(UPSTREAM_FIELDS.iter().any(|f| line.contains(f)));
}
