//! No password, token or secret ever reaches a log line. Its own test binary
//! because it installs the process-wide log subscriber.

use std::io::Write;
use std::sync::{Arc, Mutex};

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_feeds::{FakeFeeds, RssItem};
use cairn_tests::fake_graph::{FakeGraph, GraphData};
use cairn_tests::fake_model::{FakeModel, MODEL_KEY};
use cairn_tests::fake_oauth::{
    FakeOauth, CLIENT_ID, CLIENT_SECRET, DIRECTORY_TENANT, PRIVATE_KEY, THUMBPRINT_SHA256,
};
use cairn_tests::fake_psa::{self, FakePsa, PsaData};
use cairn_tests::fake_qualys::{self, FakeQualys, QualysData};
use cairn_tests::fake_rmm::{
    computer, FakeRmm, RmmData, PASSWORD as RMM_PASSWORD, USERNAME as RMM_USER,
};
use cairn_tests::fake_s3::{self, FakeS3};
use cairn_tests::fake_sentinelone::{FakeSentinelOne, SentinelOneData, API_TOKEN as S1_TOKEN};
use cairn_tests::fake_tenable::{FakeTenable, TenableData, ACCESS_KEY, SECRET_KEY};
use cairn_tests::smtp::FakeSmtp;
use cairn_tests::{Auth, Backend, TestApp, PASSWORD};
use serde_json::json;

const WRONG_RMM_PASSWORD: &str = "Not-The-Rmm-Passw0rd";

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_is_ever_logged() {
    let captured = Captured::default();
    let sink = captured.clone();
    tracing_subscriber::fmt()
        // Everything but the compiler's own tracing, which is huge and holds
        // no request data.
        .with_env_filter("trace,cranelift_codegen=off,cranelift_frontend=off,regalloc2=off,wasmtime_cranelift=off,wasmtime_internal_cranelift=off,wasmtime_environ=off")
        .json()
        .with_current_span(true)
        .with_writer(move || sink.clone())
        .init();

    let smtp = FakeSmtp::start().await;
    let rmm = FakeRmm::start(RmmData {
        clients: vec![json!({"Id": 1, "Name": "Acme"})],
        computers: vec![computer(1, "WS-01", (1, "Acme"), &[])],
        ..RmmData::default()
    })
    .await;
    let s3 = FakeS3::start().await;
    let idp = FakeOauth::start().await;
    let mut graph_data = GraphData {
        devices: vec![
            json!({"id": "d-1", "deviceName": "LAPTOP-01", "operatingSystem": "Windows"}),
        ],
        device_page_size: 10,
        apps_page_size: 10,
        users: vec![json!({"id": "u-1", "userPrincipalName": "ada@contoso.example"})],
        ..GraphData::default()
    };
    graph_data.apps.insert("d-1".into(), vec![]);
    // A throttled sub-request, whose retry is logged.
    graph_data.throttle_once.insert("d-1".into());
    let graph = FakeGraph::start(&idp, graph_data).await;
    let tenable = FakeTenable::start(TenableData {
        chunks: vec![vec![]],
        ..TenableData::default()
    })
    .await;
    let qualys = FakeQualys::start(QualysData {
        hosts: fake_qualys::fixture_hosts(),
        throttle_once: true,
        ..QualysData::default()
    })
    .await;
    let psa = FakePsa::start(PsaData {
        // A failure, whose retry is logged.
        fail_once: Some("service/tickets".into()),
        ..PsaData::default()
    })
    .await;
    let s1 = FakeSentinelOne::start(SentinelOneData {
        agents: vec![json!({"id": "1001", "computerName": "WS-01", "infected": "True"})],
        throttle_once: true,
        ..SentinelOneData::default()
    })
    .await;
    let connectors = connectors_dir(
        &[
            "connectors/rmm",
            "connectors/mdm",
            "connectors/directory",
            "connectors/edr",
            "connectors/tenable",
            "connectors/qualys",
            "connectors/psa",
        ],
        &[],
    );
    let model = FakeModel::start().await;
    let feeds = FakeFeeds::start(
        vec![RssItem::new(
            "g-1",
            "Chrome CVE-2023-2033 exploited",
            "Update now.",
        )],
        vec![],
    )
    .await;
    let app = TestApp::start_with(Backend::Sqlite, |s| {
        model.configure(s);
        s3.configure(s);
        s.smtp_host = "127.0.0.1".into();
        s.smtp_port = smtp.port;
        s.smtp_security = "none".into();
        s.connectors_dir = connectors;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
    })
    .await
    .expect("sqlite always runs");
    let owner = app.register("owner@example.com").await;
    let login = app.login("owner@example.com").await;
    let (invite_token, _) = app.invite(&owner, "new@example.com", "member").await;
    app.get(&format!("/api/v1/invites/{invite_token}"), &Auth::None)
        .await;
    let accepted = app
        .post(
            &format!("/api/v1/invites/{invite_token}/accept"),
            &Auth::None,
            json!({"password": PASSWORD}),
        )
        .await;
    assert_eq!(accepted.status, 201);
    app.post(
        "/api/v1/auth/refresh",
        &Auth::None,
        json!({"refresh_token": login.refresh_token}),
    )
    .await;
    app.post(
        "/api/v1/auth/login",
        &Auth::None,
        json!({"email": "owner@example.com", "password": "WrongPassword!"}),
    )
    .await;
    app.get("/api/v1/auth/me", &login.cookie()).await;
    app.post("/api/v1/auth/bridge-token", &login.cookie(), json!({}))
        .await;
    // An integration: config, test-connection, a full sync, a failing login.
    let configured = app
        .post(
            "/api/v1/rmm/config",
            &owner.bearer(),
            json!({"base_url": rmm.base_url, "username": RMM_USER, "password": RMM_PASSWORD}),
        )
        .await;
    assert_eq!(configured.status, 200, "{}", configured.text);
    assert_eq!(
        app.post("/api/v1/rmm/test-connection", &owner.bearer(), json!({}))
            .await
            .status,
        200
    );
    let job_id = app
        .post("/api/v1/rmm/sync", &owner.bearer(), json!({}))
        .await
        .body["job_id"]
        .as_str()
        .unwrap()
        .to_string();
    let done = app.wait_for_job(&owner, &job_id).await;
    assert_eq!(done["status"], "success", "{done}");
    // Graph with a certificate (mdm) and with a client secret (directory).
    for (area, credentials) in [
        (
            "mdm",
            json!({"certificate_thumbprint": THUMBPRINT_SHA256, "private_key": PRIVATE_KEY}),
        ),
        ("directory", json!({"client_secret": CLIENT_SECRET})),
        (
            "edr",
            json!({"base_url": s1.base_url, "api_token": S1_TOKEN}),
        ),
        (
            "scanner",
            json!({"connector": "tenable-vm", "base_url": tenable.base_url,
                   "access_key": ACCESS_KEY, "secret_key": SECRET_KEY, "poll_seconds": 0.05}),
        ),
        (
            "scanner",
            json!({"connector": "qualys-vmdr", "base_url": qualys.base_url,
                   "username": fake_qualys::USERNAME, "password": fake_qualys::PASSWORD}),
        ),
        (
            "psa",
            json!({"site": psa.site, "company_id": fake_psa::COMPANY,
                   "public_key": fake_psa::PUBLIC_KEY, "private_key": fake_psa::PRIVATE_KEY,
                   "client_id": fake_psa::CLIENT_ID}),
        ),
    ] {
        let mut config = json!({"auth_url": idp.base_url, "graph_url": graph.base_url,
            "tenant_id": DIRECTORY_TENANT, "client_id": CLIENT_ID});
        config
            .as_object_mut()
            .unwrap()
            .extend(credentials.as_object().unwrap().clone());
        let saved = app
            .post(&format!("/api/v1/{area}/config"), &owner.bearer(), config)
            .await;
        assert_eq!(saved.status, 200, "{}", saved.text);
        let job_id = app
            .post(&format!("/api/v1/{area}/sync"), &owner.bearer(), json!({}))
            .await
            .body["job_id"]
            .as_str()
            .unwrap()
            .to_string();
        let done = app.wait_for_job(&owner, &job_id).await;
        assert_eq!(done["status"], "success", "{done}");
    }
    let assertions = idp.state.lock().unwrap().assertions.clone();
    assert!(!assertions.is_empty());
    let private_key_lines: Vec<String> = PRIVATE_KEY
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .map(String::from)
        .collect();
    let upstream_tokens: Vec<String> = rmm.data.lock().unwrap().tokens.keys().cloned().collect();
    assert!(!upstream_tokens.is_empty());
    // A failing login: the upstream refuses a wrong password.
    let reconfigured = app
        .post(
            "/api/v1/rmm/config",
            &owner.bearer(),
            json!({"base_url": rmm.base_url, "username": RMM_USER, "password": WRONG_RMM_PASSWORD}),
        )
        .await;
    assert_eq!(reconfigured.status, 200, "{}", reconfigured.text);
    let refused = app
        .post("/api/v1/rmm/test-connection", &owner.bearer(), json!({}))
        .await;
    assert!(refused.status >= 400, "{}", refused.text);
    // A portal key, a document kept in S3 and its presigned download URL.
    let client = app
        .post(
            "/api/v1/portal/clients",
            &owner.bearer(),
            json!({"name": "Acme"}),
        )
        .await;
    let client_id = client.body["id"].as_str().unwrap();
    let portal_key = app
        .post(
            &format!("/api/v1/portal/clients/{client_id}/keys"),
            &owner.bearer(),
            json!({}),
        )
        .await
        .body["key"]
        .as_str()
        .unwrap()
        .to_string();
    let form = reqwest::multipart::Form::new().part(
        "file",
        reqwest::multipart::Part::bytes(b"minutes".to_vec()).file_name("notes.txt"),
    );
    let uploaded = app
        .http
        .post(format!("{}/api/files", app.url))
        .bearer_auth(&portal_key)
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(uploaded.status(), 201);
    let file_id = uploaded.json::<serde_json::Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let download = app
        .get(
            &format!("/api/files/{file_id}/download"),
            &Auth::Bearer(portal_key.clone()),
        )
        .await;
    let location = download.headers["location"].to_str().unwrap().to_string();
    let presigned_signature = location
        .rsplit_once("X-Amz-Signature=")
        .expect("a presigned URL")
        .1
        .to_string();
    assert_eq!(app.http.get(&location).send().await.unwrap().status(), 200);
    // News classified by the model endpoint, with its key.
    let feed = app
        .post(
            "/api/v1/news-feeds/feeds",
            &owner.bearer(),
            json!({"url": format!("{}/rss.xml", feeds.url)}),
        )
        .await;
    assert_eq!(feed.status, 201, "{}", feed.text);
    cairn_tests::wait_for(
        "the model to be asked",
        std::time::Duration::from_secs(30),
        async || !model.requests().is_empty(),
    )
    .await;
    let jwt_secret = app.server.state.settings.jwt_secret.clone();
    let encryption_key = app.server.state.settings.encryption_key.clone();
    app.finish().await;

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("request_id"),
        "log lines carry the request id"
    );
    assert!(
        logs.contains("registered new tenant owner"),
        "the flows above were logged at all"
    );
    for secret in [
        PASSWORD,
        "WrongPassword!",
        &owner.access_token,
        &owner.refresh_token,
        &owner.session,
        &login.access_token,
        &login.refresh_token,
        &login.session,
        &invite_token,
        &jwt_secret,
        &encryption_key,
        &portal_key,
        fake_s3::SECRET_ACCESS_KEY,
        &presigned_signature,
        RMM_PASSWORD,
        WRONG_RMM_PASSWORD,
        CLIENT_SECRET,
        S1_TOKEN,
        ACCESS_KEY,
        SECRET_KEY,
        fake_qualys::PASSWORD,
        fake_psa::PRIVATE_KEY,
        MODEL_KEY,
    ]
    .into_iter()
    .map(str::to_string)
    // The Basic headers carry the passwords encoded.
    .chain({
        use base64::Engine;
        [
            format!("{}:{}", fake_qualys::USERNAME, fake_qualys::PASSWORD),
            format!(
                "{}+{}:{}",
                fake_psa::COMPANY,
                fake_psa::PUBLIC_KEY,
                fake_psa::PRIVATE_KEY
            ),
        ]
        .map(|pair| base64::engine::general_purpose::STANDARD.encode(pair))
    })
    .chain(upstream_tokens)
    .chain(idp.issued_tokens())
    .chain(assertions)
    .chain(private_key_lines)
    {
        assert!(
            !logs.contains(&secret),
            "a secret reached the logs: {secret}"
        );
    }
}
