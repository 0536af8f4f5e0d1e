//! Syncs a fake Intune tenant (managed devices with 60 detected apps each,
//! the apps read per device through Graph JSON batching with 5 % of the
//! sub-requests throttled once) into a fresh database through the real
//! pipeline (WASM connector, host HTTP and OAuth, upserts with checkpoints);
//! prints seconds, rows/s, requests the fake answered and the service's
//! peak memory (the fakes run in a child process of their own).
//! Usage: cairn-bench mdm sqlite|postgres [devices]
//! (`cairn-bench mdm fake-graph <devices>` is the child: it prints the identity
//! platform's and Graph's URLs, serves until its stdin closes, then prints
//! its request counts as JSON.)

use cairn_tests::fake_graph::{FakeGraph, GraphData};
use cairn_tests::fake_oauth::{FakeOauth, CLIENT_ID, CLIENT_SECRET, DIRECTORY_TENANT};
use serde_json::{json, Value};

const APPS_PER_DEVICE: usize = 60;
/// One device in this many has its apps sub-request throttled once.
const THROTTLED_ONE_IN: usize = 20;

pub async fn main() -> anyhow::Result<()> {
    let backend = crate::args().nth(1).unwrap_or_else(|| "sqlite".into());
    let devices: usize = crate::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    if backend == "fake-graph" {
        return serve_fakes(devices).await;
    }
    let mut fake = crate::FakeUpstream::start(&["fake-graph", &devices.to_string()]).await?;
    let auth_url = fake.line().await?;
    let graph_url = fake.line().await?;

    let bench = cairn_bench::SyncBench::new(
        &backend,
        "connectors/mdm",
        "mdm",
        "microsoft-intune",
        &json!({"auth_url": auth_url, "graph_url": graph_url, "tenant_id": DIRECTORY_TENANT, "client_id": CLIENT_ID, "page_size": 250}),
        &json!({"client_secret": CLIENT_SECRET}),
    )
    .await?;
    let (secs, outcome) = bench.run().await?;
    let items = bench.count("inventory_items").await?;
    let records = bench.count("source_records").await?;
    let peak = cairn_bench::peak_rss_mib();
    let counts: Value = match fake.stop().await? {
        Some(line) => serde_json::from_str(&line)?,
        None => Value::Null,
    };
    println!(
        "cairn mdm sync benchmark: {backend}, {devices} managed devices x {APPS_PER_DEVICE} apps, \
         1 in {THROTTLED_ONE_IN} app sub-requests throttled once"
    );
    println!(
        "  outcome {outcome:?}: {items} inventory items + {records} records (devices and apps)"
    );
    println!(
        "  {:.1} s, {:.0} rows/s, service peak memory {peak:.0} MiB (goal: within 60 s)",
        secs,
        (items + records) as f64 / secs
    );
    println!(
        "  requests: {} device pages, {} batch calls carrying {} sub-requests ({} throttled), \
         {} token requests",
        counts["device_pages"],
        counts["batch_calls"],
        counts["sub_requests"],
        counts["throttled"],
        counts["token_requests"]
    );
    bench.finish().await;
    Ok(())
}

/// The child process: the identity platform and Graph, until stdin closes.
async fn serve_fakes(devices: usize) -> anyhow::Result<()> {
    let mut data = GraphData {
        device_page_size: 1000,
        apps_page_size: 100,
        directory_page_size: 999,
        ..GraphData::default()
    };
    for n in 0..devices {
        let id = format!("{n:08}-0000-4000-8000-000000000000");
        data.devices.push(json!({
            "@odata.type": "#microsoft.graph.managedDevice", "id": id,
            "deviceName": format!("LAPTOP-{n:06}"), "operatingSystem": "Windows",
            "osVersion": "10.0.22631.3447", "userPrincipalName": format!("user{n}@contoso.example"),
            "userDisplayName": format!("User {n}"), "complianceState": "compliant",
            "managedDeviceOwnerType": "company", "serialNumber": format!("SN{n:08}"),
            "lastSyncDateTime": "2026-11-20T08:00:00Z"
        }));
        let apps: Vec<Value> = (0..APPS_PER_DEVICE)
            .map(|a| {
                json!({"@odata.type": "#microsoft.graph.detectedApp", "id": format!("app-{a}-{}", a % 3),
                       "displayName": format!("Application {a}"), "version": format!("{}.{}.{}", a % 7, a % 13, a % 3),
                       "sizeInByte": 1024 * a, "deviceCount": devices, "publisher": format!("Publisher {}", a % 9),
                       "platform": "windows"})
            })
            .collect();
        data.apps.insert(id.clone(), apps);
        if n % THROTTLED_ONE_IN == 0 {
            data.throttle_once.insert(id);
        }
    }
    let idp = FakeOauth::start().await;
    let graph = FakeGraph::start(&idp, data).await;
    println!("{}", idp.base_url);
    println!("{}", graph.base_url);
    let mut stdin = tokio::io::stdin();
    let mut sink = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut stdin, &mut sink).await?;
    let data = graph.data.lock().unwrap();
    println!(
        "{}",
        json!({"device_pages": data.device_pages, "batch_calls": data.batch_calls,
               "sub_requests": data.sub_requests, "throttled": data.throttled,
               "token_requests": idp.token_requests()})
    );
    Ok(())
}
