//! Structured search over HTTP: what a client sees of it. The rules
//! themselves (every operator, combinator, hostile value, and a differential
//! test) are checked on the area's functions in `tests/areas/search.rs`;
//! here, one end-to-end path answered for the caller's tenant only, the 422
//! naming the part of a request that is wrong, and the caps.

use cairn_tests::inventory::{item, sorted_names};
use cairn_tests::query_eval::{group, rule};
use cairn_tests::{backend_tests, Account, Backend, TestApp};
use serde_json::{json, Value};

backend_tests!(
    a_search_answers_for_the_callers_tenant_and_names_bad_parts,
    oversized_queries_are_the_clients_error,
);

async fn app(backend: Backend) -> Option<TestApp> {
    TestApp::start_with(backend, |s| s.job_poll_interval_ms = 50).await
}

async fn search(app: &TestApp, account: &Account, body: Value) -> Value {
    let resp = app
        .post(
            "/api/v1/inventory/applications/search",
            &account.bearer(),
            body.clone(),
        )
        .await;
    assert_eq!(resp.status, 200, "{body}: {}", resp.text);
    resp.body
}

async fn a_search_answers_for_the_callers_tenant_and_names_bad_parts(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let other = app.register("other@elsewhere.example").await;
    let mut rows = vec![];
    for d in ["D1", "D2"] {
        rows.push(item(d, "Google Chrome", "Google", "120.0", "windows"));
    }
    rows.push(item("D1", "Mozilla Firefox", "Mozilla", "128.0", "macos"));
    rows.push(item("D3", "OpenSSH", "", "9.6", "linux"));
    app.seed(&owner, "rmm", &rows).await;
    app.seed(
        &other,
        "rmm",
        &[item("X1", "Google Chrome Secret", "Google", "1", "windows")],
    )
    .await;
    app.rebuild(&owner).await;
    app.rebuild(&other).await;

    // The other tenant's look-alike is never answered.
    for (query, want) in [
        (
            group("and", vec![rule("name", "contains", json!("chrome"))]),
            vec!["Google Chrome"],
        ),
        (
            group(
                "or",
                vec![
                    rule("vendor", "is_empty", Value::Null),
                    rule("platform", "equals", json!("macos")),
                ],
            ),
            vec!["Mozilla Firefox", "OpenSSH"],
        ),
    ] {
        let page = search(&app, &owner, json!({"query": query})).await;
        assert_eq!(sorted_names(&page), want, "{query}");
        assert_eq!(page["total"], want.len(), "{query}");
    }
    let page = search(
        &app,
        &owner,
        json!({"sort": "name", "skip": 1, "limit": 1, "search": "o"}),
    )
    .await;
    assert_eq!(sorted_names(&page), ["Mozilla Firefox"]);
    assert_eq!(page["total"], 3);
    assert_eq!(page["skip"], 1);
    assert_eq!(page["limit"], 1);

    // Spec rule 8: a rule on a field not in the allow-list is skipped and
    // one with an unknown operator dropped; the answer names each with its
    // path and why. The other rules still apply.
    let lenient = search(
        &app,
        &owner,
        json!({"query": group("and", vec![
            rule("applicaton_name", "equals", json!("x")),
            group("or", vec![rule("name", "matches", json!("x"))]),
            rule("name", "contains", json!("firefox")),
        ])}),
    )
    .await;
    assert_eq!(sorted_names(&lenient), ["Mozilla Firefox"], "{lenient}");
    let skipped: Vec<(&str, bool)> = lenient["skipped_rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let reason = s["reason"].as_str().unwrap();
            (
                s["path"].as_str().unwrap(),
                reason.contains("applicaton_name") || reason.contains("`matches`"),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        [("query.rules[0]", true), ("query.rules[1].rules[0]", true)],
        "{lenient}"
    );
    // Nothing skipped: no list.
    let plain = search(&app, &owner, json!({"search": "o"})).await;
    assert!(plain.get("skipped_rules").is_none(), "{plain}");

    // Bad requests are the client's and say which part is wrong, by its
    // path in the request (with `strict`, a rule a search would skip too).
    let bad = [
        (
            json!({"query": group("and", vec![rule("device_count", "gt", json!("many"))])}),
            "query.rules[0].value",
        ),
        (
            json!({"query": group("and", vec![rule("name", "equals", Value::Null)])}),
            "query.rules[0].value",
        ),
        (
            json!({"strict": true, "query": group("and", vec![rule("applicaton_name", "equals", json!("x"))])}),
            "query.rules[0].field",
        ),
        (
            json!({"query": group("and", vec![group("or", vec![rule("name", "gt", json!("x"))])])}),
            "query.rules[0].rules[0].operator",
        ),
        (
            json!({"strict": true, "query": group("and", vec![rule("name", "matches", json!("x"))])}),
            "query.rules[0].operator",
        ),
        (json!({"query": group("xor", vec![])}), "query.combinator"),
        (
            json!({"query": {"combinator": "and", "rules": [{"kind": "other"}]}}),
            "query.rules[0].kind",
        ),
        (json!({"sort": "secret"}), "sort"),
        (json!({"limit": -5}), "limit"),
        (json!({"unknown": 1}), "unknown"),
        (
            json!({"query": group("and", vec![rule("name", "in", json!(vec!["x"; 1001]))])}),
            "query.rules[0].value",
        ),
        (
            json!({"query": group(
                "or",
                (0..10_001)
                    .map(|i| rule("name", "equals", json!(i.to_string())))
                    .collect(),
            )}),
            "query",
        ),
    ];
    for (body, field) in bad {
        let resp = app
            .post(
                "/api/v1/inventory/applications/search",
                &owner.bearer(),
                body.clone(),
            )
            .await;
        resp.assert_error(422);
        assert_eq!(resp.body["field"], field, "{}", resp.text);
    }
    app.finish().await;
}

async fn oversized_queries_are_the_clients_error(backend: Backend) {
    let Some(app) = app(backend).await else {
        return;
    };
    let owner = app.register("owner@example.com").await;
    app.seed(
        &owner,
        "rmm",
        &[item("WS-01", "7-Zip", "Igor Pavlov", "23.01", "windows")],
    )
    .await;
    app.rebuild(&owner).await;
    for (route, field) in [
        ("/api/v1/inventory/applications/search", "name"),
        ("/api/v1/devices/devices/search", "device_name"),
    ] {
        let rules = |n: usize| -> Vec<Value> {
            (0..n)
                .map(|i| rule(field, "not_equals", json!(format!("app {i}"))))
                .collect()
        };
        let nested = |depth: usize| -> Value {
            let mut node = group("and", rules(1));
            for _ in 1..depth {
                node = group("and", vec![node]);
            }
            node
        };
        // At the caps: answered.
        for query in [group("and", rules(256)), nested(16)] {
            let resp = app
                .post(route, &owner.bearer(), json!({"query": query}))
                .await;
            assert_eq!(resp.status, 200, "{route}: {}", resp.text);
            assert_eq!(resp.body["total"], 1, "{route}: {}", resp.text);
        }
        // Past them: a 422 naming the query, not the database's failure.
        for (query, says) in [
            (group("and", rules(3_000)), "256 rules"),
            (
                group(
                    "or",
                    vec![group("and", rules(200)), group("and", rules(200))],
                ),
                "256 rules",
            ),
            (nested(17), "16 deep"),
        ] {
            let resp = app
                .post(route, &owner.bearer(), json!({"query": query}))
                .await;
            resp.assert_error(422);
            assert_eq!(resp.body["field"], "query", "{}", resp.text);
            assert!(resp.text.contains(says), "{}", resp.text);
        }
    }
    // Inventory items of an empty application name: refused, not the
    // tenant's whole inventory.
    for query in ["application=", "application=%20%20", "device_name="] {
        let resp = app
            .get(&format!("/api/v1/inventory/items?{query}"), &owner.bearer())
            .await;
        resp.assert_error(422);
    }
    app.finish().await;
}
