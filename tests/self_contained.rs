//! A clone of this repository builds and tests with nothing beside it. This
//! reads every source, test and build file and fails on a relative path that
//! climbs out of the repository, the way `../../shared/fixtures/...` once
//! did: a file every test needs that only its author's machine had.
//!
//! A relative path is resolved from the directory of the file that names it
//! (`include_str!`, `path = ...` in a manifest) and from the manifest
//! directory of the crate that holds it (`env!("CARGO_MANIFEST_DIR")`
//! joins, `wit_bindgen`'s `path`). It is refused when it leaves the
//! repository from one of them, unless from the other it names something
//! that is there (up to a `{placeholder}` or a `*`).

use std::path::{Component, Path, PathBuf};

/// The extensions of files that cargo, rustc, the scripts or the tests read.
const CHECKED: &[&str] = &["rs", "toml", "py", "sh", "wit", "json", "yml", "yaml"];

/// Folders that hold no source of ours.
const SKIPPED: &[&str] = &["target", ".git", "data", "node_modules"];

/// This file, whose examples climb out on purpose.
const THIS_FILE: &str = "tests/self_contained.rs";

fn checked_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("readable directory")
        .flatten()
    {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !SKIPPED.contains(&name.as_ref()) {
                checked_files(&path, out);
            }
        } else if name == "run"
            || path
                .extension()
                .is_some_and(|e| CHECKED.contains(&e.to_string_lossy().as_ref()))
        {
            out.push(path);
        }
    }
}

/// Every run of `../` in `line` with the path text that follows it.
fn climbing_paths(line: &str) -> Vec<&str> {
    let mut found = vec![];
    let mut rest = line;
    while let Some(at) = rest.find("../") {
        // The whole run of `../` (and `./`) segments and the name after it.
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_alphanumeric() || "./_-{}+".contains(c)))
            .unwrap_or(tail.len());
        found.push(&tail[..end]);
        rest = &tail[end.max(3)..];
    }
    found
}

/// `base` joined with `relative`, normalised lexically; `None` when it climbs
/// above `root`.
fn resolve_within(root: &Path, base: &Path, relative: &str) -> Option<PathBuf> {
    let mut path = base.strip_prefix(root).ok()?.to_path_buf();
    for component in Path::new(relative).components() {
        match component {
            // Above `root`: out.
            Component::ParentDir => path.pop().then_some(())?,
            Component::Normal(part) => path.push(part),
            _ => {}
        }
    }
    Some(path)
}

/// The directory of the nearest `Cargo.toml` at or above `file`'s folder.
fn manifest_dir(root: &Path, file: &Path) -> PathBuf {
    let mut dir = file.parent().unwrap_or(root).to_path_buf();
    while dir.starts_with(root) {
        if dir.join("Cargo.toml").is_file() {
            return dir;
        }
        if !dir.pop() {
            break;
        }
    }
    root.to_path_buf()
}

/// A path-traversal sample of the upload and download tests
/// (`../../etc/passwd`): a hostile input, not a file anything reads.
fn is_attack_sample(path: &str) -> bool {
    let target = path.trim_start_matches("../");
    ["etc/", "proc/"]
        .iter()
        .any(|system| target.starts_with(system))
}

/// Whether `resolved` (inside `root`) names something that is there, up to
/// its first segment with a `{placeholder}` or a `*`.
fn is_there(root: &Path, resolved: &Path) -> bool {
    // Build output (`target/book`, which a machine without mdBook never
    // writes) is inside the clone whether or not it was made yet.
    if resolved.starts_with("target") {
        return true;
    }
    let mut known = root.to_path_buf();
    for part in resolved.components() {
        let text = part.as_os_str().to_string_lossy();
        if text.contains(['{', '*']) {
            break;
        }
        known.push(part);
    }
    known.exists()
}

/// The paths in `text` (of `file`) that leave `root`.
fn escaping_paths(root: &Path, file: &Path, text: &str) -> Vec<(usize, String)> {
    let bases = [
        file.parent().unwrap_or(root).to_path_buf(),
        manifest_dir(root, file),
    ];
    let mut found = vec![];
    for (number, line) in text.lines().enumerate() {
        for path in climbing_paths(line) {
            if is_attack_sample(path) {
                continue;
            }
            let resolved: Vec<Option<PathBuf>> = bases
                .iter()
                .map(|base| resolve_within(root, base, path))
                .collect();
            let leaves = resolved.iter().any(Option::is_none);
            let found_inside = resolved.iter().flatten().any(|r| is_there(root, r));
            if leaves && !found_inside {
                found.push((number + 1, path.to_string()));
            }
        }
    }
    found
}

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the repository")
        .to_path_buf()
}

#[test]
fn no_source_test_or_build_file_names_a_path_outside_the_repository() {
    let root = repository_root();
    let mut files = vec![];
    checked_files(&root, &mut files);
    assert!(files.len() > 100, "found the repository's files");
    let mut found = vec![];
    for file in &files {
        let Ok(text) = std::fs::read_to_string(file) else {
            continue;
        };
        let relative = file.strip_prefix(&root).unwrap().display().to_string();
        if relative == THIS_FILE {
            continue;
        }
        for (line, path) in escaping_paths(&root, file, &text) {
            found.push(format!("{relative}:{line}: {path}"));
        }
    }
    assert!(
        found.is_empty(),
        "these paths leave the repository, so a clone alone cannot build or test:\n{}",
        found.join("\n")
    );
}

/// The check itself: a path that leaves the repository is caught, one that
/// stays inside it is not, from a crate's source and from its manifest.
#[test]
fn the_check_tells_a_path_that_leaves_from_one_that_stays() {
    let root = repository_root();
    let mapping = root.join("connectors/psa/src/mapping.rs");
    let cases: &[(&Path, &str, bool)] = &[
        (
            &mapping,
            r#"include_str!("../../../../shared/fixtures/psa/connectwise_boards.json")"#,
            true,
        ),
        (
            &mapping,
            r#"include_str!("../../../tests/fixtures/psa/connectwise_boards.json")"#,
            false,
        ),
        (
            &root.join("tests/support/fake_nvd.rs"),
            r#"Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures")"#,
            true,
        ),
        (
            &root.join("tests/support/fake_nvd.rs"),
            r#"Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/src")"#,
            false,
        ),
        (
            &root.join("connectors/rmm/Cargo.toml"),
            r#"cairn-sdk = { path = "../../sdk" }"#,
            false,
        ),
        (
            &root.join("connectors/rmm/Cargo.toml"),
            r#"cairn-sdk = { path = "../../../sdk" }"#,
            true,
        ),
        // Inside from the file's folder, but what is there is not.
        (
            &root.join("tests/support/fake_nvd.rs"),
            r#"Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures")"#,
            true,
        ),
        (
            &root.join("host/core/src/uploads/mod.rs"),
            r#"("../../etc/passwd.pdf", "traversal")"#,
            false,
        ),
    ];
    for (file, line, leaves) in cases {
        let found = escaping_paths(&root, file, line);
        assert_eq!(!found.is_empty(), *leaves, "{line} in {}", file.display());
    }
}
