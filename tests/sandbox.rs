//! The plugin sandbox, with a purpose-built misbehaving connector.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use cairn_plugins::{CallError, CallScope, LoadedConnector, Plugins};
use cairn_tests::components::connectors_dir;
use cairn_tests::fake_inventory::{device, FakeInventory, TOKEN};
use cairn_tests::{Auth, Backend, TestApp};
use serde_json::json;

async fn fake_upstream() -> String {
    FakeInventory::start(vec![device("d1", "WS-01", &[("7-Zip", "23.01")])])
        .await
        .url
}

/// A socket that counts the connections made to it.
struct Tripwire {
    url: String,
    hits: Arc<AtomicUsize>,
}

impl Tripwire {
    fn assert_untouched(&self) {
        assert_eq!(
            self.hits.load(Ordering::SeqCst),
            0,
            "nothing reached the trap"
        );
    }
}

async fn tripwire() -> Tripwire {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    tokio::spawn(async move {
        while let Ok((_socket, _)) = listener.accept().await {
            counter.fetch_add(1, Ordering::SeqCst);
        }
    });
    Tripwire { url, hits }
}

/// An upstream that answers every request with a redirect to `location`,
/// keeping the requests it was sent.
async fn redirector(location: String) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut head = vec![0u8; 8192];
            let n = socket.read(&mut head).await.unwrap_or(0);
            kept.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&head[..n]).to_string());
            let reply = format!(
                "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    (url, seen)
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
        // Far past the call deadline: a stalled upstream must be stopped by
        // the call's deadline, not by the request's.
        s.plugin_http_timeout_secs = 600;
    })
    .await
    .expect("sqlite runs")
}

/// A socket that accepts connections and never answers them.
async fn staller() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    url
}

/// Records and the next cursor: what a fetch answers.
type Page = (Vec<String>, Option<String>);

/// One page of `stream`, fetched on a task of its own.
fn spawn_fetch(
    plugins: &Arc<Plugins>,
    connector: &Arc<LoadedConnector>,
    config: &serde_json::Value,
    stream: &'static str,
) -> tokio::task::JoinHandle<Result<Page, CallError>> {
    let (plugins, connector, config) = (plugins.clone(), connector.clone(), config.clone());
    tokio::spawn(async move {
        plugins
            .fetch(&connector, scope(), &config, stream, None)
            .await
    })
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
    let plugins = app.server.state.plugins();
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
    let records: Vec<serde_json::Value> = records
        .iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect();
    assert_eq!(records, vec![device("d1", "WS-01", &[("7-Zip", "23.01")])]);
    assert_eq!(next, None);

    // An endless loop is stopped at the deadline while the API keeps answering.
    let looping = spawn_fetch(&plugins, &connector, &config, "loop");
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
async fn guests_parked_in_host_calls_are_stopped_at_the_deadline() {
    let stalled = staller().await;
    let app = sandbox_app("127.0.0.1").await;
    let plugins = app.server.state.plugins();
    let connector = plugins.connector("misbehave").unwrap().clone();
    let config = json!({
        "base_url": stalled,
        "api_token": TOKEN,
        "target_url": format!("{stalled}/never-answers"),
    });
    // One guest sleeps for an hour, one waits on an upstream that never
    // answers; neither computes, so only the call's deadline can stop them.
    let calls: Vec<_> = ["sleep", "target"]
        .into_iter()
        .map(|stream| spawn_fetch(&plugins, &connector, &config, stream))
        .collect();
    for _ in 0..3 {
        assert_eq!(app.get("/health", &Auth::None).await.status, 200);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for call in calls {
        // A bound on the test, not a timing assertion: left parked, the
        // calls would wait an hour and ten minutes.
        let err = tokio::time::timeout(Duration::from_secs(120), call)
            .await
            .expect("the parked call was stopped")
            .unwrap()
            .expect_err("stopped at the deadline");
        assert!(matches!(err, CallError::Timeout(_)), "{err:?}");
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_guests_do_not_pin_the_runtime_workers() {
    let dir = connectors_dir(&["misbehave"], &[]);
    let app = TestApp::start_with(Backend::Sqlite, move |s| {
        s.connectors_dir = dir;
        s.plugin_call_timeout_secs = 10;
    })
    .await
    .expect("sqlite runs");
    let plugins = app.server.state.plugins();
    let connector = plugins.connector("misbehave").unwrap().clone();
    let config = json!({"base_url": "https://upstream.example.com", "api_token": TOKEN});
    // More spinning guests than the runtime has worker threads.
    let loops: Vec<_> = (0..3)
        .map(|_| spawn_fetch(&plugins, &connector, &config, "loop"))
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.get("/health", &Auth::None).await.status, 200);
    // Answered while every guest still spins: each gives its thread back.
    assert!(loops.iter().all(|call| !call.is_finished()));
    for call in loops {
        let err = call.await.unwrap().expect_err("stopped at the deadline");
        assert!(matches!(err, CallError::Timeout(_)), "{err:?}");
    }
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_http_needs_the_operators_grant() {
    let upstream = fake_upstream().await;
    let app = sandbox_app("").await;
    let plugins = app.server.state.plugins();
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
        "0.4.1"
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_reach_only_the_granted_origin() {
    let upstream = fake_upstream().await;
    let trap = tripwire().await;
    let app = sandbox_app("127.0.0.1").await;
    let plugins = app.server.state.plugins();
    let connector = plugins.connector("misbehave").unwrap().clone();
    let port = |url: &str| url.rsplit(':').next().unwrap().to_string();
    let denied = |target: String, base: &str| {
        let plugins = plugins.clone();
        let connector = connector.clone();
        let config = json!({"base_url": base, "api_token": TOKEN, "target_url": target});
        async move {
            plugins
                .fetch(&connector, scope(), &config, "target", None)
                .await
                .expect_err("refused")
                .to_string()
        }
    };

    // Same host, another port.
    let err = denied(format!("{}/steal", trap.url), &upstream).await;
    assert!(err.contains("allow-list"), "{err}");
    // User information, naming the granted origin or another.
    let err = denied(
        format!("http://user:pw@127.0.0.1:{}/devices", port(&upstream)),
        &upstream,
    )
    .await;
    assert!(err.contains("user information"), "{err}");
    let err = denied(
        format!(
            "http://127.0.0.1:{}@127.0.0.1:{}/steal",
            port(&upstream),
            port(&trap.url)
        ),
        &upstream,
    )
    .await;
    assert!(err.contains("user information"), "{err}");
    // A granted upstream redirecting to another port.
    let (redirecting, seen) = redirector(format!("{}/steal", trap.url)).await;
    let err = denied(format!("{redirecting}/devices"), &redirecting).await;
    assert!(err.contains("redirect refused"), "{err}");
    // The credential went to the origin it was configured for, once.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(seen[0].contains(TOKEN));

    trap.assert_untouched();
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_need_the_operators_grant() {
    let trap = tripwire().await;
    let dir = connectors_dir(&["misbehave"], &[]);
    let app = TestApp::start_with(Backend::Sqlite, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1,localhost".into();
        s.outbound_private_networks = String::new();
    })
    .await
    .expect("sqlite runs");
    let owner = app.register("owner@example.com").await;
    let port = trap.url.rsplit(':').next().unwrap().to_string();

    // At config time: loopback and private addresses, literal or by name.
    for base in [
        trap.url.clone(),
        format!("http://localhost:{port}"),
        "http://169.254.169.254/latest/meta-data".to_string(),
        format!("http://[::ffff:127.0.0.1]:{port}"),
        "https://10.0.0.8/api".to_string(),
    ] {
        let resp = app
            .post(
                "/api/v1/misbehave/config",
                &owner.bearer(),
                json!({"base_url": base, "api_token": TOKEN}),
            )
            .await;
        resp.assert_error(422);
        assert_eq!(resp.body["field"], "base_url", "{base}: {}", resp.text);
    }
    let resp = app
        .post(
            "/api/v1/misbehave/config",
            &owner.bearer(),
            json!({"base_url": "http://user@example.com/", "api_token": TOKEN}),
        )
        .await;
    resp.assert_error(422);
    assert!(resp.text.contains("user information"), "{}", resp.text);

    // At connect time: a stored config whose name now resolves to loopback.
    let plugins = app.server.state.plugins();
    let connector = plugins.connector("misbehave").unwrap().clone();
    let err = plugins
        .fetch(
            &connector,
            scope(),
            &json!({"base_url": format!("http://localhost:{port}"), "api_token": TOKEN}),
            "ok",
            None,
        )
        .await
        .expect_err("refused when connecting");
    assert!(
        matches!(&err, CallError::Config(m) if m.contains("loopback") && m.contains("outbound_private_networks")),
        "{err:?}"
    );
    trap.assert_untouched();
    app.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_file_cannot_take_over_a_connector_id() {
    let misbehave = std::fs::read(cairn_tests::components::built("misbehave")).unwrap();
    let copy: &[u8] = &misbehave;
    let start = |pins: String| {
        let dir = connectors_dir(&["misbehave"], &[("zz-impostor.wasm", copy)]);
        TestApp::start_with(Backend::Sqlite, move |s| {
            s.connectors_dir = dir;
            s.connector_pins = pins;
        })
    };

    // Two files declare one id: neither serves it, each says why.
    let app = start(String::new()).await.expect("sqlite runs");
    let owner = app.register("owner@example.com").await;
    let listed = app.get("/api/v1/integrations/", &owner.bearer()).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.body["connectors"], json!([]), "{}", listed.text);
    let skipped = listed.body["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 2, "{}", listed.text);
    for entry in skipped {
        let reason = entry["reason"].as_str().unwrap();
        assert!(reason.contains("several files"), "{reason}");
        assert!(reason.contains("connector_pins"), "{reason}");
        // File names only: the server's paths are not the tenant's to see.
        assert!(!entry["file"].as_str().unwrap().contains('/'), "{entry}");
        assert!(!reason.contains('/'), "{reason}");
    }
    app.post(
        "/api/v1/misbehave/config",
        &owner.bearer(),
        json!({"base_url": "https://x.example", "api_token": TOKEN}),
    )
    .await
    .assert_error(404);

    // Core routes are never connector ids.
    let doc = app.get("/openapi.json", &Auth::None).await.body;
    for path in doc["paths"].as_object().unwrap().keys() {
        let Some(rest) = path.strip_prefix("/api/v1/") else {
            continue;
        };
        let segment = rest.split('/').next().unwrap();
        if segment != "{integration}" {
            assert!(
                cairn_plugins::loader::RESERVED_IDS.contains(&segment),
                "{segment} (of {path}) is served by the host but not reserved"
            );
        }
    }
    app.finish().await;

    // The operator pins the file by its sha256: that one serves the id.
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&misbehave));
    let app = start(format!("misbehave={sha}"))
        .await
        .expect("sqlite runs");
    let owner = app.register("owner@example.com").await;
    let listed = app.get("/api/v1/integrations/", &owner.bearer()).await;
    assert_eq!(
        listed.body["connectors"][0]["descriptor"]["id"],
        "misbehave"
    );
    assert_eq!(listed.body["skipped"].as_array().unwrap().len(), 1);
    app.finish().await;
}

/// With the operator's `plugin_perf_map`, `perf` can name a component's
/// functions: they are listed in the process's perf map.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_perf_map_names_a_components_functions() {
    let dir = connectors_dir(&["misbehave"], &[]);
    let app = TestApp::start_with(Backend::Sqlite, move |s| {
        s.connectors_dir = dir;
        s.plugin_perf_map = true;
    })
    .await
    .expect("sqlite runs");
    let path = format!("/tmp/perf-{}.map", std::process::id());
    let map = std::fs::read_to_string(&path).expect("the perf map is written");
    assert!(
        map.lines().any(|line| line.ends_with(" describe")),
        "no `describe` export in {path}"
    );
    app.finish().await;
}

/// The repository's components allocate through the SDK's size classes
/// (small blocks from free lists, large ones from talc). A page of
/// computers whose software names make each record about 9 KiB (blocks of
/// every size, and vectors that grow from small blocks into large ones)
/// maps whole: every row holds exactly what its record said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_of_large_records_maps_intact() {
    use cairn_plugins::MappedRow;
    use cairn_tests::fake_rmm::{apps, computer};

    let dir = connectors_dir(&["connectors/rmm"], &[]);
    let app = TestApp::start_with(Backend::Sqlite, move |s| s.connectors_dir = dir)
        .await
        .expect("sqlite runs");
    let plugins = app.server.state.plugins();
    let connector = plugins.area_connectors("rmm")[0].clone();
    let application = |id: i64, i: usize| format!("Application {i} of {id} {}", "x".repeat(300));
    let records: Vec<String> = (1..=1000i64)
        .map(|id| {
            let names: Vec<(String, String)> = (0..25)
                .map(|i| (application(id, i), format!("{i}.{id}")))
                .collect();
            let mut record = computer(id, &format!("WS-{id:06}"), (id % 7, "Client"), &[]);
            record["_Software"] = json!(apps(&names));
            record.to_string()
        })
        .collect();

    let mapped = plugins
        .map_records(&connector, CallScope::default(), "computers", &records)
        .await
        .expect("the page maps");
    assert_eq!(mapped.len(), records.len());
    for (id, result) in (1..).zip(mapped) {
        let rows = result.expect("every computer maps");
        assert_eq!(
            rows.len(),
            26,
            "computer {id}: a device and 25 applications"
        );
        let MappedRow::Record(device) = &rows[0] else {
            panic!("computer {id}: the device comes first")
        };
        assert_eq!(device.key, id.to_string());
        assert_eq!(
            device.client_id.as_deref(),
            Some((id % 7).to_string().as_str())
        );
        for (i, row) in rows[1..].iter().enumerate() {
            let MappedRow::Inventory(item) = row else {
                panic!("computer {id}: applications follow the device")
            };
            assert_eq!(
                item.device_name.as_deref(),
                Some(format!("WS-{id:06}").as_str())
            );
            assert_eq!(
                item.application_name.as_deref(),
                Some(application(id, i).as_str())
            );
            assert_eq!(item.version.as_deref(), Some(format!("{i}.{id}").as_str()));
        }
    }
    app.finish().await;
}
