//! Benchmarks: commands that start the real service and print figures.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::process;

pub fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("http") => http(),
        Some("jobs") => per_backend("jobs"),
        Some("sync") => per_backend("sync"),
        Some("load") => {
            ensure_wrk()?;
            crate::components::build_all()?;
            build_bench()?;
            let env = [("CAIRN_CONNECTORS_DIR", crate::components::INSTALL_DIR)];
            for_each_backend("load", &env)
        }
        Some("mdm") => per_backend("mdm"),
        Some("edr") => per_backend("edr"),
        Some("scanner") => per_backend("scanner"),
        Some("psa") => per_backend("psa"),
        Some("remediation") => per_backend("remediation"),
        Some("dashboards") => per_backend("dashboards"),
        Some("inventory") => per_backend("inventory"),
        Some("vuln") => per_backend("vuln"),
        Some("partner") => per_backend("partner"),
        Some("csv") => {
            crate::components::build_all()?;
            process::run(
                "cargo",
                &["build", "--release", "--quiet", "-p", "cairn"],
                &[],
            )?;
            per_backend("csv")
        }
        Some("portal") => {
            build_bench()?;
            process::run(BENCH_BINARY, &["portal"], &[])
        }
        _ => Err(
            "usage: cargo xtask bench <http|load|jobs|sync|mdm|edr|scanner|psa|remediation|dashboards|inventory|vuln|partner|csv|portal>"
                .into(),
        ),
    }
}

/// A release build of the service on a fresh SQLite data directory.
struct Service {
    child: Child,
    url: String,
    data_dir: PathBuf,
}

impl Service {
    fn start(extra_env: &[(&str, &str)]) -> Result<Service, String> {
        process::run(
            "cargo",
            &["build", "--release", "--quiet", "-p", "cairn"],
            &[],
        )?;
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let data_dir = std::env::temp_dir().join(format!("cairn-bench-{}", std::process::id()));
        let listen = format!("127.0.0.1:{port}");
        let child = Command::new("target/release/cairn")
            .arg("serve")
            .env("CAIRN_LISTEN", &listen)
            .env("CAIRN_DATA_DIR", &data_dir)
            .env("CAIRN_CONNECTORS_DIR", crate::components::INSTALL_DIR)
            .env("CAIRN_RATE_LIMIT_PER_MINUTE", "0")
            .env("CAIRN_LOG", "warn")
            .envs(extra_env.iter().copied())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting cairn: {e}"))?;
        let service = Service {
            child,
            url: format!("http://{listen}"),
            data_dir,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while ureq::get(&format!("{}/health", service.url))
            .call()
            .is_err()
        {
            if Instant::now() > deadline {
                return Err("the service did not become healthy in 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(service)
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data_dir);
    }
}

struct WrkResult {
    requests_per_sec: f64,
    p50: String,
    p99: String,
    non_2xx: u64,
}

fn ensure_wrk() -> Result<(), String> {
    process::ensure_debian_package("wrk", "--version", "wrk")
}

fn wrk(url: &str, header: Option<&str>) -> Result<WrkResult, String> {
    let mut args = vec!["-t2", "-c64", "-d10s", "--latency"];
    if let Some(h) = header {
        args.extend(["-H", h]);
    }
    args.push(url);
    let out = process::output("wrk", &args, &[])?;
    let field = |prefix: &str| {
        out.lines()
            .map(str::trim)
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.split_whitespace().nth(1))
            .map(String::from)
    };
    let requests_per_sec = field("Requests/sec:")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("cannot read wrk output:\n{out}"))?;
    let non_2xx = out
        .lines()
        .find(|l| l.contains("Non-2xx"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Ok(WrkResult {
        requests_per_sec,
        p50: field("50%").unwrap_or_default(),
        p99: field("99%").unwrap_or_default(),
        non_2xx,
    })
}

/// `/health` against `/api/v1/auth/me` by bearer token and by session cookie,
/// 10 s at 64 connections each.
fn http() -> Result<(), String> {
    ensure_wrk()?;
    let service = Service::start(&[])?;
    let response = ureq::post(&format!("{}/api/v1/auth/register", service.url))
        .send_json(
            serde_json::json!({"email": "bench@example.com", "password": "bench password 1"}),
        )
        .map_err(|e| format!("register: {e}"))?;
    let cookie = response
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .ok_or("no session cookie")?
        .to_string();
    let body: serde_json::Value = response.into_json().map_err(|e| e.to_string())?;
    let token = body["access_token"]
        .as_str()
        .ok_or("no access token")?
        .to_string();

    let bearer = format!("Authorization: Bearer {token}");
    let cookie = format!("Cookie: {cookie}");
    let me = format!("{}/api/v1/auth/me", service.url);
    let runs = [
        ("GET /health", format!("{}/health", service.url), None),
        (
            "GET /api/v1/auth/me (bearer)",
            me.clone(),
            Some(bearer.as_str()),
        ),
        ("GET /api/v1/auth/me (cookie)", me, Some(cookie.as_str())),
    ];
    println!(
        "cairn http benchmark: SQLite, release build, wrk -t2 -c64 -d10s on {} cores",
        cores()
    );
    println!(
        "{:<32} {:>12} {:>10} {:>10} {:>8}",
        "route", "requests/s", "p50", "p99", "non-2xx"
    );
    let mut results = vec![];
    for (name, url, header) in &runs {
        let result = wrk(url, *header)?;
        println!(
            "{:<32} {:>12.0} {:>10} {:>10} {:>8}",
            name, result.requests_per_sec, result.p50, result.p99, result.non_2xx
        );
        results.push(result);
    }
    let health = results[0].requests_per_sec;
    for (i, label) in [(1, "bearer"), (2, "cookie")] {
        let ratio = results[i].requests_per_sec / health;
        println!(
            "{label}: {:.0}% of /health throughput (goal: at least 50%) {}",
            ratio * 100.0,
            if ratio >= 0.5 { "MET" } else { "NOT MET" }
        );
    }
    Ok(())
}

/// The benchmark programs of `bench/`, one binary (`cairn-bench <program>`).
const BENCH_BINARY: &str = "target/release/cairn-bench";

/// Builds the benchmark programs in release.
fn build_bench() -> Result<(), String> {
    process::run(
        "cargo",
        &[
            "build",
            "--release",
            "--quiet",
            "-p",
            "cairn-bench",
            "--bin",
            "cairn-bench",
        ],
        &[],
    )
}

/// Builds the benchmark programs and runs `program` on SQLite, then on
/// PostgreSQL when one is reachable.
fn per_backend(program: &str) -> Result<(), String> {
    build_bench()?;
    for_each_backend(program, &[])
}

/// Runs a built benchmark program on SQLite, then on PostgreSQL when one
/// is reachable.
fn for_each_backend(program: &str, env: &[(&str, &str)]) -> Result<(), String> {
    process::run(BENCH_BINARY, &[program, "sqlite"], env)?;
    let url = std::env::var("CAIRN_BENCH_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
    if process::postgres_reachable(&url) {
        process::run(BENCH_BINARY, &[program, "postgres"], env)
    } else {
        println!("== PostgreSQL not reachable at {url}: skipped the PostgreSQL run");
        Ok(())
    }
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
