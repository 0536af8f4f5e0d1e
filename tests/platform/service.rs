use std::time::Duration;

use cairn_tests::{backend_tests, wait_until, Auth, Backend, TestApp};

const LIMIT: Duration = Duration::from_secs(30);
use serde_json::{json, Value};

/// A generator reads each schema as the service means it: no object
/// without its members (unless declared open, and the open ones may only
/// become fewer), no closed set of words given in prose only (beyond the
/// justified list in `tests/openapi-prose.txt`, which may only shrink),
/// and every moment marked `date-time`. Both documents, with every
/// connector loaded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_schemas_are_shaped_and_closed() {
    /// The objects declared open today (connector records, JSON Schemas,
    /// the PSA's passthrough, see `OPEN_OBJECTS`): lower it as shapes are
    /// given; never raise it.
    const OPEN_CEILING: usize = 84;
    let dir = cairn_tests::components::all_connectors_dir();
    let Some(app) = TestApp::start_with(Backend::Sqlite, move |s| s.connectors_dir = dir).await
    else {
        return;
    };
    let allowed: std::collections::BTreeSet<String> = include_str!("../openapi-prose.txt")
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').next().unwrap().trim().to_string())
        .collect();
    // Triage's fields required by one status are in the schema, not only
    // in its prose.
    let api = app.get("/openapi.json", &Auth::None).await.body;
    for schema in ["TriageRequest", "PartnerTriageRequest"] {
        let conditions: Vec<(String, String)> = api["components"]["schemas"][schema]["allOf"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["if"]["properties"]["status"]["const"].to_string(),
                    c["then"]["required"][0].to_string(),
                )
            })
            .collect();
        assert_eq!(
            conditions,
            [
                (
                    "\"not_affected\"".to_string(),
                    "\"justification\"".to_string()
                ),
                (
                    "\"risk_accepted\"".to_string(),
                    "\"expires_at\"".to_string()
                ),
            ],
            "{schema}"
        );
    }
    let mut found = Found::default();
    for path in ["/openapi.json", "/api/openapi.json"] {
        let doc = app.get(path, &Auth::None).await.body;
        found.walk(&doc["components"], "components".into());
        for (route, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                found.walk(operation, format!("paths.{route}.{method}"));
                for parameter in operation["parameters"].as_array().into_iter().flatten() {
                    let at = format!(
                        "{} {route} ?{}",
                        method.to_uppercase(),
                        parameter["name"].as_str().unwrap()
                    );
                    found.prose_of(&parameter["schema"], parameter["description"].as_str(), &at);
                }
            }
        }
    }
    assert!(
        found.bare.is_empty(),
        "objects without members: {:#?}",
        found.bare
    );
    assert!(
        found.timestamps.is_empty(),
        "moments without date-time: {:#?}",
        found.timestamps
    );
    assert!(
        found.open <= OPEN_CEILING,
        "{} objects declared open, more than {OPEN_CEILING}: give the new one its members",
        found.open
    );
    let new: Vec<&String> = found.prose.difference(&allowed).collect();
    assert!(
        new.is_empty(),
        "closed sets in prose only (make them enums): {new:#?}"
    );
    let stale: Vec<&String> = allowed.difference(&found.prose).collect();
    assert!(
        stale.is_empty(),
        "no longer prose: remove from tests/openapi-prose.txt: {stale:#?}"
    );
    app.finish().await;
}

/// What [`openapi_schemas_are_shaped_and_closed`] finds.
#[derive(Default)]
struct Found {
    bare: Vec<String>,
    open: usize,
    prose: std::collections::BTreeSet<String>,
    timestamps: Vec<String>,
}

impl Found {
    /// `at` names `value`: members joined by `.`, `properties` left out.
    fn walk(&mut self, value: &Value, at: String) {
        match value {
            Value::Object(map) => {
                let types: Vec<&str> = match map.get("type") {
                    Some(Value::String(t)) => vec![t.as_str()],
                    Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                let shaped = [
                    "properties",
                    "additionalProperties",
                    "allOf",
                    "oneOf",
                    "anyOf",
                    "$ref",
                ]
                .iter()
                .any(|k| map.contains_key(*k));
                if types.contains(&"object") && !shaped {
                    self.bare.push(at.clone());
                }
                if map.get("additionalProperties") == Some(&Value::Bool(true)) {
                    self.open += 1;
                }
                if types.contains(&"string") {
                    self.prose_of(value, map.get("description").and_then(Value::as_str), &at);
                    if at.ends_with("_at") && !map.contains_key("format") {
                        self.timestamps.push(at.clone());
                    }
                }
                for (key, member) in map {
                    let at = match key.as_str() {
                        "properties" => at.clone(),
                        _ => format!("{at}.{key}"),
                    };
                    self.walk(member, at);
                }
            }
            Value::Array(items) => items.iter().for_each(|item| self.walk(item, at.clone())),
            _ => {}
        }
    }

    /// A string whose description lists its words (`a`, `b` or `c`) but
    /// whose schema has no enum.
    fn prose_of(&mut self, schema: &Value, description: Option<&str>, at: &str) {
        let closed = ["enum", "const", "$ref", "oneOf"]
            .iter()
            .any(|k| schema.get(*k).is_some());
        let Some(text) = description.or(schema["description"].as_str()) else {
            return;
        };
        let words = text
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|w| {
                w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                    && w.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "_.-".contains(c))
            })
            .count();
        let listed = text.contains("`, `") || text.contains("` or `");
        if !closed && words >= 2 && listed {
            self.prose.insert(at.to_string());
        }
    }
}

backend_tests!(
    health_and_root,
    readiness_names_what_is_missing_and_recovers,
    openapi_lists_every_route,
    docs_pages_work_offline,
    unknown_routes_and_methods_get_json,
    internal_failures_are_json_500_with_path,
    metrics_by_route_and_address,
    cors_allows_only_configured_origins,
    every_route_answers_callers_as_its_document_says,
);

async fn health_and_root(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, |s| s.environment = "staging".into()).await else {
        return;
    };
    let health = app.get("/health", &Auth::None).await;
    assert_eq!(health.status, 200);
    assert_eq!(health.body["status"], "ok");
    assert_eq!(health.body["environment"], "staging");
    assert_eq!(health.body["database"], "ok");
    let expected = if backend == Backend::Sqlite {
        "sqlite"
    } else {
        "postgres"
    };
    assert_eq!(health.body["backend"], expected);
    let root = app.get("/", &Auth::None).await;
    assert_eq!(root.body["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(root.body["docs"], "/docs");
    assert!(health.headers.contains_key("x-request-id"));

    // With the database gone, health says so instead of claiming ok.
    app.db().pool.close().await;
    let down = app.get("/health", &Auth::None).await;
    assert_eq!(down.status, 503);
    assert_eq!(down.body["database"], "unreachable");
    app.finish().await;
}

/// `(name, ok)` of each readiness check, and the answer's status.
async fn readiness(app: &TestApp) -> (u16, Vec<(String, bool)>, Value) {
    let ready = app.get("/health/ready", &Auth::None).await;
    let checks = ready.body["checks"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", ready.text))
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["ok"].as_bool().unwrap(),
            )
        })
        .collect();
    (ready.status, checks, ready.body)
}

/// Liveness answers whatever the dependencies do; readiness names the
/// check that fails (a blob store that takes no file, on PostgreSQL the
/// database gone) and is ready again once it is back; a connector file
/// that would not load is named and does not fail it.
async fn readiness_names_what_is_missing_and_recovers(backend: Backend) {
    let components = std::env::temp_dir().join(format!(
        "cairn-ready-components-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&components).unwrap();
    std::fs::write(components.join("broken.wasm"), b"not a component").unwrap();
    let dir = components.clone();
    let Some(app) = TestApp::start_with(backend, move |s| s.connectors_dir = dir).await else {
        return;
    };
    let live = app.get("/health/live", &Auth::None).await;
    assert_eq!((live.status, &live.body), (200, &json!({"status": "ok"})));
    let all_ok = |names: &[&str]| -> Vec<(String, bool)> {
        names.iter().map(|n| (n.to_string(), true)).collect()
    };
    let names = [
        "database",
        "migrations",
        "connectors",
        "blob_store:portal",
        "blob_store:uploads",
        "blob_store:reports",
        "shared_files",
    ];
    let (status, checks, body) = readiness(&app).await;
    assert_eq!((status, checks), (200, all_ok(&names)), "{body}");
    assert_eq!(body["status"], "ready");
    let connectors = body["checks"][2]["detail"].as_str().unwrap();
    assert!(connectors.contains("broken.wasm"), "{connectors}");

    // Another process alive on the database while this one keeps its
    // files on a local disk: still serving (200), degraded, and why.
    let db = &app.server.state.db;
    let now = cairn_core::db::now_ms();
    cairn_platform::processes::beat(db, "another-process", true, now)
        .await
        .unwrap();
    let (status, checks, body) = readiness(&app).await;
    assert_eq!(
        (status, &body["status"]),
        (200, &json!("degraded")),
        "{body}"
    );
    assert_eq!(checks.last(), Some(&("shared_files".to_string(), false)));
    let why = body["checks"][6]["detail"].as_str().unwrap();
    assert!(
        why.starts_with("1 other process serves this database"),
        "{why}"
    );
    // Gone silent for longer than a heartbeat allows: ready again.
    sqlx::query("UPDATE processes SET heartbeat_at = $1 WHERE id = 'another-process'")
        .bind(now - 60_000)
        .execute(&db.pool)
        .await
        .unwrap();
    assert_eq!(readiness(&app).await.2["status"], "ready");

    // The uploads store takes no file: its directory is a file now.
    let root = app
        .server
        .state
        .blobs
        .uploads
        .tmp_dir()
        .parent()
        .unwrap()
        .to_path_buf();
    std::fs::create_dir_all(&root).unwrap();
    let aside = root.with_extension("aside");
    std::fs::rename(&root, &aside).unwrap();
    std::fs::write(&root, b"in the way").unwrap();
    let (status, checks, body) = readiness(&app).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "not_ready");
    let failed: Vec<&str> = checks
        .iter()
        .filter(|(_, ok)| !ok)
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(failed, ["blob_store:uploads"], "{body}");
    assert_eq!(app.get("/health/live", &Auth::None).await.status, 200);
    std::fs::remove_file(&root).unwrap();
    std::fs::rename(&aside, &root).unwrap();
    assert_eq!(readiness(&app).await.0, 200);

    // PostgreSQL gone, then back: not ready, then ready without a restart.
    if app.postgres_outage(true).await {
        let (status, checks, body) = readiness(&app).await;
        assert_eq!(status, 503, "{body}");
        assert_eq!(checks[0], ("database".to_string(), false), "{body}");
        assert_eq!(app.get("/health/live", &Auth::None).await.status, 200);
        app.postgres_outage(false).await;
        cairn_tests::wait_until("ready again", Duration::from_secs(20), async || {
            let (status, _, body) = readiness(&app).await;
            if status == 200 {
                Ok(())
            } else {
                Err(body.to_string())
            }
        })
        .await;
    }
    app.finish().await;
    let _ = std::fs::remove_dir_all(components);
}

async fn openapi_lists_every_route(backend: Backend) {
    let dir =
        cairn_tests::components::connectors_dir(&["connectors/rmm", "connectors/payments"], &[]);
    let Some(app) = TestApp::start_with(backend, move |s| s.connectors_dir = dir).await else {
        return;
    };
    let doc = app.get("/openapi.json", &Auth::None).await;
    assert_eq!(doc.status, 200);
    assert_eq!(doc.body["openapi"], "3.1.0");
    // Doc comments become descriptions: none may point a client at our
    // Rust code (`crate::x::f`, `super::y`), which it cannot read.
    for document in [
        doc.text.as_str(),
        &app.get("/api/openapi.json", &Auth::None).await.text,
    ] {
        for path in ["crate::", "super::", "self::"] {
            assert!(!document.contains(path), "a description names `{path}…`");
        }
        // Client generators refuse a document whose operation ids repeat.
        let parsed: serde_json::Value = serde_json::from_str(document).unwrap();
        let mut ids = std::collections::BTreeSet::new();
        for (path, item) in parsed["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                if let Some(id) = operation["operationId"].as_str() {
                    assert!(
                        ids.insert(id.to_string()),
                        "{method} {path}: operationId {id} repeats"
                    );
                }
            }
        }
    }
    let expected = [
        ("get", "/health"),
        ("get", "/"),
        ("get", "/metrics"),
        ("get", "/openapi.json"),
        ("get", "/docs"),
        ("get", "/redoc"),
        ("post", "/api/v1/auth/register"),
        ("post", "/api/v1/auth/login"),
        ("get", "/api/v1/auth/me"),
        ("post", "/api/v1/auth/refresh"),
        ("post", "/api/v1/auth/bridge-token"),
        ("post", "/api/v1/auth/logout"),
        ("get", "/api/v1/tenant/me"),
        ("patch", "/api/v1/tenant/me"),
        ("get", "/api/v1/tenant/members"),
        ("patch", "/api/v1/tenant/members/{member_id}"),
        ("delete", "/api/v1/tenant/members/{member_id}"),
        ("post", "/api/v1/invites"),
        ("get", "/api/v1/invites"),
        ("get", "/api/v1/invites/{invite}"),
        ("post", "/api/v1/invites/{invite}/accept"),
        ("delete", "/api/v1/invites/{invite}"),
        ("get", "/api/v1/jobs"),
        ("get", "/api/v1/jobs/{job_id}"),
        ("post", "/api/v1/jobs/{job_id}/cancel"),
        ("get", "/api/v1/integrations/"),
        // Every loaded connector's area, concretely.
        ("get", "/api/v1/rmm/config"),
        ("post", "/api/v1/rmm/config"),
        ("delete", "/api/v1/rmm/config"),
        ("post", "/api/v1/rmm/test-connection"),
        ("post", "/api/v1/rmm/sync"),
        ("get", "/api/v1/rmm/sync-status"),
        ("get", "/api/v1/rmm/stats"),
        ("get", "/api/v1/rmm/devices"),
        ("get", "/api/v1/rmm/device-by-name/{device_name}"),
        ("get", "/api/v1/rmm/clients"),
        ("get", "/api/v1/payments/config"),
        ("post", "/api/v1/payments/config"),
        ("get", "/api/v1/inventory/applications"),
        ("post", "/api/v1/inventory/applications/search"),
        ("get", "/api/v1/inventory/applications/{app_id}"),
        ("get", "/api/v1/inventory/stats"),
        ("get", "/api/v1/inventory/items"),
        ("get", "/api/v1/inventory/vendors"),
        ("get", "/api/v1/inventory/apps-list"),
        ("get", "/api/v1/devices/items"),
        ("get", "/api/v1/devices/devices"),
        ("post", "/api/v1/devices/devices/search"),
        ("get", "/api/v1/devices/device/{device_id}"),
        ("get", "/api/v1/devices/by-name/{device_name}"),
        ("get", "/api/v1/devices/stats"),
        ("get", "/api/v1/devices/by-application/{application_name}"),
        ("get", "/api/v1/csv-sources/"),
        ("get", "/api/v1/csv-sources/{key}"),
        ("post", "/api/v1/csv-sources/{key}/upload"),
        ("get", "/api/v1/csv-sources/{key}/uploads"),
        ("get", "/api/v1/csv-sources/{key}/uploads/{upload_id}"),
        ("delete", "/api/v1/csv-sources/{key}/data"),
        (
            "get",
            "/api/v1/csv-sources/{key}/device-by-name/{device_name}",
        ),
        ("get", "/api/v1/csv-sources/{key}/records"),
        ("post", "/api/v1/inventory/upload"),
        ("get", "/api/v1/inventory/uploads"),
        ("get", "/api/v1/inventory/uploads/{upload_id}"),
        ("post", "/api/v1/portal/clients"),
        ("get", "/api/v1/portal/clients"),
        ("post", "/api/v1/portal/clients/{client_id}/keys"),
        ("get", "/api/v1/portal/clients/{client_id}/keys"),
        ("delete", "/api/v1/portal/keys/{key_id}"),
        ("post", "/api/v1/portal/clients/{client_id}/invoices"),
        ("get", "/api/v1/portal/invoices"),
        ("get", "/api/v1/portal/invoices/{invoice_id}"),
        ("patch", "/api/v1/portal/invoices/{invoice_id}"),
        ("post", "/api/v1/portal/invoices/{invoice_id}/status"),
        ("post", "/api/v1/portal/webhooks/{integration}/{tenant_id}"),
        ("post", "/api/v1/integrations/credentials"),
        ("get", "/api/v1/integrations/credentials/{platform}"),
        ("delete", "/api/v1/integrations/credentials/{platform}"),
    ];
    for (method, path) in expected {
        let op = &doc.body["paths"][path][method];
        assert!(op.is_object(), "{method} {path} missing from /openapi.json");
        assert!(
            op["responses"].is_object(),
            "{method} {path} has no responses"
        );
    }
    let paths = doc.body["paths"].as_object().unwrap();
    assert!(
        !paths.keys().any(|p| p.starts_with("/api/v1/{")),
        "integration routes are concrete"
    );
    // A connector's config schema documents its POST, secrets write-only.
    let config_body = &doc.body["paths"]["/api/v1/rmm/config"]["post"]["requestBody"]["content"]
        ["application/json"]["schema"];
    assert_eq!(config_body["properties"]["password"]["writeOnly"], true);
    assert_eq!(
        config_body["properties"]["connector"]["enum"],
        json!(["connectwise-automate"])
    );
    assert!(config_body["required"]
        .as_array()
        .unwrap()
        .contains(&json!("base_url")));
    // Declared views document their records' normalized fields.
    let record = &doc.body["paths"]["/api/v1/rmm/devices"]["get"]["responses"]["200"]["content"]
        ["application/json"]["schema"]["properties"]["items"]["items"];
    // Named once per collection, referred to by every view of it.
    assert_eq!(
        record["$ref"], "#/components/schemas/RmmDevicesRecord",
        "{record}"
    );
    let device_fields = &doc.body["components"]["schemas"]["RmmDevicesRecord"]["properties"]
        ["fields"]["properties"];
    assert_eq!(device_fields["os_platform"]["type"], "string");
    // Public routes say so; the rest inherit the document's security.
    assert_eq!(
        doc.body["paths"]["/api/v1/auth/login"]["post"]["security"],
        json!([])
    );
    // What generators need: objects rather than tuples, a file part in
    // every upload, bytes for files, one discriminated query node, each
    // search's fields as an enum.
    let text = doc.text.clone();
    assert!(!text.contains("\"items\": false") && !text.contains("\"prefixItems\""));
    let upload = &doc.body["paths"]["/api/v1/inventory/upload"]["post"]["requestBody"]["content"]
        ["multipart/form-data"]["schema"];
    assert_eq!(
        upload["$ref"], "#/components/schemas/FileUpload",
        "{upload}"
    );
    assert_eq!(
        doc.body["components"]["schemas"]["FileUpload"]["properties"]["file"]["format"],
        "binary"
    );
    let download = &doc.body["paths"]["/api/v1/reports/{report_id}/download"]["get"]["responses"]
        ["200"]["content"];
    assert_eq!(download["application/pdf"]["schema"]["format"], "binary");
    let node = &doc.body["components"]["schemas"]["DeviceQueryNode"];
    assert_eq!(node["discriminator"]["propertyName"], "kind", "{node}");
    let fields =
        &doc.body["components"]["schemas"]["DeviceQueryRule"]["properties"]["field"]["enum"];
    assert!(fields
        .as_array()
        .unwrap()
        .contains(&json!("application_version")));
    assert_eq!(doc.body["info"]["license"]["identifier"], "Apache-2.0");
    // A body the route takes or leaves is not required, and is an object
    // when sent (not `null`).
    for (method, path) in [
        ("post", "/api/v1/vulnerabilities/scan"),
        ("post", "/api/v1/dashboards/{dashboard_id}/clone"),
        ("post", "/api/v1/news-feeds/classify"),
        ("put", "/api/v1/news-feeds/items/{item_id}/read"),
    ] {
        let body = &doc.body["paths"][path][method]["requestBody"];
        assert_ne!(body["required"], json!(true), "{method} {path}: {body}");
        assert!(
            body["content"]["application/json"]["schema"]["$ref"].is_string(),
            "{method} {path}: {body}"
        );
    }
    // Its interface version, which CHANGELOG.md follows.
    assert_eq!(doc.body["info"]["version"], "0.7.2");
    assert!(doc.body["components"]["securitySchemes"]["bearer"].is_object());
    assert!(doc.body["components"]["schemas"]["ErrorBody"].is_object());

    // The client portal API has its own document, interface version 0.3.0,
    // and is not mixed into the main one.
    let portal = app.get("/api/openapi.json", &Auth::None).await;
    assert_eq!(portal.status, 200);
    assert_eq!(portal.body["openapi"], "3.1.0");
    assert_eq!(portal.body["info"]["version"], "0.3.0");
    assert_eq!(portal.body["info"]["license"]["identifier"], "Apache-2.0");
    for (method, path) in [
        ("get", "/api/invoices"),
        ("get", "/api/invoices/{id}"),
        ("post", "/api/invoices/{id}/pay"),
        ("get", "/api/files"),
        ("post", "/api/files"),
        ("get", "/api/files/{id}/download"),
    ] {
        assert!(
            portal.body["paths"][path][method].is_object(),
            "{method} {path}"
        );
        assert!(
            doc.body["paths"][path].is_null(),
            "{path} in the main document"
        );
    }
    assert!(portal.body["components"]["securitySchemes"]["portal_key"].is_object());
    let docs = app.get("/docs", &Auth::None).await;
    assert!(
        docs.text.contains("/api/openapi.json"),
        "/docs links the portal API"
    );
    app.finish().await;
}

async fn docs_pages_work_offline(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    for (page, asset) in [
        ("/docs", "/docs/assets/swagger-ui-bundle.js"),
        ("/redoc", "/docs/assets/redoc.standalone.js"),
    ] {
        let html = app.get(page, &Auth::None).await;
        assert_eq!(html.status, 200);
        assert!(html.text.contains(asset), "{page} loads {asset}");
        assert!(
            !html.text.contains("https://"),
            "{page} needs nothing from the internet"
        );
        let js = app.get(asset, &Auth::None).await;
        assert_eq!(js.status, 200);
        assert!(js.text.len() > 100_000, "{asset} is the real bundle");
    }
    assert_eq!(
        app.get("/docs/assets/swagger-ui.css", &Auth::None)
            .await
            .status,
        200
    );
    app.finish().await;
}

async fn unknown_routes_and_methods_get_json(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    app.get("/api/v1/no-such-thing", &Auth::None)
        .await
        .assert_error(404);
    app.call(reqwest::Method::PUT, "/api/v1/auth/me", &Auth::None, None)
        .await
        .assert_error(405);
    app.finish().await;
}

async fn internal_failures_are_json_500_with_path(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let ada = app.register("ada@example.com").await;
    app.db().pool.close().await;
    let failed = app.get("/api/v1/tenant/members", &ada.bearer()).await;
    failed.assert_error(500);
    assert_eq!(failed.body["type"], "internal_error");
    assert_eq!(failed.body["path"], "/api/v1/tenant/members");
    assert!(
        !failed.text.to_lowercase().contains("pool"),
        "no internals: {}",
        failed.text
    );
    app.finish().await;
}

async fn metrics_by_route_and_address(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    app.get("/health", &Auth::None).await;
    app.get("/api/v1/auth/me", &Auth::None).await;
    let metrics = app.get("/metrics", &Auth::None).await;
    assert_eq!(metrics.status, 200);
    assert!(
        metrics.text.contains("http_requests_total"),
        "{}",
        metrics.text
    );
    assert!(metrics.text.contains(r#"route="/api/v1/auth/me""#));
    assert!(metrics.text.contains(r#"status="401""#));
    assert!(metrics
        .text
        .contains("http_request_duration_seconds_bucket"));
    // No CVE source has loaded here, yet each has its age (since the
    // database was set up), so "CVE data too old" can alert on a service
    // that never loaded any.
    let ages = wait_until("the CVE source ages", LIMIT, async || {
        let metrics = app.get("/metrics", &Auth::None).await;
        let ages: Vec<(String, f64)> = metrics
            .text
            .lines()
            .filter_map(|l| l.strip_prefix("cairn_cve_source_age_seconds{"))
            .filter_map(|l| l.rsplit_once(' '))
            .map(|(labels, value)| (labels.to_string(), value.parse().unwrap()))
            .collect();
        match ages.len() {
            3 => Ok(ages),
            _ => Err(metrics.text),
        }
    })
    .await;
    // Counted from the database's setup: on PostgreSQL the tests copy a
    // template migrated once per machine, maybe hours ago.
    for (source, age) in ages {
        assert!((0.0..30.0 * 86_400.0).contains(&age), "{source}: {age}");
    }
    app.finish().await;

    let Some(closed) =
        TestApp::start_with(backend, |s| s.metrics_allow = "10.0.0.0/8".into()).await
    else {
        return;
    };
    closed.get("/metrics", &Auth::None).await.assert_error(403);
    closed.finish().await;
}

async fn cors_allows_only_configured_origins(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, |s| {
        s.cors_origins = "https://app.example.com, https://admin.example.com".into()
    })
    .await
    else {
        return;
    };
    let preflight = |origin: &'static str| {
        app.http
            .request(
                reqwest::Method::OPTIONS,
                format!("{}/api/v1/auth/me", app.url),
            )
            .header("origin", origin)
            .header("access-control-request-method", "GET")
            .header("access-control-request-headers", "authorization")
            .send()
    };
    let allowed = preflight("https://app.example.com").await.unwrap();
    assert_eq!(
        allowed.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    assert_eq!(
        allowed.headers()["access-control-allow-credentials"],
        "true"
    );
    let methods = allowed.headers()["access-control-allow-methods"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        methods.contains("PATCH") && !methods.contains("TRACE"),
        "{methods}"
    );
    let refused = preflight("https://evil.example.com").await.unwrap();
    assert!(refused
        .headers()
        .get("access-control-allow-origin")
        .is_none());
    app.finish().await;
}

/// Every operation of `/openapi.json`, called as nobody and as a member of
/// a tenant, with unknown ids in its path: one the document marks public
/// (`security: []`) never answers 401, every other answers 401 to nobody;
/// a signed-in member is never refused as unauthenticated, and no call
/// ends in a server error. A route added without its extractor, or
/// documented public by mistake, fails here.
async fn every_route_answers_callers_as_its_document_says(backend: Backend) {
    let dir =
        cairn_tests::components::connectors_dir(&["connectors/rmm", "connectors/payments"], &[]);
    let Some(app) = TestApp::start_with(backend, move |s| s.connectors_dir = dir).await else {
        return;
    };
    let owner = app.register("owner@sweep.example").await;
    let member = app
        .add_member(&owner, "member@sweep.example", "member")
        .await;
    let doc = app.get("/openapi.json", &Auth::None).await.body;
    let unknown = "00000000-0000-7000-8000-000000000000";
    let mut operations = vec![];
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let public = operation["security"] == json!([]);
            let declared: Vec<String> = operation["responses"]
                .as_object()
                .map(|r| r.keys().cloned().collect())
                .unwrap_or_default();
            let concrete = path
                .split('/')
                .map(|part| if part.starts_with('{') { unknown } else { part })
                .collect::<Vec<_>>()
                .join("/");
            operations.push((method.to_uppercase(), concrete, public, declared));
        }
    }
    assert!(operations.len() > 150, "{} operations", operations.len());
    let mut wrong = vec![];
    for (method, path, public, declared) in &operations {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let body = (method != reqwest::Method::GET && method != reqwest::Method::DELETE)
            .then(|| json!({}));
        let anonymous = app
            .call(method.clone(), path, &Auth::None, body.clone())
            .await;
        if (anonymous.status == 401) == *public || anonymous.status >= 500 {
            wrong.push(format!("{method} {path} as nobody: {}", anonymous.status));
        }
        // Signing out would end the member's session for the rest.
        if path == "/api/v1/auth/logout" {
            continue;
        }
        // The bridge token is minted from a session cookie only.
        let auth = if path == "/api/v1/auth/bridge-token" {
            member.cookie()
        } else {
            member.bearer()
        };
        let signed_in = app.call(method.clone(), path, &auth, body).await;
        if signed_in.status == 401 || signed_in.status >= 500 {
            wrong.push(format!(
                "{method} {path} as a member: {} {}",
                signed_in.status, signed_in.text
            ));
        }
        // Every answer given is one the document declares.
        for status in [anonymous.status, signed_in.status] {
            if !declared.contains(&status.to_string()) {
                wrong.push(format!("{method} {path}: {status} is not declared"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // Either spelling of a documented path, with the trailing slash or
    // without, reaches its route: the same status and the same words.
    let portal = app.get("/api/openapi.json", &Auth::None).await.body;
    let mut reads: Vec<(String, Auth)> = operations
        .iter()
        .filter(|(method, path, _, _)| method == "GET" && !path.contains(unknown))
        .map(|(_, path, _, _)| (path.clone(), member.bearer()))
        .collect();
    reads.extend(
        portal["paths"]
            .as_object()
            .unwrap()
            .keys()
            .filter(|path| !path.contains('{') && path.ends_with('s'))
            .map(|path| (path.clone(), Auth::None)),
    );
    assert!(
        reads.iter().filter(|(path, _)| path.ends_with('/')).count() >= 8,
        "the collection paths the spec spells with a slash"
    );
    for (path, auth) in &reads {
        let other = match path.strip_suffix('/') {
            Some(without) => without.to_string(),
            None => format!("{path}/"),
        };
        let (canonical, respelled) = (app.get(path, auth).await, app.get(&other, auth).await);
        if (canonical.status, &canonical.body["detail"])
            != (respelled.status, &respelled.body["detail"])
        {
            wrong.push(format!(
                "GET {path}: {} but {other}: {} {}",
                canonical.status, respelled.status, respelled.text
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));

    // One paging rule (docs/src/using.md): every list taking `limit`
    // refuses one outside 1 to 500 and a negative `skip` with a 422 naming
    // the parameter, never a page silently cut; a list taking `skip`
    // answers `{items, total, skip, limit}`. Suggestion lists (at most
    // `limit` names, best first) answer an array.
    const SUGGESTIONS: &[&str] = &["/api/v1/inventory/apps-list"];
    // What lists that need more than a page ask for.
    let required = |path: &str| match path {
        "/api/v1/advisories/search/apps"
        | "/api/v1/advisories/search/cves"
        | "/api/v1/subscriptions/cpe/search" => "q=chrome&",
        "/api/v1/inventory/items" | "/api/v1/research/product" => "application=chrome&",
        "/api/v1/subscriptions/cves/search" => "keyword=chrome&",
        _ => "",
    };
    let mut lists = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let Some(list) = item.get("get") else {
            continue;
        };
        let takes = |name: &str| {
            list["parameters"]
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["name"] == name && p["in"] == "query"))
        };
        if path.contains('{') || !takes("limit") {
            continue;
        }
        lists += 1;
        let admin = owner.bearer();
        let mut refused = vec!["limit=0", "limit=501"];
        if takes("skip") {
            refused.push("skip=-1");
        }
        let asked = required(path);
        for query in refused {
            let answer = app.get(&format!("{path}?{asked}{query}"), &admin).await;
            let named = query.split('=').next().unwrap();
            if answer.status != 422 || answer.body["field"] != named {
                wrong.push(format!(
                    "GET {path}?{query}: {} {}",
                    answer.status, answer.text
                ));
            }
        }
        let answer = app.get(&format!("{path}?{asked}limit=1"), &admin).await;
        // A list read from an upstream (NVD's CVE search) has none here;
        // its refusals above came before the call.
        if answer.status == 502 {
            continue;
        }
        // A summary may hold its page under a field of its own
        // (`applications` of the version compliance).
        let page = std::iter::once(&answer.body)
            .chain(answer.body.as_object().into_iter().flat_map(|o| o.values()))
            .find(|v| v["items"].is_array())
            .unwrap_or(&answer.body);
        let paged = page["items"].is_array()
            && page["total"].is_i64()
            && page["limit"] == 1
            && page["items"].as_array().unwrap().len() <= 1;
        let suggested = answer.body.as_array().is_some_and(|a| a.len() <= 1);
        let fits = match takes("skip") && !SUGGESTIONS.contains(&path.as_str()) {
            true => paged && page["skip"] == 0,
            false => paged || suggested,
        };
        if answer.status != 200 || !fits {
            wrong.push(format!(
                "GET {path}?limit=1: {} {}",
                answer.status, answer.text
            ));
        }
    }
    assert!(lists >= 35, "{lists} lists take a limit");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    app.finish().await;
}
