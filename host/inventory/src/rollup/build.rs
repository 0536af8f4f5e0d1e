//! The rebuild's arithmetic: inventory rows in, applications and assets out.
//! No I/O, so every rollup rule is tested here on plain values.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

pub use super::counts::{Counts, Held};
use crate::normalize::{self, clean, clean_owned};

/// The integrations whose device records attach to assets, and the key each
/// detail is shown under.
pub const MDM_SOURCE: &str = "mdm";
pub const EDR_SOURCE: &str = "edr";
pub const SCANNER_SOURCE: &str = "scanner";

/// One inventory row as the rebuild reads it.
#[derive(Debug, Clone, Default, sqlx_macros::FromRow)]
pub struct ItemRow {
    pub source: String,
    pub item_key: String,
    pub device_name: Option<String>,
    pub device_id: Option<String>,
    pub os_platform: Option<String>,
    pub os_version: Option<String>,
    pub user_email: Option<String>,
    pub user_name: Option<String>,
    pub application_name: Option<String>,
    pub vendor: Option<String>,
    pub version: Option<String>,
    pub publisher: Option<String>,
    pub updated_at: i64,
    pub os_name: Option<String>,
    pub os_build: Option<String>,
    /// The RMM groups the row's device is in, a JSON array of ids; read as
    /// `NULL` where the row names none, which is most rows.
    pub group_ids: Option<String>,
}

/// A device record of an mdm, edr or scanner integration.
#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct DeviceRecord {
    pub source: String,
    pub record_key: String,
    pub device_name: Option<String>,
    /// The record's normalized fields (the shared device shape); `{}` for
    /// records of v0.1 components and CSV enrichment.
    pub fields: String,
    pub body: String,
    pub updated_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct VersionCount {
    pub version: String,
    pub count: i64,
}

/// One application of the rollup, before it is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Application {
    pub name: String,
    pub vendor: Option<String>,
    pub device_count: i64,
    pub most_common_version: Option<String>,
    pub newest_version: Option<String>,
    pub oldest_version: Option<String>,
    pub version_counts: Vec<VersionCount>,
    pub platforms: Vec<String>,
    pub sources: Vec<String>,
    pub publisher: Option<String>,
}

/// What an application is searched by (see [`SearchDocument`]).
///
/// Its keys are the allow-list's (`crate::application_fields`).
pub fn search_document(app: &Application) -> String {
    let mut doc = crate::search::SearchDocument::default();
    doc.text("name", Some(&app.name))
        .text("vendor", app.vendor.as_deref())
        .text("publisher", app.publisher.as_deref())
        .list(
            "version",
            app.version_counts.iter().map(|v| v.version.as_str()),
        )
        .keys(
            "version_key",
            app.version_counts
                .iter()
                .map(|v| crate::version::release_key(&v.version)),
        )
        .list("platform", app.platforms.iter().map(String::as_str));
    doc.to_json()
}

/// A vendor as the rollup attributes applications to it (dominant vendor).
#[derive(Debug, Clone, PartialEq)]
pub struct Vendor {
    pub name: String,
    pub application_count: i64,
    /// Distinct devices with any of its applications.
    pub device_count: i64,
}

/// One asset of the NetBIOS view, before it is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Asset {
    pub key: String,
    /// The longest name observed.
    pub device_name: String,
    pub names: Vec<String>,
    /// The names as the inventory spells them, where that differs.
    pub raw_names: Vec<String>,
    pub device_id: Option<String>,
    pub os_platform: Option<String>,
    pub os_version: Option<String>,
    /// The OS's name and edition, and its build, where a source gives them
    /// apart (migration 0047).
    pub os_name: Option<String>,
    pub os_build: Option<String>,
    pub user_email: Option<String>,
    pub user_name: Option<String>,
    /// Sorted; each name shared with every other asset holding it (a
    /// whole rebuild holds a million of them at once).
    pub applications: Vec<Arc<str>>,
    /// Each installed application with its version where the inventory
    /// gave one, sorted and distinct: what a device search matches
    /// `application_name` and `application_version` against together.
    pub installed: Vec<(Arc<str>, Option<Arc<str>>)>,
    pub sources: Vec<String>,
    /// The RMM group ids any of its rows names, sorted.
    pub group_ids: Vec<String>,
    pub mdm: Option<Value>,
    pub edr: Option<Value>,
    pub scan: Option<Value>,
    pub last_seen: i64,
}

/// The version id of an application row without a version.
const NO_VERSION: u32 = u32::MAX;

/// The shared names of interned ids.
struct Names {
    applications: Vec<Arc<str>>,
    versions: Vec<Arc<str>>,
}

/// Device and application names become small integers so that the device
/// sets of applications and the application sets of assets stay compact
/// over a million rows.
#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
}

impl Interner {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.ids.len() as u32;
        self.ids.insert(name.to_string(), id);
        id
    }

    /// Every name, at the index of its id.
    fn names(&self) -> Vec<&str> {
        let mut names = vec![""; self.ids.len()];
        for (name, &id) in &self.ids {
            names[id as usize] = name;
        }
        names
    }
}

/// Devices holding a value and rows naming it, while rows stream in.
#[derive(Default)]
struct Holders {
    devices: HashSet<u32>,
    rows: i64,
}

impl Holders {
    fn add(&mut self, device: Option<u32>) {
        self.devices.extend(device);
        self.rows += 1;
    }

    fn held(&self) -> Held {
        Held {
            devices: self.devices.len() as i64,
            rows: self.rows,
        }
    }
}

#[derive(Default)]
struct ApplicationTally {
    holders: Holders,
    versions: HashMap<String, Holders>,
    vendors: HashMap<String, Holders>,
    platforms: HashMap<String, i64>,
    sources: BTreeMap<String, i64>,
    publishers: HashMap<String, i64>,
}

impl ApplicationTally {
    fn counts(&self) -> Counts {
        let held = |values: &HashMap<String, Holders>| {
            values
                .iter()
                .map(|(value, holders)| (value.clone(), holders.held()))
                .collect()
        };
        let rows = |values: &HashMap<String, i64>| {
            values
                .iter()
                .map(|(value, rows)| (value.clone(), *rows))
                .collect()
        };
        Counts {
            devices: self.holders.devices.len() as i64,
            rows: self.holders.rows,
            versions: held(&self.versions),
            vendors: held(&self.vendors),
            platforms: rows(&self.platforms),
            sources: self.sources.clone(),
            publishers: rows(&self.publishers),
        }
    }
}

/// The newest value of a field across an asset's rows: the value of the
/// row that changed last, the greater value between rows that changed at
/// the same time, so the answer never depends on the order rows are read.
#[derive(Default)]
struct Latest(Option<(i64, String)>);

impl Latest {
    fn offer(&mut self, at: i64, value: Option<String>) {
        if let Some(value) = value {
            let newer = self
                .0
                .as_ref()
                .is_none_or(|(seen, held)| (at, &value) > (*seen, held));
            if newer {
                self.0 = Some((at, value));
            }
        }
    }

    fn get(self) -> Option<String> {
        self.0.map(|(_, v)| v)
    }
}

#[derive(Default)]
struct AssetTally {
    names: BTreeSet<String>,
    /// Spellings of the names as the inventory holds them, where they
    /// differ from the cleaned name.
    raw_names: BTreeSet<String>,
    mdm_device_id: Latest,
    device_id: Latest,
    os_platform: Latest,
    os_version: Latest,
    os_name: Latest,
    os_build: Latest,
    user_email: Latest,
    user_name: Latest,
    /// Ids in [`Rollup::application_ids`] and [`Rollup::version_ids`]
    /// ([`NO_VERSION`] for none), once per row: sorted and deduplicated
    /// when the asset is built.
    applications: Vec<(u32, u32)>,
    sources: BTreeSet<String>,
    /// The distinct `group_ids` values of its rows as stored (JSON
    /// arrays): an RMM repeats the same list on each of a device's
    /// hundreds of rows, so each list is parsed once, when the asset is
    /// built.
    group_lists: BTreeSet<String>,
    last_updated: i64,
}

fn add_count<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, i64>, key: K) {
    *counts.entry(key).or_default() += 1;
}

/// Accumulates rows one at a time, so the reader can stream them.
#[derive(Default)]
pub struct Rollup {
    devices: Interner,
    application_ids: Interner,
    version_ids: Interner,
    applications: HashMap<String, ApplicationTally>,
    assets: HashMap<String, AssetTally>,
    /// Spellings of a device name that clean to nothing.
    blank_names: BTreeSet<String>,
    last_key: Option<(String, String)>,
    /// When each synced source last completed a run: see [`Self::assets`].
    completed_runs: HashMap<String, i64>,
}

impl Rollup {
    /// A rollup of sources whose last complete runs ended at
    /// `completed_runs` (source -> epoch ms).
    pub fn with_completed_runs(completed_runs: HashMap<String, i64>) -> Rollup {
        Rollup {
            completed_runs,
            ..Rollup::default()
        }
    }

    pub fn add(&mut self, row: ItemRow) {
        let at = row.updated_at;
        let raw_name = row.device_name;
        // Owned values move into the tallies: a million rows, no copies
        // where nothing needs cleaning.
        let device_name = clean_owned(raw_name.clone());
        let source = normalize::strip_control(&row.source);
        let application = row
            .application_name
            .as_deref()
            .and_then(normalize::application_name);
        let os_platform = clean_owned(row.os_platform);
        match (&device_name, raw_name) {
            (Some(name), raw) => {
                let key = self.asset_key(name);
                let asset = self.assets.entry(key).or_default();
                if !asset.names.contains(name) {
                    asset.names.insert(name.clone());
                }
                if let Some(raw) = raw.filter(|raw| raw != name) {
                    asset.raw_names.insert(raw);
                }
                let device_id = clean_owned(row.device_id);
                if source == MDM_SOURCE {
                    asset.mdm_device_id.offer(at, device_id.clone());
                }
                asset.device_id.offer(at, device_id);
                asset.os_platform.offer(at, os_platform.clone());
                asset.os_version.offer(at, clean_owned(row.os_version));
                asset.os_name.offer(at, clean_owned(row.os_name));
                asset.os_build.offer(at, clean_owned(row.os_build));
                asset.user_email.offer(at, clean_owned(row.user_email));
                asset.user_name.offer(at, clean_owned(row.user_name));
                if let Some(app) = &application {
                    let version = match row.version.as_deref().and_then(|v| clean(Some(v))) {
                        Some(version) => self.version_ids.id(&version),
                        None => NO_VERSION,
                    };
                    asset
                        .applications
                        .push((self.application_ids.id(app), version));
                }
                if !asset.sources.contains(&source) {
                    asset.sources.insert(source.clone());
                }
                if let Some(groups) = row.group_ids {
                    if !asset.group_lists.contains(&groups) {
                        asset.group_lists.insert(groups);
                    }
                }
                asset.last_updated = asset.last_updated.max(at);
            }
            (None, Some(raw)) => {
                if !self.blank_names.contains(&raw) {
                    self.blank_names.insert(raw);
                }
            }
            (None, None) => {}
        }
        let Some(application) = application else {
            return;
        };
        let device = device_name.as_deref().map(|n| self.devices.id(n));
        let tally = self.applications.entry(application).or_default();
        tally.holders.add(device);
        if let Some(version) = clean_owned(row.version) {
            tally.versions.entry(version).or_default().add(device);
        }
        if let Some(vendor) = clean_owned(row.vendor) {
            tally.vendors.entry(vendor).or_default().add(device);
        }
        if let Some(platform) = os_platform {
            add_count(&mut tally.platforms, platform);
        }
        *tally.sources.entry(source).or_default() += 1;
        if let Some(publisher) = clean_owned(row.publisher) {
            add_count(&mut tally.publishers, publisher);
        }
    }

    /// The NetBIOS key of a device name; rows arrive device by device, so
    /// the last answer is usually the next one.
    fn asset_key(&mut self, name: &str) -> String {
        match &self.last_key {
            Some((last, key)) if last == name => key.clone(),
            _ => {
                let key = normalize::netbios_key(Some(name));
                self.last_key = Some((name.to_string(), key.clone()));
                key
            }
        }
    }

    /// Each application's tallies, by name.
    pub fn tallies(&self) -> HashMap<String, Counts> {
        self.applications
            .iter()
            .map(|(name, tally)| (name.clone(), tally.counts()))
            .collect()
    }

    /// Per vendor, the distinct devices holding any application
    /// `vendor_of` attributes to it.
    pub fn vendor_devices(
        &self,
        vendor_of: impl Fn(&str) -> Option<String>,
    ) -> HashMap<String, i64> {
        let mut devices: HashMap<String, HashSet<u32>> = HashMap::new();
        for (name, tally) in &self.applications {
            if let Some(vendor) = vendor_of(name) {
                devices
                    .entry(vendor)
                    .or_default()
                    .extend(tally.holders.devices.iter().copied());
            }
        }
        devices
            .into_iter()
            .map(|(vendor, held)| (vendor, held.len() as i64))
            .collect()
    }

    /// Every asset name in [`match_form`]: what a detail record must name
    /// to attach.
    pub fn match_forms(&self) -> HashSet<String> {
        self.assets
            .values()
            .flat_map(|asset| asset.names.iter().map(|n| match_form(n)))
            .collect()
    }

    /// Spellings of a device name in the rows that clean to nothing.
    pub fn blank_names(&self) -> &BTreeSet<String> {
        &self.blank_names
    }

    /// The applications sorted by name, each with its tallies, and the
    /// vendors they are attributed to, sorted by name.
    pub fn applications(&mut self) -> (Vec<(Application, Counts)>, Vec<Vendor>) {
        let tallies = self.tallies();
        let vendor_of = |name: &str| {
            tallies
                .get(name)
                .and_then(|c| c.dominant_vendor().map(str::to_string))
        };
        let devices = self.vendor_devices(vendor_of);
        self.applications.clear();
        let mut out: Vec<(Application, Counts)> = tallies
            .into_iter()
            .map(|(name, counts)| (counts.application(&name), counts))
            .collect();
        out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        let mut applications_of: HashMap<&str, i64> = HashMap::new();
        for (app, _) in &out {
            if let Some(vendor) = &app.vendor {
                *applications_of.entry(vendor).or_default() += 1;
            }
        }
        let mut vendors: Vec<Vendor> = applications_of
            .into_iter()
            .map(|(name, apps)| Vendor {
                name: name.to_string(),
                application_count: apps,
                device_count: devices.get(name).copied().unwrap_or(0),
            })
            .collect();
        vendors.sort_by(|a, b| a.name.cmp(&b.name));
        (out, vendors)
    }

    /// The assets, with mdm, edr and scanner detail attached, sorted by key.
    /// An asset was last seen when its newest row changed or when a source
    /// that reports it last completed a run, whichever is later: a sync
    /// leaves unchanged rows as they are.
    pub fn assets(&mut self, records: Vec<DeviceRecord>) -> Vec<Asset> {
        let details = DetailIndex::new(records);
        let completed_runs = &self.completed_runs;
        let shared = |interner: &Interner| -> Vec<Arc<str>> {
            interner.names().into_iter().map(Arc::from).collect()
        };
        let names = Names {
            applications: shared(&self.application_ids),
            versions: shared(&self.version_ids),
        };
        let mut out: Vec<Asset> = std::mem::take(&mut self.assets)
            .into_iter()
            .map(|(key, tally)| asset(key, tally, &details, completed_runs, &names))
            .collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }
}

/// The group ids of an asset's distinct stored lists, sorted and distinct.
/// The lists are JSON arrays of text written by the items' one writer; a
/// value that is not one names no group.
fn group_ids(lists: &BTreeSet<String>) -> Vec<String> {
    let ids: BTreeSet<String> = lists
        .iter()
        .flat_map(|list| serde_json::from_str::<Vec<String>>(list).unwrap_or_default())
        .collect();
    ids.into_iter().collect()
}

/// The form a device name is matched in: upper case, as the NetBIOS key
/// has it, so a record can only attach to an asset whose key it names.
pub fn match_form(name: &str) -> String {
    name.to_uppercase()
}

/// The names a device record of `source` attaches by: its name, and for a
/// scanner record also the short host of its FQDN.
pub fn record_names(source: &str, name: &str) -> Vec<String> {
    let mut names = vec![match_form(name)];
    if source == SCANNER_SOURCE {
        names.push(match_form(normalize::short_host(name)));
    }
    names
}

/// Whether `source` is one whose device records attach to assets.
pub fn is_detail_source(source: &str) -> Option<&'static str> {
    [MDM_SOURCE, EDR_SOURCE, SCANNER_SOURCE]
        .into_iter()
        .find(|s| *s == source)
}

/// Device records of the detail sources, by name in [`match_form`]. A
/// scanner record is also found by the short host of its FQDN.
struct DetailIndex {
    by_source: HashMap<&'static str, HashMap<String, (i64, String, Value)>>,
}

impl DetailIndex {
    fn new(records: Vec<DeviceRecord>) -> DetailIndex {
        let mut by_source: HashMap<&'static str, HashMap<String, (i64, String, Value)>> =
            HashMap::new();
        for record in records {
            let Some(source) = is_detail_source(&record.source) else {
                continue;
            };
            let Some(name) = clean(record.device_name.as_deref()) else {
                continue;
            };
            // The normalized fields where the connector gave them, so every
            // product of an area attaches the same shape; else the record.
            let detail = match serde_json::from_str::<Value>(&record.fields) {
                Ok(Value::Object(fields)) if !fields.is_empty() => Value::Object(fields),
                // `fields` and `body` are NOT NULL JSON the sync wrote; a
                // body that does not decode gives the asset no detail.
                _ => serde_json::from_str(&record.body).unwrap_or(Value::Null),
            };
            let body = normalize::strip_control_json(detail);
            let index = by_source.entry(source).or_default();
            for name in record_names(source, &name) {
                // The newest record; between equally new ones the greater
                // key, whatever order they were read in.
                let newer = index.get(&name).is_none_or(|(at, key, _)| {
                    (record.updated_at, &record.record_key) > (*at, key)
                });
                if newer {
                    index.insert(
                        name,
                        (record.updated_at, record.record_key.clone(), body.clone()),
                    );
                }
            }
        }
        DetailIndex { by_source }
    }

    /// The newest record of `source` matching any of the asset's names.
    fn find(&self, source: &str, names: &BTreeSet<String>) -> Option<Value> {
        let index = self.by_source.get(source)?;
        names
            .iter()
            .filter_map(|n| index.get(&match_form(n)))
            .max_by(|(a, ka, _), (b, kb, _)| (a, ka).cmp(&(b, kb)))
            .map(|(_, _, body)| body.clone())
    }
}

/// The id an mdm record gives its device (the shared device shape's
/// `managed_device_id`, else its `device_id`).
fn managed_device_id(mdm: &Value) -> Option<String> {
    ["managed_device_id", "device_id"]
        .iter()
        .find_map(|k| mdm.get(*k).and_then(Value::as_str))
        .and_then(|id| clean(Some(id)))
}

fn asset(
    key: String,
    tally: AssetTally,
    details: &DetailIndex,
    completed_runs: &HashMap<String, i64>,
    names: &Names,
) -> Asset {
    let device_name = tally
        .names
        .iter()
        .max_by(|a, b| {
            a.chars()
                .count()
                .cmp(&b.chars().count())
                .then_with(|| b.cmp(a))
        })
        .cloned()
        .unwrap_or_default();
    let mdm = details.find(MDM_SOURCE, &tally.names);
    let edr = details.find(EDR_SOURCE, &tally.names);
    let scan = details.find(SCANNER_SOURCE, &tally.names);
    let mut sources = tally.sources;
    if scan.is_some() {
        sources.insert(SCANNER_SOURCE.to_string());
    }
    let device_id = mdm
        .as_ref()
        .and_then(managed_device_id)
        .or(tally.mdm_device_id.get())
        .or(tally.device_id.get());
    let last_seen = sources
        .iter()
        .filter_map(|s| completed_runs.get(s))
        .fold(tally.last_updated, |seen, &completed| seen.max(completed));
    let mut ids = tally.applications;
    ids.sort_unstable();
    ids.dedup();
    let mut installed: Vec<(Arc<str>, Option<Arc<str>>)> = ids
        .iter()
        .map(|&(app, version)| {
            let version = (version != NO_VERSION).then(|| names.versions[version as usize].clone());
            (names.applications[app as usize].clone(), version)
        })
        .collect();
    installed.sort_unstable();
    let mut applications: Vec<Arc<str>> = installed.iter().map(|(name, _)| name.clone()).collect();
    applications.dedup();
    Asset {
        key,
        device_name,
        names: tally.names.into_iter().collect(),
        raw_names: tally.raw_names.into_iter().collect(),
        device_id,
        os_platform: tally.os_platform.get(),
        os_version: tally.os_version.get(),
        os_name: tally.os_name.get(),
        os_build: tally.os_build.get(),
        user_email: tally.user_email.get().map(|e| e.to_lowercase()),
        user_name: tally.user_name.get(),
        applications,
        installed,
        sources: sources.into_iter().collect(),
        group_ids: group_ids(&tally.group_lists),
        mdm,
        edr,
        scan,
        last_seen,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn row(device: &str, app: &str, vendor: &str, version: &str) -> ItemRow {
        ItemRow {
            source: "rmm".into(),
            device_name: Some(device.into()),
            application_name: Some(app.into()),
            vendor: Some(vendor.into()),
            version: Some(version.into()),
            os_platform: Some("windows".into()),
            ..ItemRow::default()
        }
    }

    fn rollup(rows: Vec<ItemRow>) -> Vec<Application> {
        let mut rollup = Rollup::default();
        rows.into_iter().for_each(|r| rollup.add(r));
        rollup
            .applications()
            .0
            .into_iter()
            .map(|(a, _)| a)
            .collect()
    }

    #[test]
    fn groups_by_name_only_and_skips_empty_names() {
        let apps = rollup(vec![
            row("A", "Chrome", "Google LLC", "1"),
            row("B", "Chrome", "Google Inc.", "1"),
            row("C", "", "x", "1"),
            ItemRow {
                application_name: None,
                ..row("D", "", "x", "1")
            },
        ]);
        assert_eq!(apps.len(), 1);
        assert_eq!(apps[0].name, "Chrome");
        assert_eq!(apps[0].device_count, 2);
    }

    #[test]
    fn installer_id_suffixes_merge_into_one_application() {
        let apps = rollup(vec![
            row(
                "A",
                "Teams (3f2504e0-4f89-11d3-9a0c-0305e82c3301)",
                "Microsoft",
                "1.0",
            ),
            row("B", "Teams (deadbeef01)", "Microsoft", "1.1"),
            row("C", "Teams", "Microsoft", "1.1"),
            row("C", "Teams (x64)", "Microsoft", "1.1"),
        ]);
        let names: Vec<&str> = apps.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["Teams", "Teams (x64)"]);
        assert_eq!(apps[0].device_count, 3);
        assert_eq!(
            apps[0].version_counts,
            [
                VersionCount {
                    version: "1.1".into(),
                    count: 2
                },
                VersionCount {
                    version: "1.0".into(),
                    count: 1
                }
            ]
        );
    }

    #[test]
    fn dominant_vendor_is_on_the_most_distinct_devices() {
        // Many rows on one device do not outvote two devices.
        let apps = rollup(vec![
            row("A", "Zoom", "Zoom Video", "1"),
            row("A", "Zoom", "Zoom Video", "2"),
            row("A", "Zoom", "Zoom Video", "3"),
            row("B", "Zoom", "Zoom Video Communications", "1"),
            row("C", "Zoom", "Zoom Video Communications", "1"),
        ]);
        assert_eq!(apps[0].vendor.as_deref(), Some("Zoom Video Communications"));
    }

    #[test]
    fn device_count_is_distinct_names_across_versions() {
        let apps = rollup(vec![
            row("A", "7-Zip", "Igor", "22.01"),
            row("A", "7-Zip", "Igor", "23.01"),
            row("B", "7-Zip", "Igor", "23.01"),
        ]);
        assert_eq!(apps[0].device_count, 2);
        assert_eq!(apps[0].most_common_version.as_deref(), Some("23.01"));
    }

    #[test]
    fn newest_and_oldest_follow_version_ordering() {
        let apps = rollup(vec![
            row("A", "App", "V", "10.0.19045.3803"),
            row("B", "App", "V", "10.0.9200.1"),
            row("C", "App", "V", "9.9"),
            row("D", "App", "V", "10.0.19045.3803"),
        ]);
        assert_eq!(apps[0].newest_version.as_deref(), Some("10.0.19045.3803"));
        assert_eq!(apps[0].oldest_version.as_deref(), Some("9.9"));
        assert_eq!(
            apps[0].most_common_version.as_deref(),
            Some("10.0.19045.3803")
        );
    }

    #[test]
    fn platforms_sources_and_publisher() {
        let apps = rollup(vec![
            ItemRow {
                os_platform: Some("WINDOWS".into()),
                publisher: Some("Acme A".into()),
                ..row("A", "App", "V", "1")
            },
            ItemRow {
                source: "edr".into(),
                os_platform: Some("macOS".into()),
                publisher: Some("Acme B".into()),
                ..row("B", "App", "V", "1")
            },
            ItemRow {
                source: "csv-software".into(),
                ..row("C", "App", "V", "1")
            },
        ]);
        assert_eq!(apps[0].platforms, ["macos", "windows"]);
        assert_eq!(apps[0].sources, ["csv-software", "edr", "rmm"]);
        assert_eq!(apps[0].publisher.as_deref(), Some("Acme B"));
    }

    #[test]
    fn control_characters_are_stripped_from_values() {
        let apps = rollup(vec![row(
            "A\0",
            "Note\u{1}pad\0",
            "Ven\u{7f}dor",
            "1.\u{0}0",
        )]);
        assert_eq!(apps[0].name, "Notepad");
        assert_eq!(apps[0].vendor.as_deref(), Some("Vendor"));
        assert_eq!(apps[0].most_common_version.as_deref(), Some("1.0"));
    }

    #[test]
    fn vendors_count_their_applications_and_distinct_devices() {
        let mut rollup = Rollup::default();
        for r in [
            row("A", "Word", "Microsoft", "1"),
            row("A", "Excel", "Microsoft", "1"),
            row("B", "Excel", "Microsoft", "1"),
            row("B", "Chrome", "Google", "1"),
        ] {
            rollup.add(r);
        }
        let (_, vendors) = rollup.applications();
        assert_eq!(
            vendors,
            [
                Vendor {
                    name: "Google".into(),
                    application_count: 1,
                    device_count: 1
                },
                Vendor {
                    name: "Microsoft".into(),
                    application_count: 2,
                    device_count: 2
                },
            ]
        );
    }

    #[test]
    fn netbios_forms_merge_with_detail_from_each_source() {
        let mut rollup = Rollup::default();
        rollup.add(ItemRow {
            updated_at: 5,
            ..row(
                "WORKSTATION-ACCOUNTING-01.corp.example.com",
                "Excel",
                "Microsoft",
                "16",
            )
        });
        rollup.add(ItemRow {
            source: "edr".into(),
            device_id: Some("agent-7".into()),
            updated_at: 9,
            ..row("WORKSTATION-ACC", "Chrome", "Google", "120")
        });
        let records = vec![
            DeviceRecord {
                source: "mdm".into(),
                record_key: "m1".into(),
                device_name: Some("workstation-accounting-01.corp.example.com".into()),
                fields: json!({"managed_device_id": "5f1c-uuid", "compliance_state": "compliant"})
                    .to_string(),
                // The upstream record shows only where no fields were given.
                body: json!({"state": "unknown"}).to_string(),
                updated_at: 1,
            },
            DeviceRecord {
                source: "edr".into(),
                record_key: "e1".into(),
                device_name: Some("WORKSTATION-ACC".into()),
                fields: "{}".into(),
                body: json!({"infected": false}).to_string(),
                updated_at: 1,
            },
            DeviceRecord {
                source: "scanner".into(),
                record_key: "s1".into(),
                device_name: Some("workstation-acc.corp.example.com".into()),
                fields: json!({"risk_score": 7.5}).to_string(),
                body: "{}".into(),
                updated_at: 1,
            },
        ];
        let assets = rollup.assets(records);
        assert_eq!(assets.len(), 1);
        let asset = &assets[0];
        assert_eq!(asset.key, "WORKSTATION-ACC");
        assert_eq!(
            asset.device_name,
            "WORKSTATION-ACCOUNTING-01.corp.example.com"
        );
        assert_eq!(asset.device_id.as_deref(), Some("5f1c-uuid"));
        let applications: Vec<&str> = asset.applications.iter().map(|a| &**a).collect();
        assert_eq!(applications, ["Chrome", "Excel"]);
        assert_eq!(asset.sources, ["edr", "rmm", "scanner"]);
        assert_eq!(asset.mdm.as_ref().unwrap()["compliance_state"], "compliant");
        assert_eq!(asset.edr.as_ref().unwrap()["infected"], false);
        assert_eq!(asset.scan.as_ref().unwrap()["risk_score"], 7.5);
        assert_eq!(asset.last_seen, 9);
    }
}
