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

use super::partner::{act, customer};
use super::sla::{days_from_now, replace_and_scan};
use super::vulnerabilities::{loaded_with, scan, software};

backend_tests!(
    tickets_follow_devices_and_each_action_goes_once,
    digests_skips_dry_runs_refusals_and_isolation,
    a_subscriptions_new_cve_fires_once,
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
    let dir = connectors_dir(&["connectors/psa", "csv-providers/software-inventory"], &[]);
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

pub fn psa_config(site: &str) -> Value {
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
    log.body["items"].as_array().unwrap().clone()
}

async fn deliveries(app: &TestApp, who: &Account) -> Vec<Value> {
    let list = app
        .get("/api/v1/automation/deliveries", &who.bearer())
        .await;
    assert_eq!(list.status, 200, "{}", list.text);
    list.body["items"].as_array().unwrap().clone()
}

/// The tickets the fake holds whose summary names the CVE.
pub fn tickets_of(psa: &FakePsa, cve: &str) -> Vec<Value> {
    psa.data
        .lock()
        .unwrap()
        .tickets
        .iter()
        .filter(|t| t["summary"].as_str().unwrap_or("").starts_with(cve))
        .cloned()
        .collect()
}

pub fn notes_of(psa: &FakePsa, ticket: &Value) -> Vec<Value> {
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
    let mut data = PsaData::default();
    data.companies
        .push(json!({"id": 3, "identifier": "Globex", "name": "Globex Corporation"}));
    let psa = FakePsa::start(data).await;
    let smtp = FakeSmtp::start().await;
    let Some(app) = start(backend, &smtp).await else {
        return;
    };
    // An MSP with two customers; its PSA holds a company for each.
    let msp = app.register("owner@msp.example").await;
    let acme_id = customer(&app, &msp, "Acme").await;
    let globex_id = customer(&app, &msp, "Globex").await;
    let acme = act(&app, &msp, &acme_id).await;
    let globex = act(&app, &msp, &globex_id).await;
    let saved = app
        .post("/api/v1/psa/config", &msp.bearer(), psa_config(&psa.site))
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let rule_id = rule(
        &app,
        &msp,
        json!({"name": "KEV on any customer device", "trigger": {"kind": "kev_added"},
               "conditions": {"severity_at_least": "high"},
               "customers": {"all": true},
               "actions": [
                   {"type": "ticket", "company_id": 2, "board_id": 1, "close_status_id": 5,
                    "companies": [{"customer_id": globex_id.clone(), "company_id": 3}]},
                   {"type": "email", "to": ["soc@msp.example"]}]}),
    )
    .await;

    // A KEV CVE on three devices of two customers: two tickets, one per
    // customer's company, and one message per customer's run.
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
    wait_until("two tickets and two mails", LIMIT, async || {
        let opened = tickets_of(&psa, KEV_CVE).len();
        if opened == 2 && smtp.mails().len() == 2 {
            Ok(())
        } else {
            Err(format!("{opened} tickets, {} mails", smtp.mails().len()))
        }
    })
    .await;
    let created = psa.data.lock().unwrap().created_tickets.clone();
    assert_eq!(created.len(), 2, "{created:?}");
    let of_company = |company: u64| {
        created
            .iter()
            .find(|t| t["company"]["id"] == company)
            .map(|t| {
                t["initialDescription"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .unwrap_or_else(|| panic!("no ticket for company {company}: {created:?}"))
    };
    let (acme_text, globex_text) = (of_company(2), of_company(3));
    assert!(
        acme_text.contains("WEB01") && acme_text.contains("LAPTOP-9"),
        "{acme_text}"
    );
    assert!(
        globex_text.contains("PC-01") && !globex_text.contains("WEB01"),
        "{globex_text}"
    );
    assert!(created.iter().all(|t| t["board"]["id"] == 1));
    let mails = smtp.mails();
    assert!(mails.iter().all(|m| m.to == ["<soc@msp.example>"]));
    assert!(
        mails
            .iter()
            .any(|m| m.data.contains(KEV_CVE) && m.data.contains("LAPTOP-9")),
        "{mails:?}"
    );

    // A fourth device joins acme's ticket as a note; no new ticket.
    app.seed(&acme, "rmm", &[chrome("DESK-3", VULNERABLE)])
        .await;
    scan(&app, &acme, json!({})).await;
    let ticket_of = |company: u64| {
        tickets_of(&psa, KEV_CVE)
            .into_iter()
            .find(|t| t["company"]["id"] == company)
            .unwrap()
    };
    wait_until("the note on acme's ticket", LIMIT, async || {
        let notes = notes_of(&psa, &ticket_of(2));
        match notes
            .iter()
            .any(|n| n["text"].as_str().unwrap_or("").contains("DESK-3"))
        {
            true if smtp.mails().len() == 3 => Ok(()),
            _ => Err(format!("{notes:?}")),
        }
    })
    .await;
    assert_eq!(tickets_of(&psa, KEV_CVE).len(), 2);

    // Globex's only device fixed: its ticket is closed with a note.
    replace_and_scan(&app, &globex, "fixed", &[chrome("PC-01", FIXED)]).await;
    wait_until("globex's ticket closed", LIMIT, async || {
        let ticket = ticket_of(3);
        if ticket["status"]["id"] == 5 {
            Ok(())
        } else {
            Err(ticket.to_string())
        }
    })
    .await;
    let closing = notes_of(&psa, &ticket_of(3));
    assert!(
        closing
            .iter()
            .any(|n| n["text"].as_str().unwrap().contains("fixed or excepted")),
        "{closing:?}"
    );
    assert_ne!(ticket_of(2)["status"]["id"], 5, "acme's ticket stays open");

    // Runs again, on request: nothing is sent twice.
    for _ in 0..2 {
        run(&app, &msp).await;
        run(&app, &acme).await;
    }
    assert_eq!(psa.data.lock().unwrap().created_tickets.len(), 2);
    assert_eq!(notes_of(&psa, &ticket_of(2)).len(), 1);
    assert_eq!(notes_of(&psa, &ticket_of(3)).len(), 1);
    assert_eq!(smtp.mails().len(), 3);

    // The partner reads the log and deliveries by customer; the customer's
    // own view holds none of its partner's rules.
    let fired = log(
        &app,
        &msp,
        &format!("?rule_id={rule_id}&cve_id={KEV_CVE}&device=desk-3"),
    )
    .await;
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0]["outcome"], "fired");
    assert_eq!(fired[0]["tenant_id"], acme_id.as_str());
    let sent = deliveries(&app, &msp).await;
    assert!(sent.iter().all(|d| d["status"] == "delivered"), "{sent:?}");
    assert!(sent.iter().any(|d| d["tenant_id"] == globex_id.as_str()));
    assert_eq!(
        app.get("/api/v1/automation/rules", &acme.bearer())
            .await
            .body,
        json!([])
    );
    assert!(log(&app, &acme, "").await.is_empty());
    assert!(deliveries(&app, &acme).await.is_empty());
    let dry = app
        .post(
            &format!("/api/v1/automation/rules/{rule_id}/dry-run"),
            &msp.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(dry.status, 200, "{}", dry.text);
    let mut over: Vec<&str> = dry
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["tenant_id"].as_str().unwrap())
        .collect();
    over.sort();
    let mut both = [acme_id.as_str(), globex_id.as_str()];
    both.sort();
    assert_eq!(over, both);

    // A failing sync fires its rule once, with the upstream's refusal.
    let broken = app.register("owner@broken.example").await;
    let mut wrong = psa_config(&psa.site);
    wrong["private_key"] = json!("wrong");
    let saved = app
        .post("/api/v1/psa/config", &broken.bearer(), wrong)
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    rule(
        &app,
        &broken,
        json!({"name": "Sync failures", "trigger": {"kind": "sync_failed"},
               "actions": [{"type": "email", "to": ["ops@broken.example"]}]}),
    )
    .await;
    let synced = app.sync_area(&broken, "psa").await;
    assert_eq!(synced["status"], "error", "{synced}");
    for _ in 0..2 {
        run(&app, &broken).await;
    }
    let to_ops: Vec<String> = smtp
        .mails()
        .into_iter()
        .filter(|m| m.to == ["<ops@broken.example>"])
        .map(|m| m.data)
        .collect();
    assert_eq!(to_ops.len(), 1, "{to_ops:?}");
    assert!(to_ops[0].contains("the psa sync failed"), "{}", to_ops[0]);

    // A rule over customers is a partner's; customers named are its own.
    let other = app.register("owner@elsewhere.example").await;
    let body = json!({"name": "x", "trigger": {"kind": "kev_added"}, "customers": {"all": true},
                      "actions": [{"type": "email", "to": ["a@b.example"]}]});
    let refused = app
        .post("/api/v1/automation/rules", &other.bearer(), body)
        .await;
    refused.assert_error(422);
    assert_eq!(refused.body["field"], "customers");
    let theirs = customer(&app, &other, "Initech").await;
    let body = json!({"name": "x", "trigger": {"kind": "kev_added"},
                      "customers": {"customer_ids": [theirs]},
                      "actions": [{"type": "email", "to": ["a@b.example"]}]});
    let refused = app
        .post("/api/v1/automation/rules", &msp.bearer(), body)
        .await;
    refused.assert_error(422);
    assert_eq!(refused.body["field"], "customers.customer_ids");
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
    assert_eq!(dry.body[0]["tenant_id"], acme.tenant_id.as_str());
    let would = &dry.body[0]["plan"];
    assert_eq!(would["fired"].as_array().unwrap().len(), 3, "{}", dry.text);
    assert_eq!(would["deliveries"][0]["action"], "webhook");
    let saved_dry = app
        .post(
            &format!("/api/v1/automation/rules/{digest}/dry-run"),
            &member.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(saved_dry.status, 200, "{}", saved_dry.text);
    assert!(
        saved_dry.body[0]["plan"]["deliveries"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{}",
        saved_dry.text
    );
    run(&app, &acme).await;
    assert_eq!(deliveries(&app, &acme).await.len(), before);
    assert!(hooks.received("json").is_empty());
    assert_eq!(soc_mails(), mails);

    // A signed webhook that fails twice goes through on the third attempt,
    // under one delivery id, each attempt signed.
    hooks.hooks.lock().unwrap().fail_first = 2;
    let hooked = rule(&app, &acme, draft.clone()).await;
    let shown = app
        .get(
            &format!("/api/v1/automation/rules/{hooked}"),
            &acme.bearer(),
        )
        .await;
    assert!(
        !shown.text.contains(SECRET),
        "the secret never comes back: {}",
        shown.text
    );
    assert_eq!(shown.body["actions"][0]["format"], "json");
    app.seed(&acme, "rmm", &[chrome("KIOSK-7", VULNERABLE)])
        .await;
    scan(&app, &acme, json!({})).await;
    wait_until("the webhook", LIMIT, async || {
        let posts = hooks.received("json");
        match posts.iter().any(|r| r.status == 204) {
            true => Ok(()),
            false => Err(format!("{posts:?}")),
        }
    })
    .await;
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
    assert_eq!(body["rule"]["id"], hooked.as_str());
    assert_eq!(body["tenant_id"], acme.tenant_id.as_str());
    assert_eq!(body["findings"][0]["device_name"], "KIOSK-7", "{body}");
    // The receiver answered before the outcome was written: wait for it.
    let webhook = wait_until("the delivery's outcome", LIMIT, async || {
        let listed = deliveries(&app, &acme).await;
        let webhook = listed
            .iter()
            .find(|d| d["id"] == id.as_str())
            .unwrap()
            .clone();
        if webhook["status"] == "delivered" {
            Ok(webhook)
        } else {
            Err(webhook.to_string())
        }
    })
    .await;
    assert_eq!(webhook["attempts"], 3);
    let failures = log(&app, &acme, &format!("?rule_id={hooked}")).await;
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

    // Exceptions: asked for, then approved by another admin; each fires
    // its rule once, to Slack, and an expiry a month out is not "expiring".
    let second = app.add_member(&acme, "second@acme.example", "admin").await;
    let events = |kind: &str| {
        json!({"name": format!("Exceptions {kind}"), "trigger": {"kind": kind},
               "actions": [{"type": "webhook", "url": slack, "format": "slack"}]})
    };
    rule(&app, &acme, events("exception_requested")).await;
    rule(&app, &acme, events("exception_approved")).await;
    let expiring = rule(
        &app,
        &acme,
        json!({"name": "Exceptions expiring", "trigger": {"kind": "exception_expiring", "days": 7},
               "actions": [{"type": "webhook", "url": slack, "format": "slack"}]}),
    )
    .await;
    let slack_before = hooks.received("slack").len();
    let asked = app
        .post(
            "/api/v1/sla/exceptions",
            &member.bearer(),
            json!({"cve_id": KEV_CVE, "devices": ["WEB01"], "reason": "kiosk, replaced in March",
                   "expires_at": days_from_now(&app, 30)}),
        )
        .await;
    assert_eq!(asked.status, 201, "{}", asked.text);
    let exception = asked.body["id"].as_str().unwrap().to_string();
    run(&app, &acme).await;
    let decided = app
        .post(
            &format!("/api/v1/sla/exceptions/{exception}/decision"),
            &second.bearer(),
            json!({"approve": true, "comment": "until the kiosk goes"}),
        )
        .await;
    assert_eq!(decided.status, 200, "{}", decided.text);
    run(&app, &acme).await;
    let said = wait_until("two exception posts", LIMIT, async || {
        let posts = hooks.received("slack");
        if posts.len() == slack_before + 2 {
            Ok(posts[slack_before..]
                .iter()
                .map(|p| p.body["text"].as_str().unwrap().to_string())
                .collect::<Vec<_>>())
        } else {
            Err(format!("{posts:?}"))
        }
    })
    .await;
    assert!(
        said[0].contains("analyst@acme.example asked for an exception for CVE-2023-2033 on WEB01"),
        "{said:?}"
    );
    assert!(
        said[1].contains("second@acme.example approved the exception for CVE-2023-2033 on WEB01"),
        "{said:?}"
    );
    run(&app, &acme).await;
    assert_eq!(
        hooks.received("slack").len(),
        slack_before + 2,
        "each event fires once"
    );
    // Three weeks and a half later it is expiring: once.
    app.server
        .state
        .clock
        .advance(Duration::from_secs(25 * 86_400));
    run(&app, &acme).await;
    run(&app, &acme).await;
    let posts = hooks.received("slack");
    let expiring_posts: Vec<&str> = posts
        .iter()
        .filter_map(|p| p.body["text"].as_str())
        .filter(|t| t.contains("expires at"))
        .collect();
    assert_eq!(expiring_posts.len(), 1, "{expiring_posts:?}");
    let lines = log(
        &app,
        &acme,
        &format!("?rule_id={expiring}&cve_id={KEV_CVE}"),
    )
    .await;
    assert!(lines.iter().any(|l| l["outcome"] == "fired"), "{lines:?}");

    // An upload whose every row is refused fires an upload rule once.
    let uploads = rule(
        &app,
        &acme,
        json!({"name": "Failed uploads", "trigger": {"kind": "upload_failed"},
               "actions": [{"type": "webhook", "url": slack, "format": "slack"}]}),
    )
    .await;
    let failed = app
        .ingest(
            &acme,
            "software-inventory",
            "broken.csv",
            "device,application\nPC-9,\nPC-8,\n".into(),
        )
        .await;
    assert_eq!(failed["status"], "error", "{failed}");
    run(&app, &acme).await;
    run(&app, &acme).await;
    let about: Vec<String> = hooks
        .received("slack")
        .iter()
        .filter_map(|p| p.body["text"].as_str())
        .filter(|t| t.contains("broken.csv"))
        .map(String::from)
        .collect();
    assert_eq!(about.len(), 1, "{about:?}");
    assert!(
        about[0]
            .contains("the upload broken.csv (software-inventory) failed: none of the 2 data rows"),
        "{about:?}"
    );
    assert!(log(&app, &acme, &format!("?rule_id={uploads}"))
        .await
        .iter()
        .any(|l| l["outcome"] == "fired"));

    // A disabled rule does not run, and says so.
    let mut paused = app
        .get(
            &format!("/api/v1/automation/rules/{microsoft}"),
            &acme.bearer(),
        )
        .await
        .body;
    for shown in ["id", "owner", "created_at", "updated_at", "evaluated_at"] {
        paused.as_object_mut().unwrap().remove(shown);
    }
    paused["enabled"] = json!(false);
    let saved = app
        .call(
            Method::PUT,
            &format!("/api/v1/automation/rules/{microsoft}"),
            &acme.bearer(),
            Some(paused),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["enabled"], false);
    app.seed(&acme, "rmm", &[chrome("LOBBY-2", VULNERABLE)])
        .await;
    scan(&app, &acme, json!({})).await;
    run(&app, &acme).await;
    let lines = log(&app, &acme, &format!("?rule_id={microsoft}")).await;
    assert!(
        lines.iter().any(|l| l["outcome"] == "disabled"),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l["device_name"] == "LOBBY-2"),
        "a disabled rule judges nothing: {lines:?}"
    );

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
        (
            json!({"trigger": {"kind": "sync_failed"}, "conditions": {"kev": true}}),
            "conditions",
        ),
        (
            json!({"trigger": {"kind": "upload_failed"},
                   "actions": [{"type": "ticket", "company_id": 2}]}),
            "actions[0]",
        ),
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

async fn a_subscriptions_new_cve_fires_once(backend: Backend) {
    use super::subscriptions::{quantum_widget_record, synced};
    let smtp = FakeSmtp::start().await;
    let port = smtp.port;
    let Some((app, nvd)) = loaded_with(backend, move |s| {
        s.smtp_host = "127.0.0.1".into();
        s.smtp_port = port;
        s.smtp_security = "none".into();
        s.automation_sweep_ms = 200;
        s.job_poll_interval_ms = 50;
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let followed = app
        .post(
            "/api/v1/subscriptions/",
            &owner.bearer(),
            json!({"sub_type": "product", "name": "Quantum Widget"}),
        )
        .await;
    assert_eq!(followed.status, 201, "{}", followed.text);
    synced(&app, &owner).await;
    rule(
        &app,
        &owner,
        json!({"name": "Followed products", "trigger": {"kind": "subscription_match"},
               "actions": [{"type": "email", "to": ["soc@msp.example"]}]}),
    )
    .await;
    // NVD publishes the product's first CVE; the subscription's sync
    // brings it, and the rule mails once.
    let record = quantum_widget_record(
        &nvd,
        "2026-11-20T10:00:00.000",
        "Quantum Widget before 2.0 lets a remote attacker run code.",
    );
    nvd.data.lock().unwrap().records.push(record);
    let sync = app
        .post("/api/v1/subscriptions/sync", &owner.bearer(), json!({}))
        .await;
    assert_eq!(sync.status, 202, "{}", sync.text);
    synced(&app, &owner).await;
    run(&app, &owner).await;
    run(&app, &owner).await;
    let mails = smtp.mails();
    assert_eq!(mails.len(), 1, "{mails:?}");
    assert!(
        mails[0]
            .data
            .contains("CVE-2026-1111 is new (product Quantum Widget, which you follow)"),
        "{}",
        mails[0].data
    );
    app.finish().await;
}
