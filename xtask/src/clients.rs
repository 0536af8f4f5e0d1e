//! Clients generated from the service's own OpenAPI documents, driven
//! against the running service (`xtask/client_test.py` drives the run):
//! openapi-python-client and openapi-generator are installed into
//! `target/client-venv` from PyPI on first use, pinned so every run
//! generates the same code.

use std::path::Path;

use super::process;

/// The generators, and what the generated Python client imports (httpx
/// and attrs come with openapi-python-client; dateutil does not).
const GENERATORS: [&str; 3] = [
    "openapi-python-client==0.29.1",
    "openapi-generator-cli==7.26.0",
    "python-dateutil==2.9.0.post0",
];
const VENV: &str = "target/client-venv";

/// Installs the generators into their venv unless they are there. Returns
/// whether they are usable; fails only when the client test is required
/// (`CAIRN_REQUIRE_CLIENTS=1`). Mostly downloads, so `test` runs it
/// alongside a build.
pub fn install() -> Result<bool, String> {
    process::python_tools(
        VENV,
        &GENERATORS,
        "openapi-generator-cli",
        "CAIRN_REQUIRE_CLIENTS",
        "the generated-client test",
    )
}

/// Generates both clients from the service binary built with `env` and
/// drives the service through them; the run's output goes to `log`.
pub fn run(env: &[(String, String)], log: Option<&Path>) -> Result<(), String> {
    if !install()? {
        return Ok(());
    }
    crate::tests::build_server(env)?;
    let cache = std::env::current_dir()
        .map(|dir| dir.join(crate::tests::PLUGIN_CACHE))
        .map_err(|e| e.to_string())?;
    // The venv's Python: the generated client's imports are installed there.
    let python = format!("{VENV}/bin/python");
    process::run_logged(
        &python,
        &[
            "xtask/client_test.py",
            VENV,
            crate::tests::SERVER_BINARY,
            crate::components::INSTALL_DIR,
        ],
        &[("CAIRN_PLUGIN_CACHE_DIR", &cache.to_string_lossy())],
        log,
    )
}
