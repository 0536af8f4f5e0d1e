//! Schema-driven fuzzing of both APIs with schemathesis (`xtask/fuzz.py`
//! drives the run): installed into `target/fuzz-venv` from PyPI on first
//! use, pinned so that every run generates the same kinds of cases.

use std::path::Path;

use super::process;

const SCHEMATHESIS: &str = "schemathesis==4.32.5";
const VENV: &str = "target/fuzz-venv";
/// Cases per operation and phase: enough to reach every documented status,
/// few enough to keep the run (about 20,000 cases) near two and a half
/// minutes on two idle cores.
const EXAMPLES: &str = "20";

/// Installs schemathesis into its venv unless it is there. Returns whether
/// it is usable; fails only when fuzzing is required (`CAIRN_REQUIRE_FUZZ=1`).
/// Mostly downloads, so `test` runs it alongside a build.
pub fn install() -> Result<bool, String> {
    process::python_tools(
        VENV,
        &[SCHEMATHESIS],
        "schemathesis",
        "CAIRN_REQUIRE_FUZZ",
        "fuzzing",
    )
}

fn schemathesis() -> String {
    format!("{VENV}/bin/schemathesis")
}

/// Fuzzes the service binary built with `env` (that of the tests' build),
/// installing schemathesis first if [`install`] has not; the run's output
/// goes to `log` when one is given.
pub fn run(env: &[(String, String)], log: Option<&Path>) -> Result<(), String> {
    if !install()? {
        return Ok(());
    }
    let st = schemathesis();
    crate::tests::build_server(env)?;
    // The tests' compiled components, so the fuzzed service starts without
    // compiling every component again.
    let cache = std::env::current_dir()
        .map(|dir| dir.join(crate::tests::PLUGIN_CACHE))
        .map_err(|e| e.to_string())?;
    let cache = cache.to_string_lossy();
    // At the lowest priority: it runs beside the platform and process
    // tests, whose services run their jobs at nice 10; a fuzzer at nice 0
    // took so much of two cores that a rollup under test could not hand
    // itself back within its shutdown deadline. The fuzzer's work is the
    // same either way; it takes what the tests leave. The fuzzed service's
    // own jobs stay at 19 (the job runtime lowers from where it starts).
    process::run_logged(
        "nice",
        &[
            "-n",
            "19",
            "python3",
            "xtask/fuzz.py",
            &st,
            crate::tests::SERVER_BINARY,
            crate::components::INSTALL_DIR,
            EXAMPLES,
        ],
        &[("CAIRN_PLUGIN_CACHE_DIR", &cache)],
        log,
    )
}
