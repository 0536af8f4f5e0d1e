//! Syncs a fake Tenable Vulnerability Management export (assets with 20
//! findings each and a software enumeration listing 40 applications, in
//! chunks of 50 assets (Tenable's default) made available while the export processes) into a
//! fresh database through the real pipeline; prints seconds, rows/s,
//! status polls and the service's peak memory (the fake runs in a child
//! process of its own); then times the copy of the findings into the
//! vulnerabilities views.
//! Usage: cairn-bench scanner sqlite|postgres [assets] [applications per asset, default 40]
//! (`cairn-bench scanner fake-tenable <assets> <applications>` is the child: it prints its URL,
//! serves until its stdin closes, then prints its poll count.)

use cairn_tests::fake_tenable::{FakeTenable, TenableData, ACCESS_KEY, SECRET_KEY};
use serde_json::json;

const FINDINGS_PER_ASSET: usize = 20;
const ASSETS_PER_CHUNK: usize = 50;

pub async fn main() -> anyhow::Result<()> {
    let arg = |n: usize| crate::args().nth(n);
    let backend = arg(1).unwrap_or_else(|| "sqlite".into());
    let assets: usize = arg(2).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let apps: usize = arg(3).and_then(|n| n.parse().ok()).unwrap_or(40);
    if backend == "fake-tenable" {
        return serve_fake(assets, apps).await;
    }
    let mut fake =
        crate::FakeUpstream::start(&["fake-tenable", &assets.to_string(), &apps.to_string()])
            .await?;
    let base_url = fake.line().await?;

    let bench = cairn_bench::SyncBench::new(
        &backend,
        "connectors/tenable",
        "scanner",
        "tenable-vm",
        &json!({"base_url": base_url, "num_assets": ASSETS_PER_CHUNK, "poll_seconds": 0.1}),
        &json!({"access_key": ACCESS_KEY, "secret_key": SECRET_KEY}),
    )
    .await?;
    let (secs, outcome) = bench.run().await?;
    let items = bench.count("inventory_items").await?;
    let records = bench.count("source_records").await?;
    let peak = cairn_bench::peak_rss_mib();
    let started = std::time::Instant::now();
    cairn_vulnerabilities::findings::scanner::refresh(&bench.db, &bench.tenant).await?;
    let copy_secs = started.elapsed().as_secs_f64();
    let copied = bench.count("vuln_scanner_findings").await?;
    let polls = fake.stop().await?.unwrap_or_default();
    println!(
        "cairn scanner sync benchmark: {backend}, Tenable export of {assets} assets x {FINDINGS_PER_ASSET} findings and {apps} applications, {ASSETS_PER_CHUNK} assets a chunk"
    );
    println!(
        "  outcome {outcome:?}: {records} records (assets and findings), {items} inventory items"
    );
    println!(
        "  {:.1} s, {:.0} findings/s, service peak memory {peak:.0} MiB, {polls} status polls (goal: within 60 s)",
        secs,
        (assets * FINDINGS_PER_ASSET) as f64 / secs
    );
    println!(
        "  findings copied for the vulnerabilities views: {copied} rows (finding x CVE) in {copy_secs:.1} s"
    );
    bench.finish().await;
    Ok(())
}

/// The child process: the fake export, until stdin closes.
async fn serve_fake(assets: usize, apps: usize) -> anyhow::Result<()> {
    let mut chunks = Vec::new();
    for first in (0..assets).step_by(ASSETS_PER_CHUNK) {
        let mut chunk = Vec::with_capacity(ASSETS_PER_CHUNK * FINDINGS_PER_ASSET);
        for n in first..(first + ASSETS_PER_CHUNK).min(assets) {
            let asset = json!({"uuid": format!("{n:08x}-6a31-48e1-9cf3-c6c3174df51d"),
                "fqdn": format!("host-{n:06}.corp.example"), "hostname": format!("10.{}.{}.{}", n / 65536, (n / 256) % 256, n % 256),
                "ipv4": format!("10.{}.{}.{}", n / 65536, (n / 256) % 256, n % 256),
                "operating_system": ["Microsoft Windows Server 2022"], "network_id": "00000000-0000-0000-0000-000000000000", "tracked": true});
            for f in 0..FINDINGS_PER_ASSET {
                let severity = ["low", "medium", "high", "critical"][f % 4];
                chunk.push(json!({"asset": asset,
                    "output": "The remote host is missing a security update.",
                    "plugin": {"id": 100_000 + f, "name": format!("KB50{f:05} security update"), "family": "Windows : Microsoft Bulletins",
                        "cve": [format!("CVE-2026-{:04}", 1000 + f), format!("CVE-2026-{:04}", 2000 + f)],
                        "cvss3_base_score": 7.8, "risk_factor": "High", "has_patch": true,
                        "synopsis": "The remote Windows host is affected by multiple vulnerabilities.",
                        "solution": "Apply the security update."},
                    "port": {"port": 445, "protocol": "TCP", "service": "cifs"},
                    "severity": severity, "severity_id": f % 4,
                    "first_found": "2026-10-01T00:00:00Z", "last_found": "2026-11-20T00:00:00Z", "state": "OPEN",
                    "indexed": "2026-11-20T08:00:34.964Z"}));
            }
        }
        chunks.push(chunk);
    }
    let listing: String = (0..apps)
        .map(|a| {
            format!(
                "Application {a:02}  [version {a}.0.{}]  [installed on 2026/11/01]\n",
                a * 7
            )
        })
        .collect();
    let output = format!(
        "The following software are installed on the remote host :\n\n{listing}\n\
         The following updates are installed :\n\n  KB5032189\n"
    );
    for chunk in chunks.iter_mut().filter(|_| apps > 0) {
        let assets: Vec<serde_json::Value> = chunk
            .iter()
            .step_by(FINDINGS_PER_ASSET)
            .map(|f| f["asset"].clone())
            .collect();
        for asset in assets {
            chunk.push(json!({"asset": asset, "output": output,
                "plugin": {"id": 20811, "name": "Microsoft Windows Installed Software Enumeration (credentialed check)",
                    "family": "Windows", "risk_factor": "None"},
                "port": {"port": 445, "protocol": "TCP", "service": "cifs"},
                "severity": "info", "severity_id": 0,
                "first_found": "2026-10-01T00:00:00Z", "last_found": "2026-11-20T00:00:00Z", "state": "OPEN"}));
        }
    }
    let fake = FakeTenable::start(TenableData {
        chunks,
        ..TenableData::default()
    })
    .await;
    println!("{}", fake.base_url);
    let mut stdin = tokio::io::stdin();
    let mut sink = Vec::new();
    tokio::io::AsyncReadExt::read_to_end(&mut stdin, &mut sink).await?;
    println!("{}", fake.data.lock().unwrap().polls);
    Ok(())
}
