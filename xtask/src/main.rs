//! `cargo xtask <command>`: the project's own commands, so a new machine needs
//! nothing but Rust.
//!
//! - `serve`: build every component and the host (release), run the service.
//! - `install`: `cairn` on PATH and its components in the standard directory.
//! - `docs`: the reference book (`docs/`) into `target/book`, links checked.
//! - `test`: what CI runs: rustfmt, every test on SQLite and (when
//!   reachable) PostgreSQL with clippy linting every crate as it is built
//!   (warnings are errors), the OpenAPI validation and the schemathesis
//!   fuzzing of both APIs; prints the time of each step.
//! - `lint`: rustfmt and clippy of both workspaces, without building.
//! - `components`: build connectors and CSV providers for wasm32-wasip2.
//! - `fuzz`: the schemathesis run of `test` alone.
//! - `bench <name>`: benchmarks that print figures (see README).

mod bench;
mod clients;
mod components;
mod fuzz;
mod lint;
mod operations;
mod process;
mod steps;
mod tests;

use std::process::ExitCode;

use std::path::Path;

use steps::Steps;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut steps = Steps::new();
    let result = match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..]),
        Some("install") => install(),
        Some("docs") => operations::book(),
        Some("test") => test(&mut steps, &args[1..]),
        Some("lint") => lint(&mut steps),
        Some("components") => components::build_all().map(|_| ()),
        Some("clients") => {
            components::build_all().and_then(|_| clients::run(&lint::while_building()?, None))
        }
        Some("fuzz") => {
            components::build_all().and_then(|_| fuzz::run(&lint::while_building()?, None))
        }
        Some("bench") => bench::run(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <serve|install|test|docs|lint|components|fuzz|clients|bench NAME> [args]"
            );
            return ExitCode::from(2);
        }
    };
    steps.print_table();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Builds everything and serves from the checkout: the database in
/// `./data`, the components where the build put them (either overridden
/// by `CAIRN_DATA_DIR` and `CAIRN_CONNECTORS_DIR`).
fn serve(extra: &[String]) -> Result<(), String> {
    release_builds()?;
    let mut args = vec!["run", "--release", "-p", "cairn", "--", "serve"];
    args.extend(extra.iter().map(String::as_str));
    let here = std::env::current_dir().map_err(|e| e.to_string())?;
    let mut env = vec![];
    if std::env::var_os("CAIRN_DATA_DIR").is_none() {
        env.push(("CAIRN_DATA_DIR", here.join("data").display().to_string()));
    }
    if std::env::var_os("CAIRN_CONNECTORS_DIR").is_none() {
        env.push((
            "CAIRN_CONNECTORS_DIR",
            here.join(components::INSTALL_DIR).display().to_string(),
        ));
    }
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    process::run("cargo", &args, &env)
}

/// The service's release build and its components' side by side, the
/// installed components returned: the components' build (some 40 s on two
/// cores) overlaps the service's, whose last stretch compiles one crate at
/// a time. The components' cargo messages go to a log, printed if they
/// fail, so the terminal shows one build.
fn release_builds() -> Result<Vec<std::path::PathBuf>, String> {
    let log = process::step_log("components");
    let components = {
        let log = log.clone();
        std::thread::spawn(move || components::build_products(Some(&log)))
    };
    let host = process::run("cargo", &["build", "--release", "-p", "cairn"], &[]);
    let built = components
        .join()
        .unwrap_or_else(|_| Err("the components' build panicked".into()));
    if built.is_err() {
        process::replay("the components' build", &log);
    }
    host?;
    built
}

/// Installs `cairn` on PATH (`cargo install`, into `~/.cargo/bin`) and its
/// components into the standard directory every command reads by default
/// (`$XDG_DATA_HOME/cairn/components`, else `~/.local/share/cairn/components`).
fn install() -> Result<(), String> {
    let built = release_builds()?;
    let dir = components::standard_install_dir()?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for file in &built {
        let name = file.file_name().unwrap_or_default();
        std::fs::copy(file, dir.join(name))
            .map_err(|e| format!("installing {} into {}: {e}", file.display(), dir.display()))?;
    }
    println!(
        "== {} components installed in {}",
        built.len(),
        dir.display()
    );
    // The checkout's target directory: the release build `serve` made is
    // reused rather than compiled again.
    process::run(
        "cargo",
        &[
            "install",
            "--locked",
            "--path",
            "host",
            "--target-dir",
            "target",
        ],
        &[],
    )?;
    println!(
        "== cairn installed in ~/.cargo/bin; run `cairn serve` from any directory \
         (data in {})",
        dir.with_file_name("data").display()
    );
    Ok(())
}

/// Debian's Chromium, and the journey's packages from the npm registry
/// (`playwright-core` drives that Chromium; it downloads no browser).
fn install_browser() -> Result<(), String> {
    process::ensure_debian_package("chromium", "--version", "chromium")?;
    process::run(
        "npm",
        &["ci", "--no-audit", "--no-fund", "--prefix", "tests/console"],
        &[],
    )
}

/// rustfmt and clippy of the host's workspace and of the components
/// workspace, without building either.
fn lint(steps: &mut Steps) -> Result<(), String> {
    steps.run("fmt", lint::fmt)?;
    steps.run("clippy of the host", lint::clippy_host)?;
    steps.run("clippy of the components", components::clippy)
}

const POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Every test: `extra` arguments go to each test binary (a name filter,
/// `--nocapture`, ...).
fn test(steps: &mut Steps, extra: &[String]) -> Result<(), String> {
    steps.run("fmt", lint::fmt)?;
    let required = std::env::var("CAIRN_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
    let url = std::env::var("CAIRN_TEST_POSTGRES_URL").unwrap_or_else(|_| POSTGRES_URL.into());
    let mut env: Vec<(String, String)> = vec![];
    if process::postgres_reachable(&url) {
        println!(
            "== PostgreSQL reachable at {url}: every storage test runs on SQLite AND PostgreSQL"
        );
        env.push(("CAIRN_TEST_POSTGRES_URL".into(), url));
    } else if required {
        return Err(format!(
            "PostgreSQL is required (CAIRN_REQUIRE_POSTGRES=1) but not reachable at {url}"
        ));
    } else {
        println!("== PostgreSQL NOT reachable at {url}: SKIPPING the PostgreSQL backend; tests run on SQLite only");
        env.push(("CAIRN_TEST_POSTGRES_URL".into(), "skip".into()));
    }
    // The report tests read PDFs back as text.
    process::ensure_debian_package("pdftotext", "-v", "poppler-utils")?;
    // The console's journey runs in Debian's Chromium (before the steps
    // that run alongside: one apt at a time).
    steps.run("browser install", install_browser)?;
    let linted = lint::while_building()?;
    // Downloads, while the builds use the cores.
    let fuzzer = Steps::alongside("fuzzer install", fuzz::install);
    let operations_log = process::step_log("book-and-operations");
    let operations_checked = {
        let log = operations_log.clone();
        Steps::alongside("book, dashboard and alert rules", move || {
            operations::check_all(&log)
        })
    };
    let generators = Steps::alongside("client generators install", clients::install);
    // The two workspaces build side by side: stretches where one crate
    // keeps one core busy (a component's LTO, the host crate) are filled by
    // the other build. The host build's messages are printed after.
    let build_log = process::step_log("host-test-build");
    let host_build = {
        let (linted, log) = (linted.clone(), build_log.clone());
        Steps::alongside("host test build, linted", move || {
            tests::build(&linted, Some(&log))
        })
    };
    // Release, as the tests load them; the tests take them from here.
    let components_built = steps
        .run("components build, linted", || {
            components::build_all_with(&linted).map(|_| ())
        })
        .and_then(|()| {
            steps.run("components unit tests, linted", || {
                components::test_all(&linted)
            })
        });
    // Waited for even when the components failed: no build outlives xtask.
    let binaries = host_build.finish(steps);
    process::replay("host test build, linted", &build_log);
    components_built?;
    let binaries = binaries?;
    env.push((
        "CAIRN_TEST_COMPONENTS".into(),
        components::built_dir().display().to_string(),
    ));
    let (saturating, others): (Vec<_>, Vec<_>) = binaries
        .into_iter()
        .partition(|binary| binary.name == tests::SATURATING);
    let mut failures = vec![];
    failures.extend(steps.run("component cache", tests::warm_plugin_cache).err());
    // The fuzzer (at nice 19: see `fuzz::run`) starts with the test binary
    // that keeps both cores busy and takes what it leaves: it needs some
    // 150 s of two cores, and started after that binary it ended the run
    // alone (docs: testing). Its output is kept apart and printed when it
    // ends.
    let fuzz_log = process::step_log("fuzz");
    let fuzzing = match fuzzer.finish(steps) {
        Ok(_) => {
            let (linted, log) = (linted.clone(), fuzz_log.clone());
            Some(Steps::alongside("fuzz", move || {
                fuzz::run(&linted, Some(&log))
            }))
        }
        Err(err) => {
            failures.push(err);
            None
        }
    };
    failures.extend(tests::run_all(steps, &saturating, &env, extra).err());
    // The validator (a Python program, about a core) runs beside the other
    // test binaries, its output kept apart and printed when it ends.
    let validation_log = process::step_log("openapi-validation");
    let validation = {
        let log = validation_log.clone();
        Steps::alongside("OpenAPI validation", move || validate_openapi(Some(&log)))
    };
    failures.extend(tests::run_all(steps, &others, &env, extra).err());
    failures.extend(
        steps
            .run("doc tests", || tests::run_doc(&linted, &env))
            .err(),
    );
    failures.extend(validation.finish(steps).err());
    process::replay("OpenAPI validation", &validation_log);
    // After the validator: the generated clients' run uses a core of its
    // own beside the fuzzer.
    match generators.finish(steps) {
        Ok(_) => {
            let clients_log = process::step_log("clients");
            let linted = linted.clone();
            let log = clients_log.clone();
            failures.extend(
                steps
                    .run("generated clients", move || {
                        clients::run(&linted, Some(&log))
                    })
                    .err(),
            );
            process::replay("generated clients", &clients_log);
        }
        Err(err) => failures.push(err),
    }
    if let Some(fuzzing) = fuzzing {
        failures.extend(fuzzing.finish(steps).err());
        process::replay("fuzz", &fuzz_log);
    }
    failures.extend(operations_checked.finish(steps).err());
    process::replay("book, dashboard and alert rules", &operations_log);
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// Checks `/openapi.json` with a real OpenAPI 3.1 validator when one is
/// installed (`pip install openapi-spec-validator`; CI installs it); the
/// validator's output goes to `log` when one is given.
fn validate_openapi(log: Option<&Path>) -> Result<(), String> {
    let required = std::env::var("CAIRN_REQUIRE_OPENAPI_VALIDATOR").is_ok_and(|v| v == "1");
    let available = std::process::Command::new("python3")
        .args(["-c", "import openapi_spec_validator"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !available {
        if required {
            return Err("openapi-spec-validator is required but not installed".into());
        }
        println!("== SKIPPED OpenAPI validation: pip install openapi-spec-validator to run it");
        return Ok(());
    }
    let dir = std::env::temp_dir().join(format!("cairn-openapi-{}", std::process::id()));
    for (flag, file) in [
        (None, "openapi.json"),
        (Some("--portal"), "portal-openapi.json"),
    ] {
        let mut args = vec!["openapi"];
        args.extend(flag);
        // The documents list the connectors' routes: the tests' compiled
        // components spare compiling each again.
        let doc = process::output(
            tests::SERVER_BINARY,
            &args,
            &tests::server_command_env(&dir),
        )?;
        let path = dir.join(file);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(&path, doc).map_err(|e| format!("{}: {e}", path.display()))?;
        process::run_logged(
            "python3",
            &[
                "-m",
                "openapi_spec_validator",
                path.to_str().unwrap_or_default(),
            ],
            &[],
            log,
        )?;
    }
    println!("== /openapi.json and /api/openapi.json are valid OpenAPI 3.1 documents");
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
