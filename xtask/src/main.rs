//! `cargo xtask <command>`: the project's own commands, so a new machine needs
//! nothing but Rust.
//!
//! - `serve`: build every component and the host (release), run the service.
//! - `test`: every test, on SQLite and (when reachable) PostgreSQL, then the
//!   OpenAPI validation and the schemathesis fuzzing of both APIs.
//! - `components`: build connectors and CSV providers for wasm32-wasip2.
//! - `fuzz`: the schemathesis run of `test` alone.
//! - `bench <name>`: benchmarks that print figures (see README).

mod bench;
mod components;
mod fuzz;
mod process;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("serve") => serve(&args[1..]),
        Some("test") => test(&args[1..]),
        Some("components") => components::build_all("release").map(|_| ()),
        Some("fuzz") => components::build_all("release").and_then(|_| fuzz::run()),
        Some("bench") => bench::run(&args[1..]),
        _ => {
            eprintln!("usage: cargo xtask <serve|test|components|fuzz|bench NAME> [args]");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

fn serve(extra: &[String]) -> Result<(), String> {
    components::build_all("release")?;
    let mut args = vec!["run", "--release", "-p", "cairn", "--", "serve"];
    args.extend(extra.iter().map(String::as_str));
    process::run("cargo", &args, &[])
}

const POSTGRES_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

fn test(extra: &[String]) -> Result<(), String> {
    let required = std::env::var("CAIRN_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
    let url = std::env::var("CAIRN_TEST_POSTGRES_URL").unwrap_or_else(|_| POSTGRES_URL.into());
    let mut env: Vec<(&str, String)> = vec![];
    if process::postgres_reachable(&url) {
        println!(
            "== PostgreSQL reachable at {url}: every storage test runs on SQLite AND PostgreSQL"
        );
        env.push(("CAIRN_TEST_POSTGRES_URL", url));
    } else if required {
        return Err(format!(
            "PostgreSQL is required (CAIRN_REQUIRE_POSTGRES=1) but not reachable at {url}"
        ));
    } else {
        println!("== PostgreSQL NOT reachable at {url}: SKIPPING the PostgreSQL backend; tests run on SQLite only");
        env.push(("CAIRN_TEST_POSTGRES_URL", "skip".into()));
    }
    // The report tests read PDFs back as text.
    process::ensure_debian_package("pdftotext", "-v", "poppler-utils")?;
    // Release, as the tests load them (the build is then shared).
    components::build_all("release")?;
    components::test_all()?;
    let env_refs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut args = vec!["test", "--workspace"];
    args.extend(extra.iter().map(String::as_str));
    process::run("cargo", &args, &env_refs)?;
    validate_openapi()?;
    fuzz::run()
}

/// Checks `/openapi.json` with a real OpenAPI 3.1 validator when one is
/// installed (`pip install openapi-spec-validator`; CI installs it).
fn validate_openapi() -> Result<(), String> {
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
        let mut args = vec!["run", "--quiet", "-p", "cairn", "--", "openapi"];
        args.extend(flag);
        let doc = process::output(
            "cargo",
            &args,
            &[(
                "CAIRN_DATA_DIR",
                dir.to_str().unwrap_or("/tmp/cairn-openapi"),
            )],
        )?;
        let path = dir.join(file);
        std::fs::write(&path, doc).map_err(|e| e.to_string())?;
        process::run(
            "python3",
            &[
                "-m",
                "openapi_spec_validator",
                path.to_str().unwrap_or_default(),
            ],
            &[],
        )?;
    }
    println!("== /openapi.json and /api/openapi.json are valid OpenAPI 3.1 documents");
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}
