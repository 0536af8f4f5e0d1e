//! Advisories end to end on the CVE store of the fake NVD: search, the
//! affected devices and users (inventory rows, an MDM's device records, a
//! directory's users), drafts by template and by a fake chat completions
//! endpoint, and a send through the SMTP sink that reaches each recipient
//! once, never an address outside the affected set unless added, and
//! nothing of one tenant visible to another.

use std::time::Duration;

use cairn_plugins::{InventoryRow, MappedRow, RecordRow, RowText};
use cairn_tests::components::connectors_dir;
use cairn_tests::fake_model::{FakeModel, ModelMode};
use cairn_tests::smtp::{FakeSmtp, Mail};
use cairn_tests::{backend_tests, wait_until, Account, Backend, TestApp};
use serde_json::{json, Value};

use super::vulnerabilities::{loaded_with, scan, software};

backend_tests!(
    advisories_reach_the_affected_users_once,
    advisory_drafts_by_the_model_fall_back_to_the_template,
);

/// Google Chrome 112.0.5615.49 (affected by CVE-2023-2033) on `device`,
/// whose user is `user`.
fn chrome_on(device: &str, user: Option<&str>) -> MappedRow {
    let MappedRow::Inventory(row) = software(
        device,
        "Google Chrome",
        "Google LLC",
        "112.0.5615.49",
        "windows",
    ) else {
        unreachable!()
    };
    MappedRow::Inventory(InventoryRow {
        user_email: user.map(RowText::from),
        user_name: user.map(|_| "Alice A.".into()),
        ..row
    })
}

fn directory_user(upn: &str, display_name: &str) -> MappedRow {
    let fields = json!({"upn": upn, "mail": upn, "display_name": display_name, "aliases": []});
    MappedRow::Record(RecordRow {
        collection: "users".into(),
        record_type: "user".into(),
        key: upn.to_lowercase().into(),
        device_name: None,
        client_id: None,
        group_ids: vec![],
        body: fields.to_string(),
        fields,
    })
}

/// The text of a message with quoted-printable soft breaks undone.
fn text_of(mail: &Mail) -> String {
    mail.data.replace("=\r\n", "").replace("=\n", "")
}

async fn wait_sent(app: &TestApp, account: &Account, id: &str) -> Value {
    wait_until(
        "the advisory to be sent",
        Duration::from_secs(60),
        async || {
            let one = app
                .get(&format!("/api/v1/advisories/{id}"), &account.bearer())
                .await;
            assert_eq!(one.status, 200, "{}", one.text);
            if one.body["status"] != "sending" {
                Ok(one.body)
            } else {
                Err(one.text)
            }
        },
    )
    .await
}

async fn advisories_reach_the_affected_users_once(backend: Backend) {
    let smtp = FakeSmtp::start().await;
    let port = smtp.port;
    let dir = connectors_dir(&["connectors/directory"], &[]);
    let Some((app, _nvd)) = loaded_with(backend, move |s| {
        s.connectors_dir = dir;
        s.smtp_host = "127.0.0.1".into();
        s.smtp_port = port;
        s.smtp_security = "none".into();
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
    // The invite above was mailed; advisories are counted after it.
    let invites = smtp.mails().len();
    let advisory_mails = || smtp.mails()[invites..].to_vec();
    app.seed(
        &owner,
        "rmm",
        &[
            chrome_on("WEB01", Some("Alice@Customer.example")),
            chrome_on("LAPTOP-9", None),
            chrome_on("KIOSK-1", None),
            software("KIOSK-1", "PuTTY", "Simon Tatham", "0.80", "windows"),
        ],
    )
    .await;
    // The MDM knows LAPTOP-9's primary user; the directory knows Alice.
    app.seed(
        &owner,
        "mdm",
        &[cairn_tests::inventory::device_record(
            "laptop-9",
            json!({"name": "laptop-9", "user": "bob@customer.example"}),
        )],
    )
    .await;
    app.seed(
        &owner,
        "directory",
        &[directory_user("alice@customer.example", "Alice Anderson")],
    )
    .await;
    // A device of another tenant runs Chrome too.
    app.seed(
        &other,
        "rmm",
        &[chrome_on("THEIRS-1", Some("eve@other.example"))],
    )
    .await;
    app.rebuild(&owner).await;
    scan(&app, &owner, json!({})).await;

    // Search.
    let hits = app
        .get(
            "/api/v1/advisories/search/cves?q=2023-2033",
            &member.bearer(),
        )
        .await;
    assert_eq!(hits.status, 200, "{}", hits.text);
    assert_eq!(hits.body[0]["cve_id"], "CVE-2023-2033", "{}", hits.text);
    assert_eq!(hits.body[0]["kev"], true);
    assert_eq!(hits.body[0]["affected_devices"], 3);
    let apps = app
        .get("/api/v1/advisories/search/apps?q=CHRO", &member.bearer())
        .await;
    assert_eq!(apps.body[0]["name"], "Google Chrome", "{}", apps.text);
    assert_eq!(apps.body[0]["device_count"], 3);
    for path in [
        "/api/v1/advisories/search/cves?q=a",
        "/api/v1/advisories/search/apps?q=%20",
        "/api/v1/advisories/search/cves?q=chrome&limit=0",
    ] {
        app.get(path, &member.bearer()).await.assert_error(422);
    }

    // The affected users, from every source, enriched by the directory.
    let affected = app
        .post(
            "/api/v1/advisories/affected-users",
            &member.bearer(),
            json!({"cve_id": "cve-2023-2033"}),
        )
        .await;
    assert_eq!(affected.status, 200, "{}", affected.text);
    let users = affected.body["users"].as_array().unwrap();
    assert_eq!(users.len(), 2, "{}", affected.text);
    assert_eq!(users[0]["email"], "alice@customer.example");
    assert_eq!(users[0]["devices"], json!(["WEB01"]));
    assert_eq!(users[0]["directory_user"]["display_name"], "Alice Anderson");
    assert_eq!(users[1]["email"], "bob@customer.example");
    assert_eq!(users[1]["devices"], json!(["LAPTOP-9"]));
    assert_eq!(users[1]["sources"], json!(["mdm"]));
    assert_eq!(affected.body["devices_without_user"], json!(["KIOSK-1"]));
    assert_eq!(affected.body["devices"].as_array().unwrap().len(), 3);
    let by_app = app
        .post(
            "/api/v1/advisories/affected-users",
            &member.bearer(),
            json!({"application": "Google Chrome", "versions": ["112.0.5615.49"]}),
        )
        .await;
    assert_eq!(
        by_app.body["users"].as_array().unwrap().len(),
        2,
        "{}",
        by_app.text
    );
    let none = app
        .post(
            "/api/v1/advisories/affected-users",
            &member.bearer(),
            json!({"application": "Google Chrome", "versions": ["1.0"]}),
        )
        .await;
    assert_eq!(none.body["devices"], json!([]), "{}", none.text);
    for (body, status, field) in [
        (json!({"cve_id": "log4shell"}), 422, "cve_id"),
        (
            json!({"cve_id": "CVE-2023-2033", "application": "Google Chrome"}),
            422,
            "cve_id",
        ),
        (json!({}), 422, "cve_id"),
        (
            json!({"cve_id": "CVE-2023-2033", "versions": ["1"]}),
            422,
            "versions",
        ),
        (json!({"cve_id": "CVE-2099-98765"}), 404, ""),
        (json!({"application": "Nonexistent Suite"}), 404, ""),
    ] {
        let resp = app
            .post(
                "/api/v1/advisories/affected-users",
                &member.bearer(),
                body.clone(),
            )
            .await;
        resp.assert_error(status);
        if !field.is_empty() {
            assert_eq!(resp.body["field"], field, "{body}: {}", resp.text);
        }
    }

    // A draft from the template (no model configured).
    let draft = app
        .post(
            "/api/v1/advisories/draft",
            &member.bearer(),
            json!({"cve_id": "CVE-2023-2033"}),
        )
        .await;
    assert_eq!(draft.status, 200, "{}", draft.text);
    assert_eq!(draft.body["drafted_by"], "template");
    assert_eq!(draft.body["model_note"], Value::Null);
    assert_eq!(draft.body["facts"]["exploited"], true);
    assert_eq!(draft.body["facts"]["affected_devices"], 3);
    assert_eq!(draft.body["facts"]["affected_users"], 2);
    let fix = draft.body["facts"]["fix_version"]
        .as_str()
        .unwrap()
        .to_string();
    let subject = draft.body["subject"].as_str().unwrap().to_string();
    let body = draft.body["body"].as_str().unwrap().to_string();
    assert!(
        subject.contains("CVE-2023-2033 in Google Chrome"),
        "{subject}"
    );
    for expected in [
        "Exploited: yes",
        "3 device(s)",
        "- Google Chrome 112.0.5615.49",
        &format!("update Google Chrome to version {fix} or later"),
    ] {
        assert!(body.contains(expected), "{expected:?} in {body}");
    }

    // Never an address outside the affected set unless added on purpose;
    // no recipients at all is refused. Nothing is sent by a refusal.
    let send = |extra: Value| {
        let mut request = json!({"cve_id": "CVE-2023-2033", "subject": subject, "body": body});
        request
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        request
    };
    for (request, field) in [
        (
            send(json!({"recipients": ["mallory@evil.example"]})),
            "recipients",
        ),
        (
            send(json!({"extra_recipients": ["not an address"]})),
            "extra_recipients",
        ),
        (send(json!({"subject": ""})), "subject"),
        (send(json!({"subject": "two\nlines"})), "subject"),
        (
            json!({"application": "PuTTY", "subject": "s", "body": "b"}),
            "recipients",
        ),
    ] {
        let refused = app
            .post("/api/v1/advisories/send", &member.bearer(), request.clone())
            .await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], field, "{request}: {}", refused.text);
    }
    assert!(advisory_mails().is_empty());
    let listed = app.get("/api/v1/advisories", &member.bearer()).await;
    assert_eq!(listed.body["total"], 0, "{}", listed.text);

    // Sent: each affected user and the added contact, once.
    let request = send(json!({"extra_recipients": ["IT@customer.example"]}));
    let sent = app
        .post("/api/v1/advisories/send", &member.bearer(), request.clone())
        .await;
    assert_eq!(sent.status, 202, "{}", sent.text);
    let id = sent.body["id"].as_str().unwrap().to_string();
    let advisory = wait_sent(&app, &member, &id).await;
    assert_eq!(advisory["status"], "sent", "{advisory}");
    assert_eq!(advisory["sent_count"], 3);
    let recipients = advisory["recipients"].as_array().unwrap();
    let emails: Vec<&str> = recipients
        .iter()
        .map(|r| r["email"].as_str().unwrap())
        .collect();
    assert_eq!(
        emails,
        [
            "alice@customer.example",
            "bob@customer.example",
            "it@customer.example"
        ]
    );
    assert_eq!(recipients[2]["explicit"], true);
    assert_eq!(recipients[0]["explicit"], false);
    assert!(recipients
        .iter()
        .all(|r| r["status"] == "sent" && r["attempts"] == 1));
    let mails = advisory_mails();
    assert_eq!(mails.len(), 3, "{mails:?}");
    for mail in &mails {
        assert_eq!(mail.to.len(), 1, "{mail:?}");
        assert!(
            text_of(mail).contains("CVE-2023-2033 in Google Chrome"),
            "{mail:?}"
        );
    }
    let alice = mails
        .iter()
        .find(|m| m.to[0].contains("alice@customer.example"))
        .unwrap();
    assert!(
        text_of(alice).contains("Your affected device(s): WEB01"),
        "{}",
        alice.data
    );
    assert!(
        !text_of(alice).contains("LAPTOP-9\r\n\r\nYour"),
        "{}",
        alice.data
    );

    // The same request again: the same advisory, nothing sent again.
    let again = app
        .post("/api/v1/advisories/send", &member.bearer(), request)
        .await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body["id"], json!(id));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(advisory_mails().len(), 3);
    let listed = app.get("/api/v1/advisories", &owner.bearer()).await;
    assert_eq!(listed.body["total"], 1, "{}", listed.text);
    assert_eq!(listed.body["items"][0]["sent_count"], 3);
    assert!(listed.body["items"][0].get("recipients").is_none());

    // Another tenant sees none of it, and its own CVE view is its own.
    app.get(&format!("/api/v1/advisories/{id}"), &other.bearer())
        .await
        .assert_error(404);
    let theirs = app.get("/api/v1/advisories", &other.bearer()).await;
    assert_eq!(theirs.body["total"], 0, "{}", theirs.text);
    let hits = app
        .get(
            "/api/v1/advisories/search/cves?q=CVE-2023-2033",
            &other.bearer(),
        )
        .await;
    assert_eq!(hits.body[0]["affected_devices"], 0, "{}", hits.text);
    let affected = app
        .post(
            "/api/v1/advisories/affected-users",
            &other.bearer(),
            json!({"cve_id": "CVE-2023-2033"}),
        )
        .await;
    assert_eq!(affected.body["users"], json!([]), "{}", affected.text);
    let apps = app
        .get("/api/v1/advisories/search/apps?q=chro", &other.bearer())
        .await;
    assert_eq!(apps.body, json!([]), "{}", apps.text);
    let draft = app
        .post(
            "/api/v1/advisories/draft",
            &other.bearer(),
            json!({"cve_id": "CVE-2023-2033"}),
        )
        .await;
    assert_eq!(draft.body["facts"]["affected_devices"], 0, "{}", draft.text);
    // The owner's users are not the other tenant's to write to.
    let refused = app
        .post(
            "/api/v1/advisories/send",
            &other.bearer(),
            json!({"cve_id": "CVE-2023-2033", "subject": "s", "body": "b",
                   "recipients": ["alice@customer.example"]}),
        )
        .await;
    refused.assert_error(422);
    assert_eq!(advisory_mails().len(), 3);
    app.finish().await;
}

async fn advisory_drafts_by_the_model_fall_back_to_the_template(backend: Backend) {
    let model = FakeModel::start().await;
    let configured = model.clone();
    let Some(app) = TestApp::start_with(backend, move |s| configured.configure(s)).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    app.seed(
        &owner,
        "rmm",
        &[chrome_on("WEB01", Some("alice@customer.example"))],
    )
    .await;
    app.rebuild(&owner).await;
    let ask = json!({"application": "Google Chrome", "fix_version": "131.0.6778.85"});
    let draft = app
        .post("/api/v1/advisories/draft", &owner.bearer(), ask.clone())
        .await;
    assert_eq!(draft.status, 200, "{}", draft.text);
    assert_eq!(draft.body["drafted_by"], "model", "{}", draft.text);
    assert_eq!(draft.body["subject"], "Please update your software today");
    // The model was given the facts.
    assert!(
        draft.body["body"]
            .as_str()
            .unwrap()
            .contains("131.0.6778.85"),
        "{}",
        draft.text
    );
    let request = &model.requests()[0];
    assert_eq!(
        request.body["response_format"]["json_schema"]["name"],
        "advisory_draft"
    );
    model.set_mode(ModelMode::Malformed);
    let draft = app
        .post("/api/v1/advisories/draft", &owner.bearer(), ask)
        .await;
    assert_eq!(draft.body["drafted_by"], "template", "{}", draft.text);
    assert!(
        draft.body["model_note"]
            .as_str()
            .unwrap()
            .contains("not JSON"),
        "{}",
        draft.text
    );
    assert!(draft.body["body"]
        .as_str()
        .unwrap()
        .contains("update Google Chrome to version 131.0.6778.85 or later"));

    // Without SMTP nothing can be sent, and nothing is recorded.
    let refused = app
        .post(
            "/api/v1/advisories/send",
            &owner.bearer(),
            json!({"application": "Google Chrome", "subject": "s", "body": "b"}),
        )
        .await;
    refused.assert_error(409);
    let listed = app.get("/api/v1/advisories", &owner.bearer()).await;
    assert_eq!(listed.body["total"], 0, "{}", listed.text);
    app.finish().await;
}
