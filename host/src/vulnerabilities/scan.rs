//! A scan: match a tenant's installed software (all of it, one
//! application, one vendor or one device) against the reference store,
//! then bring the tenant's findings up to date in one transaction with the
//! scan's own record.
//!
//! Work is done once per distinct thing: each distinct application is
//! identified once, each product's match rows are read once, each distinct
//! (product, version, platform) is evaluated once; only findings that are
//! new, reopened, changed or fixed are written.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sqlx::Row;
use utoipa::ToSchema;

use super::identify::{self, Application, Dictionary, Identification, ProductKey, Translations};
use super::matching::{self, CandidateRow, Hit};
use super::{findings, reference};
use crate::auth::TenantId;
use crate::db::Db;
use crate::inventory::storage::{installed_software, InstalledSoftware, SoftwareScope};
use crate::jobs::{JobContext, JobFailure, JobHandler};

pub const SCAN_KIND: &str = "vuln_scan";

/// What a scan covers; stored on the scan as JSON.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ScanScope {
    /// Only this application (its rolled-up name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<String>,
    /// Only software of this vendor or publisher.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Only this device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
}

impl ScanScope {
    pub fn is_full(&self) -> bool {
        self.application.is_none() && self.vendor.is_none() && self.device_name.is_none()
    }

    fn software(&self) -> SoftwareScope {
        SoftwareScope {
            application: self.application.clone(),
            vendor: self.vendor.clone(),
            device_name: self.device_name.clone(),
        }
    }
}

/// Counts a scan reports.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ScanCounts {
    pub applications: i64,
    pub devices: i64,
    pub findings: i64,
    pub new_findings: i64,
    pub fixed_findings: i64,
    /// Open findings by CVE severity (`critical`, `high`, `medium`, `low`,
    /// `none`, `unknown`).
    pub by_severity: HashMap<String, i64>,
}

/// The `vuln_scan` job: runs the tenant's queued scans, oldest first.
pub struct ScanHandler {
    pub translations: Arc<Translations>,
}

#[async_trait]
impl JobHandler for ScanHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let db = ctx.db();
        let tenant = ctx.tenant_id();
        while let Some((scan_id, scope)) = findings::next_queued_scan(db, tenant).await? {
            findings::mark_scan_running(db, tenant, &scan_id, ctx.job_id()).await?;
            ctx.progress("matching", 0, 1, &scan_id).await?;
            match run_scan(db, &self.translations, tenant, &scan_id, &scope).await {
                Ok(counts) => {
                    ctx.progress("matching", 1, 1, &format!("{} findings", counts.findings))
                        .await?;
                }
                Err(err) => {
                    let message = format!("{err:#}");
                    if ctx.attempt() >= 3 {
                        findings::fail_scan(db, tenant, &scan_id, &message).await?;
                    }
                    return Err(JobFailure::Failed(message));
                }
            }
        }
        Ok(())
    }
}

/// Records which dictionary keys identification asks about, answering
/// none: the first of two passes, so the dictionary is read in one query.
#[derive(Default)]
struct AskedKeys(std::cell::RefCell<Vec<ProductKey>>);

impl Dictionary for AskedKeys {
    fn known<'a>(&self, keys: &'a [ProductKey]) -> Vec<&'a ProductKey> {
        self.0.borrow_mut().extend(keys.iter().cloned());
        vec![]
    }
}

/// A device platform label as the matcher knows platforms.
fn platform(os_platform: Option<&str>) -> Option<&'static str> {
    os_platform.and_then(crate::csv_sources::platform::platform_label)
}

/// One finding the scan wants to exist.
struct Wanted<'a> {
    software: &'a InstalledSoftware,
    key: ProductKey,
    hit: Hit,
}

/// Runs one scan to the end and records it.
pub async fn run_scan(
    db: &Db,
    translations: &Translations,
    tenant: &TenantId,
    scan_id: &str,
    scope: &ScanScope,
) -> anyhow::Result<ScanCounts> {
    let generation = reference::generation(db).await?;
    let software = installed_software(db, tenant, &scope.software()).await?;
    let overrides = findings::tenant_overrides(db, tenant).await?;

    // Identify each distinct (name, publisher) once, in two passes so the
    // dictionary is asked once.
    let mut apps: Vec<(&str, Option<&str>)> = software
        .iter()
        .map(|s| (s.application_name.as_str(), s.publisher.as_deref()))
        .collect();
    apps.sort();
    apps.dedup();
    let asked = AskedKeys::default();
    for (name, publisher) in &apps {
        identify::identify(
            Application {
                name,
                publisher: *publisher,
            },
            &overrides,
            translations,
            &asked,
        );
    }
    let asked = asked.0.into_inner();
    let asked_refs: Vec<&ProductKey> = asked.iter().collect();
    let dictionary = reference::known_products(db, &asked_refs).await?;
    let mut identified: HashMap<(&str, Option<&str>), Identification> = HashMap::new();
    for (name, publisher) in &apps {
        let found = identify::identify(
            Application {
                name,
                publisher: *publisher,
            },
            &overrides,
            translations,
            &dictionary,
        );
        identified.insert((name, *publisher), found);
    }

    // The match rows of every identified product, CNA aliases folded in.
    let mut products: Vec<ProductKey> = identified
        .values()
        .filter_map(|i| match i {
            Identification::Product(key) => Some(key.clone()),
            _ => None,
        })
        .collect();
    products.sort();
    products.dedup();
    let mut lookup: Vec<ProductKey> = products.clone();
    let mut alias_of: HashMap<ProductKey, ProductKey> = HashMap::new();
    for key in &products {
        for alias in translations.cna_keys_for(key) {
            alias_of.insert(alias.clone(), key.clone());
            lookup.push(alias);
        }
    }
    let lookup_refs: Vec<&ProductKey> = lookup.iter().collect();
    let mut rows: HashMap<ProductKey, Vec<CandidateRow>> = HashMap::new();
    for (key, candidates) in reference::rows_for_products(db, &lookup_refs).await? {
        let owner = alias_of.get(&key).cloned().unwrap_or(key);
        rows.entry(owner).or_default().extend(candidates);
    }

    // Evaluate each distinct (product, version, platform) once.
    let mut evaluated: HashMap<(&ProductKey, &str, Option<&str>), Vec<Hit>> = HashMap::new();
    let mut wanted: Vec<Wanted> = Vec::new();
    let no_rows = Vec::new();
    for item in &software {
        let Some(Identification::Product(key)) =
            identified.get(&(item.application_name.as_str(), item.publisher.as_deref()))
        else {
            continue;
        };
        let version = item.version.as_deref().unwrap_or("");
        let platform = platform(item.os_platform.as_deref());
        let hits = evaluated
            .entry((key, version, platform))
            .or_insert_with(|| {
                matching::evaluate(rows.get(key).unwrap_or(&no_rows), version, platform)
            });
        for hit in hits.iter() {
            wanted.push(Wanted {
                software: item,
                key: key.clone(),
                hit: hit.clone(),
            });
        }
    }

    // Devices per application, in one pass, for the unmatched list.
    let mut devices_of: HashMap<(&str, Option<&str>), HashSet<&str>> = HashMap::new();
    for s in &software {
        if matches!(
            identified.get(&(s.application_name.as_str(), s.publisher.as_deref())),
            Some(Identification::Unmatched { .. })
        ) {
            devices_of
                .entry((s.application_name.as_str(), s.publisher.as_deref()))
                .or_default()
                .insert(s.device_name.as_str());
        }
    }
    let unmatched: Vec<Value> = identified
        .iter()
        .filter_map(|((name, publisher), found)| match found {
            Identification::Unmatched { reason, candidates } => Some(json!([
                identify::clean_name(name),
                name,
                publisher,
                reason,
                serde_json::to_string(candidates).unwrap_or_default(),
                devices_of.get(&(*name, *publisher)).map_or(0, HashSet::len),
            ])),
            _ => None,
        })
        .collect();

    let scanned = findings::Scanned {
        devices: software.iter().map(|s| s.device_name.as_str()).collect(),
        applications: software
            .iter()
            .map(|s| s.application_name.as_str())
            .collect(),
    };
    let mut counts = ScanCounts {
        applications: apps.len() as i64,
        devices: scanned.devices.len() as i64,
        findings: wanted.len() as i64,
        ..Default::default()
    };
    let written = findings::apply_scan(
        db,
        tenant,
        scan_id,
        scope,
        &wanted
            .iter()
            .map(|w| findings::WantedFinding {
                device_name: &w.software.device_name,
                application_name: &w.software.application_name,
                version: w.software.version.as_deref().unwrap_or(""),
                key: &w.key,
                hit: &w.hit,
            })
            .collect::<Vec<_>>(),
        &scanned,
        &unmatched,
        generation,
        &mut counts,
    )
    .await?;
    tracing::info!(
        tenant_id = tenant.as_str(),
        scan_id,
        findings = counts.findings,
        new = written.new,
        fixed = written.fixed,
        "scan finished"
    );
    Ok(counts)
}

/// Severities of the given CVEs.
pub async fn severities(db: &Db, ids: &[&str]) -> sqlx::Result<HashMap<String, String>> {
    let mut out = HashMap::new();
    let ids_in = crate::db::json_text_values(db.backend, 1);
    for chunk in ids.chunks(5_000) {
        let rows = sqlx::query(&format!(
            "SELECT id, COALESCE(severity, 'unknown') FROM vuln_cves WHERE id IN ({ids_in})"
        ))
        .bind(serde_json::to_string(chunk).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
        out.extend(
            rows.into_iter()
                .map(|r| (r.get::<String, _>(0), r.get::<String, _>(1))),
        );
    }
    Ok(out)
}
