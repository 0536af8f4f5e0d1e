//! Platform labels as operators' exports write them ("Win10", "Microsoft
//! Windows 11 Pro", "macOS 14", "Ubuntu 22.04") mapped onto the three the
//! views group by.

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

#[cfg(test)]
mod tests {
    use super::*;

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
