//! Running commands and probing services.

use std::net::{TcpStream, ToSocketAddrs};
use std::process::Command;
use std::time::Duration;

pub fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
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
