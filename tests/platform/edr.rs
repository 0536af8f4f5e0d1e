//! The edr connector (SentinelOne) against a fake Management API: cursor
//! paging with a 429 on the way, stringly typed values, threats and apps
//! per agent, the asset view's edr detail and search, and a refused token.

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_sentinelone::{FakeSentinelOne, SentinelOneData, API_TOKEN};
use cairn_tests::{backend_tests, Backend, TestApp};
use serde_json::{json, Value};

use super::mdm::{names, sync};

backend_tests!(
    edr_sync_threats_apps_and_asset_detail,
    a_refused_token_is_an_auth_error
);

const AGENTS: &str = include_str!("../fixtures/edr/sentinelone_agents_raw_response.json");
const THREATS: &str = include_str!("../fixtures/edr/sentinelone_get_threats_2_1_raw_response.json");

fn agent(id: &str, name: &str, os_type: &str, infected: Value, active_threats: Value) -> Value {
    let fixture: Value = serde_json::from_str(AGENTS).unwrap();
    let mut agent = fixture[0].clone();
    agent["id"] = json!(id);
    agent["computerName"] = json!(name);
    agent["osType"] = json!(os_type);
    agent["infected"] = infected;
    agent["activeThreats"] = active_threats;
    agent
}

fn app(name: &str, version: &str) -> Value {
    json!({"installedDate": "2026-01-01T00:00:00.000000Z", "name": name,
           "publisher": "Publisher Inc.", "size": 1234, "version": version})
}

fn data() -> SentinelOneData {
    let fixture: Value = serde_json::from_str(THREATS).unwrap();
    let mut malware = fixture["data"][0].clone();
    malware["agentRealtimeInfo"]["agentId"] = json!("1001");
    malware["agentRealtimeInfo"]["agentComputerName"] = json!("WS-01");
    let mut pua = fixture["data"][1].clone();
    pua["id"] = json!("900002");
    pua["threatInfo"]["classification"] = json!("PUA");
    pua["threatInfo"]["mitigationStatus"] = json!("not_mitigated");
    pua["agentRealtimeInfo"]["agentId"] = json!("1002");
    pua["agentRealtimeInfo"]["agentComputerName"] = json!("web01");
    let mut data = SentinelOneData {
        agents: vec![
            // Typed as the capture has them: booleans as strings.
            agent("1001", "WS-01", "windows", json!("True"), json!("1")),
            agent("1002", "web01", "linux", json!(false), json!(1)),
            agent("1003", "MAC-02", "macos", json!(false), json!(0)),
        ],
        threats: vec![malware, pua],
        throttle_once: true,
        ..SentinelOneData::default()
    };
    data.apps.insert(
        "1001".into(),
        vec![app("Google Chrome", "124.0.6367.60"), app("7-Zip", "23.01")],
    );
    data.apps
        .insert("1002".into(), vec![app("OpenSSL", "3.0.2")]);
    data.apps
        .insert("1003".into(), vec![app("Google Chrome", "123.0.6312.86")]);
    data
}

async fn app_with_edr(backend: Backend) -> Option<TestApp> {
    let dir = connectors_dir(&["connectors/edr"], &[]);
    TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
    })
    .await
}

async fn edr_sync_threats_apps_and_asset_detail(backend: Backend) {
    let s1 = FakeSentinelOne::start(data()).await;
    let Some(app) = app_with_edr(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let saved = app
        .post(
            "/api/v1/edr/config",
            &owner.bearer(),
            json!({"base_url": s1.base_url, "api_token": API_TOKEN, "page_size": 2}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["config"]["api_token"], "********");
    let tested = app
        .post("/api/v1/edr/test-connection", &owner.bearer(), json!({}))
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    let job = sync(&app, &owner, "edr").await;
    assert_eq!(job["status"], "success", "{job}");
    assert_eq!(s1.data.lock().unwrap().throttled, 1, "a 429 was waited out");

    let devices = app.get("/api/v1/edr/devices", &owner.bearer()).await;
    assert_eq!(devices.status, 200, "{}", devices.text);
    assert_eq!(
        names(&devices.body, "device_name"),
        ["MAC-02", "WS-01", "web01"]
    );
    let ws = app.get("/api/v1/edr/device/1001", &owner.bearer()).await;
    assert_eq!(ws.status, 200, "{}", ws.text);
    assert_eq!(ws.body["fields"]["infected"], true, "\"True\" read as true");
    assert_eq!(ws.body["fields"]["active_threats"], 1);
    assert_eq!(ws.body["threats"][0]["fields"]["classification"], "Malware");
    assert_eq!(
        names(&json!({"items": ws.body["apps"]}), "key"),
        ["1001/7-Zip/23.01", "1001/Google Chrome/124.0.6367.60"]
    );
    // By computer name: an FQDN finds the agent of its short host.
    let web = app
        .get(
            "/api/v1/edr/device-by-name/WEB01.corp.example",
            &owner.bearer(),
        )
        .await;
    assert_eq!(web.status, 200, "{}", web.text);
    assert_eq!(web.body["key"], "1002");
    // The product's word beside the one every edr product's threats use.
    assert_eq!(web.body["threats"][0]["fields"]["status"], "active");
    assert_eq!(
        web.body["threats"][0]["fields"]["status_raw"],
        "not_mitigated"
    );

    let count = async |query: &str| {
        let listed = app
            .get(&format!("/api/v1/edr/threats?{query}"), &owner.bearer())
            .await;
        assert_eq!(listed.status, 200, "{}", listed.text);
        listed.body["total"].as_i64().unwrap()
    };
    assert_eq!(count("").await, 2);
    assert_eq!(count("classification=malware").await, 1);
    assert_eq!(count("status=active").await, 1);
    assert_eq!(count("status=resolved").await, 1);
    assert_eq!(count("status_raw=not_mitigated").await, 1);
    assert_eq!(count("device=ws-01").await, 1);
    assert_eq!(count("device=MAC-02").await, 0);

    let apps = app.get("/api/v1/edr/apps", &owner.bearer()).await;
    assert_eq!(
        apps.body["items"][0],
        json!({"name": "Google Chrome", "records": 2, "devices": 2}),
        "{}",
        apps.text
    );
    let stats = app.get("/api/v1/edr/stats", &owner.bearer()).await;
    assert_eq!(stats.body["inventory_items"], 4, "{}", stats.text);

    // The asset view joins the agent by computer name; search reads it.
    let rollup = app.wait_for_rollup(&owner).await;
    assert_eq!(rollup["status"], "success", "{rollup}");
    let asset = app
        .get("/api/v1/devices/by-name/ws-01", &owner.bearer())
        .await;
    assert_eq!(asset.status, 200, "{}", asset.text);
    assert_eq!(asset.body["edr"]["infected"], true, "{}", asset.text);
    // SentinelOne's OS name and revision (the captured agent's) reach the
    // device apart, and together in the OS version.
    assert_eq!(
        [
            &asset.body["os_name"],
            &asset.body["os_build"],
            &asset.body["os_version"]
        ],
        [
            &json!("Windows Server 2016"),
            &json!("14393"),
            &json!("Windows Server 2016 (14393)")
        ],
        "{}",
        asset.text
    );
    assert_eq!(asset.body["sources"], json!(["edr"]));
    let infected = app
        .post(
            "/api/v1/devices/devices/search",
            &owner.bearer(),
            json!({"query": {"kind": "group", "combinator": "and", "rules": [
                {"kind": "rule", "field": "edr.infected", "operator": "equals", "value": true}]}}),
        )
        .await;
    assert_eq!(infected.status, 200, "{}", infected.text);
    assert_eq!(names(&infected.body, "device_name"), ["WS-01"]);

    // Another tenant sees none of it.
    let other = app.register("other@msp.example").await;
    for route in ["devices", "threats", "apps"] {
        let theirs = app
            .get(&format!("/api/v1/edr/{route}"), &other.bearer())
            .await;
        assert_eq!(theirs.body["items"], json!([]), "{route}: {}", theirs.text);
    }
    app.get("/api/v1/edr/device/1001", &other.bearer())
        .await
        .assert_error(404);
    app.get("/api/v1/edr/device-by-name/WS-01", &other.bearer())
        .await
        .assert_error(404);

    // An agent gone upstream is pruned with its apps.
    s1.data.lock().unwrap().agents.retain(|a| a["id"] != "1003");
    assert_eq!(sync(&app, &owner, "edr").await["status"], "success");
    let devices = app.get("/api/v1/edr/devices", &owner.bearer()).await;
    assert_eq!(names(&devices.body, "device_name"), ["WS-01", "web01"]);
    let apps = app
        .get("/api/v1/edr/apps?search=chrome", &owner.bearer())
        .await;
    assert_eq!(apps.body["items"][0]["devices"], 1, "{}", apps.text);

    // The token never comes back.
    let config = app.get("/api/v1/edr/config", &owner.bearer()).await;
    assert!(!config.text.contains(API_TOKEN));
    let jobs = app.get("/api/v1/jobs", &owner.bearer()).await;
    assert!(!jobs.text.contains(API_TOKEN));
    app.finish().await;
}

async fn a_refused_token_is_an_auth_error(backend: Backend) {
    let s1 = FakeSentinelOne::start(data()).await;
    let Some(app) = app_with_edr(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    app.post(
        "/api/v1/edr/config",
        &owner.bearer(),
        json!({"base_url": s1.base_url, "api_token": "not-the-token"}),
    )
    .await;
    let tested = app
        .post("/api/v1/edr/test-connection", &owner.bearer(), json!({}))
        .await;
    tested.assert_error(502);
    assert_eq!(
        tested.body["type"], "upstream_auth_error",
        "{}",
        tested.text
    );
    assert_eq!(tested.body["upstream_status"], 401);
    assert!(
        tested.text.contains("Authentication Failed"),
        "{}",
        tested.text
    );
    assert!(!tested.text.contains("not-the-token"));
    assert!(tested.body["permission_hint"]
        .as_str()
        .unwrap()
        .contains("Endpoints.view"));
    app.finish().await;
}
