//! Authenticated reads under load, through the real service on one backend:
//! `GET /health`, `GET /api/v1/auth/me`, the applications page of 50 over
//! 30,000 applications and a nested three-rule device search over 100,000
//! assets, each for 10 s at 50 connections with wrk (`-t2 -c50 -d10s`),
//! printing requests/s, p50, p99 and the share of `/health`'s requests/s
//! in the same run. Then the two inventory reads again while CSV uploads of
//! another tenant land, beside their idle p99.
//!
//! Usage: cairn-bench load sqlite|postgres. `CAIRN_CONNECTORS_DIR` names the
//! components (the software-inventory CSV provider for the uploads).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use cairn_bench::{row, write_pages, Client};
use cairn_inventory::rollup::Mode;
use serde_json::{json, Value};

const APPLICATIONS: usize = 30_000;
const DEVICES: usize = 100_000;
const CONNECTIONS: &str = "50";
const SECONDS: &str = "10s";
/// Rows of each upload that lands during the loaded reads.
const UPLOAD_ROWS: usize = 20_000;

/// What wrk measured of one route.
struct Measured {
    requests_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

/// A read under load: its name, URL, and the request (headers, body).
struct Read {
    name: &'static str,
    url: String,
    script: PathBuf,
}

pub async fn main() -> anyhow::Result<()> {
    let backend = crate::args().nth(1).unwrap_or_else(|| "sqlite".into());
    let (db, url) = cairn_bench::fresh_database(&backend).await?;
    db.close().await;
    let data_dir =
        std::env::temp_dir().join(format!("cairn-cairn-bench load-{}", std::process::id()));
    let connectors = std::env::var("CAIRN_CONNECTORS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| data_dir.join("components"));
    let settings = cairn_core::settings::Settings {
        listen: "127.0.0.1:0".into(),
        database_url: url.clone(),
        data_dir: data_dir.clone(),
        connectors_dir: connectors,
        rate_limit_per_minute: 0,
        // The operator's trade between requests and jobs, as they would set
        // it (`CAIRN_JOB_WRITE_SHARE=1`: jobs never wait).
        job_write_share: std::env::var("CAIRN_JOB_WRITE_SHARE")
            .ok()
            .and_then(|share| share.parse().ok())
            .unwrap_or(cairn_core::settings::Settings::default().job_write_share),
        ..Default::default()
    }
    .prepare()?;
    let server = cairn::server::start(settings).await?;
    let db = server.state.db.clone();
    let client = Client {
        http: reqwest::Client::new(),
        base: server.base_url(),
    };
    println!(
        "cairn load benchmark: {backend}, release build, wrk -t2 -c{CONNECTIONS} -d{SECONDS}, {} cores, \
         jobs' write share {}",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        server.state.settings.job_write_share
    );

    // One tenant with 30,000 applications, one with 100,000 assets.
    let (list_token, list_tenant) = client.register("list@load.example").await?;
    write_pages(
        &db,
        &list_tenant,
        "rmm",
        cairn_bench::applications(APPLICATIONS),
    )
    .await?;
    cairn_inventory::rollup::rebuild_until_current(&db, &list_tenant, Mode::Incremental).await?;
    let (search_token, search_tenant) = client.register("search@load.example").await?;
    write_pages(
        &db,
        &search_tenant,
        "rmm",
        (0..DEVICES).map(|d| {
            let platform = if d.is_multiple_of(3) {
                "macos"
            } else {
                "windows"
            };
            row(
                format!("PC-{d:06}"),
                "Google Chrome".into(),
                "Google".into(),
                format!("120.0.{}", d % 50),
                platform,
            )
        }),
    )
    .await?;
    write_pages(&db, &search_tenant, "edr", cairn_bench::edr_agents(DEVICES)).await?;
    cairn_inventory::rollup::rebuild_until_current(&db, &search_tenant, Mode::Incremental).await?;
    if db.backend == cairn_core::db::Backend::Postgres {
        // What autovacuum would do within a minute of the bulk write.
        sqlx::query("VACUUM ANALYZE").execute(&db.pool).await?;
    }

    let scripts = tempdir(&data_dir)?;
    let search = json!({
        "query": {"kind": "group", "combinator": "and", "rules": [
            {"kind": "rule", "field": "os_platform", "operator": "equals", "value": "windows"},
            {"kind": "group", "combinator": "or", "rules": [
                {"kind": "rule", "field": "edr.active_threats", "operator": "gte", "value": "3"},
                {"kind": "rule", "field": "device_name", "operator": "starts_with", "value": "PC-0999"}
            ]}
        ]},
        "limit": 50
    });
    let reads = [
        Read {
            name: "GET /health",
            url: format!("{}/health", client.base),
            script: script(&scripts, "health", "GET", None, None)?,
        },
        Read {
            name: "GET /api/v1/auth/me",
            url: format!("{}/api/v1/auth/me", client.base),
            script: script(&scripts, "me", "GET", Some(&list_token), None)?,
        },
        Read {
            name: "applications page of 50",
            url: format!("{}/api/v1/inventory/applications", client.base),
            script: paged_script(&scripts, &list_token, APPLICATIONS)?,
        },
        Read {
            name: "device search, 3 rules",
            url: format!("{}/api/v1/devices/devices/search", client.base),
            script: script(
                &scripts,
                "search",
                "POST",
                Some(&search_token),
                Some(&search.to_string()),
            )?,
        },
    ];

    // The device search keeps its matches until the tenant's inventory is
    // written: the first request reads them all, the load after it reads
    // pages by id. Its cost, alone, before the load.
    let (first, found) = client
        .timed(
            &search_token,
            reqwest::Method::POST,
            "/api/v1/devices/devices/search",
            Some(&search),
        )
        .await?;
    println!(
        "device search, first request after a write (reads all {} matches): {:.1} ms",
        found["total"],
        first.as_secs_f64() * 1000.0
    );
    println!(
        "{:<28} {:>11} {:>9} {:>9} {:>8} {:>7}",
        "read", "requests/s", "p50 ms", "p99 ms", "health", "errors"
    );
    let mut idle = vec![];
    for read in &reads {
        // wrk blocks; the service's tasks move to the other workers.
        idle.push(tokio::task::block_in_place(|| wrk(read))?);
    }
    let health = idle[0].requests_per_sec;
    for (read, measured) in reads.iter().zip(&idle) {
        print_row(read.name, measured, health);
    }

    // The inventory reads again while another tenant's uploads land.
    let (upload_token, _) = client.register("uploads@load.example").await?;
    let landing = Arc::new(AtomicBool::new(true));
    let landed = Arc::new(AtomicUsize::new(0));
    let uploader = tokio::spawn(upload_while(
        client.http.clone(),
        format!("{}/api/v1/inventory/upload", client.base),
        upload_token,
        landing.clone(),
        landed.clone(),
    ));
    println!("while {UPLOAD_ROWS}-row CSV uploads land, one after another:");
    for (read, before) in reads.iter().zip(&idle).skip(2) {
        let measured = tokio::task::block_in_place(|| wrk(read))?;
        print_row(read.name, &measured, health);
        println!(
            "{:<28} p99 {:.1} ms idle, {:.1} ms while uploads land ({:.2}x)",
            "",
            before.p99_ms,
            measured.p99_ms,
            measured.p99_ms / before.p99_ms.max(0.001)
        );
    }
    landing.store(false, Ordering::SeqCst);
    uploader.await??;
    println!(
        "uploads accepted meanwhile: {}",
        landed.load(Ordering::SeqCst)
    );

    server.stop().await?;
    cairn_bench::drop_database(db, &url).await;
    let _ = std::fs::remove_dir_all(data_dir);
    Ok(())
}

fn print_row(name: &str, measured: &Measured, health: f64) {
    println!(
        "{:<28} {:>11.0} {:>9.2} {:>9.2} {:>7.1}% {:>7}",
        name,
        measured.requests_per_sec,
        measured.p50_ms,
        measured.p99_ms,
        measured.requests_per_sec / health * 100.0,
        measured.errors
    );
}

/// Uploads software CSVs one after another until `landing` is cleared.
async fn upload_while(
    http: reqwest::Client,
    url: String,
    token: String,
    landing: Arc<AtomicBool>,
    landed: Arc<AtomicUsize>,
) -> anyhow::Result<()> {
    let mut csv = String::from("device_name,application_name,version,vendor\n");
    for r in 0..UPLOAD_ROWS {
        csv.push_str(&format!(
            "UP-{:05},Tool {},{}.0,Vendor {}\n",
            r % 5000,
            r % 900,
            r % 7,
            r % 90
        ));
    }
    while landing.load(Ordering::SeqCst) {
        let form = reqwest::multipart::Form::new().part(
            "file",
            reqwest::multipart::Part::bytes(csv.clone().into_bytes()).file_name("software.csv"),
        );
        let accepted: Value = http
            .post(&url)
            .bearer_auth(&token)
            .multipart(form)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        landed.fetch_add(1, Ordering::SeqCst);
        let job = accepted["job_id"].as_str().unwrap_or_default().to_string();
        // The next upload once this one's parse has ended.
        while landing.load(Ordering::SeqCst) {
            let status: Value = http
                .get(url.replace("/inventory/upload", &format!("/jobs/{job}")))
                .bearer_auth(&token)
                .send()
                .await?
                .json()
                .await?;
            if matches!(status["status"].as_str(), Some("success" | "error")) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    Ok(())
}

fn tempdir(data_dir: &Path) -> anyhow::Result<PathBuf> {
    let dir = data_dir.join("wrk");
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// A wrk script sending one request.
fn script(
    dir: &Path,
    name: &str,
    method: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> anyhow::Result<PathBuf> {
    let mut lua = format!("wrk.method = \"{method}\"\n");
    if let Some(token) = token {
        lua.push_str(&format!(
            "wrk.headers[\"Authorization\"] = \"Bearer {token}\"\n"
        ));
    }
    if let Some(body) = body {
        lua.push_str("wrk.headers[\"Content-Type\"] = \"application/json\"\n");
        lua.push_str(&format!("wrk.body = [[{body}]]\n"));
    }
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, lua)?;
    Ok(path)
}

/// A wrk script reading pages of 50 at varying offsets.
fn paged_script(dir: &Path, token: &str, total: usize) -> anyhow::Result<PathBuf> {
    let lua = format!(
        "wrk.headers[\"Authorization\"] = \"Bearer {token}\"\n\
         local n = 0\n\
         request = function()\n\
           n = n + 1\n\
           local skip = (n * 97) % {}\n\
           return wrk.format(\"GET\", wrk.path .. \"?limit=50&skip=\" .. skip)\n\
         end\n",
        total - 50
    );
    let path = dir.join("pages.lua");
    std::fs::write(&path, lua)?;
    Ok(path)
}

fn wrk(read: &Read) -> anyhow::Result<Measured> {
    let output = Command::new("wrk")
        .args(["-t2", "-c", CONNECTIONS, "-d", SECONDS, "--latency", "-s"])
        .arg(&read.script)
        .arg(&read.url)
        .output()
        .map_err(|e| anyhow::anyhow!("running wrk: {e}"))?;
    let out = String::from_utf8_lossy(&output.stdout);
    let field = |prefix: &str| {
        out.lines()
            .map(str::trim)
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.split_whitespace().nth(1))
            .map(String::from)
    };
    let requests_per_sec = field("Requests/sec:")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("cannot read wrk's output:\n{out}"))?;
    let errors = out
        .lines()
        .find(|l| l.contains("Non-2xx"))
        .and_then(|l| l.split(':').nth(1))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    Ok(Measured {
        requests_per_sec,
        p50_ms: field("50%").map_or(f64::NAN, |v| millis(&v)),
        p99_ms: field("99%").map_or(f64::NAN, |v| millis(&v)),
        errors,
    })
}

/// wrk's latency (`812.00us`, `3.41ms`, `1.02s`) in milliseconds.
fn millis(text: &str) -> f64 {
    let split = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().unwrap_or(f64::NAN);
    match unit {
        "us" => value / 1000.0,
        "s" => value * 1000.0,
        "m" => value * 60_000.0,
        _ => value,
    }
}
