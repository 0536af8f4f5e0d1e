//! CSV and Excel ingestion through the generic software provider, against
//! a release build of the service in its own process on one backend:
//! - a ~100 MB software inventory CSV (about 1,000,000 rows, with title
//!   rows above the header);
//! - a ~50 MB xlsx workbook of the same shape.
//!
//! Each is uploaded over HTTP and timed until its upload reads
//! `succeeded` (upload, parse, mapping in the WASM provider, staging and
//! the swap); prints seconds, rows/s and the service's
//! peak memory, then how long the rollup it triggered took; and the p50/p99
//! latency of logins with the service idle and while the rows are being
//! swapped in.
//!
//! Usage (from the repository root, after `cargo xtask components` and a
//! release build of `cairn`): cairn-bench csv sqlite|postgres [csv-rows] [xlsx-rows]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const DEVICES: usize = 50_000;
const APPLICATIONS: usize = 2_000;
const PLATFORMS: [&str; 4] = [
    "Windows 10 Enterprise",
    "Win11",
    "macOS 14.6",
    "Ubuntu 22.04",
];

/// Row `i` of the inventory: (device, application, vendor, version,
/// platform, email, user, publisher).
fn row(i: usize) -> [String; 8] {
    let device = i % DEVICES;
    let app = (i / DEVICES * 7919 + device * 31) % APPLICATIONS;
    [
        format!("DEVICE-{device:06}"),
        format!("Application {app:04} (x64)"),
        format!("Vendor {}", app % 150),
        format!("{}.{}.{}", app % 30, device % 12, (i / DEVICES) % 1000),
        PLATFORMS[device % 4].to_string(),
        format!("u{:05}@corp.com", device % 20_000),
        format!("User {:05}", device % 20_000),
        format!("Publisher {}", app % 150),
    ]
}

const HEADER: [&str; 8] = [
    "Computer Name",
    "Software",
    "Manufacturer",
    "Version",
    "Operating System",
    "E-mail",
    "Logged On User",
    "Publisher",
];

fn write_csv(path: &Path, rows: usize) -> anyhow::Result<u64> {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(out, "Software inventory export")?;
    writeln!(out, "Generated 2026-11-21 for all sites")?;
    writeln!(out, "{}", HEADER.join(","))?;
    for i in 0..rows {
        writeln!(out, "{}", row(i).join(","))?;
    }
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

fn write_xlsx(path: &Path, rows: usize) -> anyhow::Result<u64> {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.write_string(0, 0, "Software inventory export")?;
    // Two columns the provider does not use, as real exports carry.
    let extra = ["Install Location", "Installed On"];
    for (c, title) in HEADER.iter().chain(&extra).enumerate() {
        sheet.write_string(2, c as u16, *title)?;
    }
    for i in 0..rows {
        let r = i as u32 + 3;
        let cells = row(i);
        for (c, cell) in cells.iter().enumerate() {
            sheet.write_string(r, c as u16, cell)?;
        }
        sheet.write_string(r, 8, format!("C:\\Program Files\\{}\\", cells[1]))?;
        sheet.write_string(r, 9, format!("2026-{:02}-{:02}", i % 12 + 1, i % 28 + 1))?;
    }
    workbook.save(path)?;
    Ok(std::fs::metadata(path)?.len())
}

/// The service in its own process, so its memory is its own.
struct Service {
    child: Child,
    url: String,
}

impl Service {
    fn start(database_url: &str, data_dir: &Path, connectors: &Path) -> anyhow::Result<Service> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let listen = format!("127.0.0.1:{port}");
        let child = Command::new("target/release/cairn")
            .arg("serve")
            .env("CAIRN_LISTEN", &listen)
            .env("CAIRN_DATABASE_URL", database_url)
            .env("CAIRN_DATA_DIR", data_dir)
            .env("CAIRN_CONNECTORS_DIR", connectors)
            .env("CAIRN_CSV_MAX_UPLOAD_MB", "200")
            .env("CAIRN_RATE_LIMIT_PER_MINUTE", "0")
            // Logins carry a forwarded address each, past the per-address
            // login limit.
            .env("CAIRN_TRUSTED_PROXIES", "127.0.0.1/32")
            .env("CAIRN_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()?;
        Ok(Service {
            child,
            url: format!("http://{listen}"),
        })
    }

    fn peak_mib(&self) -> f64 {
        cairn_bench::peak_rss_mib_of(&self.child.id().to_string())
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Figures {
    seconds: f64,
    rows: u64,
    peak_mib: f64,
    rollup_seconds: f64,
    /// Logins with the service idle, then while the upload's rows were
    /// being swapped in.
    logins_idle: Vec<Duration>,
    logins_during_swap: Vec<Duration>,
}

const EMAIL: &str = "admin@bench.example";
const PASSWORD: &str = "bench-password-1";

/// One login from forwarded address number `n`; its latency.
async fn login(http: &reqwest::Client, url: &str, n: u32) -> anyhow::Result<Duration> {
    let started = Instant::now();
    http.post(format!("{url}/api/v1/auth/login"))
        .header(
            "x-forwarded-for",
            format!("10.{}.{}.{}", n >> 16 & 255, n >> 8 & 255, n & 255),
        )
        .json(&json!({"email": EMAIL, "password": PASSWORD}))
        .send()
        .await?
        .error_for_status()?;
    Ok(started.elapsed())
}

/// Logs in over and over while `swapping` is set, until `done`; the
/// latencies of the logins that started during the swap.
async fn login_during_swap(
    http: reqwest::Client,
    url: String,
    swapping: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
) -> anyhow::Result<Vec<Duration>> {
    let mut samples = vec![];
    let mut n = 1000;
    while !done.load(Ordering::Relaxed) {
        if !swapping.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        }
        n += 1;
        samples.push(login(&http, &url, n).await?);
    }
    Ok(samples)
}

async fn ingest(
    backend: &str,
    connectors: &Path,
    file: &Path,
    name: &str,
) -> anyhow::Result<Figures> {
    let (db, url) = cairn_bench::fresh_database(backend).await?;
    db.close().await;
    let data_dir = std::env::temp_dir().join(format!(
        "cairn-cairn-bench csv-{}",
        uuid::Uuid::new_v4().simple()
    ));
    let service = Service::start(&url, &data_dir, connectors)?;
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while http
        .get(format!("{}/health", service.url))
        .send()
        .await
        .is_err()
    {
        anyhow::ensure!(Instant::now() < deadline, "the service did not start");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let admin: Value = http
        .post(format!("{}/api/v1/auth/register", service.url))
        .json(&json!({"email": EMAIL, "password": PASSWORD}))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let token = admin["access_token"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let mut logins_idle = vec![];
    for n in 0..50 {
        logins_idle.push(login(&http, &service.url, n).await?);
    }
    let swapping = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let logins = tokio::spawn(login_during_swap(
        http.clone(),
        service.url.clone(),
        swapping.clone(),
        done.clone(),
    ));

    let started = Instant::now();
    let size = std::fs::metadata(file)?.len();
    let body = reqwest::Body::from(tokio::fs::File::open(file).await?);
    let part = reqwest::multipart::Part::stream_with_length(body, size).file_name(name.to_string());
    let accepted: Value = http
        .post(format!("{}/api/v1/inventory/upload", service.url))
        .bearer_auth(&token)
        .multipart(reqwest::multipart::Form::new().part("file", part))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let id = accepted["id"].as_str().unwrap_or_default().to_string();
    let get = async |path: String| -> anyhow::Result<Value> {
        Ok(http
            .get(format!("{}{path}", service.url))
            .bearer_auth(&token)
            .send()
            .await?
            .json()
            .await?)
    };
    let upload = loop {
        let upload = get(format!("/api/v1/inventory/uploads/{id}")).await?;
        if upload["status"] == "success" || upload["status"] == "error" {
            break upload;
        }
        if let Some(job) = upload["job_id"].as_str() {
            let job = get(format!("/api/v1/jobs/{job}")).await?;
            swapping.store(job["progress"]["phase"] == "replacing", Ordering::Relaxed);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    done.store(true, Ordering::Relaxed);
    let logins_during_swap = logins.await??;
    let seconds = started.elapsed().as_secs_f64();
    let peak_mib = service.peak_mib();
    anyhow::ensure!(upload["status"] == "success", "upload failed: {upload}");
    let rows = upload["rows_imported"].as_u64().unwrap_or(0);

    let rollup_started = Instant::now();
    loop {
        let jobs = get("/api/v1/jobs?kind=rollup".into()).await?;
        let items = jobs["items"].as_array().cloned().unwrap_or_default();
        if !items.is_empty()
            && items
                .iter()
                .all(|j| j["status"] == "success" || j["status"] == "error")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rollup_seconds = rollup_started.elapsed().as_secs_f64();
    drop(service);
    let db = cairn_core::db::Db::connect(&url, 1).await?;
    cairn_bench::drop_database(db, &url).await;
    let _ = std::fs::remove_dir_all(data_dir);
    Ok(Figures {
        seconds,
        rows,
        peak_mib,
        rollup_seconds,
        logins_idle,
        logins_during_swap,
    })
}

fn connectors_dir() -> anyhow::Result<PathBuf> {
    let built = Path::new("target/components/wasm32-wasip2/release/software_inventory.wasm");
    anyhow::ensure!(
        built.is_file(),
        "{} is missing; run `cargo xtask components` first",
        built.display()
    );
    let dir = std::env::temp_dir().join(format!("cairn-bench-providers-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::copy(built, dir.join("software_inventory.wasm"))?;
    Ok(dir)
}

fn report(label: &str, bytes: u64, figures: &mut Figures) {
    println!(
        "  {label}: {:.0} MB, {} rows in {:.1} s = {:.0} rows/s, {:.1} MB/s; service peak memory {:.0} MiB; then the rollup of those rows took {:.1} s",
        bytes as f64 / 1e6,
        figures.rows,
        figures.seconds,
        figures.rows as f64 / figures.seconds,
        bytes as f64 / 1e6 / figures.seconds,
        figures.peak_mib,
        figures.rollup_seconds,
    );
    println!(
        "        login p50/p99: {:.1}/{:.1} ms idle; {:.1}/{:.1} ms over {} logins while the rows were swapped in",
        cairn_bench::percentile_ms(&mut figures.logins_idle, 0.50),
        cairn_bench::percentile_ms(&mut figures.logins_idle, 0.99),
        cairn_bench::percentile_ms(&mut figures.logins_during_swap, 0.50),
        cairn_bench::percentile_ms(&mut figures.logins_during_swap, 0.99),
        figures.logins_during_swap.len(),
    );
}

pub async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = crate::args().collect();
    let backend = args.get(1).map(String::as_str).unwrap_or("sqlite");
    let csv_rows: usize = args
        .get(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let xlsx_rows: usize = args
        .get(3)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let connectors = connectors_dir()?;
    let work = std::env::temp_dir().join(format!("cairn-bench-files-{}", std::process::id()));
    std::fs::create_dir_all(&work)?;
    let csv = work.join("inventory.csv");
    let xlsx = work.join("inventory.xlsx");
    let csv_bytes = write_csv(&csv, csv_rows)?;
    let xlsx_bytes = write_xlsx(&xlsx, xlsx_rows)?;
    println!(
        "cairn CSV ingestion benchmark ({backend}): generic software provider, upload to `success`"
    );
    let mut figures = ingest(backend, &connectors, &csv, "inventory.csv").await?;
    report("CSV ", csv_bytes, &mut figures);
    let mut figures = ingest(backend, &connectors, &xlsx, "inventory.xlsx").await?;
    report("xlsx", xlsx_bytes, &mut figures);
    let _ = std::fs::remove_dir_all(work);
    let _ = std::fs::remove_dir_all(connectors);
    Ok(())
}
