//! Version ordering for software inventory: split on `.`, `-`, `_` and `+`;
//! numeric chunks compare numerically, other chunks lexically.
//!
//! Where the rule says nothing, these choices make it a total order:
//! - a numeric chunk sorts after a text chunk in the same place, so `1.0.1`
//!   is newer than `1.0.rc1`;
//! - when one version runs out of chunks, it sorts first (`1.0` < `1.0.1`,
//!   and also `1.0` < `1.0-beta`: the rule has no notion of pre-releases);
//! - versions whose chunks all compare equal (`1.01` and `1.1`, `1-0` and
//!   `1.0`) are ordered by their text, so only identical strings are equal.

use std::cmp::Ordering;

const SEPARATORS: [char; 4] = ['.', '-', '_', '+'];

/// Orders two version strings; see the module docs for the rule.
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    let mut left = chunks(a);
    let mut right = chunks(b);
    loop {
        match (left.next(), right.next()) {
            (None, None) => return a.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) => match compare_chunks(x, y) {
                Ordering::Equal => continue,
                unequal => return unequal,
            },
        }
    }
}

fn chunks(version: &str) -> impl Iterator<Item = &str> {
    version.split(SEPARATORS).filter(|c| !c.is_empty())
}

fn is_numeric(chunk: &str) -> bool {
    chunk.bytes().all(|b| b.is_ascii_digit())
}

fn compare_chunks(x: &str, y: &str) -> Ordering {
    match (is_numeric(x), is_numeric(y)) {
        (true, true) => {
            // Numerically, for numbers of any length: without leading zeros,
            // a longer number is larger; equal lengths compare digit by digit.
            let x = x.trim_start_matches('0');
            let y = y.trim_start_matches('0');
            x.len().cmp(&y.len()).then_with(|| x.cmp(y))
        }
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => x.cmp(y),
    }
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

    fn version() -> impl Strategy<Value = String> {
        proptest::string::string_regex("[0-9a-c.+_-]{0,10}").expect("valid regex")
    }

    proptest! {
        #[test]
        fn equal_only_when_identical(a in version(), b in version()) {
            prop_assert_eq!(compare_versions(&a, &b) == Equal, a == b);
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
