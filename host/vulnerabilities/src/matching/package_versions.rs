//! Version ordering of Linux distribution packages, each family by its own
//! documented rule (the inventory's release ordering would get epochs,
//! `~` and revisions wrong). Pure.
//!
//! - dpkg (Debian, Ubuntu): `[epoch:]upstream[-revision]`, Debian Policy
//!   5.6.12: epochs numerically; upstream and revision alternately by
//!   non-digit runs (`~` before everything, even the end; letters before
//!   other characters) and digit runs (numerically).
//! - rpm (Rocky, Alma, RHEL): `[epoch:]version[-release]`, rpmvercmp:
//!   alphanumeric segments, numbers above letters, `~` before everything
//!   and `^` after the end but before anything else.
//! - apk (Alpine): `numbers[letter][_suffix[n]]...[-rN]`: numbers, then
//!   the letter, then suffixes (`_alpha` < `_beta` < `_pre` < `_rc` < none
//!   < `_cvs` < `_svn` < `_git` < `_hg` < `_p`), then the revision.

use std::cmp::Ordering;

/// A packaging family whose versions order alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    Dpkg,
    Rpm,
    Apk,
}

impl Family {
    pub fn compare(self, a: &str, b: &str) -> Ordering {
        match self {
            Family::Dpkg => dpkg(a, b),
            Family::Rpm => rpm_evr(a, b),
            Family::Apk => apk(a, b),
        }
    }
}

/// `[epoch:]version[-revision]` → (epoch, version, revision), as dpkg and
/// rpm both write them; a missing or unreadable epoch is 0.
fn split_evr(version: &str) -> (u64, &str, Option<&str>) {
    let version = version.trim();
    let (epoch, rest) = match version.split_once(':') {
        Some((epoch, rest)) if epoch.bytes().all(|b| b.is_ascii_digit()) => {
            (epoch.parse().unwrap_or(0), rest)
        }
        _ => (0, version),
    };
    match rest.rsplit_once('-') {
        Some((upstream, revision)) => (epoch, upstream, Some(revision)),
        None => (epoch, rest, None),
    }
}

/// Compares two runs of digits numerically, whatever their length.
fn digits_cmp(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// dpkg's order.
pub fn dpkg(a: &str, b: &str) -> Ordering {
    let ((epoch_a, up_a, rev_a), (epoch_b, up_b, rev_b)) = (split_evr(a), split_evr(b));
    // A missing revision compares as an empty one.
    epoch_a
        .cmp(&epoch_b)
        .then_with(|| dpkg_part(up_a, up_b))
        .then_with(|| dpkg_part(rev_a.unwrap_or(""), rev_b.unwrap_or("")))
}

/// The weight of one non-digit character in dpkg's order.
fn dpkg_weight(c: Option<u8>) -> i32 {
    match c {
        None => 0,
        Some(b'~') => -1,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => c as i32,
        Some(c) => c as i32 + 256,
    }
}

fn dpkg_part(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        // The non-digit run, character by character.
        while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit()) {
            let wa = dpkg_weight(a.get(i).copied().filter(|c| !c.is_ascii_digit()));
            let wb = dpkg_weight(b.get(j).copied().filter(|c| !c.is_ascii_digit()));
            if wa != wb {
                return wa.cmp(&wb);
            }
            if i < a.len() && !a[i].is_ascii_digit() {
                i += 1;
            }
            if j < b.len() && !b[j].is_ascii_digit() {
                j += 1;
            }
        }
        let start_a = i;
        while i < a.len() && a[i].is_ascii_digit() {
            i += 1;
        }
        let start_b = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        let run = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        match digits_cmp(&run(&a[start_a..i]), &run(&b[start_b..j])) {
            Ordering::Equal => {}
            unequal => return unequal,
        }
    }
    Ordering::Equal
}

/// rpm's order of `[epoch:]version[-release]`; a release missing on one
/// side is not compared (as rpm does for a dependency without one).
pub fn rpm_evr(a: &str, b: &str) -> Ordering {
    let ((epoch_a, ver_a, rel_a), (epoch_b, ver_b, rel_b)) = (split_evr(a), split_evr(b));
    epoch_a
        .cmp(&epoch_b)
        .then_with(|| rpmvercmp(ver_a, ver_b))
        .then_with(|| match (rel_a, rel_b) {
            (Some(x), Some(y)) => rpmvercmp(x, y),
            _ => Ordering::Equal,
        })
}

/// rpm's `rpmvercmp` on one version or release string.
pub fn rpmvercmp(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    let separator = |c: u8| !c.is_ascii_alphanumeric() && c != b'~' && c != b'^';
    loop {
        while i < a.len() && separator(a[i]) {
            i += 1;
        }
        while j < b.len() && separator(b[j]) {
            j += 1;
        }
        let (ca, cb) = (a.get(i).copied(), b.get(j).copied());
        if ca == Some(b'~') || cb == Some(b'~') {
            if ca != Some(b'~') {
                return Ordering::Greater;
            }
            if cb != Some(b'~') {
                return Ordering::Less;
            }
            i += 1;
            j += 1;
            continue;
        }
        if ca == Some(b'^') || cb == Some(b'^') {
            if ca.is_none() {
                return Ordering::Less;
            }
            if cb.is_none() {
                return Ordering::Greater;
            }
            if ca != Some(b'^') {
                return Ordering::Greater;
            }
            if cb != Some(b'^') {
                return Ordering::Less;
            }
            i += 1;
            j += 1;
            continue;
        }
        let (Some(first), Some(_)) = (ca, cb) else {
            break;
        };
        let numeric = first.is_ascii_digit();
        let same_kind = |c: u8| {
            if numeric {
                c.is_ascii_digit()
            } else {
                c.is_ascii_alphabetic()
            }
        };
        let (start_a, start_b) = (i, j);
        while i < a.len() && same_kind(a[i]) {
            i += 1;
        }
        while j < b.len() && same_kind(b[j]) {
            j += 1;
        }
        if j == start_b {
            // Segments of different kinds: a number is newer.
            return if numeric {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        let (seg_a, seg_b) = (
            std::str::from_utf8(&a[start_a..i]).unwrap_or(""),
            std::str::from_utf8(&b[start_b..j]).unwrap_or(""),
        );
        let order = if numeric {
            digits_cmp(seg_a, seg_b)
        } else {
            seg_a.cmp(seg_b)
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    match (i >= a.len(), j >= b.len()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        _ => Ordering::Greater,
    }
}

/// apk's suffixes in order; pre-releases below "no suffix" (rank 4).
const APK_SUFFIXES: [&str; 9] = ["alpha", "beta", "pre", "rc", "cvs", "svn", "git", "hg", "p"];
const APK_NO_SUFFIX: usize = 4;

/// An apk version read into its ordered parts.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct ApkVersion {
    numbers: Vec<String>,
    letter: Option<u8>,
    suffixes: Vec<(usize, u64)>,
    revision: u64,
}

fn apk_parse(version: &str) -> ApkVersion {
    let (main, revision) = match version.rsplit_once("-r") {
        Some((main, rev)) if rev.bytes().all(|b| b.is_ascii_digit()) && !rev.is_empty() => {
            (main, rev.parse().unwrap_or(0))
        }
        _ => (version, 0),
    };
    let mut parts = main.split('_');
    let head = parts.next().unwrap_or("");
    let (numbers_text, letter) = match head.as_bytes().last() {
        Some(c) if c.is_ascii_alphabetic() => (&head[..head.len() - 1], Some(*c)),
        _ => (head, None),
    };
    let numbers = numbers_text.split('.').map(str::to_string).collect();
    let suffixes = parts
        .map(|suffix| {
            let name_end = suffix
                .find(|c: char| c.is_ascii_digit())
                .unwrap_or(suffix.len());
            let rank = APK_SUFFIXES
                .iter()
                .position(|s| *s == &suffix[..name_end])
                // An unknown suffix sorts with the post-releases.
                .map(|p| if p >= APK_NO_SUFFIX { p + 1 } else { p })
                .unwrap_or(APK_SUFFIXES.len() + 1);
            (rank, suffix[name_end..].parse().unwrap_or(0))
        })
        .collect();
    ApkVersion {
        numbers,
        letter,
        suffixes,
        revision,
    }
}

/// apk's order.
pub fn apk(a: &str, b: &str) -> Ordering {
    let (a, b) = (apk_parse(a.trim()), apk_parse(b.trim()));
    let longest = a.numbers.len().max(b.numbers.len());
    for k in 0..longest {
        match (a.numbers.get(k), b.numbers.get(k)) {
            (Some(x), Some(y)) => match digits_cmp(x, y) {
                Ordering::Equal => continue,
                unequal => return unequal,
            },
            // More components is newer: 1.2.1 > 1.2.
            (Some(_), None) => return Ordering::Greater,
            (None, Some(_)) => return Ordering::Less,
            (None, None) => unreachable!(),
        }
    }
    if a.letter != b.letter {
        return a.letter.cmp(&b.letter);
    }
    let longest = a.suffixes.len().max(b.suffixes.len());
    for k in 0..longest {
        let none = (APK_NO_SUFFIX, 0);
        let x = a.suffixes.get(k).copied().unwrap_or(none);
        let y = b.suffixes.get(k).copied().unwrap_or(none);
        match x.cmp(&y) {
            Ordering::Equal => continue,
            unequal => return unequal,
        }
    }
    a.revision.cmp(&b.revision)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::{Equal, Greater, Less};

    fn check(family: Family, cases: &[(&str, &str, Ordering)]) {
        for &(a, b, expected) in cases {
            assert_eq!(family.compare(a, b), expected, "{family:?}: {a} vs {b}");
            assert_eq!(
                family.compare(b, a),
                expected.reverse(),
                "{family:?}: {b} vs {a}"
            );
        }
    }

    #[test]
    fn dpkg_follows_debian_policy() {
        // Written from Debian Policy 5.6.12 and dpkg's documented rules.
        check(
            Family::Dpkg,
            &[
                ("1.0", "1.0", Equal),
                ("1.0-1", "1.0-2", Less),
                ("1:1.0", "2.0", Greater),
                ("0:1.0", "1.0", Equal),
                ("1.0~rc1", "1.0", Less),
                ("1.0~rc1-1", "1.0-1", Less),
                ("1.0~~", "1.0~", Less),
                ("1.0~", "1.0", Less),
                ("1.0", "1.0a", Less),
                ("1.0a", "1.0+", Less),
                ("1.0.1", "1.0a", Greater),
                ("2.36-9", "2.36-9+deb12u4", Less),
                ("2.36-9+deb12u4", "2.36-9+deb12u10", Less),
                ("1.9.13p3-1+deb12u1", "1.9.13p3-1", Greater),
                ("1.9.9-1ubuntu2.4", "1.9.9-1ubuntu2.10", Less),
                ("1.9.9-1ubuntu2", "1.9.9-1", Greater),
                // Ubuntu's Firefox: `build` is a word after the number.
                (
                    "100.0+build2-0ubuntu0.22.04.1",
                    "101.0+build1-0ubuntu0.22.04.1",
                    Less,
                ),
                (
                    "100.0+build2-0ubuntu0.22.04.1",
                    "100.0.1+build1-0ubuntu0.22.04.1",
                    Less,
                ),
                ("3.0.11-1~deb12u2", "3.0.11-1", Less),
                ("3.0.2-0ubuntu1.10", "3.0.2-0ubuntu1.15", Less),
                ("10", "9", Greater),
                ("1.001", "1.1", Equal),
            ],
        );
    }

    #[test]
    fn rpm_matches_rpms_own_vectors() {
        let path = format!(
            "{}/../../tests/fixtures/versions/rpmvercmp.csv",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(path).expect("fixture");
        let mut checked = 0;
        for line in text.lines().skip(1).filter(|l| !l.trim().is_empty()) {
            let cells: Vec<&str> = line.split(',').collect();
            let expected = match cells[2].trim() {
                "-1" => Less,
                "0" => Equal,
                _ => Greater,
            };
            assert_eq!(
                rpmvercmp(cells[0], cells[1]),
                expected,
                "{} vs {}",
                cells[0],
                cells[1]
            );
            checked += 1;
        }
        assert!(checked >= 80, "{checked} vectors");
        check(
            Family::Rpm,
            &[
                ("1:1.0-1.el9", "2.0-1.el9", Greater),
                ("1.2.3-4.el9_3", "1.2.3-4.el9_3.1", Less),
                ("1.2.3-4.el9", "1.2.3", Equal),
                ("9.0.2-1.el9", "9.0.10-1.el9", Less),
            ],
        );
    }

    #[test]
    fn apk_follows_apk_tools() {
        // Written from apk-tools' documented version format.
        check(
            Family::Apk,
            &[
                ("1.36.1-r0", "1.36.1-r1", Less),
                ("1.36.1-r15", "1.36.1-r2", Greater),
                ("1.2", "1.2.1", Less),
                ("1.2.10", "1.2.9", Greater),
                ("1.0_rc1", "1.0", Less),
                ("1.0_alpha1", "1.0_beta1", Less),
                ("1.0_p1", "1.0", Greater),
                ("1.0_git20240101", "1.0", Greater),
                ("1.0a", "1.0", Greater),
                ("1.0a", "1.0b", Less),
                ("3.1.4-r5", "3.1.4-r5", Equal),
                ("1.0_rc2-r3", "1.0-r0", Less),
            ],
        );
    }
}
