//! IP and file-hash threat intel through the AbuseIPDB and VirusTotal
//! connectors against fake upstreams speaking their wire formats: config
//! with secrets redacted, a bad key, a 429 with `Retry-After`, an unknown
//! hash, bad input refused before any upstream call, the per-tenant cache,
//! and one tenant's providers and answers invisible to another.

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_threat_intel::{
    FakeThreatIntel, ABUSE_KEY, ABUSIVE_IP, EICAR_MD5, EICAR_SHA256, VT_KEY,
};
use cairn_tests::{backend_tests, Backend, TestApp};
use serde_json::json;

backend_tests!(ip_and_hash_lookups_go_through_the_tenants_providers);

async fn ip_and_hash_lookups_go_through_the_tenants_providers(backend: Backend) {
    let fake = FakeThreatIntel::start().await;
    let dir = connectors_dir(&["connectors/abuseipdb", "connectors/virustotal"], &[]);
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let member = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;
    let other = app.register("owner@other.example").await;
    let ip_path = format!("/api/v1/threat-intel/ip/{ABUSIVE_IP}");

    // Nothing configured yet.
    app.get(&ip_path, &owner.bearer()).await.assert_error(409);
    let config = json!({
        "ip": {"base_url": fake.base_url, "api_key": "not-the-key"},
        "hash": {"base_url": fake.base_url, "api_key": VT_KEY},
        "cache_minutes": 60
    });
    app.post(
        "/api/v1/threat-intel/config",
        &member.bearer(),
        config.clone(),
    )
    .await
    .assert_error(403);
    let saved = app
        .post("/api/v1/threat-intel/config", &owner.bearer(), config)
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["ip"]["connector"], "abuseipdb");
    assert_eq!(saved.body["ip"]["config"]["api_key"], "********");
    assert_eq!(saved.body["hash"]["config"]["api_key"], "********");
    assert!(!saved.text.contains(VT_KEY));
    let bad = app
        .post(
            "/api/v1/threat-intel/config",
            &owner.bearer(),
            json!({"cache_minutes": -1}),
        )
        .await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "cache_minutes");

    // A refused key is the upstream's 401, named.
    let refused = app.get(&ip_path, &owner.bearer()).await;
    refused.assert_error(502);
    assert_eq!(refused.body["type"], "upstream_auth_error");
    assert_eq!(refused.body["upstream_status"], 401);
    let fixed = app
        .post(
            "/api/v1/threat-intel/config",
            &owner.bearer(),
            json!({"ip": {"base_url": fake.base_url, "api_key": ABUSE_KEY}}),
        )
        .await;
    assert_eq!(fixed.status, 200, "{}", fixed.text);
    let read = app
        .get("/api/v1/threat-intel/config", &member.bearer())
        .await;
    assert_eq!(read.body["cache_minutes"], 60, "{}", read.text);
    assert!(!read.text.contains(ABUSE_KEY));

    // An abusive address; the second ask is answered from the cache.
    let first = app.get(&ip_path, &member.bearer()).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.body["cached"], false);
    assert_eq!(first.body["connector"], "abuseipdb");
    assert_eq!(first.body["result"]["abuse_confidence_score"], 100);
    assert_eq!(first.body["result"]["distinct_reporters"], 7);
    let asked = fake.requests().len();
    assert!(
        fake.requests()
            .last()
            .unwrap()
            .contains(&format!("ipAddress={ABUSIVE_IP}&maxAgeInDays=90")),
        "{:?}",
        fake.requests()
    );
    let again = app.get(&ip_path, &owner.bearer()).await;
    assert_eq!(again.body["cached"], true, "{}", again.text);
    assert_eq!(fake.requests().len(), asked);

    // Bad input never reaches the upstream.
    for path in [
        "/api/v1/threat-intel/ip/999.1.1.1",
        "/api/v1/threat-intel/ip/example.com",
        "/api/v1/threat-intel/hash/xyz",
        "/api/v1/threat-intel/hash/44d88612fea8a8f36de82e1278abb02",
    ] {
        let bad = app.get(path, &owner.bearer()).await;
        bad.assert_error(422);
        let field = if path.contains("/ip/") {
            "ip_address"
        } else {
            "file_hash"
        };
        assert_eq!(bad.body["field"], field, "{path}");
    }
    app.get(
        "/api/v1/threat-intel/ip/8.8.8.8?max_age_days=0",
        &owner.bearer(),
    )
    .await
    .assert_error(422);
    assert_eq!(fake.requests().len(), asked);

    // AbuseIPDB's 429 with Retry-After is waited out.
    fake.data.lock().unwrap().throttle_next = 1;
    let throttled = app
        .get("/api/v1/threat-intel/ip/8.8.8.8", &owner.bearer())
        .await;
    assert_eq!(throttled.status, 200, "{}", throttled.text);
    assert_eq!(throttled.body["result"]["abuse_confidence_score"], 0);
    assert_eq!(fake.requests().len(), asked + 2);

    // Hashes: any case, MD5 or SHA-256; an unknown one is a 404.
    let eicar = app
        .get(
            &format!("/api/v1/threat-intel/hash/{}", EICAR_MD5.to_uppercase()),
            &owner.bearer(),
        )
        .await;
    assert_eq!(eicar.status, 200, "{}", eicar.text);
    assert_eq!(eicar.body["query"], EICAR_MD5);
    assert_eq!(eicar.body["result"]["last_analysis_stats"]["malicious"], 63);
    assert_eq!(
        eicar.body["result"]["last_analysis_stats"]["type_unsupported"],
        9
    );
    assert_eq!(eicar.body["result"]["sha256"], EICAR_SHA256);
    app.get(
        &format!("/api/v1/threat-intel/hash/{}", "0".repeat(64)),
        &owner.bearer(),
    )
    .await
    .assert_error(404);

    // Another tenant has none of it: no providers, no answers.
    app.get(&ip_path, &other.bearer()).await.assert_error(409);
    let theirs = app
        .get("/api/v1/threat-intel/config", &other.bearer())
        .await;
    assert_eq!(
        theirs.body["ip"],
        serde_json::Value::Null,
        "{}",
        theirs.text
    );
    assert_eq!(theirs.body["available_ip"], json!(["abuseipdb"]));

    // Without a cache every ask goes upstream.
    app.post(
        "/api/v1/threat-intel/config",
        &owner.bearer(),
        json!({"cache_minutes": 0}),
    )
    .await;
    let fresh = app.get(&ip_path, &owner.bearer()).await;
    assert_eq!(fresh.body["cached"], false, "{}", fresh.text);
    app.finish().await;
}
