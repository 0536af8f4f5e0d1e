//! Dashboards end to end: the default dashboard, CRUD, sharing and
//! cloning, widgets checked against the catalog, and every metric
//! evaluated over a seeded tenant (the CVE store of the fake NVD, an rmm
//! sync through the fake RMM, inventory seeded on the host's write path),
//! with each figure compared to what the tenant's own views say; preview
//! and saved widgets agree; another tenant sees and evaluates nothing.

use std::collections::BTreeMap;

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_rmm::{apps, computer, FakeRmm, RmmData, PASSWORD, USERNAME};
use cairn_tests::{backend_tests, Account, Backend, TestApp};
use serde_json::{json, Value};

use super::vulnerabilities::{loaded_with, scan, software};

backend_tests!(dashboards_evaluate_every_metric_over_the_tenant);

const DAY_MS: i64 = 86_400_000;

pub(crate) async fn preview(app: &TestApp, account: &Account, source: Value) -> Value {
    let resp = app
        .post(
            "/api/v1/dashboards/widgets/preview",
            &account.bearer(),
            json!({"data_source": source}),
        )
        .await;
    assert_eq!(resp.status, 200, "{source}: {}", resp.text);
    resp.body
}

pub(crate) fn categories(answer: &Value) -> BTreeMap<String, i64> {
    assert_eq!(answer["data"]["shape"], "categories", "{answer}");
    answer["data"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["label"].as_str().unwrap().to_string(),
                i["value"].as_i64().unwrap(),
            )
        })
        .collect()
}

async fn rmm_sync(app: &TestApp, owner: &Account) -> Value {
    let started = app
        .post("/api/v1/rmm/sync", &owner.bearer(), json!({}))
        .await;
    assert_eq!(started.status, 202, "{}", started.text);
    app.wait_for_job(owner, started.body["job_id"].as_str().unwrap())
        .await
}

async fn dashboards_evaluate_every_metric_over_the_tenant(backend: Backend) {
    let mut data = RmmData {
        clients: vec![json!({"Id": 1, "Name": "Acme"})],
        computers: vec![computer(1, "RMM-01", (1, "Acme"), &[])],
        ..RmmData::default()
    };
    data.software.insert(1, apps(&[("Contoso Ledger", "4.2")]));
    let rmm = FakeRmm::start(data).await;
    let dir = connectors_dir(&["connectors/rmm"], &[]);
    let Some((app, _nvd)) = loaded_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_retry_backoff_ms = 0;
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let member = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;
    let other = app.register("owner@other.example").await;
    let chrome = |device: &str, platform: &str| {
        software(
            device,
            "Google Chrome",
            "Google LLC",
            "112.0.5615.49",
            platform,
        )
    };
    app.seed(
        &owner,
        "inventory-csv",
        &[
            chrome("WEB01", "windows"),
            chrome("LAPTOP-9", "windows"),
            chrome("MAC-1", "macos"),
            software(
                "KIOSK-1",
                "Contoso Widget Studio",
                "Contoso",
                "3.1",
                "windows",
            ),
            // CVE-1999-0001 of the fake store, which EPSS scores.
            software("KIOSK-1", "PuTTY", "Simon Tatham", "0.80", "windows"),
        ],
    )
    .await;
    // KIOSK-1 last reported 40 days ago.
    sqlx::query("UPDATE inventory_items SET updated_at = $1 WHERE device_name = 'KIOSK-1'")
        .bind(cairn_core::db::now_ms() - 40 * DAY_MS)
        .execute(&app.db().pool)
        .await
        .unwrap();
    // One integration synced well.
    let saved = app
        .post(
            "/api/v1/rmm/config",
            &owner.bearer(),
            json!({"base_url": rmm.base_url, "username": USERNAME, "password": PASSWORD,
                   "client_id": "integrator-42"}),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    assert_eq!(rmm_sync(&app, &owner).await["status"], "success");
    app.rebuild(&owner).await;
    scan(&app, &owner, json!({})).await;

    // What the tenant's own views say, to compare the metrics with.
    let vulns = app
        .get(
            "/api/v1/vulnerabilities/?status=open&limit=500",
            &owner.bearer(),
        )
        .await;
    let vulns = vulns.body["items"].as_array().unwrap().clone();
    assert!(!vulns.is_empty());
    let mut by_severity: BTreeMap<String, i64> = ["critical", "high", "medium", "low", "unknown"]
        .iter()
        .map(|s| (s.to_string(), 0))
        .collect();
    let mut kev = 0;
    for v in &vulns {
        let severity = v["severity"].as_str().unwrap_or("unknown").to_lowercase();
        *by_severity.get_mut(&severity).unwrap() += v["device_count"].as_i64().unwrap();
        if v["kev"] == true {
            kev += v["device_count"].as_i64().unwrap();
        }
    }
    assert!(kev >= 2, "CVE-2023-2033 on the Chrome devices: {vulns:?}");
    assert!(
        vulns.iter().any(|v| v["cve_id"] == "CVE-1999-0001"),
        "{vulns:?}"
    );
    let assets = app
        .post(
            "/api/v1/devices/devices/search",
            &owner.bearer(),
            json!({"limit": 500}),
        )
        .await;
    let assets = assets.body["items"].as_array().unwrap().clone();
    assert_eq!(assets.len(), 5, "{assets:?}");
    let mut by_os: BTreeMap<String, i64> = BTreeMap::new();
    let mut by_source: BTreeMap<String, i64> = BTreeMap::new();
    for asset in &assets {
        *by_os
            .entry(
                asset["os_platform"]
                    .as_str()
                    .unwrap_or("unknown")
                    .to_string(),
            )
            .or_default() += 1;
        for source in asset["sources"].as_array().unwrap() {
            *by_source
                .entry(source.as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }

    // The catalog.
    let metrics = app
        .get("/api/v1/dashboards/catalog/metrics", &member.bearer())
        .await;
    let names: Vec<&str> = metrics
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 14, "{names:?}");
    let types = app
        .get("/api/v1/dashboards/catalog/widget-types", &member.bearer())
        .await;
    assert_eq!(types.body.as_array().unwrap().len(), 6, "{}", types.text);

    // Every metric, with the numbers the views give.
    assert_eq!(
        categories(&preview(&app, &owner, json!({"metric": "open_findings_by_severity"})).await),
        by_severity
    );
    let answer = preview(&app, &owner, json!({"metric": "kev_findings"})).await;
    assert_eq!(
        answer["data"],
        json!({"shape": "number", "value": kev, "unit": "findings"})
    );
    let answer = preview(
        &app,
        &owner,
        json!({"metric": "epss_high_risk_cves", "params": {"threshold": 0.0, "limit": 100}}),
    )
    .await;
    let mut scored: Vec<(String, f64)> = vulns
        .iter()
        .filter_map(|v| Some((v["cve_id"].as_str()?.to_string(), v["epss_score"].as_f64()?)))
        .collect();
    scored.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap().then_with(|| a.0.cmp(&b.0)));
    let rows = answer["data"]["rows"].as_array().unwrap();
    assert_eq!(
        answer["data"]["columns"],
        json!(["cve_id", "epss_score", "epss_percentile", "devices"])
    );
    assert_eq!(rows.len(), scored.len(), "{answer}");
    assert!(!rows.is_empty());
    assert_eq!(answer["params"], json!({"threshold": 0, "limit": 100}));
    let top = scored[0].1;
    let above = preview(
        &app,
        &owner,
        json!({"metric": "epss_high_risk_cves", "params": {"threshold": top}}),
    )
    .await;
    assert_eq!(
        above["data"]["rows"].as_array().unwrap().len(),
        scored.iter().filter(|s| s.1 >= top).count()
    );
    let top_apps = categories(
        &preview(
            &app,
            &owner,
            json!({"metric": "top_vulnerable_applications"}),
        )
        .await,
    );
    let mut cves_per_app: BTreeMap<String, i64> = BTreeMap::new();
    for v in &vulns {
        for application in v["applications"].as_array().unwrap() {
            *cves_per_app
                .entry(application.as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    assert_eq!(top_apps, cves_per_app);
    assert!(top_apps.contains_key("PuTTY"), "{top_apps:?}");
    assert_eq!(
        categories(&preview(&app, &owner, json!({"metric": "devices_by_os"})).await),
        by_os
    );
    let sources = categories(&preview(&app, &owner, json!({"metric": "devices_by_source"})).await);
    assert_eq!(sources, by_source);
    assert_eq!(sources["inventory-csv"], 4);
    assert_eq!(sources["rmm"], 1);
    let stale = preview(
        &app,
        &owner,
        json!({"metric": "stale_devices", "params": {"days": 30}}),
    )
    .await;
    assert_eq!(stale["data"]["value"], 1, "{stale}");
    let stale = preview(
        &app,
        &owner,
        json!({"metric": "stale_devices", "params": {"days": 60}}),
    )
    .await;
    assert_eq!(stale["data"]["value"], 0, "{stale}");
    let health = preview(&app, &owner, json!({"metric": "sync_health"})).await;
    let row = &health["data"]["rows"][0];
    assert_eq!(row[0], "rmm", "{health}");
    assert_eq!(row[2], "healthy");
    assert_eq!(row[3], "success");
    assert!(row[5].is_string(), "{health}");
    let unmatched = app
        .get("/api/v1/vulnerabilities/unmatched", &owner.bearer())
        .await;
    let answer = preview(&app, &owner, json!({"metric": "applications_without_cpe"})).await;
    assert_eq!(answer["data"]["value"], unmatched.body["total"], "{answer}");
    assert!(answer["data"]["value"].as_i64().unwrap() >= 1);
    let mttf = preview(&app, &owner, json!({"metric": "mean_time_to_fix"})).await;
    assert_eq!(
        mttf["data"],
        json!({"shape": "number", "value": null, "unit": "days"})
    );
    // Every open finding stands somewhere against its SLA.
    let by_sla = categories(
        &preview(
            &app,
            &owner,
            json!({"metric": "open_findings_by_sla_state"}),
        )
        .await,
    );
    assert_eq!(
        by_sla.values().sum::<i64>(),
        by_severity.values().sum::<i64>(),
        "{by_sla:?}"
    );
    // Two days of history, then today live.
    let open_now: i64 = by_severity.values().sum();
    for (days_ago, open) in [(2, 1), (1, open_now + 4)] {
        let day =
            chrono::DateTime::from_timestamp_millis(cairn_core::db::now_ms() - days_ago * DAY_MS)
                .unwrap()
                .format("%Y-%m-%d")
                .to_string();
        sqlx::query(
            "INSERT INTO dashboard_daily_figures (tenant_id, day, open_findings, critical, high, \
             kev_findings, affected_devices, recorded_at) VALUES ($1, $2, $3, 0, 0, 0, 0, 0)",
        )
        .bind(&owner.tenant_id)
        .bind(day)
        .bind(open)
        .execute(&app.db().pool)
        .await
        .unwrap();
    }
    let trend = preview(
        &app,
        &owner,
        json!({"metric": "finding_trend", "params": {"days": 7}}),
    )
    .await;
    let values: Vec<i64> = trend["data"]["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["value"].as_i64().unwrap())
        .collect();
    assert_eq!(values, [1, open_now + 4, open_now], "{trend}");
    let short = preview(
        &app,
        &owner,
        json!({"metric": "finding_trend", "params": {"days": 2}}),
    )
    .await;
    assert_eq!(
        short["data"]["points"].as_array().unwrap().len(),
        2,
        "{short}"
    );

    // A device query narrows a metric.
    let web = json!({"combinator": "and", "rules": [{"kind": "rule", "field": "device_name", "operator": "equals", "value": "WEB01"}]});
    let narrowed = preview(
        &app,
        &owner,
        json!({"metric": "open_findings_by_severity", "filter": web}),
    )
    .await;
    assert_eq!(narrowed["filtered"], true);
    assert_eq!(
        categories(&narrowed).values().sum::<i64>(),
        cves_per_app["Google Chrome"],
        "{narrowed}"
    );
    let narrowed = categories(
        &preview(
            &app,
            &owner,
            json!({"metric": "devices_by_os", "filter": web}),
        )
        .await,
    );
    assert_eq!(narrowed.values().sum::<i64>(), 1);

    // Bad data sources: a 422 naming the field.
    for (body, field) in [
        (
            json!({"data_source": {"metric": "weather"}}),
            "data_source.metric",
        ),
        (
            json!({"data_source": {"metric": "stale_devices", "params": {"days": 0}}}),
            "data_source.params.days",
        ),
        (
            json!({"data_source": {"metric": "stale_devices", "params": {"hours": 1}}}),
            "data_source.params.hours",
        ),
        (
            json!({"data_source": {"metric": "sync_health", "filter": web}}),
            "data_source.filter",
        ),
        (
            json!({"data_source": {"metric": "kev_findings", "filter": {"combinator": "xor", "rules": []}}}),
            "data_source.filter.combinator",
        ),
        // The device search's grammar and allow-list, refused as it
        // refuses them.
        (
            json!({"data_source": {"metric": "kev_findings", "filter": {"combinator": "and", "rules": [
                {"kind": "rule", "field": "applicaton_name", "operator": "equals", "value": "x"}]}}}),
            "data_source.filter.rules[0].field",
        ),
        (
            json!({"data_source": {"metric": "kev_findings", "filter": {"combinator": "and", "rules": [
                {"kind": "rule", "field": "device_name", "operator": "gt", "value": "x"}]}}}),
            "data_source.filter.rules[0].operator",
        ),
        (
            json!({"data_source": {"metric": "finding_trend"}, "widget_type": "pie"}),
            "widget_type",
        ),
    ] {
        let refused = app
            .post(
                "/api/v1/dashboards/widgets/preview",
                &owner.bearer(),
                body.clone(),
            )
            .await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], field, "{body}: {}", refused.text);
    }

    // The default dashboard: made once, from the template; every widget
    // evaluates, and a saved widget agrees with its preview.
    let default = app.get("/api/v1/dashboards/default", &owner.bearer()).await;
    assert_eq!(default.status, 200, "{}", default.text);
    assert_eq!(default.body["is_default"], true);
    let again = app.get("/api/v1/dashboards/default", &owner.bearer()).await;
    assert_eq!(again.body["id"], default.body["id"]);
    let widgets = default.body["widgets"].as_array().unwrap().clone();
    assert_eq!(widgets.len(), 14);
    for widget in &widgets {
        let data = app
            .post(
                &format!(
                    "/api/v1/dashboards/widgets/{}/data",
                    widget["id"].as_str().unwrap()
                ),
                &owner.bearer(),
                json!({}),
            )
            .await;
        assert_eq!(data.status, 200, "{widget}: {}", data.text);
        let previewed = preview(&app, &owner, widget["data_source"].clone()).await;
        assert_eq!(data.body["data"], previewed["data"], "{widget}");
    }

    // The hourly snapshot records today's figures of tenants with a
    // dashboard (the owner has one now; the other tenant none).
    cairn_reporting::dashboards::record_all(app.db())
        .await
        .unwrap();
    let today = chrono::DateTime::from_timestamp_millis(cairn_core::db::now_ms())
        .unwrap()
        .format("%Y-%m-%d")
        .to_string();
    let recorded: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT tenant_id, open_findings, kev_findings FROM dashboard_daily_figures WHERE day = $1",
    )
    .bind(&today)
    .fetch_all(&app.db().pool)
    .await
    .unwrap();
    assert_eq!(recorded, [(owner.tenant_id.clone(), open_now, kev)]);

    // CRUD, widgets, sharing and cloning.
    let created = app
        .post(
            "/api/v1/dashboards",
            &owner.bearer(),
            json!({"name": "Exposure", "layout": {"columns": 12}}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let id = created.body["id"].as_str().unwrap().to_string();
    let widget = app
        .post(
            &format!("/api/v1/dashboards/{id}/widgets"),
            &owner.bearer(),
            json!({"title": "KEV", "widget_type": "counter", "data_source": {"metric": "kev_findings"},
                   "position": {"x": 0, "y": 0, "w": 3, "h": 2}}),
        )
        .await;
    assert_eq!(widget.status, 201, "{}", widget.text);
    let widget_id = widget.body["id"].as_str().unwrap().to_string();
    for (body, field) in [
        (
            json!({"title": "x", "widget_type": "line", "data_source": {"metric": "kev_findings"}}),
            "widget_type",
        ),
        (
            json!({"title": "x", "widget_type": "counter", "data_source": {"metric": "kev_findings"}, "position": {"x": 10, "y": 0, "w": 4, "h": 2}}),
            "position",
        ),
        (
            json!({"title": "", "widget_type": "counter", "data_source": {"metric": "kev_findings"}}),
            "title",
        ),
    ] {
        let refused = app
            .post(
                &format!("/api/v1/dashboards/{id}/widgets"),
                &owner.bearer(),
                body,
            )
            .await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], field, "{}", refused.text);
    }
    let changed = app
        .patch(
            &format!("/api/v1/dashboards/{id}/widgets/{widget_id}"),
            &owner.bearer(),
            json!({"widget_type": "bar", "data_source": {"metric": "devices_by_os"}, "title": "OS"}),
        )
        .await;
    assert_eq!(changed.status, 200, "{}", changed.text);
    assert_eq!(changed.body["widget_type"], "bar");
    app.patch(
        &format!("/api/v1/dashboards/{id}/widgets/{widget_id}"),
        &owner.bearer(),
        json!({"widget_type": "counter"}),
    )
    .await
    .assert_error(422);

    // Private: the member does not see it; shared: sees, cannot change,
    // can clone.
    app.get(&format!("/api/v1/dashboards/{id}"), &member.bearer())
        .await
        .assert_error(404);
    let listed = app.get("/api/v1/dashboards", &member.bearer()).await;
    assert_eq!(listed.body, json!([]), "{}", listed.text);
    let shared = app
        .patch(
            &format!("/api/v1/dashboards/{id}"),
            &owner.bearer(),
            json!({"shared": true, "name": "Exposure (all)"}),
        )
        .await;
    assert_eq!(shared.body["shared"], true, "{}", shared.text);
    let seen = app
        .get(&format!("/api/v1/dashboards/{id}"), &member.bearer())
        .await;
    assert_eq!(seen.status, 200, "{}", seen.text);
    assert_eq!(seen.body["editable"], false);
    app.patch(
        &format!("/api/v1/dashboards/{id}"),
        &member.bearer(),
        json!({"name": "Mine"}),
    )
    .await
    .assert_error(403);
    app.delete(
        &format!("/api/v1/dashboards/{id}/widgets/{widget_id}"),
        &member.bearer(),
    )
    .await
    .assert_error(403);
    let data = app
        .post(
            &format!("/api/v1/dashboards/widgets/{widget_id}/data"),
            &member.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(data.status, 200, "{}", data.text);
    let clone = app
        .post(
            &format!("/api/v1/dashboards/{id}/clone"),
            &member.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(clone.status, 201, "{}", clone.text);
    assert_eq!(clone.body["name"], "Exposure (all) (copy)");
    assert_eq!(clone.body["owner_id"], json!(member.user_id));
    assert_eq!(clone.body["shared"], false);
    assert_eq!(
        clone.body["widgets"][0]["data_source"],
        json!({"metric": "devices_by_os", "params": {}})
    );

    // Another tenant: nothing to see, change, clone or evaluate.
    for (method, path) in [
        (reqwest::Method::GET, format!("/api/v1/dashboards/{id}")),
        (reqwest::Method::PATCH, format!("/api/v1/dashboards/{id}")),
        (reqwest::Method::DELETE, format!("/api/v1/dashboards/{id}")),
        (
            reqwest::Method::POST,
            format!("/api/v1/dashboards/{id}/clone"),
        ),
        (
            reqwest::Method::POST,
            format!("/api/v1/dashboards/{id}/widgets"),
        ),
        (
            reqwest::Method::PATCH,
            format!("/api/v1/dashboards/{id}/widgets/{widget_id}"),
        ),
        (
            reqwest::Method::DELETE,
            format!("/api/v1/dashboards/{id}/widgets/{widget_id}"),
        ),
        (
            reqwest::Method::POST,
            format!("/api/v1/dashboards/widgets/{widget_id}/data"),
        ),
    ] {
        let body = matches!(method, reqwest::Method::PATCH | reqwest::Method::POST).then(|| {
            if path.ends_with("/widgets") {
                json!({"title": "x", "widget_type": "counter", "data_source": {"metric": "kev_findings"}})
            } else {
                json!({})
            }
        });
        app.call(method, &path, &other.bearer(), body)
            .await
            .assert_error(404);
    }
    let theirs = app.get("/api/v1/dashboards", &other.bearer()).await;
    assert_eq!(theirs.body, json!([]));
    let kev_theirs = preview(&app, &other, json!({"metric": "kev_findings"})).await;
    assert_eq!(kev_theirs["data"]["value"], 0);
    let health_theirs = preview(&app, &other, json!({"metric": "sync_health"})).await;
    assert_eq!(health_theirs["data"]["rows"], json!([]));

    // A fix: WEB01's Chrome moves past every range; the next scan fixes
    // its findings, moments after they were first seen.
    sqlx::query("UPDATE inventory_items SET version = '999.0.0.0' WHERE device_name = 'WEB01'")
        .execute(&app.db().pool)
        .await
        .unwrap();
    scan(&app, &owner, json!({})).await;
    let mttf = preview(
        &app,
        &owner,
        json!({"metric": "mean_time_to_fix", "params": {"days": 1}}),
    )
    .await;
    assert_eq!(mttf["data"]["value"], 0, "{mttf}");

    // Deleting removes it and its widgets.
    let deleted = app
        .delete(&format!("/api/v1/dashboards/{id}"), &owner.bearer())
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    app.post(
        &format!("/api/v1/dashboards/widgets/{widget_id}/data"),
        &owner.bearer(),
        json!({}),
    )
    .await
    .assert_error(404);
    app.finish().await;
}
