//! Syncs a fake SentinelOne console (agents with 80 installed applications
//! each, read one request per agent, and threats) into a fresh database
//! through the real pipeline; prints seconds, rows/s, requests the fake
//! answered and the service's peak memory (the fake runs in a child
//! process of its own).
//! Usage: cairn-bench edr sqlite|postgres [agents] [threats]
//! (`cairn-bench edr fake-s1 <agents> <threats>` is the child: it prints its URL,
//! serves until its stdin closes, then prints its request count.)

use cairn_tests::fake_sentinelone::{FakeSentinelOne, SentinelOneData, API_TOKEN};
use serde_json::{json, Value};

const APPS_PER_AGENT: usize = 80;

pub async fn main() -> anyhow::Result<()> {
    let arg = |n: usize| crate::args().nth(n);
    let backend = arg(1).unwrap_or_else(|| "sqlite".into());
    let agents: usize = arg(2).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let threats: usize = arg(3).and_then(|n| n.parse().ok()).unwrap_or(5_000);
    if backend == "fake-s1" {
        return serve_fake(agents, threats).await;
    }
    let mut fake =
        crate::FakeUpstream::start(&["fake-s1", &agents.to_string(), &threats.to_string()]).await?;
    let base_url = fake.line().await?;

    let bench = cairn_bench::SyncBench::new(
        &backend,
        "connectors/edr",
        "edr",
        "sentinelone",
        &json!({"base_url": base_url, "page_size": 500}),
        &json!({"api_token": API_TOKEN}),
    )
    .await?;
    let (secs, outcome) = bench.run().await?;
    let items = bench.count("inventory_items").await?;
    let records = bench.count("source_records").await?;
    let peak = cairn_bench::peak_rss_mib();
    let requests = fake.stop().await?.unwrap_or_default();
    println!(
        "cairn edr sync benchmark: {backend}, {agents} SentinelOne agents x {APPS_PER_AGENT} apps, {threats} threats"
    );
    println!("  outcome {outcome:?}: {items} inventory items + {records} records (agents, apps, threats)");
    println!(
        "  {:.1} s, {:.0} rows/s, service peak memory {peak:.0} MiB, {requests} requests answered (goal: within 60 s)",
        secs,
        (items + records) as f64 / secs
    );
    bench.finish().await;
    Ok(())
}

/// The child process: the fake console, until stdin closes.
async fn serve_fake(agents: usize, threats: usize) -> anyhow::Result<()> {
    let mut data = SentinelOneData::default();
    for n in 0..agents {
        let id = format!("{}", 700_000_000_000_000_000u64 + n as u64);
        data.agents.push(json!({
            "id": id, "uuid": format!("{n:032x}"), "computerName": format!("WS-{n:06}"),
            "osType": "windows", "osName": "Windows 11 Pro", "osRevision": "22631",
            "agentVersion": "23.4.2.14", "infected": if n % 50 == 0 { "True" } else { "False" },
            "activeThreats": (n % 50 == 0) as i64, "lastActiveDate": "2026-11-20T08:00:00.000000Z",
            "lastLoggedInUserName": format!("user{n}"), "siteName": "Default site",
            "networkInterfaces": [{"id": format!("{n}"), "inet": [format!("10.{}.{}.{}", n / 65536, (n / 256) % 256, n % 256)], "name": "Ethernet"}]
        }));
        let apps: Vec<Value> = (0..APPS_PER_AGENT)
            .map(|a| {
                json!({"installedDate": "2026-01-01T00:00:00.000000Z", "name": format!("Application {a}"),
                       "publisher": format!("Publisher {}", a % 9), "size": 1024 * a,
                       "version": format!("{}.{}.{}", a % 7, a % 13, a % 3)})
            })
            .collect();
        data.apps.insert(id, apps);
    }
    for t in 0..threats {
        let agent = &data.agents[t % agents.max(1)];
        data.threats.push(json!({
            "id": format!("{}", 900_000_000_000_000_000u64 + t as u64),
            "threatInfo": {"threatId": format!("{t}"), "threatName": format!("threat-{t}.exe"),
                "classification": if t % 3 == 0 { "Malware" } else { "PUA" }, "confidenceLevel": "malicious",
                "mitigationStatus": "mitigated", "identifiedAt": "2026-11-01T00:00:00Z",
                "sha1": format!("{t:040x}"), "filePath": format!("C:\\\\Users\\\\u\\\\threat-{t}.exe")},
            "agentRealtimeInfo": {"agentId": agent["id"], "agentComputerName": agent["computerName"]}
        }));
    }
    let fake = FakeSentinelOne::start(data).await;
    println!("{}", fake.base_url);
    let mut stdin = tokio::io::stdin();
    let mut sink = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut stdin, &mut sink).await?;
    println!("{}", fake.data.lock().unwrap().requests);
    Ok(())
}
