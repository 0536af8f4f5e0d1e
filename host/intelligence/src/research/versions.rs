//! Version tracking: per application the versions in use, and which are
//! compliant.
//!
//! Definitions (also in the routes' OpenAPI text):
//! - an application version is **vulnerable** when it has an open finding
//!   on one of the tenant's devices;
//! - the **fix version** of an application is the highest of the versions
//!   its open findings' CVE data names as fixing them (the lowest version
//!   that fixes them all, where known);
//! - with a minimum-version **rule** for the application, a version is
//!   compliant when it is at or above the minimum; without a rule, when it
//!   is not vulnerable;
//! - an install is **outdated** when its version is not compliant; it
//!   should be upgraded to the higher of the rule's minimum and the fix
//!   version of its own open findings (else the newest version in use,
//!   when that is newer).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;
use utoipa::ToSchema;

use super::product::highest;
use super::rules::{self, VersionRule};
use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_inventory::search::fold;
use cairn_inventory::storage::{application_summaries, ApplicationSummary};
use cairn_inventory::version::compare_versions;
use cairn_vulnerabilities::findings::figures::{open_findings, Devices, OpenFinding};

#[derive(Debug, Serialize, ToSchema)]
pub struct VersionInUse {
    pub version: String,
    pub device_count: i64,
    pub open_cve_count: i64,
    pub vulnerable: bool,
    pub compliant: bool,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ApplicationVersions {
    pub application: String,
    pub vendor: Option<String>,
    pub device_count: i64,
    /// The newest version seen on the tenant's devices.
    pub newest_version: Option<String>,
    /// The lowest version that fixes every open CVE of the application,
    /// where the CVE data names fixes.
    pub fix_version: Option<String>,
    pub open_cve_count: i64,
    /// The tenant's rule for it, if any.
    pub minimum_version: Option<String>,
    /// `rule` (compliance is the minimum version) or `open_findings`
    /// (compliance is having no open finding).
    pub basis: &'static str,
    /// Devices running a compliant version and not.
    pub compliant_devices: i64,
    pub non_compliant_devices: i64,
    /// Versions in use, newest first.
    pub versions: Vec<VersionInUse>,
}

/// The open findings of one application, by version: CVEs and fixes.
#[derive(Default)]
struct OpenOfApplication {
    by_version: BTreeMap<String, (Vec<Arc<str>>, Vec<String>)>,
}

/// Everything version tracking reads, once per request.
pub struct Tracking {
    pub applications: Vec<ApplicationSummary>,
    rules: HashMap<String, VersionRule>,
    open: HashMap<String, OpenOfApplication>,
    findings: Vec<OpenFinding>,
}

impl Tracking {
    pub async fn read(db: &Db, tenant: &TenantId) -> sqlx::Result<Tracking> {
        let applications = application_summaries(db, tenant).await?;
        let rules = rules::rules(db, tenant)
            .await?
            .into_iter()
            .map(|r| (fold(&r.application), r))
            .collect();
        let findings = open_findings(db, tenant, &Devices(None), None).await?;
        let mut open: HashMap<String, OpenOfApplication> = HashMap::new();
        for f in &findings {
            let entry = open
                .entry(fold(&f.application_name))
                .or_default()
                .by_version
                .entry(f.version.to_string())
                .or_default();
            if !entry.0.contains(&f.cve_id) {
                entry.0.push(f.cve_id.clone());
            }
            entry.1.extend(f.fix_version.as_deref().map(String::from));
        }
        Ok(Tracking {
            applications,
            rules,
            open,
            findings,
        })
    }

    fn rule(&self, application: &str) -> Option<&VersionRule> {
        self.rules.get(&fold(application))
    }

    fn open_of(&self, application: &str, version: &str) -> Option<&(Vec<Arc<str>>, Vec<String>)> {
        self.open.get(&fold(application))?.by_version.get(version)
    }

    fn compliant(&self, application: &str, version: &str) -> bool {
        match self.rule(application) {
            Some(rule) => compare_versions(version, &rule.minimum_version) != Ordering::Less,
            None => self.open_of(application, version).is_none(),
        }
    }

    /// One application's versions and compliance.
    pub fn application(&self, app: &ApplicationSummary) -> ApplicationVersions {
        let rule = self.rule(&app.name);
        let mut versions: Vec<VersionInUse> = app
            .versions
            .iter()
            .map(|(version, devices)| {
                let open = self.open_of(&app.name, version);
                VersionInUse {
                    version: version.clone(),
                    device_count: *devices,
                    open_cve_count: open.map_or(0, |o| o.0.len() as i64),
                    vulnerable: open.is_some(),
                    compliant: self.compliant(&app.name, version),
                }
            })
            .collect();
        versions.sort_by(|a, b| compare_versions(&b.version, &a.version));
        let (mut cves, mut fixes): (Vec<&str>, Vec<String>) = (vec![], vec![]);
        if let Some(open) = self.open.get(&fold(&app.name)) {
            for (ids, fix) in open.by_version.values() {
                cves.extend(ids.iter().map(|c| &**c));
                fixes.extend(fix.iter().cloned());
            }
        }
        cves.sort_unstable();
        cves.dedup();
        let devices = |compliant: bool| {
            versions
                .iter()
                .filter(|v| v.compliant == compliant)
                .map(|v| v.device_count)
                .sum()
        };
        ApplicationVersions {
            application: app.name.clone(),
            vendor: app.vendor.clone(),
            device_count: app.device_count,
            newest_version: app.newest_version.clone(),
            fix_version: highest(&fixes),
            open_cve_count: cves.len() as i64,
            minimum_version: rule.map(|r| r.minimum_version.clone()),
            basis: if rule.is_some() {
                "rule"
            } else {
                "open_findings"
            },
            compliant_devices: devices(true),
            non_compliant_devices: devices(false),
            versions,
        }
    }

    /// Installs that are not compliant, with what to upgrade to.
    /// `devices_of` lists the devices running an application version (for
    /// versions without open findings, which only a rule makes outdated).
    pub fn outdated(&self, devices_of: &HashMap<(String, String), Vec<String>>) -> Vec<Outdated> {
        let mut out = vec![];
        for app in &self.applications {
            for (version, _) in &app.versions {
                if self.compliant(&app.name, version) {
                    continue;
                }
                let open = self.open_of(&app.name, version);
                let rule = self.rule(&app.name);
                let mut targets: Vec<String> = open.map(|o| o.1.clone()).unwrap_or_default();
                targets.extend(rule.map(|r| r.minimum_version.clone()));
                let upgrade_to = highest(&targets).or_else(|| {
                    app.newest_version
                        .clone()
                        .filter(|n| compare_versions(n, version) == Ordering::Greater)
                });
                let reason = match (rule, open) {
                    (Some(rule), _) => {
                        format!("below the minimum version {}", rule.minimum_version)
                    }
                    (None, Some(o)) => format!("{} open CVE(s)", o.0.len()),
                    (None, None) => continue,
                };
                let devices = match open {
                    Some(_) => self.devices_with_findings(&app.name, version),
                    None => devices_of
                        .get(&(fold(&app.name), version.clone()))
                        .cloned()
                        .unwrap_or_default(),
                };
                for device_name in devices {
                    out.push(Outdated {
                        device_name,
                        application: app.name.clone(),
                        version: version.clone(),
                        upgrade_to: upgrade_to.clone(),
                        open_cve_count: open.map_or(0, |o| o.0.len() as i64),
                        reason: reason.clone(),
                    });
                }
            }
        }
        out.sort_by(|a, b| {
            a.device_name
                .cmp(&b.device_name)
                .then_with(|| a.application.cmp(&b.application))
        });
        out
    }

    fn devices_with_findings(&self, application: &str, version: &str) -> Vec<String> {
        let wanted = fold(application);
        let mut devices: Vec<String> = self
            .findings
            .iter()
            .filter(|f| &*f.version == version && fold(&f.application_name) == wanted)
            .map(|f| f.device_name.to_string())
            .collect();
        devices.sort();
        devices.dedup();
        devices
    }

    /// The applications with a rule whose versions below the minimum have
    /// no open finding: their devices must be read from the inventory.
    pub fn rule_only_versions(&self) -> Vec<(String, String)> {
        let mut out = vec![];
        for app in &self.applications {
            for (version, _) in &app.versions {
                if !self.compliant(&app.name, version) && self.open_of(&app.name, version).is_none()
                {
                    out.push((app.name.clone(), version.clone()));
                }
            }
        }
        out
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Outdated {
    pub device_name: String,
    pub application: String,
    pub version: String,
    /// The version to upgrade to: the higher of the rule's minimum and the
    /// version fixing this install's open CVEs (else the newest version in
    /// use, when newer); absent when none is known.
    pub upgrade_to: Option<String>,
    pub open_cve_count: i64,
    /// Why it is outdated.
    pub reason: String,
}
