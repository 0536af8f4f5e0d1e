//! Formatting and lints. The lints are the workspaces' `[workspace.lints]`;
//! here every warning is also an error.
//!
//! `cargo xtask test` lints while it builds: clippy's driver wraps rustc for
//! the workspace's own crates (`RUSTC_WORKSPACE_WRAPPER`, as `cargo clippy`
//! sets it), so one compilation gives both the lints and the binaries the
//! tests run, where `cargo clippy` and then `cargo test` compile every
//! dependency twice (once checked, once built). `cargo xtask lint` is the
//! plain `cargo clippy` of both workspaces, for linting without a build.

use crate::process;

/// `cargo fmt --check` of both workspaces.
pub fn fmt() -> Result<(), String> {
    process::run("cargo", &["fmt", "--all", "--check"], &[])?;
    process::run(
        "cargo",
        &[
            "fmt",
            "--all",
            "--check",
            "--manifest-path",
            "connectors/Cargo.toml",
        ],
        &[],
    )
}

/// The environment that makes a cargo build lint the workspace's crates as
/// it compiles them, warnings as errors.
pub fn while_building() -> Result<Vec<(String, String)>, String> {
    ensure_clippy()?;
    // The toolchain's driver itself, not rustup's proxy before each call.
    let driver = process::output("rustup", &["which", "clippy-driver"], &[])
        .map(|path| path.trim().to_string())
        .unwrap_or_else(|_| "clippy-driver".into());
    Ok(vec![
        ("RUSTC_WORKSPACE_WRAPPER".into(), driver),
        // `cargo clippy -- -D warnings` hands its arguments over so.
        (
            "CLIPPY_ARGS".into(),
            "-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__".into(),
        ),
    ])
}

/// `cargo clippy --all-targets` of the host's workspace.
pub fn clippy_host() -> Result<(), String> {
    ensure_clippy()?;
    process::run(
        "cargo",
        &[
            "clippy",
            "--quiet",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )
}

fn ensure_clippy() -> Result<(), String> {
    if process::output("cargo", &["clippy", "--version"], &[]).is_ok() {
        return Ok(());
    }
    println!("== adding the clippy component");
    process::run("rustup", &["component", "add", "clippy"], &[])
}

/// `env` as `process::run` takes it.
pub fn pairs(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}
