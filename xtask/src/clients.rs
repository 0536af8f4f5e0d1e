//! Clients generated from the service's own OpenAPI documents, driven
//! against the running service (`xtask/client_test.py` drives the run):
//! openapi-python-client and openapi-generator are installed into
//! `target/client-venv` from PyPI on first use, and openapi-typescript,
//! openapi-fetch and TypeScript into `xtask/node-client` from npm, pinned
//! so every run generates the same code.

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

/// The TypeScript client's packages (openapi-typescript, openapi-fetch,
/// TypeScript 5), pinned by its package-lock.json.
const NODE_CLIENT: &str = "xtask/node-client";

/// Installs the generators into their venv unless they are there, and the
/// TypeScript client's packages from the npm registry. Returns whether
/// they are usable; fails only when the client test is required
/// (`CAIRN_REQUIRE_CLIENTS=1`). Mostly downloads, so `test` runs it
/// alongside a build.
pub fn install() -> Result<bool, String> {
    let python = process::python_tools(
        VENV,
        &GENERATORS,
        "openapi-generator-cli",
        "CAIRN_REQUIRE_CLIENTS",
        "the generated-client test",
    )?;
    if !python {
        return Ok(false);
    }
    if Path::new(NODE_CLIENT)
        .join("node_modules/.bin/tsc")
        .is_file()
    {
        return Ok(true);
    }
    let args = ["ci", "--no-audit", "--no-fund", "--prefix", NODE_CLIENT];
    match process::run("npm", &args, &[]) {
        Ok(()) => Ok(true),
        Err(err) if std::env::var("CAIRN_REQUIRE_CLIENTS").is_ok_and(|v| v == "1") => Err(format!(
            "the TypeScript client's packages could not be installed: {err}"
        )),
        Err(err) => {
            println!("== SKIPPED the generated-client test: npm ci failed ({err})");
            Ok(false)
        }
    }
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
