//! The components workspace (`connectors/Cargo.toml`): connectors, CSV
//! providers, test components and the SDK, built for wasm32-wasip2 with one
//! lock file into one target directory.
//!
//! The SDK's `connector` and `csv-provider` features exclude each other and
//! cargo unifies features over the packages one invocation selects, so every
//! step runs cargo once per world: [`World::Connector`] for everything but
//! `csv-providers/`, [`World::CsvProvider`] for those.

use std::path::{Path, PathBuf};

use crate::{lint, process};

pub const TARGET: &str = "wasm32-wasip2";

/// The components workspace's manifest.
const MANIFEST: &str = "connectors/Cargo.toml";

/// Where the components workspace builds.
pub const BUILD_DIR: &str = "target/wasm";

/// Where the product components (connectors and CSV providers, not the test
/// components) are installed: the host's default connectors directory.
pub const INSTALL_DIR: &str = "target/components/wasm32-wasip2/release";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum World {
    Connector,
    CsvProvider,
}

/// A crate of the components workspace.
#[derive(Debug)]
struct Member {
    name: String,
    world: World,
    /// A connector or CSV provider that `serve` loads; test components and
    /// the SDK are not.
    product: bool,
    /// A `cdylib`: it builds a `.wasm` component.
    component: bool,
}

fn read_member(dir: &Path, world: World, product: bool) -> Option<Member> {
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    let name = manifest
        .lines()
        .find_map(|l| l.strip_prefix("name = "))?
        .trim_matches('"')
        .to_string();
    Some(Member {
        name,
        world,
        product,
        component: manifest.contains("cdylib"),
    })
}

/// Every crate of the components workspace, the SDK first.
fn members() -> Vec<Member> {
    let mut found: Vec<Member> = read_member(Path::new("sdk"), World::Connector, false)
        .into_iter()
        .collect();
    for (folder, world, product) in [
        ("connectors", World::Connector, true),
        ("csv-providers", World::CsvProvider, true),
        ("tests/components", World::Connector, false),
        // The SDK's complete example, which the tests load too.
        ("sdk/examples", World::Connector, false),
    ] {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        dirs.sort();
        found.extend(
            dirs.iter()
                .filter_map(|dir| read_member(dir, world, product)),
        );
    }
    found
}

/// `cargo <command> --manifest-path connectors/Cargo.toml` once per world,
/// selecting that world's members that `select` keeps (the SDK is selected
/// in both, so it is built, tested and linted with each feature).
fn per_world(
    command: &[&str],
    select: impl Fn(&Member) -> bool,
    trailing: &[&str],
    env: &[(String, String)],
) -> Result<(), String> {
    per_world_logged(command, select, trailing, env, None)
}

/// [`per_world`], cargo's messages appended to `log` when one is given.
fn per_world_logged(
    command: &[&str],
    select: impl Fn(&Member) -> bool,
    trailing: &[&str],
    env: &[(String, String)],
    log: Option<&Path>,
) -> Result<(), String> {
    let members = members();
    for world in [World::Connector, World::CsvProvider] {
        let mut args: Vec<&str> = command.to_vec();
        args.extend(["--manifest-path", MANIFEST, "--target-dir", BUILD_DIR]);
        let chosen: Vec<&Member> = members
            .iter()
            .filter(|m| (m.world == world || m.name == "cairn-sdk") && select(m))
            .collect();
        if chosen.iter().all(|m| m.name == "cairn-sdk") {
            continue;
        }
        for member in chosen {
            args.extend(["-p", member.name.as_str()]);
        }
        args.extend(trailing);
        process::run_logged("cargo", &args, &lint::pairs(env), log)?;
    }
    Ok(())
}

/// Where `cargo xtask install` puts the components, the directory `cairn`
/// reads by default: `$XDG_DATA_HOME/cairn/components`, else
/// `~/.local/share/cairn/components`.
pub fn standard_install_dir() -> Result<PathBuf, String> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|dir| !dir.is_empty())
                .map(|home| PathBuf::from(home).join(".local").join("share"))
        })
        .ok_or("neither XDG_DATA_HOME nor HOME is set")?;
    Ok(base.join("cairn").join("components"))
}

/// Builds every component for wasm32-wasip2 in release and installs the
/// connectors and CSV providers into [`INSTALL_DIR`]. Returns the installed
/// `.wasm` files.
pub fn build_all() -> Result<Vec<PathBuf>, String> {
    build_all_with(&[])
}

/// [`build_all`] with `env` (the lints of [`lint::while_building`]).
pub fn build_all_with(env: &[(String, String)]) -> Result<Vec<PathBuf>, String> {
    build_and_install(|m| m.component, env, None)
}

/// Builds and installs the connectors and CSV providers only, not the test
/// components: what `serve` and `install` load. Cargo's messages go to
/// `log` when one is given.
pub fn build_products(log: Option<&Path>) -> Result<Vec<PathBuf>, String> {
    build_and_install(|m| m.component && m.product, &[], log)
}

fn build_and_install(
    select: impl Fn(&Member) -> bool,
    env: &[(String, String)],
    log: Option<&Path>,
) -> Result<Vec<PathBuf>, String> {
    ensure_target()?;
    println!("== building the components (wasm32-wasip2, release)");
    per_world_logged(
        &["build", "--release", "--target", TARGET],
        select,
        &[],
        env,
        log,
    )?;
    let built = Path::new(BUILD_DIR).join(TARGET).join("release");
    std::fs::create_dir_all(INSTALL_DIR).map_err(|e| format!("{INSTALL_DIR}: {e}"))?;
    let mut installed = vec![];
    for member in members().iter().filter(|m| m.product && m.component) {
        // Cargo names the artifact after the crate, `-` written as `_`.
        let file = format!("{}.wasm", member.name.replace('-', "_"));
        let to = Path::new(INSTALL_DIR).join(&file);
        std::fs::copy(built.join(&file), &to)
            .map_err(|e| format!("installing {file} into {INSTALL_DIR}: {e}"))?;
        installed.push(to);
    }
    Ok(installed)
}

/// Where the components workspace leaves every built component, test
/// components included (absolute, for the tests' environment).
pub fn built_dir() -> PathBuf {
    let relative = Path::new(BUILD_DIR).join(TARGET).join("release");
    std::env::current_dir()
        .map(|cwd| cwd.join(&relative))
        .unwrap_or(relative)
}

/// Lints every crate of the components workspace for wasm32-wasip2, as the
/// host's workspace is linted: warnings are errors.
pub fn clippy() -> Result<(), String> {
    ensure_target()?;
    println!("== clippy of the components (wasm32-wasip2)");
    per_world(
        &["clippy", "--quiet", "--target", TARGET, "--all-targets"],
        |_| true,
        &["--", "-D", "warnings"],
        &[],
    )
}

/// Runs the SDK's and each connector's and CSV provider's unit tests
/// natively (mapping logic is plain Rust; only the host calls need
/// WebAssembly), with `env` (the lints of [`lint::while_building`]).
pub fn test_all(env: &[(String, String)]) -> Result<(), String> {
    println!("== unit tests of the SDK, the connectors and the CSV providers (native)");
    per_world(&["test"], |m| m.product || m.name == "cairn-sdk", &[], env)
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
