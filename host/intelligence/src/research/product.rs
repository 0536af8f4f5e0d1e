//! A product researched: the CPE products it is (named, or the ones the
//! tenant's application was identified as), their CVEs, and the versions
//! the tenant runs with which of them are vulnerable.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use utoipa::ToSchema;

use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_inventory::search::{fold, Page};
use cairn_inventory::storage::application_summaries;
use cairn_inventory::version::compare_versions;
use cairn_vulnerabilities::findings::views::{open_cves_of_applications, open_device_counts};
use cairn_vulnerabilities::findings::writes::identified_applications;
use cairn_vulnerabilities::reference::cpe::ProductKey;
use cairn_vulnerabilities::reference::store::{cves_of_product_keys, CveHit};

/// What was asked: a CPE product, or one of the tenant's applications.
pub enum ProductQuery {
    Product(ProductKey),
    Application(String),
}

impl ProductQuery {
    /// As the history records it.
    pub fn text(&self) -> String {
        match self {
            ProductQuery::Product(key) => key.text(),
            ProductQuery::Application(name) => name.clone(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProductCve {
    #[serde(flatten)]
    pub cve: CveHit,
    /// The tenant's devices with an open finding of it.
    pub device_count: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct RunVersion {
    pub application_name: String,
    pub version: String,
    pub device_count: i64,
    /// It has an open finding on the tenant's devices.
    pub vulnerable: bool,
    pub open_cves: Vec<String>,
    /// The lowest version that fixes every open CVE of it, where the CVE
    /// data says.
    pub fix_version: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ProductResearch {
    /// The CPE products (`vendor:product`) researched.
    pub products: Vec<String>,
    /// The tenant's applications (as installed) identified as them.
    pub applications: Vec<String>,
    /// The products' CVEs in the CVE store, newest first, a page at a
    /// time (`skip`, `limit`).
    pub cves: Page<ProductCve>,
    /// The versions of those applications the tenant runs, newest first.
    pub versions: Vec<RunVersion>,
    /// The newest of them.
    pub newest_version_in_use: Option<String>,
}

pub async fn research_product(
    db: &Db,
    tenant: &TenantId,
    query: &ProductQuery,
    bounds: (i64, i64),
) -> sqlx::Result<ProductResearch> {
    let identified = identified_applications(db, tenant).await?;
    let mut products: BTreeSet<ProductKey> = BTreeSet::new();
    let mut applications: BTreeSet<String> = BTreeSet::new();
    match query {
        ProductQuery::Product(key) => {
            products.insert(key.clone());
            for (app, found) in &identified {
                if found.product.as_ref() == Some(key) {
                    applications.insert(app.name.clone());
                }
            }
        }
        ProductQuery::Application(name) => {
            let wanted = fold(name);
            applications.insert(name.clone());
            for (app, found) in &identified {
                if fold(&app.name) == wanted {
                    applications.insert(app.name.clone());
                    products.extend(found.product.clone());
                }
            }
        }
    }
    let keys: Vec<ProductKey> = products.iter().cloned().collect();
    let (hits, cve_total) = cves_of_product_keys(db, &keys, bounds).await?;
    let ids: Vec<String> = hits.iter().map(|h| h.cve_id.clone()).collect();
    let exposure = open_device_counts(db, tenant, &ids).await?;
    let cves = hits
        .into_iter()
        .map(|cve| ProductCve {
            device_count: exposure.get(&cve.cve_id).copied().unwrap_or(0),
            cve,
        })
        .collect();
    let cves = Page::new(cves, cve_total, bounds);

    let names: Vec<String> = applications.iter().cloned().collect();
    let folded: BTreeSet<String> = names.iter().map(|n| fold(n)).collect();
    // (folded application, version) -> (open CVEs, fix versions)
    let mut open: BTreeMap<(String, String), (Vec<String>, Vec<String>)> = BTreeMap::new();
    for found in open_cves_of_applications(db, tenant, &names).await? {
        let entry = open
            .entry((fold(&found.application_name), found.version))
            .or_default();
        entry.0.push(found.cve_id);
        entry.1.extend(found.fix_version);
    }
    let mut versions = vec![];
    for app in application_summaries(db, tenant).await? {
        if !folded.contains(&fold(&app.name)) {
            continue;
        }
        for (version, device_count) in app.versions {
            let (open_cves, fixes) = open
                .remove(&(fold(&app.name), version.clone()))
                .unwrap_or_default();
            versions.push(RunVersion {
                application_name: app.name.clone(),
                vulnerable: !open_cves.is_empty(),
                fix_version: highest(&fixes),
                open_cves,
                version,
                device_count,
            });
        }
    }
    versions.sort_by(|a, b| {
        compare_versions(&b.version, &a.version)
            .then_with(|| a.application_name.cmp(&b.application_name))
    });
    Ok(ProductResearch {
        products: products.iter().map(ProductKey::text).collect(),
        applications: names,
        cves,
        newest_version_in_use: versions.first().map(|v| v.version.clone()),
        versions,
    })
}

/// The highest of `versions` by the one version ordering.
pub fn highest(versions: &[String]) -> Option<String> {
    versions
        .iter()
        .max_by(|a, b| compare_versions(a, b))
        .cloned()
}
