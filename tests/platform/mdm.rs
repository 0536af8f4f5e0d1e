//! The mdm connector (Microsoft Intune over Graph) against a fake Graph and
//! a fake identity platform: certificate auth, paging, JSON batching with
//! throttled sub-requests, a 503 page, pruning, and Graph's 403.

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_graph::{FakeGraph, GraphData};
use cairn_tests::fake_oauth::{
    FakeOauth, CLIENT_ID, DIRECTORY_TENANT, PRIVATE_KEY, THUMBPRINT_SHA256,
};
use cairn_tests::{backend_tests, Account, Backend, TestApp};
use serde_json::{json, Value};

backend_tests!(
    mdm_sync_with_batching_throttling_and_prune,
    graph_refusals_are_auth_errors_with_the_permissions
);

async fn app(backend: Backend) -> Option<TestApp> {
    let dir = connectors_dir(&["connectors/mdm"], &[]);
    TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
    })
    .await
}

pub(crate) fn device(id: &str, name: &str, os: &str, upn: &str) -> Value {
    json!({
        "@odata.type": "#microsoft.graph.managedDevice", "id": id, "deviceName": name,
        "operatingSystem": os, "osVersion": "10.0.22631.3447", "userPrincipalName": upn,
        "userDisplayName": "Someone", "complianceState": "compliant",
        "managedDeviceOwnerType": "company", "serialNumber": format!("SN-{id}"),
        "lastSyncDateTime": "2026-11-20T08:00:00Z", "jailBroken": "Unknown"
    })
}

fn app_entry(id: &str, name: &str, version: &str) -> Value {
    json!({"@odata.type": "#microsoft.graph.detectedApp", "id": id, "displayName": name,
           "version": version, "sizeInByte": 10, "deviceCount": 1,
           "publisher": "Publisher Inc.", "platform": "windows"})
}

pub(crate) fn graph_data() -> GraphData {
    let mut data = GraphData {
        devices: vec![
            device("d-1", "LAPTOP-01", "Windows", "ada@contoso.example"),
            device("d-2", "LAPTOP-02", "Windows", "Grace@Contoso.example"),
            device("d-3", "MAC-01", "macOS", "linus@contoso.example"),
        ],
        device_page_size: 2,
        apps_page_size: 2,
        // The second page of devices fails once with a 503.
        fail_page_once: Some(2),
        ..GraphData::default()
    };
    data.apps.insert(
        "d-1".into(),
        vec![
            app_entry("a-1", "Google Chrome", "124.0.6367.60"),
            app_entry("a-2", "7-Zip", "23.01"),
            app_entry("a-3", "Slack", "4.38.125"),
        ],
    );
    data.apps.insert(
        "d-2".into(),
        vec![app_entry("a-4", "Google Chrome", "123.0.6312.86")],
    );
    data.apps.insert(
        "d-3".into(),
        vec![app_entry("a-1", "Google Chrome", "124.0.6367.60")],
    );
    // d-1's apps come in two pages; d-2's first answer is throttled.
    data.throttle_once.insert("d-2".into());
    data
}

pub(crate) fn config(idp: &FakeOauth, graph: &FakeGraph) -> Value {
    json!({
        "auth_url": idp.base_url, "graph_url": graph.base_url, "tenant_id": DIRECTORY_TENANT,
        "client_id": CLIENT_ID, "certificate_thumbprint": THUMBPRINT_SHA256,
        "private_key": PRIVATE_KEY, "page_size": 2
    })
}

pub(crate) async fn sync(app: &TestApp, account: &Account, area: &str) -> Value {
    let started = app
        .post(
            &format!("/api/v1/{area}/sync"),
            &account.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    app.wait_for_job(account, started.body["job_id"].as_str().unwrap())
        .await
}

pub(crate) fn names(list: &Value, field: &str) -> Vec<String> {
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d[field].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

async fn mdm_sync_with_batching_throttling_and_prune(backend: Backend) {
    let idp = FakeOauth::start().await;
    let graph = FakeGraph::start(&idp, graph_data()).await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let saved = app
        .post("/api/v1/mdm/config", &owner.bearer(), config(&idp, &graph))
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["config"]["private_key"], "********");
    let tested = app
        .post("/api/v1/mdm/test-connection", &owner.bearer(), json!({}))
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    // The PS256 assertion with the SHA-256 thumbprint was verified.
    assert!(idp.state.lock().unwrap().assertions_verified >= 1);

    let job = sync(&app, &owner, "mdm").await;
    assert_eq!(job["status"], "success", "{job}");
    {
        let data = graph.data.lock().unwrap();
        assert_eq!(data.throttled, 1, "d-2's apps were throttled once");
        assert_eq!(data.page_failures, 1, "the second page failed once");
    }
    let devices = app.get("/api/v1/mdm/devices", &owner.bearer()).await;
    assert_eq!(devices.status, 200, "{}", devices.text);
    assert_eq!(
        names(&devices.body, "device_name"),
        ["LAPTOP-01", "LAPTOP-02", "MAC-01"]
    );
    let laptop2 = devices.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device_name"] == "LAPTOP-02")
        .unwrap();
    assert_eq!(laptop2["fields"]["user"], "grace@contoso.example");
    assert_eq!(laptop2["fields"]["compliance_state"], "compliant");
    assert!(laptop2["record"].get("_detectedApps").is_none());

    // Apps deduplicated by name, with the devices reporting each; the
    // throttled device's app is there once, and both pages of d-1's apps.
    let apps = app.get("/api/v1/mdm/apps", &owner.bearer()).await;
    assert_eq!(apps.status, 200, "{}", apps.text);
    assert_eq!(
        apps.body["items"][0],
        json!({"name": "Google Chrome", "records": 3, "devices": 3})
    );
    assert_eq!(apps.body["total"], 3, "{}", apps.text);
    let stats = app.get("/api/v1/mdm/stats", &owner.bearer()).await;
    assert_eq!(stats.body["inventory_items"], 5, "{}", stats.text);
    // The tenant-wide list, with Intune's own device counts.
    let detected = app
        .get(
            "/api/v1/mdm/detected-apps?name=google%20chrome",
            &owner.bearer(),
        )
        .await;
    assert_eq!(detected.status, 200, "{}", detected.text);
    let mut counts: Vec<(String, i64)> = detected.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["fields"]["version"].as_str().unwrap().to_string(),
                a["fields"]["device_count"].as_i64().unwrap(),
            )
        })
        .collect();
    counts.sort();
    assert_eq!(
        counts,
        [
            ("123.0.6312.86".to_string(), 1),
            ("124.0.6367.60".to_string(), 2)
        ]
    );

    // The rollup sees the mdm source.
    let rollup = app.wait_for_rollup(&owner).await;
    assert_eq!(rollup["status"], "success", "{rollup}");
    let applications = app
        .get("/api/v1/inventory/applications?sort=name", &owner.bearer())
        .await;
    assert_eq!(
        names(&applications.body, "name"),
        ["7-Zip", "Google Chrome", "Slack"]
    );

    // Another tenant sees none of it.
    let other = app.register("other@msp.example").await;
    let theirs = app.get("/api/v1/mdm/devices", &other.bearer()).await;
    assert_eq!(theirs.body["items"], json!([]), "{}", theirs.text);
    let theirs = app.get("/api/v1/mdm/apps", &other.bearer()).await;
    assert_eq!(theirs.body["items"], json!([]), "{}", theirs.text);
    let theirs = app.get("/api/v1/mdm/detected-apps", &other.bearer()).await;
    assert_eq!(theirs.body["items"], json!([]), "{}", theirs.text);

    // A device removed upstream is pruned with its apps and items.
    {
        let mut data = graph.data.lock().unwrap();
        data.devices.retain(|d| d["id"] != "d-1");
        data.apps.remove("d-1");
    }
    let job = sync(&app, &owner, "mdm").await;
    assert_eq!(job["status"], "success", "{job}");
    let devices = app.get("/api/v1/mdm/devices", &owner.bearer()).await;
    assert_eq!(names(&devices.body, "device_name"), ["LAPTOP-02", "MAC-01"]);
    let apps = app.get("/api/v1/mdm/apps", &owner.bearer()).await;
    assert_eq!(names(&apps.body, "name"), ["Google Chrome"]);
    let stats = app.get("/api/v1/mdm/stats", &owner.bearer()).await;
    assert_eq!(stats.body["inventory_items"], 2, "{}", stats.text);

    // No secret in config reads or jobs.
    let key_line = PRIVATE_KEY.lines().nth(1).unwrap();
    let config = app.get("/api/v1/mdm/config", &owner.bearer()).await;
    assert!(!config.text.contains(key_line));
    let jobs = app.get("/api/v1/jobs", &owner.bearer()).await;
    assert!(!jobs.text.contains(key_line));
    app.finish().await;
}

async fn graph_refusals_are_auth_errors_with_the_permissions(backend: Backend) {
    let idp = FakeOauth::start().await;
    let graph = FakeGraph::start(&idp, graph_data()).await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    app.post("/api/v1/mdm/config", &owner.bearer(), config(&idp, &graph))
        .await;
    graph.data.lock().unwrap().forbidden = true;
    let tested = app
        .post("/api/v1/mdm/test-connection", &owner.bearer(), json!({}))
        .await;
    tested.assert_error(502);
    assert_eq!(
        tested.body["type"], "upstream_auth_error",
        "{}",
        tested.text
    );
    assert_eq!(tested.body["upstream_status"], 403);
    assert!(
        tested.text.contains("Authorization_RequestDenied"),
        "{}",
        tested.text
    );
    let hint = tested.body["permission_hint"].as_str().unwrap();
    assert!(
        hint.contains("DeviceManagementManagedDevices.Read.All"),
        "{hint}"
    );
    assert!(hint.contains("DeviceManagementApps.Read.All"), "{hint}");
    app.finish().await;
}
