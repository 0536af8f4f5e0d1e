//! A remediation plan over many devices, end to end: a fake ConnectWise
//! Automate with N computers running a vulnerable Chrome (one in ten fails
//! silently: its update script reports success and changes nothing), the
//! real NVD record of CVE-2023-2033, a sync and a match; then the plan
//! built (the dry run), approved and executed through the rmm connector
//! (one script scheduled per device), and verified by the next sync. Prints
//! seconds of each step and the process's peak memory (the service and the
//! fake share this process).
//! Usage: cairn-bench remediation sqlite|postgres [devices]

use std::time::{Duration, Instant};

use cairn_tests::fake_nvd::{fixture_records, FakeNvd};
use cairn_tests::fake_rmm::{apps, computer, FakeRmm, RmmData, ScriptOutcome, PASSWORD, USERNAME};
use cairn_tests::{wait_until, Account, Backend, TestApp};
use serde_json::{json, Value};

const CVE: &str = "CVE-2023-2033";
const LIMIT: Duration = Duration::from_secs(3600);

pub async fn main() -> anyhow::Result<()> {
    let arg = |n: usize| crate::args().nth(n);
    let backend = arg(1).unwrap_or_else(|| "sqlite".into());
    let devices: i64 = arg(2).and_then(|n| n.parse().ok()).unwrap_or(5_000);
    let backend_kind = match backend.as_str() {
        "sqlite" => Backend::Sqlite,
        "postgres" => Backend::Postgres,
        other => anyhow::bail!("unknown backend {other}; use sqlite or postgres"),
    };
    let mut data = RmmData {
        clients: vec![json!({"Id": 1, "Name": "Acme"})],
        ..RmmData::default()
    };
    for id in 1..=devices {
        data.computers
            .push(computer(id, &format!("WS-{id:05}"), (1, "Acme"), &[]));
        data.software.insert(
            id,
            apps(&[
                ("Google Chrome", "112.0.5615.49"),
                ("7-Zip 23.01 (x64)", "23.01"),
            ]),
        );
        if id % 10 == 0 {
            data.script_outcomes
                .insert(id, ScriptOutcome::SilentlyFails);
        }
    }
    let rmm = FakeRmm::start(data).await;
    let nvd = FakeNvd::start(fixture_records()).await;
    let (api, kev, epss, epss_api) = (
        nvd.api_url(),
        nvd.kev_url(),
        nvd.epss_url(),
        nvd.epss_api_url(),
    );
    let connectors = cairn_tests::components::connectors_dir(&["connectors/rmm"], &[]);
    let app = TestApp::start_with(backend_kind, move |s| {
        s.connectors_dir = connectors;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
        s.remediation_sweep_ms = 200;
        s.nvd_api_url = api;
        s.nvd_api_key = "nvd-key-for-the-bench".into();
        s.nvd_request_delay_ms = 10;
        s.kev_url = kev;
        s.epss_url = epss;
        s.epss_api_url = epss_api;
        s.sync_stall_secs = 1200;
    })
    .await
    .ok_or_else(|| anyhow::anyhow!("{backend} is not available here"))?;
    load_nvd(&app).await;
    let admin = app.register("bench@msp.example").await;
    let saved = app
        .post(
            "/api/v1/rmm/config",
            &admin.bearer(),
            json!({"base_url": rmm.base_url, "username": USERNAME, "password": PASSWORD,
                   "page_size": 1000, "update_script_id": 6001}),
        )
        .await;
    anyhow::ensure!(saved.status == 200, "config: {}", saved.text);
    let started = Instant::now();
    sync_and_match(&app, &admin).await?;
    let synced = started.elapsed();

    let started = Instant::now();
    let made = app
        .post(
            "/api/v1/remediation/plans",
            &admin.bearer(),
            json!({"cve_id": CVE}),
        )
        .await;
    anyhow::ensure!(made.status == 201, "plan: {}", made.text);
    let planned_in = started.elapsed();
    let id = made.body["plan"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let planned = made.body["plan"]["counts"]["planned"].as_i64().unwrap_or(0);
    anyhow::ensure!(
        planned == devices,
        "planned {planned} of {devices}: {}",
        made.body["plan"]
    );

    let started = Instant::now();
    let approved = app
        .post(
            &format!("/api/v1/remediation/plans/{id}/approve"),
            &admin.bearer(),
            json!({}),
        )
        .await;
    anyhow::ensure!(approved.status == 200, "approve: {}", approved.text);
    wait_until("every script reported", LIMIT, async || {
        let counts = counts(&app, &admin, &id).await;
        match (counts["planned"].as_i64(), counts["in_progress"].as_i64()) {
            (Some(0), Some(0)) => Ok(()),
            _ => Err(counts.to_string()),
        }
    })
    .await;
    let executed_in = started.elapsed();
    let scheduled = rmm.schedules().len();

    let started = Instant::now();
    sync_and_match(&app, &admin).await?;
    let done = wait_until("the verdicts", LIMIT, async || {
        let plan = app
            .get(&format!("/api/v1/remediation/plans/{id}"), &admin.bearer())
            .await
            .body["plan"]
            .clone();
        match plan["status"].as_str() {
            Some("done") => Ok(plan["counts"].clone()),
            _ => Err(plan.to_string()),
        }
    })
    .await;
    let verified_in = started.elapsed();
    println!(
        "remediation {backend}: {devices} devices; sync and match {:.1} s; plan (dry run) {:.2} s; \
         approve to every script reported {:.1} s ({scheduled} scheduled); next sync to verdicts {:.1} s \
         (fixed {}, remediation_failed {}); peak memory {} MiB (service and fake in one process)",
        synced.as_secs_f64(),
        planned_in.as_secs_f64(),
        executed_in.as_secs_f64(),
        verified_in.as_secs_f64(),
        done["fixed"],
        done["remediation_failed"],
        peak_mib(),
    );
    app.finish().await;
    Ok(())
}

async fn counts(app: &TestApp, admin: &Account, id: &str) -> Value {
    app.get(&format!("/api/v1/remediation/plans/{id}"), &admin.bearer())
        .await
        .body["plan"]["counts"]
        .clone()
}

async fn load_nvd(app: &TestApp) {
    let tenant = cairn_vulnerabilities::reference::sources::reference_tenant();
    let job = cairn_jobs::enqueue(
        app.db(),
        &tenant,
        &cairn_vulnerabilities::reference::sources::job_kind("nvd"),
        &json!({}),
    )
    .await
    .expect("queue the nvd load");
    wait_until("the nvd load", LIMIT, async || {
        let status: String = sqlx::query_scalar("SELECT status FROM jobs WHERE id = $1")
            .bind(&job.job_id)
            .fetch_one(&app.db().pool)
            .await
            .expect("read the job");
        match status.as_str() {
            "success" => Ok(()),
            "error" => panic!("the nvd load failed"),
            _ => Err(status),
        }
    })
    .await;
}

async fn sync_and_match(app: &TestApp, admin: &Account) -> anyhow::Result<()> {
    let started = app
        .post("/api/v1/rmm/sync", &admin.bearer(), json!({}))
        .await;
    anyhow::ensure!(started.status == 202, "sync: {}", started.text);
    let job = app
        .wait_for_job_within(
            admin,
            started.body["job_id"].as_str().unwrap_or_default(),
            3600,
        )
        .await;
    anyhow::ensure!(job["status"] == "success", "sync: {job}");
    app.rebuild(admin).await;
    let scan = app
        .post("/api/v1/vulnerabilities/scan", &admin.bearer(), json!({}))
        .await;
    anyhow::ensure!(scan.status == 202, "scan: {}", scan.text);
    let scan_id = scan.body["id"].as_str().unwrap_or_default().to_string();
    wait_until("the scan", LIMIT, async || {
        let now = app
            .get(
                &format!("/api/v1/vulnerabilities/scans/{scan_id}"),
                &admin.bearer(),
            )
            .await;
        match now.body["status"].as_str() {
            Some("success") => Ok(()),
            Some("error") => panic!("scan failed: {}", now.text),
            _ => Err(now.text),
        }
    })
    .await;
    Ok(())
}

/// The process's peak resident memory, from /proc (0 elsewhere).
fn peak_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kb| kb / 1024)
        .unwrap_or(0)
}
