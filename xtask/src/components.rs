//! Building the WebAssembly components (connectors and CSV providers).

use std::path::{Path, PathBuf};

use crate::process;

pub const TARGET: &str = "wasm32-wasip2";

/// Every component crate: a folder with a Cargo.toml under `connectors/` or
/// `csv-providers/`.
pub fn crates() -> Vec<PathBuf> {
    let mut found = vec![];
    for dir in ["connectors", "csv-providers"] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            if entry.path().join("Cargo.toml").is_file() {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    found
}

/// Builds every component with `profile` (`debug` or `release`), adding the
/// wasm target first if it is missing. Returns the built `.wasm` files.
pub fn build_all(profile: &str) -> Result<Vec<PathBuf>, String> {
    let crates = crates();
    if crates.is_empty() {
        return Ok(vec![]);
    }
    ensure_target()?;
    let mut built = vec![];
    for krate in &crates {
        let manifest = krate.join("Cargo.toml");
        let mut args = vec![
            "build",
            "--manifest-path",
            manifest.to_str().unwrap_or_default(),
            "--target",
            TARGET,
            "--target-dir",
            "target/components",
        ];
        if profile == "release" {
            args.push("--release");
        }
        println!("== building component {}", krate.display());
        process::run("cargo", &args, &[])?;
        built.extend(wasm_files(
            &Path::new("target/components").join(TARGET).join(profile),
        ));
    }
    Ok(built)
}

fn ensure_target() -> Result<(), String> {
    let installed =
        process::output("rustup", &["target", "list", "--installed"], &[]).unwrap_or_default();
    if installed.lines().any(|l| l.trim() == TARGET) {
        return Ok(());
    }
    println!("== adding the {TARGET} target");
    process::run("rustup", &["target", "add", TARGET], &[])
}

fn wasm_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the SDK's and each component crate's unit tests natively (mapping
/// logic is plain Rust; only the host calls need WebAssembly).
pub fn test_all() -> Result<(), String> {
    println!("== unit tests of the SDK");
    unit_tests("sdk/Cargo.toml", &["--features", "connector"])?;
    for krate in crates() {
        println!("== unit tests of component {}", krate.display());
        unit_tests(krate.join("Cargo.toml").to_str().unwrap_or_default(), &[])?;
    }
    Ok(())
}

/// `cargo test` of the crate at `manifest`, natively, with `extra` arguments.
fn unit_tests(manifest: &str, extra: &[&str]) -> Result<(), String> {
    let mut args = vec![
        "test",
        "--manifest-path",
        manifest,
        "--target-dir",
        "target/components-native",
    ];
    args.extend(extra);
    process::run("cargo", &args, &[])
}
