//! Remediation over HTTP against the ConnectWise Automate fake: a plan for
//! a Chrome CVE (a draft that sends nothing), its approval, the scripts
//! scheduled through the rmm connector (contract 0.4), and the verdict of
//! the next sync: fixed where the inventory shows the fixed version,
//! `remediation_failed` where the RMM said success but the inventory did
//! not change, and no device remediated beyond the attempt limit.
//! Refusals, roles and isolation of every route.

use std::time::Duration;

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_ninjaone::{self, FakeNinjaOne, NinjaData};
use cairn_tests::fake_psa::{FakePsa, PsaData};
use cairn_tests::fake_rmm::{apps, computer, FakeRmm, RmmData, ScriptOutcome};
use cairn_tests::fake_webhooks::FakeWebhooks;
use cairn_tests::{backend_tests, wait_until, Account, Backend, TestApp};
use serde_json::{json, Value};

use super::automation::{notes_of, psa_config, tickets_of};
use super::partner::{act, customer};
use super::portal::client_with_key;
use super::reports::{download, generate, pdf_text};
use super::rmm::configure;
use super::sla::days_from_now;
use super::vulnerabilities::{loaded_with, scan};

backend_tests!(
    a_plan_is_approved_run_and_verified_by_the_next_sync,
    a_customer_approves_its_plans_through_the_portal,
    a_second_rmm_remediates_through_ninjaone,
);

const CVE: &str = "CVE-2023-2033";
const VULNERABLE: &str = "112.0.5615.49";
const UPDATE_SCRIPT: i64 = 6001;
const LIMIT: Duration = Duration::from_secs(60);

/// Six Acme computers with a vulnerable Chrome: 103 fails silently (its
/// script reports success and changes nothing), 105 has not been heard
/// from in ten days, 106 is excepted by the test.
fn fake_data() -> RmmData {
    let mut data = RmmData {
        clients: vec![json!({"Id": 1, "Name": "Acme"})],
        ..RmmData::default()
    };
    let recently = (chrono::Utc::now() - chrono::Duration::hours(1))
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string();
    let long_ago = (chrono::Utc::now() - chrono::Duration::days(10))
        .format("%Y-%m-%dT%H:%M:%S")
        .to_string();
    for id in 101..=106 {
        let mut found = computer(id, &format!("ACME-WS-0{}", id - 100), (1, "Acme"), &[]);
        found["RemoteAgentLastContact"] = json!(if id == 105 { &long_ago } else { &recently });
        data.computers.push(found);
        data.software.insert(
            id,
            apps(&[
                ("Google Chrome", VULNERABLE),
                ("7-Zip 23.01 (x64)", "23.01"),
            ]),
        );
    }
    data.script_outcomes
        .insert(103, ScriptOutcome::SilentlyFails);
    data
}

async fn sync_and_match(app: &TestApp, admin: &Account) {
    let started = app
        .post("/api/v1/rmm/sync", &admin.bearer(), json!({}))
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let job = app
        .wait_for_job(admin, started.body["job_id"].as_str().unwrap())
        .await;
    assert_eq!(job["status"], "success", "{job}");
    app.rebuild(admin).await;
    scan(app, admin, json!({})).await;
}

async fn plan(app: &TestApp, who: &Account, id: &str) -> Value {
    let plan = app
        .get(&format!("/api/v1/remediation/plans/{id}"), &who.bearer())
        .await;
    assert_eq!(plan.status, 200, "{}", plan.text);
    plan.body
}

/// Each item's device and state, by device.
fn states(plan: &Value) -> Vec<(String, String)> {
    plan["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["device_name"].as_str().unwrap().to_string(),
                i["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn item<'a>(plan: &'a Value, device: &str) -> &'a Value {
    plan["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["device_name"] == device)
        .unwrap_or_else(|| panic!("no item for {device} in {plan}"))
}

async fn new_plan(app: &TestApp, who: &Account) -> Value {
    let made = app
        .post(
            "/api/v1/remediation/plans",
            &who.bearer(),
            json!({"cve_id": CVE}),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text);
    made.body
}

/// Approves the plan and waits until no item is under way upstream.
async fn approve_and_wait(app: &TestApp, admin: &Account, id: &str) -> Value {
    let approved = app
        .post(
            &format!("/api/v1/remediation/plans/{id}/approve"),
            &admin.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    // What the approval made, whatever step the run has reached since.
    assert_eq!(
        approved.body["plan"]["status"], "approved",
        "{}",
        approved.text
    );
    wait_until("the RMM's reports", LIMIT, async || {
        let now = plan(app, admin, id).await;
        let counts = &now["plan"]["counts"];
        match (counts["planned"].as_i64(), counts["in_progress"].as_i64()) {
            (Some(0), Some(0)) => Ok(now),
            _ => Err(now.to_string()),
        }
    })
    .await
}

/// Waits until the plan is done (every item settled by an inventory).
async fn done(app: &TestApp, admin: &Account, id: &str) -> Value {
    wait_until("the plan's verdicts", LIMIT, async || {
        let now = plan(app, admin, id).await;
        match now["plan"]["status"].as_str() {
            Some("done") => Ok(now),
            _ => Err(now.to_string()),
        }
    })
    .await
}

async fn a_plan_is_approved_run_and_verified_by_the_next_sync(backend: Backend) {
    let rmm = FakeRmm::start(fake_data()).await;
    let hooks = FakeWebhooks::start("whsec-remediation-tests-0123456789").await;
    let psa = FakePsa::start(PsaData::default()).await;
    let dir = connectors_dir(&["connectors/rmm", "connectors/psa"], &[]);
    let Some((app, _nvd)) = loaded_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.remediation_sweep_ms = 200;
        s.automation_sweep_ms = 200;
        s.report_schedule_sweep_ms = 200;
        s.job_poll_interval_ms = 50;
    })
    .await
    else {
        return;
    };
    let admin = app.register("admin@msp.example").await;
    let analyst = app
        .add_member(&admin, "analyst@msp.example", "member")
        .await;
    let second = app.add_member(&admin, "second@msp.example", "admin").await;

    // Before rmm is configured there is nothing to remediate through.
    let refused = app
        .post(
            "/api/v1/remediation/plans",
            &admin.bearer(),
            json!({"cve_id": CVE}),
        )
        .await;
    refused.assert_error(409);
    assert!(refused.body["detail"].as_str().unwrap().contains("rmm"));

    configure(
        &app,
        &admin,
        &rmm,
        json!({"update_script_id": UPDATE_SCRIPT}),
    )
    .await;
    sync_and_match(&app, &admin).await;

    // ACME-WS-06 is excepted.
    let asked = app
        .post(
            "/api/v1/sla/exceptions",
            &analyst.bearer(),
            json!({"cve_id": CVE, "devices": ["ACME-WS-06"], "reason": "kiosk, replaced next month",
                   "expires_at": days_from_now(&app, 30)}),
        )
        .await;
    assert_eq!(asked.status, 201, "{}", asked.text);
    let decided = app
        .post(
            &format!(
                "/api/v1/sla/exceptions/{}/decision",
                asked.body["id"].as_str().unwrap()
            ),
            &admin.bearer(),
            json!({"approve": true}),
        )
        .await;
    assert_eq!(decided.status, 200, "{}", decided.text);

    // Automation hears of a remediation the inventory disproves.
    let slack = format!("{}/slack/services/T000/B000/XXXX", hooks.base);
    let rule = app
        .post(
            "/api/v1/automation/rules",
            &admin.bearer(),
            json!({"name": "Failed remediations", "trigger": {"kind": "remediation_failed"},
                   "actions": [{"type": "webhook", "url": slack, "format": "slack"}]}),
        )
        .await;
    assert_eq!(rule.status, 201, "{}", rule.text);
    // And the PSA ticket a KEV rule opened for the CVE hears how each
    // device's remediation ended.
    let saved = app
        .post("/api/v1/psa/config", &admin.bearer(), psa_config(&psa.site))
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let rule = app
        .post(
            "/api/v1/automation/rules",
            &admin.bearer(),
            json!({"name": "KEV tickets", "trigger": {"kind": "kev_added"},
                   "include_existing": true, "max_tickets_per_run": 100,
                   "actions": [{"type": "ticket", "company_id": 2, "close_status_id": 5}]}),
        )
        .await;
    assert_eq!(rule.status, 201, "{}", rule.text);
    let ticket = wait_until("the CVE's ticket", LIMIT, async || {
        match tickets_of(&psa, CVE).as_slice() {
            [ticket] => Ok(ticket.clone()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;

    // Refusals name the field and make nothing.
    for (body, field) in [
        (json!({}), "cve_id"),
        (json!({"cve_id": "CVE-23-1"}), "cve_id"),
        (json!({"cve_id": CVE, "extra": 1}), "extra"),
        (
            json!({"devices": {"kind": "group", "combinator": "and", "rules": [
                {"kind": "rule", "field": "no_such_field", "operator": "equals", "value": "x"}]}}),
            "devices",
        ),
    ] {
        let refused = app
            .post("/api/v1/remediation/plans", &analyst.bearer(), body)
            .await;
        refused.assert_error(422);
        assert!(
            refused.body["field"]
                .as_str()
                .unwrap_or_default()
                .starts_with(field),
            "{}",
            refused.text
        );
    }

    // The analyst's plan is a dry run: each device's update or why not,
    // and nothing sent to Automate.
    let draft = new_plan(&app, &analyst).await;
    let id = draft["plan"]["id"].as_str().unwrap().to_string();
    assert_eq!(draft["plan"]["status"], "draft");
    assert_eq!(draft["plan"]["counts"]["planned"], 4, "{draft}");
    assert_eq!(draft["plan"]["counts"]["skipped"], 2, "{draft}");
    let fixes = app
        .get(
            &format!("/api/v1/vulnerabilities/cve/{CVE}/devices"),
            &admin.bearer(),
        )
        .await;
    let fix_version = fixes.body["items"][0]["fix_version"]
        .as_str()
        .unwrap_or_else(|| panic!("the CVE's fix version: {}", fixes.text))
        .to_string();
    for n in [1, 2, 3, 4] {
        let planned = item(&draft, &format!("ACME-WS-0{n}"));
        assert_eq!(planned["state"], "planned", "{planned}");
        assert_eq!(planned["action"], "update_package");
        assert_eq!(planned["target_version"], fix_version.as_str());
        assert_eq!(planned["version"], VULNERABLE);
        assert_eq!(planned["cve_ids"], json!([CVE]));
    }
    let offline = item(&draft, "ACME-WS-05");
    assert_eq!(offline["state"], "skipped");
    assert!(
        offline["reason"]
            .as_str()
            .unwrap()
            .starts_with("offline: the RMM last heard from it"),
        "{offline}"
    );
    let excepted = item(&draft, "ACME-WS-06");
    assert_eq!(excepted["state"], "skipped");
    assert!(
        excepted["reason"].as_str().unwrap().starts_with("excepted"),
        "{excepted}"
    );
    assert!(rmm.schedules().is_empty(), "a draft sends nothing");

    // Only an admin approves; another tenant reaches none of it.
    app.post(
        &format!("/api/v1/remediation/plans/{id}/approve"),
        &analyst.bearer(),
        json!({}),
    )
    .await
    .assert_error(403);
    let other = app.register("other@elsewhere.example").await;
    for (method, path) in [
        (
            reqwest::Method::GET,
            format!("/api/v1/remediation/plans/{id}"),
        ),
        (
            reqwest::Method::POST,
            format!("/api/v1/remediation/plans/{id}/approve"),
        ),
        (
            reqwest::Method::POST,
            format!("/api/v1/remediation/plans/{id}/cancel"),
        ),
    ] {
        app.call(method, &path, &other.bearer(), Some(json!({})))
            .await
            .assert_error(404);
    }
    let theirs = app.get("/api/v1/remediation/plans", &other.bearer()).await;
    assert_eq!(theirs.body["total"], 0, "{}", theirs.text);
    let refused = app
        .post(
            "/api/v1/remediation/plans",
            &other.bearer(),
            json!({"cve_id": CVE}),
        )
        .await;
    refused.assert_error(409);
    assert!(rmm.schedules().is_empty());

    // Approved: four scripts scheduled, each once, with the package and
    // the fixed version; Automate reports success for all four.
    let reported = approve_and_wait(&app, &second, &id).await;
    assert_eq!(reported["plan"]["approved_by"], "second@msp.example");
    assert_eq!(
        reported["plan"]["counts"]["awaiting_inventory"], 4,
        "{reported}"
    );
    let schedules = rmm.schedules();
    assert_eq!(schedules.len(), 4, "{schedules:?}");
    let mut computers: Vec<i64> = schedules
        .iter()
        .map(|s| s["ComputerId"].as_i64().unwrap())
        .collect();
    computers.sort();
    assert_eq!(computers, vec![101, 102, 103, 104]);
    for schedule in &schedules {
        assert_eq!(schedule["ScriptId"], UPDATE_SCRIPT);
        assert_eq!(
            schedule["Parameters"],
            format!("Package=Google Chrome|Version={fix_version}")
        );
    }
    assert!(item(&reported, "ACME-WS-03")["upstream_report"]
        .as_str()
        .unwrap()
        .contains("updated"));
    // Success reported is not a fix: the findings are open until an
    // inventory shows otherwise.
    let open = app
        .get(
            &format!("/api/v1/vulnerabilities/cve/{CVE}/devices?status=open"),
            &admin.bearer(),
        )
        .await;
    assert_eq!(open.body["total"], 6, "{}", open.text);

    // The next sync decides: three fixed, one disproved with both facts.
    sync_and_match(&app, &admin).await;
    let verified = done(&app, &admin, &id).await;
    let mut settled = states(&verified);
    settled.sort();
    assert_eq!(
        settled,
        [
            ("ACME-WS-01", "fixed"),
            ("ACME-WS-02", "fixed"),
            ("ACME-WS-03", "remediation_failed"),
            ("ACME-WS-04", "fixed"),
            ("ACME-WS-05", "skipped"),
            ("ACME-WS-06", "skipped"),
        ]
        .map(|(d, s)| (d.to_string(), s.to_string()))
    );
    let failed = item(&verified, "ACME-WS-03");
    let reason = failed["reason"].as_str().unwrap();
    assert!(
        reason.contains("the RMM reported success")
            && reason.contains(&format!("still shows Google Chrome {VULNERABLE}")),
        "{reason}"
    );
    assert!(failed["verified_at"].is_string() && failed["decided_at"].is_string());
    let open = app
        .get(
            &format!("/api/v1/vulnerabilities/cve/{CVE}/devices?status=open"),
            &admin.bearer(),
        )
        .await;
    let mut still: Vec<&str> = open.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["device_name"].as_str().unwrap())
        .collect();
    still.sort();
    assert_eq!(still, ["ACME-WS-03", "ACME-WS-05", "ACME-WS-06"]);

    // The failure reaches the rule's Slack channel once (events are read
    // on the automation's next run: any findings change, hourly, or asked).
    for _ in 0..2 {
        let queued = app
            .post("/api/v1/automation/run", &admin.bearer(), json!({}))
            .await;
        assert_eq!(queued.status, 202, "{}", queued.text);
        let job = app
            .wait_for_job(&admin, queued.body["job_id"].as_str().unwrap())
            .await;
        assert_eq!(job["status"], "success", "{job}");
    }
    let told = wait_until("the rule's message", LIMIT, async || {
        let about: Vec<String> = hooks
            .received("slack")
            .iter()
            .filter_map(|p| p.body["text"].as_str())
            .filter(|t| t.contains("ACME-WS-03"))
            .map(String::from)
            .collect();
        match about.len() {
            0 => Err("no message yet".to_string()),
            _ => Ok(about),
        }
    })
    .await;
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].contains(&format!(
            "the remediation of Google Chrome {VULNERABLE} on ACME-WS-03 ({CVE}) failed"
        )),
        "{told:?}"
    );
    // The ticket hears each of the four verdicts once (in one note, or
    // two if a run fell between the verdicts); excepted and offline
    // devices were never tried; it stays open, ACME-WS-03 still has it.
    let devices = ["ACME-WS-01", "ACME-WS-02", "ACME-WS-03", "ACME-WS-04"];
    let notes = wait_until("the ticket's notes", LIMIT, async || {
        let text: String = notes_of(&psa, &ticket)
            .iter()
            .filter_map(|n| n["text"].as_str())
            .filter(|t| t.starts_with("Cairn remediation"))
            .collect::<Vec<_>>()
            .join("\n");
        match devices.iter().all(|d| text.contains(&format!(" on {d}: "))) {
            true => Ok(text),
            false => Err(text),
        }
    })
    .await;
    for device in devices {
        assert_eq!(
            notes.matches(&format!(" on {device}: ")).count(),
            1,
            "{notes}"
        );
    }
    for device in ["ACME-WS-01", "ACME-WS-02", "ACME-WS-04"] {
        assert!(
            notes.contains(&format!("Google Chrome {VULNERABLE} on {device}: fixed")),
            "{device}: {notes}"
        );
    }
    assert!(
        notes.contains(&format!(
            "Google Chrome {VULNERABLE} on ACME-WS-03: remediation failed: the RMM reported success"
        )),
        "{notes}"
    );
    assert!(!notes.contains("ACME-WS-05") && !notes.contains("ACME-WS-06"));
    let closing = notes_of(&psa, &ticket).iter().any(|n| {
        n["text"]
            .as_str()
            .unwrap_or("")
            .contains("fixed or excepted")
    });
    assert!(!closing, "ACME-WS-03 keeps the ticket open");

    // A done plan is neither approved nor cancelled again.
    app.post(
        &format!("/api/v1/remediation/plans/{id}/approve"),
        &admin.bearer(),
        json!({}),
    )
    .await
    .assert_error(409);

    // No install loop: ACME-WS-03 is tried once more (the limit is two),
    // then left out with the reason.
    let again = new_plan(&app, &admin).await;
    assert_eq!(item(&again, "ACME-WS-03")["state"], "planned", "{again}");
    let second_id = again["plan"]["id"].as_str().unwrap().to_string();
    approve_and_wait(&app, &second, &second_id).await;
    sync_and_match(&app, &admin).await;
    let verified = done(&app, &admin, &second_id).await;
    assert_eq!(item(&verified, "ACME-WS-03")["state"], "remediation_failed");
    let third = new_plan(&app, &admin).await;
    let spent = item(&third, "ACME-WS-03");
    assert_eq!(spent["state"], "skipped", "{third}");
    assert!(
        spent["reason"]
            .as_str()
            .unwrap()
            .starts_with("remediated 2 times already without a fix"),
        "{spent}"
    );
    let on_103 = rmm
        .schedules()
        .iter()
        .filter(|s| s["ComputerId"] == 103)
        .count();
    assert_eq!(on_103, 2, "no more than the limit");

    // A draft can be cancelled; the list shows the three plans, newest first.
    let third_id = third["plan"]["id"].as_str().unwrap();
    let cancelled = app
        .post(
            &format!("/api/v1/remediation/plans/{third_id}/cancel"),
            &admin.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(cancelled.status, 200, "{}", cancelled.text);
    assert_eq!(cancelled.body["plan"]["status"], "cancelled");
    let listed = app
        .get("/api/v1/remediation/plans?limit=2", &analyst.bearer())
        .await;
    assert_eq!(listed.body["total"], 3, "{}", listed.text);
    assert_eq!(listed.body["items"][0]["id"], third_id);
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 2);
    app.get("/api/v1/remediation/plans?limit=0", &admin.bearer())
        .await
        .assert_error(422);

    evidence_pack_matches_the_api(&app, &admin).await;
    evidence_pack_reaches_the_client_on_a_schedule(&app, &admin).await;
    app.finish().await;
}

/// A monthly evidence pack published to a portal client: the first is
/// written now and joins that client's documents, which it downloads with
/// its key; another client sees none of it.
async fn evidence_pack_reaches_the_client_on_a_schedule(app: &TestApp, admin: &Account) {
    let (client, key) = client_with_key(app, admin, "Acme Ltd").await;
    let (_, other_key) = client_with_key(app, admin, "Globex Ltd").await;
    let schedule = |publish_to: &str| {
        json!({"report_type": "evidence_pack", "format": "pdf", "every_days": 30,
               "scope": {"period_days": 90}, "publish_to_portal_client": publish_to})
    };
    let refused = app
        .post(
            "/api/v1/reports/schedules",
            &admin.bearer(),
            schedule("no-such-client"),
        )
        .await;
    refused.assert_error(422);
    assert_eq!(refused.body["field"], "publish_to_portal_client");
    let made = app
        .post(
            "/api/v1/reports/schedules",
            &admin.bearer(),
            schedule(&client),
        )
        .await;
    assert_eq!(made.status, 201, "{}", made.text);
    let file = wait_until("the published evidence pack", LIMIT, async || {
        let files = app.get("/api/files", &key).await;
        match files.body.as_array().and_then(|f| f.first()) {
            Some(file) => Ok(file.clone()),
            None => Err(files.text),
        }
    })
    .await;
    assert!(
        file["name"].as_str().unwrap().starts_with("evidence-pack-"),
        "{file}"
    );
    assert_eq!(app.get("/api/files", &other_key).await.body, json!([]));
    let id = file["id"].as_str().unwrap();
    app.get(&format!("/api/files/{id}/download"), &other_key)
        .await
        .assert_error(404);
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
    let text = pdf_text(&fetched.bytes().await.unwrap());
    assert!(text.contains("Vulnerability management evidence"), "{text}");
    assert!(
        text.contains("Remediations verified fixed by inventory"),
        "{text}"
    );
    // The report records where it went; the schedule's next one is a month on.
    let reports = app.get("/api/v1/reports/", &admin.bearer()).await;
    let published = reports.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["publish_to_portal_client"] == client.as_str())
        .unwrap_or_else(|| panic!("{}", reports.text))
        .clone();
    assert_eq!(published["published_document_id"], id, "{published}");
    let schedules = app.get("/api/v1/reports/schedules", &admin.bearer()).await;
    let next = schedules.body[0]["next_at"].as_str().unwrap();
    let next = chrono::DateTime::parse_from_rfc3339(next).unwrap();
    let days = (next.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_days();
    assert!((29..=30).contains(&days), "{}", schedules.text);
    assert_eq!(
        app.get("/api/v1/reports/", &admin.bearer()).await.body["total"],
        reports.body["total"],
        "one report per period, not one per sweep"
    );
}

/// The evidence pack, read back from its PDF (pdftotext) and its XLSX
/// (calamine), says what the API says: the SLA standing, the exceptions
/// in force and the remediation outcomes summed over the plans.
async fn evidence_pack_matches_the_api(app: &TestApp, admin: &Account) {
    let standing = app
        .get("/api/v1/sla/standing?days=90", &admin.bearer())
        .await;
    assert_eq!(standing.status, 200, "{}", standing.text);
    let plans = app
        .get("/api/v1/remediation/plans", &admin.bearer())
        .await
        .body;
    let summed = |state: &str| -> i64 {
        plans["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                p["plan"]["counts"][state]
                    .as_i64()
                    .or(p["counts"][state].as_i64())
                    .unwrap_or(0)
            })
            .sum()
    };
    let exceptions = app.get("/api/v1/sla/exceptions", &admin.bearer()).await;
    let in_force = exceptions.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["status"] == "approved")
        .count();
    let expected: Vec<(&str, String)> = vec![
        (
            "Open findings overdue",
            standing.body["overdue"].to_string(),
        ),
        (
            "Open findings excepted",
            standing.body["excepted"].to_string(),
        ),
        ("Exceptions in force", in_force.to_string()),
        (
            "Remediations verified fixed by inventory",
            summed("fixed").to_string(),
        ),
        (
            "Remediations the next inventory disproved",
            summed("remediation_failed").to_string(),
        ),
        (
            "Remediations started in the last 90 days",
            (summed("fixed") + summed("remediation_failed") + summed("failed")).to_string(),
        ),
    ];
    assert_eq!(summed("fixed"), 3);
    assert_eq!(summed("remediation_failed"), 2);
    for format in ["pdf", "xlsx"] {
        let made = generate(
            app,
            admin,
            json!({"report_type": "evidence_pack", "format": format, "scope": {"period_days": 90}}),
        )
        .await;
        assert_eq!(made["status"], "success", "{made}");
        let (_, _, bytes) = download(app, admin, made["id"].as_str().unwrap()).await;
        let read: Vec<(String, String)> = match format {
            "pdf" => {
                let text = pdf_text(&bytes);
                for heading in [
                    "Vulnerability management evidence",
                    "SLA compliance by severity",
                    "SLA compliance by tier",
                    "Remediation outcomes",
                    "Coverage",
                    "What each figure answers",
                    "A.8.8 Management of technical",
                ] {
                    assert!(text.contains(heading), "{heading:?} in {text}");
                }
                expected
                    .iter()
                    .map(|(label, _)| {
                        let line = text
                            .lines()
                            .find(|l| l.trim_start().starts_with(label))
                            .unwrap_or_else(|| panic!("{label:?} in {text}"));
                        let value = line.trim_start()[label.len()..].trim().to_string();
                        (label.to_string(), value)
                    })
                    .collect()
            }
            _ => {
                use calamine::Reader;
                let mut workbook: calamine::Xlsx<_> =
                    calamine::open_workbook_from_rs(std::io::Cursor::new(bytes)).unwrap();
                let summary = workbook.worksheet_range("Summary").unwrap();
                let sheets = workbook.sheet_names();
                for sheet in ["Remediation outcomes", "Coverage"] {
                    assert!(sheets.iter().any(|s| s == sheet), "{sheet} in {sheets:?}");
                }
                expected
                    .iter()
                    .map(|(label, _)| {
                        let row = summary
                            .rows()
                            .find(|r| r.first().map(|c| c.to_string()).as_deref() == Some(label))
                            .unwrap_or_else(|| panic!("{label:?} in the summary sheet"));
                        (label.to_string(), row[1].to_string())
                    })
                    .collect()
            }
        };
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(l, v)| (l.to_string(), v.clone()))
            .collect();
        assert_eq!(read, expected, "{format}");
    }
}

/// Connectors written to the SDK guides of 0.3.0 (which declares its own
/// allocator and lists every declaration field) and 0.3.1 compile against
/// this SDK unchanged (the components build proves it) and load, built
/// against the current contract; a connector without remediations
/// declares none, and the rmm connector declares its two with their kinds
/// and input schemas.
#[tokio::test]
async fn connectors_written_to_earlier_guides_load_beside_the_remediating_rmm() {
    for (component, remediations) in [
        ("guide-v0-3-0", vec![]),
        ("guide-v0-3-1", vec![]),
        (
            "connectors/rmm",
            vec![
                ("update_package", "update_package"),
                ("run_script", "run_script"),
            ],
        ),
    ] {
        let settings = cairn_core::settings::Settings {
            connectors_dir: connectors_dir(&[component], &[]),
            plugin_cache_dir: std::env::temp_dir()
                .join(format!("cairn-cache-{}", uuid::Uuid::new_v4().simple())),
            ..cairn_core::settings::Settings::default()
        };
        let plugins = cairn_plugins::Plugins::load(&settings).await.unwrap();
        assert!(
            plugins.skipped.is_empty(),
            "{component}: {:?}",
            plugins.skipped
        );
        assert_eq!(plugins.connectors.len(), 1, "{component}");
        let descriptor = &plugins.connectors[0].descriptor;
        assert!(
            descriptor.sdk_version.starts_with("0.4."),
            "{component}: {}",
            descriptor.sdk_version
        );
        let declared: Vec<(String, String)> = descriptor
            .remediations
            .iter()
            .map(|r| {
                (
                    r.name.clone(),
                    serde_json::to_value(r.kind)
                        .unwrap()
                        .as_str()
                        .unwrap()
                        .to_string(),
                )
            })
            .collect();
        let expected: Vec<(String, String)> = remediations
            .iter()
            .map(|(n, k)| (n.to_string(), k.to_string()))
            .collect();
        assert_eq!(declared, expected, "{component}");
        for remediation in &descriptor.remediations {
            assert_eq!(remediation.input_schema["type"], "object");
        }
        if descriptor.remediations.is_empty() {
            continue;
        }
        // The host checks a call against the declaration before the
        // component runs (no upstream is configured, so none is reached).
        let connector = &plugins.connectors[0];
        let scope = cairn_plugins::CallScope::default();
        let config = json!({"base_url": "https://automate.example.com/cwa/api/v1"});
        for (action, inputs, refused) in [
            (
                "update_package",
                json!({"package": "Google Chrome"}),
                "inputs.version",
            ),
            (
                "update_package",
                json!({"package": "x", "version": "1", "colour": "red"}),
                "inputs.colour",
            ),
            (
                "run_script",
                json!({"script_id": "six"}),
                "inputs.script_id",
            ),
        ] {
            let call = cairn_plugins::RemediationCall {
                action: action.into(),
                device: "101".into(),
                inputs,
            };
            let err = plugins
                .remediate(connector, scope.clone(), &config, &call)
                .await
                .expect_err("refused");
            assert!(
                matches!(&err, cairn_plugins::CallError::InvalidInput { field, .. } if field == refused),
                "{action}: {err:?}"
            );
        }
        let unknown = cairn_plugins::RemediationCall {
            action: "reboot".into(),
            device: "101".into(),
            inputs: json!({}),
        };
        let err = plugins
            .remediate(connector, scope, &config, &unknown)
            .await
            .expect_err("refused");
        assert!(
            matches!(&err, cairn_plugins::CallError::NotFound(m) if m.contains("declares no remediation reboot")),
            "{err:?}"
        );
    }
}

/// A partner's customer that approves its own plans: the admin's approval
/// waits for the client, whose portal key lists and decides the plans of
/// its own company only; its approval sends the updates.
async fn a_customer_approves_its_plans_through_the_portal(backend: Backend) {
    let rmm = FakeRmm::start(fake_data()).await;
    let dir = connectors_dir(&["connectors/rmm"], &[]);
    let Some((app, _nvd)) = loaded_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.remediation_sweep_ms = 200;
        s.job_poll_interval_ms = 50;
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let acme = customer(&app, &owner, "Acme").await;
    let globex = customer(&app, &owner, "Globex").await;
    let in_acme = act(&app, &owner, &acme).await;
    configure(
        &app,
        &in_acme,
        &rmm,
        json!({"update_script_id": UPDATE_SCRIPT}),
    )
    .await;
    sync_and_match(&app, &in_acme).await;
    let set = app
        .call(
            reqwest::Method::PUT,
            "/api/v1/remediation/settings",
            &in_acme.bearer(),
            Some(json!({"client_approval": true})),
        )
        .await;
    assert_eq!(set.status, 200, "{}", set.text);
    let shown = app
        .get("/api/v1/remediation/settings", &in_acme.bearer())
        .await;
    assert_eq!(shown.body, json!({"client_approval": true}));

    let draft = new_plan(&app, &in_acme).await;
    let id = draft["plan"]["id"].as_str().unwrap().to_string();
    let approved = app
        .post(
            &format!("/api/v1/remediation/plans/{id}/approve"),
            &in_acme.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.text);
    assert_eq!(approved.body["plan"]["status"], "awaiting_client");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        rmm.schedules().is_empty(),
        "nothing goes out before the client approves"
    );

    let (acme_client, acme_key) = client_with_key(&app, &owner, "Acme Ltd").await;
    let (globex_client, globex_key) = client_with_key(&app, &owner, "Globex Ltd").await;
    for (client, company) in [(&acme_client, &acme), (&globex_client, &globex)] {
        let linked = app
            .call(
                reqwest::Method::PUT,
                &format!("/api/v1/portal/clients/{client}/customer"),
                &owner.bearer(),
                Some(json!({"customer_id": company})),
            )
            .await;
        assert_eq!(linked.status, 200, "{}", linked.text);
    }
    let decision = format!("/api/remediation-plans/{id}/decision");
    assert_eq!(
        app.get("/api/remediation-plans", &globex_key).await.body,
        json!([])
    );
    app.post(&decision, &globex_key, json!({"approve": true}))
        .await
        .assert_error(404);
    app.post(&decision, &acme_key, json!({"approve": "yes"}))
        .await
        .assert_error(422);
    let listed = app.get("/api/remediation-plans", &acme_key).await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.body[0]["id"], id.as_str());
    assert_eq!(listed.body[0]["cveId"], CVE);
    assert_eq!(listed.body[0]["status"], "awaiting_client");
    // No exception here: five planned, the offline one left out.
    assert_eq!(listed.body[0]["devicesPlanned"], 5, "{}", listed.text);
    assert_eq!(listed.body[0]["devicesLeftOut"], 1, "{}", listed.text);
    assert!(
        rmm.schedules().is_empty(),
        "another client's try sent nothing"
    );

    // A process that died while asking the RMM to start ACME-WS-02 left
    // its item `starting`: whether the RMM took it is unknown, so it is
    // never sent again.
    let orphaned = sqlx::query(
        "UPDATE remediation_items SET state = 'starting' WHERE plan_id = $1 AND device_name = $2",
    )
    .bind(&id)
    .bind("ACME-WS-02")
    .execute(&app.db().pool)
    .await
    .unwrap();
    assert_eq!(orphaned.rows_affected(), 1);
    let decided = app
        .post(
            &decision,
            &acme_key,
            json!({"approve": true, "comment": "go ahead tonight"}),
        )
        .await;
    assert_eq!(decided.status, 200, "{}", decided.text);
    assert_eq!(decided.body["status"], "approved");
    assert_eq!(decided.body["decidedBy"], "Acme Ltd (client portal)");
    app.post(&decision, &acme_key, json!({"approve": false}))
        .await
        .assert_error(409);
    let reported = wait_until("the RMM's reports", LIMIT, async || {
        let now = plan(&app, &in_acme, &id).await;
        match now["plan"]["counts"]["awaiting_inventory"].as_i64() {
            Some(n) if n > 0 && now["plan"]["counts"]["planned"] == 0 => Ok(now),
            _ => Err(now.to_string()),
        }
    })
    .await;
    assert_eq!(
        reported["plan"]["client_decided_by"],
        "Acme Ltd (client portal)"
    );
    assert_eq!(reported["plan"]["client_comment"], "go ahead tonight");
    let orphan = item(&reported, "ACME-WS-02");
    assert_eq!(orphan["state"], "failed", "{orphan}");
    assert!(
        orphan["reason"].as_str().unwrap().contains("not repeated"),
        "{orphan}"
    );
    let computers: Vec<i64> = rmm
        .schedules()
        .iter()
        .map(|s| s["ComputerId"].as_i64().unwrap())
        .collect();
    assert_eq!(computers.len(), 4, "{computers:?}");
    assert!(!computers.contains(&102), "{computers:?}");

    // A member (not an admin) cannot change who approves.
    let analyst = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;
    app.call(
        reqwest::Method::PUT,
        "/api/v1/remediation/settings",
        &analyst.bearer(),
        Some(json!({"client_approval": false})),
    )
    .await
    .assert_error(403);
    app.finish().await;
}

/// The second RMM, NinjaOne, beside Automate in one connectors directory:
/// its config chosen by its fields alone, five devices of one organization
/// synced (one not heard from in ten days), a dry run that sends nothing,
/// and after approval four scripts run through `/v2/device/{id}/script/run`;
/// the fake upgrades three and fails one silently, and the next sync
/// decides: three fixed, one `remediation_failed`, nothing run twice.
async fn a_second_rmm_remediates_through_ninjaone(backend: Backend) {
    let now = chrono::Utc::now().timestamp() as f64;
    let mut data = NinjaData {
        organizations: vec![
            json!({"id": 7, "name": "Acme", "nodeApprovalMode": "AUTOMATIC"}),
            json!({"id": 8, "name": "Globex", "nodeApprovalMode": "AUTOMATIC"}),
        ],
        ..NinjaData::default()
    };
    for id in 41..=45 {
        let seen = if id == 45 {
            now - 10.0 * 86_400.0
        } else {
            now - 600.0
        };
        data.devices.push(fake_ninjaone::device(
            id,
            &format!("NJ-WS-0{}", id - 40),
            7,
            seen,
        ));
        data.software.insert(
            id,
            fake_ninjaone::software(&[("Google Chrome", VULNERABLE), ("7-Zip", "23.01")]),
        );
    }
    // Another organization's device is outside the tenant's scope.
    data.devices
        .push(fake_ninjaone::device(90, "GLOBEX-WS-01", 8, now));
    data.outcomes.insert(43, ScriptOutcome::SilentlyFails);
    let ninja = FakeNinjaOne::start(data).await;
    let dir = connectors_dir(&["connectors/rmm", "connectors/ninjaone"], &[]);
    let Some((app, _nvd)) = loaded_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.remediation_sweep_ms = 200;
        s.job_poll_interval_ms = 50;
    })
    .await
    else {
        return;
    };
    let admin = app.register("admin@msp.example").await;

    // Two connectors serve rmm: a config that fits neither alone names one.
    let unclear = app
        .post(
            "/api/v1/rmm/config",
            &admin.bearer(),
            json!({"base_url": ninja.base_url}),
        )
        .await;
    unclear.assert_error(422);
    assert_eq!(unclear.body["field"], "connector", "{}", unclear.text);
    assert!(unclear.body["detail"]
        .as_str()
        .unwrap()
        .contains("connectwise-automate, ninjaone"));
    // NinjaOne's fields are NinjaOne's config. A wrong secret is refused at
    // the token endpoint, in NinjaOne's words, with a hint.
    let wrong = app
        .post(
            "/api/v1/rmm/config",
            &admin.bearer(),
            json!({"base_url": ninja.base_url, "client_id": fake_ninjaone::CLIENT_ID,
                   "client_secret": "not-the-secret"}),
        )
        .await;
    assert_eq!(wrong.status, 200, "{}", wrong.text);
    let tested = app
        .post("/api/v1/rmm/test-connection", &admin.bearer(), json!({}))
        .await;
    tested.assert_error(502);
    assert_eq!(
        tested.body["type"], "upstream_auth_error",
        "{}",
        tested.text
    );
    assert!(tested.body["detail"]
        .as_str()
        .unwrap()
        .contains("Bad client credentials"));
    assert!(tested.body["permission_hint"]
        .as_str()
        .unwrap()
        .contains("client credentials grant"));
    let saved = app
        .post(
            "/api/v1/rmm/config",
            &admin.bearer(),
            json!({"base_url": ninja.base_url, "client_id": fake_ninjaone::CLIENT_ID,
                   "client_secret": fake_ninjaone::CLIENT_SECRET, "page_size": 2,
                   "scope_organization_ids": [7],
                   "update_script_id": fake_ninjaone::UPDATE_SCRIPT}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["connector"], "ninjaone", "{}", saved.text);
    assert_eq!(saved.body["config"]["client_secret"], "********");
    let checked = app
        .post("/api/v1/rmm/test-connection", &admin.bearer(), json!({}))
        .await;
    assert_eq!(checked.status, 200, "{}", checked.text);
    // A token NinjaOne stopped honouring is asked for again, once.
    let tokens = ninja.token_requests();
    ninja.expire_tokens();
    let clients = app.get("/api/v1/rmm/clients", &admin.bearer()).await;
    assert_eq!(clients.status, 200, "{}", clients.text);
    assert_eq!(ninja.token_requests(), tokens + 1);
    assert_eq!(
        clients.body.as_array().map(Vec::len),
        Some(2),
        "{}",
        clients.text
    );

    sync_and_match(&app, &admin).await;
    let mut names = super::rmm::device_names(&app, &admin).await;
    names.sort();
    assert_eq!(
        names,
        ["NJ-WS-01", "NJ-WS-02", "NJ-WS-03", "NJ-WS-04", "NJ-WS-05"]
    );
    {
        let data = ninja.data.lock().unwrap();
        assert!(
            data.filters.iter().all(|f| f == "org in (7)"),
            "{:?}",
            data.filters
        );
        let form = &data.token_requests[0];
        assert_eq!(form["grant_type"], "client_credentials");
        assert_eq!(form["scope"], "monitoring management");
    }

    // The dry run: four updates and the device not heard from; nothing sent.
    let draft = new_plan(&app, &admin).await;
    let id = draft["plan"]["id"].as_str().unwrap().to_string();
    assert_eq!(draft["plan"]["counts"]["planned"], 4, "{draft}");
    assert_eq!(draft["plan"]["counts"]["skipped"], 1, "{draft}");
    assert!(item(&draft, "NJ-WS-05")["reason"]
        .as_str()
        .unwrap()
        .starts_with("offline: the RMM last heard from it"));
    assert!(ninja.runs().is_empty(), "a draft sends nothing");

    let reported = approve_and_wait(&app, &admin, &id).await;
    assert_eq!(
        reported["plan"]["counts"]["awaiting_inventory"], 4,
        "{reported}"
    );
    let target = item(&reported, "NJ-WS-01")["target_version"]
        .as_str()
        .unwrap()
        .to_string();
    let runs = ninja.runs();
    let mut devices: Vec<u64> = runs.iter().map(|(device, _)| *device).collect();
    devices.sort();
    assert_eq!(devices, [41, 42, 43, 44], "each device once");
    for (_, body) in &runs {
        assert_eq!(
            body,
            &json!({"type": "SCRIPT", "id": fake_ninjaone::UPDATE_SCRIPT,
                    "parameters": format!("-Package \"Google Chrome\" -Version \"{target}\""),
                    "runAs": "system"})
        );
    }
    assert!(item(&reported, "NJ-WS-03")["upstream_report"]
        .as_str()
        .unwrap()
        .contains("upgraded"));

    sync_and_match(&app, &admin).await;
    let verified = done(&app, &admin, &id).await;
    let mut settled = states(&verified);
    settled.sort();
    assert_eq!(
        settled,
        [
            ("NJ-WS-01", "fixed"),
            ("NJ-WS-02", "fixed"),
            ("NJ-WS-03", "remediation_failed"),
            ("NJ-WS-04", "fixed"),
            ("NJ-WS-05", "skipped"),
        ]
        .map(|(d, s)| (d.to_string(), s.to_string()))
    );
    assert_eq!(ninja.runs().len(), 4, "nothing ran twice");
}
