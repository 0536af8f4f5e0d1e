//! One writer at a time, without starving anyone: while a 300,000-row CSV
//! swap runs, logins, config saves and an integration sync keep writing and
//! none of them fails (on SQLite they take their turn between the swap's
//! transactions instead of timing out in the busy handler).

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_rmm::{apps, computer, FakeRmm, RmmData, PASSWORD, USERNAME};
use cairn_tests::{backend_tests, Backend, TestApp};
use serde_json::{json, Value};

backend_tests!(writers_keep_their_turn_during_a_long_swap);

/// Long enough that the swap spans many of its transactions and the
/// writers meet it (the test fails if fewer than two rounds do); the
/// million-row scale is `cargo xtask bench csv`'s.
const ROWS: usize = 300_000;
const DEVICES: usize = 6_000;

fn inventory_csv() -> Vec<u8> {
    let mut csv = String::with_capacity(ROWS * 32);
    csv.push_str("device,application,version\n");
    for i in 0..ROWS {
        let device = i % DEVICES;
        let app = i / DEVICES;
        csv.push_str(&format!("PC-{device:05},App {app:02},1.{}\n", i % 7));
    }
    csv.into_bytes()
}

async fn writers_keep_their_turn_during_a_long_swap(backend: Backend) {
    let dir = connectors_dir(&["csv-providers/software-inventory", "connectors/rmm"], &[]);
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.csv_max_upload_mb = 64;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
        // Each login below comes from its own forwarded address, so the
        // per-address login limit does not end the test early.
        s.trusted_proxies = "127.0.0.1/32".into();
    })
    .await
    else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    // Another organization saves its config over and over: a save of the
    // syncing tenant's own config would (rightly) stop its sync.
    let neighbour = app.register("admin@other.example").await;
    let mut data = RmmData {
        clients: vec![json!({"Id": 1, "Name": "Acme"})],
        computers: vec![computer(101, "ACME-WS-01", (1, "Acme"), &[])],
        ..RmmData::default()
    };
    data.software.insert(101, apps(&[("Slack", "4.41.105")]));
    let rmm = FakeRmm::start(data).await;
    let config = json!({
        "base_url": rmm.base_url, "username": USERNAME, "password": PASSWORD,
        "client_id": "integrator-42",
    });
    let saved = app
        .post("/api/v1/rmm/config", &admin.bearer(), config.clone())
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);

    let accepted = app
        .upload_file(
            &admin,
            "/api/v1/csv-sources/software-inventory/upload",
            "inventory.csv",
            inventory_csv(),
        )
        .await;
    assert_eq!(accepted.status, 202, "{}", accepted.text);
    let upload_id = accepted.body["id"].as_str().unwrap().to_string();
    let upload_path = format!("/api/v1/csv-sources/software-inventory/uploads/{upload_id}");

    let mut writes_during_swap = 0;
    let mut logins = 0;
    let mut sync_job: Option<String> = None;
    let upload = loop {
        let upload = app.get(&upload_path, &admin.bearer()).await;
        assert_eq!(upload.status, 200, "{}", upload.text);
        if upload.body["status"] != "queued" && upload.body["status"] != "parsing" {
            break upload.body;
        }
        let phase = match upload.body["job_id"].as_str() {
            Some(job) => {
                let job = app
                    .get(&format!("/api/v1/jobs/{job}"), &admin.bearer())
                    .await;
                job.body["progress"]["phase"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            }
            None => String::new(),
        };
        // Each write asserts its own success: a login, a config save.
        logins += 1;
        let login = app
            .http
            .post(format!("{}/api/v1/auth/login", app.url))
            .header(
                "x-forwarded-for",
                format!("10.0.{}.{}", logins / 250, logins % 250),
            )
            .json(&json!({"email": admin.email, "password": cairn_tests::PASSWORD}))
            .send()
            .await
            .expect("login");
        assert_eq!(
            login.status(),
            200,
            "login during the swap: {:?}",
            login.text().await
        );
        let saved = app
            .post("/api/v1/rmm/config", &neighbour.bearer(), config.clone())
            .await;
        assert_eq!(
            saved.status, 200,
            "config save during the swap: {}",
            saved.text
        );
        if phase == "replacing" {
            writes_during_swap += 1;
            if sync_job.is_none() {
                let started = app
                    .post("/api/v1/rmm/sync", &admin.bearer(), json!({}))
                    .await;
                assert_eq!(started.status, 202, "{}", started.text);
                sync_job = Some(started.body["job_id"].as_str().unwrap().to_string());
            }
        }
    };
    eprintln!("{logins} logins and config saves, {writes_during_swap} of them during the swap");
    assert_eq!(upload["status"], "success", "{upload}");
    assert_eq!(upload["rows_imported"], ROWS as u64, "{upload}");
    assert!(
        writes_during_swap >= 2,
        "the swap ended before the writers could meet it ({writes_during_swap} rounds)"
    );
    let sync_job = sync_job.expect("a sync was started during the swap");
    let job: Value = app.wait_for_job(&admin, &sync_job).await;
    assert_eq!(job["status"], "success", "{job}");
    let devices = app.get("/api/v1/rmm/devices", &admin.bearer()).await;
    assert_eq!(devices.status, 200, "{}", devices.text);
    assert!(devices.text.contains("ACME-WS-01"), "{}", devices.text);
    app.finish().await;
}
