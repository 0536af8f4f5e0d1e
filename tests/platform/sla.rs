//! Remediation SLAs over HTTP: a partner's default, group and customer
//! policies, KEV's due date, findings going due soon then overdue as the
//! service's clock moves (no sleeping), fixes on time and late, device
//! tiers, the audit of policy changes, refusals that name the field, and
//! isolation of every new id route.

use std::time::Duration;

use cairn_core::db::fence::NoFence;
use cairn_core::ids::TenantId;
use cairn_plugins::MappedRow;
use cairn_tests::smtp::FakeSmtp;
use cairn_tests::{backend_tests, Account, Backend, TestApp};
use reqwest::Method;
use serde_json::{json, Value};

use super::dashboards::{categories, preview};
use super::partner::{act, customer};
use super::portal::client_with_key;
use super::reports::{download, generate, pdf_text};
use super::vulnerabilities::{loaded_with, scan, software};

backend_tests!(
    due_dates_follow_the_narrowest_policy_and_the_clock,
    exceptions_need_another_approver_and_expire,
    a_customer_decides_its_exceptions_through_the_portal,
    tiers_come_from_rules_searches_and_hands,
    tiers_follow_rmm_groups_and_scanner_tags,
);

const DAY: Duration = Duration::from_secs(86_400);

/// Replaces the account's rmm rows with `rows` (an upgrade), rebuilds and
/// scans.
pub(crate) async fn replace_and_scan(
    app: &TestApp,
    account: &Account,
    run: &str,
    rows: &[MappedRow],
) {
    let tenant = TenantId(account.tenant_id.clone());
    let mut tx = app.db().pool.begin().await.unwrap();
    cairn_integrations::storage::upsert_rows(&mut tx, &tenant, "rmm", (run, 0), rows)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    cairn_inventory::seen::prune_unseen(app.db(), &NoFence, &tenant, "rmm", run)
        .await
        .unwrap();
    app.rebuild(account).await;
    scan(app, account, json!({})).await;
}

async fn put(app: &TestApp, who: &Account, path: &str, body: Value) -> cairn_tests::Resp {
    app.call(Method::PUT, path, &who.bearer(), Some(body)).await
}

/// `(cve, device, sla_state, days_left)` of the account's open findings.
async fn standing_rows(
    app: &TestApp,
    who: &Account,
    query: &str,
) -> Vec<(String, String, Value, Value)> {
    let page = app
        .get(&format!("/api/v1/sla/findings{query}"), &who.bearer())
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    let mut rows: Vec<_> = page.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["cve_id"].as_str().unwrap().to_string(),
                f["device_name"].as_str().unwrap().to_string(),
                f["sla_state"].clone(),
                f["days_left"].clone(),
            )
        })
        .collect();
    rows.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    rows
}

fn zoom(device: &str, version: &str) -> MappedRow {
    software(
        device,
        "Zoom",
        "Zoom Video Communications, Inc.",
        version,
        "windows",
    )
}

fn seven_zip(device: &str, version: &str) -> MappedRow {
    let name = format!("7-Zip {version} (x64)");
    software(device, &name, "Igor Pavlov", version, "windows")
}

async fn due_dates_follow_the_narrowest_policy_and_the_clock(backend: Backend) {
    let Some((app, _nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let clock = app.server.state.clock.clone();
    let owner = app.register("owner@msp.example").await;
    let acme = customer(&app, &owner, "Acme").await;
    let globex = customer(&app, &owner, "Globex").await;
    let group = app
        .post(
            "/api/v1/partner/groups",
            &owner.bearer(),
            json!({"name": "Contract", "customer_ids": [acme]}),
        )
        .await;
    let group = group.body["id"].as_str().unwrap().to_string();
    let in_acme = act(&app, &owner, &acme).await;
    let in_globex = act(&app, &owner, &globex).await;
    // Acme: Zoom (two CVEs, neither in KEV) and 7-Zip (KEV, CISA's due
    // date long past); Globex: Zoom.
    let acme_rows = [zoom("ACME-01", "5.9.1"), seven_zip("ACME-01", "24.08")];
    replace_and_scan(&app, &in_acme, "acme-1", &acme_rows).await;
    replace_and_scan(&app, &in_globex, "globex-1", &[zoom("GLOBEX-01", "5.9.1")]).await;

    // Nothing set: the built-in policy applies.
    let applied = app.get("/api/v1/sla/policy", &in_acme.bearer()).await;
    assert_eq!(applied.status, 200, "{}", applied.text);
    assert_eq!(applied.body["source"]["scope"], "built_in");

    // The partner's default, then a group policy for Acme's contract.
    let default = json!({"name": "Standard", "kev_due_date": false,
                         "rules": [{"days": 60}]});
    let saved = put(&app, &owner, "/api/v1/sla/policies/default", default).await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(
        saved.body["moved"], 5,
        "every open finding of both customers: {}",
        saved.text
    );
    let contract = json!({"name": "Contract", "rules": [{"days": 20}]});
    let path = format!("/api/v1/sla/policies/groups/{group}");
    let saved = put(&app, &owner, &path, contract).await;
    assert_eq!(
        saved.body["moved"], 3,
        "Acme's findings only: {}",
        saved.text
    );
    let applied = app.get("/api/v1/sla/policy", &in_acme.bearer()).await;
    assert_eq!(applied.body["source"]["scope"], "group", "{}", applied.text);
    assert_eq!(applied.body["source"]["scope_id"], group.as_str());
    let applied = app.get("/api/v1/sla/policy", &in_globex.bearer()).await;
    assert_eq!(
        applied.body["source"]["scope"], "default",
        "{}",
        applied.text
    );
    assert_eq!(applied.body["source"]["owner_id"], owner.tenant_id.as_str());

    // 7-Zip is KEV: due on CISA's date, long gone; Zoom has 20 days.
    let kev = ("CVE-2025-0411".to_string(), "ACME-01".to_string());
    let rows = standing_rows(&app, &in_acme, "").await;
    let state_of = |rows: &[(String, String, Value, Value)], cve: &str| {
        rows.iter()
            .find(|r| r.0 == cve)
            .map(|r| (r.2.clone(), r.3.clone()))
            .unwrap_or_else(|| panic!("{cve} in {rows:?}"))
    };
    assert_eq!(state_of(&rows, &kev.0).0, "overdue");
    assert_eq!(
        state_of(&rows, "CVE-2022-22784"),
        (json!("within"), json!(19))
    );
    let overdue = standing_rows(&app, &in_acme, "?state=overdue").await;
    assert_eq!(overdue.len(), 1, "{overdue:?}");

    // Time passes: due soon at 14 days in, overdue at 21.
    clock.advance(14 * DAY);
    let rows = standing_rows(&app, &in_acme, "").await;
    assert_eq!(
        state_of(&rows, "CVE-2022-22784"),
        (json!("due_soon"), json!(5))
    );
    clock.advance(7 * DAY);
    let rows = standing_rows(&app, &in_acme, "").await;
    assert_eq!(
        state_of(&rows, "CVE-2022-22784"),
        (json!("overdue"), json!(-2))
    );
    let globex_rows = standing_rows(&app, &in_globex, "").await;
    assert_eq!(state_of(&globex_rows, "CVE-2022-22784").0, "within");

    // Globex fixes Zoom within its 60 days; Acme fixes 7-Zip long after
    // CISA's date.
    replace_and_scan(&app, &in_globex, "globex-2", &[zoom("GLOBEX-01", "5.16.5")]).await;
    let acme_fixed = [zoom("ACME-01", "5.9.1"), seven_zip("ACME-01", "24.09")];
    replace_and_scan(&app, &in_acme, "acme-2", &acme_fixed).await;
    let customers = app
        .get("/api/v1/sla/customers?days=30", &owner.bearer())
        .await;
    assert_eq!(customers.status, 200, "{}", customers.text);
    let by_name = |name: &str| {
        customers
            .body
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()["standing"]
            .clone()
    };
    let (acme_standing, globex_standing) = (by_name("Acme"), by_name("Globex"));
    assert_eq!(acme_standing["overdue"], 2, "{acme_standing}");
    assert_eq!(acme_standing["fixed"], 1);
    assert_eq!(acme_standing["fixed_on_time"], 0);
    assert_eq!(acme_standing["compliance_percent"], 0.0);
    assert_eq!(globex_standing["open"], 0, "{globex_standing}");
    assert_eq!(globex_standing["compliance_percent"], 100.0);
    let own = app
        .get("/api/v1/sla/standing?days=30", &in_acme.bearer())
        .await;
    assert_eq!(own.body, acme_standing, "one computation on every surface");
    let overview = app
        .get("/api/v1/partner/overview?sort=overdue", &owner.bearer())
        .await;
    assert_eq!(overview.status, 200, "{}", overview.text);
    assert_eq!(
        overview.body["customers"][0]["name"], "Acme",
        "most overdue first"
    );
    assert_eq!(overview.body["customers"][0]["sla"], acme_standing);
    assert_eq!(overview.body["customers"][1]["sla"], globex_standing);
    // And the states counted agree with the findings list, and with the
    // dashboard's widgets.
    let listed = standing_rows(&app, &in_acme, "").await;
    let overdue = listed.iter().filter(|r| r.2 == "overdue").count();
    assert_eq!(acme_standing["overdue"], overdue as i64);
    let widget = preview(
        &app,
        &in_acme,
        json!({"metric": "open_findings_by_sla_state"}),
    )
    .await;
    let by_state = categories(&widget);
    for state in ["overdue", "due_soon", "within", "excepted", "untracked"] {
        assert_eq!(acme_standing[state], by_state[state], "{state}: {widget}");
    }
    let compliance = preview(&app, &in_acme, json!({"metric": "sla_compliance"})).await;
    assert_eq!(
        compliance["data"]["value"].as_f64(),
        acme_standing["compliance_percent"].as_f64(),
        "{compliance}"
    );

    // A critical device gets 3 days under a contract that says so: the
    // change says how many due dates moved.
    let tiers = put(
        &app,
        &in_acme,
        "/api/v1/sla/tiers",
        json!({"devices": ["acme-01"], "tier": "critical"}),
    )
    .await;
    assert_eq!(tiers.body["updated"], 1, "{}", tiers.text);
    let contract = json!({"name": "Contract", "rules": [
        {"tiers": ["critical"], "days": 3}, {"days": 20}]});
    let saved = put(&app, &owner, &path, contract).await;
    assert_eq!(
        saved.body["moved"], 2,
        "Acme's two open Zoom CVEs: {}",
        saved.text
    );
    let rows = standing_rows(&app, &in_acme, "").await;
    assert_eq!(state_of(&rows, "CVE-2022-22784").1, json!(-19));
    // The vulnerability lists carry the same due dates.
    let devices = app
        .get(
            "/api/v1/vulnerabilities/cve/CVE-2022-22784/devices",
            &in_acme.bearer(),
        )
        .await;
    assert_eq!(devices.status, 200, "{}", devices.text);
    let sla = &devices.body["items"][0]["sla"];
    assert_eq!(sla["days_left"], -19, "{}", devices.text);
    assert_eq!(sla["sla_state"], "overdue");
    assert_eq!(sla["tier"], "critical");
    let list = app.get("/api/v1/vulnerabilities/", &in_acme.bearer()).await;
    let entry = list.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["cve_id"] == "CVE-2022-22784")
        .cloned()
        .unwrap_or_default();
    assert_eq!(entry["sla"]["overdue"], 1, "{}", list.text);
    assert_eq!(entry["sla"]["earliest_due_at"], sla["due_at"]);
    let cves_in = |state: &'static str| {
        let app = &app;
        let who = &in_acme;
        async move {
            let page = app
                .get(
                    &format!("/api/v1/vulnerabilities/?sla_state={state}"),
                    &who.bearer(),
                )
                .await;
            assert_eq!(page.status, 200, "{}", page.text);
            let mut cves: Vec<String> = page.body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v["cve_id"].as_str().unwrap().to_string())
                .collect();
            cves.sort();
            cves
        }
    };
    let overdue_cves = cves_in("overdue").await;
    assert!(
        overdue_cves.contains(&"CVE-2022-22784".to_string()),
        "{overdue_cves:?}"
    );
    let expected: std::collections::BTreeSet<String> = rows
        .iter()
        .filter(|r| r.2 == "overdue")
        .map(|r| r.0.clone())
        .collect();
    assert_eq!(overdue_cves, expected.into_iter().collect::<Vec<_>>());
    assert!(cves_in("excepted").await.is_empty());
    app.get("/api/v1/vulnerabilities/?sla_state=late", &in_acme.bearer())
        .await
        .assert_error(422);

    // Every change is in the partner's audit, newest first.
    let audit = app
        .get("/api/v1/sla/policies/changes", &owner.bearer())
        .await;
    assert_eq!(audit.status, 200, "{}", audit.text);
    let trail: Vec<(Value, Value, Value)> = audit.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["scope"].clone(),
                c["moved"].clone(),
                c["changed_by"].clone(),
            )
        })
        .collect();
    assert_eq!(
        trail,
        [
            (json!("group"), json!(2), json!("owner@msp.example")),
            (json!("group"), json!(3), json!("owner@msp.example")),
            (json!("default"), json!(5), json!("owner@msp.example")),
        ]
    );
    assert_eq!(
        audit.body["items"][0]["before"]["rules"],
        json!([{"days": 20}])
    );
    assert!(audit.body["items"][2]["before"].is_null());
    assert_eq!(audit.body["total"], 3);

    // Refusals name the field and change nothing.
    for (body, field) in [
        (
            json!({"name": "x", "rules": [{"days": 0}]}),
            "rules[0].days",
        ),
        (json!({"name": "x", "rules": []}), "rules"),
        (
            json!({"name": "x", "rules": [{"days": 5, "severities": ["urgent"]}]}),
            "rules[0].severities",
        ),
        (
            json!({"name": "x", "rules": [{"days": 5}], "due_soon_days": -1}),
            "due_soon_days",
        ),
    ] {
        let refused = put(&app, &owner, "/api/v1/sla/policies/default", body).await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], field, "{}", refused.text);
    }
    put(
        &app,
        &owner,
        "/api/v1/sla/policies/default",
        json!({"name": "x", "rules": [{"days": 5}], "grace": 2}),
    )
    .await
    .assert_error(422);
    put(
        &app,
        &in_acme,
        "/api/v1/sla/tiers",
        json!({"devices": ["A"], "tier": "urgent"}),
    )
    .await
    .assert_error(422);
    put(
        &app,
        &in_acme,
        "/api/v1/sla/tiers",
        json!({"devices": [], "tier": "low"}),
    )
    .await
    .assert_error(422);
    app.get("/api/v1/sla/findings?state=late", &in_acme.bearer())
        .await
        .assert_error(422);
    app.get("/api/v1/sla/standing?days=0", &in_acme.bearer())
        .await
        .assert_error(422);
    let audit_after = app
        .get("/api/v1/sla/policies/changes", &owner.bearer())
        .await;
    assert_eq!(
        audit_after.body["items"].as_array().unwrap().len(),
        3,
        "nothing recorded"
    );

    // Another partner reaches none of it.
    let rival = app.register("rival@other.example").await;
    let rivals_customer = customer(&app, &rival, "Rival's customer").await;
    let contract = json!({"name": "Theirs", "rules": [{"days": 1}]});
    for path in [
        format!("/api/v1/sla/policies/groups/{group}"),
        format!("/api/v1/sla/policies/customers/{acme}"),
    ] {
        put(&app, &rival, &path, contract.clone())
            .await
            .assert_error(404);
        app.delete(&path, &rival.bearer()).await.assert_error(404);
    }
    put(
        &app,
        &owner,
        &format!("/api/v1/sla/policies/customers/{rivals_customer}"),
        contract,
    )
    .await
    .assert_error(404);
    let theirs = app.get("/api/v1/sla/policies", &rival.bearer()).await;
    assert_eq!(theirs.body, json!([]), "{}", theirs.text);
    let theirs = app.get("/api/v1/sla/tiers", &rival.bearer()).await;
    assert_eq!(theirs.body, json!([]), "{}", theirs.text);
    let theirs = app.get("/api/v1/sla/customers", &rival.bearer()).await;
    let names: Vec<&str> = theirs
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Rival's customer"]);
    let theirs = app.get("/api/v1/sla/findings", &rival.bearer()).await;
    assert_eq!(theirs.body["total"], 0);
    let still = app.get("/api/v1/sla/policy", &in_acme.bearer()).await;
    assert_eq!(still.body["policy"]["name"], "Contract");
    // A member who is not an admin may read but not change.
    let member = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;
    put(
        &app,
        &member,
        "/api/v1/sla/policies/default",
        json!({"name": "x", "rules": [{"days": 5}]}),
    )
    .await
    .assert_error(403);
    app.finish().await;
}

/// An RFC 3339 time `days` from the service's clock.
pub(crate) fn days_from_now(app: &TestApp, days: i64) -> String {
    let at = app.server.state.clock.now_ms() + days * 86_400_000;
    chrono::DateTime::from_timestamp_millis(at)
        .unwrap()
        .to_rfc3339()
}

/// The state and exception of the account's open finding of `cve` on
/// `device`.
async fn finding_state(app: &TestApp, who: &Account, cve: &str, device: &str) -> (Value, Value) {
    let page = app.get("/api/v1/sla/findings", &who.bearer()).await;
    let found = page.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["cve_id"] == cve && f["device_name"] == device)
        .unwrap_or_else(|| panic!("{cve} on {device}: {}", page.text))
        .clone();
    (found["sla_state"].clone(), found["exception_id"].clone())
}

async fn exceptions_need_another_approver_and_expire(backend: Backend) {
    let smtp = FakeSmtp::start().await;
    let Some((app, _nvd)) = loaded_with(backend, |s| {
        s.smtp_host = "127.0.0.1".into();
        s.smtp_port = smtp.port;
        s.smtp_security = "none".into();
        s.smtp_from = "Cairn <cairn@example.com>".into();
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let second = app.add_member(&owner, "second@msp.example", "admin").await;
    let analyst = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;
    app.seed(
        &owner,
        "rmm",
        &[zoom("WS-01", "5.9.1"), zoom("WS-02", "5.9.1")],
    )
    .await;
    app.rebuild(&owner).await;
    scan(&app, &owner, json!({})).await;
    let cve = "CVE-2022-22784";
    let request = |devices: Value, expires: String| {
        json!({"cve_id": cve, "devices": devices, "reason": "kiosk, replaced in March",
               "compensating_control": "no inbound calls", "expires_at": expires})
    };

    // Refusals name the field and write nothing.
    for (body, field) in [
        (
            request(json!(["WS-01"]), days_from_now(&app, -1)),
            "expires_at",
        ),
        (
            request(json!(["WS-01"]), days_from_now(&app, 91)),
            "expires_at",
        ),
        (request(json!(["WS-01"]), "next week".into()), "expires_at"),
        (
            request(json!(["WS-99"]), days_from_now(&app, 30)),
            "devices",
        ),
        (
            json!({"cve_id": "CVE-2021-44228", "reason": "x", "expires_at": days_from_now(&app, 30)}),
            "cve_id",
        ),
        (
            json!({"cve_id": cve, "reason": " ", "expires_at": days_from_now(&app, 30)}),
            "reason",
        ),
    ] {
        let refused = app
            .post("/api/v1/sla/exceptions", &analyst.bearer(), body)
            .await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], field, "{}", refused.text);
    }
    let listed = app.get("/api/v1/sla/exceptions", &owner.bearer()).await;
    assert_eq!(listed.body["items"], json!([]), "{}", listed.text);
    assert_eq!(listed.body["total"], 0, "{}", listed.text);

    // The analyst asks for WS-01; only another admin may decide.
    let asked = app
        .post(
            "/api/v1/sla/exceptions",
            &analyst.bearer(),
            request(json!(["ws-01"]), days_from_now(&app, 30)),
        )
        .await;
    assert_eq!(asked.status, 201, "{}", asked.text);
    assert_eq!(asked.body["status"], "pending");
    assert_eq!(asked.body["requested_by"], "analyst@msp.example");
    let id = asked.body["id"].as_str().unwrap().to_string();
    let decide = |id: &str| format!("/api/v1/sla/exceptions/{id}/decision");
    app.post(&decide(&id), &analyst.bearer(), json!({"approve": true}))
        .await
        .assert_error(403);
    assert_eq!(
        finding_state(&app, &owner, cve, "WS-01").await.1,
        Value::Null,
        "pending: still due"
    );

    // The owner's own request for WS-02 is the second admin's to decide.
    let own = app
        .post(
            "/api/v1/sla/exceptions",
            &owner.bearer(),
            request(json!(["WS-02"]), days_from_now(&app, 30)),
        )
        .await;
    let own_id = own.body["id"].as_str().unwrap().to_string();
    let refused = app
        .post(&decide(&own_id), &owner.bearer(), json!({"approve": true}))
        .await;
    refused.assert_error(403);
    assert_eq!(
        refused.body["detail"],
        "no one decides an exception they requested"
    );
    let rejected = app
        .post(
            &decide(&own_id),
            &second.bearer(),
            json!({"approve": false, "comment": "patch it"}),
        )
        .await;
    assert_eq!(rejected.body["status"], "rejected", "{}", rejected.text);
    assert_eq!(rejected.body["decided_by"], "second@msp.example");

    let approved = app
        .post(
            &decide(&id),
            &owner.bearer(),
            json!({"approve": true, "comment": "ok until March"}),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    assert_eq!(approved.body["status"], "approved");
    app.post(&decide(&id), &second.bearer(), json!({"approve": false}))
        .await
        .assert_error(409);
    assert_eq!(
        finding_state(&app, &owner, cve, "WS-01").await,
        (json!("excepted"), json!(id))
    );
    let (ws02, none) = finding_state(&app, &owner, cve, "WS-02").await;
    assert_ne!(ws02, "excepted");
    assert_eq!(none, Value::Null);
    let standing = app.get("/api/v1/sla/standing", &owner.bearer()).await;
    assert_eq!(standing.body["excepted"], 1, "{}", standing.text);

    // A week before it ends, the requester hears of it, once.
    let state = &app.server.state;
    let remind = async || {
        cairn_workflow::sla::exceptions::send_reminders(
            app.db(),
            &state.mailer,
            state.clock.now_ms(),
        )
        .await
        .unwrap()
    };
    state.clock.advance(22 * DAY);
    assert_eq!(remind().await, 0, "eight days left: not yet");
    state.clock.advance(2 * DAY);
    assert_eq!(remind().await, 1);
    assert_eq!(remind().await, 0, "told once");
    let mails: Vec<_> = smtp
        .mails()
        .into_iter()
        .filter(|m| m.data.contains("SLA exception"))
        .collect();
    assert_eq!(mails.len(), 1, "besides the invitations");
    assert!(
        mails[0].to[0].contains("analyst@msp.example"),
        "{:?}",
        mails[0].to
    );
    assert!(mails[0].data.contains(cve), "{}", mails[0].data);

    // Past its expiry the exception reads expired and WS-01 is due again.
    state.clock.advance(7 * DAY);
    let shown = app
        .get(&format!("/api/v1/sla/exceptions/{id}"), &owner.bearer())
        .await;
    assert_eq!(shown.body["status"], "expired", "{}", shown.text);
    let (state, exception) = finding_state(&app, &owner, cve, "WS-01").await;
    assert_ne!(state, "excepted");
    assert_eq!(exception, Value::Null);
    let standing = app.get("/api/v1/sla/standing", &owner.bearer()).await;
    assert_eq!(standing.body["excepted"], 0, "{}", standing.text);

    // The register says who asked, who decided, when and why, in each
    // format, as the API shows it at the same moment.
    for format in ["csv", "xlsx", "pdf"] {
        let body = json!({"report_type": "exception_register", "format": format});
        let report = generate(&app, &owner, body).await;
        assert_eq!(report["status"], "success", "{report}");
        let (_, _, bytes) = download(&app, &owner, report["id"].as_str().unwrap()).await;
        let rows: Vec<Vec<String>> = match format {
            "csv" => csv::Reader::from_reader(bytes.as_slice())
                .records()
                .map(|r| r.unwrap().iter().map(str::to_string).collect())
                .collect(),
            "xlsx" => {
                use calamine::Reader;
                let mut book: calamine::Xlsx<_> =
                    calamine::open_workbook_from_rs(std::io::Cursor::new(bytes)).unwrap();
                let sheet = book.worksheet_range("Exceptions").unwrap();
                sheet
                    .rows()
                    .skip(1)
                    .map(|r| r.iter().map(|c| c.to_string()).collect())
                    .collect()
            }
            _ => {
                let text = pdf_text(&bytes)
                    .split_whitespace()
                    .collect::<Vec<_>>()
                    .join(" ");
                for expected in [
                    "SLA exception register",
                    "Exceptions expired 1",
                    "Exceptions rejected 1",
                    "rejected",
                    "expired",
                    "patch it",
                ] {
                    assert!(text.contains(expected), "{expected:?} in {text}");
                }
                continue;
            }
        };
        let mut rows: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| {
                [0, 1, 2, 3, 5, 7, 9]
                    .iter()
                    .map(|&i| r[i].as_str())
                    .collect()
            })
            .collect();
        rows.sort();
        assert_eq!(
            rows,
            [
                vec![
                    cve,
                    "WS-02",
                    "rejected",
                    "kiosk, replaced in March",
                    "owner@msp.example",
                    "second@msp.example",
                    "patch it"
                ],
                vec![
                    cve,
                    "ws-01",
                    "expired",
                    "kiosk, replaced in March",
                    "analyst@msp.example",
                    "owner@msp.example",
                    "ok until March"
                ],
            ],
            "{format}"
        );
    }

    // Another tenant reaches none of it.
    let other = app.register("other@elsewhere.example").await;
    app.get(&format!("/api/v1/sla/exceptions/{id}"), &other.bearer())
        .await
        .assert_error(404);
    app.post(&decide(&id), &other.bearer(), json!({"approve": true}))
        .await
        .assert_error(404);
    let theirs = app.get("/api/v1/sla/exceptions", &other.bearer()).await;
    assert_eq!(theirs.body["items"], json!([]));
    assert_eq!(theirs.body["total"], 0);
    app.finish().await;
}

/// A partner links a portal client to its customer; the client's key then
/// lists and decides that customer's exceptions, and no other's.
async fn a_customer_decides_its_exceptions_through_the_portal(backend: Backend) {
    let Some((app, _nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let acme = customer(&app, &owner, "Acme").await;
    let globex = customer(&app, &owner, "Globex").await;
    let in_acme = act(&app, &owner, &acme).await;
    replace_and_scan(&app, &in_acme, "acme-1", &[zoom("ACME-01", "5.9.1")]).await;
    let cve = "CVE-2022-22784";
    let asked = app
        .post(
            "/api/v1/sla/exceptions",
            &in_acme.bearer(),
            json!({"cve_id": cve, "reason": "kiosk, replaced in March",
                   "expires_at": days_from_now(&app, 30)}),
        )
        .await;
    assert_eq!(asked.status, 201, "{}", asked.text);
    let id = asked.body["id"].as_str().unwrap().to_string();

    let (acme_client, acme_key) = client_with_key(&app, &owner, "Acme Ltd").await;
    let (globex_client, globex_key) = client_with_key(&app, &owner, "Globex Ltd").await;
    let (_, unlinked_key) = client_with_key(&app, &owner, "Initech Ltd").await;
    let link = |client: &str| format!("/api/v1/portal/clients/{client}/customer");
    // Only the partner's own customers can be linked.
    let rival = app.register("rival@other.example").await;
    for not_ours in [owner.tenant_id.as_str(), rival.tenant_id.as_str()] {
        let refused = put(
            &app,
            &owner,
            &link(&acme_client),
            json!({"customer_id": not_ours}),
        )
        .await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], "customer_id");
    }
    put(
        &app,
        &rival,
        &link(&acme_client),
        json!({"customer_id": null}),
    )
    .await
    .assert_error(404);
    let linked = put(
        &app,
        &owner,
        &link(&acme_client),
        json!({"customer_id": acme}),
    )
    .await;
    assert_eq!(linked.body["customer_id"], acme.as_str(), "{}", linked.text);
    put(
        &app,
        &owner,
        &link(&globex_client),
        json!({"customer_id": globex}),
    )
    .await;

    let listed = app.get("/api/exceptions", &acme_key).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.body[0]["id"], id.as_str());
    assert_eq!(listed.body[0]["cveId"], cve);
    assert_eq!(listed.body[0]["status"], "pending");
    assert_eq!(listed.body[0]["requestedBy"], "owner@msp.example");
    for key in [&globex_key, &unlinked_key] {
        assert_eq!(app.get("/api/exceptions", key).await.body, json!([]));
    }
    let decision = format!("/api/exceptions/{id}/decision");
    for key in [&globex_key, &unlinked_key] {
        app.post(&decision, key, json!({"approve": true}))
            .await
            .assert_error(404);
    }
    app.post(&decision, &acme_key, json!({"approve": "yes"}))
        .await
        .assert_error(422);

    let approved = app
        .post(
            &decision,
            &acme_key,
            json!({"approve": true, "comment": "agreed"}),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    assert_eq!(approved.body["status"], "approved");
    assert_eq!(approved.body["decidedBy"], "Acme Ltd (client portal)");
    app.post(&decision, &acme_key, json!({"approve": false}))
        .await
        .assert_error(409);
    assert_eq!(
        finding_state(&app, &in_acme, cve, "ACME-01").await,
        (json!("excepted"), json!(id))
    );
    app.finish().await;
}

/// The names of the account's devices of `tier`, through the device search.
async fn devices_of_tier(app: &TestApp, who: &Account, tier: &str) -> Vec<String> {
    let query = json!({"query": {"combinator": "and", "rules": [
        {"kind": "rule", "field": "tier", "operator": "equals", "value": tier}]}});
    let page = app
        .post("/api/v1/devices/devices/search", &who.bearer(), query)
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    let mut names: Vec<String> = page.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["tier"], tier, "the device shows its tier: {d}");
            d["device_name"].as_str().unwrap().to_string()
        })
        .collect();
    names.sort();
    names
}

/// `(tier, assets)` of a tier-rules answer.
fn tier_counts(body: &Value) -> Vec<(String, i64)> {
    body["assets_by_tier"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["tier"].as_str().unwrap().to_string(),
                c["assets"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn starting_with(field: &str, prefix: &str) -> Value {
    json!({"combinator": "and", "rules": [
        {"kind": "rule", "field": field, "operator": "starts_with", "value": prefix}]})
}

/// Tiers by rules on device fields (devices that arrive later included),
/// by a device search, and by hand, which wins; shown on the device, in
/// the device search and on the SLA's findings; refusals that name the
/// field; another tenant reaches none of it.
async fn tiers_come_from_rules_searches_and_hands(backend: Backend) {
    let Some((app, _nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    let nginx = |device: &str| software(device, "nginx", "", "1.24.0", "linux");
    let rows = [
        zoom("SRV-DB-01", "5.9.1"),
        zoom("PC-01", "5.9.1"),
        nginx("LNX-01"),
    ];
    replace_and_scan(&app, &admin, "run-1", &rows).await;
    let before = app.get("/api/v1/sla/tier-rules", &admin.bearer()).await;
    assert_eq!(before.status, 200, "{}", before.text);
    assert_eq!(before.body["rules"], json!([]));
    assert_eq!(
        tier_counts(&before.body),
        [
            ("critical".into(), 0),
            ("high".into(), 0),
            ("standard".into(), 3),
            ("low".into(), 0)
        ]
    );

    // Rules on a name pattern and on the OS; the first that matches wins.
    let rules = json!({"rules": [
        {"name": "Servers", "tier": "critical", "query": starting_with("device_name", "srv-")},
        {"name": "Linux", "tier": "low", "query": starting_with("os_platform", "linux")},
    ]});
    let set = put(&app, &admin, "/api/v1/sla/tier-rules", rules).await;
    assert_eq!(set.status, 200, "{}", set.text);
    assert_eq!(set.body["set_by"], "admin@msp.example");
    assert_eq!(
        tier_counts(&set.body),
        [
            ("critical".into(), 1),
            ("high".into(), 0),
            ("standard".into(), 1),
            ("low".into(), 1)
        ]
    );
    assert_eq!(
        devices_of_tier(&app, &admin, "critical").await,
        ["SRV-DB-01"]
    );
    assert_eq!(devices_of_tier(&app, &admin, "low").await, ["LNX-01"]);

    // A server that arrives later takes the rule's tier with its rollup.
    let mut more = rows.to_vec();
    more.push(zoom("SRV-WEB-02", "5.9.1"));
    replace_and_scan(&app, &admin, "run-2", &more).await;
    assert_eq!(
        devices_of_tier(&app, &admin, "critical").await,
        ["SRV-DB-01", "SRV-WEB-02"]
    );

    // By hand wins over a rule; a search sets many by hand at once.
    let hand = put(
        &app,
        &admin,
        "/api/v1/sla/tiers",
        json!({"devices": ["srv-db-01"], "tier": "high"}),
    )
    .await;
    assert_eq!(hand.body["updated"], 1, "{}", hand.text);
    let by_search = app
        .post(
            "/api/v1/sla/tiers/search",
            &admin.bearer(),
            json!({"query": starting_with("device_name", "pc-"), "tier": "low"}),
        )
        .await;
    assert_eq!(by_search.status, 200, "{}", by_search.text);
    assert_eq!(by_search.body["updated"], 1);
    assert_eq!(devices_of_tier(&app, &admin, "high").await, ["SRV-DB-01"]);
    assert_eq!(
        devices_of_tier(&app, &admin, "critical").await,
        ["SRV-WEB-02"]
    );
    assert_eq!(
        devices_of_tier(&app, &admin, "low").await,
        ["LNX-01", "PC-01"]
    );
    let widget = preview(&app, &admin, json!({"metric": "assets_by_tier"})).await;
    assert_eq!(
        categories(&widget).into_iter().collect::<Vec<_>>(),
        [
            ("critical".into(), 1),
            ("high".into(), 1),
            ("low".into(), 2),
            ("standard".into(), 0)
        ]
    );

    // The SLA weighs the same tier.
    let findings = app.get("/api/v1/sla/findings", &admin.bearer()).await;
    let tier_on = |device: &str| -> Vec<Value> {
        findings.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["device_name"] == device)
            .map(|f| f["tier"].clone())
            .collect()
    };
    assert!(!tier_on("SRV-DB-01").is_empty(), "{}", findings.text);
    assert!(tier_on("SRV-DB-01").iter().all(|t| t == "high"));
    assert!(tier_on("SRV-WEB-02").iter().all(|t| t == "critical"));
    assert!(tier_on("PC-01").iter().all(|t| t == "low"));

    // Refusals name the field and change nothing.
    let unknown_field = starting_with("colour", "red");
    for (body, field) in [
        (
            json!({"rules": [{"name": "x", "tier": "high", "query": unknown_field}]}),
            "rules[0].query",
        ),
        (
            json!({"rules": [{"name": " ", "tier": "high", "query": starting_with("device_name", "a")}]}),
            "rules[0].name",
        ),
    ] {
        let refused = put(&app, &admin, "/api/v1/sla/tier-rules", body).await;
        refused.assert_error(422);
        let named = refused.body["field"].as_str().unwrap_or_default();
        assert!(named.starts_with(field), "{field}: {}", refused.text);
    }
    let refused = app
        .post(
            "/api/v1/sla/tiers/search",
            &admin.bearer(),
            json!({"query": starting_with("colour", "red"), "tier": "low"}),
        )
        .await;
    refused.assert_error(422);
    assert!(refused.body["field"].as_str().unwrap().starts_with("query"));
    let kept = app.get("/api/v1/sla/tier-rules", &admin.bearer()).await;
    assert_eq!(
        kept.body["rules"].as_array().unwrap().len(),
        2,
        "{}",
        kept.text
    );

    // Another tenant sees and changes none of it; a member only reads.
    let rival = app.register("rival@other.example").await;
    let theirs = app.get("/api/v1/sla/tier-rules", &rival.bearer()).await;
    assert_eq!(theirs.body["rules"], json!([]));
    assert!(tier_counts(&theirs.body).iter().all(|(_, n)| *n == 0));
    let reached = app
        .post(
            "/api/v1/sla/tiers/search",
            &rival.bearer(),
            json!({"query": starting_with("device_name", "srv-"), "tier": "low"}),
        )
        .await;
    assert_eq!(reached.body["updated"], 0, "{}", reached.text);
    put(&app, &rival, "/api/v1/sla/tier-rules", json!({"rules": []})).await;
    assert_eq!(
        devices_of_tier(&app, &admin, "critical").await,
        ["SRV-WEB-02"]
    );
    let member = app
        .add_member(&admin, "analyst@msp.example", "member")
        .await;
    put(
        &app,
        &member,
        "/api/v1/sla/tier-rules",
        json!({"rules": []}),
    )
    .await
    .assert_error(403);

    // Without rules, what was set by hand stays and the rest is standard.
    put(&app, &admin, "/api/v1/sla/tier-rules", json!({"rules": []})).await;
    assert_eq!(
        devices_of_tier(&app, &admin, "critical").await,
        Vec::<String>::new()
    );
    assert_eq!(devices_of_tier(&app, &admin, "low").await, ["PC-01"]);
    assert_eq!(
        devices_of_tier(&app, &admin, "standard").await,
        ["LNX-01", "SRV-WEB-02"]
    );
    app.finish().await;
}

/// Tier rules on the RMM group a device is in and on a scanner's tags:
/// the device shows its groups, the rules follow a device moved to
/// another group with the next rollup, and another tenant's rules reach
/// none of it.
async fn tiers_follow_rmm_groups_and_scanner_tags(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    let in_groups = |device: &str, groups: &[&str]| {
        let MappedRow::Inventory(mut row) = cairn_tests::inventory::item(
            device,
            "Zoom",
            "Zoom Video Communications",
            "5.9.1",
            "windows",
        ) else {
            unreachable!("an inventory row")
        };
        row.group_ids = groups.iter().map(|g| (*g).into()).collect();
        MappedRow::Inventory(row)
    };
    app.seed(
        &admin,
        "rmm",
        &[
            in_groups("DC-01", &["12"]),
            in_groups("PC-01", &["7", "30"]),
            in_groups("PC-02", &[]),
        ],
    )
    .await;
    let tagged = cairn_tests::inventory::device_record(
        "PC-02",
        json!({"name": "PC-02", "hostname": "pc-02.corp.example", "tags": ["PCI", "Finance"]}),
    );
    app.seed(&admin, "scanner", &[tagged]).await;
    app.rebuild(&admin).await;

    let device = app
        .get("/api/v1/devices/by-name/PC-01", &admin.bearer())
        .await;
    assert_eq!(device.status, 200, "{}", device.text);
    assert_eq!(device.body["group_ids"], json!(["30", "7"]));

    let equals = |field: &str, value: &str| {
        json!({"combinator": "and", "rules": [
            {"kind": "rule", "field": field, "operator": "equals", "value": value}]})
    };
    let rules = json!({"rules": [
        {"name": "Domain controllers", "tier": "critical", "query": equals("group_id", "12")},
        {"name": "Card data", "tier": "high", "query": equals("scan.tags", "pci")},
        {"name": "Kiosks", "tier": "low", "query": equals("group_id", "30")},
    ]});
    let set = put(&app, &admin, "/api/v1/sla/tier-rules", rules).await;
    assert_eq!(set.status, 200, "{}", set.text);
    assert_eq!(devices_of_tier(&app, &admin, "critical").await, ["DC-01"]);
    assert_eq!(devices_of_tier(&app, &admin, "high").await, ["PC-02"]);
    assert_eq!(devices_of_tier(&app, &admin, "low").await, ["PC-01"]);

    // PC-01 moves to the domain controllers' group at the RMM: its next
    // sync rewrites its rows and the rollup after it re-tiers it.
    app.seed(&admin, "rmm", &[in_groups("PC-01", &["12"])])
        .await;
    app.rebuild(&admin).await;
    assert_eq!(
        devices_of_tier(&app, &admin, "critical").await,
        ["DC-01", "PC-01"]
    );
    assert!(devices_of_tier(&app, &admin, "low").await.is_empty());

    // Another tenant with the same rules and no devices tiers nothing of
    // ours, and its search by group finds none of our devices.
    let rival = app.register("rival@other.example").await;
    let theirs = json!({"rules": [
        {"name": "Group 12", "tier": "low", "query": equals("group_id", "12")}]});
    put(&app, &rival, "/api/v1/sla/tier-rules", theirs).await;
    assert!(devices_of_tier(&app, &rival, "low").await.is_empty());
    assert_eq!(
        devices_of_tier(&app, &admin, "critical").await,
        ["DC-01", "PC-01"]
    );
    app.finish().await;
}
