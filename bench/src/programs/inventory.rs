//! The inventory goals, through the real service on one backend:
//! - rollup rebuild of 1,000,000 inventory rows (50,000 devices, 2,000
//!   distinct applications written with realistic name variants): seconds
//!   and peak memory; then the incremental rebuild after 1% of the devices
//!   (10,000 rows) reported new versions of their software;
//! - structured search over 100,000 devices with a nested three-rule query:
//!   p50/p99 over HTTP;
//! - `GET /inventory/applications` pages of 50 over 30,000 applications:
//!   p50/p99 over HTTP.
//!
//! Usage: cairn-bench inventory sqlite|postgres [rows]; `BENCH_ONLY=search,list`
//! runs only the named parts (rollup, search, list).

use std::time::Instant;

use cairn_bench::{row, write_pages, Client};
use cairn_inventory::rollup::Mode;
use cairn_plugins::MappedRow;
use serde_json::{json, Value};

const DEVICES: usize = 50_000;
const APPLICATIONS: usize = 2_000;
const SEARCH_DEVICES: usize = 100_000;
const LIST_APPLICATIONS: usize = 30_000;
const SAMPLES: usize = 300;

/// The name an agent reports for application `a` on device `d`: some
/// installers append their product code, some are (x64) builds, vendors
/// are spelled two ways.
fn variant(a: usize, d: usize) -> (String, String) {
    let base = format!("Application {a:04}");
    let name = match (a % 10, d % 3) {
        (0, 0) => format!("{base} ({:08x}{:04x})", a * 7919, d % 65536),
        (1, _) => format!("{base} ({{{:08X}-4F89-11D3-9A0C-{:012X}}})", a, d),
        (2, _) => format!("{base} (x64)"),
        _ => base,
    };
    let vendor = if d.is_multiple_of(5) {
        format!("Vendor {} Inc.", a % 150)
    } else {
        format!("Vendor {}", a % 150)
    };
    (name, vendor)
}

pub async fn main() -> anyhow::Result<()> {
    let backend = crate::args().nth(1).unwrap_or_else(|| "sqlite".into());
    let rows: usize = crate::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let (db, url) = cairn_bench::fresh_database(&backend).await?;
    db.close().await;
    let data_dir = std::env::temp_dir().join(format!("cairn-bench-inv-{}", std::process::id()));
    let settings = cairn_core::settings::Settings {
        listen: "127.0.0.1:0".into(),
        database_url: url.clone(),
        data_dir: data_dir.clone(),
        connectors_dir: data_dir.join("components"),
        rate_limit_per_minute: 0,
        job_workers: 0,
        ..Default::default()
    }
    .prepare()?;
    let server = cairn::server::start(settings).await?;
    let db = server.state.db.clone();
    let client = Client {
        http: reqwest::Client::new(),
        base: server.base_url(),
    };
    println!("cairn inventory benchmark: {backend}");
    let only = std::env::var("BENCH_ONLY").unwrap_or_else(|_| "rollup,search,list".into());
    if only.contains("rollup") {
        rollup(&db, &client, rows).await?;
    }
    if only.contains("search") {
        search(&db, &client).await?;
    }
    if only.contains("list") {
        list(&db, &client).await?;
    }
    server.stop().await?;
    cairn_bench::drop_database(db, &url).await;
    let _ = std::fs::remove_dir_all(data_dir);
    Ok(())
}

async fn rollup(db: &cairn_core::db::Db, client: &Client, rows: usize) -> anyhow::Result<()> {
    // Rollup: 1,000,000 rows over 50,000 devices and 2,000 applications.
    let (_, rollup_tenant) = client.register("rollup@bench.example").await?;
    let per_device = rows / DEVICES;
    let seeded = Instant::now();
    let written = write_pages(
        db,
        &rollup_tenant,
        "rmm",
        (0..DEVICES).flat_map(|d| device_rows(d, per_device, 0)),
    )
    .await?;
    println!(
        "  seeded {written} inventory rows in {:.1} s",
        seeded.elapsed().as_secs_f64()
    );
    // The rebuild's own figure: the seeding's high-water mark is not its.
    cairn_bench::reset_peak_rss();
    let rss_before = cairn_bench::rss_mib();
    let started = Instant::now();
    let stats =
        cairn_inventory::rollup::rebuild_until_current(db, &rollup_tenant, Mode::Whole).await?;
    let secs = started.elapsed().as_secs_f64();
    println!(
        "  rollup: {} rows -> {} applications, {} assets in {secs:.2} s; peak memory during it {:.0} MiB (resident when it began {rss_before:.0} MiB)",
        stats.items,
        stats.applications,
        stats.assets,
        cairn_bench::peak_rss_mib()
    );

    // 1% of the devices report new versions of everything they run: their
    // old rows go (as a sync's prune deletes them) and new rows come.
    let changed: Vec<usize> = (0..DEVICES).step_by(100).collect();
    let names: Vec<String> = changed.iter().map(|&d| device_name(d)).collect();
    sqlx::query(&format!(
        "DELETE FROM inventory_items WHERE tenant_id = $1 AND device_name IN ({})",
        cairn_core::db::json_text_values(db.backend, 2)
    ))
    .bind(rollup_tenant.as_str())
    .bind(serde_json::to_string(&names)?)
    .execute(&db.pool)
    .await?;
    let rewritten = write_pages(
        db,
        &rollup_tenant,
        "rmm",
        changed.iter().flat_map(|&d| device_rows(d, per_device, 1)),
    )
    .await?;
    let started = Instant::now();
    let stats =
        cairn_inventory::rollup::rebuild_until_current(db, &rollup_tenant, Mode::Incremental)
            .await?;
    println!(
        "  incremental rollup after {rewritten} of {written} rows changed ({} queued changes): {} applications and {} assets recomputed from {} rows in {:.3} s",
        stats.changes.map_or("none; it rebuilt whole".to_string(), |c| c.to_string()),
        stats.applications,
        stats.assets,
        stats.items,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn device_name(d: usize) -> String {
    format!("WS-{d:06}.corp.example.com")
}

/// Device `d`'s rows: a spread of the catalogue, each at a version that
/// moves on with `release`.
fn device_rows(d: usize, per_device: usize, release: usize) -> impl Iterator<Item = MappedRow> {
    (0..per_device).map(move |k| {
        let a = (d * 7 + k * 101) % APPLICATIONS;
        let (name, vendor) = variant(a, d);
        let version = format!("{}.{}.{}", a % 9 + release, d % 4, k % 3);
        let platform = ["windows", "Windows", "macOS", "linux"][d % 4];
        row(device_name(d), name, vendor, version, platform)
    })
}

async fn search(db: &cairn_core::db::Db, client: &Client) -> anyhow::Result<()> {
    // 100,000 devices, three apps each, half with an edr record.
    let (search_token, search_tenant) = client.register("search@bench.example").await?;
    write_pages(
        db,
        &search_tenant,
        "rmm",
        (0..SEARCH_DEVICES).flat_map(|d| {
            let platform = if d.is_multiple_of(3) {
                "macos"
            } else {
                "windows"
            };
            [
                row(
                    format!("PC-{d:06}"),
                    "Google Chrome".into(),
                    "Google".into(),
                    format!("120.0.{}", d % 50),
                    platform,
                ),
                row(
                    format!("PC-{d:06}"),
                    format!("Line of business {}", d % 400),
                    "Acme".into(),
                    "1.0".into(),
                    platform,
                ),
                row(
                    format!("PC-{d:06}"),
                    "7-Zip 23.01 (x64)".into(),
                    "Igor Pavlov".into(),
                    "23.01".into(),
                    platform,
                ),
            ]
        }),
    )
    .await?;
    write_pages(
        db,
        &search_tenant,
        "edr",
        cairn_bench::edr_agents(SEARCH_DEVICES),
    )
    .await?;
    let built =
        cairn_inventory::rollup::rebuild_until_current(db, &search_tenant, Mode::Incremental)
            .await?;
    settle(db).await?;
    let query = json!({
        "query": {"kind": "group", "combinator": "and", "rules": [
            {"kind": "rule", "field": "os_platform", "operator": "equals", "value": "windows"},
            {"kind": "group", "combinator": "or", "rules": [
                {"kind": "rule", "field": "edr.active_threats", "operator": "gte", "value": "3"},
                {"kind": "rule", "field": "device_name", "operator": "starts_with", "value": "PC-0999"}
            ]}
        ]},
        "limit": 50
    });
    let mut samples = vec![];
    let mut total = Value::Null;
    for _ in 0..SAMPLES {
        let (took, body) = client
            .timed(
                &search_token,
                reqwest::Method::POST,
                "/api/v1/devices/devices/search",
                Some(&query),
            )
            .await?;
        total = body["total"].clone();
        samples.push(took);
    }
    println!(
        "  device search over {} assets (nested three rules, {total} matches, page of 50): p50 {:.1} ms, p99 {:.1} ms",
        built.assets,
        cairn_bench::percentile_ms(&mut samples, 0.50),
        cairn_bench::percentile_ms(&mut samples, 0.99)
    );

    Ok(())
}

async fn list(db: &cairn_core::db::Db, client: &Client) -> anyhow::Result<()> {
    // 30,000 applications, pages of 50.
    let (list_token, list_tenant) = client.register("list@bench.example").await?;
    write_pages(
        db,
        &list_tenant,
        "rmm",
        cairn_bench::applications(LIST_APPLICATIONS),
    )
    .await?;
    let built =
        cairn_inventory::rollup::rebuild_until_current(db, &list_tenant, Mode::Incremental).await?;
    settle(db).await?;
    let mut samples = vec![];
    for i in 0..SAMPLES {
        let skip = (i * 97) % (LIST_APPLICATIONS - 50);
        let (took, _) = client
            .timed(
                &list_token,
                reqwest::Method::GET,
                &format!("/api/v1/inventory/applications?limit=50&skip={skip}"),
                None,
            )
            .await?;
        samples.push(took);
    }
    println!(
        "  GET /inventory/applications over {} applications (page of 50, varying skip): p50 {:.1} ms, p99 {:.1} ms",
        built.applications,
        cairn_bench::percentile_ms(&mut samples, 0.50),
        cairn_bench::percentile_ms(&mut samples, 0.99)
    );
    Ok(())
}

/// On PostgreSQL, what autovacuum does within a minute of a bulk write
/// (migrations 0028 and 0029 ask it to act early on the search terms):
/// reads are measured on the service as it settles, not against a
/// visibility map and statistics that have not caught up with the write
/// (the planner would take 30,000 fresh applications for 120 and sort
/// them all for a page).
async fn settle(db: &cairn_core::db::Db) -> anyhow::Result<()> {
    if db.backend == cairn_core::db::Backend::Postgres {
        sqlx::query("VACUUM ANALYZE").execute(&db.pool).await?;
    }
    Ok(())
}
