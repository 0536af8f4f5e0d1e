use cairn_tests::smtp::FakeSmtp;
use cairn_tests::{backend_tests, Account, Auth, Backend, TestApp, PASSWORD};
use serde_json::json;

backend_tests!(
    invite_lifecycle_with_mail,
    issuers_see_their_invites_and_admins_see_all,
    expired_revoked_and_reused_invites_are_refused,
    register_with_invite_joins_the_tenant,
    solo_account_moves_on_accept,
    invite_creation_is_limited_per_hour,
);

async fn invite_lifecycle_with_mail(backend: Backend) {
    let smtp = FakeSmtp::start().await;
    let Some(app) = TestApp::start_with(backend, |s| {
        s.smtp_host = "127.0.0.1".into();
        s.smtp_port = smtp.port;
        s.smtp_security = "none".into();
        s.smtp_from = "Cairn <cairn@example.com>".into();
        s.public_url = "https://cairn.example.com".into();
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let created = app
        .post(
            "/api/v1/invites",
            &owner.bearer(),
            json!({"email": "New.Person@Example.com", "role": "admin"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["email_sent"], true);
    assert_eq!(created.body["invite"]["email"], "new.person@example.com");
    assert_eq!(created.body["invite"]["status"], "pending");
    let token = created.body["token"].as_str().unwrap().to_string();
    let accept_url = created.body["accept_url"].as_str().unwrap();
    assert_eq!(
        accept_url,
        format!("https://cairn.example.com/console/invites/{token}")
    );

    let mails = smtp.mails();
    assert_eq!(mails.len(), 1);
    assert!(mails[0].to[0].contains("new.person@example.com"));
    assert!(
        mails[0].data.contains(&token),
        "mail carries the accept link"
    );

    let lookup = app
        .get(&format!("/api/v1/invites/{token}"), &Auth::None)
        .await;
    assert_eq!(lookup.status, 200, "{}", lookup.text);
    assert_eq!(lookup.body["email"], "new.person@example.com");
    assert_eq!(lookup.body["role"], "admin");
    assert_eq!(lookup.body["organization"], "org of owner@example.com");

    let accepted = app
        .post(
            &format!("/api/v1/invites/{token}/accept"),
            &Auth::None,
            json!({"password": PASSWORD, "name": "New"}),
        )
        .await;
    assert_eq!(accepted.status, 201, "{}", accepted.text);
    let newcomer = Account::from_sign_in(&accepted);
    assert_eq!(newcomer.tenant_id, owner.tenant_id);
    let me = app.get("/api/v1/auth/me", &newcomer.cookie()).await;
    assert_eq!(me.body["role"], "admin");
    assert_eq!(me.body["name"], "New");

    let listed = app.get("/api/v1/invites", &owner.bearer()).await;
    assert_eq!(listed.body[0]["status"], "accepted");
    assert!(
        listed.body[0].get("token").is_none(),
        "tokens are never listed"
    );
    app.finish().await;
}

async fn issuers_see_their_invites_and_admins_see_all(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let helper = app.add_member(&owner, "helper@example.com", "admin").await;
    app.invite(&owner, "one@example.com", "member").await;
    app.invite(&helper, "two@example.com", "member").await;

    let by_admin = app.get("/api/v1/invites", &helper.bearer()).await;
    let emails: Vec<&str> = by_admin
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["email"].as_str().unwrap())
        .collect();
    assert_eq!(
        emails,
        ["two@example.com", "one@example.com", "helper@example.com"]
    );

    // Demoted to member, the helper sees only what they issued.
    app.patch(
        &format!("/api/v1/tenant/members/{}", helper.user_id),
        &owner.bearer(),
        json!({"role": "member"}),
    )
    .await;
    let by_issuer = app.get("/api/v1/invites", &helper.cookie()).await;
    let emails: Vec<&str> = by_issuer
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["email"].as_str().unwrap())
        .collect();
    assert_eq!(emails, ["two@example.com"]);
    assert_eq!(by_issuer.body[0]["invited_by"], helper.user_id);
    app.finish().await;
}

async fn expired_revoked_and_reused_invites_are_refused(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;

    // Reused.
    let (token, invite_id) = app.invite(&owner, "reuse@example.com", "member").await;
    let first = app
        .post(
            &format!("/api/v1/invites/{token}/accept"),
            &Auth::None,
            json!({"password": PASSWORD}),
        )
        .await;
    assert_eq!(first.status, 201);
    let again = app
        .post(
            &format!("/api/v1/invites/{token}/accept"),
            &Auth::None,
            json!({"password": PASSWORD}),
        )
        .await;
    again.assert_error(410);
    app.get(&format!("/api/v1/invites/{token}"), &Auth::None)
        .await
        .assert_error(410);
    app.delete(&format!("/api/v1/invites/{invite_id}"), &owner.bearer())
        .await
        .assert_error(409);

    // Revoked.
    let (token, invite_id) = app.invite(&owner, "revoke@example.com", "member").await;
    let revoked = app
        .delete(&format!("/api/v1/invites/{invite_id}"), &owner.bearer())
        .await;
    assert_eq!(revoked.status, 204, "{}", revoked.text);
    app.get(&format!("/api/v1/invites/{token}"), &Auth::None)
        .await
        .assert_error(410);
    app.post(
        &format!("/api/v1/invites/{token}/accept"),
        &Auth::None,
        json!({"password": PASSWORD}),
    )
    .await
    .assert_error(410);
    app.delete(&format!("/api/v1/invites/{invite_id}"), &owner.bearer())
        .await
        .assert_error(409);

    // Expired: move its expiry into the past.
    let (token, invite_id) = app.invite(&owner, "late@example.com", "member").await;
    sqlx::query("UPDATE invites SET expires_at = $1 WHERE id = $2")
        .bind(chrono::Utc::now().timestamp_millis() - 1000)
        .bind(&invite_id)
        .execute(&app.db().pool)
        .await
        .unwrap();
    app.get(&format!("/api/v1/invites/{token}"), &Auth::None)
        .await
        .assert_error(410);
    app.post(
        &format!("/api/v1/invites/{token}/accept"),
        &Auth::None,
        json!({"password": PASSWORD}),
    )
    .await
    .assert_error(410);
    let listed = app.get("/api/v1/invites", &owner.bearer()).await;
    assert_eq!(listed.body[0]["status"], "expired");

    // Unknown.
    app.get("/api/v1/invites/not-a-token", &Auth::None)
        .await
        .assert_error(404);
    // Nobody was created by the refused accepts.
    let members = app.get("/api/v1/tenant/members", &owner.bearer()).await;
    assert_eq!(members.body.as_array().unwrap().len(), 2);
    app.post(
        "/api/v1/auth/login",
        &Auth::None,
        json!({"email": "late@example.com", "password": PASSWORD}),
    )
    .await
    .assert_error(401);
    app.finish().await;
}

async fn register_with_invite_joins_the_tenant(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let (token, _) = app.invite(&owner, "joiner@example.com", "member").await;
    let wrong_email = app
        .post(
            "/api/v1/auth/register",
            &Auth::None,
            json!({"email": "someone.else@example.com", "password": PASSWORD, "invite_token": token}),
        )
        .await;
    wrong_email.assert_error(422);
    let joined = app
        .post(
            "/api/v1/auth/register",
            &Auth::None,
            json!({"email": "joiner@example.com", "password": PASSWORD, "invite_token": token}),
        )
        .await;
    assert_eq!(joined.status, 201, "{}", joined.text);
    assert_eq!(joined.body["user"]["tenant_id"], owner.tenant_id);
    assert_eq!(joined.body["user"]["role"], "member");
    app.finish().await;
}

async fn solo_account_moves_on_accept(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let early = app.register("early@example.com").await;
    assert_ne!(early.tenant_id, owner.tenant_id);
    let (token, _) = app.invite(&owner, "early@example.com", "admin").await;
    app.post(
        &format!("/api/v1/invites/{token}/accept"),
        &Auth::None,
        json!({"password": "not the password"}),
    )
    .await
    .assert_error(401);
    let moved = app
        .post(
            &format!("/api/v1/invites/{token}/accept"),
            &Auth::None,
            json!({"password": PASSWORD}),
        )
        .await;
    assert_eq!(moved.status, 201, "{}", moved.text);
    assert_eq!(moved.body["user"]["id"], early.user_id);
    assert_eq!(moved.body["user"]["tenant_id"], owner.tenant_id);
    // The old token named the old tenant and no longer works.
    app.get("/api/v1/auth/me", &early.bearer())
        .await
        .assert_error(401);

    // An account that already shares its tenant is not moved.
    let (token, _) = app
        .invite(
            &app.register("third@example.com").await,
            "owner@example.com",
            "member",
        )
        .await;
    app.post(
        &format!("/api/v1/invites/{token}/accept"),
        &Auth::None,
        json!({"password": PASSWORD}),
    )
    .await
    .assert_error(409);
    app.finish().await;
}

async fn invite_creation_is_limited_per_hour(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    for i in 0..20 {
        app.invite(&owner, &format!("person{i}@example.com"), "member")
            .await;
    }
    let limited = app
        .post(
            "/api/v1/invites",
            &owner.bearer(),
            json!({"email": "person20@example.com"}),
        )
        .await;
    limited.assert_error(429);
    let retry_after: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        retry_after > 60,
        "an hourly limit waits minutes, got {retry_after}"
    );
    app.finish().await;
}
