//! Components the tests load: test components under `tests/components/` and
//! the repository's connectors and CSV providers, all crates of the one
//! components workspace (`connectors/Cargo.toml`).
//!
//! `cargo xtask test` builds every component before the tests run and names
//! the folder in `CAIRN_TEST_COMPONENTS`; a test run without it (`cargo test`
//! by hand) builds each component it needs once per process.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Set by `cargo xtask test`: the folder holding every built component.
const BUILT_ENV: &str = "CAIRN_TEST_COMPONENTS";

/// The `.wasm` file of the components workspace's crate `name` (a
/// connector, CSV provider or test component), built for wasm32-wasip2 in
/// release.
pub fn built(name: &str) -> PathBuf {
    // Cargo names the artifact after the crate, `-` written as `_`.
    let file = format!("{}.wasm", name.replace('-', "_"));
    if let Some(dir) = std::env::var_os(BUILT_ENV) {
        let path = Path::new(&dir).join(&file);
        assert!(
            path.is_file(),
            "{} is missing from {BUILT_ENV}",
            path.display()
        );
        return path;
    }
    static BUILT: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repository root")
        .to_path_buf();
    let target_dir = root.join("target/wasm");
    if !built.get_or_insert_default().contains(name) {
        let status = std::process::Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "--release",
                "--target",
                "wasm32-wasip2",
                "--manifest-path",
            ])
            .arg(root.join("connectors/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target_dir)
            .args(["-p", name])
            .status()
            .expect("run cargo");
        assert!(
            status.success(),
            "building component {name} failed (is the wasm32-wasip2 target installed?)"
        );
        built.get_or_insert_default().insert(name.to_string());
    }
    target_dir.join("wasm32-wasip2/release").join(file)
}

/// A fresh directory holding the given components (and any extra files).
/// `connectors/<name>` is one of the repository's connectors,
/// `csv-providers/<name>` one of its CSV providers; a bare name is a test
/// component.
pub fn connectors_dir(components: &[&str], extra: &[(&str, &[u8])]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "cairn-connectors-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).expect("connectors dir");
    for name in components {
        // The folder (`connectors/`, `csv-providers/` or none for a test
        // component) only says where the crate lives; its name is the crate's.
        let file = name.rsplit('/').next().unwrap_or(name);
        std::fs::copy(built(file), dir.join(format!("{file}.wasm"))).expect("copy component");
    }
    for (file, bytes) in extra {
        std::fs::write(dir.join(file), bytes).expect("write extra file");
    }
    dir
}

/// Every connector and CSV provider the repository ships.
pub const SHIPPED: [&str; 16] = [
    "connectors/abuseipdb",
    "connectors/directory",
    "connectors/edr",
    "connectors/mdm",
    "connectors/ninjaone",
    "connectors/payments",
    "connectors/psa",
    "connectors/qualys",
    "connectors/rmm",
    "connectors/tenable",
    "connectors/virustotal",
    "csv-providers/asset-register",
    "csv-providers/badge-roster",
    "csv-providers/intune-discovered-apps",
    "csv-providers/nessus-findings",
    "csv-providers/software-inventory",
];

/// A fresh directory holding every shipped component, as an operator's
/// full install.
pub fn all_connectors_dir() -> PathBuf {
    connectors_dir(&SHIPPED, &[])
}
