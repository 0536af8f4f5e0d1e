//! Automation over HTTP against real-format fakes on 127.0.0.1: the
//! ConnectWise Manage fake for tickets, a receiver that checks the HMAC
//! signature, Slack- and Teams-shaped receivers, the SMTP fake. Tickets
//! opened per CVE and customer, noted when a device joins and closed when
//! the last is fixed; one message per run; a webhook retried with the same
//! delivery id; digests once a period; skips with their reason; dry runs
//! that send nothing; refusals naming the field; isolation of every route.

use std::time::Duration;

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_psa::{FakePsa, PsaData, CLIENT_ID, COMPANY, PRIVATE_KEY, PUBLIC_KEY};
use cairn_tests::fake_webhooks::FakeWebhooks;
use cairn_tests::smtp::FakeSmtp;
use cairn_tests::{backend_tests, wait_until, Account, Backend, TestApp};
use reqwest::Method;
use serde_json::{json, Value};

use super::sla::replace_and_scan;
use super::vulnerabilities::{loaded_with, scan, software};

backend_tests!(
    tickets_follow_devices_and_each_action_goes_once,
    digests_skips_dry_runs_refusals_and_isolation,
);

const SECRET: &str = "whsec-for-the-tests-0123456789";
const KEV_CVE: &str = "CVE-2023-2033";
const LIMIT: Duration = Duration::from_secs(60);

fn chrome(device: &str, version: &str) -> cairn_plugins::MappedRow {
    software(device, "Google Chrome", "Google LLC", version, "windows")
}

const VULNERABLE: &str = "112.0.5615.49";
const FIXED: &str = "120.0.6099.71";

async fn start(backend: Backend, smtp: &FakeSmtp) -> Option<TestApp> {
    let port = smtp.port;
    let dir = connectors_dir(&["connectors/psa"], &[]);
    let (app, _nvd) = loaded_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.smtp_host = "127.0.0.1".into();
        s.smtp_port = port;
        s.smtp_security = "none".into();
        s.automation_sweep_ms = 200;
        s.automation_retry_ms = 50;
        s.job_poll_interval_ms = 50;
    })
    .await?;
    Some(app)
}

fn psa_config(site: &str) -> Value {
    json!({"site": site, "company_id": COMPANY, "public_key": PUBLIC_KEY,
           "private_key": PRIVATE_KEY, "client_id": CLIENT_ID})
}

/// Creates a rule and waits for its first run (its baseline).
async fn rule(app: &TestApp, who: &Account, body: Value) -> String {
    let created = app
        .post("/api/v1/automation/rules", &who.bearer(), body)
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.body["id"].as_str().unwrap().to_string();
    wait_until("the rule's first run", LIMIT, async || {
        let rule = app
            .get(&format!("/api/v1/automation/rules/{id}"), &who.bearer())
            .await;
        match rule.body["evaluated_at"].as_str() {
            Some(_) => Ok(()),
            None => Err(rule.text),
        }
    })
    .await;
    id
}

/// Runs the tenant's rules now and waits for the run to end.
async fn run(app: &TestApp, who: &Account) {
    let queued = app
        .post("/api/v1/automation/run", &who.bearer(), json!({}))
        .await;
    assert_eq!(queued.status, 202, "{}", queued.text);
    let job = app
        .wait_for_job(who, queued.body["job_id"].as_str().unwrap())
        .await;
    assert_eq!(job["status"], "success", "{job}");
}

async fn log(app: &TestApp, who: &Account, query: &str) -> Vec<Value> {
    let log = app
        .get(&format!("/api/v1/automation/log{query}"), &who.bearer())
        .await;
    assert_eq!(log.status, 200, "{}", log.text);
    log.body.as_array().unwrap().clone()
}

async fn deliveries(app: &TestApp, who: &Account) -> Vec<Value> {
    let list = app
        .get("/api/v1/automation/deliveries", &who.bearer())
        .await;
    assert_eq!(list.status, 200, "{}", list.text);
    list.body.as_array().unwrap().clone()
}

/// The tickets the fake holds whose summary names the CVE.
fn tickets_of(psa: &FakePsa, cve: &str) -> Vec<Value> {
    psa.data
        .lock()
        .unwrap()
        .tickets
        .iter()
        .filter(|t| t["summary"].as_str().unwrap_or("").starts_with(cve))
        .cloned()
        .collect()
}

fn notes_of(psa: &FakePsa, ticket: &Value) -> Vec<Value> {
    let id = ticket["id"].as_u64().unwrap();
    psa.data
        .lock()
        .unwrap()
        .notes
        .get(&id)
        .cloned()
        .unwrap_or_default()
}

async fn tickets_follow_devices_and_each_action_goes_once(backend: Backend) {
    let psa = FakePsa::start(PsaData::default()).await;
    let smtp = FakeSmtp::start().await;
    let hooks = FakeWebhooks::start(SECRET).await;
    hooks.hooks.lock().unwrap().fail_first = 2;
    let Some(app) = start(backend, &smtp).await else {
        return;
    };
    let acme = app.register("owner@acme.example").await;
    let globex = app.register("owner@globex.example").await;
    for who in [&acme, &globex] {
        let saved = app
            .post("/api/v1/psa/config", &who.bearer(), psa_config(&psa.site))
            .await;
        assert_eq!(saved.status, 200, "{}", saved.text);
    }
    let ticket = json!({"type": "ticket", "company_id": 2, "board_id": 1, "close_status_id": 5});
    let acme_rule = rule(
        &app,
        &acme,
        json!({"name": "KEV on any device", "trigger": {"kind": "kev_added"},
               "conditions": {"severity_at_least": "high"},
               "actions": [ticket,
                   {"type": "webhook", "url": format!("{}/json", hooks.base), "format": "json",
                    "secret": SECRET},
                   {"type": "email", "to": ["soc@acme.example"]}]}),
    )
    .await;
    rule(
        &app,
        &globex,
        json!({"name": "KEV", "trigger": {"kind": "kev_added"}, "actions": [ticket]}),
    )
    .await;

    // A KEV CVE on three devices of two customers: two tickets.
    app.seed(
        &acme,
        "rmm",
        &[chrome("WEB01", VULNERABLE), chrome("LAPTOP-9", VULNERABLE)],
    )
    .await;
    scan(&app, &acme, json!({})).await;
    app.seed(&globex, "rmm", &[chrome("PC-01", VULNERABLE)])
        .await;
    scan(&app, &globex, json!({})).await;
    wait_until("two tickets and the webhook", LIMIT, async || {
        let opened = tickets_of(&psa, KEV_CVE).len();
        let hooked = hooks
            .received("json")
            .iter()
            .filter(|r| r.status == 204)
            .count();
        if opened == 2 && hooked == 1 && smtp.mails().len() == 1 {
            Ok(())
        } else {
            Err(format!(
                "{opened} tickets, {hooked} webhooks, {} mails",
                smtp.mails().len()
            ))
        }
    })
    .await;
    let created = psa.data.lock().unwrap().created_tickets.clone();
    assert_eq!(created.len(), 2, "{created:?}");
    let descriptions: Vec<String> = created
        .iter()
        .map(|t| {
            t["initialDescription"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(
        descriptions
            .iter()
            .any(|d| d.contains("WEB01") && d.contains("LAPTOP-9")),
        "{descriptions:?}"
    );
    assert!(
        descriptions
            .iter()
            .any(|d| d.contains("PC-01") && !d.contains("WEB01")),
        "{descriptions:?}"
    );
    assert!(created
        .iter()
        .all(|t| t["company"]["id"] == 2 && t["board"]["id"] == 1));

    // The webhook failed twice and went through on the third attempt, with
    // the same delivery id and a valid signature each time.
    let posts = hooks.received("json");
    assert_eq!(
        posts.iter().map(|p| p.status).collect::<Vec<_>>(),
        [500, 500, 204]
    );
    assert!(posts.iter().all(|p| p.signed));
    let id = posts[0].delivery_id.clone().unwrap();
    assert!(posts
        .iter()
        .all(|p| p.delivery_id.as_deref() == Some(id.as_str())));
    let body = &posts[2].body;
    assert_eq!(body["schema"], "cairn.automation.v1");
    assert_eq!(body["rule"]["id"], acme_rule.as_str());
    assert_eq!(body["findings"].as_array().unwrap().len(), 2, "{body}");
    let listed = deliveries(&app, &acme).await;
    let webhook = listed.iter().find(|d| d["id"] == id.as_str()).unwrap();
    assert_eq!(webhook["status"], "delivered");
    assert_eq!(webhook["attempts"], 3);
    let failures = log(&app, &acme, &format!("?rule_id={acme_rule}")).await;
    assert_eq!(
        failures
            .iter()
            .filter(|l| l["outcome"] == "failed"
                && l["reason"]
                    .as_str()
                    .unwrap()
                    .contains("HTTP 500: receiver busy"))
            .count(),
        2,
        "{failures:?}"
    );
    let mail = &smtp.mails()[0];
    assert_eq!(mail.to, ["<soc@acme.example>"]);
    assert!(
        mail.data.contains(KEV_CVE) && mail.data.contains("LAPTOP-9"),
        "{}",
        mail.data
    );

    // A fourth device joins acme's ticket as a note; no new ticket.
    app.seed(&acme, "rmm", &[chrome("DESK-3", VULNERABLE)])
        .await;
    scan(&app, &acme, json!({})).await;
    let acme_ticket = || {
        tickets_of(&psa, KEV_CVE)
            .into_iter()
            .find(|t| {
                psa.data.lock().unwrap().created_tickets.iter().any(|c| {
                    c["summary"] == t["summary"]
                        && c["initialDescription"]
                            .as_str()
                            .unwrap_or("")
                            .contains("WEB01")
                })
            })
            .unwrap()
    };
    wait_until("the note on acme's ticket", LIMIT, async || {
        let notes = notes_of(&psa, &acme_ticket());
        match notes
            .iter()
            .any(|n| n["text"].as_str().unwrap_or("").contains("DESK-3"))
        {
            true if smtp.mails().len() == 2 => Ok(()),
            _ => Err(format!("{notes:?}")),
        }
    })
    .await;
    assert_eq!(tickets_of(&psa, KEV_CVE).len(), 2);

    // Globex's only device fixed: its ticket is closed with a note.
    replace_and_scan(&app, &globex, "fixed", &[chrome("PC-01", FIXED)]).await;
    let globex_ticket = || {
        tickets_of(&psa, KEV_CVE)
            .into_iter()
            .find(|t| t["id"] != acme_ticket()["id"])
            .unwrap()
    };
    wait_until("globex's ticket closed", LIMIT, async || {
        let ticket = globex_ticket();
        if ticket["status"]["id"] == 5 {
            Ok(())
        } else {
            Err(ticket.to_string())
        }
    })
    .await;
    let closing = notes_of(&psa, &globex_ticket());
    assert!(
        closing
            .iter()
            .any(|n| n["text"].as_str().unwrap().contains("fixed or excepted")),
        "{closing:?}"
    );
    // Acme's ticket stays open.
    assert_ne!(acme_ticket()["status"]["id"], 5);

    // Runs again, on request: nothing is sent twice.
    for _ in 0..2 {
        run(&app, &acme).await;
        run(&app, &globex).await;
    }
    assert_eq!(psa.data.lock().unwrap().created_tickets.len(), 2);
    assert_eq!(notes_of(&psa, &acme_ticket()).len(), 1);
    assert_eq!(notes_of(&psa, &globex_ticket()).len(), 1);
    assert_eq!(hooks.received("json").len(), 4);
    assert_eq!(smtp.mails().len(), 2);
    let fired = log(&app, &acme, &format!("?cve_id={KEV_CVE}&device=desk-3")).await;
    assert!(fired.iter().any(|l| l["outcome"] == "fired"), "{fired:?}");
    app.finish().await;
}

async fn digests_skips_dry_runs_refusals_and_isolation(backend: Backend) {
    let smtp = FakeSmtp::start().await;
    let hooks = FakeWebhooks::start(SECRET).await;
    let Some(app) = start(backend, &smtp).await else {
        return;
    };
    let acme = app.register("owner@acme.example").await;
    let member = app
        .add_member(&acme, "analyst@acme.example", "member")
        .await;
    let globex = app.register("owner@globex.example").await;
    app.seed(
        &acme,
        "rmm",
        &[chrome("WEB01", VULNERABLE), chrome("LAPTOP-9", VULNERABLE)],
    )
    .await;
    scan(&app, &acme, json!({})).await;

    // A daily digest to Slack, Teams and e-mail: one of each per day.
    let slack = format!("{}/slack/services/T000/B000/XXXX", hooks.base);
    let teams = format!("{}/teams/workflows/trigger", hooks.base);
    let digest = rule(
        &app,
        &acme,
        json!({"name": "Daily KEV digest", "trigger": {"kind": "digest", "every": "daily"},
               "conditions": {"kev": true},
               "actions": [{"type": "webhook", "url": slack, "format": "slack"},
                           {"type": "webhook", "url": teams, "format": "teams"},
                           {"type": "email", "to": ["soc@acme.example", "lead@acme.example"]}]}),
    )
    .await;
    // The member's invitation is a mail too: count the SOC's.
    let soc_mails = || {
        smtp.mails()
            .iter()
            .filter(|m| m.to != ["<analyst@acme.example>"])
            .count()
    };
    let sent = async |n: usize| {
        wait_until("the digest", LIMIT, async || {
            let (s, t) = (hooks.received("slack"), hooks.received("teams"));
            if s.len() == n && t.len() == n && soc_mails() == n {
                Ok(())
            } else {
                Err(format!(
                    "{} slack, {} teams, {:?} mails; {:?}",
                    s.len(),
                    t.len(),
                    smtp.mails()
                        .iter()
                        .map(|m| m.to.clone())
                        .collect::<Vec<_>>(),
                    deliveries(&app, &acme).await
                ))
            }
        })
        .await
    };
    sent(1).await;
    let digest_mail = smtp.mails().into_iter().last().unwrap();
    assert_eq!(
        digest_mail.to,
        ["<soc@acme.example>", "<lead@acme.example>"]
    );
    let slack_post = &hooks.received("slack")[0];
    assert_eq!(slack_post.status, 200);
    assert!(slack_post.body["text"].as_str().unwrap().contains(KEV_CVE));
    assert_eq!(hooks.received("teams")[0].status, 202);
    run(&app, &acme).await;
    assert_eq!(
        hooks.received("slack").len(),
        1,
        "a second digest on the same day"
    );
    app.server.state.clock.advance(Duration::from_secs(86_400));
    run(&app, &acme).await;
    sent(2).await;

    // A rule whose condition is false for a new finding logs why.
    let microsoft = rule(
        &app,
        &acme,
        json!({"name": "Microsoft only", "trigger": {"kind": "new_finding"},
               "conditions": {"vendor": "microsoft"},
               "actions": [{"type": "email", "to": ["soc@acme.example"]}]}),
    )
    .await;
    app.seed(&acme, "rmm", &[chrome("DESK-3", VULNERABLE)])
        .await;
    scan(&app, &acme, json!({})).await;
    let skipped = wait_until("the skip", LIMIT, async || {
        let lines = log(&app, &acme, &format!("?rule_id={microsoft}")).await;
        match lines.iter().find(|l| l["outcome"] == "skipped") {
            Some(line) => Ok(line.clone()),
            None => Err(format!("{lines:?}")),
        }
    })
    .await;
    assert_eq!(skipped["device_name"], "DESK-3");
    assert_eq!(skipped["reason"], "vendor google is not microsoft");
    let mails = soc_mails();

    // A dry run says what would go out and sends nothing.
    let before = deliveries(&app, &acme).await.len();
    let draft = json!({"name": "KEV webhook", "trigger": {"kind": "kev_added"},
        "actions": [{"type": "webhook", "url": format!("{}/json", hooks.base), "format": "json",
                     "secret": SECRET}]});
    let dry = app
        .post(
            "/api/v1/automation/dry-run",
            &member.bearer(),
            draft.clone(),
        )
        .await;
    assert_eq!(dry.status, 200, "{}", dry.text);
    assert_eq!(
        dry.body["fired"].as_array().unwrap().len(),
        3,
        "{}",
        dry.text
    );
    assert_eq!(dry.body["deliveries"][0]["action"], "webhook");
    let saved_dry = app
        .post(
            &format!("/api/v1/automation/rules/{digest}/dry-run"),
            &member.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(saved_dry.status, 200, "{}", saved_dry.text);
    assert!(
        saved_dry.body["deliveries"].as_array().unwrap().is_empty(),
        "{}",
        saved_dry.text
    );
    run(&app, &acme).await;
    assert_eq!(deliveries(&app, &acme).await.len(), before);
    assert!(hooks.received("json").is_empty());
    assert_eq!(soc_mails(), mails);

    // Refusals name the field; members may read and dry-run, not write.
    app.post("/api/v1/automation/rules", &member.bearer(), draft.clone())
        .await
        .assert_error(403);
    for (bad, field) in [
        (json!({"trigger": {"kind": "when_ever"}}), ""),
        (
            json!({"trigger": {"kind": "epss_crossed", "threshold": 2}}),
            "trigger.threshold",
        ),
        (
            json!({"actions": [{"type": "webhook", "url": format!("{}/json", hooks.base), "format": "json"}]}),
            "actions[0].secret",
        ),
        (
            json!({"trigger": {"kind": "digest", "every": "daily"},
                   "actions": [{"type": "ticket", "company_id": 2}]}),
            "actions[0]",
        ),
        (
            json!({"actions": [{"type": "email", "to": ["not an address"]}]}),
            "actions[0].to",
        ),
        (
            json!({"actions": [{"type": "webhook", "url": "ftp://hooks.example/x", "format": "slack"}]}),
            "actions[0].url",
        ),
        (json!({"actions": []}), "actions"),
        (json!({"name": " "}), "name"),
        (
            json!({"conditions": {"devices": {"combinator": "and", "rules": [
                {"field": "colour", "operator": "=", "value": "red"}]}}}),
            "",
        ),
    ] {
        let mut body = draft.clone();
        for (k, v) in bad.as_object().unwrap() {
            body[k] = v.clone();
        }
        let refused = app
            .post("/api/v1/automation/rules", &acme.bearer(), body.clone())
            .await;
        refused.assert_error(422);
        if !field.is_empty() {
            assert_eq!(refused.body["field"], field, "{body}: {}", refused.text);
        }
    }

    // Another tenant sees and touches none of it.
    let dead = deliveries(&app, &acme).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for (method, path) in [
        (Method::GET, format!("/api/v1/automation/rules/{digest}")),
        (Method::PUT, format!("/api/v1/automation/rules/{digest}")),
        (Method::DELETE, format!("/api/v1/automation/rules/{digest}")),
        (
            Method::POST,
            format!("/api/v1/automation/rules/{digest}/dry-run"),
        ),
        (
            Method::POST,
            format!("/api/v1/automation/deliveries/{dead}/retry"),
        ),
    ] {
        let body = (method == Method::PUT).then(|| draft.clone());
        let answer = app
            .call(method.clone(), &path, &globex.bearer(), body)
            .await;
        answer.assert_error(404);
    }
    let theirs = app.get("/api/v1/automation/rules", &globex.bearer()).await;
    assert_eq!(theirs.body, json!([]));
    assert!(log(&app, &globex, "").await.is_empty());
    assert!(deliveries(&app, &globex).await.is_empty());
    assert_eq!(
        app.get(
            &format!("/api/v1/automation/rules/{digest}"),
            &acme.bearer()
        )
        .await
        .status,
        200
    );
    app.finish().await;
}
