//! The host's sources as files, for the tests that read its structure
//! (`layers`, `module_circles`, `table_owners`).

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    collect(dir, &mut out);
    out.sort();
    out
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The folder of every host crate: `host/` (the binary's crate) and each
/// folder under it with a manifest.
pub fn host_crate_dirs(root: &Path) -> Vec<PathBuf> {
    let host = root.join("host");
    let mut dirs = vec![host.clone()];
    for entry in std::fs::read_dir(&host).expect("host/ readable") {
        let path = entry.expect("an entry").path();
        if path.join("Cargo.toml").exists() {
            dirs.push(path);
        }
    }
    dirs.sort();
    dirs
}
