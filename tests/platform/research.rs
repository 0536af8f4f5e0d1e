//! Tags, projects, research, version tracking and weaknesses, end to end
//! on the CVE store of the fake NVD: each answers from the tenant's own
//! findings and inventory, and nothing of one tenant is visible to or
//! changeable by another.

use cairn_plugins::MappedRow;
use cairn_tests::{backend_tests, Account, Backend, TestApp};
use reqwest::Method;
use serde_json::{json, Value};

use super::vulnerabilities::{loaded_with, scan, software};

backend_tests!(
    tags_and_projects_belong_to_their_tenant,
    research_answers_from_the_store_and_from_nvd,
    versions_and_weaknesses_follow_the_tenants_findings,
    threat_intel_reads_exploitation_and_exposure,
    triage_answers_as_its_contract_says,
    text_with_nul_is_never_a_server_error,
);

/// The owner's software, with Chrome at `ws01_chrome` on WS-01.
fn owner_rows(ws01_chrome: &str) -> Vec<MappedRow> {
    let chrome = |device: &str, version: &str| {
        software(device, "Google Chrome", "Google LLC", version, "windows")
    };
    vec![
        chrome("WS-01", ws01_chrome),
        chrome("WS-02", "112.0.5615.49"),
        chrome("WS-03", "113.0.5672.63"),
        software(
            "WS-03",
            "Notepad Classic",
            "Example Tools",
            "1.4",
            "windows",
        ),
    ]
}

/// Chrome 112.0.5615.49 (open to CVE-2023-2033, fixed in
/// 112.0.5615.121) on WS-01 and WS-02, Chrome 113 on WS-03, Notepad on
/// WS-03; another tenant runs the vulnerable Chrome on THEIRS-1.
async fn seeded(app: &TestApp) -> (Account, Account) {
    let owner = app.register("owner@msp.example").await;
    let other = app.register("owner@other.example").await;
    app.seed(&owner, "rmm", &owner_rows("112.0.5615.49")).await;
    app.seed(
        &other,
        "rmm",
        &[software(
            "THEIRS-1",
            "Google Chrome",
            "Google LLC",
            "112.0.5615.49",
            "windows",
        )],
    )
    .await;
    for account in [&owner, &other] {
        app.rebuild(account).await;
        scan(app, account, json!({})).await;
    }
    (owner, other)
}

fn cve_ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| c["cve_id"].as_str().unwrap().to_string())
        .collect()
}

async fn tags_and_projects_belong_to_their_tenant(backend: Backend) {
    let Some((app, _nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let (owner, other) = seeded(&app).await;
    let member = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;

    // Tags: unique names ignoring case, checked colors.
    let urgent = app
        .post(
            "/api/v1/tags/",
            &member.bearer(),
            json!({"name": "Urgent", "color": "#FF0000"}),
        )
        .await;
    assert_eq!(urgent.status, 201, "{}", urgent.text);
    let tag_id = urgent.body["id"].as_str().unwrap().to_string();
    app.post(
        "/api/v1/tags/",
        &owner.bearer(),
        json!({"name": " urgent "}),
    )
    .await
    .assert_error(409);
    let bad = app
        .post(
            "/api/v1/tags/",
            &owner.bearer(),
            json!({"name": "Blue", "color": "blue"}),
        )
        .await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "color");
    // Another tenant may use the same name.
    let theirs = app
        .post("/api/v1/tags/", &other.bearer(), json!({"name": "URGENT"}))
        .await;
    assert_eq!(theirs.status, 201, "{}", theirs.text);

    // Assignments to a CVE, a vendor and a product.
    let assign = |body: Value| {
        let app = &app;
        let member = &member;
        let tag_id = tag_id.clone();
        async move {
            app.post(
                &format!("/api/v1/tags/{tag_id}/assign"),
                &member.bearer(),
                body,
            )
            .await
        }
    };
    assert_eq!(assign(json!({"cve_id": "cve-2023-2033"})).await.status, 201);
    let again = assign(json!({"cve_id": "CVE-2023-2033"})).await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.body["created"], false);
    let bad = assign(json!({"cve_id": "CVE-23-1"})).await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "cve_id");
    for (kind, name) in [("vendor", "Google  LLC"), ("product", "Chrome")] {
        let done = app
            .post(
                "/api/v1/tags/entity/assign",
                &member.bearer(),
                json!({"tag_id": tag_id, "entity_type": kind, "entity_name": name}),
            )
            .await;
        assert_eq!(done.status, 201, "{}", done.text);
    }
    app.post(
        "/api/v1/tags/entity/assign",
        &member.bearer(),
        json!({"tag_id": tag_id, "entity_type": "device", "entity_name": "WS-01"}),
    )
    .await
    .assert_error(422);
    let on_vendor = app
        .get("/api/v1/tags/entity/vendor/google%20llc", &owner.bearer())
        .await;
    assert_eq!(on_vendor.body[0]["name"], "Urgent", "{}", on_vendor.text);
    let on_cve = app
        .get("/api/v1/tags/cve/CVE-2023-2033", &owner.bearer())
        .await;
    assert_eq!(on_cve.body[0]["id"], tag_id.as_str(), "{}", on_cve.text);
    let bulk = app
        .get(
            "/api/v1/tags/entity/bulk?entity_type=product",
            &owner.bearer(),
        )
        .await;
    assert_eq!(
        bulk.body["entities"][0]["entity_name"], "Chrome",
        "{}",
        bulk.text
    );
    app.get(
        "/api/v1/tags/entity/bulk?entity_type=device",
        &owner.bearer(),
    )
    .await
    .assert_error(422);
    let renamed = app
        .call(
            Method::PUT,
            &format!("/api/v1/tags/{tag_id}"),
            &owner.bearer(),
            Some(json!({"name": "Patch now"})),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.text);
    assert_eq!(renamed.body["color"], "#FF0000");
    assert_eq!(renamed.body["assignment_count"], 3);

    // The other tenant sees none of it and can change none of it.
    let their_list = app.get("/api/v1/tags/", &other.bearer()).await;
    assert_eq!(their_list.body.as_array().unwrap().len(), 1);
    assert_eq!(their_list.body[0]["assignment_count"], 0);
    assert_eq!(
        app.get("/api/v1/tags/cve/CVE-2023-2033", &other.bearer())
            .await
            .body,
        json!([])
    );
    let their_bulk = app
        .get("/api/v1/tags/entity/bulk?entity_type=cve", &other.bearer())
        .await;
    assert_eq!(their_bulk.body["entities"], json!([]));
    for (method, path, body) in [
        (Method::PUT, format!("/api/v1/tags/{tag_id}"), Some(json!({"name": "x"}))),
        (Method::DELETE, format!("/api/v1/tags/{tag_id}"), None),
        (
            Method::POST,
            format!("/api/v1/tags/{tag_id}/assign"),
            Some(json!({"cve_id": "CVE-2021-44228"})),
        ),
        (
            Method::DELETE,
            format!("/api/v1/tags/{tag_id}/assign/CVE-2023-2033"),
            None,
        ),
        (
            Method::POST,
            "/api/v1/tags/entity/assign".to_string(),
            Some(json!({"tag_id": tag_id, "entity_type": "vendor", "entity_name": "x"})),
        ),
        (
            Method::DELETE,
            format!("/api/v1/tags/entity/unassign?tag_id={tag_id}&entity_type=vendor&entity_name=google%20llc"),
            None,
        ),
    ] {
        app.call(method, &path, &other.bearer(), body)
            .await
            .assert_error(404);
    }
    assert_eq!(
        app.get("/api/v1/tags/", &owner.bearer()).await.body[0]["assignment_count"],
        3
    );

    // Unassigning, then deleting the tag with what is left.
    let gone = app
        .delete(
            &format!("/api/v1/tags/entity/unassign?tag_id={tag_id}&entity_type=vendor&entity_name=Google%20LLC"),
            &member.bearer(),
        )
        .await;
    assert_eq!(gone.status, 204, "{}", gone.text);
    let gone = app
        .delete(
            &format!("/api/v1/tags/{tag_id}/assign/cve-2023-2033"),
            &member.bearer(),
        )
        .await;
    assert_eq!(gone.status, 204, "{}", gone.text);
    assert_eq!(
        app.delete(&format!("/api/v1/tags/{tag_id}"), &member.bearer())
            .await
            .status,
        204
    );
    assert_eq!(
        app.get("/api/v1/tags/entity/product/chrome", &owner.bearer())
            .await
            .body,
        json!([])
    );

    // Projects: vendors and products as the CVE store names them.
    let created = app
        .post(
            "/api/v1/projects/",
            &member.bearer(),
            json!({"name": "Browsers", "vendors": ["Google LLC"], "products": ["Firefox"]}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    assert_eq!(created.body["vendors"], json!(["google"]));
    assert_eq!(created.body["products"], json!(["firefox"]));
    let project = created.body["id"].as_str().unwrap().to_string();
    app.post(
        "/api/v1/projects/",
        &owner.bearer(),
        json!({"name": "browsers"}),
    )
    .await
    .assert_error(409);
    let bad = app
        .post(
            "/api/v1/projects/",
            &owner.bearer(),
            json!({"name": "Odd", "vendors": ["!!!"]}),
        )
        .await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "vendors");
    let added = app
        .post(
            &format!("/api/v1/projects/{project}/products/Log4j"),
            &owner.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.text);
    assert_eq!(added.body["products"], json!(["firefox", "log4j"]));
    let vulns = app
        .get(
            &format!("/api/v1/projects/{project}/vulnerabilities"),
            &owner.bearer(),
        )
        .await;
    assert_eq!(vulns.status, 200, "{}", vulns.text);
    let ids = cve_ids(&vulns.body["items"]);
    for id in ["CVE-2023-2033", "CVE-2022-26485", "CVE-2021-44228"] {
        assert!(ids.contains(&id.to_string()), "{id}: {}", vulns.text);
    }
    assert!(
        !ids.contains(&"CVE-2025-0411".to_string()),
        "{}",
        vulns.text
    );
    let chrome = vulns.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cve_id"] == "CVE-2023-2033")
        .unwrap();
    assert_eq!(chrome["device_count"], 2, "{}", vulns.text);
    assert_eq!(chrome["kev"], true);
    let removed = app
        .delete(
            &format!("/api/v1/projects/{project}/vendors/google"),
            &owner.bearer(),
        )
        .await;
    assert_eq!(removed.status, 204, "{}", removed.text);
    let vulns = app
        .get(
            &format!("/api/v1/projects/{project}/vulnerabilities?limit=1"),
            &owner.bearer(),
        )
        .await;
    assert_eq!(vulns.body["total"], 2, "{}", vulns.text);
    assert_eq!(vulns.body["items"].as_array().unwrap().len(), 1);
    let renamed = app
        .call(
            Method::PUT,
            &format!("/api/v1/projects/{project}"),
            &owner.bearer(),
            Some(json!({"description": "Everything with a URL bar"})),
        )
        .await;
    assert_eq!(renamed.body["name"], "Browsers", "{}", renamed.text);
    assert_eq!(renamed.body["description"], "Everything with a URL bar");

    for (method, path) in [
        (Method::GET, format!("/api/v1/projects/{project}")),
        (Method::PUT, format!("/api/v1/projects/{project}")),
        (Method::DELETE, format!("/api/v1/projects/{project}")),
        (
            Method::POST,
            format!("/api/v1/projects/{project}/vendors/mozilla"),
        ),
        (
            Method::DELETE,
            format!("/api/v1/projects/{project}/products/firefox"),
        ),
        (
            Method::POST,
            format!("/api/v1/projects/{project}/products/edge"),
        ),
        (
            Method::GET,
            format!("/api/v1/projects/{project}/vulnerabilities"),
        ),
    ] {
        let body = (method == Method::PUT).then(|| json!({"name": "Mine now"}));
        app.call(method, &path, &other.bearer(), body)
            .await
            .assert_error(404);
    }
    assert_eq!(
        app.get("/api/v1/projects/", &other.bearer()).await.body,
        json!([])
    );
    let mine = app
        .get(&format!("/api/v1/projects/{project}"), &owner.bearer())
        .await;
    assert_eq!(mine.body["products"], json!(["firefox", "log4j"]));
    assert_eq!(
        app.delete(&format!("/api/v1/projects/{project}"), &owner.bearer())
            .await
            .status,
        204
    );
    assert_eq!(
        app.get("/api/v1/projects/", &owner.bearer()).await.body,
        json!([])
    );
    app.finish().await;
}

async fn research_answers_from_the_store_and_from_nvd(backend: Backend) {
    let Some((app, nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let (owner, other) = seeded(&app).await;

    let found = app
        .get("/api/v1/research/cve/cve-2023-2033", &owner.bearer())
        .await;
    assert_eq!(found.status, 200, "{}", found.text);
    let body = &found.body;
    assert_eq!(body["cve_id"], "CVE-2023-2033");
    assert_eq!(body["fetched_from_nvd"], false);
    assert_eq!(body["kev"], true);
    assert_eq!(body["weaknesses"][0]["cwe_id"], "CWE-843");
    assert_eq!(body["affected_device_count"], 2);
    assert_eq!(
        body["affected_applications"],
        json!([{"application_name": "Google Chrome", "version": "112.0.5615.49",
                "fix_version": "112.0.5615.121", "device_count": 2}])
    );
    let devices: Vec<&str> = body["affected_findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["device_name"].as_str().unwrap())
        .collect();
    assert_eq!(devices, ["WS-01", "WS-02"]);
    // The other tenant's research of the same CVE shows its own device.
    let theirs = app
        .get("/api/v1/research/cve/CVE-2023-2033", &other.bearer())
        .await;
    assert_eq!(theirs.body["affected_device_count"], 1, "{}", theirs.text);
    assert_eq!(
        theirs.body["affected_findings"][0]["device_name"],
        "THEIRS-1"
    );

    // A CVE the store lacks is fetched from NVD once, then read.
    let mut record: Value = nvd.data.lock().unwrap().records[3].clone();
    assert_eq!(record["id"], "CVE-2023-2033");
    record["id"] = json!("CVE-2023-7777");
    nvd.data.lock().unwrap().records.push(record);
    let asked = || nvd.data.lock().unwrap().requests.len();
    let before = asked();
    let fetched = app
        .get("/api/v1/research/cve/CVE-2023-7777", &owner.bearer())
        .await;
    assert_eq!(fetched.status, 200, "{}", fetched.text);
    assert_eq!(fetched.body["fetched_from_nvd"], true);
    assert_eq!(asked(), before + 1);
    let again = app
        .get("/api/v1/research/cve/CVE-2023-7777", &other.bearer())
        .await;
    assert_eq!(again.body["fetched_from_nvd"], false, "{}", again.text);
    assert_eq!(asked(), before + 1);
    app.get("/api/v1/research/cve/CVE-2020-0001", &owner.bearer())
        .await
        .assert_error(404);
    let bad = app
        .get("/api/v1/research/cve/CVE-123", &owner.bearer())
        .await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "cve_id");
    assert_eq!(asked(), before + 2, "a malformed id never reaches NVD");

    // A product by CPE name and by the tenant's application name.
    let product = app
        .get(
            "/api/v1/research/product?vendor=Google&product=chrome",
            &owner.bearer(),
        )
        .await;
    assert_eq!(product.status, 200, "{}", product.text);
    assert_eq!(product.body["products"], json!(["google:chrome"]));
    assert_eq!(product.body["applications"], json!(["Google Chrome"]));
    let ids = cve_ids(&product.body["cves"]["items"]);
    assert!(
        ids.contains(&"CVE-2023-2033".to_string()),
        "{}",
        product.text
    );
    assert!(
        ids.contains(&"CVE-2023-7777".to_string()),
        "{}",
        product.text
    );
    let versions = product.body["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2, "{}", product.text);
    assert_eq!(versions[0]["version"], "113.0.5672.63");
    assert_eq!(versions[0]["vulnerable"], false);
    assert_eq!(versions[1]["version"], "112.0.5615.49");
    assert_eq!(versions[1]["vulnerable"], true);
    assert_eq!(versions[1]["device_count"], 2);
    assert_eq!(versions[1]["fix_version"], "112.0.5615.121");
    assert_eq!(product.body["newest_version_in_use"], "113.0.5672.63");
    let by_app = app
        .get(
            "/api/v1/research/product?application=google%20chrome",
            &owner.bearer(),
        )
        .await;
    assert_eq!(
        by_app.body["products"],
        json!(["google:chrome"]),
        "{}",
        by_app.text
    );
    let bad = app
        .get("/api/v1/research/product?vendor=google", &owner.bearer())
        .await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "product");

    // The history: per tenant, newest first, by whom.
    let member = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;
    app.get("/api/v1/research/cve/CVE-2021-44228", &member.bearer())
        .await;
    let history = app.get("/api/v1/research/history", &owner.bearer()).await;
    let entries = history.body["items"].as_array().unwrap();
    let seen: Vec<(&str, &str)> = entries
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["query"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [
            ("cve", "CVE-2021-44228"),
            ("product", "google chrome"),
            ("product", "google:chrome"),
            ("cve", "CVE-2020-0001"),
            ("cve", "CVE-2023-7777"),
            ("cve", "CVE-2023-2033"),
        ],
        "{}",
        history.text
    );
    assert_eq!(entries[0]["user_email"], "analyst@msp.example");
    assert_eq!(entries[3]["result_count"], 0);
    let mine = app
        .get("/api/v1/research/history?mine=true", &member.bearer())
        .await;
    assert_eq!(mine.body["total"], 1, "{}", mine.text);
    let theirs = app.get("/api/v1/research/history", &other.bearer()).await;
    let their_queries: Vec<&str> = theirs.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["query"].as_str().unwrap())
        .collect();
    assert_eq!(their_queries, ["CVE-2023-7777", "CVE-2023-2033"]);
    app.get("/api/v1/research/history?kind=device", &owner.bearer())
        .await
        .assert_error(422);
    app.finish().await;
}

async fn versions_and_weaknesses_follow_the_tenants_findings(backend: Backend) {
    let Some((app, _nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let (owner, other) = seeded(&app).await;
    let member = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;

    let summary = app
        .get("/api/v1/versions/summary?search=CHROME", &owner.bearer())
        .await;
    assert_eq!(summary.status, 200, "{}", summary.text);
    assert_eq!(summary.body["total"], 1);
    let chrome = &summary.body["items"][0];
    assert_eq!(chrome["application"], "Google Chrome");
    assert_eq!(chrome["device_count"], 3);
    assert_eq!(chrome["newest_version"], "113.0.5672.63");
    assert_eq!(chrome["fix_version"], "112.0.5615.121");
    assert_eq!(chrome["basis"], "open_findings");
    assert_eq!(chrome["compliant_devices"], 1);
    assert_eq!(chrome["non_compliant_devices"], 2);
    assert_eq!(
        chrome["versions"][1]["open_cve_count"], 1,
        "{}",
        summary.text
    );

    let outdated = app.get("/api/v1/versions/outdated", &owner.bearer()).await;
    let rows: Vec<(&str, &str, &str)> = outdated.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["device_name"].as_str().unwrap(),
                o["application"].as_str().unwrap(),
                o["upgrade_to"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("WS-01", "Google Chrome", "112.0.5615.121"),
            ("WS-02", "Google Chrome", "112.0.5615.121")
        ],
        "{}",
        outdated.text
    );

    // Minimum-version rules: admins set them; they decide compliance.
    let rule = |body: Value, who: &Account| {
        let app = &app;
        let auth = who.bearer();
        async move { app.post("/api/v1/versions/rules", &auth, body).await }
    };
    rule(
        json!({"application": "Notepad Classic", "minimum_version": "2.0"}),
        &member,
    )
    .await
    .assert_error(403);
    let bad = rule(
        json!({"application": "Notepad Classic", "minimum_version": " "}),
        &owner,
    )
    .await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "minimum_version");
    let notepad = rule(
        json!({"application": "notepad classic", "minimum_version": "2.0", "note": "EOL"}),
        &owner,
    )
    .await;
    assert_eq!(notepad.status, 201, "{}", notepad.text);
    let chrome_rule = rule(
        json!({"application": "Google Chrome", "minimum_version": "113.0"}),
        &owner,
    )
    .await;
    assert_eq!(chrome_rule.status, 201, "{}", chrome_rule.text);
    let compliance = app
        .get(
            "/api/v1/versions/compliance?status=non_compliant",
            &owner.bearer(),
        )
        .await;
    assert_eq!(compliance.status, 200, "{}", compliance.text);
    assert_eq!(compliance.body["compliant_installs"], 1);
    assert_eq!(compliance.body["non_compliant_installs"], 3);
    assert_eq!(compliance.body["compliance_percent"], 25.0);
    assert_eq!(compliance.body["applications"]["total"], 2);
    let first = &compliance.body["applications"]["items"][0];
    assert_eq!(first["application"], "Google Chrome", "{}", compliance.text);
    assert_eq!(first["basis"], "rule");
    assert_eq!(first["minimum_version"], "113.0");
    let outdated = app
        .get("/api/v1/versions/outdated?device=ws-03", &owner.bearer())
        .await;
    assert_eq!(outdated.body["total"], 1, "{}", outdated.text);
    assert_eq!(outdated.body["items"][0]["application"], "Notepad Classic");
    assert_eq!(outdated.body["items"][0]["upgrade_to"], "2.0");
    assert_eq!(
        outdated.body["items"][0]["reason"],
        "below the minimum version 2.0"
    );
    let chrome_rows = app
        .get(
            "/api/v1/versions/outdated?application=google%20chrome",
            &owner.bearer(),
        )
        .await;
    assert_eq!(chrome_rows.body["total"], 2, "{}", chrome_rows.text);
    // The higher of the minimum and the fix.
    assert_eq!(chrome_rows.body["items"][0]["upgrade_to"], "113.0");

    // Rules are the tenant's own.
    let notepad_id = notepad.body["id"].as_str().unwrap();
    assert_eq!(
        app.get("/api/v1/versions/rules", &other.bearer())
            .await
            .body,
        json!([])
    );
    app.delete(
        &format!("/api/v1/versions/rules/{notepad_id}"),
        &other.bearer(),
    )
    .await
    .assert_error(404);
    let their_outdated = app.get("/api/v1/versions/outdated", &other.bearer()).await;
    assert_eq!(their_outdated.body["total"], 1, "{}", their_outdated.text);
    assert_eq!(their_outdated.body["items"][0]["device_name"], "THEIRS-1");
    assert_eq!(
        app.delete(
            &format!("/api/v1/versions/rules/{notepad_id}"),
            &owner.bearer()
        )
        .await
        .status,
        204
    );
    let rules = app.get("/api/v1/versions/rules", &owner.bearer()).await;
    assert_eq!(rules.body.as_array().unwrap().len(), 1, "{}", rules.text);

    // Weaknesses: the catalog's names, counts in the store and the tenant.
    cairn_vulnerabilities::reference::store::write_cwes(
        app.db(),
        &[cairn_vulnerabilities::reference::feeds::Cwe {
            id: "CWE-843".into(),
            name: "Access of Resource Using Incompatible Type ('Type Confusion')".into(),
            description: "The product allocates a resource using one type.".into(),
        }],
    )
    .await
    .unwrap();
    let list = app
        .get("/api/v1/weaknesses/?in_tenant=true", &owner.bearer())
        .await;
    assert_eq!(list.status, 200, "{}", list.text);
    assert_eq!(list.body["total"], 1, "{}", list.text);
    assert_eq!(list.body["items"][0]["cwe_id"], "CWE-843");
    assert_eq!(list.body["items"][0]["cve_count"], 1);
    assert_eq!(list.body["items"][0]["tenant_cve_count"], 1);
    let input = app
        .get("/api/v1/weaknesses/?search=cwe-20", &owner.bearer())
        .await;
    assert_eq!(input.body["items"][0]["cwe_id"], "CWE-20", "{}", input.text);
    assert_eq!(input.body["items"][0]["cve_count"], 2);
    assert_eq!(input.body["items"][0]["tenant_cve_count"], 0);
    let by_name = app
        .get(
            "/api/v1/weaknesses/?search=type%20CONFUSION",
            &owner.bearer(),
        )
        .await;
    assert_eq!(by_name.body["total"], 1, "{}", by_name.text);
    let detail = app.get("/api/v1/weaknesses/cwe-843", &owner.bearer()).await;
    assert_eq!(detail.status, 200, "{}", detail.text);
    assert_eq!(
        detail.body["name"],
        "Access of Resource Using Incompatible Type ('Type Confusion')"
    );
    assert_eq!(detail.body["cves"]["items"][0]["cve_id"], "CVE-2023-2033");
    assert_eq!(detail.body["cves"]["items"][0]["device_count"], 2);
    let uncatalogued = app.get("/api/v1/weaknesses/CWE-20", &owner.bearer()).await;
    assert_eq!(uncatalogued.body["cve_count"], 2, "{}", uncatalogued.text);
    assert_eq!(uncatalogued.body["name"], Value::Null);
    assert_eq!(uncatalogued.body["cves"]["total"], 2);
    let none_here = app
        .get("/api/v1/weaknesses/CWE-20?in_tenant=true", &owner.bearer())
        .await;
    assert_eq!(none_here.body["cves"]["total"], 0, "{}", none_here.text);
    app.get("/api/v1/weaknesses/CWE-99999", &owner.bearer())
        .await
        .assert_error(404);
    let bad = app.get("/api/v1/weaknesses/XSS", &owner.bearer()).await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "cwe_id");
    let theirs = app.get("/api/v1/weaknesses/CWE-843", &other.bearer()).await;
    assert_eq!(theirs.body["tenant_cve_count"], 1);
    assert_eq!(theirs.body["cves"]["items"][0]["device_count"], 1);
    app.finish().await;
}

async fn threat_intel_reads_exploitation_and_exposure(backend: Backend) {
    let Some((app, nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let (owner, other) = seeded(&app).await;

    let log4j = app
        .get("/api/v1/threat-intel/cve/cve-2021-44228", &owner.bearer())
        .await;
    assert_eq!(log4j.status, 200, "{}", log4j.text);
    assert_eq!(log4j.body["kev"], true);
    assert_eq!(log4j.body["kev_ransomware_use"], "Known");
    assert_eq!(
        log4j.body["exploit_references"].as_array().unwrap().len(),
        3
    );
    assert_eq!(log4j.body["affected_device_count"], 0);
    let chrome = app
        .get("/api/v1/threat-intel/cve/CVE-2023-2033", &owner.bearer())
        .await;
    assert_eq!(chrome.body["affected_device_count"], 2, "{}", chrome.text);
    assert_eq!(chrome.body["epss_score"], Value::Null);
    let bad = app
        .get("/api/v1/threat-intel/cve/CVE-2023-XYZ", &owner.bearer())
        .await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "cve_id");

    // Enriching asks NVD, KEV and FIRST's EPSS API now.
    nvd.data
        .lock()
        .unwrap()
        .epss_scores
        .push(("CVE-2023-2033".into(), 0.91234, 0.99871));
    let enriched = app
        .post(
            "/api/v1/threat-intel/enrich/CVE-2023-2033",
            &owner.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(enriched.status, 200, "{}", enriched.text);
    let outcomes: Vec<(&str, &str)> = enriched.body["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["source"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(outcomes, [("nvd", "ok"), ("kev", "ok"), ("epss", "ok")]);
    assert_eq!(enriched.body["cve"]["epss_score"], 0.91234);
    assert_eq!(enriched.body["cve"]["epss_percentile"], 0.99871);
    app.post(
        "/api/v1/threat-intel/enrich/CVE-2020-0001",
        &owner.bearer(),
        json!({}),
    )
    .await
    .assert_error(404);

    // High risk by EPSS: the store's, or the tenant's own.
    let store = app
        .get(
            "/api/v1/threat-intel/epss/high-risk?threshold=0.25&limit=3",
            &owner.bearer(),
        )
        .await;
    assert_eq!(store.status, 200, "{}", store.text);
    let ids = cve_ids(&store.body);
    assert_eq!(ids[0], "CVE-2023-2033", "{}", store.text);
    assert!(store.body.as_array().unwrap().len() <= 3);
    let mine = app
        .get(
            "/api/v1/threat-intel/epss/high-risk?threshold=0.5&in_tenant=true",
            &owner.bearer(),
        )
        .await;
    assert_eq!(cve_ids(&mine.body), ["CVE-2023-2033"], "{}", mine.text);
    assert_eq!(mine.body[0]["device_count"], 2);
    let theirs = app
        .get(
            "/api/v1/threat-intel/epss/high-risk?threshold=0.5&in_tenant=true",
            &other.bearer(),
        )
        .await;
    assert_eq!(theirs.body[0]["device_count"], 1, "{}", theirs.text);
    let bad = app
        .get(
            "/api/v1/threat-intel/epss/high-risk?threshold=2",
            &owner.bearer(),
        )
        .await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "threshold");

    // The research panel in one answer.
    let panel = app
        .get(
            "/api/v1/threat-intel/research/CVE-2023-2033",
            &owner.bearer(),
        )
        .await;
    assert_eq!(panel.status, 200, "{}", panel.text);
    assert_eq!(panel.body["affected_device_count"], 2);
    assert_eq!(panel.body["exploitation"]["kev"], true);
    assert_eq!(panel.body["exploitation"]["epss_score"], 0.91234);
    assert_eq!(
        panel.body["affected_applications"][0]["fix_version"],
        "112.0.5615.121"
    );
    let theirs = app
        .get(
            "/api/v1/threat-intel/research/CVE-2023-2033",
            &other.bearer(),
        )
        .await;
    assert_eq!(theirs.body["affected_device_count"], 1);
    app.get("/api/v1/threat-intel/research/nope", &owner.bearer())
        .await
        .assert_error(422);
    app.finish().await;
}

/// The open CVE ids of the tenant's vulnerability list (`status` given).
async fn listed(app: &TestApp, account: &Account, status: &str) -> Vec<String> {
    let list = app
        .get(
            &format!("/api/v1/vulnerabilities/?status={status}"),
            &account.bearer(),
        )
        .await;
    assert_eq!(list.status, 200, "{}", list.text);
    cve_ids(&list.body["items"])
}

async fn triage_answers_as_its_contract_says(backend: Backend) {
    let Some((app, _nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let (owner, other) = seeded(&app).await;
    let member = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;
    let chrome = "CVE-2023-2033".to_string();
    let path = "/api/v1/vulnerabilities/cve/CVE-2023-2033/triage";
    let put = |who: &Account, body: Value| {
        let app = &app;
        let auth = who.bearer();
        async move { app.call(Method::PUT, path, &auth, Some(body)).await }
    };

    let untouched = app.get(path, &owner.bearer()).await;
    assert_eq!(untouched.status, 200, "{}", untouched.text);
    assert_eq!(untouched.body["statuses"][0]["status"], "to_evaluate");
    assert_eq!(untouched.body["statuses"][0]["product"], "chrome");
    assert_eq!(untouched.body["history"], json!([]));

    let analysing = put(
        &member,
        json!({"status": "in_analysis", "assignee_id": member.user_id, "comment": "looking"}),
    )
    .await;
    assert_eq!(analysing.status, 200, "{}", analysing.text);
    assert_eq!(analysing.body["vendor"], "google");
    assert_eq!(analysing.body["suppressed"], false);
    // Refusals name the field and change nothing.
    for (body, field) in [
        (json!({"status": "not_affected"}), "justification"),
        (
            json!({"status": "risk_accepted", "expires_at": "2020-01-01T00:00:00Z"}),
            "expires_at",
        ),
        (json!({"status": "ignored"}), "status"),
        (
            json!({"status": "resolved", "assignee_id": other.user_id}),
            "assignee_id",
        ),
        (json!({"status": "resolved", "vendor": "google"}), "vendor"),
    ] {
        let bad = put(&owner, body).await;
        bad.assert_error(422);
        assert_eq!(bad.body["field"], field, "{}", bad.text);
    }
    put(
        &owner,
        json!({"status": "resolved", "vendor": "mozilla", "product": "firefox"}),
    )
    .await
    .assert_error(404);
    app.get(
        "/api/v1/vulnerabilities/cve/CVE-20-1/triage",
        &owner.bearer(),
    )
    .await
    .assert_error(422);
    assert!(listed(&app, &owner, "open").await.contains(&chrome));

    // Accepting the risk takes the CVE out of the open counts and lists.
    let stats_before = app
        .get("/api/v1/vulnerabilities/stats", &owner.bearer())
        .await;
    let accepted = put(
        &owner,
        json!({"status": "risk_accepted", "expires_at": "2099-01-01T00:00:00Z",
               "comment": "kiosk browsers, replaced next quarter"}),
    )
    .await;
    assert_eq!(accepted.status, 200, "{}", accepted.text);
    assert_eq!(accepted.body["suppressed"], true);
    assert!(!listed(&app, &owner, "open").await.contains(&chrome));
    let stats = app
        .get("/api/v1/vulnerabilities/stats", &owner.bearer())
        .await;
    assert_eq!(
        stats.body["open_findings"].as_i64().unwrap(),
        stats_before.body["open_findings"].as_i64().unwrap() - 2,
        "{}",
        stats.text
    );
    let shown = app
        .get("/api/v1/vulnerabilities/?status=accepted", &owner.bearer())
        .await;
    assert_eq!(
        cve_ids(&shown.body["items"]),
        ["CVE-2023-2033"],
        "{}",
        shown.text
    );
    assert_eq!(
        shown.body["items"][0]["triage_statuses"],
        json!(["risk_accepted"])
    );
    let by_triage = app
        .get(
            "/api/v1/vulnerabilities/?status=all&triage=risk_accepted",
            &owner.bearer(),
        )
        .await;
    assert_eq!(cve_ids(&by_triage.body["items"]), ["CVE-2023-2033"]);
    app.get("/api/v1/vulnerabilities/?triage=ignored", &owner.bearer())
        .await
        .assert_error(422);
    let research = app
        .get("/api/v1/research/cve/CVE-2023-2033", &owner.bearer())
        .await;
    assert_eq!(
        research.body["affected_device_count"], 0,
        "{}",
        research.text
    );
    // The other tenant's findings of the same CVE are untouched.
    assert!(listed(&app, &other, "open").await.contains(&chrome));
    let theirs = app.get(path, &other.bearer()).await;
    assert_eq!(theirs.body["statuses"][0]["status"], "to_evaluate");
    assert_eq!(theirs.body["history"], json!([]));
    let triaged = app
        .get("/api/v1/vulnerabilities/triage", &other.bearer())
        .await;
    assert_eq!(triaged.body["total"], 0);

    // Back to analysis: open again, the trail kept newest first. (That a
    // decision holds across an upgrade, and the whole trail, is the area's
    // logic: tests/areas/vulnerabilities.rs.)
    put(
        &member,
        json!({"status": "in_analysis", "comment": "vendor fix slipped"}),
    )
    .await;
    assert!(listed(&app, &owner, "open").await.contains(&chrome));
    let trail = app.get(path, &owner.bearer()).await;
    assert_eq!(trail.body["history"][0]["to_status"], "in_analysis");
    assert_eq!(
        trail.body["history"][0]["changed_by"],
        "analyst@msp.example"
    );
    assert_eq!(
        trail.body["history"][1]["comment"],
        "kiosk browsers, replaced next quarter"
    );
    let mine = app
        .get(
            "/api/v1/vulnerabilities/triage?status=in_analysis",
            &owner.bearer(),
        )
        .await;
    assert_eq!(mine.body["total"], 1, "{}", mine.text);
    app.finish().await;
}

/// PostgreSQL stores no NUL in text: every route of these areas answers
/// text holding one with a client error or as if it were absent, never a
/// 500.
async fn text_with_nul_is_never_a_server_error(backend: Backend) {
    let Some((app, _nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let (owner, _other) = seeded(&app).await;
    let tag = app
        .post("/api/v1/tags/", &owner.bearer(), json!({"name": "Plain"}))
        .await;
    let tag_id = tag.body["id"].as_str().unwrap().to_string();
    let project = app
        .post(
            "/api/v1/projects/",
            &owner.bearer(),
            json!({"name": "Plain"}),
        )
        .await;
    let project_id = project.body["id"].as_str().unwrap().to_string();
    let nul = "a\u{0}b";
    let calls: Vec<(Method, String, Option<Value>)> = vec![
        (
            Method::POST,
            "/api/v1/tags/".into(),
            Some(json!({"name": "x", "description": nul})),
        ),
        (
            Method::PUT,
            format!("/api/v1/tags/{tag_id}"),
            Some(json!({"description": nul})),
        ),
        (
            Method::POST,
            "/api/v1/tags/entity/assign".into(),
            Some(json!({"tag_id": tag_id, "entity_type": "vendor", "entity_name": nul})),
        ),
        (Method::GET, "/api/v1/tags/entity/vendor/a%00b".into(), None),
        (
            Method::POST,
            "/api/v1/projects/".into(),
            Some(json!({"name": "y", "description": nul})),
        ),
        (
            Method::PUT,
            format!("/api/v1/projects/{project_id}"),
            Some(json!({"description": nul})),
        ),
        (
            Method::POST,
            format!("/api/v1/projects/{project_id}/vendors/a%00b"),
            None,
        ),
        (
            Method::GET,
            "/api/v1/research/product?application=a%00b".into(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/research/product?vendor=a%00b&product=c".into(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/research/cve/CVE-2023-2033%00".into(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/versions/summary?search=a%00b".into(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/versions/outdated?device=a%00b".into(),
            None,
        ),
        (
            Method::POST,
            "/api/v1/versions/rules".into(),
            Some(json!({"application": nul, "minimum_version": "1.0", "note": nul})),
        ),
        (Method::GET, "/api/v1/weaknesses/?search=a%00b".into(), None),
        (Method::GET, "/api/v1/weaknesses/CWE-79%00".into(), None),
        (
            Method::POST,
            "/api/v1/subscriptions/".into(),
            Some(json!({"sub_type": "vendor", "name": nul})),
        ),
        (
            Method::GET,
            "/api/v1/subscriptions/check?sub_type=vendor&name=a%00b".into(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/subscriptions/cpe/search?q=a%00b".into(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/subscriptions/cves/search?keyword=a%00b".into(),
            None,
        ),
        (
            Method::PUT,
            "/api/v1/vulnerabilities/cve/CVE-2023-2033/triage".into(),
            Some(json!({"status": "in_analysis", "comment": nul})),
        ),
        (
            Method::PUT,
            "/api/v1/vulnerabilities/cve/CVE-2023-2033/triage".into(),
            Some(json!({"status": "not_affected", "justification": nul})),
        ),
        (
            Method::GET,
            "/api/v1/vulnerabilities/triage?assignee=a%00b".into(),
            None,
        ),
        (
            Method::GET,
            "/api/v1/threat-intel/cve/CVE-2023-2033%00".into(),
            None,
        ),
    ];
    for (method, path, body) in calls {
        let answer = app.call(method.clone(), &path, &owner.bearer(), body).await;
        assert!(answer.status < 500, "{method} {path}: {}", answer.text);
    }
    app.finish().await;
}
