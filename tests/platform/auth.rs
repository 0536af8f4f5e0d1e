use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use cairn_tests::{backend_tests, Auth, Backend, TestApp, PASSWORD};
use serde_json::json;

backend_tests!(
    register_login_me_on_both_paths,
    register_refuses_bad_input,
    refresh_rotates_and_refuses_reuse,
    bridge_token_needs_a_session,
    logout_revokes_the_session,
    expired_tampered_and_unsigned_tokens_are_refused,
    sixth_register_in_a_minute_is_limited,
    default_rate_limit_applies_per_user,
    removed_member_token_stops_working,
);

async fn register_login_me_on_both_paths(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let resp = app
        .post(
            "/api/v1/auth/register",
            &Auth::None,
            json!({"email": "  Ada@Example.COM ", "password": PASSWORD, "name": "Ada"}),
        )
        .await;
    assert_eq!(resp.status, 201, "{}", resp.text);
    assert_eq!(resp.body["user"]["email"], "ada@example.com");
    assert_eq!(resp.body["user"]["role"], "owner");
    assert_eq!(resp.body["token_type"], "bearer");
    let cookie = resp.set_cookie_header().unwrap().to_string();
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    assert!(cookie.contains("SameSite=Lax"), "{cookie}");
    assert!(
        !cookie.contains("Secure"),
        "plain http must not mark the cookie Secure: {cookie}"
    );

    let ada = app.login("ada@example.com").await;
    for auth in [ada.bearer(), ada.cookie()] {
        let me = app.get("/api/v1/auth/me", &auth).await;
        assert_eq!(me.status, 200, "{}", me.text);
        assert_eq!(me.body["email"], "ada@example.com");
        assert_eq!(me.body["name"], "Ada");
        assert_eq!(me.body["tenant_id"], ada.tenant_id);
        assert_eq!(me.body["role"], "owner");
    }

    let wrong = app
        .post(
            "/api/v1/auth/login",
            &Auth::None,
            json!({"email": "ada@example.com", "password": "wrong password"}),
        )
        .await;
    wrong.assert_error(401);
    assert!(wrong.session_cookie().is_none());
    app.post(
        "/api/v1/auth/login",
        &Auth::None,
        json!({"email": "nobody@example.com", "password": PASSWORD}),
    )
    .await
    .assert_error(401);
    app.get("/api/v1/auth/me", &Auth::None)
        .await
        .assert_error(401);
    app.post(
        "/api/v1/auth/register",
        &Auth::None,
        json!({"email": "ADA@example.com", "password": PASSWORD}),
    )
    .await
    .assert_error(409);
    app.finish().await;
}

async fn register_refuses_bad_input(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let short = app
        .post(
            "/api/v1/auth/register",
            &Auth::None,
            json!({"email": "a@example.com", "password": "short"}),
        )
        .await;
    short.assert_error(422);
    assert_eq!(short.body["field"], "password");
    let bad_email = app
        .post(
            "/api/v1/auth/register",
            &Auth::None,
            json!({"email": "not-an-email", "password": PASSWORD}),
        )
        .await;
    bad_email.assert_error(422);
    assert_eq!(bad_email.body["field"], "email");
    app.post(
        "/api/v1/auth/register",
        &Auth::None,
        json!({"email": "a@example.com"}),
    )
    .await
    .assert_error(422);
    let malformed = app
        .http
        .post(format!("{}/api/v1/auth/register", app.url))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 400);
    let body: serde_json::Value = malformed.json().await.unwrap();
    assert_eq!(body["type"], "bad_request");
    app.finish().await;
}

async fn refresh_rotates_and_refuses_reuse(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let ada = app.register("ada@example.com").await;
    let first = app
        .post(
            "/api/v1/auth/refresh",
            &Auth::None,
            json!({"refresh_token": ada.refresh_token}),
        )
        .await;
    assert_eq!(first.status, 200, "{}", first.text);
    let new_access = first.body["access_token"].as_str().unwrap();
    let new_refresh = first.body["refresh_token"].as_str().unwrap();
    assert_ne!(new_refresh, ada.refresh_token);
    let me = app
        .get("/api/v1/auth/me", &Auth::Bearer(new_access.into()))
        .await;
    assert_eq!(me.status, 200);
    // The spent token cannot be used again; the new one can.
    app.post(
        "/api/v1/auth/refresh",
        &Auth::None,
        json!({"refresh_token": ada.refresh_token}),
    )
    .await
    .assert_error(401);
    let second = app
        .post(
            "/api/v1/auth/refresh",
            &Auth::None,
            json!({"refresh_token": new_refresh}),
        )
        .await;
    assert_eq!(second.status, 200);
    app.post(
        "/api/v1/auth/refresh",
        &Auth::None,
        json!({"refresh_token": "made-up"}),
    )
    .await
    .assert_error(401);
    app.finish().await;
}

async fn bridge_token_needs_a_session(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let ada = app.register("ada@example.com").await;
    let bridged = app
        .post("/api/v1/auth/bridge-token", &ada.cookie(), json!({}))
        .await;
    assert_eq!(bridged.status, 200, "{}", bridged.text);
    assert!(bridged.body["expires_in"].as_i64().unwrap() <= 300);
    let token = bridged.body["access_token"].as_str().unwrap();
    let me = app
        .get("/api/v1/auth/me", &Auth::Bearer(token.into()))
        .await;
    assert_eq!(me.status, 200);
    assert_eq!(me.body["id"], ada.user_id);
    // A bearer token alone is not a session.
    app.post("/api/v1/auth/bridge-token", &ada.bearer(), json!({}))
        .await
        .assert_error(401);
    app.post("/api/v1/auth/bridge-token", &Auth::None, json!({}))
        .await
        .assert_error(401);
    app.finish().await;
}

async fn logout_revokes_the_session(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let ada = app.register("ada@example.com").await;
    let other_session = app.login("ada@example.com").await;
    let out = app
        .post(
            "/api/v1/auth/logout",
            &ada.cookie(),
            json!({"refresh_token": ada.refresh_token}),
        )
        .await;
    assert_eq!(out.status, 204, "{}", out.text);
    let cleared = out.set_cookie_header().expect("logout clears the cookie");
    assert!(
        cleared.contains("Max-Age=0") || cleared.contains("1970"),
        "{cleared}"
    );
    app.get("/api/v1/auth/me", &ada.cookie())
        .await
        .assert_error(401);
    app.post(
        "/api/v1/auth/refresh",
        &Auth::None,
        json!({"refresh_token": ada.refresh_token}),
    )
    .await
    .assert_error(401);
    // Other sessions of the same user are untouched.
    assert_eq!(
        app.get("/api/v1/auth/me", &other_session.cookie())
            .await
            .status,
        200
    );
    // A revoked cookie does not hide a valid bearer token sent with it.
    let both = app
        .http
        .get(format!("{}/api/v1/auth/me", app.url))
        .header("cookie", format!("cairn.session_token={}", ada.session))
        .bearer_auth(&other_session.access_token)
        .send()
        .await
        .unwrap();
    assert_eq!(both.status(), 200);
    app.finish().await;
}

fn b64(value: &serde_json::Value) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(value).unwrap())
}

async fn expired_tampered_and_unsigned_tokens_are_refused(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let ada = app.register("ada@example.com").await;
    let secret = app.server.state.settings.jwt_secret.clone();
    let now = chrono::Utc::now().timestamp();
    let claims = |exp: i64| {
        json!({"sub": ada.user_id, "email": ada.email, "tid": ada.tenant_id, "role": "owner",
               "use": "access", "iat": now - 3600, "exp": exp, "jti": "x"})
    };
    let sign = |claims: &serde_json::Value| {
        jsonwebtoken::encode(
            &jsonwebtoken::Header::default(),
            claims,
            &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    };
    // A correctly signed, unexpired token works: the cases below fail for
    // the reason they name and nothing else.
    assert_eq!(
        app.get("/api/v1/auth/me", &Auth::Bearer(sign(&claims(now + 600))))
            .await
            .status,
        200
    );

    let expired = sign(&claims(now - 120));
    app.get("/api/v1/auth/me", &Auth::Bearer(expired))
        .await
        .assert_error(401);

    let mut parts: Vec<String> = ada.access_token.split('.').map(String::from).collect();
    let mut payload: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(&parts[1]).unwrap()).unwrap();
    payload["role"] = json!("admin");
    payload["tid"] = json!("another-tenant");
    parts[1] = b64(&payload);
    app.get("/api/v1/auth/me", &Auth::Bearer(parts.join(".")))
        .await
        .assert_error(401);

    let unsigned = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(&claims(now + 600))
    );
    app.get("/api/v1/auth/me", &Auth::Bearer(unsigned))
        .await
        .assert_error(401);

    let other_key = jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &claims(now + 600),
        &jsonwebtoken::EncodingKey::from_secret(b"some other key"),
    )
    .unwrap();
    app.get("/api/v1/auth/me", &Auth::Bearer(other_key))
        .await
        .assert_error(401);
    app.get("/api/v1/auth/me", &Auth::Bearer("garbage".into()))
        .await
        .assert_error(401);
    app.get("/api/v1/auth/me", &Auth::Cookie("forged".into()))
        .await
        .assert_error(401);
    app.finish().await;
}

async fn sixth_register_in_a_minute_is_limited(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    for i in 0..5 {
        app.register(&format!("user{i}@example.com")).await;
    }
    let sixth = app
        .post(
            "/api/v1/auth/register",
            &Auth::None,
            json!({"email": "user5@example.com", "password": PASSWORD}),
        )
        .await;
    sixth.assert_error(429);
    assert_eq!(sixth.body["type"], "rate_limited");
    let retry_after: u64 = sixth.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry_after), "retry-after {retry_after}");
    // Login has its own allowance and still works.
    app.login("user0@example.com").await;
    app.finish().await;
}

async fn default_rate_limit_applies_per_user(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, |s| s.rate_limit_per_minute = 5).await else {
        return;
    };
    let ada = app.register("ada@example.com").await;
    let bob = app.register("bob@example.com").await;
    for _ in 0..5 {
        assert_eq!(app.get("/api/v1/auth/me", &ada.bearer()).await.status, 200);
    }
    let limited = app.get("/api/v1/auth/me", &ada.bearer()).await;
    limited.assert_error(429);
    assert!(limited.headers.contains_key("retry-after"));
    // Another user from the same address has an allowance of their own.
    assert_eq!(app.get("/api/v1/auth/me", &bob.bearer()).await.status, 200);
    app.finish().await;
}

async fn removed_member_token_stops_working(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let member = app.add_member(&owner, "member@example.com", "member").await;
    assert_eq!(
        app.get("/api/v1/auth/me", &member.bearer()).await.status,
        200
    );
    let removed = app
        .delete(
            &format!("/api/v1/tenant/members/{}", member.user_id),
            &owner.bearer(),
        )
        .await;
    assert_eq!(removed.status, 204, "{}", removed.text);
    app.get("/api/v1/auth/me", &member.bearer())
        .await
        .assert_error(401);
    app.get("/api/v1/auth/me", &member.cookie())
        .await
        .assert_error(401);
    app.finish().await;
}
