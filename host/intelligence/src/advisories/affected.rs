//! Who runs the affected software: the devices with an open finding of a
//! CVE (or with an application, optionally only some versions), and the
//! people on them: inventory rows' users, device records' users (an MDM's
//! primary user), enriched by the directory when one is synced.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;
use utoipa::ToSchema;

use cairn_core::http::error::{ApiError, ApiResult};
use cairn_core::ids::TenantId;
use cairn_integrations::{directory_users_named, users_of_device_records, DirectoryUser};
use cairn_inventory::storage::{items_of_application, users_of_devices};
use cairn_platform::app::AppState;
use cairn_vulnerabilities::findings::views;
use cairn_vulnerabilities::reference::store;

/// Most devices read for one advisory.
const MAX_DEVICES: i64 = 10_000;

/// What an advisory is about.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    Cve(String),
    Application { name: String, versions: Vec<String> },
}

impl Target {
    /// The target of a request naming exactly one of a CVE and an
    /// application; `Err` names the field.
    pub fn of(
        cve_id: Option<&str>,
        application: Option<&str>,
        versions: Option<Vec<String>>,
    ) -> ApiResult<Target> {
        let application = application.map(str::trim).filter(|a| !a.is_empty());
        match (cve_id, application) {
            (Some(text), None) => {
                if versions.is_some() {
                    return Err(ApiError::validation(
                        "versions",
                        "versions narrow an application, not a CVE",
                    ));
                }
                cairn_vulnerabilities::reference::research::cve_id(text)
                    .map(Target::Cve)
                    .ok_or_else(|| ApiError::validation("cve_id", "not a CVE id (CVE-YYYY-NNNN)"))
            }
            (None, Some(name)) => Ok(Target::Application {
                name: name.to_string(),
                versions: versions
                    .unwrap_or_default()
                    .into_iter()
                    .map(|v| v.trim().to_string())
                    .filter(|v| !v.is_empty())
                    .collect(),
            }),
            _ => Err(ApiError::validation(
                "cve_id",
                "give exactly one of cve_id and application",
            )),
        }
    }

    pub fn cve_id(&self) -> Option<&str> {
        match self {
            Target::Cve(id) => Some(id),
            Target::Application { .. } => None,
        }
    }

    pub fn application(&self) -> Option<&str> {
        match self {
            Target::Application { name, .. } => Some(name),
            Target::Cve(_) => None,
        }
    }

    pub fn versions(&self) -> &[String] {
        match self {
            Target::Application { versions, .. } => versions,
            Target::Cve(_) => &[],
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AffectedDevice {
    pub device_name: String,
    pub application: String,
    pub version: String,
    /// The version that fixes the CVE, when known.
    pub fix_version: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AffectedUser {
    /// Lowercased.
    pub email: String,
    pub name: Option<String>,
    /// The affected devices this user is on.
    pub devices: Vec<String>,
    /// Where the link came from: an inventory source or an integration
    /// area.
    pub sources: Vec<String>,
    /// The user as the synced directory knows them.
    pub directory_user: Option<DirectoryUser>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Affected {
    pub cve_id: Option<String>,
    pub application: Option<String>,
    /// The versions asked about (none: every version).
    pub versions: Vec<String>,
    pub devices: Vec<AffectedDevice>,
    pub users: Vec<AffectedUser>,
    /// Affected devices no source names a user of.
    pub devices_without_user: Vec<String>,
}

impl Affected {
    /// The user with this address (any case), if affected.
    pub fn user(&self, email: &str) -> Option<&AffectedUser> {
        let email = email.trim().to_lowercase();
        self.users.iter().find(|u| u.email == email)
    }
}

/// The affected devices and users of `target`. An unknown CVE (neither
/// in the store nor among the tenant's findings) and an application the
/// inventory does not have are 404s.
pub async fn affected(state: &AppState, tenant: &TenantId, target: &Target) -> ApiResult<Affected> {
    let db = &state.db;
    let devices: Vec<AffectedDevice> = match target {
        Target::Cve(id) => {
            let (findings, _) = views::cve_findings(db, tenant, id, "open", 0, MAX_DEVICES).await?;
            if findings.is_empty() && store::cve_detail(db, id).await?.is_none() {
                return Err(ApiError::Missing(format!(
                    "{id} is neither in the CVE knowledge base nor among this tenant's findings"
                )));
            }
            findings
                .into_iter()
                .map(|f| AffectedDevice {
                    device_name: f.device_name,
                    application: f.application_name,
                    version: f.version,
                    fix_version: f.fix_version,
                })
                .collect()
        }
        Target::Application { name, versions } => {
            let (items, _) = items_of_application(db, tenant, name, 0, MAX_DEVICES).await?;
            if items.is_empty() {
                return Err(ApiError::Missing(format!(
                    "no application named {name} in this tenant's inventory"
                )));
            }
            let mut seen = BTreeSet::new();
            items
                .into_iter()
                .filter(|i| {
                    versions.is_empty()
                        || i.version
                            .as_deref()
                            .is_some_and(|v| versions.iter().any(|w| w == v))
                })
                .filter_map(|i| {
                    let device = i.device_name?;
                    let version = i.version.unwrap_or_default();
                    seen.insert((device.clone(), version.clone()))
                        .then(|| AffectedDevice {
                            device_name: device,
                            application: i.application_name.unwrap_or_else(|| name.clone()),
                            version,
                            fix_version: None,
                        })
                })
                .collect()
        }
    };
    let names: Vec<String> = devices
        .iter()
        .map(|d| d.device_name.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut users: BTreeMap<String, LinkedUser> = BTreeMap::new();
    let spellings = Spellings::of(&names);
    let mut linked_devices = BTreeSet::new();
    for (device, email, name, source) in users_of_devices(db, tenant, &names).await? {
        let entry = users.entry(email.trim().to_lowercase()).or_default();
        entry.name = entry.name.take().or(name);
        entry.devices.insert(spellings.canonical(&device));
        entry.sources.insert(source);
        linked_devices.insert(spellings.canonical(&device));
    }
    for (device, user, area) in users_of_device_records(db, tenant, &names).await? {
        let entry = users.entry(user.trim().to_lowercase()).or_default();
        entry.devices.insert(spellings.canonical(&device));
        entry.sources.insert(area);
        linked_devices.insert(spellings.canonical(&device));
    }
    let emails: Vec<String> = users.keys().cloned().collect();
    let directory = directory_users_named(db, &state.plugins(), tenant, &emails).await?;
    let users = users
        .into_iter()
        .filter(|(email, _)| email.contains('@'))
        .map(|(email, linked)| {
            let directory_user = directory.get(&email).cloned();
            AffectedUser {
                name: linked
                    .name
                    .or_else(|| directory_user.as_ref().and_then(|d| d.display_name.clone())),
                devices: linked.devices.into_iter().collect(),
                sources: linked.sources.into_iter().collect(),
                directory_user,
                email,
            }
        })
        .collect();
    Ok(Affected {
        cve_id: target.cve_id().map(String::from),
        application: target.application().map(String::from),
        versions: target.versions().to_vec(),
        devices_without_user: names
            .iter()
            .filter(|n| !linked_devices.contains(*n))
            .cloned()
            .collect(),
        devices,
        users,
    })
}

/// A user found on affected devices, before the directory is asked.
#[derive(Default)]
struct LinkedUser {
    name: Option<String>,
    devices: BTreeSet<String>,
    sources: BTreeSet<String>,
}

/// The affected devices' names as the findings spell them, by the
/// lowered name other sources may spell differently.
struct Spellings(HashMap<String, String>);

impl Spellings {
    fn of(names: &[String]) -> Spellings {
        Spellings(
            names
                .iter()
                .map(|n| (cairn_core::db::lower(n), n.clone()))
                .collect(),
        )
    }

    fn canonical(&self, device: &str) -> String {
        self.0
            .get(&cairn_core::db::lower(device))
            .cloned()
            .unwrap_or_else(|| device.to_string())
    }
}
