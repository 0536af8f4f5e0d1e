//! Bulk-pulls a board of a fake ConnectWise PSA (tickets with 4 notes each,
//! the notes read one request per ticket) through the running service,
//! then exports every pulled ticket as CSV over HTTP from a fresh service
//! process on the same database; prints seconds, rows/s and the service's
//! peak memory of each (the fake runs in a child process of its own).
//! Usage: cairn-bench psa sqlite|postgres [tickets]
//! (`cairn-bench psa fake-psa <tickets>` is the fake's child: it prints its URL
//! and serves until its stdin closes; `cairn-bench psa export <database url>
//! <data dir>` the export's: it prints its figures.)

use cairn_tests::fake_psa::{self, FakePsa, PsaData};
use cairn_tests::{Backend, TestApp};
use futures::StreamExt;
use serde_json::json;
use tokio::io::AsyncBufReadExt;

const NOTES_PER_TICKET: usize = 4;
const BOARD: (u64, &str) = (7, "Escalations");

pub async fn main() -> anyhow::Result<()> {
    let arg = |n: usize| crate::args().nth(n);
    let backend = arg(1).unwrap_or_else(|| "sqlite".into());
    let tickets: u64 = arg(2).and_then(|n| n.parse().ok()).unwrap_or(50_000);
    if backend == "fake-psa" {
        return serve_fake(tickets).await;
    }
    if backend == "export" {
        let (url, data_dir) = (arg(2).unwrap_or_default(), arg(3).unwrap_or_default());
        return export(url, data_dir.into()).await;
    }
    let backend_kind = match backend.as_str() {
        "sqlite" => Backend::Sqlite,
        "postgres" => Backend::Postgres,
        other => anyhow::bail!("unknown backend {other}; use sqlite or postgres"),
    };
    let mut fake = crate::FakeUpstream::start(&["fake-psa", &tickets.to_string()]).await?;
    let site = fake.line().await?;

    let connectors = cairn_tests::components::connectors_dir(&["connectors/psa"], &[]);
    let app = TestApp::start_with(backend_kind, move |s| {
        s.connectors_dir = connectors;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
        s.sync_stall_secs = 1200;
    })
    .await
    .ok_or_else(|| anyhow::anyhow!("{backend} is not available here"))?;
    let owner = app.register("bench@msp.example").await;
    let saved = app
        .post(
            "/api/v1/psa/config",
            &owner.bearer(),
            json!({"site": site, "company_id": fake_psa::COMPANY, "public_key": fake_psa::PUBLIC_KEY,
                   "private_key": fake_psa::PRIVATE_KEY, "client_id": fake_psa::CLIENT_ID}),
        )
        .await;
    anyhow::ensure!(saved.status == 200, "config: {}", saved.text);

    let started = std::time::Instant::now();
    let pull = app
        .post(
            "/api/v1/psa/bulk-pull",
            &owner.bearer(),
            json!({"board_id": BOARD.0}),
        )
        .await;
    anyhow::ensure!(pull.status == 202, "bulk pull: {}", pull.text);
    let job = app
        .wait_for_job_within(&owner, pull.body["job_id"].as_str().unwrap(), 600)
        .await;
    let pull_secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(job["status"] == "success", "bulk pull: {job}");
    let rows = job["progress"]["done"].as_i64().unwrap_or(0);
    let pull_peak = cairn_bench::peak_rss_mib();

    // The export runs in a service process of its own, so its peak is the
    // export's, not the pull's.
    let settings = &app.server.state.settings;
    let exported = crate::again()?
        .args([
            "export",
            &settings.database_url,
            &settings.data_dir.display().to_string(),
        ])
        .output()
        .await?;
    anyhow::ensure!(
        exported.status.success(),
        "export: {}",
        String::from_utf8_lossy(&exported.stderr)
    );
    fake.stop().await?;

    println!(
        "cairn psa bulk-pull benchmark: {backend}, {tickets} ConnectWise tickets x {NOTES_PER_TICKET} notes (one notes request per ticket)"
    );
    println!(
        "  pull: {pull_secs:.1} s, {rows} rows ({:.0} rows/s, {:.0} tickets/s), service peak memory {pull_peak:.0} MiB (goal: within 60 s)",
        rows as f64 / pull_secs,
        tickets as f64 / pull_secs
    );
    print!("{}", String::from_utf8_lossy(&exported.stdout));
    app.finish().await;
    Ok(())
}

/// The export's child: a service on the pulled database (and its data
/// directory, so the component comes from the artifact cache), one export
/// of every pulled ticket read as a client would, and its figures.
async fn export(database_url: String, data_dir: std::path::PathBuf) -> anyhow::Result<()> {
    let connectors = cairn_tests::components::connectors_dir(&["connectors/psa"], &[]);
    let app = TestApp::start_with(Backend::Sqlite, move |s| {
        s.connectors_dir = connectors;
        s.database_url = database_url;
        s.data_dir = data_dir;
    })
    .await
    .ok_or_else(|| anyhow::anyhow!("the service did not start"))?;
    let owner = app.login("bench@msp.example").await;
    let before = cairn_bench::peak_rss_mib();
    let started = std::time::Instant::now();
    let response = app
        .http
        .get(format!("{}/api/v1/psa/bulk-tickets/export.csv", app.url))
        .bearer_auth(&owner.access_token)
        .send()
        .await?;
    anyhow::ensure!(response.status() == 200, "export: {}", response.status());
    let (mut bytes, mut lines) = (0usize, 0usize);
    let mut body = response.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        bytes += chunk.len();
        lines += chunk.iter().filter(|b| **b == b'\n').count();
    }
    let secs = started.elapsed().as_secs_f64();
    let peak = cairn_bench::peak_rss_mib();
    let tickets = lines.saturating_sub(1);
    println!(
        "  export: {secs:.1} s, {tickets} tickets ({:.0} rows/s), {:.1} MB of CSV, service peak memory {peak:.0} MiB ({before:.0} MiB once started) (goal: under 100 MB)",
        tickets as f64 / secs,
        bytes as f64 / 1e6
    );
    // The pulling service owns the database and the data directory.
    std::mem::forget(app);
    Ok(())
}

/// The child process: the fake PSA, until stdin closes.
async fn serve_fake(tickets: u64) -> anyhow::Result<()> {
    let (board, notes) = fake_psa::board(BOARD, 100_000, tickets, NOTES_PER_TICKET);
    let fake = FakePsa::start(PsaData {
        tickets: board,
        notes,
        ..PsaData::default()
    })
    .await;
    println!("{}", fake.site);
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while stdin.next_line().await?.is_some() {}
    Ok(())
}
