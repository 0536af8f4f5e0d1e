//! A scan: match a tenant's installed software (all of it, one
//! application, one vendor or one device) against the reference store,
//! then bring the tenant's findings up to date in one transaction with the
//! scan's own record.
//!
//! Work is done once per distinct thing: each distinct application is
//! identified once, each product's match rows are read once, each distinct
//! (product, version, platform) is evaluated once; only findings that are
//! new, reopened, changed or fixed are written.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;

pub use crate::findings::vocabulary::{ScanCounts, ScanScope};
use crate::findings::writes;
use crate::matching::identify::{
    self, AppId, Application, CnaAlias, Dictionary, Identification, Translations,
};
use crate::matching::packages;
use crate::matching::ranges::{self, Hit};
use crate::reference::cpe::ProductKey;
use crate::reference::osv;
use crate::reference::records::CandidateRow;
use crate::reference::store;
pub use crate::reference::store::severities;
use cairn_core::db::fence::{FencedError, WriteFence};
use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_inventory::changes;
use cairn_inventory::software::{self, InstalledSoftware, SoftwareKey};
use cairn_jobs::{JobContext, JobFailure, JobHandler};

pub const SCAN_KIND: &str = "vuln_scan";

/// The `vuln_scan` job: runs the tenant's queued scans, oldest first.
pub struct ScanHandler {
    pub translations: Arc<Translations>,
}

#[async_trait]
impl JobHandler for ScanHandler {
    async fn run(&self, ctx: &JobContext) -> Result<(), JobFailure> {
        let db = ctx.db();
        let tenant = ctx.tenant_id();
        // What a scanner reported is shown beside what this job matches.
        crate::findings::scanner::refresh(db, tenant).await?;
        while let Some((scan_id, scope)) = writes::next_queued_scan(db, tenant).await? {
            writes::mark_scan_running(db, ctx, tenant, &scan_id, ctx.job_id()).await?;
            ctx.progress("matching", 0, 1, "scans", &scan_id).await?;
            match run_scan(db, ctx, &self.translations, tenant, &scan_id, &scope).await {
                Ok(counts) => {
                    ctx.progress(
                        "matching",
                        1,
                        1,
                        "scans",
                        &format!("{} findings", counts.findings),
                    )
                    .await?;
                }
                Err(err) if matches!(err.downcast_ref(), Some(FencedError::Lost)) => {
                    return Err(FencedError::Lost.into());
                }
                Err(err) => {
                    let message = format!("{err:#}");
                    if ctx.attempt() >= 3 {
                        writes::fail_scan(db, ctx, tenant, &scan_id, &message).await?;
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
    os_platform.and_then(cairn_inventory::normalize::platform_label)
}

/// An installation's version as `key`'s CPEs write it: a Linux package's
/// upstream version, then the product's version rule; `None` when a rule
/// says the version cannot be read in that scheme, or when it is a
/// distribution's build (`1.8.31-1ubuntu1.5`) on a device whose
/// distribution is not known: distributions backport fixes without moving
/// the upstream version, so only their advisories can judge it, and a
/// guess from the upstream version would flag fixed packages.
pub(crate) fn version_for_cpes<'a>(
    translations: &Translations,
    key: &ProductKey,
    item: &'a InstalledSoftware,
    platform: Option<&str>,
) -> Option<Cow<'a, str>> {
    let reported = item.version.as_deref().unwrap_or("");
    let name = &item.application_name;
    if packages::not_assessable(item) {
        return None;
    }
    match platform {
        Some("linux") => match packages::upstream_version(reported) {
            Cow::Borrowed(upstream) => translations.cpe_version(key, name, upstream),
            Cow::Owned(upstream) => translations
                .cpe_version(key, name, &upstream)
                .map(|v| Cow::Owned(v.into_owned())),
        },
        _ => translations.cpe_version(key, name, reported),
    }
}

/// Above this many queued inventory changes, reading the whole inventory
/// is cheaper than looking each change up.
const CHANGES_LIMIT: i64 = 200_000;

/// Identifies each application once, asking the dictionary in one query.
async fn identify_applications(
    db: &Db,
    translations: &Translations,
    overrides: &HashMap<String, Option<ProductKey>>,
    apps: &[AppId],
) -> sqlx::Result<HashMap<AppId, Identification>> {
    fn application(app: &AppId) -> Application<'_> {
        Application {
            name: &app.name,
            publisher: app.publisher.as_deref(),
        }
    }
    let asked = AskedKeys::default();
    for app in apps {
        identify::identify(application(app), overrides, translations, &asked);
    }
    let asked = asked.0.into_inner();
    let asked_refs: Vec<&ProductKey> = asked.iter().collect();
    let dictionary = store::known_products(db, &asked_refs).await?;
    Ok(apps
        .iter()
        .map(|app| {
            let found = identify::identify(application(app), overrides, translations, &dictionary);
            (app.clone(), found)
        })
        .collect())
}

/// What one run reads and covers.
struct Plan {
    mode: writes::ScanMode,
    software: Vec<InstalledSoftware>,
    identified: HashMap<AppId, Identification>,
    /// For `Changes`: the keys and application names re-matched.
    keys: Vec<SoftwareKey>,
    applications: Vec<String>,
    /// The inventory change entries this run accounts for.
    consumed: Vec<i64>,
}

/// A full-scope scan reads only what changed when the tenant was matched
/// before and the queue is short: the changed keys, and every application
/// whose identification or whose product's CVE data changed since.
async fn plan(
    db: &Db,
    translations: &Translations,
    overrides: &HashMap<String, Option<ProductKey>>,
    tenant: &TenantId,
    scope: &ScanScope,
) -> anyhow::Result<Plan> {
    let matched = match scope.covers_everything() && !scope.full {
        true => writes::matched_generation(db, tenant).await?,
        false => None,
    };
    let incremental = match matched {
        Some(_) => changes::pending_count(db, tenant).await? <= CHANGES_LIMIT,
        None => false,
    };
    if !incremental {
        // The queue is read before the inventory, so every entry consumed
        // is reflected in what is read.
        let consumed = match scope.covers_everything() {
            true => {
                // From here on every write of the inventory queues its keys
                // for the matches after this one.
                changes::start_recording(db, tenant).await?;
                changes::pending_ids(db, tenant).await?
            }
            false => vec![],
        };
        let software = software::installed_software(db, tenant, &scope.software()).await?;
        let mut apps: Vec<AppId> = software.iter().map(AppId::of).collect();
        apps.sort();
        apps.dedup();
        let identified = identify_applications(db, translations, overrides, &apps).await?;
        let mode = match scope.covers_everything() {
            true => writes::ScanMode::Full,
            false => writes::ScanMode::Scoped,
        };
        return Ok(Plan {
            mode,
            software,
            identified,
            keys: vec![],
            applications: vec![],
            consumed,
        });
    }

    let (consumed, keys) = changes::pending(db, tenant).await?;
    let mut software = software::software_of_keys(db, tenant, &keys).await?;
    let stored = writes::identified_applications(db, tenant).await?;
    let mut apps: Vec<AppId> = stored
        .keys()
        .cloned()
        .chain(software.iter().map(AppId::of))
        .collect();
    apps.sort();
    apps.dedup();
    let identified = identify_applications(db, translations, overrides, &apps).await?;
    let changed = store::products_changed_since(db, matched.unwrap_or(0)).await?;
    let product_changed = |key: &ProductKey| {
        changed.contains(key)
            || translations
                .cna_keys_for(key)
                .iter()
                .any(|alias| changed.contains(&alias.key))
    };
    let mut applications: Vec<String> = stored
        .iter()
        .filter(|(app, before)| {
            let now = identified.get(*app);
            now.map(writes::StoredIdentification::from).as_ref() != Some(*before)
                || matches!(now, Some(Identification::Product(key)) if product_changed(key))
                || packages::package_names(&app.name, translations)
                    .iter()
                    .any(|name| changed.contains(&osv::changed_key(name)))
        })
        .map(|(app, _)| app.name.clone())
        .collect();
    applications.sort();
    applications.dedup();
    let names: Vec<&str> = applications.iter().map(String::as_str).collect();
    software.extend(software::software_of_applications(db, tenant, &names).await?);
    software.sort();
    software.dedup();
    Ok(Plan {
        mode: writes::ScanMode::Changes,
        software,
        identified,
        keys,
        applications,
        consumed,
    })
}

/// Runs one scan to the end and records it.
pub async fn run_scan(
    db: &Db,
    fence: &dyn WriteFence,
    translations: &Translations,
    tenant: &TenantId,
    scan_id: &str,
    scope: &ScanScope,
) -> anyhow::Result<ScanCounts> {
    let generation = store::generation(db).await?;
    let overrides = writes::tenant_overrides(db, tenant).await?;
    let plan = plan(db, translations, &overrides, tenant, scope).await?;
    let software = &plan.software;
    let identified = &plan.identified;
    let identity: HashMap<(&str, Option<&str>), &Identification> = identified
        .iter()
        .map(|(app, found)| ((app.name.as_str(), app.publisher.as_deref()), found))
        .collect();
    let identity_of = |s: &InstalledSoftware| -> Option<&Identification> {
        identity
            .get(&(&*s.application_name, AppId::publisher_of(s)))
            .copied()
    };

    // Linux packages of a recognised release: their distribution's
    // advisories only (`matching::packages`).
    let packages = packages::match_packages(db, translations, software).await?;

    // The other installations identified as a product, each with its
    // version as the product's CPEs write it (a version no rule can read is
    // left out; a Linux package of a third party without its packaging
    // revision).
    let installs: Vec<(&InstalledSoftware, &ProductKey, Cow<str>, Option<&str>)> = software
        .iter()
        .zip(&packages.of_item)
        .filter(|(_, package)| package.is_none())
        .filter_map(|(item, _)| match identity_of(item) {
            Some(Identification::Product(key)) => {
                let platform = platform(item.os_platform.as_deref());
                let version = version_for_cpes(translations, key, item, platform)?;
                Some((item, key, version, platform))
            }
            _ => None,
        })
        .collect();

    // The match rows of those products, CNA aliases folded in.
    let products: HashSet<&ProductKey> = installs.iter().map(|i| i.1).collect();
    let mut lookup: Vec<ProductKey> = products.iter().map(|k| (*k).clone()).collect();
    let mut alias_of: HashMap<ProductKey, (ProductKey, CnaAlias)> = HashMap::new();
    for key in &products {
        for alias in translations.cna_keys_for(key) {
            lookup.push(alias.key.clone());
            alias_of.insert(alias.key.clone(), ((*key).clone(), alias));
        }
    }
    let lookup_refs: Vec<&ProductKey> = lookup.iter().collect();
    let mut rows: HashMap<ProductKey, Vec<CandidateRow>> = HashMap::new();
    for (key, candidates) in store::rows_for_products(db, &lookup_refs).await? {
        if let Some((owner, alias)) = alias_of.get(&key) {
            let admitted = candidates
                .iter()
                .filter(|c| alias.admits(&c.source, &c.row.target_sw));
            rows.entry(owner.clone())
                .or_default()
                .extend(admitted.cloned());
        }
        // A CNA's name can be a dictionary product of its own too.
        if products.contains(&key) {
            rows.entry(key).or_default().extend(candidates);
        }
    }

    // Evaluate each distinct (product, version, platform) once, then point
    // each installation at its hits (no copies: a tenant can have a
    // million findings).
    let no_rows = Vec::new();
    let mut evaluated: HashMap<(&ProductKey, &str, Option<&str>), Vec<Hit>> = HashMap::new();
    for (_, key, version, platform) in &installs {
        let (key, version, platform) = (*key, version.as_ref(), *platform);
        evaluated
            .entry((key, version, platform))
            .or_insert_with(|| {
                ranges::evaluate(rows.get(key).unwrap_or(&no_rows), version, platform)
            });
    }
    let package_findings = software
        .iter()
        .zip(&packages.of_item)
        .filter_map(|(item, key)| Some((item, packages.evaluated.get(key.as_ref()?)?)))
        .flat_map(|(item, (key, hits))| {
            hits.iter().map(move |hit| writes::WantedFinding {
                device_name: &item.device_name,
                application_name: &item.application_name,
                version: item.version.as_deref().unwrap_or(""),
                key,
                hit,
            })
        });
    let mut wanted: Vec<writes::WantedFinding> = installs
        .iter()
        .flat_map(|(item, key, cpe_version, platform)| {
            let (item, key) = (*item, *key);
            evaluated[&(key, cpe_version.as_ref(), *platform)]
                .iter()
                .map(move |hit| writes::WantedFinding {
                    device_name: &item.device_name,
                    application_name: &item.application_name,
                    version: item.version.as_deref().unwrap_or(""),
                    key,
                    hit,
                })
        })
        .chain(package_findings)
        .collect();
    // A device reported by two sources with different OS texts is read
    // twice; its findings are one.
    let mut seen = HashSet::new();
    wanted.retain(|w| {
        seen.insert((
            w.device_name,
            w.application_name,
            w.version,
            w.hit.cve_id.as_str(),
        ))
    });

    let devices: HashSet<&str> = software.iter().map(|s| &*s.device_name).collect();
    let application_names: HashSet<&str> = software.iter().map(|s| &*s.application_name).collect();
    let mut counts = ScanCounts {
        applications: software
            .iter()
            .map(|s| (&*s.application_name, AppId::publisher_of(s)))
            .collect::<HashSet<_>>()
            .len() as i64,
        devices: devices.len() as i64,
        findings: wanted.len() as i64,
        ..Default::default()
    };
    let covered = match plan.mode {
        writes::ScanMode::Full => writes::Covered::All,
        writes::ScanMode::Changes => writes::Covered::Changes {
            keys: &plan.keys,
            applications: &plan.applications,
        },
        writes::ScanMode::Scoped => match &scope.device_name {
            Some(name) => {
                let mut names = devices.clone();
                names.insert(name);
                writes::Covered::Devices(names)
            }
            None => writes::Covered::Applications(application_names),
        },
    };
    // Every application identified here: those of the software read, and
    // for a change run every one it re-checked.
    let identifications: Vec<(&AppId, &Identification)> = identified.iter().collect();
    let written = writes::apply_scan(
        db,
        fence,
        writes::ScanResult {
            tenant,
            scan_id,
            mode: plan.mode,
            covered,
            wanted: &wanted,
            identified: &identifications,
            consumed: &plan.consumed,
            generation,
        },
        &mut counts,
    )
    .await?;
    tracing::info!(
        tenant_id = tenant.as_str(),
        scan_id,
        mode = plan.mode.as_str(),
        findings = counts.findings,
        new = written.new,
        fixed = written.fixed,
        "scan finished"
    );
    Ok(counts)
}
