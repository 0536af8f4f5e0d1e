//! Syncs a fake rmm (ConnectWise Automate) serving 20,000 computers with 25
//! applications each through the real pipeline (WASM connector, host HTTP,
//! upserts with checkpoints); prints rows/s, seconds and peak memory, and the
//! per-record cost of `map` in WASM against the same mapping compiled natively.
//! Usage: bench-sync sqlite|postgres [computers]

use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn::auth::TenantId;
use cairn::integrations::sync::{SyncCaps, SyncHandler};
use cairn::integrations::{storage, SecretBox};
use cairn::jobs::{Queue, QueueTiming, Registry};
use cairn::plugins::{CallScope, Plugins};
use cairn_tests::fake_rmm::{apps, computer, FakeRmm, RmmData, PASSWORD, USERNAME};
use serde_json::{json, Value};

const APPS_PER_COMPUTER: usize = 25;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let backend = std::env::args().nth(1).unwrap_or_else(|| "sqlite".into());
    let computers: usize = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);

    let mut data = RmmData {
        clients: vec![json!({"Id": 1, "Name": "Acme"})],
        ..RmmData::default()
    };
    let app_names: Vec<(String, String)> = (0..APPS_PER_COMPUTER)
        .map(|i| {
            (
                format!("Application {i} (x64)"),
                format!("{}.{}.{}", i % 7, i % 13, i),
            )
        })
        .collect();
    let app_refs: Vec<(&str, &str)> = app_names
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    for id in 1..=computers as i64 {
        data.computers
            .push(computer(id, &format!("WS-{id:06}"), (1, "Acme"), &[]));
        data.software.insert(id, apps(&app_refs));
    }
    let rmm = FakeRmm::start(data).await;

    let connectors_dir = cairn_tests::components::connectors_dir(&["connectors/rmm"], &[]);
    let (db, url) = cairn_bench::fresh_database(&backend).await?;
    let settings = cairn::settings::Settings {
        connectors_dir,
        data_dir: std::env::temp_dir().join(format!("cairn-bench-sync-{}", std::process::id())),
        plugin_plain_http_hosts: "127.0.0.1".into(),
        ..Default::default()
    }
    .prepare()?;
    let plugins = Arc::new(Plugins::load(&settings).await?);
    let secrets = SecretBox::new(&settings.encryption_key)?;
    let tenant = TenantId(uuid::Uuid::now_v7().to_string());
    sqlx::query("INSERT INTO tenants (id, name, timezone, created_at, updated_at) VALUES ($1, 'bench', 'UTC', 0, 0)")
        .bind(tenant.as_str())
        .execute(&db.pool)
        .await?;
    storage::save_config(
        &db,
        &secrets,
        &tenant,
        "rmm",
        storage::NewConfig {
            connector: "connectwise-automate",
            settings: &json!({"base_url": rmm.base_url, "username": USERNAME, "page_size": 1000}),
            secrets: &json!({"password": PASSWORD}),
            switching: false,
        },
    )
    .await?;

    let mut registry = Registry::default();
    registry.register(
        "rmm_sync",
        SyncHandler {
            plugins: plugins.clone(),
            secrets,
            area: "rmm".into(),
            caps: SyncCaps::from_settings(&settings),
        },
        Duration::from_secs(1200),
    );
    let queue = Arc::new(Queue::new(
        db.clone(),
        registry,
        QueueTiming::from_settings(&settings),
    ));
    queue.enqueue(&tenant, "rmm_sync", &json!({})).await?;
    let started = Instant::now();
    let (_, outcome) = queue.run_one().await?.expect("the sync job");
    let secs = started.elapsed().as_secs_f64();
    let items: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM inventory_items")
        .fetch_one(&db.pool)
        .await?;
    let records: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM source_records")
        .fetch_one(&db.pool)
        .await?;
    let rows = (items + records) as f64;
    println!("cairn rmm sync benchmark: {backend}, {computers} computers x {APPS_PER_COMPUTER} applications");
    println!("  outcome {outcome:?}: {items} inventory items + {records} device records");
    println!(
        "  {:.1} s, {:.0} rows/s, peak memory {:.0} MiB (service and fake upstream in one process)",
        secs,
        rows / secs,
        cairn_bench::peak_rss_mib()
    );

    // map across the WASM boundary against the same code compiled natively.
    let connector = plugins.connector("rmm").expect("rmm loads").clone();
    let mut batch: Vec<Value> = Vec::with_capacity(1000);
    for id in 1..=1000i64 {
        let mut c = computer(id, &format!("WS-{id:06}"), (1, "Acme"), &[]);
        c["_Software"] = Value::Array(apps(&app_refs));
        batch.push(c);
    }
    let rounds = 10;
    let wasm_started = Instant::now();
    for _ in 0..rounds {
        let mapped = plugins
            .map_records(&connector, CallScope::default(), "computers", &batch)
            .await?;
        assert_eq!(mapped.len(), batch.len());
    }
    let wasm_per_record = wasm_started.elapsed().as_secs_f64() / (rounds * batch.len()) as f64;
    let native_started = Instant::now();
    for _ in 0..rounds {
        for record in &batch {
            // The same work the WASM path does: the record as text, parsed,
            // mapped.
            let text = record.to_string();
            let parsed: Value = serde_json::from_str(&text)?;
            let rows = rmm::map_computer(&parsed).map_err(anyhow::Error::msg)?;
            std::hint::black_box(rows);
        }
    }
    let native_per_record = native_started.elapsed().as_secs_f64() / (rounds * batch.len()) as f64;
    println!(
        "  map per record (25 applications): WASM {:.1} µs, native {:.1} µs, ratio {:.2}x (goal: within 2x)",
        wasm_per_record * 1e6,
        native_per_record * 1e6,
        wasm_per_record / native_per_record
    );
    cairn_bench::drop_database(db, &url).await;
    Ok(())
}
