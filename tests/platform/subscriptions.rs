//! Subscriptions end to end against the fake NVD: a product with no CVE
//! yet, a sync that brings one, a change of it in the activity, a sync
//! NVD refuses, the CVE and CPE searches, and one tenant's subscriptions
//! invisible to another.

use std::time::Duration;

use cairn_tests::fake_nvd::FakeNvd;
use cairn_tests::{backend_tests, wait_until, Account, Backend, TestApp};
use serde_json::{json, Value};

use super::vulnerabilities::loaded_with;

backend_tests!(subscriptions_follow_products_before_and_after_their_first_cve);

/// Waits until no subscription of `account` waits for a sync; returns the
/// list.
pub(crate) async fn synced(app: &TestApp, account: &Account) -> Vec<Value> {
    wait_until(
        "the subscriptions' syncs",
        Duration::from_secs(120),
        async || {
            let list = app.get("/api/v1/subscriptions/", &account.bearer()).await;
            assert_eq!(list.status, 200, "{}", list.text);
            let items = list.body.as_array().unwrap().clone();
            if items.iter().all(|s| s["sync_pending"] == false) {
                Ok(items)
            } else {
                Err(list.text)
            }
        },
    )
    .await
}

fn named<'a>(list: &'a [Value], name: &str) -> &'a Value {
    list.iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("{name} in {list:?}"))
}

/// A record for a product the store has never heard of, shaped as NVD
/// serves records (from a fixture).
pub(crate) fn quantum_widget_record(nvd: &FakeNvd, modified: &str, description: &str) -> Value {
    let mut record = nvd.data.lock().unwrap().records[3].clone();
    record["id"] = json!("CVE-2026-1111");
    record["lastModified"] = json!(modified);
    record["descriptions"] = json!([{"lang": "en", "value": description}]);
    record["configurations"] = json!([{"nodes": [{"operator": "OR", "negate": false, "cpeMatch": [
        {"vulnerable": true, "criteria": "cpe:2.3:a:acme:quantum_widget:*:*:*:*:*:*:*:*",
         "versionEndExcluding": "2.0", "matchCriteriaId": "00000000-0000-0000-0000-00000000abcd"}]}]}]);
    record
}

async fn subscriptions_follow_products_before_and_after_their_first_cve(backend: Backend) {
    let Some((app, nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let other = app.register("owner@other.example").await;
    let member = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;

    // A product no CVE names yet: a keyword search that finds nothing.
    let widget = app
        .post(
            "/api/v1/subscriptions/",
            &member.bearer(),
            json!({"sub_type": "product", "name": "Quantum Widget"}),
        )
        .await;
    assert_eq!(widget.status, 201, "{}", widget.text);
    assert_eq!(widget.body["subscription"]["cpe_name"], "quantum_widget");
    let google = app
        .post(
            "/api/v1/subscriptions/",
            &owner.bearer(),
            json!({"sub_type": "vendor", "name": "Google LLC"}),
        )
        .await;
    assert_eq!(google.status, 201, "{}", google.text);
    let google_id = google.body["subscription"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.post(
        "/api/v1/subscriptions/",
        &owner.bearer(),
        json!({"sub_type": "vendor", "name": "google"}),
    )
    .await
    .assert_error(409);
    for (body, field) in [
        (json!({"sub_type": "device", "name": "x"}), "sub_type"),
        (json!({"sub_type": "vendor", "name": "!!!"}), "name"),
        (
            json!({"sub_type": "vendor", "name": "acme", "vendor": "acme"}),
            "vendor",
        ),
    ] {
        let bad = app
            .post("/api/v1/subscriptions/", &owner.bearer(), body)
            .await;
        bad.assert_error(422);
        assert_eq!(bad.body["field"], field, "{}", bad.text);
    }
    let list = synced(&app, &owner).await;
    let first = named(&list, "Quantum Widget");
    assert_eq!(first["cve_count"], 0, "{list:?}");
    assert_eq!(first["last_status"], "success");
    assert_eq!(first["last_query"], "keywordSearch=Quantum Widget");
    let vendor = named(&list, "Google LLC");
    assert_eq!(vendor["last_query"], "virtualMatchString=cpe:2.3:*:google");
    assert_eq!(vendor["cve_count"], 1, "{list:?}");
    // What the first sync brings is history, not news.
    let activity = app
        .get("/api/v1/subscriptions/activity", &owner.bearer())
        .await;
    assert_eq!(activity.body["total"], 0, "{}", activity.text);

    // NVD publishes the product's first CVE; a sync brings it.
    let record = quantum_widget_record(
        &nvd,
        "2026-11-20T10:00:00.000",
        "Quantum Widget before 2.0 lets a remote attacker run code.",
    );
    nvd.data.lock().unwrap().records.push(record);
    let sync = app
        .post("/api/v1/subscriptions/sync", &member.bearer(), json!({}))
        .await;
    assert_eq!(sync.status, 202, "{}", sync.text);
    assert_eq!(sync.body["subscriptions"], 2);
    let list = synced(&app, &owner).await;
    assert_eq!(named(&list, "Quantum Widget")["cve_count"], 1, "{list:?}");
    let activity = app
        .get("/api/v1/subscriptions/activity", &owner.bearer())
        .await;
    assert_eq!(activity.body["total"], 1, "{}", activity.text);
    let event = &activity.body["items"][0];
    assert_eq!(event["event"], "new");
    assert_eq!(event["cve_id"], "CVE-2026-1111");
    assert_eq!(event["subscription_name"], "Quantum Widget");
    // It is in the CVE store now, for everyone.
    let researched = app
        .get("/api/v1/research/cve/CVE-2026-1111", &other.bearer())
        .await;
    assert_eq!(
        researched.body["fetched_from_nvd"], false,
        "{}",
        researched.text
    );

    // NVD changes the record; the product is in the CPE dictionary now, so
    // the sync asks by CPE, and the activity shows the change.
    let changed = quantum_widget_record(
        &nvd,
        "2026-11-24T10:00:00.000",
        "Quantum Widget before 2.0.1 lets a remote attacker run code as root.",
    );
    *nvd.data.lock().unwrap().records.last_mut().unwrap() = changed;
    app.post("/api/v1/subscriptions/sync", &owner.bearer(), json!({}))
        .await;
    let list = synced(&app, &owner).await;
    let widget_now = named(&list, "Quantum Widget");
    assert_eq!(
        widget_now["last_query"],
        "virtualMatchString=cpe:2.3:*:acme:quantum_widget"
    );
    let activity = app
        .get("/api/v1/subscriptions/activity?days=7", &owner.bearer())
        .await;
    assert_eq!(
        activity.body["items"][0]["event"], "changed",
        "{}",
        activity.text
    );
    assert!(activity.body["items"][0]["description"]
        .as_str()
        .unwrap()
        .contains("as root"));
    app.get("/api/v1/subscriptions/activity?days=0", &owner.bearer())
        .await
        .assert_error(422);

    // NVD refusing (403 as it rate-limits, past the retries): the
    // subscription records the error and keeps its CVEs; the next goes on.
    {
        let mut data = nvd.data.lock().unwrap();
        let next = data.requests.len() + 1;
        data.refusals = (next..next + 3).map(|n| (n, 403)).collect();
    }
    app.post("/api/v1/subscriptions/sync", &owner.bearer(), json!({}))
        .await;
    let list = synced(&app, &owner).await;
    let failed = named(&list, "Quantum Widget");
    assert_eq!(failed["last_status"], "error", "{list:?}");
    assert!(
        failed["last_error"].as_str().unwrap().contains("403"),
        "{list:?}"
    );
    assert_eq!(named(&list, "Google LLC")["last_status"], "success");
    assert_eq!(failed["cve_count"], 1);
    nvd.data.lock().unwrap().refusals.clear();

    // Check, the CVE search (saved to the store) and the CPE dictionary.
    let check = app
        .get(
            "/api/v1/subscriptions/check?sub_type=vendor&name=Google%20LLC",
            &owner.bearer(),
        )
        .await;
    assert_eq!(check.body["subscribed"], true, "{}", check.text);
    let check = app
        .get(
            "/api/v1/subscriptions/check?sub_type=product&name=chrome",
            &owner.bearer(),
        )
        .await;
    assert_eq!(check.body["subscribed"], false);
    let searched = app
        .get(
            "/api/v1/subscriptions/cves/search?vendor=acme&product=Quantum%20Widget",
            &owner.bearer(),
        )
        .await;
    assert_eq!(searched.status, 200, "{}", searched.text);
    assert_eq!(searched.body["total"], 1);
    assert_eq!(searched.body["items"][0]["cve_id"], "CVE-2026-1111");
    let by_keyword = app
        .get(
            "/api/v1/subscriptions/cves/search?keyword=log4j2&limit=1",
            &owner.bearer(),
        )
        .await;
    assert_eq!(
        by_keyword.body["items"][0]["cve_id"], "CVE-2021-44228",
        "{}",
        by_keyword.text
    );
    let before = nvd.data.lock().unwrap().requests.len();
    let bad = app
        .get(
            "/api/v1/subscriptions/cves/search?product=chrome",
            &owner.bearer(),
        )
        .await;
    bad.assert_error(422);
    assert_eq!(bad.body["field"], "vendor");
    assert_eq!(nvd.data.lock().unwrap().requests.len(), before);
    let cpe = app
        .get(
            "/api/v1/subscriptions/cpe/search?q=quantum%20widget",
            &owner.bearer(),
        )
        .await;
    assert_eq!(
        cpe.body["items"][0]["cpe"], "cpe:2.3:*:acme:quantum_widget",
        "{}",
        cpe.text
    );
    let page_one = app
        .get(
            "/api/v1/subscriptions/cpe/search?q=oo&limit=1",
            &owner.bearer(),
        )
        .await;
    assert!(
        page_one.body["total"].as_i64().unwrap() >= 2,
        "{}",
        page_one.text
    );
    assert_eq!(page_one.body["items"].as_array().unwrap().len(), 1);
    let page_two = app
        .get(
            "/api/v1/subscriptions/cpe/search?q=oo&limit=1&skip=1",
            &owner.bearer(),
        )
        .await;
    assert_ne!(page_one.body["items"][0], page_two.body["items"][0]);
    app.get("/api/v1/subscriptions/cpe/search?q=o", &owner.bearer())
        .await
        .assert_error(422);

    // The other tenant sees and touches none of it.
    assert_eq!(
        app.get("/api/v1/subscriptions/", &other.bearer())
            .await
            .body,
        json!([])
    );
    let theirs = app
        .get("/api/v1/subscriptions/activity", &other.bearer())
        .await;
    assert_eq!(theirs.body["total"], 0);
    let check = app
        .get(
            "/api/v1/subscriptions/check?sub_type=vendor&name=google",
            &other.bearer(),
        )
        .await;
    assert_eq!(check.body["subscribed"], false);
    app.delete(
        &format!("/api/v1/subscriptions/{google_id}"),
        &other.bearer(),
    )
    .await
    .assert_error(404);
    app.delete(
        "/api/v1/subscriptions/by-name/vendor/google",
        &other.bearer(),
    )
    .await
    .assert_error(404);
    app.post("/api/v1/subscriptions/sync", &other.bearer(), json!({}))
        .await
        .assert_error(404);

    // Unsubscribing.
    let gone = app
        .delete(
            "/api/v1/subscriptions/by-name/product/quantum%20widget",
            &member.bearer(),
        )
        .await;
    assert_eq!(gone.status, 204, "{}", gone.text);
    assert_eq!(
        app.delete(
            &format!("/api/v1/subscriptions/{google_id}"),
            &owner.bearer()
        )
        .await
        .status,
        204
    );
    assert_eq!(
        app.get("/api/v1/subscriptions/", &owner.bearer())
            .await
            .body,
        json!([])
    );
    let activity = app
        .get("/api/v1/subscriptions/activity", &owner.bearer())
        .await;
    assert_eq!(activity.body["total"], 0);
    app.finish().await;
}
