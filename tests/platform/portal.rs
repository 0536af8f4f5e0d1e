//! The client portal over HTTP: keys, isolation between clients and
//! tenants, the pay flow against a fake Stripe-style provider with signed
//! webhooks, document uploads and signed download links, in the local
//! store and in an S3-compatible bucket (a fake S3 that checks every
//! request's SigV4 signature).

use std::collections::HashMap;

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_payments::{self, FakePayments};
use cairn_tests::fake_s3::{self, FakeS3};
use cairn_tests::{backend_tests, Account, Auth, Backend, Resp, TestApp};
use serde_json::json;

backend_tests!(
    portal_keys_fail_closed,
    portal_clients_see_only_their_own,
    invoices_are_paid_through_the_provider_and_its_webhook,
    uploads_are_validated_and_downloads_are_signed,
    documents_go_to_s3_and_downloads_are_presigned,
    a_failed_s3_upload_leaves_nothing_behind,
);

async fn app(backend: Backend) -> Option<TestApp> {
    let dir = connectors_dir(&["connectors/payments"], &[]);
    TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.portal_max_upload_mb = 1;
    })
    .await
}

/// The service with its portal store in `s3`; no connectors.
async fn s3_app(backend: Backend, s3: &FakeS3) -> Option<TestApp> {
    let dir = connectors_dir(&[], &[]);
    TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.portal_max_upload_mb = 12;
        s3.configure(s);
    })
    .await
}

/// Text larger than one multipart part (8 MiB), so it goes up in two.
fn multipart_sized_text() -> Vec<u8> {
    (0..9 * 1024 * 1024 + 123)
        .map(|i: usize| {
            if i % 80 == 79 {
                b'\n'
            } else {
                b'a' + (i % 26) as u8
            }
        })
        .collect()
}

fn executable() -> Vec<u8> {
    let mut exe = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00".to_vec();
    exe.extend(vec![0u8; 512]);
    exe
}

/// Temporary upload files left in the service's data directory.
fn leftover_tmp_files(app: &TestApp) -> usize {
    std::fs::read_dir(app.server.state.settings.portal_files_dir.join("tmp"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// A portal client of the admin's tenant and a key for it.
pub(super) async fn client_with_key(app: &TestApp, admin: &Account, name: &str) -> (String, Auth) {
    let client = app
        .post(
            "/api/v1/portal/clients",
            &admin.bearer(),
            json!({"name": name}),
        )
        .await;
    assert_eq!(client.status, 201, "{}", client.text);
    let id = client.body["id"].as_str().unwrap().to_string();
    let key = app
        .post(
            &format!("/api/v1/portal/clients/{id}/keys"),
            &admin.bearer(),
            json!({"label": "tests"}),
        )
        .await;
    assert_eq!(key.status, 201, "{}", key.text);
    let secret = key.body["key"].as_str().unwrap().to_string();
    assert!(secret.starts_with("chp_live_") && secret.len() >= "chp_live_".len() + 32);
    (id, Auth::Bearer(secret))
}

async fn invoice(
    app: &TestApp,
    admin: &Account,
    client: &str,
    number: &str,
    status: &str,
) -> String {
    let created = app
        .post(
            &format!("/api/v1/portal/clients/{client}/invoices"),
            &admin.bearer(),
            json!({"number": number, "description": "Managed services, November",
                   "amountCents": 125_000, "currency": "usd", "dueAt": 1_798_761_600}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["status"], "draft");
    assert_eq!(created.body["currency"], "USD");
    // /api/v1 answers in snake_case; the camelCase it was sent in is the
    // deprecated spelling, still read.
    assert_eq!(created.body["amount_cents"], 125_000, "{}", created.text);
    assert_eq!(created.body["due_at"], 1_798_761_600, "{}", created.text);
    assert!(
        created.body.get("amountCents").is_none(),
        "{}",
        created.text
    );
    let id = created.body["id"].as_str().unwrap().to_string();
    let path = ["sent", "paid"];
    for step in path.iter().take_while(|_| status != "draft") {
        let moved = app
            .post(
                &format!("/api/v1/portal/invoices/{id}/status"),
                &admin.bearer(),
                json!({"status": step}),
            )
            .await;
        assert_eq!(moved.status, 200, "{}", moved.text);
        if *step == status {
            break;
        }
    }
    id
}

async fn upload(app: &TestApp, key: &Auth, name: &str, bytes: Vec<u8>) -> Resp {
    let part = reqwest::multipart::Part::bytes(bytes).file_name(name.to_string());
    let form = reqwest::multipart::Form::new().part("file", part);
    let Auth::Bearer(token) = key else {
        panic!("portal calls use a key")
    };
    let response = app
        .http
        .post(format!("{}/api/files", app.url))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .await
        .unwrap();
    Resp::from(response).await
}

async fn portal_keys_fail_closed(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    let (client_id, key) = client_with_key(&app, &admin, "Acme Corp").await;
    assert_eq!(app.get("/api/invoices", &key).await.status, 200);

    let Auth::Bearer(secret) = &key else {
        unreachable!()
    };
    let unknown = format!("chp_live_{}", "A".repeat(40));
    let wrong_prefix = secret.replace("chp_live_", "chp_test_");
    let failures = [
        Auth::None,
        Auth::Bearer("chp_live_short".into()),
        Auth::Bearer(wrong_prefix),
        Auth::Bearer(unknown),
        Auth::Bearer(format!("{secret}x!")),
        // A user's session token is not a portal key.
        admin.bearer(),
    ];
    for auth in &failures {
        let resp = app.get("/api/invoices", auth).await;
        resp.assert_error(401);
        assert_eq!(resp.body["type"], "not_authenticated", "{auth:?}");
    }
    let basic = app
        .http
        .get(format!("{}/api/files", app.url))
        .header("authorization", format!("Basic {secret}"))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 401);

    // Use is recorded; a revoked key stops at once.
    let keys = app
        .get(
            &format!("/api/v1/portal/clients/{client_id}/keys"),
            &admin.bearer(),
        )
        .await;
    assert!(keys.body[0]["last_used_at"].is_string(), "{}", keys.text);
    assert!(
        keys.body[0].get("key").is_none(),
        "keys are never shown again"
    );
    let key_id = keys.body[0]["id"].as_str().unwrap();
    let member = app.add_member(&admin, "member@msp.example", "member").await;
    app.delete(&format!("/api/v1/portal/keys/{key_id}"), &member.bearer())
        .await
        .assert_error(403);
    let revoked = app
        .delete(&format!("/api/v1/portal/keys/{key_id}"), &admin.bearer())
        .await;
    assert_eq!(revoked.status, 204);
    app.get("/api/invoices", &key).await.assert_error(401);
    app.finish().await;
}

async fn portal_clients_see_only_their_own(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let msp = app.register("admin@msp.example").await;
    let other_msp = app.register("admin@other.example").await;
    let (acme, acme_key) = client_with_key(&app, &msp, "Acme").await;
    let (globex, globex_key) = client_with_key(&app, &msp, "Globex").await;
    let (initech, initech_key) = client_with_key(&app, &other_msp, "Initech").await;
    let acme_invoice = invoice(&app, &msp, &acme, "A-1", "sent").await;
    let acme_draft = invoice(&app, &msp, &acme, "A-2", "draft").await;
    let globex_invoice = invoice(&app, &msp, &globex, "G-1", "sent").await;
    let initech_invoice = invoice(&app, &other_msp, &initech, "I-1", "sent").await;
    let acme_file = upload(&app, &acme_key, "contract.txt", b"acme only".to_vec()).await;
    assert_eq!(acme_file.status, 201, "{}", acme_file.text);
    let acme_file = acme_file.body["id"].as_str().unwrap().to_string();

    let listed = app.get("/api/invoices", &acme_key).await;
    let numbers: Vec<&str> = listed
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["number"].as_str().unwrap())
        .collect();
    assert_eq!(numbers, ["A-1"], "Acme's only, drafts not shown");
    // A draft is the MSP's work in progress: not there for the client,
    // there for the MSP.
    app.get(&format!("/api/invoices/{acme_draft}"), &acme_key)
        .await
        .assert_error(404);
    let staff = app.get("/api/v1/portal/invoices", &msp.bearer()).await;
    assert_eq!(staff.status, 200, "{}", staff.text);
    assert!(staff.text.contains("A-2"), "{}", staff.text);
    let sent_later = invoice(&app, &msp, &acme, "A-3", "sent").await;
    let listed = app.get("/api/invoices", &acme_key).await;
    assert_eq!(listed.body[0]["id"], sent_later.as_str(), "newest first");
    assert_eq!(listed.body.as_array().unwrap().len(), 2);
    for (key, own) in [(&globex_key, "G-1"), (&initech_key, "I-1")] {
        let listed = app.get("/api/invoices", key).await;
        assert_eq!(listed.body.as_array().unwrap().len(), 1);
        assert_eq!(listed.body[0]["number"], own);
        assert_eq!(app.get("/api/files", key).await.body, json!([]));
    }
    for (key, foreign) in [
        (&globex_key, &acme_invoice),
        (&initech_key, &acme_invoice),
        (&acme_key, &initech_invoice),
        (&acme_key, &globex_invoice),
    ] {
        app.get(&format!("/api/invoices/{foreign}"), key)
            .await
            .assert_error(404);
        app.post(&format!("/api/invoices/{foreign}/pay"), key, json!({}))
            .await
            .assert_error(404);
    }
    for key in [&globex_key, &initech_key] {
        app.get(&format!("/api/files/{acme_file}/download"), key)
            .await
            .assert_error(404);
    }
    let own = app
        .get(&format!("/api/invoices/{acme_invoice}"), &acme_key)
        .await;
    assert_eq!(own.body["amountCents"], 125_000);
    assert_eq!(own.body["dueAt"], 1_798_761_600);

    // Admins of another tenant reach none of it.
    app.get(
        &format!("/api/v1/portal/invoices/{acme_invoice}"),
        &other_msp.bearer(),
    )
    .await
    .assert_error(404);
    app.post(
        &format!("/api/v1/portal/clients/{acme}/keys"),
        &other_msp.bearer(),
        json!({}),
    )
    .await
    .assert_error(404);
    app.post(
        &format!("/api/v1/portal/invoices/{acme_invoice}/status"),
        &other_msp.bearer(),
        json!({"status": "void"}),
    )
    .await
    .assert_error(404);
    let theirs = app
        .get("/api/v1/portal/invoices", &other_msp.bearer())
        .await;
    assert_eq!(theirs.body["items"].as_array().unwrap().len(), 1);
    assert_eq!(theirs.body["total"], 1);
    app.finish().await;
}

async fn invoices_are_paid_through_the_provider_and_its_webhook(backend: Backend) {
    let provider = FakePayments::start().await;
    let Some(app) = app(backend).await else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    let configured = app
        .post(
            "/api/v1/payments/config",
            &admin.bearer(),
            json!({"base_url": provider.base_url, "api_key": fake_payments::API_KEY,
                   "webhook_secret": fake_payments::WEBHOOK_SECRET,
                   "success_url": "https://portal.example/paid"}),
        )
        .await;
    assert_eq!(configured.status, 200, "{}", configured.text);
    let (client, key) = client_with_key(&app, &admin, "Acme").await;
    let draft = invoice(&app, &admin, &client, "INV-1", "draft").await;
    app.post(&format!("/api/invoices/{draft}/pay"), &key, json!({}))
        .await
        .assert_error(404);

    let sent = invoice(&app, &admin, &client, "INV-2", "sent").await;
    let paid = app
        .post(&format!("/api/invoices/{sent}/pay"), &key, json!({}))
        .await;
    assert_eq!(paid.status, 200, "{}", paid.text);
    let url = paid.body["paymentUrl"].as_str().unwrap().to_string();
    assert!(url.starts_with(&provider.base_url), "{url}");
    let again = app
        .post(&format!("/api/invoices/{sent}/pay"), &key, json!({}))
        .await;
    assert_eq!(
        again.body["paymentUrl"],
        url.as_str(),
        "a valid link is reused"
    );
    assert_eq!(provider.sessions_created(), 1);
    assert_eq!(
        app.get(&format!("/api/invoices/{sent}"), &key).await.body["paymentUrl"],
        url.as_str()
    );

    let session_id = url.rsplit('/').next().unwrap().to_string();
    let body = fake_payments::completed_event(&session_id, &sent, 1_790_000_000);
    let hook = format!("/api/v1/portal/webhooks/payments/{}", admin.tenant_id);
    let deliver = async |signature: Option<String>, body: &str| {
        let mut request = app
            .http
            .post(format!("{}{hook}", app.url))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(signature) = signature {
            request = request.header("Stripe-Signature", signature);
        }
        Resp::from(request.send().await.unwrap()).await
    };
    let now = chrono::Utc::now().timestamp();
    // Unsigned, forged, stale or for another body: refused, nothing changes.
    deliver(None, &body).await.assert_error(400);
    deliver(Some(fake_payments::sign("whsec_wrong", now, &body)), &body)
        .await
        .assert_error(400);
    deliver(
        Some(fake_payments::sign(
            fake_payments::WEBHOOK_SECRET,
            now - 3600,
            &body,
        )),
        &body,
    )
    .await
    .assert_error(400);
    deliver(
        Some(fake_payments::sign(
            fake_payments::WEBHOOK_SECRET,
            now,
            &body,
        )),
        "{}",
    )
    .await
    .assert_error(400);
    assert_eq!(
        app.get(&format!("/api/invoices/{sent}"), &key).await.body["status"],
        "sent"
    );

    let signature = fake_payments::sign(fake_payments::WEBHOOK_SECRET, now, &body);
    // The database fails between recording the event and moving the
    // invoice: neither sticks, so the provider's retry still pays it.
    let (fail, heal) = match backend {
        Backend::Sqlite => (
            vec![
                "CREATE TRIGGER fail_invoice_update BEFORE UPDATE ON invoices \
                  BEGIN SELECT RAISE(ABORT, 'disk on fire'); END",
            ],
            vec!["DROP TRIGGER fail_invoice_update"],
        ),
        Backend::Postgres => (
            vec![
                "CREATE FUNCTION fail_update() RETURNS trigger LANGUAGE plpgsql AS \
                 $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$",
                "CREATE TRIGGER fail_invoice_update BEFORE UPDATE ON invoices \
                 FOR EACH ROW EXECUTE FUNCTION fail_update()",
            ],
            vec!["DROP TRIGGER fail_invoice_update ON invoices"],
        ),
    };
    for statement in fail {
        sqlx::query(statement)
            .execute(&app.db().pool)
            .await
            .unwrap();
    }
    deliver(Some(signature.clone()), &body)
        .await
        .assert_error(500);
    for statement in heal {
        sqlx::query(statement)
            .execute(&app.db().pool)
            .await
            .unwrap();
    }
    let events: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM payment_events")
        .fetch_one(&app.db().pool)
        .await
        .unwrap();
    assert_eq!(events, 0, "the event was not recorded without its invoice");
    let applied = deliver(Some(signature.clone()), &body).await;
    assert_eq!(applied.status, 200, "{}", applied.text);
    assert_eq!(applied.body["result"], "paid");
    let invoice_now = app.get(&format!("/api/invoices/{sent}"), &key).await.body;
    assert_eq!(invoice_now["status"], "paid");
    assert_eq!(invoice_now["paidAt"], 1_790_000_000);
    let replay = deliver(Some(signature), &body).await;
    assert_eq!(replay.status, 200);
    assert_eq!(replay.body["result"], "duplicate");
    assert_eq!(
        app.get(&format!("/api/invoices/{sent}"), &key).await.body["paidAt"],
        1_790_000_000
    );

    // Paid and void invoices cannot be paid; final states stay final.
    app.post(&format!("/api/invoices/{sent}/pay"), &key, json!({}))
        .await
        .assert_error(409);
    let void = invoice(&app, &admin, &client, "INV-3", "draft").await;
    let voided = app
        .post(
            &format!("/api/v1/portal/invoices/{void}/status"),
            &admin.bearer(),
            json!({"status": "void"}),
        )
        .await;
    assert_eq!(voided.status, 200);
    app.post(&format!("/api/invoices/{void}/pay"), &key, json!({}))
        .await
        .assert_error(409);
    for (id, status) in [(&sent, "void"), (&void, "sent"), (&sent, "draft")] {
        app.post(
            &format!("/api/v1/portal/invoices/{id}/status"),
            &admin.bearer(),
            json!({"status": status}),
        )
        .await
        .assert_error(409);
    }
    app.patch(
        &format!("/api/v1/portal/invoices/{sent}"),
        &admin.bearer(),
        json!({"amountCents": 1}),
    )
    .await
    .assert_error(409);
    app.post(
        &format!("/api/v1/portal/clients/{client}/invoices"),
        &admin.bearer(),
        json!({"number": "INV-9", "description": "x", "amountCents": -5, "currency": "USD"}),
    )
    .await
    .assert_error(422);
    app.finish().await;
}

async fn uploads_are_validated_and_downloads_are_signed(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    let (_, key) = client_with_key(&app, &admin, "Acme").await;
    let pdf = b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n".to_vec();
    let good = upload(&app, &key, "report.pdf", pdf.clone()).await;
    assert_eq!(good.status, 201, "{}", good.text);
    assert_eq!(good.body["name"], "report.pdf");
    assert_eq!(good.body["sizeBytes"], pdf.len());
    assert_eq!(good.body["contentType"], "application/pdf");
    assert!(good.body["spWebUrl"].is_null());

    let rejected: [(&str, Vec<u8>, &str); 4] = [
        ("invoice.pdf", executable(), "content"),
        ("empty.pdf", vec![], "size"),
        ("big.txt", vec![b'a'; 1024 * 1024 + 1], "size"),
        ("tool.exe", b"MZ".to_vec(), "extension"),
    ];
    for (name, bytes, check) in rejected {
        let resp = upload(&app, &key, name, bytes).await;
        resp.assert_error(400);
        assert_eq!(resp.body["type"], "upload_rejected", "{name}");
        assert_eq!(resp.body["field"], check, "{name}: {}", resp.text);
    }
    // Refused before the body is read (its name, the key), the answer
    // still comes after the body: larger than the sockets' buffers.
    let bad_key = Auth::Bearer("chp_live_not-a-key".into());
    for (key, name, status, kind) in [
        (&key, "tool.exe", 400, "upload_rejected"),
        (&bad_key, "report.pdf", 401, "not_authenticated"),
    ] {
        for _ in 0..3 {
            let resp = upload(&app, key, name, vec![b'a'; 20 * 1024 * 1024]).await;
            assert_eq!(resp.status, status, "{name}: {}", resp.text);
            assert_eq!(resp.body["type"], kind, "{name}: {}", resp.text);
        }
    }
    let hostile = upload(&app, &key, "../../etc/pa\tsswd.txt", b"hello".to_vec()).await;
    assert_eq!(hostile.status, 201, "{}", hostile.text);
    assert_eq!(hostile.body["name"], "passwd.txt");
    // A line break cannot even travel in a part header: the form is refused.
    let broken = upload(&app, &key, "a\nb.txt", b"hello".to_vec()).await;
    broken.assert_error(400);

    let files = app.get("/api/files", &key).await;
    let names: Vec<&str> = files
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["passwd.txt", "report.pdf"],
        "rejected uploads left nothing"
    );
    assert_eq!(leftover_tmp_files(&app), 0, "no temporary files remain");

    let id = good.body["id"].as_str().unwrap();
    let redirect = app.get(&format!("/api/files/{id}/download"), &key).await;
    assert_eq!(redirect.status, 302, "{}", redirect.text);
    let location = redirect.headers["location"].to_str().unwrap().to_string();
    let fetched = app
        .http
        .get(format!("{}{location}", app.url))
        .send()
        .await
        .unwrap();
    assert_eq!(fetched.status(), 200);
    assert_eq!(fetched.headers()["content-type"], "application/pdf");
    assert_eq!(fetched.bytes().await.unwrap().to_vec(), pdf);

    let tampered = format!("{}0", &location[..location.len() - 1]);
    let tampered = if tampered == location {
        format!("{}1", &location[..location.len() - 1])
    } else {
        tampered
    };
    app.get(&tampered, &Auth::None).await.assert_error(403);
    let other_file = hostile.body["id"].as_str().unwrap();
    app.get(&location.replace(id, other_file), &Auth::None)
        .await
        .assert_error(403);
    let signer = cairn_portal::files::LinkSigner::new(&app.server.state.settings.jwt_secret);
    let expired = signer.link(id, chrono::Utc::now().timestamp() - 1);
    app.get(&expired, &Auth::None).await.assert_error(410);

    // A document whose file an operator removed is gone (410 with a JSON
    // body), not a server error.
    let stored = app
        .server
        .state
        .settings
        .portal_files_dir
        .join(format!("{}/{id}", admin.tenant_id));
    std::fs::remove_file(&stored).expect("the document is kept locally");
    let gone = app.get(&location, &Auth::None).await;
    gone.assert_error(410);
    assert!(
        gone.body["detail"].as_str().unwrap().contains("no longer"),
        "{}",
        gone.text
    );
    app.finish().await;
}

async fn documents_go_to_s3_and_downloads_are_presigned(backend: Backend) {
    let s3 = FakeS3::start().await;
    let Some(app) = s3_app(backend, &s3).await else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    let (_, key) = client_with_key(&app, &admin, "Acme").await;
    let (_, other_key) = client_with_key(&app, &admin, "Globex").await;

    let pdf = b"%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n".to_vec();
    let good = upload(&app, &key, "report.pdf", pdf.clone()).await;
    assert_eq!(good.status, 201, "{}", good.text);
    let id = good.body["id"].as_str().unwrap().to_string();
    let object_key = format!("{}/{id}", admin.tenant_id);
    let object_url = format!("{}/{}/{object_key}", s3.endpoint, fake_s3::BUCKET);
    assert_eq!(good.body["spWebUrl"], object_url.as_str());
    assert_eq!(good.body["sizeBytes"], pdf.len());
    let object = s3
        .object(&object_key)
        .expect("the document is in the bucket");
    assert_eq!(object.bytes, pdf);
    assert_eq!(object.content_type.as_deref(), Some("application/pdf"));
    assert_eq!(
        object.content_disposition.as_deref(),
        Some("attachment; filename=\"report.pdf\"")
    );
    assert!(
        !app.server
            .state
            .settings
            .portal_files_dir
            .join(&object_key)
            .exists(),
        "nothing is kept locally"
    );
    assert_eq!(leftover_tmp_files(&app), 0);

    let listed = app.get("/api/files", &key).await;
    assert_eq!(listed.body.as_array().unwrap().len(), 1, "{}", listed.text);
    assert_eq!(listed.body[0]["id"], id.as_str());
    assert_eq!(listed.body[0]["spWebUrl"], object_url.as_str());
    assert_eq!(app.get("/api/files", &other_key).await.body, json!([]));

    let redirect = app.get(&format!("/api/files/{id}/download"), &key).await;
    assert_eq!(redirect.status, 302, "{}", redirect.text);
    let location = redirect.headers["location"].to_str().unwrap().to_string();
    assert!(
        location.starts_with(&format!("{object_url}?")),
        "{location}"
    );
    let params: HashMap<String, String> = reqwest::Url::parse(&location)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert!(
        params["X-Amz-Credential"].starts_with(&format!("{}/", fake_s3::ACCESS_KEY_ID)),
        "{location}"
    );
    assert_eq!(params["X-Amz-Expires"], "300", "portal_download_ttl_secs");
    let signature = params["X-Amz-Signature"].clone();
    assert_eq!(signature.len(), 64, "{location}");
    let fetched = app.http.get(&location).send().await.unwrap();
    assert_eq!(fetched.status(), 200);
    assert_eq!(fetched.headers()["content-type"], "application/pdf");
    assert_eq!(
        fetched.headers()["content-disposition"],
        "attachment; filename=\"report.pdf\""
    );
    assert_eq!(fetched.bytes().await.unwrap().to_vec(), pdf);
    assert_eq!(
        s3.refused_signatures(),
        0,
        "every request the service sent carried a valid signature"
    );

    // The presigned URL is the credential: any change to it is refused.
    let flipped: String = signature
        .chars()
        .enumerate()
        .map(|(i, c)| match (i, c) {
            (63, '0') => '1',
            (63, _) => '0',
            (_, c) => c,
        })
        .collect();
    let tampered = [
        location.replace(&signature, &flipped),
        location.replace("X-Amz-Expires=300", "X-Amz-Expires=3000"),
        location.replace(&id, &uuid::Uuid::now_v7().to_string()),
    ];
    for url in &tampered {
        let refused = app.http.get(url).send().await.unwrap();
        assert_eq!(refused.status(), 403, "{url}");
    }
    let long_ago = chrono::Utc::now() - chrono::Duration::hours(1);
    let expired = app
        .http
        .get(s3.presigned_get(&object_key, long_ago, 60))
        .send()
        .await
        .unwrap();
    assert_eq!(expired.status(), 403);
    assert!(expired
        .text()
        .await
        .unwrap()
        .contains("Request has expired"));
    // The fake's own signing is the same as the service's: a fresh URL works.
    let fresh = app
        .http
        .get(s3.presigned_get(&object_key, chrono::Utc::now(), 60))
        .send()
        .await
        .unwrap();
    assert_eq!(fresh.status(), 200);
    assert_eq!(s3.refused_signatures(), tampered.len() + 1);

    // Scoping is unchanged, and the local content route never serves an
    // S3 document, whatever its signature.
    app.get(&format!("/api/files/{id}/download"), &other_key)
        .await
        .assert_error(404);
    let signer = cairn_portal::files::LinkSigner::new(&app.server.state.settings.jwt_secret);
    let local_link = signer.link(&id, chrono::Utc::now().timestamp() + 60);
    app.get(&local_link, &Auth::None).await.assert_error(404);

    let rejected = upload(&app, &key, "invoice.pdf", executable()).await;
    rejected.assert_error(400);
    assert_eq!(rejected.body["field"], "content");
    assert_eq!(
        s3.keys(),
        std::slice::from_ref(&object_key),
        "a refused upload is not stored"
    );

    // A document larger than a part goes up as a multipart upload.
    let big = multipart_sized_text();
    let ledger = upload(&app, &key, "ledger.txt", big.clone()).await;
    assert_eq!(ledger.status, 201, "{}", ledger.text);
    assert_eq!(s3.multipart_completed(), 1);
    assert_eq!(s3.open_uploads(), 0);
    let ledger_key = format!(
        "{}/{}",
        admin.tenant_id,
        ledger.body["id"].as_str().unwrap()
    );
    let stored = s3
        .object(&ledger_key)
        .expect("the large document is stored");
    assert!(stored.bytes == big, "the parts add up to the document");
    assert_eq!(stored.content_type.as_deref(), Some("text/plain"));
    assert_eq!(leftover_tmp_files(&app), 0);
    assert!(s3
        .keys()
        .iter()
        .all(|k| k.starts_with(&format!("{}/", admin.tenant_id))));
    assert_eq!(s3.refused_signatures(), tampered.len() + 1);

    // An object removed from the bucket: the download says it is gone
    // rather than sending the client to the bucket's own 404.
    s3.remove(&ledger_key);
    let ledger_id = ledger.body["id"].as_str().unwrap();
    let gone = app
        .get(&format!("/api/files/{ledger_id}/download"), &key)
        .await;
    gone.assert_error(410);
    app.finish().await;
}

async fn a_failed_s3_upload_leaves_nothing_behind(backend: Backend) {
    let s3 = FakeS3::start().await;
    let Some(app) = s3_app(backend, &s3).await else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    let (_, key) = client_with_key(&app, &admin, "Acme").await;

    // The bucket refuses the object; then a part; then the completion.
    s3.fail_next("PutObject", 403);
    upload(&app, &key, "notes.txt", b"hello".to_vec())
        .await
        .assert_error(500);
    s3.fail_next("UploadPart", 400);
    upload(&app, &key, "ledger.txt", multipart_sized_text())
        .await
        .assert_error(500);
    s3.fail_next("CompleteMultipartUpload", 400);
    upload(&app, &key, "ledger.txt", multipart_sized_text())
        .await
        .assert_error(500);

    assert!(s3.keys().is_empty(), "{:?}", s3.keys());
    assert_eq!(s3.open_uploads(), 0, "failed multipart uploads are aborted");
    assert_eq!(app.get("/api/files", &key).await.body, json!([]));
    assert_eq!(leftover_tmp_files(&app), 0);

    // The store works again once the bucket does.
    let ok = upload(&app, &key, "notes.txt", b"hello".to_vec()).await;
    assert_eq!(ok.status, 201, "{}", ok.text);
    assert_eq!(s3.keys().len(), 1);
    assert_eq!(s3.refused_signatures(), 0);
    app.finish().await;
}
