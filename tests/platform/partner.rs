//! Partner accounts over HTTP: customers, groups, analysts' access, acting
//! in a customer, the audit trail, the views across customers, shared
//! integrations, and isolation on every id-bearing partner route.

use cairn_tests::fake_rmm::{FakeRmm, PASSWORD};
use cairn_tests::{backend_tests, Account, Backend, TestApp};
use reqwest::Method;
use serde_json::{json, Value};

use super::rmm;
use super::vulnerabilities::{loaded_with, scan, software};

backend_tests!(
    partners_manage_customers_groups_and_analysts,
    isolation_holds_on_every_partner_route,
    acting_in_a_customer_is_audited_and_ends_with_the_customer,
    views_across_customers_and_partner_triage,
    a_shared_rmm_config_fills_each_customer_with_its_own_devices,
);

pub(super) async fn customer(app: &TestApp, partner: &Account, name: &str) -> String {
    let created = app
        .post(
            "/api/v1/partner/customers",
            &partner.bearer(),
            json!({"name": name}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    created.body["id"].as_str().unwrap().to_string()
}

/// The partner user acting in `customer` through a bearer token: an
/// account whose tenant is the customer's.
pub(super) async fn act(app: &TestApp, user: &Account, customer: &str) -> Account {
    let acting = app
        .post(
            "/api/v1/auth/act-as",
            &user.bearer(),
            json!({"customer_id": customer}),
        )
        .await;
    assert_eq!(acting.status, 200, "{}", acting.text);
    assert_eq!(acting.body["tenant_id"], customer);
    Account {
        tenant_id: customer.to_string(),
        access_token: acting.body["access_token"].as_str().unwrap().to_string(),
        ..user.clone()
    }
}

fn ids(list: &Value) -> Vec<String> {
    let mut ids: Vec<String> = list
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids
}

async fn partners_manage_customers_groups_and_analysts(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let acme = customer(&app, &owner, "Acme Dental").await;
    let globex = customer(&app, &owner, "Globex").await;
    let initech = customer(&app, &owner, "Initech").await;

    let list = app.get("/api/v1/partner/customers", &owner.bearer()).await;
    assert_eq!(list.status, 200, "{}", list.text);
    let names: Vec<&str> = list
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Acme Dental", "Globex", "Initech"]);
    assert_eq!(list.body[0]["member_count"], 0);

    for (body, field) in [
        (json!({"name": "  "}), "name"),
        (
            json!({"name": "X", "timezone": "Mars/Olympus Mons"}),
            "timezone",
        ),
        (json!({"name": "X", "group_ids": ["nope"]}), "group_ids"),
    ] {
        let refused = app
            .post("/api/v1/partner/customers", &owner.bearer(), body)
            .await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], field, "{}", refused.text);
    }
    // Nothing half-written by the refusals.
    assert_eq!(
        app.get("/api/v1/partner/customers", &owner.bearer())
            .await
            .body
            .as_array()
            .unwrap()
            .len(),
        3
    );

    // Groups.
    let group = app
        .post(
            "/api/v1/partner/groups",
            &owner.bearer(),
            json!({"name": "Maintenance contract", "customer_ids": [acme, globex]}),
        )
        .await;
    assert_eq!(group.status, 201, "{}", group.text);
    let group_id = group.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        sorted(serde_json::from_value(group.body["customer_ids"].clone()).unwrap()),
        sorted(vec![acme.clone(), globex.clone()])
    );
    app.post(
        "/api/v1/partner/groups",
        &owner.bearer(),
        json!({"name": "Maintenance contract"}),
    )
    .await
    .assert_error(409);
    app.post(
        "/api/v1/partner/groups",
        &owner.bearer(),
        json!({"name": "Other", "customer_ids": ["not-a-customer"]}),
    )
    .await
    .assert_error(422);
    let moved = app
        .patch(
            &format!("/api/v1/partner/groups/{group_id}"),
            &owner.bearer(),
            json!({"customer_ids": [acme], "description": "Monthly patching"}),
        )
        .await;
    assert_eq!(moved.status, 200, "{}", moved.text);
    assert_eq!(moved.body["customer_ids"], json!([acme]));
    assert_eq!(moved.body["description"], "Monthly patching");
    let acme_view = app
        .get(
            &format!("/api/v1/partner/customers/{acme}"),
            &owner.bearer(),
        )
        .await;
    assert_eq!(acme_view.body["group_ids"], json!([group_id]));
    // A customer created into a group (named twice) joins its members.
    let hooli = app
        .post(
            "/api/v1/partner/customers",
            &owner.bearer(),
            json!({"name": "Hooli", "group_ids": [group_id, group_id]}),
        )
        .await;
    assert_eq!(hooli.status, 201, "{}", hooli.text);
    let hooli_id = hooli.body["id"].as_str().unwrap().to_string();
    let group = app
        .get(
            &format!("/api/v1/partner/groups/{group_id}"),
            &owner.bearer(),
        )
        .await;
    let mut members: Vec<String> =
        serde_json::from_value(group.body["customer_ids"].clone()).unwrap();
    members.sort();
    let mut expected = vec![acme.to_string(), hooli_id.clone()];
    expected.sort();
    assert_eq!(members, expected, "{}", group.text);
    app.delete(
        &format!("/api/v1/partner/customers/{hooli_id}"),
        &owner.bearer(),
    )
    .await;

    // Renaming a customer.
    let renamed = app
        .patch(
            &format!("/api/v1/partner/customers/{initech}"),
            &owner.bearer(),
            json!({"name": "Initech Corp"}),
        )
        .await;
    assert_eq!(renamed.body["name"], "Initech Corp", "{}", renamed.text);

    // Roles: partner roles only in a partner's own tenant.
    let admin = app
        .add_member(&owner, "padmin@msp.example", "partner_admin")
        .await;
    let analyst = app
        .add_member(&owner, "analyst@msp.example", "partner_analyst")
        .await;
    let member = app.add_member(&owner, "member@msp.example", "member").await;
    assert_eq!(
        app.get("/api/v1/partner/customers", &admin.bearer())
            .await
            .body
            .as_array()
            .unwrap()
            .len(),
        3
    );
    app.get("/api/v1/partner/customers", &member.bearer())
        .await
        .assert_error(403);
    // An analyst reaches nothing until assigned.
    assert_eq!(
        app.get("/api/v1/partner/customers", &analyst.bearer())
            .await
            .body,
        json!([])
    );
    app.post(
        "/api/v1/partner/customers",
        &analyst.bearer(),
        json!({"name": "Mine"}),
    )
    .await
    .assert_error(403);
    let assigned = app
        .call(
            Method::PUT,
            &format!("/api/v1/partner/access/{}", analyst.user_id),
            &admin.bearer(),
            Some(json!({"customer_ids": [initech], "group_ids": [group_id]})),
        )
        .await;
    assert_eq!(assigned.status, 200, "{}", assigned.text);
    let seen = app
        .get("/api/v1/partner/customers", &analyst.bearer())
        .await;
    assert_eq!(ids(&seen.body), sorted(vec![acme.clone(), initech.clone()]));
    // The group's membership drives the reach: Globex joins, the analyst
    // sees it at once.
    app.patch(
        &format!("/api/v1/partner/groups/{group_id}"),
        &owner.bearer(),
        json!({"customer_ids": [acme, globex]}),
    )
    .await;
    let seen = app
        .get("/api/v1/partner/customers", &analyst.bearer())
        .await;
    assert_eq!(
        ids(&seen.body),
        sorted(vec![acme.clone(), globex.clone(), initech.clone()])
    );
    app.call(
        Method::PUT,
        &format!("/api/v1/partner/access/{}", member.user_id),
        &owner.bearer(),
        Some(json!({"all_customers": true})),
    )
    .await
    .assert_error(409);
    let listed = app.get("/api/v1/partner/access", &owner.bearer()).await;
    assert_eq!(listed.body.as_array().unwrap().len(), 1, "{}", listed.text);
    assert_eq!(listed.body[0]["email"], "analyst@msp.example");

    // A customer's own users: invited from inside the customer, today's
    // roles only, never the partner routes.
    let inside = act(&app, &owner, &acme).await;
    let refused = app
        .post(
            "/api/v1/invites",
            &inside.bearer(),
            json!({"email": "x@acme.example", "role": "partner_admin"}),
        )
        .await;
    refused.assert_error(422);
    let dentist = app
        .add_member(&inside, "dentist@acme.example", "admin")
        .await;
    assert_eq!(dentist.tenant_id, acme);
    for path in [
        "/api/v1/partner/customers".to_string(),
        "/api/v1/partner/groups".to_string(),
        "/api/v1/partner/overview".to_string(),
        "/api/v1/partner/audit".to_string(),
        format!("/api/v1/partner/customers/{acme}"),
    ] {
        app.get(&path, &dentist.bearer()).await.assert_error(403);
    }
    app.post(
        "/api/v1/partner/customers",
        &dentist.bearer(),
        json!({"name": "Nested"}),
    )
    .await
    .assert_error(403);
    app.post(
        "/api/v1/auth/act-as",
        &dentist.bearer(),
        json!({"customer_id": globex}),
    )
    .await
    .assert_error(404);

    // Deleting a group keeps its customers; removing a customer keeps its
    // tenant with its own users.
    app.delete(
        &format!("/api/v1/partner/groups/{group_id}"),
        &owner.bearer(),
    )
    .await;
    assert_eq!(
        app.get("/api/v1/partner/groups", &owner.bearer())
            .await
            .body,
        json!([])
    );
    let removed = app
        .delete(
            &format!("/api/v1/partner/customers/{acme}"),
            &owner.bearer(),
        )
        .await;
    assert_eq!(removed.status, 204, "{}", removed.text);
    app.get(
        &format!("/api/v1/partner/customers/{acme}"),
        &owner.bearer(),
    )
    .await
    .assert_error(404);
    let still = app.get("/api/v1/tenant/me", &dentist.bearer()).await;
    assert_eq!(still.body["id"], acme, "{}", still.text);
    app.finish().await;
}

/// Every id-bearing partner route, as (method, path, body).
fn id_routes(customer: &str, group: &str) -> Vec<(Method, String, Option<Value>)> {
    vec![
        (
            Method::GET,
            format!("/api/v1/partner/customers/{customer}"),
            None,
        ),
        (
            Method::PATCH,
            format!("/api/v1/partner/customers/{customer}"),
            Some(json!({"name": "Taken"})),
        ),
        (
            Method::DELETE,
            format!("/api/v1/partner/customers/{customer}"),
            None,
        ),
        (
            Method::GET,
            format!("/api/v1/partner/customers/{customer}/integrations/rmm"),
            None,
        ),
        (
            Method::PUT,
            format!("/api/v1/partner/customers/{customer}/integrations/rmm"),
            Some(json!({"scope": {"scope_client_ids": ["1"]}})),
        ),
        (
            Method::DELETE,
            format!("/api/v1/partner/customers/{customer}/integrations/rmm"),
            None,
        ),
        (
            Method::GET,
            format!("/api/v1/partner/audit?customer_id={customer}"),
            None,
        ),
        (
            Method::POST,
            "/api/v1/auth/act-as".to_string(),
            Some(json!({"customer_id": customer})),
        ),
        (Method::GET, format!("/api/v1/partner/groups/{group}"), None),
        (
            Method::PATCH,
            format!("/api/v1/partner/groups/{group}"),
            Some(json!({"name": "Taken"})),
        ),
        (
            Method::DELETE,
            format!("/api/v1/partner/groups/{group}"),
            None,
        ),
        (
            Method::GET,
            format!("/api/v1/partner/overview?group_id={group}"),
            None,
        ),
    ]
}

async fn isolation_holds_on_every_partner_route(backend: Backend) {
    let dir = cairn_tests::components::connectors_dir(&["connectors/rmm"], &[]);
    let Some(app) = TestApp::start_with(backend, move |s| s.connectors_dir = dir).await else {
        return;
    };
    let a = app.register("a@msp-a.example").await;
    let b = app.register("b@msp-b.example").await;
    let a_customer = customer(&app, &a, "A's customer").await;
    let b_customer = customer(&app, &b, "B's customer").await;
    let b_group = app
        .post(
            "/api/v1/partner/groups",
            &b.bearer(),
            json!({"name": "B", "customer_ids": [b_customer]}),
        )
        .await;
    let b_group = b_group.body["id"].as_str().unwrap().to_string();
    // Partner A on every route naming B's customer or group: 404, and
    // B's data unchanged.
    for (method, path, body) in id_routes(&b_customer, &b_group) {
        let resp = app.call(method.clone(), &path, &a.bearer(), body).await;
        assert_eq!(resp.status, 404, "{method} {path}: {}", resp.text);
        resp.assert_error(404);
    }
    let b_view = app
        .get(
            &format!("/api/v1/partner/customers/{b_customer}"),
            &b.bearer(),
        )
        .await;
    assert_eq!(b_view.body["name"], "B's customer");
    assert_eq!(
        app.get("/api/v1/partner/groups", &b.bearer()).await.body[0]["customer_ids"],
        json!([b_customer])
    );
    assert_eq!(
        ids(&app.get("/api/v1/partner/customers", &a.bearer()).await.body),
        [a_customer]
    );

    // An analyst of A assigned X and Y gets 404 for Z on every route,
    // acted-as routes included.
    let x = customer(&app, &a, "X").await;
    let y = customer(&app, &a, "Y").await;
    let z = customer(&app, &a, "Z").await;
    let z_group = app
        .post(
            "/api/v1/partner/groups",
            &a.bearer(),
            json!({"name": "Z only", "customer_ids": [z]}),
        )
        .await;
    let z_group = z_group.body["id"].as_str().unwrap().to_string();
    let analyst = app
        .add_member(&a, "analyst@msp-a.example", "partner_analyst")
        .await;
    let assigned = app
        .call(
            Method::PUT,
            &format!("/api/v1/partner/access/{}", analyst.user_id),
            &a.bearer(),
            Some(json!({"customer_ids": [x, y]})),
        )
        .await;
    assert_eq!(assigned.status, 200, "{}", assigned.text);
    for (method, path, body) in id_routes(&z, &z_group) {
        let resp = app
            .call(method.clone(), &path, &analyst.bearer(), body)
            .await;
        // The group exists for the analyst's partner, but its customers
        // are not the analyst's: group routes show it without them.
        if path.contains("/groups/") || path.contains("group_id=") {
            assert_ne!(resp.status, 500, "{method} {path}: {}", resp.text);
            if resp.status == 200 && method == Method::GET {
                assert!(
                    !resp.text.contains(&z),
                    "{method} {path} shows Z: {}",
                    resp.text
                );
            }
            continue;
        }
        resp.assert_error(404);
    }
    let reached = app
        .get("/api/v1/partner/customers", &analyst.bearer())
        .await;
    assert_eq!(ids(&reached.body), sorted(vec![x.clone(), y.clone()]));
    let z_view = app
        .get(&format!("/api/v1/partner/customers/{z}"), &a.bearer())
        .await;
    assert_eq!(z_view.body["name"], "Z", "Z untouched");
    let overview = app.get("/api/v1/partner/overview", &analyst.bearer()).await;
    let listed: Vec<&str> = overview.body["customers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["customer_id"].as_str().unwrap())
        .collect();
    assert_eq!(listed.len(), 2, "{}", overview.text);
    assert!(!listed.contains(&z.as_str()));

    // A customer's data stays its own: acting in X, A's admin sees X's
    // tenant only; the tenant routes never reach Y.
    let in_x = act(&app, &a, &x).await;
    let me = app.get("/api/v1/tenant/me", &in_x.bearer()).await;
    assert_eq!(me.body["id"], x);
    assert_eq!(me.body["name"], "X");
    app.finish().await;
}

/// POST routes that only read, with a body each takes.
fn read_posts() -> [(&'static str, Value); 3] {
    [
        ("/api/v1/devices/devices/search", json!({})),
        ("/api/v1/inventory/applications/search", json!({})),
        (
            "/api/v1/dashboards/widgets/preview",
            json!({"data_source": {"metric": "sync_health"}}),
        ),
    ]
}

async fn acting_in_a_customer_is_audited_and_ends_with_the_customer(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let acme = customer(&app, &owner, "Acme").await;
    let globex = customer(&app, &owner, "Globex").await;

    // With a bearer token.
    let inside = act(&app, &owner, &acme).await;
    let me = app.get("/api/v1/auth/me", &inside.bearer()).await;
    assert_eq!(me.body["tenant_id"], acme, "{}", me.text);
    assert_eq!(me.body["id"], owner.user_id);
    assert_eq!(me.body["role"], "admin");
    assert_eq!(me.body["acting"]["partner_id"], owner.tenant_id);
    assert_eq!(me.body["acting"]["partner_role"], "owner");
    let renamed = app
        .patch(
            "/api/v1/tenant/me",
            &inside.bearer(),
            json!({"timezone": "Europe/Berlin"}),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.text);
    assert_eq!(renamed.body["id"], acme);
    // The partner's own tenant is untouched.
    assert_eq!(
        app.get("/api/v1/tenant/me", &owner.bearer()).await.body["timezone"],
        "UTC"
    );
    // Reads sent as POSTs (searches, a widget's data) are answered and
    // are no writes: the audit below has none of them.
    for (path, body) in read_posts() {
        let read = app.post(path, &inside.bearer(), body).await;
        assert_eq!(read.status, 200, "{path}: {}", read.text);
    }
    // Partner routes still answer for the partner while acting.
    assert_eq!(
        app.get("/api/v1/partner/customers", &inside.bearer())
            .await
            .body
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // With the session cookie: the session itself switches.
    app.post(
        "/api/v1/auth/act-as",
        &owner.cookie(),
        json!({"customer_id": globex}),
    )
    .await;
    assert_eq!(
        app.get("/api/v1/tenant/me", &owner.cookie()).await.body["id"],
        globex
    );
    app.patch(
        "/api/v1/tenant/me",
        &owner.cookie(),
        json!({"name": "Globex Inc"}),
    )
    .await;
    let back = app
        .call(Method::DELETE, "/api/v1/auth/act-as", &owner.cookie(), None)
        .await;
    assert_eq!(back.status, 204, "{}", back.text);
    assert_eq!(
        app.get("/api/v1/tenant/me", &owner.cookie()).await.body["id"],
        owner.tenant_id
    );

    // Every write made acting is in the partner's audit trail, with the
    // partner user's identity; reads are not.
    let audit = app.get("/api/v1/partner/audit", &owner.bearer()).await;
    assert_eq!(audit.status, 200, "{}", audit.text);
    let rows: Vec<(String, String, String, i64)> = audit.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["customer_id"].is_string())
        .map(|r| {
            assert_eq!(r["user_id"], owner.user_id);
            assert_eq!(r["user_email"], "owner@msp.example");
            (
                r["customer_id"].as_str().unwrap().to_string(),
                r["method"].as_str().unwrap().to_string(),
                r["path"].as_str().unwrap().to_string(),
                r["status"].as_i64().unwrap(),
            )
        })
        .collect();
    assert!(
        rows.contains(&(
            acme.clone(),
            "PATCH".into(),
            "/api/v1/tenant/me".into(),
            200
        )),
        "{rows:?}"
    );
    assert!(
        rows.contains(&(
            globex.clone(),
            "PATCH".into(),
            "/api/v1/tenant/me".into(),
            200
        )),
        "{rows:?}"
    );
    assert!(!rows.iter().any(|r| r.1 == "GET"), "{rows:?}");
    for (path, _) in read_posts() {
        assert!(!rows.iter().any(|r| r.2 == path), "{path}: {rows:?}");
    }
    let only_acme = app
        .get(
            &format!("/api/v1/partner/audit?customer_id={acme}"),
            &owner.bearer(),
        )
        .await;
    assert!(only_acme.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["customer_id"] == acme.as_str()));
    // The customer's creation on the partner routes is there too.
    assert!(audit.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["path"] == "/api/v1/partner/customers" && r["status"] == 201));

    // An analyst acting reads and triages, nothing else.
    let analyst = app
        .add_member(&owner, "analyst@msp.example", "partner_analyst")
        .await;
    app.call(
        Method::PUT,
        &format!("/api/v1/partner/access/{}", analyst.user_id),
        &owner.bearer(),
        Some(json!({"all_customers": true})),
    )
    .await;
    let analyst_in = act(&app, &analyst, &acme).await;
    assert_eq!(
        app.get("/api/v1/tenant/me", &analyst_in.bearer())
            .await
            .status,
        200
    );
    app.patch(
        "/api/v1/tenant/me",
        &analyst_in.bearer(),
        json!({"name": "Hacked"}),
    )
    .await
    .assert_error(403);
    app.post(
        "/api/v1/vulnerabilities/scan",
        &analyst_in.bearer(),
        json!({}),
    )
    .await
    .assert_error(403);
    // An analyst reads dashboards and searches in the customer.
    for (path, body) in read_posts() {
        let read = app.post(path, &analyst_in.bearer(), body).await;
        assert_eq!(read.status, 200, "{path}: {}", read.text);
    }
    // Its partner routes stay open while it acts: triage across
    // customers is a partner write, audited without a customer.
    let across = app
        .post(
            "/api/v1/partner/triage",
            &analyst_in.bearer(),
            json!({"cve_id": "CVE-2023-2033", "status": "not_affected", "justification": "not deployed", "customer_ids": [acme]}),
        )
        .await;
    assert_eq!(across.status, 200, "{}", across.text);
    let audit = app.get("/api/v1/partner/audit", &owner.bearer()).await;
    assert!(
        audit.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["path"] == "/api/v1/partner/triage"
                && r["user_email"] == "analyst@msp.example"),
        "{}",
        audit.text
    );
    let triage = app
        .call(
            Method::PUT,
            "/api/v1/vulnerabilities/cve/CVE-2023-2033/triage",
            &analyst_in.bearer(),
            Some(json!({"status": "in_analysis"})),
        )
        .await;
    // Past the analyst gate: the route itself answers (no finding here).
    triage.assert_error(404);
    assert_eq!(
        app.get("/api/v1/tenant/me", &inside.bearer()).await.body["name"],
        "Acme"
    );

    // Taking the analyst off ends its acting at once.
    app.call(
        Method::PUT,
        &format!("/api/v1/partner/access/{}", analyst.user_id),
        &owner.bearer(),
        Some(json!({"customer_ids": [globex]})),
    )
    .await;
    app.get("/api/v1/tenant/me", &analyst_in.bearer())
        .await
        .assert_error(401);

    // Removing the customer ends every acting session into it: the
    // bearer token and the cookie session.
    app.post(
        "/api/v1/auth/act-as",
        &owner.cookie(),
        json!({"customer_id": acme}),
    )
    .await;
    assert_eq!(
        app.get("/api/v1/tenant/me", &owner.cookie()).await.body["id"],
        acme
    );
    let removed = app
        .delete(
            &format!("/api/v1/partner/customers/{acme}"),
            &owner.bearer(),
        )
        .await;
    assert_eq!(removed.status, 204);
    let ended = app.get("/api/v1/tenant/me", &inside.bearer()).await;
    ended.assert_error(401);
    assert!(
        ended.body["detail"]
            .as_str()
            .unwrap()
            .contains("acting session ended"),
        "{}",
        ended.text
    );
    app.get("/api/v1/tenant/me", &owner.cookie())
        .await
        .assert_error(401);
    app.post(
        "/api/v1/auth/act-as",
        &owner.bearer(),
        json!({"customer_id": acme}),
    )
    .await
    .assert_error(404);
    // The partner's own bearer identity is unaffected.
    assert_eq!(
        app.get("/api/v1/tenant/me", &owner.bearer()).await.body["id"],
        owner.tenant_id
    );
    app.finish().await;
}

async fn views_across_customers_and_partner_triage(backend: Backend) {
    let Some((app, _nvd)) = loaded_with(backend, |_| {}).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let acme = customer(&app, &owner, "Acme").await;
    let globex = customer(&app, &owner, "Globex").await;
    let initech = customer(&app, &owner, "Initech").await;
    let group = app
        .post(
            "/api/v1/partner/groups",
            &owner.bearer(),
            json!({"name": "Contract", "customer_ids": [acme, globex]}),
        )
        .await;
    let group = group.body["id"].as_str().unwrap().to_string();
    // Acme: two devices on the vulnerable Chrome; Globex: one; Initech:
    // the fixed version only.
    for (customer, devices, version) in [
        (&acme, vec!["ACME-01", "ACME-02"], "112.0.5615.49"),
        (&globex, vec!["GLOBEX-01"], "112.0.5615.49"),
        (&initech, vec!["INITECH-01"], "112.0.5615.121"),
    ] {
        let inside = act(&app, &owner, customer).await;
        let rows: Vec<_> = devices
            .iter()
            .map(|d| software(d, "Google Chrome", "Google LLC", version, "windows"))
            .collect();
        app.seed(&inside, "rmm", &rows).await;
        app.rebuild(&inside).await;
        scan(&app, &inside, json!({})).await;
    }

    let overview = app
        .get(
            "/api/v1/partner/overview?sort=kev_findings",
            &owner.bearer(),
        )
        .await;
    assert_eq!(overview.status, 200, "{}", overview.text);
    let rows = overview.body["customers"].as_array().unwrap();
    let order: Vec<&str> = rows.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(order, ["Acme", "Globex", "Initech"], "{}", overview.text);
    let acme_row = &rows[0];
    assert_eq!(acme_row["devices"], 2);
    assert!(
        acme_row["kev_findings"].as_i64().unwrap() >= 2,
        "{acme_row}"
    );
    assert!(
        acme_row["open_findings"].as_i64().unwrap() >= acme_row["kev_findings"].as_i64().unwrap()
    );
    assert_eq!(acme_row["oldest_open_kev_days"], 0);
    assert_eq!(acme_row["freshness"], "current");
    assert!(acme_row["last_data_at"].is_string());
    assert_eq!(rows[2]["kev_findings"], 0);
    assert!(rows[2]["oldest_open_kev_days"].is_null());
    assert_eq!(overview.body["devices"], 4);
    let grouped = app
        .get(
            &format!("/api/v1/partner/overview?group_id={group}&sort=name"),
            &owner.bearer(),
        )
        .await;
    let names: Vec<&str> = grouped.body["customers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["Acme", "Globex"]);
    app.get("/api/v1/partner/overview?sort=colour", &owner.bearer())
        .await
        .assert_error(422);

    let cve = app
        .get("/api/v1/partner/cves/CVE-2023-2033", &owner.bearer())
        .await;
    assert_eq!(cve.status, 200, "{}", cve.text);
    assert_eq!(cve.body["customers_exposed"], 2, "{}", cve.text);
    assert_eq!(cve.body["customers_checked"], 3);
    assert_eq!(cve.body["devices_exposed"], 3);
    let acme_exposure = &cve.body["customers"][0];
    assert_eq!(acme_exposure["name"], "Acme");
    assert_eq!(acme_exposure["findings"][0]["device_name"], "ACME-01");
    assert_eq!(acme_exposure["findings"][0]["version"], "112.0.5615.49");
    assert_eq!(
        acme_exposure["findings"][0]["fix_version"], "112.0.5615.121",
        "{acme_exposure}"
    );
    app.get("/api/v1/partner/cves/not-a-cve", &owner.bearer())
        .await
        .assert_error(422);

    let apps = app
        .get("/api/v1/partner/applications?name=chrome", &owner.bearer())
        .await;
    assert_eq!(apps.status, 200, "{}", apps.text);
    let per_customer: Vec<(String, String)> = apps.body["customers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["customer_name"].as_str().unwrap().to_string(),
                c["applications"][0]["versions"][0]["version"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(
        per_customer,
        [
            ("Acme".to_string(), "112.0.5615.49".to_string()),
            ("Globex".to_string(), "112.0.5615.49".to_string()),
            ("Initech".to_string(), "112.0.5615.121".to_string()),
        ]
    );
    app.get("/api/v1/partner/applications?name=c", &owner.bearer())
        .await
        .assert_error(422);

    // Risk accepted in the group's customers: their findings leave the
    // open counts (the kept figures move), the other customers' stay.
    let expires = (chrono::Utc::now() + chrono::Duration::days(30)).to_rfc3339();
    let triaged = app
        .post(
            "/api/v1/partner/triage",
            &owner.bearer(),
            json!({"cve_id": "CVE-2023-2033", "status": "risk_accepted", "expires_at": expires, "customer_ids": [acme], "comment": "compensating control"}),
        )
        .await;
    assert_eq!(triaged.status, 200, "{}", triaged.text);
    assert_eq!(
        triaged.body["customers"][0]["products"],
        json!(["google:chrome"])
    );
    let after = app
        .get("/api/v1/partner/cves/CVE-2023-2033", &owner.bearer())
        .await;
    assert_eq!(after.body["customers_exposed"], 1, "{}", after.text);
    assert_eq!(after.body["customers"][0]["name"], "Globex");
    let overview = app
        .get("/api/v1/partner/overview?sort=name", &owner.bearer())
        .await;
    let acme_after = &overview.body["customers"][0];
    assert!(
        acme_after["kev_findings"].as_i64().unwrap() < acme_row["kev_findings"].as_i64().unwrap(),
        "{acme_after}"
    );
    // The customer's own triage history names the partner user.
    let inside = act(&app, &owner, &acme).await;
    let history = app
        .get(
            "/api/v1/vulnerabilities/cve/CVE-2023-2033/triage",
            &inside.bearer(),
        )
        .await;
    assert!(
        history
            .text
            .contains("compensating control (set by partner user owner@msp.example)"),
        "{}",
        history.text
    );
    app.post(
        "/api/v1/partner/triage",
        &owner.bearer(),
        json!({"cve_id": "CVE-2023-2033", "status": "fixed"}),
    )
    .await
    .assert_error(422);
    app.post(
        "/api/v1/partner/triage",
        &owner.bearer(),
        json!({"cve_id": "CVE-2023-2033", "status": "not_affected", "justification": "x", "customer_ids": ["someone-elses"]}),
    )
    .await
    .assert_error(422);

    // Acme's findings were just accepted; Globex's are open.
    quarterly_reviews_carry_the_partners_brand(&app, &owner, &group, &globex).await;
    app.finish().await;
}

/// A 1 x 1 red PNG with an alpha channel.
const LOGO: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

async fn quarterly_reviews_carry_the_partners_brand(
    app: &TestApp,
    owner: &Account,
    group: &str,
    customer: &str,
) {
    for (body, field) in [
        (json!({"primary_color": "blue"}), "primary_color"),
        (
            json!({"logo_png_base64": "bm90IGEgcG5n"}),
            "logo_png_base64",
        ),
    ] {
        let refused = app
            .call(
                Method::PUT,
                "/api/v1/partner/branding",
                &owner.bearer(),
                Some(body),
            )
            .await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], field);
    }
    let branded = app
        .call(
            Method::PUT,
            "/api/v1/partner/branding",
            &owner.bearer(),
            Some(json!({"display_name": "Northwind MSP", "logo_png_base64": LOGO, "primary_color": "#1F4E79", "accent_color": "#C00000"})),
        )
        .await;
    assert_eq!(branded.status, 200, "{}", branded.text);
    assert_eq!(branded.body["primary_color"], "#1f4e79");
    app.post(
        "/api/v1/partner/reports",
        &owner.bearer(),
        json!({"format": "csv"}),
    )
    .await
    .assert_error(422);
    app.post(
        "/api/v1/partner/reports",
        &owner.bearer(),
        json!({"format": "pdf", "period_days": 3}),
    )
    .await
    .assert_error(422);
    for format in ["pdf", "xlsx"] {
        let started = app
            .post(
                "/api/v1/partner/reports",
                &owner.bearer(),
                json!({"format": format, "group_id": group, "period_days": 30}),
            )
            .await;
        assert_eq!(started.status, 202, "{}", started.text);
        let started = started.body.as_array().unwrap().clone();
        assert_eq!(started.len(), 2, "one review per customer of the group");
        let review = started
            .iter()
            .find(|s| s["customer_id"] == customer)
            .unwrap();
        let id = review["report"]["id"].as_str().unwrap();
        let status_path = format!("/api/v1/partner/customers/{customer}/reports/{id}");
        cairn_tests::wait_until(
            "the review",
            std::time::Duration::from_secs(60),
            async || {
                let status = app.get(&status_path, &owner.bearer()).await;
                assert_ne!(status.body["status"], "error", "{}", status.text);
                if status.body["status"] == "success" {
                    Ok(())
                } else {
                    Err(status.text)
                }
            },
        )
        .await;
        let resp = app
            .http
            .get(format!("{}{status_path}/download", app.url))
            .bearer_auth(&owner.access_token)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let bytes = resp.bytes().await.unwrap().to_vec();
        if format == "pdf" {
            let text = super::reports::pdf_text(&bytes);
            for expected in [
                "Security review",
                "Globex",
                "Prepared by Northwind MSP",
                "Findings opened in the last 30 days",
                "Mean days to remediate KEV findings",
                "Trend by week",
                "Top risks",
                "CVE-2023-2033",
                "Outdated software",
                "Google Chrome",
                "112.0.5615.121",
            ] {
                assert!(text.contains(expected), "{expected} missing from:\n{text}");
            }
            assert_eq!(pdf_images(&bytes), 1, "the logo is on the title page");
        } else {
            use calamine::Reader;
            let mut book: calamine::Xlsx<_> =
                calamine::open_workbook_from_rs(std::io::Cursor::new(bytes)).unwrap();
            let summary = book.worksheet_range("Summary").unwrap();
            let cells: Vec<String> = summary.cells().map(|(_, _, v)| v.to_string()).collect();
            assert!(
                cells.contains(&"Prepared by Northwind MSP".to_string()),
                "{cells:?}"
            );
            assert!(book
                .sheet_names()
                .contains(&"Outdated software".to_string()));
            assert!(book.sheet_names().contains(&"Trend by week".to_string()));
        }
    }
    // Another partner cannot read the review.
    let other = app.register("other@msp-b.example").await;
    let listed = app
        .get(
            &format!("/api/v1/partner/customers/{customer}/reports/x"),
            &other.bearer(),
        )
        .await;
    listed.assert_error(404);
}

/// Images in a PDF (`pdfimages -list`).
fn pdf_images(bytes: &[u8]) -> usize {
    let dir = std::env::temp_dir().join(format!("cairn-pdf-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("review.pdf");
    std::fs::write(&file, bytes).unwrap();
    let out = std::process::Command::new("pdfimages")
        .arg("-list")
        .arg(&file)
        .output()
        .expect("pdfimages (Debian's poppler-utils)");
    let _ = std::fs::remove_dir_all(dir);
    // Two header lines, then one line per image.
    String::from_utf8_lossy(&out.stdout).lines().skip(2).count()
}

async fn a_shared_rmm_config_fills_each_customer_with_its_own_devices(backend: Backend) {
    let fake = FakeRmm::start(rmm::fake_data()).await;
    let Some(app) = rmm::app_with(backend, |_| {}).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let acme = customer(&app, &owner, "Acme").await;
    let globex = customer(&app, &owner, "Globex").await;
    let own = customer(&app, &owner, "Has its own").await;

    // Sharing needs the partner's own config first.
    app.call(
        Method::PUT,
        &format!("/api/v1/partner/customers/{acme}/integrations/rmm"),
        &owner.bearer(),
        Some(json!({"scope": {"scope_client_ids": ["1"]}})),
    )
    .await
    .assert_error(409);
    rmm::configure(&app, &owner, &fake, json!({})).await;
    for (customer, client) in [(&acme, "1"), (&globex, "2")] {
        let shared = app
            .call(
                Method::PUT,
                &format!("/api/v1/partner/customers/{customer}/integrations/rmm"),
                &owner.bearer(),
                Some(json!({"scope": {"scope_client_ids": [client]}})),
            )
            .await;
        assert_eq!(shared.status, 200, "{}", shared.text);
    }
    for scope in [json!({"password": "stolen"}), json!({"page_size": "many"})] {
        app.call(
            Method::PUT,
            &format!("/api/v1/partner/customers/{acme}/integrations/rmm"),
            &owner.bearer(),
            Some(json!({"scope": scope})),
        )
        .await
        .assert_error(422);
    }
    // A customer with its own config keeps it.
    let own_inside = act(&app, &owner, &own).await;
    rmm::configure(&app, &own_inside, &fake, json!({"scope_client_ids": ["2"]})).await;
    app.call(
        Method::PUT,
        &format!("/api/v1/partner/customers/{own}/integrations/rmm"),
        &owner.bearer(),
        Some(json!({"scope": {"scope_client_ids": ["1"]}})),
    )
    .await
    .assert_error(409);

    let started = app
        .post(
            "/api/v1/partner/integrations/rmm/sync",
            &owner.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    assert_eq!(
        started.body.as_array().unwrap().len(),
        2,
        "{}",
        started.text
    );
    for (customer, expected) in [
        (&acme, vec!["ACME-SRV-01", "ACME-WS-01"]),
        (&globex, vec!["GLOBEX-SRV-01", "GLOBEX-WS-01"]),
    ] {
        let inside = act(&app, &owner, customer).await;
        let job = started
            .body
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["customer_id"] == customer.as_str())
            .unwrap();
        let done = app
            .wait_for_job(&inside, job["job_id"].as_str().unwrap())
            .await;
        assert_eq!(done["status"], "success", "{done}");
        assert_eq!(rmm::device_names(&app, &inside).await, expected);
        // The overview counts devices of the rollup the sync queues.
        app.wait_for_rollup(&inside).await;
        // The customer sees the config as shared, secrets masked, and
        // never the partner's password.
        let config = app.get("/api/v1/rmm/config", &inside.bearer()).await;
        assert_eq!(config.body["shared_by_partner"], true, "{}", config.text);
        assert_eq!(config.body["config"]["password"], "********");
        assert!(!config.text.contains(PASSWORD));
    }
    // The partner's overview shows each customer's last rmm sync.
    let overview = app.get("/api/v1/partner/overview", &owner.bearer()).await;
    let acme_row = overview.body["customers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["customer_id"] == acme.as_str())
        .unwrap();
    assert_eq!(acme_row["syncs"][0]["area"], "rmm", "{acme_row}");
    assert_eq!(acme_row["devices"], 2);

    // A customer's own config replaces the share without inheriting the
    // partner's settings or secrets.
    let acme_inside = act(&app, &owner, &acme).await;
    let own_save = app
        .call(
            Method::PATCH,
            "/api/v1/rmm/config",
            &acme_inside.bearer(),
            Some(json!({"page_size": 5})),
        )
        .await;
    assert_ne!(
        own_save.status, 200,
        "a partial save must not inherit the partner's secrets: {}",
        own_save.text
    );
    let list = app
        .get("/api/v1/partner/integrations/rmm", &owner.bearer())
        .await;
    assert_eq!(
        list.body["shares"].as_array().unwrap().len(),
        2,
        "{}",
        list.text
    );

    // Removing a share removes what it synced.
    let removed = app
        .call(
            Method::DELETE,
            &format!("/api/v1/partner/customers/{globex}/integrations/rmm"),
            &owner.bearer(),
            None,
        )
        .await;
    assert_eq!(removed.status, 204, "{}", removed.text);
    let globex_inside = act(&app, &owner, &globex).await;
    let config = app.get("/api/v1/rmm/config", &globex_inside.bearer()).await;
    assert_eq!(config.body["configured"], false, "{}", config.text);
    assert_eq!(
        rmm::device_names(&app, &globex_inside).await,
        Vec::<String>::new()
    );

    // Removing the customer from the partner ends its share.
    app.delete(
        &format!("/api/v1/partner/customers/{acme}"),
        &owner.bearer(),
    )
    .await;
    let shares = app
        .get("/api/v1/partner/integrations/rmm", &owner.bearer())
        .await;
    assert!(!shares.text.contains(&acme), "{}", shares.text);
    app.finish().await;
}
