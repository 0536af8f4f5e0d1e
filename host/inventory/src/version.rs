//! Version ordering for software inventory and vulnerability ranges: split
//! on `.`, `-`, `_` and `+` (and where digits meet letters, so `2.8.123e`
//! and `rc1` split too); numeric chunks compare numerically, other chunks
//! lexically, ignoring case.
//!
//! Where the spec's rule says nothing, these choices make it a total order
//! that ranges can trust:
//! - a missing chunk counts as `0`, so `5.10` and `5.10.0` are the same
//!   release (a range ending before `5.10.0` does not contain `5.10`);
//! - pre-release words (`alpha`, `beta`, `rc`, `pre`, `preview`, `dev`, ...)
//!   sort before any number in the same place, so `2.15.0-rc1` < `2.15.0`
//!   and `1.0.rc1` < `1.0.1`; other words sort after numbers, so OpenSSL's
//!   `1.0.1a` > `1.0.1`;
//! - [`compare_versions`] breaks ties between versions of the same release
//!   (`1.01` and `1.1`, `5.10` and `5.10.0`) by their text, so only
//!   identical strings are equal; [`compare_release`] does not.

use std::cmp::Ordering;

const SEPARATORS: [char; 4] = ['.', '-', '_', '+'];

/// Words that mark a version before its release.
const PRE_RELEASE: [&str; 11] = [
    "alpha", "beta", "rc", "pre", "preview", "dev", "snapshot", "canary", "nightly", "insider",
    "eap",
];

/// Orders two version strings; see the module docs for the rule.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    compare_release(a, b).then_with(|| a.cmp(b))
}

/// Orders two versions as releases: `Equal` when every chunk compares
/// equal (`24.09` and `24.9`, `5.10` and `5.10.0`). Range checks use this.
pub fn compare_release(a: &str, b: &str) -> Ordering {
    let mut left = chunks(a);
    let mut right = chunks(b);
    loop {
        match (left.next(), right.next()) {
            (None, None) => return Ordering::Equal,
            (x, y) => match Chunk::of(x).cmp(&Chunk::of(y)) {
                Ordering::Equal => continue,
                unequal => return unequal,
            },
        }
    }
}

/// One chunk's place in the order: pre-release words, then numbers (a
/// missing chunk is the number 0), then other words.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Chunk<'a> {
    PreRelease(String),
    /// Digits without leading zeros: longer is larger, then digit by digit.
    Number(usize, &'a str),
    Word(String),
}

impl<'a> Chunk<'a> {
    fn of(chunk: Option<&'a str>) -> Chunk<'a> {
        let Some(chunk) = chunk else {
            return Chunk::Number(0, "");
        };
        if chunk.bytes().all(|b| b.is_ascii_digit()) {
            let digits = chunk.trim_start_matches('0');
            return Chunk::Number(digits.len(), digits);
        }
        let word = chunk.to_lowercase();
        if PRE_RELEASE.contains(&word.as_str()) {
            Chunk::PreRelease(word)
        } else {
            Chunk::Word(word)
        }
    }
}

/// The chunks of a version: separated by [`SEPARATORS`], and split where a
/// run of digits meets other characters.
fn chunks(version: &str) -> impl Iterator<Item = &str> {
    version
        .split(SEPARATORS)
        .filter(|c| !c.is_empty())
        .flat_map(|part| {
            let mut pieces = Vec::new();
            let mut start = 0;
            let bytes = part.as_bytes();
            for i in 1..bytes.len() {
                if bytes[i].is_ascii_digit() != bytes[i - 1].is_ascii_digit() {
                    pieces.push(&part[start..i]);
                    start = i;
                }
            }
            pieces.push(&part[start..]);
            pieces
        })
}

/// A text whose byte order is [`compare_release`]'s order, so that a
/// database can compare versions as plain strings (under a binary
/// collation): equal keys for the same release (`5.10` and `5.10.0`).
///
/// The chunks become pairs of (zeros before a non-zero chunk, that chunk):
/// where two versions first differ, a longer run of zeros means the chunk
/// after it comes later, which makes the version smaller when that chunk is
/// above zero (`1.0.1` < `1.1`) and larger when it is a pre-release word
/// (`2.0.0-beta` > `2.0-beta`). The end of a version sorts between the two,
/// as the zeros it stands for do.
pub fn release_key(version: &str) -> String {
    let mut key = String::with_capacity(version.len() * 2 + 1);
    let mut zeros = 0usize;
    for chunk in chunks(version) {
        let (class, tag, payload) = match Chunk::of(Some(chunk)) {
            Chunk::Number(0, _) => {
                zeros += 1;
                continue;
            }
            Chunk::PreRelease(word) => ('1', 'p', word),
            Chunk::Number(len, digits) => ('3', 'n', format!("{:03}{digits}", len.min(999))),
            Chunk::Word(word) => ('3', 'w', word),
        };
        let run = zeros.min(999);
        let run = if class == '1' { run } else { 999 - run };
        key.push(class);
        key.push_str(&format!("{run:03}"));
        key.push(tag);
        key.extend(payload.chars().filter(|c| *c > '\u{1}'));
        key.push('\u{1}');
        zeros = 0;
    }
    key.push('2');
    key
}

/// The newest of `versions` by [`compare_versions`].
pub fn newest<'a>(versions: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    versions.into_iter().max_by(|a, b| compare_versions(a, b))
}

/// The oldest of `versions` by [`compare_versions`].
pub fn oldest<'a>(versions: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    versions.into_iter().min_by(|a, b| compare_versions(a, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use Ordering::{Equal, Greater, Less};

    fn check(a: &str, b: &str, expected: Ordering) {
        assert_eq!(compare_versions(a, b), expected, "{a} vs {b}");
        assert_eq!(compare_versions(b, a), expected.reverse(), "{b} vs {a}");
    }

    #[test]
    fn real_world_versions() {
        for (a, b, expected) in [
            // Windows four-part builds.
            ("10.0.19045.3803", "10.0.19045.4046", Less),
            ("10.0.19045.4046", "10.0.22621.1", Less),
            ("6.1.7601.24545", "10.0.10240.16384", Less),
            // Numbers, not text: 10 > 9, 100 > 99.
            ("1.10.0", "1.9.9", Greater),
            ("128.0.6613.120", "128.0.6613.99", Greater),
            // Leading zeros compare numerically; the text breaks the tie.
            ("2024.01.05", "2024.1.5", Less),
            ("1.002", "1.3", Less),
            ("01.0", "1.0", Less),
            // Dates as versions.
            ("2023-12-31", "2024-01-01", Less),
            ("2024.12.1", "2024.2.28", Greater),
            // Pre-release and build tags.
            ("1.2.0-rc1", "1.2.0-rc2", Less),
            ("1.2.0-alpha", "1.2.0-beta", Less),
            ("1.0.rc1", "1.0.1", Less),
            ("2.4.1+build.7", "2.4.1+build.12", Less),
            ("1.0", "1.0.1", Less),
            ("2.15.0-rc1", "2.15.0", Less),
            ("1.0-beta", "1.0", Less),
            ("112.0.5615.121", "112.0.5615.49", Greater),
            // Letters after digits: a post-release (OpenSSL) unless a
            // pre-release word.
            ("1.0.1a", "1.0.1", Greater),
            ("1.0.1a", "1.0.1b", Less),
            ("2.8.123e", "2.8.123", Greater),
            ("3.12.0b1", "3.12.0", Greater),
            // The same release, spelled differently, still differs.
            ("5.10", "5.10.0", Less),
            // Separators are interchangeable; underscores too.
            ("7_0_3", "7.0.4", Less),
            ("23.01", "23.01", Equal),
            // Huge numbers beyond u64.
            (
                "1.123456789012345678901234567890",
                "1.99999999999999999999",
                Greater,
            ),
            // Empty and separator-only strings.
            ("", "0", Less),
            ("..", "1", Less),
        ] {
            check(a, b, expected);
        }
    }

    #[test]
    fn newest_and_oldest() {
        let versions = ["23.01", "9.20", "24.08", "19.00", "24.07"];
        assert_eq!(newest(versions), Some("24.08"));
        assert_eq!(oldest(versions), Some("9.20"));
        assert_eq!(newest(std::iter::empty()), None);
    }

    #[test]
    fn releases_ignore_spelling() {
        assert_eq!(compare_release("5.10", "5.10.0"), Equal);
        assert_eq!(compare_release("24.09", "24.9"), Equal);
        assert_eq!(compare_release("1.0-RC1", "1.0.rc.1"), Equal);
        assert_eq!(compare_release("", "0"), Equal);
    }

    #[test]
    fn rpm_vectors_on_plain_versions() {
        // rpm's own vectors (tests/fixtures/versions/rpmvercmp.csv)
        // where its rule and ours agree: digits and dots, no tilde, caret
        // or leading letters (rpm orders those by rules of its own).
        let path = format!(
            "{}/../../tests/fixtures/versions/rpmvercmp.csv",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).expect("fixture");
        let mut checked = 0;
        for line in text.lines().skip(1) {
            let cells: Vec<&str> = line.split(',').collect();
            let (a, b, expected) = (cells[0], cells[1], cells[2]);
            let plain =
                |v: &str| v.chars().all(|c| c.is_ascii_digit() || c == '.') && !v.is_empty();
            if !(plain(a) && plain(b)) {
                continue;
            }
            let expected = match expected {
                "-1" => Less,
                "1" => Greater,
                _ => Equal,
            };
            assert_eq!(compare_release(a, b), expected, "{a} vs {b}");
            checked += 1;
        }
        assert!(checked >= 10, "only {checked} vectors checked");
    }

    #[test]
    fn release_keys_of_real_versions() {
        let ordered = [
            "2.0-beta",
            "2.0.0-beta",
            "2.0",
            "2.0.0.0.1",
            "2.0.1",
            "2.0.1a",
            "2.1",
            "119.0.6045.200",
            "120",
            "120.0.6099.71",
        ];
        for pair in ordered.windows(2) {
            assert!(release_key(pair[0]) < release_key(pair[1]), "{pair:?}");
        }
        assert_eq!(release_key("5.10"), release_key("5.10.0"));
        assert_eq!(release_key("24.09"), release_key("24.9"));
    }

    fn version() -> impl Strategy<Value = String> {
        proptest::string::string_regex("([0-9a-c]|rc|beta)([0-9a-c.+_-]|rc|beta){0,8}")
            .expect("valid regex")
    }

    proptest! {
        #[test]
        fn equal_only_when_identical(a in version(), b in version()) {
            prop_assert_eq!(compare_versions(&a, &b) == Equal, a == b);
        }

        #[test]
        fn release_keys_sort_as_releases(a in version(), b in version()) {
            prop_assert_eq!(release_key(&a).cmp(&release_key(&b)), compare_release(&a, &b), "{} vs {}", a, b);
        }

        #[test]
        fn antisymmetric(a in version(), b in version()) {
            prop_assert_eq!(compare_versions(&a, &b), compare_versions(&b, &a).reverse());
        }

        #[test]
        fn transitive(a in version(), b in version(), c in version()) {
            // Every ordering of the three: x <= y and y <= z imply x <= z.
            for (x, y, z) in [(&a, &b, &c), (&a, &c, &b), (&b, &a, &c), (&b, &c, &a), (&c, &a, &b), (&c, &b, &a)] {
                if compare_versions(x, y) != Greater && compare_versions(y, z) != Greater {
                    prop_assert_ne!(compare_versions(x, z), Greater, "{} {} {}", x, y, z);
                }
            }
        }
    }
}
