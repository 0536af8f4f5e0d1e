//! The host workspace's tests: built once, then each test binary run as a
//! step of its own, so the step table says which binary took the time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::process;
use crate::steps::Steps;

/// The service binary the OpenAPI export and the fuzzing run: built by
/// [`build`] in the tests' profile, so nothing is compiled twice.
pub const SERVER_BINARY: &str = "target/debug/cairn";

/// The compiled-component cache the tests' services share
/// (`cairn_tests::plugin_cache_dir`), relative to the repository.
pub const PLUGIN_CACHE: &str = "target/test-plugin-cache";

/// The test binary that keeps both cores busy on its own; the others run
/// after it, beside the fuzzer and the OpenAPI validation.
pub const SATURATING: &str = "cairn-tests::platform";

/// One test executable of the workspace.
pub struct TestBinary {
    /// `<package>::<target>` (`cairn::lib`, `cairn-tests::platform`).
    pub name: String,
    pub executable: PathBuf,
    /// The package's folder: cargo runs tests there.
    pub package_dir: PathBuf,
}

/// How many tests of one binary run at once. Most tests wait on a service
/// they started (HTTP, a job, a database), so more than the cores.
fn test_threads() -> String {
    std::env::var("CAIRN_TEST_THREADS").unwrap_or_else(|_| "6".into())
}

/// Builds every test executable of the workspace with `env` (the lints of
/// [`crate::lint::while_building`]); cargo's messages go to `log` when one
/// is given.
pub fn build(env: &[(String, String)], log: Option<&Path>) -> Result<Vec<TestBinary>, String> {
    let messages = match log {
        Some(log) => Stdio::from(
            std::fs::File::create(log)
                .map_err(|e| format!("cannot open {}: {e}", log.display()))?,
        ),
        None => Stdio::inherit(),
    };
    let output = Command::new("cargo")
        // One invocation for the test binaries and the `cairn` binary the
        // fuzzer, the OpenAPI check and the process tests run: a separate
        // `cargo build -p cairn` resolves features without the tests'
        // dev-dependencies and compiles the host and many of its
        // dependencies a second time.
        .args([
            "build",
            "--workspace",
            "--lib",
            "--bins",
            "--tests",
            "--message-format=json-render-diagnostics",
        ])
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stderr(messages)
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !output.status.success() {
        return Err(format!("building the tests failed ({})", output.status));
    }
    let mut binaries = vec![];
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
            continue;
        }
        let Some(executable) = message["executable"].as_str() else {
            continue;
        };
        let package_dir = PathBuf::from(message["manifest_path"].as_str().unwrap_or_default())
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default();
        // `path+file:///.../host#cairn@0.1.0`, or `...xtask#0.1.0` when the
        // folder is named after the package.
        let fragment = message["package_id"]
            .as_str()
            .and_then(|id| id.rsplit_once('#'))
            .map(|(_, fragment)| fragment)
            .unwrap_or_default();
        let package = match fragment.split_once('@') {
            Some((name, _)) => name.to_string(),
            None => package_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
        };
        let kind = message["target"]["kind"][0].as_str().unwrap_or_default();
        let target = message["target"]["name"].as_str().unwrap_or_default();
        let name = if kind == "lib" {
            format!("{package}::lib")
        } else {
            format!("{package}::{target}")
        };
        binaries.push(TestBinary {
            name,
            executable: PathBuf::from(executable),
            package_dir,
        });
    }
    binaries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(binaries)
}

/// Runs each test binary as a step, with `env` and the `extra` libtest
/// arguments; goes on past a failing binary and fails at the end, so one
/// run reports every failure.
pub fn run_all(
    steps: &mut Steps,
    binaries: &[TestBinary],
    env: &[(String, String)],
    extra: &[String],
) -> Result<(), String> {
    let threads = format!("--test-threads={}", test_threads());
    let mut failed = vec![];
    for binary in binaries {
        let mut args: Vec<&str> = vec![threads.as_str()];
        args.extend(extra.iter().map(String::as_str));
        let result = steps.run(&format!("test {}", binary.name), || {
            let status = Command::new(&binary.executable)
                .args(&args)
                .current_dir(&binary.package_dir)
                .env("CARGO_MANIFEST_DIR", &binary.package_dir)
                .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .status()
                .map_err(|e| format!("cannot run {}: {e}", binary.executable.display()))?;
            if status.success() {
                Ok(())
            } else {
                Err(format!("{} failed ({status})", binary.name))
            }
        });
        if let Err(err) = result {
            failed.push(err);
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("; "))
    }
}

/// The workspace's documentation tests, with the same `env` as [`build`].
pub fn run_doc(env: &[(String, String)], test_env: &[(String, String)]) -> Result<(), String> {
    let mut all = crate::lint::pairs(env);
    all.extend(crate::lint::pairs(test_env));
    process::run("cargo", &["test", "--quiet", "--workspace", "--doc"], &all)
}

/// Compiles every installed component into [`PLUGIN_CACHE`] with the
/// service binary (`cairn connectors list`), before the tests and the
/// fuzzer start. Whoever loads a module first compiles it while every other
/// loader waits on its lock. When that is the fuzzed service, at nice 19
/// beside the busy tests, it starves: with four busy loops beside it, it
/// had compiled 3 of 16 modules after 300 s (a CI run failed on its
/// two-minute wait for `/health`), and the tests' services wait on its
/// locks. From the compiled modules it answered in 56 s. Prints how many
/// modules load.
pub fn warm_plugin_cache() -> Result<(), String> {
    let data = std::env::temp_dir().join(format!("cairn-plugin-cache-{}", std::process::id()));
    let listed = process::output(
        SERVER_BINARY,
        &["connectors", "list"],
        &server_command_env(&data),
    );
    let _ = std::fs::remove_dir_all(&data);
    let listed = listed?;
    let modules = listed
        .lines()
        .filter(|line| line.starts_with("connector ") || line.starts_with("csv-provider "))
        .count();
    println!(
        "== {modules} components loaded, each compiled into {PLUGIN_CACHE} unless it was there"
    );
    Ok(())
}

/// The settings of a [`SERVER_BINARY`] command that loads the installed
/// components from the tests' compiled ones, with `data` as its data
/// directory.
pub fn server_command_env(data: &Path) -> [(&'static str, &str); 3] {
    [
        (
            "CAIRN_DATA_DIR",
            data.to_str().unwrap_or("/tmp/cairn-command"),
        ),
        ("CAIRN_PLUGIN_CACHE_DIR", PLUGIN_CACHE),
        ("CAIRN_CONNECTORS_DIR", crate::components::INSTALL_DIR),
    ]
}

/// Builds the service binary as [`build`] does (same targets, same `env`,
/// so the same features): after it, nothing is compiled again.
pub fn build_server(env: &[(String, String)]) -> Result<(), String> {
    process::run(
        "cargo",
        &[
            "build",
            "--quiet",
            "--workspace",
            "--lib",
            "--bins",
            "--tests",
        ],
        &crate::lint::pairs(env),
    )
}
