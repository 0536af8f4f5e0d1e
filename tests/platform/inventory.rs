//! The software rollup, the NetBIOS asset view and the inventory and
//! devices routes over HTTP, with inventory written through the host's own
//! sync write path and rebuilt by the rollup job.

use cairn_core::db::fence::NoFence;
use cairn_plugins::{InventoryRow, MappedRow};
use cairn_tests::inventory::{device_record, full_item, item, sorted_names};
use cairn_tests::{backend_tests, Account, Backend, TestApp};
use serde_json::{json, Value};

backend_tests!(
    rollup_applies_each_rule_and_drops_stale_applications,
    application_routes_filter_page_and_count,
    netbios_forms_merge_into_one_asset_with_source_detail,
    inventory_and_devices_are_scoped_by_tenant,
);

async fn app(backend: Backend) -> Option<TestApp> {
    TestApp::start_with(backend, |s| {
        s.job_poll_interval_ms = 50;
    })
    .await
}

async fn applications(app: &TestApp, account: &Account, query: &str) -> Value {
    let resp = app
        .get(
            &format!("/api/v1/inventory/applications{query}"),
            &account.bearer(),
        )
        .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    resp.body
}

fn by_name<'a>(page: &'a Value, name: &str) -> &'a Value {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("{name} missing from {page}"))
}

async fn rollup_applies_each_rule_and_drops_stale_applications(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let guid = "Teams Machine-Wide Installer (3F2504E0-4F89-11D3-9A0C-0305E82C3301)";
    let rows = vec![
        // Installer-id suffixes merge; (x64) stays its own application.
        item("WS-01", guid, "Microsoft", "1.5.0.30767", "windows"),
        item(
            "WS-02",
            "Teams Machine-Wide Installer (a1b2c3d4e5)",
            "Microsoft Corporation",
            "1.6.0.1",
            "Windows",
        ),
        item(
            "WS-03",
            "Teams Machine-Wide Installer",
            "Microsoft Corporation",
            "1.6.0.1",
            "WINDOWS",
        ),
        item(
            "WS-03",
            "7-Zip 23.01 (x64)",
            "Igor Pavlov",
            "23.01",
            "windows",
        ),
        // The dominant vendor is on the most devices.
        item(
            "WS-04",
            "Teams Machine-Wide Installer",
            "Microsoft Corporation",
            "1.6.0.1",
            "macos",
        ),
        // Versions of one device count once per version, the device once.
        item(
            "WS-04",
            "Teams Machine-Wide Installer",
            "Microsoft Corporation",
            "1.10.0.2",
            "macos",
        ),
        // No name: no application.
        item("WS-05", "", "Nobody", "1", "linux"),
        // Control characters and NULs are stripped.
        item("WS-05", "Note\0pad\u{7}++", "Don\u{1}Ho", "8.6", "linux"),
    ];
    app.seed(&owner, "rmm", &rows).await;
    app.seed(
        &owner,
        "edr",
        &[item(
            "WS-01",
            "7-Zip 23.01 (x64)",
            "Igor Pavlov",
            "22.01",
            "windows",
        )],
    )
    .await;
    let job = app.rebuild(&owner).await;
    assert_eq!(job["status"], "success", "{job}");
    assert!(job["progress"]["detail"]
        .as_str()
        .unwrap()
        .contains("3 applications"));

    let page = applications(&app, &owner, "").await;
    assert_eq!(
        sorted_names(&page),
        [
            "7-Zip 23.01 (x64)",
            "Notepad++",
            "Teams Machine-Wide Installer"
        ]
    );
    let teams = by_name(&page, "Teams Machine-Wide Installer");
    assert_eq!(teams["device_count"], 4);
    assert_eq!(teams["vendor"], "Microsoft Corporation");
    assert_eq!(teams["most_common_version"], "1.6.0.1");
    assert_eq!(teams["newest_version"], "1.10.0.2");
    assert_eq!(teams["oldest_version"], "1.5.0.30767");
    assert_eq!(
        teams["version_counts"],
        json!([
            {"version": "1.6.0.1", "count": 3},
            {"version": "1.10.0.2", "count": 1},
            {"version": "1.5.0.30767", "count": 1}
        ])
    );
    assert_eq!(teams["platforms"], json!(["macOS", "Windows"]));
    assert_eq!(teams["sources"], json!(["rmm"]));
    let zip = by_name(&page, "7-Zip 23.01 (x64)");
    assert_eq!(zip["sources"], json!(["edr", "rmm"]));
    assert_eq!(zip["device_count"], 2);
    let notepad = by_name(&page, "Notepad++");
    assert_eq!(notepad["vendor"], "DonHo");
    // Most installed first by default.
    assert_eq!(page["items"][0]["name"], "Teams Machine-Wide Installer");
    let teams_id = teams["id"].as_str().unwrap().to_string();
    let first_rollup = teams["rollup_at"].as_str().unwrap().to_string();

    // WS-05 is re-imaged: a new run of rmm no longer reports Notepad++.
    let tenant = cairn_core::ids::TenantId(owner.tenant_id.clone());
    let kept: Vec<MappedRow> = rows[..6].to_vec();
    let mut tx = app.db().pool.begin().await.unwrap();
    cairn_integrations::storage::upsert_rows(&mut tx, &tenant, "rmm", ("second", 0), &kept)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    cairn_inventory::seen::prune_unseen(app.db(), &NoFence, &tenant, "rmm", "second")
        .await
        .unwrap();
    let job = app.rebuild(&owner).await;
    // Only WS-05 changed: its rows are folded in, nothing else is read.
    assert_eq!(
        job["progress"]["detail"],
        "2 inventory changes folded in: 1 applications and 1 assets recomputed from 0 items"
    );
    let page = applications(&app, &owner, "").await;
    assert_eq!(
        sorted_names(&page),
        ["7-Zip 23.01 (x64)", "Teams Machine-Wide Installer"]
    );
    let teams = by_name(&page, "Teams Machine-Wide Installer");
    assert_eq!(teams["id"], teams_id.as_str(), "ids survive rebuilds");
    assert_eq!(
        teams["rollup_at"],
        first_rollup.as_str(),
        "an application no change touched keeps the run that produced it"
    );
    let stats = app.get("/api/v1/inventory/stats", &owner.bearer()).await;
    assert_eq!(stats.body["applications"], 2, "{}", stats.text);
    assert_eq!(stats.body["vulnerabilities"], 0);
    app.finish().await;
}

async fn application_routes_filter_page_and_count(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let mut rows = vec![];
    for d in 0..6 {
        rows.push(item(
            &format!("PC-{d}"),
            "Google Chrome",
            "Google",
            "120.0",
            "windows",
        ));
    }
    for d in 0..3 {
        rows.push(item(
            &format!("PC-{d}"),
            "Google Drive",
            "Google",
            "85.0",
            "windows",
        ));
        rows.push(item(
            &format!("PC-{d}"),
            "Mozilla Firefox",
            "Mozilla",
            "128.0",
            "windows",
        ));
    }
    rows.push(item(
        "PC-0",
        "Zoom (deadbeefcafe)",
        "Zoom",
        "5.17",
        "windows",
    ));
    rows.push(item("PC-1", "Zoom", "Zoom", "5.16", "windows"));
    app.seed(&owner, "rmm", &rows).await;
    app.rebuild(&owner).await;

    let page = applications(&app, &owner, "?limit=2&skip=1").await;
    assert_eq!(page["total"], 4);
    assert_eq!(page["skip"], 1);
    assert_eq!(page["limit"], 2);
    let listed: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["Google Drive", "Mozilla Firefox"]);
    assert_eq!(
        sorted_names(&applications(&app, &owner, "?vendor=GOOGLE").await),
        ["Google Chrome", "Google Drive"]
    );
    assert_eq!(
        sorted_names(&applications(&app, &owner, "?search=fire").await),
        ["Mozilla Firefox"]
    );
    let sorted = applications(&app, &owner, "?sort=-name").await;
    assert_eq!(sorted["items"][0]["name"], "Zoom");
    for bad in [
        "?sort=tenant_id",
        "?skip=-1",
        "?limit=0",
        "?limit=abc",
        "?limit=501",
        "?limit=100000",
    ] {
        let resp = app
            .get(
                &format!("/api/v1/inventory/applications{bad}"),
                &owner.bearer(),
            )
            .await;
        resp.assert_error(422);
    }
    // The largest page is answered; one larger is refused above, never
    // silently cut.
    assert_eq!(applications(&app, &owner, "?limit=500").await["limit"], 500);

    let chrome_id = by_name(&applications(&app, &owner, "").await, "Google Chrome")["id"]
        .as_str()
        .unwrap()
        .to_string();
    let one = app
        .get(
            &format!("/api/v1/inventory/applications/{chrome_id}"),
            &owner.bearer(),
        )
        .await;
    assert_eq!(one.body["device_count"], 6, "{}", one.text);
    app.get("/api/v1/inventory/applications/nope", &owner.bearer())
        .await
        .assert_error(404);

    let vendors = app.get("/api/v1/inventory/vendors", &owner.bearer()).await;
    assert_eq!(
        vendors.body["items"][0],
        json!({"name": "Google", "application_count": 2, "device_count": 6, "cve_count": 0})
    );
    let list = app
        .get("/api/v1/inventory/apps-list?search=o", &owner.bearer())
        .await;
    assert_eq!(
        list.body[0],
        json!({"name": "Google Chrome", "device_count": 6, "cve_count": 0})
    );
    let stats = app.get("/api/v1/inventory/stats", &owner.bearer()).await;
    assert_eq!(
        (
            &stats.body["applications"],
            &stats.body["devices"],
            &stats.body["vendors"]
        ),
        (&json!(4), &json!(6), &json!(3))
    );

    // Items of an application include its installer-id spellings.
    let zoom = app
        .get("/api/v1/inventory/items?application=Zoom", &owner.bearer())
        .await;
    assert_eq!(zoom.body["total"], 2, "{}", zoom.text);
    let pc0 = app
        .get(
            "/api/v1/inventory/items?device_name=pc-0&limit=2",
            &owner.bearer(),
        )
        .await;
    assert_eq!(pc0.body["total"], 4, "{}", pc0.text);
    assert_eq!(pc0.body["items"].as_array().unwrap().len(), 2);
    app.get("/api/v1/inventory/items", &owner.bearer())
        .await
        .assert_error(422);
    let all = app
        .get("/api/v1/devices/items?search=mozilla", &owner.bearer())
        .await;
    assert_eq!(all.body["total"], 3);
    app.finish().await;
}

async fn netbios_forms_merge_into_one_asset_with_source_detail(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let long = "WORKSTATION-ACCOUNTING-01.corp.example.com";
    app.seed(
        &owner,
        "rmm",
        &[
            item(long, "Microsoft Excel", "Microsoft", "16.0", "windows"),
            item(
                "OTHER-PC",
                "Microsoft Excel",
                "Microsoft",
                "16.0",
                "windows",
            ),
        ],
    )
    .await;
    app.seed(
        &owner,
        "edr",
        &[MappedRow::Inventory(InventoryRow {
            user_email: Some("Ann@Corp.Example.com".into()),
            ..full_item("WORKSTATION-ACC", "Google Chrome", "Google", "120.0")
        })],
    )
    .await;
    let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
    app.seed(
        &owner,
        "mdm",
        &[device_record(
            "workstation-accounting-01.corp.example.com",
            json!({"managed_device_id": uuid, "compliance_state": "compliant", "serial_number": "SN-1"}),
        )],
    )
    .await;
    app.seed(
        &owner,
        "edr",
        &[device_record(
            "WORKSTATION-ACC",
            json!({"agent_version": "23.4", "infected": false, "active_threats": 0}),
        )],
    )
    .await;
    app.seed(
        &owner,
        "scanner",
        &[device_record(
            "workstation-acc.corp.example.com",
            json!({"risk_score": 7.5, "critical_count": 12}),
        )],
    )
    .await;
    app.rebuild(&owner).await;

    for name in [long, "WORKSTATION-ACC", "workstation-acc"] {
        let asset = app
            .get(&format!("/api/v1/devices/by-name/{name}"), &owner.bearer())
            .await;
        assert_eq!(asset.status, 200, "{name}: {}", asset.text);
        let asset = asset.body;
        assert_eq!(asset["device_name"], long);
        assert_eq!(asset["names"], json!(["WORKSTATION-ACC", long]));
        assert_eq!(asset["device_id"], uuid);
        assert_eq!(asset["user_email"], "ann@corp.example.com");
        assert_eq!(asset["sources"], json!(["edr", "rmm", "scanner"]));
        assert_eq!(
            asset["applications"],
            json!(["Google Chrome", "Microsoft Excel"])
        );
        assert_eq!(asset["mdm"]["compliance_state"], "compliant");
        assert_eq!(asset["edr"]["agent_version"], "23.4");
        assert_eq!(asset["scan"]["risk_score"], 7.5);
    }
    let by_id = app
        .get(&format!("/api/v1/devices/device/{uuid}"), &owner.bearer())
        .await;
    assert_eq!(by_id.body["device_name"], long, "{}", by_id.text);
    app.get("/api/v1/devices/device/unknown", &owner.bearer())
        .await
        .assert_error(404);
    app.get("/api/v1/devices/by-name/NOPE", &owner.bearer())
        .await
        .assert_error(404);

    // The exact-name view keeps the two spellings apart.
    let devices = app.get("/api/v1/devices/devices", &owner.bearer()).await;
    assert_eq!(devices.body["total"], 3, "{}", devices.text);
    let by_app = app
        .get(
            "/api/v1/devices/by-application/microsoft%20excel",
            &owner.bearer(),
        )
        .await;
    assert_eq!(by_app.body["total"], 2, "{}", by_app.text);
    let stats = app.get("/api/v1/devices/stats", &owner.bearer()).await;
    assert_eq!(stats.body["assets"], 2, "{}", stats.text);
    assert_eq!(stats.body["device_names"], 3);
    let sources: Vec<&str> = stats.body["by_source"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["edr", "rmm"]);

    // Asset search: bare fields before the joins, source fields after.
    let cases = [
        (
            json!({"field": "device_name", "operator": "equals", "value": "workstation-acc"}),
            1,
        ),
        (
            json!({"field": "application_name", "operator": "equals", "value": "google chrome"}),
            1,
        ),
        (
            json!({"field": "application_name", "operator": "not_contains", "value": "chrome"}),
            1,
        ),
        (
            json!({"field": "source", "operator": "equals", "value": "scanner"}),
            1,
        ),
        (
            json!({"field": "mdm.compliance_state", "operator": "equals", "value": "Compliant"}),
            1,
        ),
        (
            json!({"field": "mdm.serial_number", "operator": "is_empty"}),
            1,
        ),
        (
            json!({"field": "edr.infected", "operator": "equals", "value": "false"}),
            1,
        ),
        (
            json!({"field": "edr.infected", "operator": "equals", "value": true}),
            0,
        ),
        (
            json!({"field": "edr.active_threats", "operator": "lte", "value": "0"}),
            1,
        ),
        (
            json!({"field": "scan.risk_score", "operator": "gte", "value": 7}),
            1,
        ),
        (
            json!({"field": "scan.risk_score", "operator": "gt", "value": "7.5"}),
            0,
        ),
        (
            json!({"field": "application_count", "operator": "equals", "value": "2"}),
            1,
        ),
        (
            json!({"field": "last_seen", "operator": "gt", "value": "2000-01-01"}),
            2,
        ),
        (
            json!({"field": "last_seen", "operator": "lt", "value": "2000-01-01T00:00:00Z"}),
            0,
        ),
    ];
    // A prefixed field outside the allow-list reaches no column: skipped
    // and named (spec rule 8), refused under `strict`.
    let query = json!({"kind": "group", "combinator": "and", "rules": [
        {"kind": "rule", "field": "scan.tenant_id", "operator": "is_empty"}]});
    let outside = app
        .post(
            "/api/v1/devices/devices/search",
            &owner.bearer(),
            json!({ "query": query }),
        )
        .await;
    assert_eq!(outside.status, 200, "{}", outside.text);
    assert_eq!(
        outside.body["skipped_rules"][0]["path"], "query.rules[0]",
        "{}",
        outside.text
    );
    let outside = app
        .post(
            "/api/v1/devices/devices/search",
            &owner.bearer(),
            json!({"query": query, "strict": true}),
        )
        .await;
    outside.assert_error(422);
    assert_eq!(
        outside.body["field"], "query.rules[0].field",
        "{}",
        outside.text
    );
    for (rule, want) in cases {
        let mut rule = rule;
        rule["kind"] = json!("rule");
        let resp = app
            .post(
                "/api/v1/devices/devices/search",
                &owner.bearer(),
                json!({"query": {"kind": "group", "combinator": "and", "rules": [rule.clone()]}}),
            )
            .await;
        assert_eq!(resp.status, 200, "{rule}: {}", resp.text);
        assert_eq!(resp.body["total"], want, "{rule}: {}", resp.text);
    }
    let bad_date = app
        .post(
            "/api/v1/devices/devices/search",
            &owner.bearer(),
            json!({"query": {"combinator": "and", "rules": [
                {"kind": "rule", "field": "last_seen", "operator": "gt", "value": "yesterday"}]}}),
        )
        .await;
    bad_date.assert_error(422);
    assert_eq!(bad_date.body["field"], "query.rules[0].value");
    assert!(
        bad_date.body["detail"]
            .as_str()
            .unwrap()
            .contains("`last_seen` needs a date"),
        "{}",
        bad_date.text
    );
    app.finish().await;
}

async fn inventory_and_devices_are_scoped_by_tenant(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let alice = app.register("alice@one.example").await;
    let bob = app.register("bob@two.example").await;
    let uuid = "11111111-2222-3333-4444-555555555555";
    app.seed(
        &alice,
        "rmm",
        &[MappedRow::Inventory(InventoryRow {
            device_id: Some(uuid.into()),
            ..full_item("SECRET-PC", "Secret App", "Acme", "1.0")
        })],
    )
    .await;
    app.seed(
        &bob,
        "rmm",
        &[item("BOB-PC", "Bob App", "Bobco", "2.0", "linux")],
    )
    .await;
    app.rebuild(&alice).await;
    app.rebuild(&bob).await;
    let secret_id = applications(&app, &alice, "").await["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();

    assert_eq!(
        sorted_names(&applications(&app, &bob, "").await),
        ["Bob App"]
    );
    // Hostile field names never reach another tenant's rows: skipped and
    // named (spec rule 8), or refused under `strict`; the rest of the
    // query finds nothing of Alice's.
    for field in ["tenant_id", "a.tenant_id", "1=1", "name) OR (1=1"] {
        let query = json!({"combinator": "or", "rules": [
            {"kind": "rule", "field": field, "operator": "equals", "value": alice.tenant_id},
            {"kind": "rule", "field": "name", "operator": "equals", "value": "Secret App"}]});
        let resp = app
            .post(
                "/api/v1/inventory/applications/search",
                &bob.bearer(),
                json!({ "query": query }),
            )
            .await;
        assert_eq!(resp.status, 200, "{field}: {}", resp.text);
        assert_eq!(resp.body["total"], 0, "{field}: {}", resp.text);
        assert_eq!(
            resp.body["skipped_rules"][0]["path"], "query.rules[0]",
            "{field}: {}",
            resp.text
        );
        let resp = app
            .post(
                "/api/v1/inventory/applications/search",
                &bob.bearer(),
                json!({"query": query, "strict": true}),
            )
            .await;
        resp.assert_error(422);
        assert_eq!(
            resp.body["field"], "query.rules[0].field",
            "{field}: {}",
            resp.text
        );
    }
    let resp = app
        .post(
            "/api/v1/inventory/applications/search",
            &bob.bearer(),
            json!({"query": {"combinator": "or", "rules": [
                {"kind": "rule", "field": "name", "operator": "equals", "value": "Secret App"}]}}),
        )
        .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(resp.body["total"], 0, "{}", resp.text);
    let not_found = [
        format!("/api/v1/inventory/applications/{secret_id}"),
        "/api/v1/devices/by-name/SECRET-PC".to_string(),
        format!("/api/v1/devices/device/{uuid}"),
    ];
    for path in &not_found {
        app.get(path, &bob.bearer()).await.assert_error(404);
        assert_eq!(app.get(path, &alice.bearer()).await.status, 200, "{path}");
    }
    let empty = [
        "/api/v1/inventory/items?application=Secret%20App",
        "/api/v1/inventory/items?device_name=SECRET-PC",
        "/api/v1/devices/items?search=secret",
        "/api/v1/devices/devices?search=secret",
        "/api/v1/devices/by-application/Secret%20App",
    ];
    for path in empty {
        let resp = app.get(path, &bob.bearer()).await;
        assert_eq!(resp.body["total"], 0, "{path}: {}", resp.text);
        assert_eq!(
            app.get(path, &alice.bearer()).await.body["total"],
            1,
            "{path}"
        );
    }
    let found = app
        .post(
            "/api/v1/devices/devices/search",
            &bob.bearer(),
            json!({"search": "secret"}),
        )
        .await;
    assert_eq!(found.body["total"], 0);
    let vendors = app.get("/api/v1/inventory/vendors", &bob.bearer()).await;
    assert_eq!(vendors.body["total"], 1);
    let list = app
        .get("/api/v1/inventory/apps-list?search=secret", &bob.bearer())
        .await;
    assert_eq!(list.body, json!([]));
    let stats = app.get("/api/v1/devices/stats", &bob.bearer()).await;
    assert_eq!(stats.body["assets"], 1);
    app.get("/api/v1/inventory/applications", &cairn_tests::Auth::None)
        .await
        .assert_error(401);
    app.finish().await;
}
