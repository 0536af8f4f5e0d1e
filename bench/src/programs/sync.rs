//! Syncs a fake rmm (ConnectWise Automate) serving 20,000 computers with 25
//! applications each through the real pipeline (WASM connector, host HTTP,
//! upserts with checkpoints) on the job runtime, as the service runs a sync;
//! prints rows/s, seconds, how long the connector's fetches alone take and
//! the service's peak memory (the fake runs in a child process of its own),
//! and the per-record cost of `map` in WASM against the same mapping
//! compiled natively.
//! Usage: cairn-bench sync sqlite|postgres [computers]; `BENCH_ONLY=map` skips
//! the syncs, `BENCH_MAP_ROUNDS` (10) sets how often the map batch runs.
//! (`cairn-bench sync fake-rmm <computers>` is the child: it prints its URL and
//! serves until its stdin closes.)

use std::time::Instant;

use cairn_plugins::CallScope;
use cairn_tests::fake_rmm::{apps, computer, FakeRmm, RmmData, PASSWORD, USERNAME};
use serde_json::{json, Value};

const APPS_PER_COMPUTER: usize = 25;

pub async fn main() -> anyhow::Result<()> {
    let backend = crate::args().nth(1).unwrap_or_else(|| "sqlite".into());
    let computers: usize = crate::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000);

    if backend == "fake-rmm" {
        return serve_fake(computers).await;
    }
    let app_names = app_names();
    let mut fake = crate::FakeUpstream::start(&["fake-rmm", &computers.to_string()]).await?;
    let base_url = fake.line().await?;

    let bench = cairn_bench::SyncBench::new(
        &backend,
        "connectors/rmm",
        "rmm",
        "connectwise-automate",
        &json!({"base_url": base_url, "username": USERNAME, "page_size": 1000}),
        &json!({"password": PASSWORD}),
    )
    .await?;
    if std::env::var("BENCH_ONLY").map_or(true, |only| only != "map") {
        sync_twice(&bench, &backend, computers).await?;
    }

    // map across the WASM boundary against the same code compiled natively.
    let connector = bench.plugins.area_connectors("rmm")[0].clone();
    let mut batch: Vec<Value> = Vec::with_capacity(1000);
    for id in 1..=1000i64 {
        let mut c = computer(id, &format!("WS-{id:06}"), (1, "Acme"), &[]);
        c["_Software"] = Value::Array(apps(&app_names));
        batch.push(c);
    }
    let rounds: usize = std::env::var("BENCH_MAP_ROUNDS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10);
    // The records as text, as a fetch hands them over, to both sides: only
    // mapping is timed, from text to the rows the host writes.
    let texts: Vec<String> = batch.iter().map(Value::to_string).collect();
    // The three are timed in turns, round by round, so a machine that
    // speeds up or slows down meanwhile (a shared one does, by a quarter
    // within seconds) weighs on each alike.
    let native = |as_text: bool| -> anyhow::Result<std::time::Duration> {
        let started = Instant::now();
        for text in &texts {
            // Parsed and mapped; with `as_text`, its rows also carry their
            // JSON as text, the form the host stores and a component hands
            // over.
            let parsed: Value = serde_json::from_str(text)?;
            let rows = rmm::map_computer(&parsed).map_err(anyhow::Error::msg)?;
            if as_text {
                for row in &rows {
                    if let cairn_sdk::Row::Record(r) = row {
                        std::hint::black_box((r.fields.to_string(), r.body.to_string()));
                    }
                }
            }
            std::hint::black_box(rows);
        }
        Ok(started.elapsed())
    };
    let (mut wasm, mut native_rows, mut native_map) = Default::default();
    for _ in 0..rounds {
        let started = Instant::now();
        let mapped = bench
            .plugins
            .map_records(&connector, CallScope::default(), "computers", &texts)
            .await?;
        assert_eq!(mapped.len(), batch.len());
        drop(mapped);
        wasm += started.elapsed();
        native_rows += native(true)?;
        native_map += native(false)?;
    }
    let per_record =
        |total: std::time::Duration| total.as_secs_f64() / (rounds * batch.len()) as f64;
    let (wasm_per_record, native_rows, native_map) = (
        per_record(wasm),
        per_record(native_rows),
        per_record(native_map),
    );
    println!(
        "  map per record (25 applications): WASM {:.1} µs; native {:.1} µs with its rows' JSON \
         as text (ratio {:.2}x, goal: within 1.5x), {:.1} µs without (ratio {:.2}x)",
        wasm_per_record * 1e6,
        native_rows * 1e6,
        wasm_per_record / native_rows,
        native_map * 1e6,
        wasm_per_record / native_map,
    );
    bench.finish().await;
    fake.stop().await?;
    Ok(())
}

/// A first sync, then the same again with nothing changed upstream.
async fn sync_twice(
    bench: &cairn_bench::SyncBench,
    backend: &str,
    computers: usize,
) -> anyhow::Result<()> {
    let server_cpu_now = || {
        (backend == "postgres")
            .then(cairn_bench::postgres_cpu_seconds)
            .flatten()
    };
    // The local server's CPU seconds since `before`, when it is measured.
    let server_cpu_since = |before: Option<f64>| Some(server_cpu_now()? - before?);
    let (service_before, server_before) = (cairn_bench::cpu_seconds(), server_cpu_now());
    let (secs, outcome) = bench.run().await?;
    let service_cpu = cairn_bench::cpu_seconds() - service_before;
    let server_cpu = server_cpu_since(server_before)
        .map(|spent| format!(", local PostgreSQL server {spent:.1} s"))
        .unwrap_or_default();
    let items = bench.count("inventory_items").await?;
    let records = bench.count("source_records").await?;
    let rows = (items + records) as f64;
    println!("cairn rmm sync benchmark: {backend}, {computers} computers x {APPS_PER_COMPUTER} applications");
    println!("  outcome {outcome:?}: {items} inventory items + {records} device records");
    println!(
        "  {:.1} s, {:.0} rows/s, service peak memory {:.0} MiB (goals: 50,000 rows/s, 300 MB)",
        secs,
        rows / secs,
        cairn_bench::peak_rss_mib()
    );
    // What the sync cost in CPU, steadier than seconds on a shared machine
    // (the fake upstream runs in a process of its own and is not counted).
    println!("  CPU: service {service_cpu:.1} s{server_cpu}");
    // Copied twice and the faster kept: the ceiling, not a copy that met
    // the machine busy.
    let (mut raw, mut each) = (f64::INFINITY, vec![]);
    for _ in 0..2 {
        let server_before = server_cpu_now();
        let secs = bench.raw_copy_secs("inventory_items").await?
            + bench.raw_copy_secs("source_records").await?;
        let server = server_cpu_since(server_before)
            .map(|spent| format!(" (server CPU {spent:.1} s)"))
            .unwrap_or_default();
        each.push(format!("{secs:.1} s{server}"));
        raw = raw.min(secs);
    }
    let each = each.join(", ");
    println!(
        "  raw: the engine copies the same rows into tables of the same shape and indexes, \
         twice: {each}; the faster, {:.0} rows/s; the sync runs at {:.0} % of that",
        rows / raw,
        rows / secs / (rows / raw) * 100.0
    );

    let fetch = bench.fetch_alone_secs().await?;
    println!(
        "  fetch alone: the connector's pages one after another, nothing mapped or written, \
         {fetch:.1} s ({:.0} % of the sync's time)",
        fetch / secs * 100.0
    );

    // The same sync again, nothing changed upstream: every row is seen
    // again and stamped with the new run.
    let (secs, outcome) = bench.run().await?;
    let changes = bench.count("inventory_changes").await?;
    println!(
        "  again, nothing changed: outcome {outcome:?}, {:.1} s, {:.0} rows/s, {changes} entries \
         in the matcher's change queue (none before a tenant's first match)",
        secs,
        rows / secs
    );
    Ok(())
}

fn app_names() -> Vec<(String, String)> {
    (0..APPS_PER_COMPUTER)
        .map(|i| {
            (
                format!("Application {i} (x64)"),
                format!("{}.{}.{}", i % 7, i % 13, i),
            )
        })
        .collect()
}

/// The child process: the fake Automate, until stdin closes.
async fn serve_fake(computers: usize) -> anyhow::Result<()> {
    let mut data = RmmData {
        clients: vec![json!({"Id": 1, "Name": "Acme"})],
        ..RmmData::default()
    };
    let app_names = app_names();
    for id in 1..=computers as i64 {
        data.computers
            .push(computer(id, &format!("WS-{id:06}"), (1, "Acme"), &[]));
        data.software.insert(id, apps(&app_names));
    }
    let rmm = FakeRmm::start(data).await;
    println!("{}", rmm.base_url);
    let mut stdin = tokio::io::stdin();
    let mut sink = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut stdin, &mut sink).await?;
    Ok(())
}
