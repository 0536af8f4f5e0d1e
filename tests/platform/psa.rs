//! The psa area with ConnectWise PSA against a fake REST API v3: Basic
//! auth built from the company and public key with the `clientId` header,
//! `Link` paging over three pages, conditions, 201 on create, JSON Patch, a
//! 400 with its `errors` array naming the field, a 500 retried, a 401; the
//! live actions end to end and the ticket sync, per tenant.

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_psa::{self, FakePsa, PsaData, CLIENT_ID, COMPANY, PRIVATE_KEY, PUBLIC_KEY};
use cairn_tests::{backend_tests, Backend, TestApp};
use serde_json::{json, Value};

use super::mdm::{names, sync};

backend_tests!(psa_live_actions_and_ticket_sync);

fn days_ago(days: i64) -> String {
    (chrono::Utc::now() - chrono::Duration::days(days))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn data() -> PsaData {
    let mut data = PsaData::default();
    let board = (1, "Service A");
    let company = (2, "TestCompany");
    data.tickets = (1..=5)
        .map(|n| {
            fake_psa::ticket(
                n,
                &format!("Patch Chrome on host {n}"),
                board,
                company,
                &days_ago(n as i64),
            )
        })
        .collect();
    // Updated long ago: not recent, not synced.
    data.tickets.push(fake_psa::ticket(
        6,
        "Old printer issue",
        board,
        company,
        "2020-01-01T00:00:00Z",
    ));
    data.configurations = vec![
        json!({"id": 77, "name": "WEB01", "company": {"id": 2, "name": "TestCompany"}}),
        json!({"id": 78, "name": "DB02", "company": {"id": 2, "name": "TestCompany"}}),
    ];
    data.schedule_entries = vec![
        json!({"id": 501, "objectId": 3, "name": "Onsite visit", "type": {"identifier": "S"},
               "dateStart": "2026-11-25T09:00:00Z", "dateEnd": "2026-11-25T10:00:00Z"}),
        json!({"id": 502, "objectId": 4, "name": "Another ticket", "type": {"identifier": "S"}}),
    ];
    data
}

async fn psa_live_actions_and_ticket_sync(backend: Backend) {
    let psa = FakePsa::start(data()).await;
    let dir = connectors_dir(&["connectors/psa"], &[]);
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let config = json!({"site": psa.site, "company_id": COMPANY, "public_key": PUBLIC_KEY,
                        "private_key": PRIVATE_KEY, "client_id": CLIENT_ID, "page_size": 2});
    let saved = app
        .post("/api/v1/psa/config", &owner.bearer(), config)
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(saved.body["config"]["private_key"], "********");
    let tested = app
        .post("/api/v1/psa/test-connection", &owner.bearer(), json!({}))
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    let status = app.get("/api/v1/psa/status", &owner.bearer()).await;
    assert_eq!(status.status, 200, "{}", status.text);
    assert_eq!(status.body["connected"], true);
    assert_eq!(status.body["company_id"], COMPANY);
    assert!(!status.text.contains(PRIVATE_KEY));

    // Reference lists, one page each.
    let companies = app
        .get("/api/v1/psa/companies?search=testco", &owner.bearer())
        .await;
    assert_eq!(
        names(&companies.body, "name"),
        ["TestCompany"],
        "{}",
        companies.text
    );
    let boards = app.get("/api/v1/psa/boards", &owner.bearer()).await;
    assert_eq!(
        names(&boards.body, "name"),
        ["Service A"],
        "{}",
        boards.text
    );
    let all_boards = app.get("/api/v1/psa/service/boards", &owner.bearer()).await;
    assert_eq!(all_boards.status, 200, "{}", all_boards.text);
    let priorities = app.get("/api/v1/psa/priorities", &owner.bearer()).await;
    assert_eq!(priorities.body["items"].as_array().unwrap().len(), 2);

    // Tickets: filtered, paged by the Link header, recent ones.
    let page = app
        .get(
            "/api/v1/psa/tickets?board_id=1&search=chrome&page_size=2",
            &owner.bearer(),
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(page.body["items"].as_array().unwrap().len(), 2);
    assert_eq!(page.body["has_more"], true);
    let last = app
        .get(
            "/api/v1/psa/tickets?board_id=1&search=chrome&page_size=2&page=3",
            &owner.bearer(),
        )
        .await;
    assert_eq!(
        last.body["items"].as_array().unwrap().len(),
        1,
        "{}",
        last.text
    );
    assert_eq!(last.body["has_more"], false);
    let recent = app
        .get(
            "/api/v1/psa/service/tickets/recent?days=3&page_size=50",
            &owner.bearer(),
        )
        .await;
    let mut ids: Vec<i64> = recent.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_i64().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, [1, 2], "updated within three days: {}", recent.text);

    // Create: validated here, then by ConnectWise (its 400 names the field).
    let too_long = "x".repeat(101);
    let refused = app
        .post(
            "/api/v1/psa/tickets",
            &owner.bearer(),
            json!({"summary": too_long, "company_id": 2}),
        )
        .await;
    refused.assert_error(422);
    assert_eq!(refused.body["field"], "body.summary");
    let refused = app
        .post(
            "/api/v1/psa/tickets",
            &owner.bearer(),
            json!({"summary": "Patch", "company_id": 999}),
        )
        .await;
    refused.assert_error(422);
    assert!(refused.text.contains("company"), "{}", refused.text);
    let created = app
        .post(
            "/api/v1/psa/tickets",
            &owner.bearer(),
            json!({"summary": "CVE-2021-44228 on WEB01", "company_id": 2, "board_id": 1,
                   "priority_id": 4, "initial_description": "Log4Shell found by the scanner"}),
        )
        .await;
    assert_eq!(created.status, 200, "{}", created.text);
    let id = created.body["id"].as_i64().unwrap();
    assert_eq!(created.body["summary"], "CVE-2021-44228 on WEB01");
    let ticket = format!("/api/v1/psa/service/tickets/{id}");

    // JSON Patch, checked before it goes upstream.
    app.patch(
        &ticket,
        &owner.bearer(),
        json!([{"op": "move", "path": "status"}]),
    )
    .await
    .assert_error(422);
    let patched = app
        .patch(
            &ticket,
            &owner.bearer(),
            json!([{"op": "replace", "path": "/status", "value": {"id": 5}}]),
        )
        .await;
    assert_eq!(patched.status, 200, "{}", patched.text);
    assert_eq!(patched.body["status"]["id"], 5);
    app.patch(
        "/api/v1/psa/service/tickets/not-a-number",
        &owner.bearer(),
        json!([{"op": "remove", "path": "owner"}]),
    )
    .await
    .assert_error(422);

    // Notes, configurations, time, schedule.
    let note = app
        .post(
            &format!("{ticket}/notes"),
            &owner.bearer(),
            json!({"text": "Patched to 2.17.1", "internal": true}),
        )
        .await;
    assert_eq!(note.status, 200, "{}", note.text);
    let notes = app.get(&format!("{ticket}/notes"), &owner.bearer()).await;
    let notes = notes.body["items"].as_array().unwrap().clone();
    assert_eq!(notes.len(), 1);
    assert_eq!(notes[0]["internalAnalysisFlag"], true);
    assert_eq!(notes[0]["detailDescriptionFlag"], false);
    let linked = app
        .post(
            &format!("{ticket}/configurations"),
            &owner.bearer(),
            json!({"configuration_id": 77}),
        )
        .await;
    assert_eq!(linked.status, 200, "{}", linked.text);
    let listed = app
        .get(&format!("{ticket}/configurations"), &owner.bearer())
        .await;
    assert_eq!(listed.body["items"][0]["id"], 77, "{}", listed.text);
    let unlinked = app
        .delete(&format!("{ticket}/configurations/77"), &owner.bearer())
        .await;
    assert_eq!(unlinked.status, 200, "{}", unlinked.text);
    let listed = app
        .get(&format!("{ticket}/configurations"), &owner.bearer())
        .await;
    assert_eq!(listed.body["items"], json!([]));
    app.post(
        &format!("{ticket}/time"),
        &owner.bearer(),
        json!({"start": "2026-11-24T09:00:00Z"}),
    )
    .await
    .assert_error(422);
    let logged = app
        .post(
            &format!("{ticket}/time"),
            &owner.bearer(),
            json!({"start": "2026-11-24T09:00:00Z", "hours": 1.5, "notes": "Upgraded", "billable": "Billable"}),
        )
        .await;
    assert_eq!(logged.status, 200, "{}", logged.text);
    let entries = app
        .get(&format!("{ticket}/timeentries"), &owner.bearer())
        .await;
    let entries = entries.body["items"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["chargeToId"], id);
    assert_eq!(entries[0]["billableOption"], "Billable");
    let schedule = app
        .get(
            "/api/v1/psa/service/tickets/3/scheduleentries",
            &owner.bearer(),
        )
        .await;
    assert_eq!(
        names(&schedule.body, "name"),
        ["Onsite visit"],
        "{}",
        schedule.text
    );
    let found = app
        .get(
            "/api/v1/psa/configurations?search=web&company_id=2",
            &owner.bearer(),
        )
        .await;
    assert_eq!(names(&found.body, "name"), ["WEB01"], "{}", found.text);

    // The sync pulls recently updated tickets over three pages, through a 500.
    psa.data.lock().unwrap().fail_once = Some("service/tickets".into());
    let job = sync(&app, &owner, "psa").await;
    assert_eq!(job["status"], "success", "{job}");
    let pulls = psa
        .data
        .lock()
        .unwrap()
        .requests
        .iter()
        .filter(|(method, path, query)| {
            method == "GET" && path == "service/tickets" && query.contains("orderBy=id")
        })
        .count();
    assert!(pulls >= 4, "three pages and the failed one: {pulls}");
    let synced = app.get("/api/v1/psa/synced-tickets", &owner.bearer()).await;
    assert_eq!(
        synced.body["total"], 6,
        "five recent and the new one: {}",
        synced.text
    );

    // Another tenant: nothing of it, no actions without its own config,
    // and wrong keys are an auth error.
    let other = app.register("other@msp.example").await;
    let theirs = app.get("/api/v1/psa/synced-tickets", &other.bearer()).await;
    assert_eq!(theirs.body["total"], 0, "{}", theirs.text);
    app.get("/api/v1/psa/companies", &other.bearer())
        .await
        .assert_error(409);
    app.get(&format!("{ticket}/notes"), &other.bearer())
        .await
        .assert_error(409);
    app.post(
        "/api/v1/psa/config",
        &other.bearer(),
        json!({"site": psa.site, "company_id": COMPANY, "public_key": PUBLIC_KEY,
               "private_key": "wrong", "client_id": CLIENT_ID}),
    )
    .await;
    let refused = app
        .post("/api/v1/psa/test-connection", &other.bearer(), json!({}))
        .await;
    refused.assert_error(502);
    assert_eq!(
        refused.body["type"], "upstream_auth_error",
        "{}",
        refused.text
    );

    // The private key never comes back.
    for path in ["/api/v1/psa/config", "/api/v1/jobs"] {
        let read = app.get(path, &owner.bearer()).await;
        assert!(!read.text.contains(PRIVATE_KEY), "{path}");
    }
    let _: Value = created.body;
    app.finish().await;
}
