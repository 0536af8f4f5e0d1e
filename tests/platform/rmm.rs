//! The rmm connector end to end over HTTP against a fake ConnectWise
//! Automate: config, test-connection, live clients, sync, pruning, scope,
//! token expiry with one re-login, and 429s waited out.

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_rmm::{apps, computer, FakeRmm, RmmData, PASSWORD, USERNAME};
use cairn_tests::{backend_tests, Account, Backend, TestApp};
use serde_json::{json, Value};

backend_tests!(
    rmm_sync_prunes_scopes_and_survives_expiry_and_throttling,
    rmm_bad_credentials_are_typed,
    software_is_fetched_concurrently_within_the_operators_cap,
    metrics_an_operator_alerts_on_move_with_a_sync_and_an_upload,
);

/// Every series the shipped dashboard and alert rules use is served with
/// HELP and TYPE lines, and the job, row, plugin and outbound series move
/// when a sync and an upload run.
async fn metrics_an_operator_alerts_on_move_with_a_sync_and_an_upload(backend: Backend) {
    let rmm = FakeRmm::start(fake_data()).await;
    let dir = connectors_dir(&["connectors/rmm", "csv-providers/software-inventory"], &[]);
    let Some(app) = app_with(backend, move |s| s.connectors_dir = dir).await else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    let sample = |text: &str, series: &str, labels: &[&str]| -> f64 {
        text.lines()
            .filter(|line| line.starts_with(series) && !line.starts_with('#'))
            .filter(|line| line[series.len()..].starts_with(['{', ' ']))
            .filter(|line| labels.iter().all(|l| line.contains(l)))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    let before = app.get("/metrics", &cairn_tests::Auth::None).await.text;
    configure(&app, &admin, &rmm, json!({})).await;
    let job = sync(&app, &admin).await;
    assert_eq!(job["status"], "success", "{job}");
    let csv = "Computer Name,Software Name,Publisher,Version\nWS-9,Editor,Acme,1.0\nWS-9,Viewer,Acme,2.0\n";
    let accepted = app
        .upload_file(
            &admin,
            "/api/v1/inventory/upload",
            "software.csv",
            csv.as_bytes().to_vec(),
        )
        .await;
    assert_eq!(accepted.status, 202, "{}", accepted.text);
    let upload = app
        .wait_for_upload(
            &admin,
            "software-inventory",
            accepted.body["id"].as_str().unwrap(),
        )
        .await;
    assert_eq!(upload["status"], "success", "{upload}");
    // The upload reads succeeded before its job's run has ended (and been
    // counted): wait for the job too.
    let parse = app
        .wait_for_job(&admin, accepted.body["job_id"].as_str().unwrap())
        .await;
    assert_eq!(parse["status"], "success", "{parse}");
    // A run is counted just after its end is written.
    let parse_runs = ["kind=\"csv_parse\"", "outcome=\"succeeded\""];
    let counted = sample(&before, "cairn_job_runs_total", &parse_runs);
    cairn_tests::wait_until(
        "the parse run to be counted",
        std::time::Duration::from_secs(30),
        async || {
            let now = app.get("/metrics", &cairn_tests::Auth::None).await.text;
            match sample(&now, "cairn_job_runs_total", &parse_runs) {
                n if n > counted => Ok(()),
                n => Err(format!("{n} runs counted")),
            }
        },
    )
    .await;
    // A device search asked twice with the inventory unchanged: the first
    // reads its matches, the second answers from them.
    app.wait_for_rollup(&admin).await;
    let windows = json!({"query": {"kind": "group", "combinator": "and", "rules": [
        {"kind": "rule", "field": "os_platform", "operator": "equals", "value": "windows"}]}});
    for _ in 0..2 {
        let found = app
            .post(
                "/api/v1/devices/devices/search",
                &admin.bearer(),
                windows.clone(),
            )
            .await;
        assert_eq!(found.status, 200, "{}", found.text);
    }
    let after = app.get("/metrics", &cairn_tests::Auth::None).await.text;

    let moved = [
        ("cairn_search_pages_total", vec![r#"outcome="read""#]),
        ("cairn_search_pages_total", vec![r#"outcome="kept""#]),
        (
            "cairn_rows_written_total",
            vec![
                r#"via="sync""#,
                r#"area="rmm""#,
                r#"connector="connectwise-automate""#,
            ],
        ),
        (
            "cairn_rows_written_total",
            vec![r#"via="upload""#, r#"connector="software-inventory""#],
        ),
        (
            "cairn_job_runs_total",
            vec![r#"kind="rmm_sync""#, r#"outcome="succeeded""#],
        ),
        (
            "cairn_job_runs_total",
            vec![r#"kind="csv_parse""#, r#"outcome="succeeded""#],
        ),
        (
            "cairn_job_run_duration_seconds_count",
            vec![r#"kind="rmm_sync""#],
        ),
        (
            "cairn_plugin_calls_total",
            vec![
                r#"plugin="connectwise-automate""#,
                r#"operation="fetch""#,
                r#"outcome="ok""#,
            ],
        ),
        (
            "cairn_plugin_calls_total",
            vec![r#"plugin="software-inventory""#, r#"operation="map_rows""#],
        ),
        (
            "cairn_outbound_requests_total",
            vec![r#"caller="connectwise-automate""#, r#"status="2xx""#],
        ),
        ("http_requests_total", vec![r#"route="/api/v1/rmm/sync""#]),
    ];
    for (series, labels) in moved {
        let (was, now) = (
            sample(&before, series, &labels),
            sample(&after, series, &labels),
        );
        assert!(
            now > was,
            "{series} {labels:?} moved: {was} -> {now}\n{after}"
        );
    }
    for series in [
        "cairn_db_pool_max_connections",
        "process_resident_memory_bytes",
        "process_threads",
    ] {
        assert!(sample(&after, series, &[]) > 0.0, "{series}\n{after}");
    }
    assert!(
        after.contains("cairn_jobs{"),
        "queue depth by kind and status\n{after}"
    );

    // Every series the shipped dashboard and rules name is served, with
    // its help text and type; the CVE source figures once a source loaded
    // (here KEV, imported from a file as an operator offline would).
    let kev = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kev/known_exploited_vulnerabilities_first50.json");
    cairn_vulnerabilities::reference::import::import_paths(app.db(), &[kev])
        .await
        .unwrap();
    let served = app.get("/metrics", &cairn_tests::Auth::None).await.text;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut named = std::collections::BTreeSet::new();
    for file in [
        "contrib/grafana/cairn-dashboard.json",
        "contrib/prometheus/cairn-alerts.yml",
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        for word in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
            if ["cairn_", "http_request", "process_"]
                .iter()
                .any(|p| word.starts_with(p))
                && word != "cairn_dashboard"
            {
                let base = ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|suffix| word.strip_suffix(suffix))
                    .unwrap_or(word);
                named.insert(base.to_string());
            }
        }
    }
    assert!(named.len() > 15, "{named:?}");
    for series in &named {
        assert!(
            served.contains(&format!("# TYPE {series} ")),
            "TYPE of {series}\n{served}"
        );
        assert!(
            served.contains(&format!("# HELP {series} ")),
            "HELP of {series}\n{served}"
        );
    }
}

async fn app(backend: Backend) -> Option<TestApp> {
    app_with(backend, |_| {}).await
}

pub(crate) async fn app_with(
    backend: Backend,
    adjust: impl FnOnce(&mut cairn_core::settings::Settings) + Send + 'static,
) -> Option<TestApp> {
    let dir = connectors_dir(&["connectors/rmm"], &[]);
    TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
        s.job_retry_backoff_ms = 0;
        adjust(s);
    })
    .await
}

/// The connector asks for 8 software requests at once; the operator caps
/// it at 3. A page of 12 computers then has 3 (never more) in flight, and
/// a 429 on some of them is waited out for each alone.
async fn software_is_fetched_concurrently_within_the_operators_cap(backend: Backend) {
    let mut data = RmmData {
        clients: vec![json!({"Id": 1, "Name": "Acme"})],
        software_delay_ms: 150,
        throttle_software: 2,
        ..RmmData::default()
    };
    for id in 1..=12 {
        data.computers
            .push(computer(id, &format!("WS-{id:02}"), (1, "Acme"), &[]));
        data.software.insert(
            id,
            apps(&[("7-Zip 23.01 (x64)", "23.01"), ("Mozilla Firefox", "128.0")]),
        );
    }
    let rmm = FakeRmm::start(data).await;
    let Some(app) = app_with(backend, |s| s.plugin_max_concurrent_requests = 3).await else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    configure(&app, &admin, &rmm, json!({"page_size": 12})).await;
    let job = sync(&app, &admin).await;
    assert_eq!(job["status"], "success", "{job}");
    let stats = app.get("/api/v1/rmm/stats", &admin.bearer()).await;
    assert_eq!(stats.body["inventory_items"], 24, "{}", stats.text);
    let fake = rmm.data.lock().unwrap();
    assert_eq!(
        fake.software_max_in_flight, 3,
        "bounded by the operator's cap, and reached"
    );
    assert_eq!(fake.throttled, 2);
}

pub(crate) fn fake_data() -> RmmData {
    let mut data = RmmData {
        clients: vec![
            json!({"Id": 1, "Name": "Acme"}),
            json!({"Id": 2, "Name": "Globex"}),
        ],
        groups: vec![
            json!({"Id": 10, "Name": "Servers"}),
            json!({"Id": 11, "Name": "Finance"}),
        ],
        computers: vec![
            computer(101, "ACME-WS-01", (1, "Acme"), &["11"]),
            computer(102, "ACME-SRV-01", (1, "Acme"), &["10", "11"]),
            computer(201, "GLOBEX-WS-01", (2, "Globex"), &[]),
            computer(202, "GLOBEX-SRV-01", (2, "Globex"), &["10"]),
        ],
        ..RmmData::default()
    };
    data.software.insert(
        101,
        apps(&[("7-Zip 23.01 (x64)", "23.01"), ("Mozilla Firefox", "128.0")]),
    );
    data.software
        .insert(102, apps(&[("Microsoft SQL Server 2019", "15.0.2000.5")]));
    data.software.insert(201, apps(&[("Slack", "4.41.105")]));
    data.software.insert(202, apps(&[("OpenSSH", "9.6")]));
    data
}

pub(crate) async fn configure(app: &TestApp, admin: &Account, rmm: &FakeRmm, extra: Value) {
    let mut config = json!({
        "base_url": rmm.base_url, "username": USERNAME, "password": PASSWORD,
        "client_id": "integrator-42", "page_size": 2,
    });
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    let resp = app
        .post("/api/v1/rmm/config", &admin.bearer(), config)
        .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.body["config"]["password"], "********");
}

async fn sync(app: &TestApp, account: &Account) -> Value {
    let started = app
        .post("/api/v1/rmm/sync", &account.bearer(), json!({}))
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    app.wait_for_job(account, started.body["job_id"].as_str().unwrap())
        .await
}

pub(crate) async fn device_names(app: &TestApp, account: &Account) -> Vec<String> {
    let devices = app.get("/api/v1/rmm/devices", &account.bearer()).await;
    let mut names: Vec<String> = devices.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device_name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

async fn rmm_sync_prunes_scopes_and_survives_expiry_and_throttling(backend: Backend) {
    let rmm = FakeRmm::start(fake_data()).await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    configure(&app, &owner, &rmm, json!({})).await;

    let tested = app
        .post("/api/v1/rmm/test-connection", &owner.bearer(), json!({}))
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    let clients = app.get("/api/v1/rmm/clients", &owner.bearer()).await;
    assert_eq!(clients.status, 200, "{}", clients.text);
    assert_eq!(clients.body.as_array().unwrap().len(), 2);
    assert_eq!(clients.body[1]["Name"], "Globex");
    assert!(rmm
        .data
        .lock()
        .unwrap()
        .client_id_headers
        .iter()
        .all(|h| h == "integrator-42"));

    // Everything, in pages of two.
    let job = sync(&app, &owner).await;
    assert_eq!(job["status"], "success", "{job}");
    assert_eq!(
        device_names(&app, &owner).await,
        ["ACME-SRV-01", "ACME-WS-01", "GLOBEX-SRV-01", "GLOBEX-WS-01"]
    );
    let stats = app.get("/api/v1/rmm/stats", &owner.bearer()).await;
    assert_eq!(stats.body["inventory_items"], 5);
    // A complete sync asks for a rollup rebuild.
    let rollup = app.wait_for_rollup(&owner).await;
    assert_eq!(rollup["status"], "success", "{rollup}");
    let apps = app
        .get("/api/v1/inventory/applications?sort=name", &owner.bearer())
        .await;
    let names: Vec<&str> = apps.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "7-Zip 23.01 (x64)",
            "Microsoft SQL Server 2019",
            "Mozilla Firefox",
            "OpenSSH",
            "Slack"
        ]
    );
    let asset = app
        .get("/api/v1/devices/by-name/ACME-WS-01", &owner.bearer())
        .await;
    assert_eq!(asset.body["sources"], json!(["rmm"]), "{}", asset.text);
    let one = app
        .get("/api/v1/rmm/device-by-name/acme-ws-01", &owner.bearer())
        .await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.body["client_id"], "1");
    assert_eq!(
        one.body["record"]["OperatingSystemName"],
        "Microsoft Windows 11 Pro x64"
    );
    let logins_after_first = rmm.logins();
    assert!(logins_after_first >= 1);

    // A computer removed upstream is pruned.
    rmm.data
        .lock()
        .unwrap()
        .computers
        .retain(|c| c["Id"] != 201);
    assert_eq!(sync(&app, &owner).await["status"], "success");
    assert_eq!(
        device_names(&app, &owner).await,
        ["ACME-SRV-01", "ACME-WS-01", "GLOBEX-SRV-01"]
    );
    assert_eq!(
        rmm.logins(),
        logins_after_first,
        "the cached token was reused"
    );

    // An expired token: exactly one re-login, and the sync still succeeds.
    rmm.expire_tokens();
    assert_eq!(sync(&app, &owner).await["status"], "success");
    assert_eq!(rmm.logins(), logins_after_first + 1);

    // 429s are waited out and retried.
    rmm.data.lock().unwrap().throttle_next = 2;
    assert_eq!(sync(&app, &owner).await["status"], "success");
    assert_eq!(rmm.data.lock().unwrap().throttled, 2);

    // Narrowed to one client: the other client's rows are pruned.
    configure(
        &app,
        &owner,
        &rmm,
        json!({"password": "********", "scope_client_ids": ["1"]}),
    )
    .await;
    assert_eq!(sync(&app, &owner).await["status"], "success");
    assert_eq!(
        device_names(&app, &owner).await,
        ["ACME-SRV-01", "ACME-WS-01"]
    );

    // Scoped by group name: overlapping groups are unioned by Id, and each
    // row carries every scoped group it was found in.
    configure(
        &app,
        &owner,
        &rmm,
        json!({"password": "********", "scope_group_names": ["Servers", "Finance"]}),
    )
    .await;
    assert_eq!(sync(&app, &owner).await["status"], "success");
    assert_eq!(
        device_names(&app, &owner).await,
        ["ACME-SRV-01", "ACME-WS-01", "GLOBEX-SRV-01"]
    );
    let server = app
        .get("/api/v1/rmm/device-by-name/ACME-SRV-01", &owner.bearer())
        .await;
    assert_eq!(server.body["group_ids"], json!(["10", "11"]));

    // The password never comes back.
    let config = app.get("/api/v1/rmm/config", &owner.bearer()).await;
    assert!(!config.text.contains(PASSWORD));
    let jobs = app.get("/api/v1/jobs?kind=rmm_sync", &owner.bearer()).await;
    assert!(!jobs.text.contains(PASSWORD));
    app.finish().await;
}

async fn rmm_bad_credentials_are_typed(backend: Backend) {
    let rmm = FakeRmm::start(fake_data()).await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    configure(&app, &owner, &rmm, json!({"password": "not-the-password"})).await;
    let tested = app
        .post("/api/v1/rmm/test-connection", &owner.bearer(), json!({}))
        .await;
    tested.assert_error(502);
    assert_eq!(tested.body["type"], "upstream_auth_error");
    assert_eq!(tested.body["upstream_status"], 401);
    assert!(tested.body["permission_hint"]
        .as_str()
        .unwrap()
        .contains("password"));
    app.get("/api/v1/rmm/nonsense", &owner.bearer())
        .await
        .assert_error(404);
    app.finish().await;
}
