//! CPE 2.3 formatted strings (`cpe:2.3:part:vendor:product:version:update:...`)
//! split into the parts matching needs, with `\`-escapes honoured.

/// A CPE vendor and product, e.g. (`mozilla`, `firefox`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProductKey {
    pub vendor: String,
    pub product: String,
}

impl ProductKey {
    /// `vendor:product`.
    pub fn parse(text: &str) -> Option<ProductKey> {
        let (vendor, product) = text.split_once(':')?;
        let (vendor, product) = (vendor.trim().to_lowercase(), product.trim().to_lowercase());
        (!vendor.is_empty() && !product.is_empty() && !product.contains(':'))
            .then_some(ProductKey { vendor, product })
    }

    /// From nullable vendor and product columns: a key when both are set.
    pub fn from_columns(vendor: Option<String>, product: Option<String>) -> Option<ProductKey> {
        vendor
            .zip(product)
            .map(|(vendor, product)| ProductKey { vendor, product })
    }

    pub fn text(&self) -> String {
        format!("{}:{}", self.vendor, self.product)
    }
}

/// The parts of a CPE 2.3 name that matching reads. Values keep CPE's
/// conventions: `*` is ANY, `-` is NA; escapes are removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpe {
    pub part: String,
    pub vendor: String,
    pub product: String,
    pub version: String,
    pub update: String,
    pub sw_edition: String,
    pub target_sw: String,
}

impl Cpe {
    /// Parses `cpe:2.3:...` with its 11 attributes; `None` when malformed.
    pub fn parse(criteria: &str) -> Option<Cpe> {
        let rest = criteria.strip_prefix("cpe:2.3:")?;
        let mut fields = Vec::with_capacity(11);
        let mut current = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => {
                    if let Some(next) = chars.next() {
                        current.push(next);
                    }
                }
                ':' => fields.push(std::mem::take(&mut current)),
                _ => current.push(c),
            }
        }
        fields.push(current);
        if fields.len() != 11 || fields[1].is_empty() || fields[2].is_empty() {
            return None;
        }
        let lower = |s: &str| s.to_lowercase();
        Some(Cpe {
            part: lower(&fields[0]),
            vendor: lower(&fields[1]),
            product: lower(&fields[2]),
            version: fields[3].clone(),
            update: lower(&fields[4]),
            sw_edition: lower(&fields[7]),
            target_sw: lower(&fields[8]),
        })
    }

    /// The software platform the CPE restricts to: `target_sw`, or, where
    /// that is ANY, an `sw_edition` that names one of our platforms
    /// (Docker Desktop's `cpe:2.3:a:docker:desktop:*:*:*:*:*:windows:*:*`
    /// vs. `...:*:*:*:windows:*:*:*`, both written by NVD).
    pub fn platform_target(&self) -> String {
        if is_any(&self.target_sw)
            && matches!(target_platform(&self.sw_edition), Target::Platform(_))
        {
            return self.sw_edition.clone();
        }
        self.target_sw.clone()
    }
}

/// Whether a CPE attribute value means "any value".
pub fn is_any(value: &str) -> bool {
    value.is_empty() || value == "*"
}

/// The platform a CPE names when it is an operating system (or an OS-wide
/// `target_sw`): `windows`, `macos` or `linux`; `None` for anything else
/// (hardware, firmware, mobile systems, ecosystems).
pub fn platform_of(vendor: &str, product: &str) -> Option<&'static str> {
    match (vendor, product) {
        ("microsoft", p) if p.starts_with("windows") => Some("windows"),
        ("apple", "macos" | "mac_os_x" | "mac_os" | "macos_server") => Some("macos"),
        ("linux", "linux_kernel") => Some("linux"),
        ("debian", "debian_linux")
        | ("canonical", "ubuntu_linux")
        | ("redhat", "enterprise_linux")
        | ("fedoraproject", "fedora") => Some("linux"),
        _ => None,
    }
}

/// What a CPE's `target_sw` restricts it to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// No restriction.
    Any,
    /// One of our device platforms.
    Platform(&'static str),
    /// A target none of our device platforms is (android, iphone_os, an
    /// ecosystem such as `node.js`).
    Elsewhere,
}

pub fn target_platform(target_sw: &str) -> Target {
    match target_sw {
        "" | "*" | "-" => Target::Any,
        "windows" => Target::Platform("windows"),
        "macos" | "mac_os_x" | "mac_os" | "macos_x" => Target::Platform("macos"),
        "linux" | "linux_kernel" => Target::Platform("linux"),
        _ => Target::Elsewhere,
    }
}

/// One CPE match (or CNA version entry): the product it names and the
/// versions it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchRow {
    pub vendor: String,
    pub product: String,
    pub part: String,
    /// The CPE's own version attribute (`*` for any, `-` for none).
    pub cpe_version: String,
    pub cpe_update: String,
    pub target_sw: String,
    pub criteria: String,
    pub match_id: Option<String>,
    pub version_start: Option<String>,
    pub start_including: bool,
    pub version_end: Option<String>,
    pub end_including: bool,
    pub vulnerable: bool,
    pub negate: bool,
    /// For a match inside an AND configuration: the other nodes' criteria,
    /// one of which the device must be.
    pub platforms: Vec<String>,
}

/// A CNA's vendor or product name as the dictionary would spell it:
/// lowercase, company suffixes dropped, spaces as `_`
/// (`Zoom Video Communications, Inc.` → `zoom_video_communications`).
pub fn cna_slug(name: &str) -> String {
    const SUFFIXES: [&str; 10] = [
        " inc",
        " inc.",
        " llc",
        " ltd",
        " ltd.",
        " corporation",
        " corp",
        " corp.",
        " gmbh",
        " co.",
    ];
    let mut name = name.trim().to_lowercase().replace(',', "");
    loop {
        let before = name.len();
        for suffix in SUFFIXES {
            if let Some(stripped) = name.strip_suffix(suffix) {
                name = stripped.trim_end().to_string();
            }
        }
        if name.len() == before {
            break;
        }
    }
    let mut slug = String::with_capacity(name.len());
    for c in name.chars() {
        if c.is_whitespace() {
            if !slug.ends_with('_') {
                slug.push('_');
            }
        } else if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '-') {
            slug.push(c);
        }
    }
    slug.trim_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_parts_and_escapes() {
        let cpe = Cpe::parse("cpe:2.3:a:7-zip:7-zip:*:*:*:*:*:*:*:*").unwrap();
        assert_eq!(
            (cpe.vendor.as_str(), cpe.product.as_str()),
            ("7-zip", "7-zip")
        );
        let cpe = Cpe::parse("cpe:2.3:a:mozilla:firefox:*:*:*:*:*:android:*:*").unwrap();
        assert_eq!(cpe.target_sw, "android");
        let cpe = Cpe::parse("cpe:2.3:a:docker:desktop:*:*:*:*:*:windows:*:*").unwrap();
        assert_eq!(cpe.platform_target(), "windows");
        let cpe = Cpe::parse("cpe:2.3:a:docker:desktop:*:*:*:*:windows:*:*:*").unwrap();
        assert_eq!(cpe.platform_target(), "windows");
        let cpe = Cpe::parse("cpe:2.3:a:vendor:tool:*:*:*:*:enterprise:*:*:*").unwrap();
        assert_eq!(cpe.platform_target(), "*");
        let cpe = Cpe::parse("cpe:2.3:a:apache:log4j:2.0:rc1:*:*:*:*:*:*").unwrap();
        assert_eq!((cpe.version.as_str(), cpe.update.as_str()), ("2.0", "rc1"));
        let cpe = Cpe::parse(r"cpe:2.3:a:notepad-plus-plus:notepad\+\+:8.1:*:*:*:*:*:*:*").unwrap();
        assert_eq!(cpe.product, "notepad++");
        assert!(Cpe::parse("cpe:2.3:a:only:three").is_none());
        assert!(Cpe::parse("cpe:/a:old:format").is_none());
    }

    #[test]
    fn platforms() {
        assert_eq!(platform_of("microsoft", "windows_10_22h2"), Some("windows"));
        assert_eq!(platform_of("siemens", "6bk1602-0aa12-0tp0"), None);
        assert_eq!(target_platform("android"), Target::Elsewhere);
        assert_eq!(target_platform("*"), Target::Any);
    }
}
