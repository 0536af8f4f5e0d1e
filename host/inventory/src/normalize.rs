//! How raw inventory values become the keys and labels the rollup and the
//! asset view group by. Pure functions, so each rule is tested on its own.

/// Characters the NetBIOS name of a device keeps; a full DNS name and its
/// short form share their first 15.
pub const NETBIOS_LEN: usize = 15;

/// Drops NUL bytes and other control characters, which some agents report
/// inside names and which would break exports and display.
pub fn strip_control(value: &str) -> String {
    value.chars().filter(|c| !c.is_control()).collect()
}

/// A JSON value with control characters stripped from every string and
/// object key (PostgreSQL's jsonb also refuses `\u0000`).
pub fn strip_control_json(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(strip_control(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(strip_control_json).collect()),
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (strip_control(&k), strip_control_json(v)))
                .collect(),
        ),
        other => other,
    }
}

/// [`strip_control`] and trim; `None` when nothing is left.
pub fn clean(value: Option<&str>) -> Option<String> {
    let cleaned = strip_control(value?);
    let trimmed = cleaned.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

/// [`clean`] for an owned value: the same string back, not a copy, when
/// there is nothing to strip (nearly always).
pub fn clean_owned(value: Option<String>) -> Option<String> {
    let value = value?;
    if value.chars().any(char::is_control) {
        return clean(Some(&value));
    }
    let trimmed = value.trim();
    if trimmed.is_empty() {
        None
    } else if trimmed.len() == value.len() {
        Some(value)
    } else {
        Some(trimmed.to_string())
    }
}

/// The name an application is rolled up under: control characters stripped,
/// and a trailing parenthetical that is only an installer id (a hex run of
/// 8 or more characters, or a GUID, braces allowed) removed with its
/// surrounding whitespace. `(x64)`, `(64-bit)`, `(en-us)` stay.
pub fn application_name(raw: &str) -> Option<String> {
    let cleaned = strip_control(raw);
    let mut name = cleaned.trim();
    if let Some(inner) = name.strip_suffix(')') {
        if let Some(open) = inner.rfind('(') {
            if is_installer_id(inner[open + 1..].trim()) {
                name = inner[..open].trim_end();
            }
        }
    }
    (!name.is_empty()).then(|| name.to_string())
}

fn is_installer_id(text: &str) -> bool {
    let text = text
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .unwrap_or(text);
    is_guid(text) || (text.len() >= 8 && text.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_guid(text: &str) -> bool {
    let groups: Vec<&str> = text.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The key assets are grouped by: the device name (missing counts as empty)
/// uppercased and cut to its first 15 characters.
pub fn netbios_key(device_name: Option<&str>) -> String {
    strip_control(device_name.unwrap_or(""))
        .trim()
        .to_uppercase()
        .chars()
        .take(NETBIOS_LEN)
        .collect()
}

/// The host part of a DNS name (`ws-01` of `ws-01.corp.example.com`).
pub fn short_host(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

/// Platform labels as one label set, deduplicated and sorted: `windows`,
/// `macos`, `linux` where a label names one ([`platform_label`]), others
/// lower-cased; the same labels as devices and search say.
pub fn platforms<'a>(labels: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut seen: Vec<String> = labels
        .into_iter()
        .filter_map(|l| clean(Some(l)))
        .map(|l| platform_label(&l).map_or_else(|| l.to_lowercase(), str::to_string))
        .collect();
    seen.sort();
    seen.dedup();
    seen
}

/// A platform label as the applications list shows it (spec rule 5: one
/// Title-case display form per case-insensitive label): `Windows`,
/// `macOS`, `Linux`, `iOS`, `Android`, any other label with its first
/// letter upper-cased. Stored labels, and so filters, stay lower-case.
pub fn platform_display(label: &str) -> String {
    match label.to_lowercase().as_str() {
        "windows" => "Windows".into(),
        "macos" => "macOS".into(),
        "linux" => "Linux".into(),
        "ios" => "iOS".into(),
        "ipados" => "iPadOS".into(),
        "android" => "Android".into(),
        other => {
            let mut chars = other.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        }
    }
}

/// Platform labels as agents and exports write them ("Win10", "Microsoft
/// Windows 11 Pro", "macOS 14", "Ubuntu 22.04") mapped onto the three the
/// views group by: the same rule for connector and CSV rows.
/// `windows`, `macos` or `linux` when the label names one; `None` for
/// anything else (iOS, Android, ...), which is kept as written.
pub fn platform_label(raw: &str) -> Option<&'static str> {
    let label = raw.trim().to_lowercase();
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| label.starts_with(p));
    let contains = |parts: &[&str]| parts.iter().any(|p| label.contains(p));
    if starts(&["win"]) || contains(&["windows"]) {
        Some("windows")
    } else if starts(&["mac", "osx", "os x"]) || contains(&["macos", "mac os", "darwin"]) {
        Some("macos")
    } else if contains(&[
        "linux",
        "ubuntu",
        "debian",
        "red hat",
        "rhel",
        "centos",
        "fedora",
        "suse",
        "alpine",
        "rocky",
        "almalinux",
    ]) {
        Some("linux")
    } else {
        None
    }
}

/// A row's operating system as stored, for connector and CSV rows alike:
/// the platform as [`platform_label`] reads it (a label it does not know
/// stays as given), the one-line version (`os_version_of`) and the name
/// (`os_name_of`). The one place both writers of inventory rows take it
/// from, so a distribution's release is read the same way from each.
pub struct DeviceOs<'a> {
    pub platform: Option<&'a str>,
    pub version: Option<String>,
    pub name: Option<String>,
}

impl<'a> DeviceOs<'a> {
    pub fn of(platform: Option<&'a str>, version: Option<&str>, name: Option<&str>) -> Self {
        DeviceOs {
            platform: platform.map(|raw| platform_label(raw).unwrap_or(raw)),
            version: os_version_of(platform, version),
            name: os_name_of(platform, name),
        }
    }
}

/// The OS version as stored, for connector and CSV rows alike. A platform
/// label that says more than the platform (`Ubuntu`, `Windows 10
/// Enterprise 22H2`, `macOS 14 Sonoma`) is stored as `linux`, `windows` or
/// `macos` ([`platform_label`]); what it says moves into the version
/// (`Ubuntu 22.04`, `Windows 10 Enterprise 22H2`), so the release and
/// edition a source gave stay known: a distribution's advisories apply by
/// the release read from it.
fn os_version_of(platform: Option<&str>, version: Option<&str>) -> Option<String> {
    match (named_platform(platform), version) {
        (Some(name), Some(version)) if !version.to_lowercase().contains(&name.to_lowercase()) => {
            Some(format!("{name} {version}"))
        }
        (Some(name), None) => Some(name.to_string()),
        (_, version) => version.map(str::to_string),
    }
}

/// A platform label that says more than the platform (`Ubuntu`, `Windows
/// 11 Pro`): what [`os_version_of`] moves into the version.
fn named_platform(platform: Option<&str>) -> Option<&str> {
    /// Labels that name only the platform.
    const BARE: [&str; 11] = [
        "windows",
        "win",
        "microsoft windows",
        "macos",
        "mac",
        "mac os",
        "mac os x",
        "osx",
        "os x",
        "darwin",
        "linux",
    ];
    platform
        .map(str::trim)
        .filter(|raw| platform_label(raw).is_some() && !BARE.contains(&raw.to_lowercase().as_str()))
}

/// The OS name as stored, for connector and CSV rows alike: the name the
/// source gave apart, else a platform label that names more than the
/// platform (`Ubuntu`), which [`platform_label`] reduces to `linux`.
fn os_name_of(platform: Option<&str>, name: Option<&str>) -> Option<String> {
    name.map(str::trim)
        .filter(|name| !name.is_empty())
        .or_else(|| named_platform(platform))
        .map(str::to_string)
}

#[cfg(test)]
mod os_version_tests {
    use super::{os_name_of, os_version_of};

    #[test]
    fn the_os_name_is_the_one_given_else_a_platform_label_that_names_more() {
        for (platform, name, expected) in [
            (Some("Ubuntu"), None, Some("Ubuntu")),
            (
                Some("Windows"),
                Some("Windows 11 Pro"),
                Some("Windows 11 Pro"),
            ),
            (Some("Windows 11 Pro"), None, Some("Windows 11 Pro")),
            (Some("Windows"), None, None),
            (Some("linux"), Some("  "), None),
            (None, Some("Debian GNU/Linux"), Some("Debian GNU/Linux")),
            (None, None, None),
        ] {
            assert_eq!(
                os_name_of(platform, name).as_deref(),
                expected,
                "{platform:?} {name:?}"
            );
        }
    }

    #[test]
    fn a_label_naming_more_than_the_platform_moves_into_the_version() {
        for (platform, version, expected) in [
            (
                Some("Ubuntu"),
                Some("22.04.3 LTS"),
                Some("Ubuntu 22.04.3 LTS"),
            ),
            (Some("ubuntu"), Some("Ubuntu 22.04"), Some("Ubuntu 22.04")),
            (Some("Debian"), None, Some("Debian")),
            (Some("Linux"), Some("6.1.0"), Some("6.1.0")),
            (Some("Windows"), Some("10.0.19045"), Some("10.0.19045")),
            (
                Some("Windows 10 Enterprise 22H2"),
                None,
                Some("Windows 10 Enterprise 22H2"),
            ),
            (
                Some("Windows 11 Pro"),
                Some("10.0.22631"),
                Some("Windows 11 Pro 10.0.22631"),
            ),
            (Some("macOS 14 Sonoma"), None, Some("macOS 14 Sonoma")),
            (Some("macOS"), Some("14.2.1"), Some("14.2.1")),
            (None, Some("14.2"), Some("14.2")),
            (None, None, None),
        ] {
            assert_eq!(
                os_version_of(platform, version).as_deref(),
                expected,
                "{platform:?} {version:?}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_owned_agrees_with_clean() {
        for raw in [
            "",
            " ",
            "\t",
            "WS-01",
            " WS-01 ",
            "WS\u{0}-01",
            "\u{7}",
            "Ünïcode ",
            "a\nb",
        ] {
            assert_eq!(
                clean_owned(Some(raw.to_string())),
                clean(Some(raw)),
                "{raw:?}"
            );
        }
        assert_eq!(clean_owned(None), None);
    }

    #[test]
    fn installer_ids_are_stripped_and_qualifiers_kept() {
        let cases = [
            ("Google Chrome", "Google Chrome"),
            ("Microsoft Edge (x64)", "Microsoft Edge (x64)"),
            ("7-Zip 23.01 (64-bit)", "7-Zip 23.01 (64-bit)"),
            (
                "Office 16 Click-to-Run (en-us)",
                "Office 16 Click-to-Run (en-us)",
            ),
            ("Zoom (a1b2c3d4)", "Zoom"),
            ("Zoom (A1B2C3D4E5F6)", "Zoom"),
            ("Zoom (a1b2c3d)", "Zoom (a1b2c3d)"),
            ("Teams (3f2504e0-4f89-11d3-9a0c-0305e82c3301)  ", "Teams"),
            ("Teams  ({3F2504E0-4F89-11D3-9A0C-0305E82C3301})", "Teams"),
            (
                "Teams (3f2504e0-4f89-11d3-9a0c)",
                "Teams (3f2504e0-4f89-11d3-9a0c)",
            ),
            ("Agent (deadbeef) beta", "Agent (deadbeef) beta"),
            ("Nul\0Name\u{7}", "NulName"),
        ];
        for (raw, want) in cases {
            assert_eq!(application_name(raw).as_deref(), Some(want), "{raw:?}");
        }
        assert_eq!(application_name("  "), None);
        assert_eq!(application_name("(deadbeefdeadbeef)"), None);
    }

    #[test]
    fn json_keys_and_strings_lose_control_characters() {
        let raw = serde_json::json!({"na\u{0}me": ["a\u{7}b", {"k": "v\u{0}"}], "n": 1});
        assert_eq!(
            strip_control_json(raw),
            serde_json::json!({"name": ["ab", {"k": "v"}], "n": 1})
        );
    }

    #[test]
    fn netbios_key_is_the_first_fifteen_uppercased() {
        assert_eq!(
            netbios_key(Some("WORKSTATION-ACCOUNTING-01.corp.example.com")),
            "WORKSTATION-ACC"
        );
        assert_eq!(netbios_key(Some("workstation-acc")), "WORKSTATION-ACC");
        assert_eq!(netbios_key(None), "");
        assert_eq!(short_host("ws-01.corp.example.com"), "ws-01");
    }

    #[test]
    fn platforms_are_one_lower_case_label_set() {
        assert_eq!(
            platforms([
                "windows",
                "WINDOWS",
                "Windows 11 Pro",
                "macOS",
                " linux ",
                "",
                "iOS"
            ]),
            vec!["ios", "linux", "macos", "windows"]
        );
    }

    #[test]
    fn platforms_display_in_title_case() {
        for (label, shown) in [
            ("windows", "Windows"),
            ("macos", "macOS"),
            ("linux", "Linux"),
            ("ios", "iOS"),
            ("android", "Android"),
            ("chromeos", "Chromeos"),
            ("", ""),
        ] {
            assert_eq!(platform_display(label), shown, "{label}");
        }
    }

    #[test]
    fn export_labels_map_onto_three_platforms() {
        for (raw, expected) in [
            ("Win10", Some("windows")),
            ("Microsoft Windows 11 Pro", Some("windows")),
            ("windows", Some("windows")),
            ("macOS 14", Some("macos")),
            ("Mac OS X 10.15", Some("macos")),
            ("Darwin", Some("macos")),
            ("Ubuntu", Some("linux")),
            ("Red Hat Enterprise Linux 9", Some("linux")),
            ("iOS 17", None),
            ("Android", None),
        ] {
            assert_eq!(platform_label(raw), expected, "{raw}");
        }
    }
}
