//! Contract v0.2 end to end: an outside connector for an area the host has
//! never heard of (`backup`) mounted from its descriptor alone; two products
//! serving one area for two tenants, and switching; v0.1 and v0.2
//! components still loading and syncing.

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_backup::{self, ACME_KEY, ZENITH_KEY};
use cairn_tests::fake_inventory::{device, FakeInventory, TOKEN};
use cairn_tests::{backend_tests, Account, Backend, TestApp};
use serde_json::{json, Value};

backend_tests!(
    an_outside_connector_is_mounted_from_its_descriptor,
    tenants_use_their_own_connector_for_one_area,
    a_v01_component_still_loads_and_syncs,
    a_v02_component_still_loads_and_syncs,
);

async fn app(backend: Backend) -> Option<TestApp> {
    let dir = connectors_dir(
        &["backup", "backup-zenith", "legacy-v01", "legacy-v02"],
        &[],
    );
    TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
        s.job_retry_backoff_ms = 0;
    })
    .await
}

fn keys(page: &Value) -> Vec<String> {
    let mut keys: Vec<String> = page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("a page: {page}"))
        .iter()
        .map(|r| r["key"].as_str().unwrap().to_string())
        .collect();
    keys.sort();
    keys
}

async fn configure_acme(app: &TestApp, owner: &Account, url: &str) {
    let saved = app
        .post(
            "/api/v1/backup/config",
            &owner.bearer(),
            json!({"connector": "acme-backup", "base_url": url, "api_key": ACME_KEY}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["connector"], "acme-backup");
    assert_eq!(saved.body["config"]["api_key"], "********");
}

async fn an_outside_connector_is_mounted_from_its_descriptor(backend: Backend) {
    let upstream = fake_backup::start().await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@alpha.example").await;
    let member = app.add_member(&owner, "tech@alpha.example", "member").await;

    // Listed as an area with both products, none chosen yet.
    let listed = app.get("/api/v1/integrations/", &owner.bearer()).await;
    let area = listed.body["areas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["area"] == "backup")
        .unwrap_or_else(|| panic!("backup listed: {}", listed.text))
        .clone();
    assert_eq!(area["connectors"], json!(["acme-backup", "zenith-backup"]));
    assert_eq!(area["configured"], false);
    assert!(area["connector"].is_null());

    // Every declared route is in the OpenAPI document, concretely.
    let doc = app.get("/openapi.json", &cairn_tests::Auth::None).await;
    let paths = &doc.body["paths"];
    for (method, path) in [
        ("get", "/api/v1/backup/config"),
        ("post", "/api/v1/backup/config"),
        ("post", "/api/v1/backup/sync"),
        ("get", "/api/v1/backup/devices"),
        ("get", "/api/v1/backup/device/{device_id}"),
        ("get", "/api/v1/backup/device-by-name/{device_name}"),
        ("get", "/api/v1/backup/jobs"),
        ("get", "/api/v1/backup/jobs/by-status"),
        ("post", "/api/v1/backup/jobs/{job_id}/restore"),
        ("get", "/api/v1/backup/storage"),
    ] {
        assert!(
            paths[path][method].is_object(),
            "{method} {path} documented"
        );
        assert_eq!(paths[path][method]["tags"], json!(["backup"]), "{path}");
    }
    let restore = &paths["/api/v1/backup/jobs/{job_id}/restore"]["post"];
    assert_eq!(
        restore["requestBody"]["content"]["application/json"]["schema"]["required"],
        json!(["target"])
    );
    assert_eq!(restore["parameters"][0]["name"], "job_id");
    assert!(restore["responses"]["403"].is_object(), "admin only");
    let storage = &paths["/api/v1/backup/storage"]["get"];
    assert_eq!(storage["parameters"][0]["name"], "unit");
    let jobs_filters: Vec<&str> = paths["/api/v1/backup/jobs"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for name in [
        "search",
        "limit",
        "offset",
        "status",
        "encrypted",
        "size_bytes",
    ] {
        assert!(jobs_filters.contains(&name), "{name} in {jobs_filters:?}");
    }
    let config_body = &paths["/api/v1/backup/config"]["post"]["requestBody"]["content"]
        ["application/json"]["schema"];
    assert_eq!(config_body["oneOf"].as_array().unwrap().len(), 2);

    // Two products serve the area: a config that fits neither product's
    // schema alone, or both, must say which.
    for body in [
        json!({"base_url": upstream.url}),
        json!({"base_url": upstream.url, "api_key": ACME_KEY, "token": "zenith-token"}),
    ] {
        let unnamed = app
            .post("/api/v1/backup/config", &owner.bearer(), body)
            .await;
        unnamed.assert_error(422);
        assert_eq!(unnamed.body["field"], "connector", "{}", unnamed.text);
    }
    let wrong = app
        .post(
            "/api/v1/backup/config",
            &owner.bearer(),
            json!({"connector": "acme-backup", "base_url": upstream.url, "api_key": "short"}),
        )
        .await;
    wrong.assert_error(422);
    assert_eq!(wrong.body["field"], "api_key");
    assert!(!wrong.text.contains("short"), "{}", wrong.text);
    configure_acme(&app, &owner, &upstream.url).await;
    assert_eq!(app.sync_area(&owner, "backup").await["status"], "success");

    // List views: search (Unicode), typed field filters, strict parameters.
    let devices = app.get("/api/v1/backup/devices", &member.bearer()).await;
    assert_eq!(devices.body["total"], 3, "{}", devices.text);
    assert_eq!(devices.body["items"][0]["fields"]["os_platform"], "macos");
    let found = app
        .get("/api/v1/backup/devices?search=%C3%A9cole", &member.bearer())
        .await;
    assert_eq!(keys(&found.body), ["d-2"]);
    let windows = app
        .get(
            "/api/v1/backup/devices?os_platform=WINDOWS",
            &member.bearer(),
        )
        .await;
    assert_eq!(keys(&windows.body), ["d-1"]);
    let failed = app
        .get("/api/v1/backup/jobs?status=failed", &member.bearer())
        .await;
    assert_eq!(keys(&failed.body), ["j-2", "j-3"]);
    let encrypted = app
        .get("/api/v1/backup/jobs?encrypted=true", &member.bearer())
        .await;
    assert_eq!(keys(&encrypted.body), ["j-1", "j-3"]);
    let sized = app
        .get("/api/v1/backup/jobs?size_bytes=1200", &member.bearer())
        .await;
    assert_eq!(keys(&sized.body), ["j-1"]);
    let paged = app
        .get("/api/v1/backup/jobs?limit=1&offset=1", &member.bearer())
        .await;
    assert_eq!(
        (paged.body["total"].as_i64(), keys(&paged.body).len()),
        (Some(4), 1)
    );
    // NUL never matches (stored text has none) and is no error on either
    // engine.
    for query in ["search=a%00b", "status=fail%00ed"] {
        let nul = app
            .get(&format!("/api/v1/backup/jobs?{query}"), &member.bearer())
            .await;
        assert_eq!(nul.status, 200, "{query}: {}", nul.text);
    }
    // Keys are stored without NUL, and looked up the same way.
    let keyed = app
        .get("/api/v1/backup/device/d-1%00", &member.bearer())
        .await;
    assert_eq!(keyed.body["key"], "d-1", "{}", keyed.text);
    for (query, field) in [
        ("bogus=1", "bogus"),
        ("encrypted=maybe", "encrypted"),
        ("size_bytes=lots", "size_bytes"),
        ("limit=0", "limit"),
    ] {
        let refused = app
            .get(&format!("/api/v1/backup/jobs?{query}"), &member.bearer())
            .await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], field, "{query}");
    }

    // Aggregate: groups ignore case, count records and distinct devices.
    let by_status = app
        .get("/api/v1/backup/jobs/by-status", &member.bearer())
        .await;
    assert_eq!(by_status.body["total"], 2, "{}", by_status.text);
    let failed_group = &by_status.body["items"][0];
    assert_eq!(
        failed_group["status"]
            .as_str()
            .map(str::to_lowercase)
            .as_deref(),
        Some("failed")
    );
    assert_eq!(
        (
            failed_group["records"].as_i64(),
            failed_group["devices"].as_i64()
        ),
        (Some(2), Some(2))
    );

    // One record with its related records; by device name, exact, short
    // host of an FQDN, NetBIOS form, non-ASCII.
    let one = app.get("/api/v1/backup/device/d-1", &member.bearer()).await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.body["record"]["hostname"], "WS-01.corp.example");
    let mut related: Vec<&str> = one.body["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["key"].as_str().unwrap())
        .collect();
    related.sort();
    assert_eq!(related, ["j-1", "j-2"]);
    for (name, key) in [
        ("ws-01", "d-1"),
        ("WS-01.CORP.EXAMPLE", "d-1"),
        ("very-long-works", "d-3"),
        ("laptop-%C3%A9cole", "d-2"),
    ] {
        let by_name = app
            .get(
                &format!("/api/v1/backup/device-by-name/{name}"),
                &member.bearer(),
            )
            .await;
        assert_eq!(by_name.body["key"], key, "{name}: {}", by_name.text);
    }
    app.get("/api/v1/backup/device-by-name/nope", &member.bearer())
        .await
        .assert_error(404);
    app.get("/api/v1/backup/device/nope", &member.bearer())
        .await
        .assert_error(404);

    // A typed action: role, body validation naming the field, path
    // parameter and body reach the upstream, upstream 404 is a 404.
    let path = "/api/v1/backup/jobs/j-1/restore";
    app.post(path, &member.bearer(), json!({"target": "/srv"}))
        .await
        .assert_error(403);
    for (body, field) in [
        (json!({}), "body.target"),
        (json!({"target": "/srv", "verify": "yes"}), "body.verify"),
        (json!({"target": "/srv", "extra": 1}), "body"),
    ] {
        let refused = app.post(path, &owner.bearer(), body.clone()).await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], field, "{body}");
    }
    assert!(upstream.restores.lock().unwrap().is_empty());
    let restored = app
        .post(
            path,
            &owner.bearer(),
            json!({"target": "/srv", "verify": true}),
        )
        .await;
    assert_eq!(restored.status, 200, "{}", restored.text);
    assert_eq!(restored.body["restore_id"], "r-j-1");
    assert_eq!(
        *upstream.restores.lock().unwrap(),
        vec![("j-1".to_string(), json!({"target": "/srv", "verify": true}))]
    );
    app.post(
        "/api/v1/backup/jobs/j-404/restore",
        &owner.bearer(),
        json!({"target": "/srv"}),
    )
    .await
    .assert_error(404);
    let storage = app
        .get("/api/v1/backup/storage?unit=gib", &member.bearer())
        .await;
    assert_eq!(storage.body["used"], 1.5, "{}", storage.text);
    let refused = app
        .get("/api/v1/backup/storage?unit=tb", &member.bearer())
        .await;
    refused.assert_error(422);
    assert_eq!(refused.body["field"], "query.unit");

    // Another tenant sees nothing of it and cannot act through it.
    let beta = app.register("owner@beta.example").await;
    let theirs = app.get("/api/v1/backup/devices", &beta.bearer()).await;
    assert_eq!(theirs.body["total"], 0, "{}", theirs.text);
    app.get("/api/v1/backup/device/d-1", &beta.bearer())
        .await
        .assert_error(404);
    app.get("/api/v1/backup/jobs/by-status", &beta.bearer())
        .await
        .body["total"]
        .as_i64()
        .map(|total| assert_eq!(total, 0))
        .expect("a total");
    app.post(path, &beta.bearer(), json!({"target": "/srv"}))
        .await
        .assert_error(409);
    let config = app.get("/api/v1/backup/config", &beta.bearer()).await;
    assert_eq!(config.body["configured"], false);
    app.finish().await;
}

async fn tenants_use_their_own_connector_for_one_area(backend: Backend) {
    let upstream = fake_backup::start().await;
    let Some(app) = app(backend).await else {
        return;
    };
    let alpha = app.register("owner@alpha.example").await;
    let beta = app.register("owner@beta.example").await;
    configure_acme(&app, &alpha, &upstream.url).await;
    let zenith =
        json!({"connector": "zenith-backup", "base_url": upstream.url, "token": ZENITH_KEY});
    let saved = app
        .post("/api/v1/backup/config", &beta.bearer(), zenith.clone())
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(app.sync_area(&alpha, "backup").await["status"], "success");
    assert_eq!(app.sync_area(&beta, "backup").await["status"], "success");

    // The same route answers each tenant from its own connector's data.
    let alphas = app.get("/api/v1/backup/jobs", &alpha.bearer()).await;
    assert_eq!(keys(&alphas.body), ["j-1", "j-2", "j-3", "j-4"]);
    let betas = app.get("/api/v1/backup/jobs", &beta.bearer()).await;
    assert_eq!(keys(&betas.body), ["z-1", "z-2"]);
    assert_eq!(betas.body["items"][1]["fields"], json!({"status": "error"}));
    // A route only the other product declares is not this tenant's.
    let missing = app.get("/api/v1/backup/devices", &beta.bearer()).await;
    missing.assert_error(404);
    assert!(missing.text.contains("zenith-backup"), "{}", missing.text);
    let listed = app.get("/api/v1/integrations/", &beta.bearer()).await;
    let area = listed.body["areas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["area"] == "backup")
        .unwrap()
        .clone();
    assert_eq!(
        (area["configured"].as_bool(), area["connector"].as_str()),
        (Some(true), Some("zenith-backup"))
    );

    // Switching alpha to the other product removes what the old one synced.
    let switched = app
        .post("/api/v1/backup/config", &alpha.bearer(), zenith)
        .await;
    assert_eq!(switched.status, 200, "{}", switched.text);
    assert_eq!(switched.body["connector"], "zenith-backup");
    let emptied = app.get("/api/v1/backup/jobs", &alpha.bearer()).await;
    assert_eq!(emptied.body["total"], 0, "{}", emptied.text);
    let stats = app.get("/api/v1/backup/stats", &alpha.bearer()).await;
    assert_eq!(stats.body["records"], json!({}), "{}", stats.text);
    // Beta's rows are untouched; alpha's next sync brings the new product's.
    assert_eq!(
        app.get("/api/v1/backup/jobs", &beta.bearer()).await.body["total"],
        2
    );
    assert_eq!(app.sync_area(&alpha, "backup").await["status"], "success");
    let resynced = app.get("/api/v1/backup/jobs", &alpha.bearer()).await;
    assert_eq!(keys(&resynced.body), ["z-1", "z-2"]);
    // Saving the same product again keeps its data.
    let kept = app
        .post(
            "/api/v1/backup/config",
            &alpha.bearer(),
            json!({"base_url": upstream.url, "token": "********"}),
        )
        .await;
    assert_eq!(kept.status, 200, "{}", kept.text);
    assert_eq!(
        app.get("/api/v1/backup/jobs", &alpha.bearer()).await.body["total"],
        2
    );
    app.finish().await;
}

async fn a_v01_component_still_loads_and_syncs(backend: Backend) {
    let legacy = Legacy {
        id: "legacy",
        area: "legacy",
        sdk_version: "0.1.0",
        collection: "device",
    };
    a_legacy_component_loads_and_syncs(backend, legacy).await;
}

async fn a_v02_component_still_loads_and_syncs(backend: Backend) {
    let legacy = Legacy {
        id: "legacy2-inventory",
        area: "legacy2",
        sdk_version: "0.2.0",
        collection: "devices",
    };
    a_legacy_component_loads_and_syncs(backend, legacy).await;
}

/// A test component built against a frozen contract.
struct Legacy {
    id: &'static str,
    area: &'static str,
    sdk_version: &'static str,
    /// The collection its devices are synced into.
    collection: &'static str,
}

async fn a_legacy_component_loads_and_syncs(backend: Backend, legacy: Legacy) {
    let upstream = FakeInventory::start(vec![
        device("1", "WS-01", &[("7-Zip", "23.01"), ("Firefox", "128.0")]),
        device("2", "WS-02", &[("7-Zip", "23.01")]),
        device("3", "WS-03", &[]),
    ])
    .await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@alpha.example").await;
    let listed = app.get("/api/v1/integrations/", &owner.bearer()).await;
    let loaded = listed.body["connectors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["descriptor"]["id"] == legacy.id)
        .unwrap_or_else(|| panic!("{} loaded: {}", legacy.id, listed.text))
        .clone();
    assert_eq!(loaded["descriptor"]["sdk_version"], legacy.sdk_version);
    assert_eq!(loaded["descriptor"]["area"], legacy.area);

    let area = format!("/api/v1/{}", legacy.area);
    let saved = app
        .post(
            &format!("{area}/config"),
            &owner.bearer(),
            json!({"base_url": upstream.url, "api_token": TOKEN}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let tested = app
        .post(
            &format!("{area}/test-connection"),
            &owner.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    assert_eq!(
        app.sync_area(&owner, legacy.area).await["status"],
        "success"
    );
    let stats = app.get(&format!("{area}/stats"), &owner.bearer()).await;
    assert_eq!(stats.body["inventory_items"], 3, "{}", stats.text);
    assert_eq!(
        stats.body["records"][legacy.collection], 3,
        "{}",
        stats.text
    );
    // A list view, a by-name view and the action as a GET route.
    let devices = app.get(&format!("{area}/devices"), &owner.bearer()).await;
    assert_eq!(devices.body["total"], 3, "{}", devices.text);
    let one = app
        .get(&format!("{area}/device-by-name/ws-02"), &owner.bearer())
        .await;
    assert_eq!(one.body["record"]["name"], "WS-02", "{}", one.text);
    let ping = app.get(&format!("{area}/ping"), &owner.bearer()).await;
    assert_eq!(ping.status, 200, "{}", ping.text);
    assert_eq!(ping.body["pong"], true);
    app.finish().await;
}
