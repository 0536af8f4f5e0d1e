//! OAuth 2.0 client credentials in the host, with a client secret and with a
//! certificate (client assertion), against a fake identity platform.

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_oauth::{
    FakeOauth, CLIENT_ID, CLIENT_SECRET, DIRECTORY_TENANT, PRIVATE_KEY, THUMBPRINT,
};
use cairn_tests::{backend_tests, Backend, TestApp};
use serde_json::{json, Value};

backend_tests!(
    client_secret_and_certificate_flows,
    refused_credentials_are_typed_auth_errors
);

const ID: &str = "oauth-probe";

async fn app(backend: Backend) -> Option<TestApp> {
    let dir = connectors_dir(&["oauth-probe"], &[]);
    TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
    })
    .await
}

fn config(idp: &FakeOauth, credentials: Value) -> Value {
    let mut config = json!({
        "auth_url": idp.base_url, "directory_tenant": DIRECTORY_TENANT,
        "client_id": CLIENT_ID, "base_url": idp.base_url,
    });
    for (k, v) in credentials.as_object().unwrap() {
        config[k] = v.clone();
    }
    config
}

async fn client_secret_and_certificate_flows(backend: Backend) {
    let idp = FakeOauth::start().await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;

    let saved = app
        .post(
            &format!("/api/v1/{ID}/config"),
            &owner.bearer(),
            config(&idp, json!({"client_secret": CLIENT_SECRET})),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["config"]["client_secret"], "********");
    let tested = app
        .post(
            &format!("/api/v1/{ID}/test-connection"),
            &owner.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    let job = app
        .post(&format!("/api/v1/{ID}/sync"), &owner.bearer(), json!({}))
        .await;
    let job_id = job.body["job_id"].as_str().unwrap().to_string();
    let done = app.wait_for_job(&owner, &job_id).await;
    assert_eq!(done["status"], "success", "{done}");
    let stats = app
        .get(&format!("/api/v1/{ID}/stats"), &owner.bearer())
        .await;
    assert_eq!(stats.body["records"]["user"], 1);
    assert_eq!(
        idp.token_requests(),
        1,
        "the token is cached and reused across calls"
    );

    // The certificate: no secret, a client assertion signed with the key.
    let other = app.register("other@example.com").await;
    let saved = app
        .post(
            &format!("/api/v1/{ID}/config"),
            &other.bearer(),
            config(
                &idp,
                json!({"thumbprint": THUMBPRINT, "private_key": PRIVATE_KEY}),
            ),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["config"]["private_key"], "********");
    let tested = app
        .post(
            &format!("/api/v1/{ID}/test-connection"),
            &other.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    assert_eq!(idp.state.lock().unwrap().assertions_verified, 1);
    app.finish().await;
}

async fn refused_credentials_are_typed_auth_errors(backend: Backend) {
    let idp = FakeOauth::start().await;
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    app.post(
        &format!("/api/v1/{ID}/config"),
        &owner.bearer(),
        config(&idp, json!({"client_secret": "wrong-secret-value"})),
    )
    .await;
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
    assert!(tested.text.contains("AADSTS7000215"));
    assert!(!tested.text.contains("wrong-secret-value"));
    assert!(tested.body["permission_hint"]
        .as_str()
        .unwrap()
        .contains("consent"));

    // A thumbprint that is neither SHA-1 nor SHA-256 is the config's fault.
    app.post(
        &format!("/api/v1/{ID}/config"),
        &owner.bearer(),
        config(
            &idp,
            json!({"thumbprint": "FFFF", "private_key": PRIVATE_KEY}),
        ),
    )
    .await;
    let tested = app
        .post(
            &format!("/api/v1/{ID}/test-connection"),
            &owner.bearer(),
            json!({}),
        )
        .await;
    tested.assert_error(422);
    assert!(tested.text.contains("SHA-256"), "{}", tested.text);

    // A certificate that is not the registered one is refused by the IdP.
    app.post(
        &format!("/api/v1/{ID}/config"),
        &owner.bearer(),
        config(
            &idp,
            json!({"thumbprint": "FF".repeat(20), "private_key": PRIVATE_KEY}),
        ),
    )
    .await;
    let tested = app
        .post(
            &format!("/api/v1/{ID}/test-connection"),
            &owner.bearer(),
            json!({}),
        )
        .await;
    tested.assert_error(502);
    assert_eq!(tested.body["type"], "upstream_auth_error");
    app.finish().await;
}
