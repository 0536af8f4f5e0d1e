//! Components the tests load: test components under `tests/components/` and
//! the repository's connectors under `connectors/`, built for wasm32-wasip2
//! on first use (`cargo xtask test` has usually built them already, so the
//! build is a no-op).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Builds the component crate `<folder>/<name>` into `<target>` and returns
/// its `.wasm` file.
fn build(folder: &str, name: &str, target: &str) -> PathBuf {
    static BUILD: Mutex<()> = Mutex::new(());
    let _one_at_a_time = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repository root")
        .to_path_buf();
    let target_dir = root.join(target);
    let manifest = root.join(folder).join(name).join("Cargo.toml");
    let status = std::process::Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "--release",
            "--target",
            "wasm32-wasip2",
            "--manifest-path",
        ])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(&target_dir)
        .status()
        .expect("run cargo");
    assert!(
        status.success(),
        "building {folder}/{name} failed (is the wasm32-wasip2 target installed?)"
    );
    // Cargo names the artifact after the crate, `-` written as `_`.
    target_dir
        .join("wasm32-wasip2/release")
        .join(format!("{}.wasm", name.replace('-', "_")))
}

/// The `.wasm` file of test component `name` (`tests/components/`).
pub fn test_component(name: &str) -> PathBuf {
    build("tests/components", name, "target/test-components")
}

/// The `.wasm` file of the repository's connector `name` (`connectors/`).
pub fn connector(name: &str) -> PathBuf {
    build("connectors", name, "target/components")
}

/// The `.wasm` file of the repository's CSV provider `name` (`csv-providers/`).
pub fn csv_provider(name: &str) -> PathBuf {
    build("csv-providers", name, "target/components")
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
        let built = if let Some(connector_name) = name.strip_prefix("connectors/") {
            connector(connector_name)
        } else if let Some(provider_name) = name.strip_prefix("csv-providers/") {
            csv_provider(provider_name)
        } else {
            test_component(name)
        };
        let file = name.rsplit('/').next().unwrap_or(name);
        std::fs::copy(built, dir.join(format!("{file}.wasm"))).expect("copy component");
    }
    for (file, bytes) in extra {
        std::fs::write(dir.join(file), bytes).expect("write extra file");
    }
    dir
}
