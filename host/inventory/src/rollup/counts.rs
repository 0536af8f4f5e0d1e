//! An application's tallies: what the rollup derives an application from.
//!
//! Every figure is a count that adds up over disjoint sets of devices: the
//! devices holding the application (or a version, or a vendor spelling)
//! and the rows naming it (or a platform, source or publisher). The
//! incremental rebuild relies on that: a device belongs to exactly one
//! asset, so the tallies of the untouched assets stay as stored, and a
//! touched asset's old tallies are taken off and its new ones added.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::build::{Application, VersionCount};
use crate::normalize;
use crate::version::compare_versions;

/// Devices holding a value, and rows naming it (rows without a device
/// name count as rows only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    pub devices: i64,
    pub rows: i64,
}

/// One application's tallies.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Distinct named devices with the application.
    pub devices: i64,
    /// Inventory rows naming it.
    pub rows: i64,
    pub versions: BTreeMap<String, Held>,
    pub vendors: BTreeMap<String, Held>,
    /// Rows per platform label, source and publisher.
    pub platforms: BTreeMap<String, i64>,
    pub sources: BTreeMap<String, i64>,
    pub publishers: BTreeMap<String, i64>,
}

impl Counts {
    /// Adds `other` (`sign` 1) or takes it off (`sign` -1); a value no row
    /// names any more is dropped.
    pub fn apply(&mut self, other: &Counts, sign: i64) {
        self.devices += sign * other.devices;
        self.rows += sign * other.rows;
        for (mine, theirs) in [
            (&mut self.versions, &other.versions),
            (&mut self.vendors, &other.vendors),
        ] {
            for (value, held) in theirs {
                let entry = mine.entry(value.clone()).or_default();
                entry.devices += sign * held.devices;
                entry.rows += sign * held.rows;
                if entry.rows <= 0 {
                    mine.remove(value);
                }
            }
        }
        for (mine, theirs) in [
            (&mut self.platforms, &other.platforms),
            (&mut self.sources, &other.sources),
            (&mut self.publishers, &other.publishers),
        ] {
            for (value, rows) in theirs {
                let entry = mine.entry(value.clone()).or_default();
                *entry += sign * rows;
                if *entry <= 0 {
                    mine.remove(value);
                }
            }
        }
    }

    /// No row names the application any more.
    pub fn is_empty(&self) -> bool {
        self.rows <= 0
    }

    /// The dominant vendor: on the most devices; ties go to the first by
    /// name, so a rebuild of the same data always agrees with itself.
    pub fn dominant_vendor(&self) -> Option<&str> {
        self.vendors
            .iter()
            .max_by(|(a, da), (b, db)| da.devices.cmp(&db.devices).then_with(|| b.cmp(a)))
            .map(|(v, _)| v.as_str())
    }

    /// The application these tallies describe.
    pub fn application(&self, name: &str) -> Application {
        let mut version_counts: Vec<VersionCount> = self
            .versions
            .iter()
            .map(|(version, held)| VersionCount {
                version: version.clone(),
                count: held.devices,
            })
            .collect();
        // Most devices first; among equals the newest, which is the version
        // an analyst would call current.
        version_counts.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| compare_versions(&b.version, &a.version))
        });
        let newest = self
            .versions
            .keys()
            .max_by(|a, b| compare_versions(a, b))
            .cloned();
        let oldest = self
            .versions
            .keys()
            .min_by(|a, b| compare_versions(a, b))
            .cloned();
        Application {
            name: name.to_string(),
            vendor: self.dominant_vendor().map(str::to_string),
            device_count: self.devices,
            most_common_version: version_counts.first().map(|v| v.version.clone()),
            newest_version: newest,
            oldest_version: oldest,
            version_counts,
            platforms: normalize::platforms(self.platforms.keys().map(String::as_str)),
            sources: self.sources.keys().cloned().collect(),
            publisher: self.publishers.keys().next_back().cloned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(devices: i64, version: &str) -> Counts {
        Counts {
            devices,
            rows: devices,
            versions: BTreeMap::from([(
                version.to_string(),
                Held {
                    devices,
                    rows: devices,
                },
            )]),
            sources: BTreeMap::from([("rmm".to_string(), devices)]),
            ..Counts::default()
        }
    }

    #[test]
    fn taking_off_what_was_added_leaves_what_was_there() {
        let mut total = counts(3, "1.0");
        total.apply(&counts(2, "2.0"), 1);
        assert_eq!(total.devices, 5);
        assert_eq!(
            total.application("App").newest_version.as_deref(),
            Some("2.0")
        );
        total.apply(&counts(2, "2.0"), -1);
        assert_eq!(total, counts(3, "1.0"));
        total.apply(&counts(3, "1.0"), -1);
        assert!(total.is_empty());
        assert!(total.versions.is_empty() && total.sources.is_empty());
    }
}
