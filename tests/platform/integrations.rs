//! The integration lifecycle over HTTP with the test connector and its fake
//! upstream: config, test-connection, sync, sync-status, stats, devices,
//! pruning, delete, and tenant isolation.

use std::time::Duration;

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_inventory::{device, FakeInventory, TOKEN};
use cairn_tests::{backend_tests, wait_for, wait_until, Account, Backend, TestApp};
use serde_json::{json, Value};

backend_tests!(
    startup_seeds_empty_configs_of_the_default_tenant,
    credential_store_round_trip,
    misbehaving_syncs_fail_with_reasons_and_retry,
    configure_sync_and_prune_end_to_end,
    bad_config_is_refused_with_the_field,
    upstream_auth_failure_is_typed_and_secret_free,
    tenants_cannot_see_each_others_integrations,
    deleting_the_config_stops_a_running_sync,
    sync_caps_stop_runs_with_clear_errors,
    a_device_on_several_pages_is_stored_once,
);

const ID: &str = "misbehave";

async fn app(backend: Backend) -> Option<TestApp> {
    app_with(backend, |_| {}).await
}

async fn app_with(
    backend: Backend,
    adjust: impl FnOnce(&mut cairn_core::settings::Settings) + Send + 'static,
) -> Option<TestApp> {
    let dir = connectors_dir(&["misbehave"], &[]);
    TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.plugin_call_timeout_secs = 2;
        s.job_poll_interval_ms = 50;
        s.job_retry_backoff_ms = 0;
        adjust(s);
    })
    .await
}

/// Waits until the job has run `attempts` times and is not running.
async fn wait_attempts(app: &TestApp, account: &Account, job_id: &str, attempts: i64) -> Value {
    let what = format!("job {job_id} to reach {attempts} attempts");
    wait_until(&what, Duration::from_secs(60), async || {
        let job = app
            .get(&format!("/api/v1/jobs/{job_id}"), &account.bearer())
            .await;
        if job.body["attempts"].as_i64() >= Some(attempts) && job.body["status"] != "running" {
            Ok(job.body)
        } else {
            Err(job.text)
        }
    })
    .await
}

async fn startup_seeds_empty_configs_of_the_default_tenant(backend: Backend) {
    // The database exists before the service starts, with the default tenant
    // and one integration already configured.
    let Some(scratch) = cairn_tests::ScratchDatabase::create(backend).await else {
        return;
    };
    let url = scratch.url.clone();
    let key = "33".repeat(32);
    let db = cairn_core::db::Db::connect(&url, 2).await.unwrap();
    db.migrate().await.unwrap();
    let tenant = cairn_core::ids::TenantId("tenant-default".into());
    sqlx::query("INSERT INTO tenants (id, name, timezone, created_at, updated_at) VALUES ($1, 'MSP', 'UTC', 0, 0)")
        .bind(tenant.as_str())
        .execute(&db.pool)
        .await
        .unwrap();
    let secret_box = cairn_core::secrets::SecretBox::new(&key).unwrap();
    cairn_integrations::storage::save_config(
        &db,
        &secret_box,
        &tenant,
        "misbehave",
        cairn_integrations::storage::NewConfig {
            connector: "misbehave",
            settings: &json!({"base_url": "http://127.0.0.1:9", "site": "Original"}),
            secrets: &json!({"api_token": TOKEN}),
            switching: false,
        },
    )
    .await
    .unwrap();
    db.close().await;

    // Two connectors serve rmm; the seed's fields are Automate's.
    let dir = connectors_dir(&["misbehave", "connectors/rmm", "connectors/ninjaone"], &[]);
    let seeds = json!({
        "rmm": {"base_url": "https://automate.example.com/cwa/api/v1", "username": "svc", "password": "seeded-secret"},
        "misbehave": {"base_url": "http://127.0.0.1:9", "api_token": "would-overwrite", "site": "Seeded"},
        "scanner": {"api_key": "not loaded here"}
    })
    .to_string();
    let seed_url = url.clone();
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.database_url = seed_url;
        s.encryption_key = key;
        s.default_tenant_id = "tenant-default".into();
        s.seed_configs = seeds;
    })
    .await
    else {
        return;
    };
    let state = &app.server.state;
    let rmm = cairn_integrations::storage::config(&state.db, &state.secrets, &tenant, "rmm")
        .await
        .unwrap()
        .expect("rmm seeded");
    assert_eq!(rmm.connector.as_deref(), Some("connectwise-automate"));
    assert_eq!(rmm.settings["username"], "svc");
    assert_eq!(rmm.secrets["password"], "seeded-secret");
    assert!(
        rmm.settings.get("password").is_none(),
        "the password is stored as a secret"
    );
    let kept = cairn_integrations::storage::config(&state.db, &state.secrets, &tenant, "misbehave")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        kept.settings["site"], "Original",
        "an existing config is never overwritten"
    );
    assert_eq!(kept.secrets["api_token"], TOKEN);
    app.finish().await;
    scratch.remove().await;
}

async fn credential_store_round_trip(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let member = app.add_member(&owner, "member@example.com", "member").await;
    let other = app.register("other@example.com").await;
    configure(&app, &owner, "http://127.0.0.1:9", TOKEN).await;

    let listed = app.get("/api/v1/integrations/", &owner.bearer()).await;
    assert_eq!(listed.body["connectors"][0]["configured"], true);
    let theirs = app.get("/api/v1/integrations/", &other.bearer()).await;
    assert_eq!(theirs.body["connectors"][0]["configured"], false);

    // Storing credentials merges into the config and is validated.
    let new_token = "rotated-token-9876";
    let stored = app
        .post(
            "/api/v1/integrations/credentials",
            &owner.bearer(),
            json!({"platform": ID, "credentials": {"api_token": new_token}}),
        )
        .await;
    assert_eq!(stored.status, 200, "{}", stored.text);
    assert_eq!(
        stored.body["config"]["site"], "HQ",
        "other settings are kept"
    );
    assert_eq!(stored.body["config"]["api_token"], "********");
    app.post(
        "/api/v1/integrations/credentials",
        &owner.bearer(),
        json!({"platform": ID, "credentials": {"api_token": "short"}}),
    )
    .await
    .assert_error(422);
    app.post(
        "/api/v1/integrations/credentials",
        &member.bearer(),
        json!({"platform": ID, "credentials": {"api_token": new_token}}),
    )
    .await
    .assert_error(403);
    app.post(
        "/api/v1/integrations/credentials",
        &owner.bearer(),
        json!({"platform": "nosuch", "credentials": {}}),
    )
    .await
    .assert_error(404);

    let read = app
        .get(
            &format!("/api/v1/integrations/credentials/{ID}"),
            &member.bearer(),
        )
        .await;
    assert_eq!(read.status, 200);
    assert!(!read.text.contains(new_token) && !read.text.contains(TOKEN));
    app.get(
        &format!("/api/v1/integrations/credentials/{ID}"),
        &other.bearer(),
    )
    .await
    .assert_error(404);
    app.delete(
        &format!("/api/v1/integrations/credentials/{ID}"),
        &other.bearer(),
    )
    .await
    .assert_error(404);

    let deleted = app
        .delete(
            &format!("/api/v1/integrations/credentials/{ID}"),
            &owner.bearer(),
        )
        .await;
    assert_eq!(deleted.status, 204);
    let after = app
        .get(
            &format!("/api/v1/integrations/credentials/{ID}"),
            &owner.bearer(),
        )
        .await;
    assert!(
        after.body["config"].get("api_token").is_none(),
        "the secret is gone"
    );
    assert_eq!(after.body["config"]["site"], "HQ");
    app.finish().await;
}

async fn misbehaving_syncs_fail_with_reasons_and_retry(backend: Backend) {
    let upstream = FakeInventory::start(vec![device("d1", "WS-01", &[])]).await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;

    // An endless loop: each attempt is stopped at the deadline, the job is
    // retried, and the API answers all along.
    let config = json!({"base_url": upstream.url, "api_token": TOKEN, "misbehave": "loop"});
    assert_eq!(
        app.post(&format!("/api/v1/{ID}/config"), &owner.bearer(), config)
            .await
            .status,
        200
    );
    let job_id = app
        .post(&format!("/api/v1/{ID}/sync"), &owner.bearer(), json!({}))
        .await
        .body["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    // Count answers rather than time them: a loaded CI machine may be slow,
    // but every request must still be answered while the guest spins.
    for _ in 0..10 {
        assert_eq!(
            app.get("/health", &cairn_tests::Auth::None).await.status,
            200
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let job = wait_attempts(&app, &owner, &job_id, 2).await;
    assert!(job["error"].as_str().unwrap().contains("deadline"), "{job}");
    let job = wait_attempts(&app, &owner, &job_id, 3).await;
    assert_eq!(job["status"], "error", "{job}");

    // A panic's message reaches the job's error.
    let config = json!({"base_url": upstream.url, "api_token": TOKEN, "misbehave": "panic"});
    assert_eq!(
        app.post(&format!("/api/v1/{ID}/config"), &owner.bearer(), config)
            .await
            .status,
        200
    );
    let job_id = app
        .post(&format!("/api/v1/{ID}/sync"), &owner.bearer(), json!({}))
        .await
        .body["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    let job = wait_attempts(&app, &owner, &job_id, 1).await;
    assert!(
        job["error"]
            .as_str()
            .unwrap()
            .contains("the parser fell over"),
        "{job}"
    );
    // A panic would only repeat: not retried, unlike the timeout above.
    assert_eq!(job["status"], "error", "{job}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let job = app
        .get(&format!("/api/v1/jobs/{job_id}"), &owner.bearer())
        .await;
    assert_eq!(job.body["attempts"], 1, "{}", job.text);
    assert_eq!(job.body["status"], "error", "{}", job.text);
    app.finish().await;
}

async fn configure(app: &TestApp, admin: &Account, upstream: &str, token: &str) -> Value {
    let resp = app
        .post(
            &format!("/api/v1/{ID}/config"),
            &admin.bearer(),
            json!({"base_url": upstream, "api_token": token, "site": "HQ"}),
        )
        .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    resp.body
}

async fn sync(app: &TestApp, account: &Account) -> Value {
    app.sync_area(account, ID).await
}

async fn configure_sync_and_prune_end_to_end(backend: Backend) {
    let mut ws01 = device("d1", "WS-01", &[("7-Zip", "23.01"), ("Firefox", "128.0")]);
    // Labelled as the agent reports it; stored as the platform CSV rows use.
    ws01["os"] = json!("Microsoft Windows 11 Pro");
    let upstream = FakeInventory::start(vec![
        ws01,
        device("d2", "WS-02", &[("7-Zip", "23.01")]),
        device("d3", "LAPTOP-03", &[("Slack", "4.41")]),
    ])
    .await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;

    let listed = app.get("/api/v1/integrations/", &owner.bearer()).await;
    assert_eq!(listed.body["connectors"][0]["descriptor"]["id"], ID);
    let empty = app
        .get(&format!("/api/v1/{ID}/config"), &owner.bearer())
        .await;
    assert_eq!(empty.body["configured"], false);

    let saved = configure(&app, &owner, &upstream.url, TOKEN).await;
    assert_eq!(saved["config"]["api_token"], "********");
    assert_eq!(saved["config"]["site"], "HQ");
    let read = app
        .get(&format!("/api/v1/{ID}/config"), &owner.cookie())
        .await;
    assert_eq!(read.body["config"]["api_token"], "********");
    assert!(!read.text.contains(TOKEN), "the secret is never read back");
    // Stored encrypted, not in the clear.
    let stored: Vec<String> = sqlx::query_scalar("SELECT secrets FROM integration_configs")
        .fetch_all(&app.db().pool)
        .await
        .unwrap();
    assert!(!stored[0].contains(TOKEN));
    // Saving the redacted form back keeps the secret.
    let resaved = app
        .post(
            &format!("/api/v1/{ID}/config"),
            &owner.bearer(),
            json!({"base_url": upstream.url, "api_token": "********", "site": "Branch"}),
        )
        .await;
    assert_eq!(resaved.status, 200, "{}", resaved.text);

    let tested = app
        .post(
            &format!("/api/v1/{ID}/test-connection"),
            &owner.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    assert_eq!(tested.body["ok"], true);

    let job = sync(&app, &owner).await;
    assert_eq!(job["status"], "success", "{job}");
    assert_eq!(job["progress"]["phase"], "done");
    let stats = app
        .get(&format!("/api/v1/{ID}/stats"), &owner.bearer())
        .await;
    assert_eq!(stats.body["inventory_items"], 4);
    assert_eq!(stats.body["devices"], 3);
    assert_eq!(stats.body["records"]["device"], 3);
    let devices = app
        .get(&format!("/api/v1/{ID}/devices"), &owner.bearer())
        .await;
    assert_eq!(devices.body["total"], 3);
    let one = app
        .get(
            &format!("/api/v1/{ID}/device-by-name/ws-01"),
            &owner.bearer(),
        )
        .await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.body["record"]["apps"][1]["name"], "Firefox");
    app.get(
        &format!("/api/v1/{ID}/device-by-name/NOPE"),
        &owner.bearer(),
    )
    .await
    .assert_error(404);
    // The run asked for a rollup rebuild.
    let rollups = app.get("/api/v1/jobs?kind=rollup", &owner.bearer()).await;
    assert_eq!(rollups.body["total"], 1);
    app.wait_for_rollup(&owner).await;
    let windows = app
        .post(
            "/api/v1/devices/devices/search",
            &owner.bearer(),
            json!({"query": {"kind": "group", "combinator": "and", "rules": [
                {"kind": "rule", "field": "os_platform", "operator": "equals", "value": "windows"}]}}),
        )
        .await;
    assert_eq!(windows.status, 200, "{}", windows.text);
    assert_eq!(windows.body["total"], 1, "{}", windows.text);
    assert_eq!(windows.body["items"][0]["device_name"], "WS-01");

    // A device removed upstream is pruned by the next complete run; a
    // device reported unchanged is left as it is, one that changed is
    // rewritten.
    let by_name = async |name: &str| {
        app.get(
            &format!("/api/v1/{ID}/device-by-name/{name}"),
            &owner.bearer(),
        )
        .await
        .body
    };
    let laptop_before = by_name("LAPTOP-03").await;
    let ws01_before = by_name("WS-01").await;
    let last_seen = async || {
        let asset = app
            .get("/api/v1/devices/by-name/LAPTOP-03", &owner.bearer())
            .await;
        let listed = app
            .get("/api/v1/devices/devices?search=LAPTOP", &owner.bearer())
            .await;
        let asset = asset.body["last_seen"].as_str().unwrap().to_string();
        let listed = listed.body["items"][0]["last_seen"]
            .as_str()
            .unwrap()
            .to_string();
        (asset, listed)
    };
    let seen_first = last_seen().await;
    upstream.set_devices(vec![
        device("d1", "WS-01", &[("7-Zip", "24.08")]),
        device("d3", "LAPTOP-03", &[("Slack", "4.41")]),
    ]);
    let job = sync(&app, &owner).await;
    assert_eq!(job["status"], "success", "{job}");
    let laptop_after = by_name("LAPTOP-03").await;
    assert_eq!(laptop_after["changed_at"], laptop_before["changed_at"]);
    assert_eq!(laptop_after["record"], laptop_before["record"]);
    // Unchanged, and reported again: the asset was last seen by this run.
    app.wait_for_rollup(&owner).await;
    let seen_again = last_seen().await;
    assert!(
        seen_again.0 > seen_first.0,
        "{seen_first:?} then {seen_again:?}"
    );
    assert!(
        seen_again.1 > seen_first.1,
        "{seen_first:?} then {seen_again:?}"
    );
    let ws01_after = by_name("WS-01").await;
    assert_eq!(ws01_after["record"]["apps"][0]["version"], "24.08");
    assert!(
        ws01_after["changed_at"].as_str() > ws01_before["changed_at"].as_str(),
        "{ws01_before} then {ws01_after}"
    );
    let stats = app
        .get(&format!("/api/v1/{ID}/stats"), &owner.bearer())
        .await;
    assert_eq!(stats.body["devices"], 2);
    assert_eq!(
        stats.body["inventory_items"], 2,
        "old versions and the gone device are pruned"
    );
    app.get(
        &format!("/api/v1/{ID}/device-by-name/WS-02"),
        &owner.bearer(),
    )
    .await
    .assert_error(404);
    let history = app
        .get(&format!("/api/v1/{ID}/sync-status"), &owner.bearer())
        .await;
    assert_eq!(history.body["history"].as_array().unwrap().len(), 2);

    // Deleting the config removes what was synced.
    let deleted = app
        .delete(&format!("/api/v1/{ID}/config"), &owner.bearer())
        .await;
    assert_eq!(deleted.status, 204);
    let stats = app
        .get(&format!("/api/v1/{ID}/stats"), &owner.bearer())
        .await;
    assert_eq!(stats.body["inventory_items"], 0);
    assert_eq!(stats.body["devices"], 0);
    app.delete(&format!("/api/v1/{ID}/config"), &owner.bearer())
        .await
        .assert_error(404);
    app.post(&format!("/api/v1/{ID}/sync"), &owner.bearer(), json!({}))
        .await
        .assert_error(409);
    app.finish().await;
}

/// Upstream paging can shift while a sync runs, so one device may come on
/// two pages, and on PostgreSQL two pages are written at once: both upsert
/// the same rows (in key order, so neither waits on the other forever).
async fn a_device_on_several_pages_is_stored_once(backend: Backend) {
    let apps: Vec<(String, String)> = (0..40)
        .map(|i| (format!("App {i:02}"), format!("1.{i}")))
        .collect();
    let apps: Vec<(&str, &str)> = apps.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
    let a = device("d1", "WS-01", &apps);
    let b = device("d2", "WS-02", &apps);
    // Two devices a page: WS-02 on pages 1 and 2, WS-01 on pages 1 and 3.
    let upstream = FakeInventory::start(vec![
        a.clone(),
        b.clone(),
        b,
        device("d3", "WS-03", &apps),
        a,
        device("d4", "WS-04", &apps[..1]),
    ])
    .await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    configure(&app, &owner, &upstream.url, TOKEN).await;
    for _ in 0..2 {
        let job = sync(&app, &owner).await;
        assert_eq!(job["status"], "success", "{job}");
        let stats = app
            .get(&format!("/api/v1/{ID}/stats"), &owner.bearer())
            .await;
        assert_eq!(stats.body["devices"], 4, "{}", stats.text);
        assert_eq!(stats.body["inventory_items"], 3 * 40 + 1, "{}", stats.text);
    }
    app.finish().await;
}

async fn bad_config_is_refused_with_the_field(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let member = app.add_member(&owner, "member@example.com", "member").await;
    for (body, field) in [
        (json!({"base_url": "http://x.example"}), "api_token"),
        (
            json!({"base_url": "ftp://x.example", "api_token": TOKEN}),
            "base_url",
        ),
        (
            json!({"base_url": "http://x.example", "api_token": "sh\"rt"}),
            "api_token",
        ),
        (
            json!({"base_url": "http://x.example", "api_token": 86_753_099}),
            "api_token",
        ),
    ] {
        let resp = app
            .post(&format!("/api/v1/{ID}/config"), &owner.bearer(), body)
            .await;
        resp.assert_error(422);
        assert_eq!(resp.body["field"], field, "{}", resp.text);
        // The refused secret is not echoed back.
        let detail = resp.body["detail"].as_str().unwrap();
        for secret in ["sh\\\"rt", "sh\"rt", "86753099"] {
            assert!(!detail.contains(secret), "{detail}");
        }
    }
    app.post(
        &format!("/api/v1/{ID}/config"),
        &owner.bearer(),
        json!([1, 2]),
    )
    .await
    .assert_error(422);
    app.post(
        &format!("/api/v1/{ID}/config"),
        &member.bearer(),
        json!({"base_url": "http://x.example", "api_token": TOKEN}),
    )
    .await
    .assert_error(403);
    app.get("/api/v1/nosuch/config", &owner.bearer())
        .await
        .assert_error(404);
    app.post(
        &format!("/api/v1/{ID}/test-connection"),
        &owner.bearer(),
        json!({}),
    )
    .await
    .assert_error(409);
    // Nothing was stored.
    assert_eq!(
        app.get(&format!("/api/v1/{ID}/config"), &owner.bearer())
            .await
            .body["configured"],
        false
    );
    app.finish().await;
}

async fn upstream_auth_failure_is_typed_and_secret_free(backend: Backend) {
    let upstream = FakeInventory::start(vec![device("d1", "WS-01", &[])]).await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let wrong = "wrong-token-also-secret";
    configure(&app, &owner, &upstream.url, wrong).await;
    let tested = app
        .post(
            &format!("/api/v1/{ID}/test-connection"),
            &owner.bearer(),
            json!({}),
        )
        .await;
    tested.assert_error(502);
    assert_eq!(tested.body["type"], "upstream_auth_error");
    assert_eq!(tested.body["upstream_status"], 401);
    assert!(!tested.text.contains(wrong));

    let job = sync(&app, &owner).await;
    // An auth failure fails the run (and is retried like any failure); the
    // error is on the job and names the status, never the secret.
    let error = job["error"].as_str().unwrap_or_default();
    assert!(error.contains("401"), "{job}");
    let jobs = app.get("/api/v1/jobs", &owner.bearer()).await;
    assert!(!jobs.text.contains(wrong), "no secret in a job error");
    app.finish().await;
}

async fn tenants_cannot_see_each_others_integrations(backend: Backend) {
    let upstream = FakeInventory::start(vec![device("d1", "WS-01", &[("7-Zip", "23.01")])]).await;
    let Some(app) = app(backend).await else {
        return;
    };
    let alpha = app.register("owner@alpha.example").await;
    let beta = app.register("owner@beta.example").await;
    configure(&app, &alpha, &upstream.url, TOKEN).await;
    assert_eq!(sync(&app, &alpha).await["status"], "success");

    let config = app
        .get(&format!("/api/v1/{ID}/config"), &beta.bearer())
        .await;
    assert_eq!(config.body["configured"], false);
    let stats = app
        .get(&format!("/api/v1/{ID}/stats"), &beta.bearer())
        .await;
    assert_eq!(stats.body["inventory_items"], 0);
    assert_eq!(
        app.get(&format!("/api/v1/{ID}/devices"), &beta.bearer())
            .await
            .body["total"],
        0
    );
    app.get(
        &format!("/api/v1/{ID}/device-by-name/WS-01"),
        &beta.bearer(),
    )
    .await
    .assert_error(404);
    assert_eq!(
        app.get(&format!("/api/v1/{ID}/sync-status"), &beta.bearer())
            .await
            .body["history"],
        json!([])
    );
    app.post(&format!("/api/v1/{ID}/sync"), &beta.bearer(), json!({}))
        .await
        .assert_error(409);
    app.delete(&format!("/api/v1/{ID}/config"), &beta.bearer())
        .await
        .assert_error(404);
    // Alpha's data is intact.
    let stats = app
        .get(&format!("/api/v1/{ID}/stats"), &alpha.bearer())
        .await;
    assert_eq!(stats.body["inventory_items"], 1);
    app.finish().await;
}

async fn deleting_the_config_stops_a_running_sync(backend: Backend) {
    let devices: Vec<Value> = (1..=6)
        .map(|i| {
            device(
                &format!("d{i}"),
                &format!("WS-{i:02}"),
                &[("7-Zip", "23.01")],
            )
        })
        .collect();
    let upstream = FakeInventory::start(devices).await;
    upstream.hold_from_page(2);
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    configure(&app, &owner, &upstream.url, TOKEN).await;
    let started = app
        .post(&format!("/api/v1/{ID}/sync"), &owner.bearer(), json!({}))
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let job_id = started.body["job_id"].as_str().unwrap().to_string();

    // Page 1 is written; the sync waits for page 2.
    wait_for(
        "the sync to ask for page 2",
        Duration::from_secs(30),
        async || upstream.held() > 0,
    )
    .await;
    let synced_rows = async || -> i64 {
        sqlx::query_scalar(
            "SELECT (SELECT COUNT(*) FROM inventory_items WHERE source = $1) \
             + (SELECT COUNT(*) FROM source_records WHERE source = $1)",
        )
        .bind(ID)
        .fetch_one(&app.db().pool)
        .await
        .unwrap()
    };
    // Page 1's write and the request for page 2 overlap: wait for the
    // write to commit rather than reading at the moment page 2 is asked.
    wait_for(
        "page 1 to be written",
        Duration::from_secs(30),
        async || synced_rows().await >= 4,
    )
    .await;
    assert_eq!(synced_rows().await, 4, "page 1: two devices, two items");

    let deleted = app
        .delete(&format!("/api/v1/{ID}/config"), &owner.bearer())
        .await;
    assert_eq!(deleted.status, 204);
    upstream.release();
    let job = wait_until("the sync to stop", Duration::from_secs(30), async || {
        let job = app
            .get(&format!("/api/v1/jobs/{job_id}"), &owner.bearer())
            .await;
        if ["success", "error", "canceled"].contains(&job.body["status"].as_str().unwrap_or("")) {
            Ok(job.body)
        } else {
            Err(job.text)
        }
    })
    .await;
    assert_ne!(job["status"], "success", "{job}");
    assert_eq!(synced_rows().await, 0, "nothing was written back: {job}");
    app.finish().await;
}

/// Five devices, two per page: three pages. WS-02 has an application whose
/// name is five million characters long.
async fn capped_upstream() -> FakeInventory {
    let huge = "x".repeat(5_000_000);
    FakeInventory::start(vec![
        device("d1", "WS-01", &[("7-Zip", "23.01")]),
        device("d2", "WS-02", &[(huge.as_str(), "1.0"), ("7-Zip", "23.01")]),
        device("d3", "WS-03", &[("Slack", "4.41")]),
        device("d4", "WS-04", &[("Slack", "4.41")]),
        device("d5", "WS-05", &[("Slack", "4.41")]),
    ])
    .await
}

/// Lowers one cap of the service's settings.
type SetCap = fn(&mut cairn_core::settings::Settings);

async fn sync_caps_stop_runs_with_clear_errors(backend: Backend) {
    let upstream = capped_upstream().await;
    let capped: [(SetCap, &str); 3] = [
        (
            |s| s.sync_max_pages = 2,
            "stopped after 2 pages (the cap, CAIRN_SYNC_MAX_PAGES)",
        ),
        (
            |s| s.sync_max_page_records = 1,
            "a page of stream ok held 2 records, over the cap of 1 (CAIRN_SYNC_MAX_PAGE_RECORDS)",
        ),
        // Page one writes WS-01's two rows; page two would bring four more.
        (
            |s| s.sync_max_rows = 3,
            "this run mapped 6 rows, over the cap of 3 (CAIRN_SYNC_MAX_ROWS)",
        ),
    ];
    for (cap, reason) in capped {
        let Some(app) = app_with(backend, move |s| {
            s.plugin_max_field_chars = 256;
            // Every run here ends at a cap; the file's 2 s call deadline
            // (for the endless loop above) only makes a loaded machine's
            // slow call a retried timeout, and this test counts attempts.
            s.plugin_call_timeout_secs = 30;
            // Nor may a lapsed lease retry it: on a machine loaded enough
            // that the heartbeat's write misses a minute, the reaper would
            // hand the run out again (attempts 2, seen once in CI).
            s.job_lease_secs = 600;
            cap(s);
        })
        .await
        else {
            return;
        };
        let owner = app.register("owner@example.com").await;
        configure(&app, &owner, &upstream.url, TOKEN).await;
        let job = sync(&app, &owner).await;
        assert_eq!(job["status"], "error", "{job}");
        assert!(job["error"].as_str().unwrap().contains(reason), "{job}");
        // A cap would only be hit again: the run is not retried.
        assert_eq!(job["attempts"], 1, "{job}");
        app.finish().await;
    }

    // Under the run caps, the record with the oversized field is rejected,
    // the rest stored, and the name never reaches a page.
    let Some(app) = app_with(backend, |s| s.plugin_max_field_chars = 256).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    configure(&app, &owner, &upstream.url, TOKEN).await;
    let job = sync(&app, &owner).await;
    assert_eq!(job["status"], "success", "{job}");
    assert!(
        job["progress"]["detail"]
            .as_str()
            .unwrap()
            .contains("1 records rejected"),
        "{job}"
    );
    let stats = app
        .get(&format!("/api/v1/{ID}/stats"), &owner.bearer())
        .await;
    assert_eq!(stats.body["records"]["device"], 4, "{}", stats.text);
    assert_eq!(stats.body["inventory_items"], 4, "{}", stats.text);
    app.wait_for_rollup(&owner).await;
    let applications = app
        .get("/api/v1/inventory/applications", &owner.bearer())
        .await;
    assert_eq!(applications.status, 200, "{}", applications.text);
    assert!(applications.text.contains("Slack"), "{}", applications.text);
    assert!(!applications.text.contains(&"x".repeat(257)));
    app.finish().await;
}
