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

backend_tests!(
    psa_live_actions_and_ticket_sync,
    psa_bulk_pull_views_export_and_isolation,
    psa_auto_config_seeds_only_an_empty_config_of_the_default_tenant,
    psa_tickets_from_vulnerabilities_with_context,
);

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

/// The service with the psa connector, upstreams on loopback allowed.
async fn start(backend: Backend) -> Option<TestApp> {
    let dir = connectors_dir(&["connectors/psa"], &[]);
    TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
    })
    .await
}

async fn psa_live_actions_and_ticket_sync(backend: Backend) {
    let psa = FakePsa::start(data()).await;
    let Some(app) = start(backend).await else {
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
    let tickets = |query: &str| format!("/api/v1/psa/tickets?board_id=1&search=chrome&{query}");
    let page = app.get(&tickets("limit=2"), &owner.bearer()).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert_eq!(page.body["items"].as_array().unwrap().len(), 2);
    assert_eq!(
        (&page.body["skip"], &page.body["limit"]),
        (&json!(0), &json!(2))
    );
    assert_eq!(page.body["has_more"], true);
    let ids = |body: &Value| -> Vec<Value> {
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].clone())
            .collect()
    };
    let all = app.get(&tickets("limit=10"), &owner.bearer()).await;
    assert_eq!(ids(&all.body).len(), 5, "{}", all.text);
    assert_eq!(all.body["has_more"], false);
    // A skip across ConnectWise's pages reads both and answers the items
    // in between; the deprecated page and page_size still answer.
    let across = app.get(&tickets("skip=1&limit=2"), &owner.bearer()).await;
    assert_eq!(ids(&across.body), ids(&all.body)[1..3], "{}", across.text);
    assert_eq!(across.body["has_more"], true);
    let last = app.get(&tickets("skip=4&limit=2"), &owner.bearer()).await;
    assert_eq!(ids(&last.body), ids(&all.body)[4..], "{}", last.text);
    assert_eq!(last.body["has_more"], false);
    let old = app
        .get(&tickets("page_size=2&page=3"), &owner.bearer())
        .await;
    assert_eq!(ids(&old.body), ids(&all.body)[4..], "{}", old.text);
    app.get(&tickets("limit=501"), &owner.bearer())
        .await
        .assert_error(422);
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

const BULK_BOARD: (u64, &str) = (7, "Escalations");
const FIRST_BULK_TICKET: u64 = 50_000;

fn config(site: &str) -> Value {
    json!({"site": site, "company_id": COMPANY, "public_key": PUBLIC_KEY,
           "private_key": PRIVATE_KEY, "client_id": CLIENT_ID})
}

/// Starts a bulk pull of `parameters` and waits for it to end.
async fn bulk_pull(app: &TestApp, account: &cairn_tests::Account, parameters: Value) -> Value {
    let started = app
        .post("/api/v1/psa/bulk-pull", &account.bearer(), parameters)
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    let job_id = started.body["job_id"].as_str().unwrap().to_string();
    app.wait_for_job(account, &job_id).await
}

fn csv_lines(text: &str) -> Vec<&str> {
    text.split("\r\n").filter(|l| !l.is_empty()).collect()
}

async fn psa_bulk_pull_views_export_and_isolation(backend: Backend) {
    let mut data = data();
    let (tickets, notes) = fake_psa::board(BULK_BOARD, FIRST_BULK_TICKET, 250, 4);
    data.tickets.extend(tickets);
    data.notes.extend(notes);
    let psa = FakePsa::start(data).await;
    let Some(app) = start(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let member = app.add_member(&owner, "tech@msp.example", "member").await;
    let other = app.register("other@msp.example").await;
    let saved = app
        .post("/api/v1/psa/config", &owner.bearer(), config(&psa.site))
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);

    // The parameters are checked before anything is queued.
    for (body, field) in [
        (json!({}), "body.board_id"),
        (json!({"board_id": "seven"}), "body.board_id"),
        (json!({"board_id": 7, "colour": "red"}), "body"),
    ] {
        let refused = app
            .post("/api/v1/psa/bulk-pull", &member.bearer(), body)
            .await;
        refused.assert_error(422);
        assert!(
            refused.body["field"]
                .as_str()
                .unwrap_or("")
                .starts_with(field),
            "{}",
            refused.text
        );
    }
    // Members read and comment; configuring is for admins.
    app.post("/api/v1/psa/config", &member.bearer(), config(&psa.site))
        .await
        .assert_error(403);
    let commented = app
        .post(
            "/api/v1/psa/service/tickets/3/notes",
            &member.bearer(),
            json!({"text": "Called the customer"}),
        )
        .await;
    assert_eq!(commented.status, 200, "{}", commented.text);
    let none_yet = app
        .get("/api/v1/psa/bulk-pull/status", &member.bearer())
        .await;
    assert_eq!(none_yet.body["current"], Value::Null, "{}", none_yet.text);

    // A member pulls the board: three pages of tickets, each ticket's notes,
    // through one 500 on a notes request.
    psa.data.lock().unwrap().fail_once =
        Some(format!("service/tickets/{}/notes", FIRST_BULK_TICKET + 3));
    let job = bulk_pull(
        &app,
        &member,
        json!({"board_id": 7, "tickets_per_page": 100}),
    )
    .await;
    assert_eq!(job["status"], "success", "{job}");
    let status = app
        .get("/api/v1/psa/bulk-pull/status", &member.bearer())
        .await;
    assert_eq!(
        status.body["current"]["status"], "success",
        "{}",
        status.text
    );
    assert_eq!(status.body["current"]["args"]["parameters"]["board_id"], 7);
    assert_eq!(
        status.body["current"]["progress"]["done"],
        250 * 5,
        "tickets and notes: {}",
        status.text
    );
    let ticket_pages = psa
        .data
        .lock()
        .unwrap()
        .requests
        .iter()
        .filter(|(_, path, query)| path == "service/tickets" && query.contains("board%2Fid%3D7"))
        .count();
    assert_eq!(ticket_pages, 3, "250 tickets, 100 a page");

    let listed = app
        .get("/api/v1/psa/bulk-tickets?limit=10", &member.bearer())
        .await;
    assert_eq!(listed.status, 200, "{}", listed.text);
    assert_eq!(listed.body["total"], 250, "only the board's tickets");
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 10);
    let closed = app
        .get("/api/v1/psa/bulk-tickets?closed=true", &member.bearer())
        .await;
    assert_eq!(closed.body["total"], 36, "every seventh: {}", closed.text);
    let globex = app
        .get(
            "/api/v1/psa/bulk-tickets?company=globex&search=workstation",
            &member.bearer(),
        )
        .await;
    // Every third ticket from the second is Globex's; the second's summary
    // is the formula, which does not say "workstation".
    assert_eq!(globex.body["total"], 82, "{}", globex.text);
    let second = FIRST_BULK_TICKET + 1;
    let notes = app
        .get(
            &format!("/api/v1/psa/bulk-tickets/{second}/notes"),
            &member.bearer(),
        )
        .await;
    assert_eq!(notes.status, 200, "{}", notes.text);
    assert_eq!(notes.body["total"], 4, "{}", notes.text);
    let mut texts: Vec<&str> = notes.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["fields"]["text"].as_str().unwrap())
        .collect();
    texts.sort();
    assert!(texts[0].starts_with("Step 0"), "{texts:?}");
    let failed_over = app
        .get(
            &format!("/api/v1/psa/bulk-tickets/{}/notes", FIRST_BULK_TICKET + 3),
            &member.bearer(),
        )
        .await;
    assert_eq!(failed_over.body["total"], 4, "the 500 was retried");

    // The export streams every match, the formula neutralized.
    let export = app
        .http
        .get(format!("{}/api/v1/psa/bulk-tickets/export.csv", app.url))
        .bearer_auth(&member.access_token)
        .send()
        .await
        .unwrap();
    assert_eq!(export.status(), 200);
    assert!(export.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    let text = export.text().await.unwrap();
    let lines = csv_lines(&text);
    assert_eq!(lines.len(), 251, "a header and 250 tickets");
    assert!(
        lines[0].starts_with("key,summary,status,board,company"),
        "{}",
        lines[0]
    );
    let formula = lines
        .iter()
        .find(|l| l.starts_with(&format!("{second},")))
        .expect("the formula ticket");
    assert!(
        formula.contains(",\"'=HYPERLINK(\"\"http://evil.example\"\",\"\"click\"\")\","),
        "{formula}"
    );
    assert!(!lines.iter().any(|l| l.contains(",=") || l.contains(",\"=")));
    let filtered = app
        .get(
            "/api/v1/psa/bulk-tickets/export.csv?closed=true",
            &member.bearer(),
        )
        .await;
    assert_eq!(csv_lines(&filtered.text).len(), 37, "{}", filtered.text);
    app.get(
        "/api/v1/psa/bulk-tickets/export.csv?limit=5",
        &member.bearer(),
    )
    .await
    .assert_error(422);
    app.get(
        "/api/v1/psa/bulk-tickets/export.csv?colour=red",
        &member.bearer(),
    )
    .await
    .assert_error(422);

    // A sync afterwards keeps what the pull stored; pulling again
    // overwrites, never duplicates.
    let synced = sync(&app, &owner, "psa").await;
    assert_eq!(synced["status"], "success", "{synced}");
    let job = bulk_pull(
        &app,
        &owner,
        json!({"board_id": 7, "include_closed": false}),
    )
    .await;
    assert_eq!(job["status"], "success", "{job}");
    let listed = app.get("/api/v1/psa/bulk-tickets", &member.bearer()).await;
    assert_eq!(listed.body["total"], 250, "{}", listed.text);
    let notes = app
        .get(
            &format!("/api/v1/psa/bulk-tickets/{second}/notes"),
            &member.bearer(),
        )
        .await;
    assert_eq!(notes.body["total"], 4);

    // Another tenant sees none of it and cannot pull without a config.
    let theirs = app.get("/api/v1/psa/bulk-tickets", &other.bearer()).await;
    assert_eq!(theirs.body["total"], 0, "{}", theirs.text);
    let theirs = app
        .get(
            &format!("/api/v1/psa/bulk-tickets/{second}/notes"),
            &other.bearer(),
        )
        .await;
    assert_eq!(theirs.body["total"], 0, "{}", theirs.text);
    let theirs = app
        .get("/api/v1/psa/bulk-tickets/export.csv", &other.bearer())
        .await;
    assert_eq!(
        csv_lines(&theirs.text).len(),
        1,
        "the header only: {}",
        theirs.text
    );
    let theirs = app
        .get("/api/v1/psa/bulk-pull/status", &other.bearer())
        .await;
    assert_eq!(theirs.body["current"], Value::Null, "{}", theirs.text);
    app.post(
        "/api/v1/psa/bulk-pull",
        &other.bearer(),
        json!({"board_id": 7}),
    )
    .await
    .assert_error(409);

    // Removing the config removes what the pulls stored.
    let removed = app.delete("/api/v1/psa/config", &owner.bearer()).await;
    assert_eq!(removed.status, 204, "{}", removed.text);
    let gone = app.get("/api/v1/psa/bulk-tickets", &member.bearer()).await;
    assert_eq!(gone.body["total"], 0, "{}", gone.text);
    app.finish().await;
}

async fn psa_auto_config_seeds_only_an_empty_config_of_the_default_tenant(backend: Backend) {
    let psa = FakePsa::start(data()).await;
    let Some(scratch) = cairn_tests::ScratchDatabase::create(backend).await else {
        return;
    };
    let url = scratch.url.clone();
    let key = "44".repeat(32);
    let dir = connectors_dir(&["connectors/psa"], &[]);
    // A first start makes the operator's tenant; the second names it the
    // deployment's default tenant, with a psa seed.
    let (first_url, first_key, first_dir) = (url.clone(), key.clone(), dir.clone());
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = first_dir;
        s.database_url = first_url;
        s.encryption_key = first_key;
    })
    .await
    else {
        return;
    };
    let operator = app.register("ops@msp.example").await;
    app.register("customer@msp.example").await;
    app.finish().await;
    let seed = json!({"psa": config(&psa.site)}).to_string();
    let default_tenant = operator.tenant_id.clone();
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.database_url = url;
        s.encryption_key = key;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.default_tenant_id = default_tenant;
        s.seed_configs = seed;
    })
    .await
    else {
        return;
    };
    let operator = app.login("ops@msp.example").await;
    let customer = app.login("customer@msp.example").await;
    let member = app
        .add_member(&operator, "tech@msp.example", "member")
        .await;

    // Startup seeded the default tenant; auto-config leaves it as it is.
    let replaced = app
        .post(
            "/api/v1/psa/config",
            &operator.bearer(),
            json!({"site": psa.site, "company_id": "other_co", "public_key": PUBLIC_KEY,
                   "private_key": "kept-secret-3141", "client_id": CLIENT_ID}),
        )
        .await;
    assert_eq!(replaced.status, 200, "{}", replaced.text);
    let auto = app
        .post("/api/v1/psa/auto-config", &operator.bearer(), json!({}))
        .await;
    assert_eq!(auto.status, 200, "{}", auto.text);
    assert_eq!(auto.body["seeded"], false);
    assert_eq!(auto.body["config"]["config"]["company_id"], "other_co");
    let state = &app.server.state;
    let tenant = cairn_core::ids::TenantId(operator.tenant_id.clone());
    let stored = cairn_integrations::storage::config(&state.db, &state.secrets, &tenant, "psa")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.secrets["private_key"], "kept-secret-3141",
        "never overwritten"
    );

    // Once removed, auto-config stores the deployment's again.
    let removed = app.delete("/api/v1/psa/config", &operator.bearer()).await;
    assert_eq!(removed.status, 204);
    app.post("/api/v1/psa/auto-config", &member.bearer(), json!({}))
        .await
        .assert_error(403);
    let auto = app
        .post("/api/v1/psa/auto-config", &operator.bearer(), json!({}))
        .await;
    assert_eq!(auto.status, 200, "{}", auto.text);
    assert_eq!(auto.body["seeded"], true);
    assert_eq!(auto.body["config"]["config"]["company_id"], COMPANY);
    assert_eq!(auto.body["config"]["config"]["private_key"], "********");
    let status = app.get("/api/v1/psa/status", &member.bearer()).await;
    assert_eq!(status.body["connected"], true, "{}", status.text);

    // Another tenant never gets the operator's credentials.
    let refused = app
        .post("/api/v1/psa/auto-config", &customer.bearer(), json!({}))
        .await;
    refused.assert_error(403);
    let theirs = app.get("/api/v1/psa/config", &customer.bearer()).await;
    assert_eq!(theirs.body["configured"], false, "{}", theirs.text);
    app.finish().await;
    scratch.remove().await;
}

async fn psa_tickets_from_vulnerabilities_with_context(backend: Backend) {
    use super::vulnerabilities::{loaded_with, scan, software};
    let psa = FakePsa::start(data()).await;
    let dir = connectors_dir(&["connectors/psa"], &[]);
    let Some((app, _nvd)) = loaded_with(backend, move |s| s.connectors_dir = dir).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let member = app.add_member(&owner, "tech@msp.example", "member").await;
    let other = app.register("other@msp.example").await;
    let chrome = |device: &str| {
        software(
            device,
            "Google Chrome",
            "Google LLC",
            "112.0.5615.49",
            "windows",
        )
    };
    app.seed(&owner, "rmm", &[chrome("WEB01"), chrome("LAPTOP-9")])
        .await;
    app.seed(
        &owner,
        "edr",
        &[cairn_tests::inventory::device_record(
            "web01.corp.example",
            json!({"name": "web01.corp.example", "agent_id": "agent-771", "infected": false}),
        )],
    )
    .await;
    let scanned = scan(&app, &owner, json!({})).await;
    assert!(scanned["findings"].as_i64().unwrap() >= 2, "{scanned}");

    // Before psa is configured: a clear 409, and nothing is claimed.
    let body = json!({"cve_id": "cve-2023-2033", "company_id": 2, "board_id": 1});
    app.post(
        "/api/v1/psa/tickets/from-vuln",
        &member.bearer(),
        body.clone(),
    )
    .await
    .assert_error(409);
    let saved = app
        .post("/api/v1/psa/config", &owner.bearer(), config(&psa.site))
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);

    for (bad, status, field) in [
        (
            json!({"cve_id": "log4shell", "company_id": 2}),
            422,
            "cve_id",
        ),
        (json!({"cve_id": "CVE-2023-2033"}), 422, ""),
        (
            json!({"cve_id": "CVE-2023-2033", "company_id": 2, "colour": 1}),
            422,
            "",
        ),
        (json!({"cve_id": "CVE-2098-0404", "company_id": 2}), 404, ""),
        (
            json!({"cve_id": "CVE-2023-2033", "company_id": 2, "device": "NOPE"}),
            404,
            "",
        ),
    ] {
        let refused = app
            .post(
                "/api/v1/psa/tickets/from-vuln",
                &member.bearer(),
                bad.clone(),
            )
            .await;
        refused.assert_error(status);
        if !field.is_empty() {
            assert_eq!(refused.body["field"], field, "{bad}: {}", refused.text);
        }
    }
    // The upstream refuses an unknown company: its 422 names the field,
    // and the claim is released.
    let refused = app
        .post(
            "/api/v1/psa/tickets/from-vuln",
            &member.bearer(),
            json!({"cve_id": "CVE-2023-2033", "company_id": 999}),
        )
        .await;
    refused.assert_error(422);

    // A member raises the ticket: KEV, two devices, WEB01's configuration
    // linked (LAPTOP-9 has none upstream).
    let raised = app
        .post(
            "/api/v1/psa/tickets/from-vuln",
            &member.bearer(),
            body.clone(),
        )
        .await;
    assert_eq!(raised.status, 201, "{}", raised.text);
    assert_eq!(raised.body["created"], true);
    assert_eq!(
        raised.body["summary"], "[KEV] CVE-2023-2033: Google Chrome on 2 devices",
        "{}",
        raised.text
    );
    assert_eq!(raised.body["devices"], json!(["LAPTOP-9", "WEB01"]));
    assert_eq!(
        raised.body["linked_configurations"],
        json!([{"device": "WEB01", "configuration_id": "77"}])
    );
    assert_eq!(raised.body["not_linked"][0]["device"], "LAPTOP-9");
    let ticket_id = raised.body["ticket_id"].as_str().unwrap().to_string();
    {
        let data = psa.data.lock().unwrap();
        let sent = data.created_tickets.last().unwrap();
        let description = sent["initialDescription"].as_str().unwrap();
        for expected in [
            "CVE-2023-2033 (HIGH",
            "in CISA's KEV catalog since",
            "EPSS:",
            "- LAPTOP-9: Google Chrome 112.0.5615.49, fixed in",
            "- WEB01: Google Chrome 112.0.5615.49",
        ] {
            assert!(
                description.contains(expected),
                "{expected:?} in {description}"
            );
        }
        assert_eq!(sent["board"]["id"], 1);
        assert!(sent["summary"].as_str().unwrap().chars().count() <= 100);
        let linked = data
            .ticket_configurations
            .iter()
            .filter(|(t, _)| t.to_string() == ticket_id)
            .count();
        assert_eq!(linked, 1);
    }

    // Asked again: the same ticket, nothing sent upstream; unless asked
    // for a new one.
    let created_before = psa.data.lock().unwrap().created_tickets.len();
    let again = app
        .post(
            "/api/v1/psa/tickets/from-vuln",
            &owner.bearer(),
            body.clone(),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body["created"], false);
    assert_eq!(again.body["ticket_id"], ticket_id.as_str());
    assert_eq!(
        psa.data.lock().unwrap().created_tickets.len(),
        created_before
    );
    let mut forced = body.clone();
    forced["force_new"] = json!(true);
    forced["device"] = json!("web01");
    let fresh = app
        .post("/api/v1/psa/tickets/from-vuln", &owner.bearer(), forced)
        .await;
    assert_eq!(fresh.status, 201, "{}", fresh.text);
    assert_ne!(fresh.body["ticket_id"], ticket_id.as_str());
    assert_eq!(
        fresh.body["summary"],
        "[KEV] CVE-2023-2033: Google Chrome on 1 device"
    );

    // The analyst's context: the CVE with KEV, the affected inventory, the
    // EDR agent of the linked configuration (known by its FQDN there).
    let ticket = format!("/api/v1/psa/service/tickets/{ticket_id}");
    let context = app
        .get(&format!("{ticket}/context"), &member.bearer())
        .await;
    assert_eq!(context.status, 200, "{}", context.text);
    assert_eq!(context.body["cves"][0]["cve_id"], "CVE-2023-2033");
    assert_eq!(
        context.body["cves"][0]["cve"]["kev"], true,
        "{}",
        context.text
    );
    assert_eq!(context.body["cves"][0]["affected_total"], 2);
    assert_eq!(context.body["configurations"][0]["name"], "WEB01");
    assert_eq!(
        context.body["configurations"][0]["edr_agent"]["fields"]["agent_id"], "agent-771",
        "{}",
        context.text
    );
    app.get(
        "/api/v1/psa/service/tickets/999999/context",
        &member.bearer(),
    )
    .await
    .assert_error(404);

    // The full ticket: live, then after a sync with the kept copy, then
    // from the kept copy when the upstream cannot be reached.
    let full = app.get(&format!("{ticket}/full"), &member.bearer()).await;
    assert_eq!(full.status, 200, "{}", full.text);
    assert_eq!(full.body["source"], "live");
    assert_eq!(full.body["kept"], json!({}));
    let synced = sync(&app, &owner, "psa").await;
    assert_eq!(synced["status"], "success", "{synced}");
    let full = app.get(&format!("{ticket}/full"), &member.bearer()).await;
    assert_eq!(full.body["source"], "live");
    assert_eq!(
        full.body["kept"]["synced"]["record"]["id"].to_string(),
        ticket_id
    );
    let mut unreachable = config("http://127.0.0.1:9");
    unreachable["connector"] = json!("connectwise-psa");
    let saved = app
        .post("/api/v1/psa/config", &owner.bearer(), unreachable)
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let full = app.get(&format!("{ticket}/full"), &member.bearer()).await;
    assert_eq!(full.status, 200, "{}", full.text);
    assert_eq!(full.body["source"], "synced");
    assert!(full.body["live_error"].as_str().is_some(), "{}", full.text);
    app.get("/api/v1/psa/service/tickets/999999/full", &member.bearer())
        .await
        .assert_error(502);

    // Another tenant on the same upstream: its own ticket, none of the
    // first tenant's findings or agents in its context.
    let saved = app
        .post("/api/v1/psa/config", &other.bearer(), config(&psa.site))
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let theirs = app
        .post(
            "/api/v1/psa/tickets/from-vuln",
            &other.bearer(),
            body.clone(),
        )
        .await;
    assert_eq!(theirs.status, 201, "{}", theirs.text);
    assert_eq!(theirs.body["devices"], json!([]));
    assert_ne!(theirs.body["ticket_id"], ticket_id.as_str());
    let context = app.get(&format!("{ticket}/context"), &other.bearer()).await;
    assert_eq!(context.status, 200, "{}", context.text);
    assert_eq!(
        context.body["cves"][0]["affected_total"], 0,
        "{}",
        context.text
    );
    assert_eq!(context.body["configurations"][0]["edr_agent"], Value::Null);
    let full = app.get(&format!("{ticket}/full"), &other.bearer()).await;
    assert_eq!(full.body["kept"], json!({}), "{}", full.text);
    app.finish().await;
}
