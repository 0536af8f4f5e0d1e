use cairn_tests::{backend_tests, Backend, TestApp};
use serde_json::json;

backend_tests!(
    tenant_summary_and_settings,
    only_admins_change_settings_roles_and_members,
    owner_rules_protect_the_last_owner,
    tenants_cannot_see_or_touch_each_other,
);

async fn tenant_summary_and_settings(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let me = app.get("/api/v1/tenant/me", &owner.cookie()).await;
    assert_eq!(me.status, 200, "{}", me.text);
    assert_eq!(me.body["id"], owner.tenant_id);
    assert_eq!(me.body["name"], "org of owner@example.com");
    assert_eq!(me.body["timezone"], "UTC");
    assert_eq!(me.body["member_count"], 1);
    assert_eq!(me.body["your_role"], "owner");

    let updated = app
        .patch(
            "/api/v1/tenant/me",
            &owner.bearer(),
            json!({"name": "Acme MSP", "notification_email": "SOC@Acme.example", "timezone": "Europe/Berlin"}),
        )
        .await;
    assert_eq!(updated.status, 200, "{}", updated.text);
    assert_eq!(updated.body["name"], "Acme MSP");
    assert_eq!(updated.body["notification_email"], "soc@acme.example");
    assert_eq!(updated.body["timezone"], "Europe/Berlin");

    // Fields not sent are kept; an explicit null clears the email.
    let cleared = app
        .patch(
            "/api/v1/tenant/me",
            &owner.bearer(),
            json!({"notification_email": null}),
        )
        .await;
    assert_eq!(cleared.body["name"], "Acme MSP");
    assert!(cleared.body["notification_email"].is_null());

    for (body, field) in [
        (json!({"name": "  "}), "name"),
        (json!({"notification_email": "nope"}), "notification_email"),
        (json!({"timezone": "Mars/Olympus Mons"}), "timezone"),
    ] {
        let resp = app.patch("/api/v1/tenant/me", &owner.bearer(), body).await;
        resp.assert_error(422);
        assert_eq!(resp.body["field"], field);
    }
    app.patch(
        "/api/v1/tenant/me",
        &owner.bearer(),
        json!({"plan": "free"}),
    )
    .await
    .assert_error(422);
    assert_eq!(
        app.get("/api/v1/tenant/me", &owner.bearer()).await.body["name"],
        "Acme MSP"
    );
    app.finish().await;
}

async fn only_admins_change_settings_roles_and_members(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let member = app.add_member(&owner, "member@example.com", "member").await;
    let other = app.add_member(&owner, "other@example.com", "member").await;

    let members = app.get("/api/v1/tenant/members", &member.bearer()).await;
    assert_eq!(members.status, 200);
    let emails: Vec<&str> = members
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["email"].as_str().unwrap())
        .collect();
    assert_eq!(
        emails,
        [
            "owner@example.com",
            "member@example.com",
            "other@example.com"
        ]
    );

    app.patch(
        "/api/v1/tenant/me",
        &member.bearer(),
        json!({"name": "Mine now"}),
    )
    .await
    .assert_error(403);
    app.patch(
        &format!("/api/v1/tenant/members/{}", other.user_id),
        &member.bearer(),
        json!({"role": "admin"}),
    )
    .await
    .assert_error(403);
    app.patch(
        &format!("/api/v1/tenant/members/{}", member.user_id),
        &member.cookie(),
        json!({"role": "admin"}),
    )
    .await
    .assert_error(403);
    app.delete(
        &format!("/api/v1/tenant/members/{}", other.user_id),
        &member.bearer(),
    )
    .await
    .assert_error(403);
    app.post(
        "/api/v1/invites",
        &member.bearer(),
        json!({"email": "x@example.com"}),
    )
    .await
    .assert_error(403);
    // Nothing changed.
    assert_eq!(
        app.get("/api/v1/tenant/me", &owner.bearer()).await.body["name"],
        "org of owner@example.com"
    );
    assert_eq!(
        app.get("/api/v1/tenant/members", &owner.bearer())
            .await
            .body
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // An owner promotes the member to admin, who may then manage others.
    let promoted = app
        .patch(
            &format!("/api/v1/tenant/members/{}", member.user_id),
            &owner.bearer(),
            json!({"role": "admin"}),
        )
        .await;
    assert_eq!(promoted.status, 200, "{}", promoted.text);
    assert_eq!(promoted.body["role"], "admin");
    assert_eq!(
        app.get("/api/v1/auth/me", &member.bearer()).await.body["role"],
        "admin"
    );
    let removed = app
        .delete(
            &format!("/api/v1/tenant/members/{}", other.user_id),
            &member.bearer(),
        )
        .await;
    assert_eq!(removed.status, 204);
    app.patch(
        &format!("/api/v1/tenant/members/{}", member.user_id),
        &owner.bearer(),
        json!({"role": "viewer"}),
    )
    .await
    .assert_error(422);
    app.finish().await;
}

async fn owner_rules_protect_the_last_owner(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    let admin = app.add_member(&owner, "admin@example.com", "admin").await;
    // An admin cannot touch an owner or make one.
    app.patch(
        &format!("/api/v1/tenant/members/{}", owner.user_id),
        &admin.bearer(),
        json!({"role": "member"}),
    )
    .await
    .assert_error(403);
    app.patch(
        &format!("/api/v1/tenant/members/{}", admin.user_id),
        &admin.bearer(),
        json!({"role": "owner"}),
    )
    .await
    .assert_error(403);
    app.delete(
        &format!("/api/v1/tenant/members/{}", owner.user_id),
        &admin.bearer(),
    )
    .await
    .assert_error(403);
    // The only owner cannot demote themselves, nor remove themselves.
    app.patch(
        &format!("/api/v1/tenant/members/{}", owner.user_id),
        &owner.bearer(),
        json!({"role": "admin"}),
    )
    .await
    .assert_error(409);
    app.delete(
        &format!("/api/v1/tenant/members/{}", owner.user_id),
        &owner.bearer(),
    )
    .await
    .assert_error(409);
    // With a second owner, the first may step down.
    let second = app
        .patch(
            &format!("/api/v1/tenant/members/{}", admin.user_id),
            &owner.bearer(),
            json!({"role": "owner"}),
        )
        .await;
    assert_eq!(second.body["role"], "owner");
    let stepped = app
        .patch(
            &format!("/api/v1/tenant/members/{}", owner.user_id),
            &owner.bearer(),
            json!({"role": "admin"}),
        )
        .await;
    assert_eq!(stepped.status, 200, "{}", stepped.text);
    app.finish().await;
}

async fn tenants_cannot_see_or_touch_each_other(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let alpha = app.register("owner@alpha.example").await;
    let alpha_member = app
        .add_member(&alpha, "member@alpha.example", "member")
        .await;
    let (_, alpha_invite) = app.invite(&alpha, "pending@alpha.example", "member").await;
    let beta = app.register("owner@beta.example").await;

    for auth in [beta.bearer(), beta.cookie()] {
        let tenant = app.get("/api/v1/tenant/me", &auth).await;
        assert_eq!(tenant.body["id"], beta.tenant_id);
        let members = app.get("/api/v1/tenant/members", &auth).await;
        let emails: Vec<&str> = members
            .body
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["email"].as_str().unwrap())
            .collect();
        assert_eq!(emails, ["owner@beta.example"]);
        let invites = app.get("/api/v1/invites", &auth).await;
        assert_eq!(invites.body, json!([]));

        app.patch(
            &format!("/api/v1/tenant/members/{}", alpha_member.user_id),
            &auth,
            json!({"role": "admin"}),
        )
        .await
        .assert_error(404);
        app.delete(
            &format!("/api/v1/tenant/members/{}", alpha_member.user_id),
            &auth,
        )
        .await
        .assert_error(404);
        app.delete(&format!("/api/v1/invites/{alpha_invite}"), &auth)
            .await
            .assert_error(404);
    }
    // Alpha's data is intact.
    let members = app.get("/api/v1/tenant/members", &alpha.bearer()).await;
    assert_eq!(members.body.as_array().unwrap().len(), 2);
    let invites = app.get("/api/v1/invites", &alpha.bearer()).await;
    assert_eq!(invites.body[0]["status"], "pending");
    assert_eq!(
        app.get("/api/v1/auth/me", &alpha_member.bearer())
            .await
            .body["role"],
        "member"
    );
    app.finish().await;
}
