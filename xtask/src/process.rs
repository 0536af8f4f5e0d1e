//! Running commands and probing services.

use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

pub fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    run_logged(program, args, env, None)
}

/// [`run`], with the command's stdout and stderr appended to `log` when
/// one is given: a step running alongside others keeps its output apart
/// and prints it when it ends ([`replay`]).
pub fn run_logged(
    program: &str,
    args: &[&str],
    env: &[(&str, &str)],
    log: Option<&Path>,
) -> Result<(), String> {
    let mut command = Command::new(program);
    command.args(args).envs(env.iter().copied());
    if let Some(log) = log {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("cannot open {}: {e}", log.display()))?;
        command.stdout(file).stderr(err);
    }
    let status = command
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{program} {}` failed ({status})", args.join(" ")))
    }
}

pub fn output(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<String, String> {
    let out = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{program} {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// True when something accepts TCP connections at the URL's host and port.
/// The tests then make the real connection and fail loudly if it is not
/// PostgreSQL.
pub fn postgres_reachable(url: &str) -> bool {
    let Some(rest) = url.split("://").nth(1) else {
        return false;
    };
    let host_port = rest.rsplit('@').next().unwrap_or(rest);
    let host_port = host_port.split('/').next().unwrap_or(host_port);
    let with_port = if host_port.contains(':') {
        host_port.to_string()
    } else {
        format!("{host_port}:5432")
    };
    with_port
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .is_some_and(|addr| TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok())
}

/// Installs Debian's `package` when `command` (run with `probe`) is
/// missing; `Err` says how to install it by hand.
/// Whether `program` runs and exits with success.
pub fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

pub fn ensure_debian_package(command: &str, probe: &str, package: &str) -> Result<(), String> {
    if Command::new(command).arg(probe).output().is_ok() {
        return Ok(());
    }
    println!("== {command} not found; installing {package} from Debian's packages");
    run("apt-get", &["install", "-y", "-qq", package], &[])
        .or_else(|_| {
            run("apt-get", &["update", "-qq"], &[])?;
            run("apt-get", &["install", "-y", "-qq", package], &[])
        })
        .map_err(|e| format!("{e}; install {package} (apt-get install {package}) and run again"))
}

/// A fresh log file for a step that runs alongside others.
pub fn step_log(name: &str) -> std::path::PathBuf {
    let path = Path::new("target/xtask-logs").join(format!("{name}.log"));
    let _ = std::fs::create_dir_all("target/xtask-logs");
    let _ = std::fs::remove_file(&path);
    path
}

/// Prints what a step wrote to `log`, under its name.
pub fn replay(name: &str, log: &Path) {
    if let Ok(text) = std::fs::read_to_string(log) {
        println!("== output of {name} ({}):", log.display());
        print!("{text}");
    }
}

/// Installs `packages` from PyPI into the venv `venv` unless its program
/// `program` (`bin/NAME`) is there already. Returns whether they are
/// usable; when they are not, fails if `required` (a `CAIRN_REQUIRE_*`
/// variable) is `1`, else says that `what` is skipped.
pub fn python_tools(
    venv: &str,
    packages: &[&str],
    program: &str,
    required: &str,
    what: &str,
) -> Result<bool, String> {
    if Path::new(&format!("{venv}/bin/{program}")).is_file() {
        return Ok(true);
    }
    let mut args = vec!["install", "--quiet", "--disable-pip-version-check"];
    args.extend(packages);
    let installed = run("python3", &["-m", "venv", venv], &[])
        .and_then(|()| run(&format!("{venv}/bin/pip"), &args, &[]));
    match installed {
        Ok(()) => Ok(true),
        Err(err) if std::env::var(required).is_ok_and(|v| v == "1") => Err(format!(
            "{} required but could not be installed: {err}",
            packages.join(" and ")
        )),
        Err(err) => {
            println!(
                "== SKIPPED {what}: {} could not be installed ({err})",
                packages.join(" and ")
            );
            Ok(false)
        }
    }
}
