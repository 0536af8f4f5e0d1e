//! The plugin sandbox, with a purpose-built misbehaving connector.

use std::time::Duration;

use cairn::plugins::{CallError, CallScope};
use cairn_tests::components::connectors_dir;
use cairn_tests::fake_inventory::{device, FakeInventory, TOKEN};
use cairn_tests::{Auth, Backend, TestApp};
use serde_json::json;

async fn fake_upstream() -> String {
    FakeInventory::start(vec![device("d1", "WS-01", &[("7-Zip", "23.01")])])
        .await
        .url
}

async fn sandbox_app(plain_http: &str) -> TestApp {
    let dir = connectors_dir(
        &["misbehave"],
        &[("corrupt.wasm", b"\0asm this is not a component")],
    );
    let plain_http = plain_http.to_string();
    TestApp::start_with(Backend::Sqlite, move |s| {
        s.connectors_dir = dir;
        s.plugin_call_timeout_secs = 2;
        s.plugin_memory_mb = 64;
        s.plugin_plain_http_hosts = plain_http;
    })
    .await
    .expect("sqlite runs")
}

fn scope() -> CallScope {
    CallScope {
        plugin: "misbehave".into(),
        tenant_id: Some("t".into()),
        job_id: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misbehaving_calls_are_contained() {
    let upstream = fake_upstream().await;
    let app = sandbox_app("127.0.0.1").await;
    let plugins = app.server.state.plugins.clone();
    let connector = plugins
        .connector("misbehave")
        .expect("misbehave loads")
        .clone();
    let config = json!({"base_url": upstream, "api_token": TOKEN});

    // A well-behaved call works, through the host's HTTP.
    let (records, next) = plugins
        .fetch(&connector, scope(), &config, "ok", None)
        .await
        .expect("ok stream");
    assert_eq!(records, vec![device("d1", "WS-01", &[("7-Zip", "23.01")])]);
    assert_eq!(next, None);

    // An endless loop is stopped at the deadline while the API keeps answering.
    let looping = {
        let plugins = plugins.clone();
        let connector = connector.clone();
        let config = config.clone();
        tokio::spawn(async move {
            plugins
                .fetch(&connector, scope(), &config, "loop", None)
                .await
        })
    };
    for _ in 0..3 {
        assert_eq!(app.get("/health", &Auth::None).await.status, 200);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let err = looping.await.unwrap().expect_err("the loop is stopped");
    assert!(matches!(err, CallError::Timeout(_)), "{err:?}");

    // A memory bomb hits the cap.
    let err = plugins
        .fetch(&connector, scope(), &config, "bomb", None)
        .await
        .expect_err("bomb stopped");
    assert!(matches!(err, CallError::MemoryExceeded(64)), "{err:?}");

    // A panic's message comes back.
    let err = plugins
        .fetch(&connector, scope(), &config, "panic", None)
        .await
        .expect_err("panic");
    assert!(err.to_string().contains("the parser fell over"), "{err}");

    // A host outside the allow-list is refused before any request is made.
    let err = plugins
        .fetch(&connector, scope(), &config, "forbidden", None)
        .await
        .expect_err("denied");
    assert!(
        matches!(&err, CallError::Config(m) if m.contains("forbidden.example.net") && m.contains("allow-list")),
        "{err:?}"
    );

    // After all that, a fresh instance serves the next call.
    assert!(plugins
        .fetch(&connector, scope(), &config, "ok", None)
        .await
        .is_ok());
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_needs_the_operators_grant() {
    let upstream = fake_upstream().await;
    let app = sandbox_app("").await;
    let plugins = app.server.state.plugins.clone();
    let connector = plugins.connector("misbehave").unwrap().clone();
    let err = plugins
        .fetch(
            &connector,
            scope(),
            &json!({"base_url": upstream, "api_token": TOKEN}),
            "ok",
            None,
        )
        .await
        .expect_err("plain http refused");
    assert!(
        matches!(&err, CallError::Config(m) if m.contains("plain http")),
        "{err:?}"
    );
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_files_are_skipped_and_listed() {
    let app = sandbox_app("").await;
    let owner = app.register("owner@example.com").await;
    let listed = app.get("/api/v1/integrations/", &owner.bearer()).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(
        listed.body["connectors"][0]["descriptor"]["id"],
        "misbehave"
    );
    assert_eq!(
        listed.body["connectors"][0]["descriptor"]["sdk_version"],
        "0.1.0"
    );
    let skipped = &listed.body["skipped"][0];
    assert!(skipped["file"].as_str().unwrap().ends_with("corrupt.wasm"));
    assert!(skipped["reason"]
        .as_str()
        .unwrap()
        .contains("not a valid component"));
    app.get("/api/v1/integrations/", &Auth::None)
        .await
        .assert_error(401);
    app.finish().await;
}
