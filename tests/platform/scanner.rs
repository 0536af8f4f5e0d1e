//! The scanner area with Tenable Vulnerability Management against a fake
//! export API: an export already running is adopted (409), chunks read as
//! they become available while it processes, a chunk failing once is read
//! again, findings per asset, assets by full or short host name, and the
//! asset view joining a host the scanner knows by FQDN to the agent the
//! EDR knows by short name.

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_nvd::{self, FakeNvd};
use cairn_tests::fake_qualys::{self, FakeQualys, QualysData};
use cairn_tests::fake_sentinelone::{FakeSentinelOne, SentinelOneData, API_TOKEN};
use cairn_tests::fake_tenable::{FakeTenable, TenableData, ACCESS_KEY, SECRET_KEY};
use cairn_tests::{backend_tests, Backend, TestApp};
use serde_json::{json, Value};

use super::mdm::{names, sync};

backend_tests!(
    tenable_export_findings_and_asset_join,
    a_sync_that_makes_no_progress_fails_as_stale,
    two_tenants_on_two_scanner_products,
    research_a_finding_from_the_store_or_nvd
);

const CHUNK: &str = include_str!("../fixtures/scanner/tenable_io_vulns_export_chunk.json");

fn finding(asset: Value, plugin_id: i64, severity: &str, port: i64) -> Value {
    let chunk: Value = serde_json::from_str(CHUNK).unwrap();
    let mut finding = chunk[0].clone();
    finding["asset"] = asset;
    finding["plugin"]["id"] = json!(plugin_id);
    finding["severity"] = json!(severity);
    finding["port"] = json!({"port": port, "protocol": "TCP", "service": "www"});
    finding
}

fn asset(uuid: &str, fqdn: Option<&str>, netbios: Option<&str>, ip: &str) -> Value {
    json!({"uuid": uuid, "fqdn": fqdn, "netbios_name": netbios, "hostname": ip, "ipv4": ip,
           "operating_system": ["Microsoft Windows Server 2022"], "tracked": true})
}

async fn tenable_export_findings_and_asset_join(backend: Backend) {
    let web = asset("a-1", Some("web01.corp.example"), None, "10.0.0.11");
    let db = asset("a-2", Some("db02.corp.example"), None, "10.0.0.12");
    let files = asset("a-3", None, Some("FILESRV"), "10.0.0.13");
    let mut web_critical = finding(web.clone(), 1001, "critical", 443);
    web_critical["plugin"]["vpr"]["score"] = json!(9.1);
    let mut web_software = finding(web.clone(), 20811, "info", 0);
    web_software["output"] = json!(
        "The following software are installed on the remote host :\n\n\
         Google Chrome  [version 119.0.6045.160]  [installed on 2026/11/02]\n\
         Notepad++ (64-bit x64)  [version 8.6]\n\n\
         The following updates are installed :\n\n  KB5032189\n"
    );
    // Exports are chunked by asset: a chunk holds all of its assets'
    // findings.
    let tenable = FakeTenable::start(TenableData {
        chunks: vec![
            vec![
                web_critical,
                finding(web.clone(), 1002, "medium", 80),
                finding(web, 1003, "high", 22),
                web_software,
            ],
            vec![finding(db, 1001, "critical", 443)],
            vec![finding(files, 1004, "low", 445)],
        ],
        // An export another client started is still running.
        active: Some(("11111111-2222-4333-8444-555555555555".into(), 0)),
        fail_chunk_once: vec![2],
        ..TenableData::default()
    })
    .await;
    let s1 = FakeSentinelOne::start(SentinelOneData {
        agents: vec![
            json!({"id": "1002", "computerName": "web01", "osType": "windows",
                            "infected": false, "activeThreats": 0}),
        ],
        ..SentinelOneData::default()
    })
    .await;
    s1.data.lock().unwrap().apps.insert(
        "1002".into(),
        vec![json!({"name": "IIS", "version": "10.0", "publisher": "Microsoft"})],
    );
    let dir = connectors_dir(&["connectors/tenable", "connectors/edr"], &[]);
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let saved = app
        .post(
            "/api/v1/scanner/config",
            &owner.bearer(),
            json!({"base_url": tenable.base_url, "access_key": ACCESS_KEY,
                   "secret_key": SECRET_KEY, "num_assets": 50, "poll_seconds": 0.05}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["config"]["access_key"], "********");
    assert_eq!(saved.body["config"]["secret_key"], "********");
    let tested = app
        .post(
            "/api/v1/scanner/test-connection",
            &owner.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);

    let job = sync(&app, &owner, "scanner").await;
    assert_eq!(job["status"], "success", "{job}");
    {
        let data = tenable.data.lock().unwrap();
        assert_eq!(data.exports_started, 0, "the running export was adopted");
        assert_eq!(data.conflicts, 1);
        assert!(data.polls >= 3, "chunks arrived over several polls");
        assert_eq!(
            data.chunk_downloads[&2], 2,
            "the failed chunk was read again"
        );
        assert_eq!(data.chunk_downloads[&1], 1);
    }
    let assets = app.get("/api/v1/scanner/assets", &owner.bearer()).await;
    assert_eq!(assets.status, 200, "{}", assets.text);
    assert_eq!(
        names(&assets.body, "device_name"),
        ["FILESRV", "db02.corp.example", "web01.corp.example"]
    );
    let findings = app
        .get("/api/v1/scanner/findings/a-1", &owner.bearer())
        .await;
    assert_eq!(findings.status, 200, "{}", findings.text);
    let mut plugins: Vec<&str> = findings.body["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fields"]["plugin_id"].as_str().unwrap())
        .collect();
    plugins.sort();
    assert_eq!(plugins, ["1001", "1002", "1003", "20811"]);
    let fields = &findings.body["fields"];
    assert_eq!(
        (
            &fields["critical_count"],
            &fields["high_count"],
            &fields["medium_count"],
            &fields["low_count"]
        ),
        (&json!(1), &json!(1), &json!(1), &json!(0)),
        "open findings by severity, info not counted: {fields}"
    );
    assert_eq!(fields["risk_score"], 9.1, "the highest VPR");
    let apps = app.get("/api/v1/scanner/apps", &owner.bearer()).await;
    assert_eq!(
        names(&apps.body, "name"),
        ["Google Chrome", "Notepad++ (64-bit x64)"],
        "the enumeration plugin's software, not its updates: {}",
        apps.text
    );
    assert_eq!(
        findings.body["findings"][0]["fields"]["cve_ids"]
            .as_array()
            .unwrap()
            .len(),
        9
    );
    for name in ["web01", "WEB01.corp.example"] {
        let found = app
            .get(
                &format!("/api/v1/scanner/device-by-name/{name}"),
                &owner.bearer(),
            )
            .await;
        assert_eq!(found.status, 200, "{name}: {}", found.text);
        assert_eq!(found.body["key"], "a-1");
    }

    // A second sync starts a new export and duplicates nothing.
    assert_eq!(sync(&app, &owner, "scanner").await["status"], "success");
    assert_eq!(tenable.data.lock().unwrap().exports_started, 1);
    let assets = app.get("/api/v1/scanner/assets", &owner.bearer()).await;
    assert_eq!(assets.body["total"], 3);
    let stats = app.get("/api/v1/scanner/stats", &owner.bearer()).await;
    assert_eq!(stats.body["records"]["findings"], 6, "{}", stats.text);

    // The EDR knows the host by its short name; the asset view joins both.
    app.post(
        "/api/v1/edr/config",
        &owner.bearer(),
        json!({"base_url": s1.base_url, "api_token": API_TOKEN}),
    )
    .await;
    assert_eq!(sync(&app, &owner, "edr").await["status"], "success");
    let rollup = app.wait_for_rollup(&owner).await;
    assert_eq!(rollup["status"], "success", "{rollup}");
    let asset = app
        .get("/api/v1/devices/by-name/web01", &owner.bearer())
        .await;
    assert_eq!(asset.status, 200, "{}", asset.text);
    assert_eq!(asset.body["edr"]["agent_id"], "1002", "{}", asset.text);
    assert_eq!(
        asset.body["scan"]["hostname"], "web01.corp.example",
        "{}",
        asset.text
    );
    assert_eq!(asset.body["scan"]["risk_score"], 9.1, "{}", asset.text);
    let sources = asset.body["sources"].as_array().unwrap();
    assert!(sources.contains(&json!("scanner")), "{}", asset.text);
    let risky = app
        .post(
            "/api/v1/devices/devices/search",
            &owner.bearer(),
            json!({"query": {"kind": "group", "combinator": "and", "rules": [
                {"kind": "rule", "field": "scan.risk_score", "operator": "gt", "value": 8}]}}),
        )
        .await;
    assert_eq!(risky.status, 200, "{}", risky.text);
    assert_eq!(
        names(&risky.body, "device_name"),
        ["web01"],
        "{}",
        risky.text
    );
    let with_chrome = app
        .post(
            "/api/v1/devices/devices/search",
            &owner.bearer(),
            json!({"query": {"kind": "group", "combinator": "and", "rules": [
                {"kind": "rule", "field": "application_name", "operator": "equals", "value": "google chrome"},
                {"kind": "rule", "field": "source", "operator": "equals", "value": "scanner"}]}}),
        )
        .await;
    assert_eq!(
        names(&with_chrome.body, "device_name"),
        ["web01"],
        "the scanner's software is inventory: {}",
        with_chrome.text
    );

    // Another tenant sees none of it; a wrong key is an auth error.
    let other = app.register("other@msp.example").await;
    let theirs = app.get("/api/v1/scanner/assets", &other.bearer()).await;
    assert_eq!(theirs.body["items"], json!([]));
    app.get("/api/v1/scanner/findings/a-1", &other.bearer())
        .await
        .assert_error(404);
    app.get("/api/v1/scanner/device-by-name/web01", &other.bearer())
        .await
        .assert_error(404);
    app.post(
        "/api/v1/scanner/config",
        &other.bearer(),
        json!({"base_url": tenable.base_url, "access_key": ACCESS_KEY, "secret_key": "wrong"}),
    )
    .await;
    let refused = app
        .post(
            "/api/v1/scanner/test-connection",
            &other.bearer(),
            json!({}),
        )
        .await;
    refused.assert_error(502);
    assert_eq!(
        refused.body["type"], "upstream_auth_error",
        "{}",
        refused.text
    );
    assert!(refused.text.contains("Invalid Credentials"));
    for secret in [ACCESS_KEY, SECRET_KEY] {
        let config = app.get("/api/v1/scanner/config", &owner.bearer()).await;
        assert!(!config.text.contains(secret));
        let jobs = app.get("/api/v1/jobs", &owner.bearer()).await;
        assert!(!jobs.text.contains(secret));
    }
    app.finish().await;
}

/// The stale-sync guard: an export that never makes a chunk available keeps
/// the sync polling without progress, and the sync fails once the guard's
/// time (shortened by its setting) has passed.
async fn a_sync_that_makes_no_progress_fails_as_stale(backend: Backend) {
    let tenable = FakeTenable::start(TenableData {
        chunks: vec![vec![]],
        stuck: true,
        ..TenableData::default()
    })
    .await;
    let dir = connectors_dir(&["connectors/tenable"], &[]);
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
        s.sync_stall_secs = 2;
        // A stalled run is retried (from its checkpoint) before it is final.
        s.job_retry_backoff_ms = 0;
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    app.post(
        "/api/v1/scanner/config",
        &owner.bearer(),
        json!({"base_url": tenable.base_url, "access_key": ACCESS_KEY,
               "secret_key": SECRET_KEY, "poll_seconds": 0.05}),
    )
    .await;
    let job = sync(&app, &owner, "scanner").await;
    assert_eq!(job["status"], "error", "{job}");
    assert!(
        job["error"]
            .as_str()
            .unwrap_or_default()
            .contains("progress"),
        "{job}"
    );
    assert!(
        tenable.data.lock().unwrap().polls > 12,
        "it kept polling first"
    );
    app.finish().await;
}

/// A Qualys host: vulnerability detections `(qid, severity, status, qds)`
/// and, when `software` lists some, the information gathered check that
/// lists installed applications.
fn qualys_host(
    id: u64,
    fqdn: &str,
    detections: &[(u32, u8, &str, u32)],
    software: &[(&str, &str)],
) -> (u64, String) {
    let mut detections: String = detections
        .iter()
        .map(|(qid, severity, status, qds)| {
            format!(
                "<DETECTION><QID>{qid}</QID><TYPE>Confirmed</TYPE><SEVERITY>{severity}</SEVERITY>\
                 <PORT>443</PORT><PROTOCOL>tcp</PROTOCOL><SSL>1</SSL><RESULTS><![CDATA[found]]></RESULTS>\
                 <STATUS>{status}</STATUS><FIRST_FOUND_DATETIME>2026-10-01T00:00:00Z</FIRST_FOUND_DATETIME>\
                 <LAST_FOUND_DATETIME>2026-11-20T00:00:00Z</LAST_FOUND_DATETIME>\
                 <QDS severity=\"HIGH\">{qds}</QDS></DETECTION>"
            )
        })
        .collect();
    if !software.is_empty() {
        let rows: String = software
            .iter()
            .map(|(name, version)| format!("{name}\t{version}\t20261101\n"))
            .collect();
        detections.push_str(&format!(
            "<DETECTION><QID>90235</QID><TYPE>Info</TYPE><SEVERITY>2</SEVERITY>\
             <RESULTS><![CDATA[Recently installed applications:\nName\tVersion\tInstall Date\n{rows}]]></RESULTS>\
             <STATUS>Active</STATUS></DETECTION>"
        ));
    }
    (
        id,
        format!(
            "<HOST><ID>{id}</ID><IP>10.1.0.{}</IP><TRACKING_METHOD>IP</TRACKING_METHOD>\
             <OS><![CDATA[Windows Server 2019]]></OS><DNS><![CDATA[{fqdn}]]></DNS>\
             <DNS_DATA><FQDN><![CDATA[{fqdn}]]></FQDN></DNS_DATA>\
             <TAGS><TAG><TAG_ID>1</TAG_ID><NAME>Servers</NAME></TAG></TAGS>\
             <DETECTION_LIST>{detections}</DETECTION_LIST></HOST>",
            id % 250
        ),
    )
}

/// One tenant scans with Tenable, another with Qualys, through the same
/// routes; each sees only its own product's data.
async fn two_tenants_on_two_scanner_products(backend: Backend) {
    let tenable = FakeTenable::start(TenableData {
        chunks: vec![vec![finding(
            asset("t-1", Some("tenable-only.corp.example"), None, "10.0.0.21"),
            2001,
            "high",
            443,
        )]],
        ..TenableData::default()
    })
    .await;
    let mut hosts = fake_qualys::fixture_hosts();
    hosts.push(qualys_host(
        200_000_001,
        "gen-1.corp.example",
        &[
            (38173, 5, "Active", 72),
            (38170, 3, "New", 40),
            (91234, 5, "Fixed", 95),
        ],
        &[("Google Chrome", "119.0.6045.160"), ("7-Zip", "23.01")],
    ));
    hosts.push(qualys_host(
        200_000_002,
        "gen-2.corp.example",
        &[(38173, 4, "Re-Opened", 61)],
        &[("Google Chrome", "118.0.5993.88")],
    ));
    hosts.push(qualys_host(200_000_003, "gen-3.corp.example", &[], &[]));
    hosts.sort();
    let second_page = hosts[2].0;
    let qualys = FakeQualys::start(QualysData {
        hosts,
        throttle_once: true,
        truncate_once_at: Some(second_page),
        ..QualysData::default()
    })
    .await;
    let dir = connectors_dir(&["connectors/tenable", "connectors/qualys"], &[]);
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
    })
    .await
    else {
        return;
    };
    let on_tenable = app.register("tenable@msp.example").await;
    let on_qualys = app.register("qualys@msp.example").await;
    let saved = app
        .post(
            "/api/v1/scanner/config",
            &on_tenable.bearer(),
            json!({"connector": "tenable-vm", "base_url": tenable.base_url,
                   "access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "poll_seconds": 0.05}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let saved = app
        .post(
            "/api/v1/scanner/config",
            &on_qualys.bearer(),
            json!({"connector": "qualys-vmdr", "base_url": qualys.base_url,
                   "username": fake_qualys::USERNAME, "password": fake_qualys::PASSWORD,
                   "truncation_limit": 2}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["config"]["password"], "********");
    let tested = app
        .post(
            "/api/v1/scanner/test-connection",
            &on_qualys.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    assert_eq!(
        sync(&app, &on_tenable, "scanner").await["status"],
        "success"
    );
    let job = sync(&app, &on_qualys, "scanner").await;
    assert_eq!(job["status"], "success", "{job}");
    {
        let data = qualys.data.lock().unwrap();
        assert_eq!(data.throttled, 1, "the 409 was waited out");
        assert_eq!(data.truncated, 1, "the cut page was asked for again");
    }

    let theirs = app
        .get("/api/v1/scanner/assets", &on_tenable.bearer())
        .await;
    assert_eq!(
        names(&theirs.body, "device_name"),
        ["tenable-only.corp.example"]
    );
    let ours = app.get("/api/v1/scanner/assets", &on_qualys.bearer()).await;
    assert_eq!(ours.body["total"], 5, "three pages of hosts: {}", ours.text);
    let gen1 = app
        .get("/api/v1/scanner/findings/200000001", &on_qualys.bearer())
        .await;
    assert_eq!(gen1.status, 200, "{}", gen1.text);
    assert_eq!(
        gen1.body["fields"]["critical_count"], 1,
        "a fixed one is not open"
    );
    assert_eq!(gen1.body["fields"]["medium_count"], 1);
    assert_eq!(gen1.body["fields"]["tags"], json!(["Servers"]));
    assert_eq!(
        gen1.body["fields"]["risk_score"], 7.2,
        "the highest open detection score, on a 0-10 scale"
    );
    assert_eq!(
        gen1.body["findings"].as_array().unwrap().len(),
        3,
        "information gathered is not a finding"
    );
    let mut states: Vec<&str> = gen1.body["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["fields"]["state"].as_str().unwrap())
        .collect();
    states.sort();
    assert_eq!(states, ["fixed", "open", "open"]);
    // The fixture's host by the short name of its FQDN.
    let one = app
        .get("/api/v1/scanner/device-by-name/one", &on_qualys.bearer())
        .await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.body["key"], "143111841");

    // The software the information gathered check lists, by name.
    let apps = app.get("/api/v1/scanner/apps", &on_qualys.bearer()).await;
    assert_eq!(apps.status, 200, "{}", apps.text);
    assert_eq!(
        apps.body["items"],
        json!([{"name": "Google Chrome", "records": 2, "devices": 2},
               {"name": "7-Zip", "records": 1, "devices": 1}]),
        "{}",
        apps.text
    );
    let theirs = app.get("/api/v1/scanner/apps", &on_tenable.bearer()).await;
    assert_eq!(theirs.body["items"], json!([]));

    // Neither tenant reaches the other's product or data.
    app.get("/api/v1/scanner/findings/t-1", &on_qualys.bearer())
        .await
        .assert_error(404);
    app.get("/api/v1/scanner/findings/200000001", &on_tenable.bearer())
        .await
        .assert_error(404);
    let config = app.get("/api/v1/scanner/config", &on_qualys.bearer()).await;
    assert!(!config.text.contains(fake_qualys::PASSWORD));
    app.finish().await;
}

/// A scanner finding's CVEs resolved through the CVE store: one NVD has is
/// fetched once and stored, one nobody knows is reported unresolved; the
/// finding then shows in the vulnerabilities views, marked as the
/// scanner's; a CVE id alone works too; bad requests are 422, NVD failing
/// is 502, and another tenant can neither research nor see the finding.
async fn research_a_finding_from_the_store_or_nvd(backend: Backend) {
    let nvd = FakeNvd::start(fake_nvd::fixture_records()).await;
    let mut log4shell = finding(
        asset("a-1", Some("web01.corp.example"), None, "10.0.0.11"),
        1001,
        "critical",
        443,
    );
    log4shell["plugin"]["cve"] = json!(["CVE-2021-44228", "CVE-2099-0001"]);
    let tenable = FakeTenable::start(TenableData {
        chunks: vec![vec![log4shell]],
        ..TenableData::default()
    })
    .await;
    let dir = connectors_dir(&["connectors/tenable"], &[]);
    let api_url = nvd.api_url();
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
        s.nvd_api_url = api_url;
        s.nvd_request_delay_ms = 10;
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    app.post(
        "/api/v1/scanner/config",
        &owner.bearer(),
        json!({"base_url": tenable.base_url, "access_key": ACCESS_KEY,
               "secret_key": SECRET_KEY, "poll_seconds": 0.05}),
    )
    .await;
    assert_eq!(sync(&app, &owner, "scanner").await["status"], "success");
    let key = "a-1|1001|443|tcp";
    let researched = app
        .post(
            "/api/v1/scanner/research-finding",
            &owner.bearer(),
            json!({"finding_key": key}),
        )
        .await;
    assert_eq!(researched.status, 200, "{}", researched.text);
    assert_eq!(researched.body["finding"]["key"], key);
    let cve = &researched.body["cves"][0];
    assert_eq!(cve["cve_id"], "CVE-2021-44228", "{}", researched.text);
    assert_eq!(cve["fetched_from_nvd"], true);
    assert_eq!(cve["severity"], "critical");
    assert!(cve["description"].as_str().unwrap().contains("JNDI"));
    assert!(cve["weaknesses"]
        .as_array()
        .unwrap()
        .iter()
        .any(|w| w["cwe_id"] == "CWE-502"));
    assert_eq!(
        researched.body["unresolved"][0]["cve_id"], "CVE-2099-0001",
        "{}",
        researched.text
    );
    let asked = |nvd: &FakeNvd, id: &str| {
        nvd.data
            .lock()
            .unwrap()
            .requests
            .iter()
            .filter(|(q, _)| q.contains(&format!("cveId={id}")))
            .count()
    };
    assert_eq!(asked(&nvd, "CVE-2021-44228"), 1);

    // Stored now: the second answer comes from the store.
    let again = app
        .post(
            "/api/v1/scanner/research-finding",
            &owner.bearer(),
            json!({"finding_key": key}),
        )
        .await;
    assert_eq!(again.body["cves"][0]["fetched_from_nvd"], false);
    assert_eq!(asked(&nvd, "CVE-2021-44228"), 1, "not asked again");

    // With the CVE in the store, the scanner's finding is listed beside
    // Cairn's own matches, marked as the scanner's.
    super::vulnerabilities::scan(&app, &owner, json!({})).await;
    let listed = app.get("/api/v1/vulnerabilities/", &owner.bearer()).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(
        listed.body["total"], 1,
        "the unknown CVE is not listed: {}",
        listed.text
    );
    let item = &listed.body["items"][0];
    assert_eq!(item["cve_id"], "CVE-2021-44228");
    assert_eq!(item["sources"], json!(["scanner"]));
    assert_eq!(item["device_count"], 1);
    let stats = app
        .get("/api/v1/vulnerabilities/stats", &owner.bearer())
        .await;
    assert_eq!(stats.body["open_cves"], 1, "{}", stats.text);
    assert_eq!(stats.body["by_severity"]["critical"], 1, "{}", stats.text);
    assert_eq!(stats.body["top_cves"][0]["name"], "CVE-2021-44228");
    let devices = app
        .get(
            "/api/v1/vulnerabilities/cve/CVE-2021-44228/devices",
            &owner.bearer(),
        )
        .await;
    assert_eq!(devices.status, 200, "{}", devices.text);
    let row = &devices.body["items"][0];
    assert_eq!(row["device_name"], "web01", "{}", devices.text);
    assert_eq!(row["source"], "scanner");
    assert_eq!(row["criteria"], "scanner check 1001");
    assert_eq!(row["cpe"], Value::Null);
    assert_eq!(row["status"], "open");
    assert!(row["application_name"]
        .as_str()
        .unwrap()
        .starts_with("Google Chrome"));

    // A CVE id alone, in any case.
    let one = app
        .post(
            "/api/v1/scanner/research-finding",
            &owner.bearer(),
            json!({"cve_id": "cve-2022-22784"}),
        )
        .await;
    assert_eq!(one.status, 200, "{}", one.text);
    assert_eq!(one.body["cves"][0]["cve_id"], "CVE-2022-22784");
    assert_eq!(one.body["finding"], Value::Null);
    app.post(
        "/api/v1/scanner/research-finding",
        &owner.bearer(),
        json!({"cve_id": "CVE-2099-0001"}),
    )
    .await
    .assert_error(404);
    for bad in [
        json!({}),
        json!({"cve_id": "not-a-cve"}),
        json!({"cve_id": "CVE-2021-44228", "finding_key": key}),
    ] {
        app.post("/api/v1/scanner/research-finding", &owner.bearer(), bad)
            .await
            .assert_error(422);
    }
    // NVD refusing (403 is how it rate-limits) past the retries is the
    // upstream's fault, not the caller's.
    {
        let mut data = nvd.data.lock().unwrap();
        let next = data.requests.len();
        data.refusals = (1..=3).map(|n| (next + n, 403)).collect();
    }
    app.post(
        "/api/v1/scanner/research-finding",
        &owner.bearer(),
        json!({"cve_id": "CVE-2023-2033"}),
    )
    .await
    .assert_error(502);

    // Another tenant cannot reach the finding, nor see it listed.
    let other = app.register("other@msp.example").await;
    let theirs = app.get("/api/v1/vulnerabilities/", &other.bearer()).await;
    assert_eq!(theirs.body["total"], 0, "{}", theirs.text);
    let theirs = app
        .get(
            "/api/v1/vulnerabilities/cve/CVE-2021-44228/devices",
            &other.bearer(),
        )
        .await;
    assert_eq!(theirs.body["total"], 0, "{}", theirs.text);
    app.post(
        "/api/v1/scanner/research-finding",
        &other.bearer(),
        json!({"finding_key": key}),
    )
    .await
    .assert_error(404);
    app.finish().await;
}
