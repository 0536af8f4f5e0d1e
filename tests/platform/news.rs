//! News feeds end to end: feeds from a real-shaped news site on 127.0.0.1
//! (RSS 2.0 with ETag, Atom with Last-Modified, a page that is no feed, a
//! broken and a too-large document), items stored once, classified by
//! rules and by a fake chat completions endpoint (good, malformed, slow),
//! relevance to the tenant's inventory, read marks, assignment, and
//! another tenant seeing none of it.

use std::time::Duration;

use cairn_tests::fake_feeds::{FakeFeeds, RssItem, ATOM_MODIFIED};
use cairn_tests::fake_model::{FakeModel, ModelMode, MODEL_KEY};
use cairn_tests::{backend_tests, wait_until, Account, Backend, TestApp};
use serde_json::{json, Value};

use super::vulnerabilities::software;

backend_tests!(
    news_feeds_are_refreshed_deduplicated_and_classified_by_rules,
    news_is_classified_by_the_model_and_falls_back_to_the_rules,
    feed_urls_follow_the_outbound_rules,
);

const CHROME_GUID: &str = "swire-2026-1123-chrome";

fn site_items() -> Vec<RssItem> {
    vec![
        RssItem::new(
            CHROME_GUID,
            "Google Chrome zero-day CVE-2023-2033 actively exploited",
            "<p>Google fixed <b>CVE-2023-2033</b>, a type confusion in V8, exploited in the wild.</p>",
        ),
        RssItem::new(
            "swire-2026-1123-earnings",
            "Security vendor posts quarterly earnings",
            "Revenue grew 12% year over year.",
        ),
        RssItem {
            guid: None,
            link: Some("https://news.example/ecole".into()),
            ..RssItem::new(
                "",
                "Sicherheitslücke: ÉCOLE-Portal leaks student records",
                "A data breach at the école portal exposed records.",
            )
        },
    ]
}

fn atom_entries() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        // The same story as the RSS item, under the same id: stored once.
        (
            CHROME_GUID,
            "Chrome zero-day (vendor advisory)",
            "Update Chrome now.",
        ),
        (
            "urn:example:adv-77",
            "Advisory: Zoom Workplace patches",
            "Zoom released security updates.",
        ),
    ]
}

async fn start(backend: Backend, model: Option<&FakeModel>) -> Option<TestApp> {
    let model = model.cloned();
    TestApp::start_with(backend, move |s| {
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.news_max_feed_mb = 1;
        if let Some(model) = model {
            model.configure(s);
        }
    })
    .await
}

/// Google Chrome on two devices, rolled up.
async fn with_chrome(app: &TestApp, owner: &Account) {
    let chrome = |device: &str| {
        software(
            device,
            "Google Chrome",
            "Google LLC",
            "112.0.5615.49",
            "windows",
        )
    };
    app.seed(owner, "rmm", &[chrome("WEB01"), chrome("LAPTOP-9")])
        .await;
    app.rebuild(owner).await;
}

/// Waits until the tenant has no item left to classify; returns the stats.
async fn wait_classified(app: &TestApp, account: &Account) -> Value {
    wait_until(
        "the news to be classified",
        Duration::from_secs(60),
        async || {
            let stats = app
                .get("/api/v1/news-feeds/items/stats", &account.bearer())
                .await;
            assert_eq!(stats.status, 200, "{}", stats.text);
            if stats.body["total"].as_i64() > Some(0) && stats.body["unclassified"] == 0 {
                Ok(stats.body)
            } else {
                Err(stats.text)
            }
        },
    )
    .await
}

async fn items(app: &TestApp, account: &Account, query: &str) -> Vec<Value> {
    let resp = app
        .get(
            &format!("/api/v1/news-feeds/items{query}"),
            &account.bearer(),
        )
        .await;
    assert_eq!(resp.status, 200, "{}", resp.text);
    assert_eq!(
        resp.body["total"].as_u64().unwrap() as usize,
        resp.body["items"].as_array().unwrap().len(),
        "{}",
        resp.text
    );
    resp.body["items"].as_array().unwrap().clone()
}

fn titled<'a>(items: &'a [Value], start: &str) -> &'a Value {
    items
        .iter()
        .find(|i| i["title"].as_str().unwrap_or_default().starts_with(start))
        .unwrap_or_else(|| panic!("no item {start:?} in {items:?}"))
}

async fn refresh(app: &TestApp, account: &Account) {
    let queued = app
        .post(
            "/api/v1/news-feeds/feeds/refresh",
            &account.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(queued.status, 202, "{}", queued.text);
    let job = app
        .wait_for_job(account, queued.body["job_id"].as_str().unwrap())
        .await;
    assert_eq!(job["status"], "success", "{job}");
}

async fn news_feeds_are_refreshed_deduplicated_and_classified_by_rules(backend: Backend) {
    let site = FakeFeeds::start(site_items(), atom_entries()).await;
    let Some(app) = start(backend, None).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let member = app
        .add_member(&owner, "analyst@msp.example", "member")
        .await;
    let other = app.register("owner@other.example").await;
    with_chrome(&app, &owner).await;
    let rss = format!("{}/rss.xml", site.url);
    let atom = format!("{}/atom.xml", site.url);

    // Members read; admins choose the feeds.
    app.post(
        "/api/v1/news-feeds/feeds",
        &member.bearer(),
        json!({"url": rss}),
    )
    .await
    .assert_error(403);
    let added = app
        .post(
            "/api/v1/news-feeds/feeds",
            &owner.bearer(),
            json!({"url": rss}),
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.text);
    assert_eq!(added.body["title"], "Example Security Wire");
    assert_eq!(added.body["format"], "rss");
    assert_eq!(added.body["item_count"], 3);
    assert_eq!(added.body["last_status"], "success");
    let rss_id = added.body["id"].as_str().unwrap().to_string();
    app.post(
        "/api/v1/news-feeds/feeds",
        &owner.bearer(),
        json!({"url": rss}),
    )
    .await
    .assert_error(409);
    let added = app
        .post(
            "/api/v1/news-feeds/feeds",
            &owner.bearer(),
            json!({"url": atom, "title": "Vendor advisories"}),
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.text);
    assert_eq!(added.body["format"], "atom");
    // Its Chrome entry is the RSS item already stored.
    assert_eq!(added.body["item_count"], 1, "{}", added.text);
    let atom_id = added.body["id"].as_str().unwrap().to_string();

    // Not feeds: each a 422 naming the URL, and nothing stored.
    for (url, reason) in [
        (
            format!("{}/page.html", site.url),
            "not an RSS, Atom or JSON feed",
        ),
        (
            format!("{}/broken.xml", site.url),
            "not an RSS, Atom or JSON feed",
        ),
        (format!("{}/huge.xml", site.url), "larger than 1 MiB"),
        (format!("{}/missing.xml", site.url), "HTTP 404"),
        ("ftp://127.0.0.1/feed.xml".to_string(), "http(s)"),
        ("not a url".to_string(), "not a URL"),
    ] {
        let refused = app
            .post(
                "/api/v1/news-feeds/feeds",
                &owner.bearer(),
                json!({"url": url}),
            )
            .await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], "url", "{}", refused.text);
        assert!(
            refused.text.contains(reason),
            "{reason:?} in {}",
            refused.text
        );
    }
    let feeds = app.get("/api/v1/news-feeds/feeds", &member.bearer()).await;
    assert_eq!(feeds.body.as_array().unwrap().len(), 2, "{}", feeds.text);

    // Classified by the rules, relevance from the tenant's inventory.
    let stats = wait_classified(&app, &member).await;
    assert_eq!(stats["total"], 4, "{stats}");
    let all = items(&app, &member, "").await;
    let chrome = titled(&all, "Google Chrome zero-day");
    assert_eq!(chrome["category"], "exploit_in_the_wild", "{chrome}");
    assert_eq!(chrome["severity"], "critical");
    assert_eq!(chrome["cve_ids"], json!(["CVE-2023-2033"]));
    assert_eq!(chrome["classified_by"], "rules");
    assert_eq!(chrome["classifier_note"], Value::Null);
    assert_eq!(chrome["relevant"], true);
    assert_eq!(
        chrome["summary"],
        "Google fixed CVE-2023-2033, a type confusion in V8, exploited in the wild."
    );
    assert!(
        chrome["relevance"]
            .as_array()
            .unwrap()
            .contains(&json!({"name": "Google Chrome", "kind": "application", "device_count": 2})),
        "{chrome}"
    );
    assert!(chrome["products"]
        .as_array()
        .unwrap()
        .contains(&json!("Google Chrome")));
    let earnings = titled(&all, "Security vendor posts");
    assert_eq!(earnings["category"], "other");
    assert_eq!(earnings["severity"], "low");
    assert_eq!(earnings["relevant"], false);
    assert_eq!(titled(&all, "Sicherheitslücke")["category"], "breach");
    assert_eq!(titled(&all, "Advisory: Zoom")["category"], "patch_release");

    // Filters, the text search folding non-ASCII case on both engines.
    for (query, expected) in [
        ("?category=exploit_in_the_wild", 1),
        ("?relevant=true", 1),
        ("?relevant=false", 3),
        ("?cve=cve-2023-2033", 1),
        ("?severity=critical", 1),
        ("?search=%C3%A9cole", 1),
        ("?search=SICHERHEITSL%C3%9CCKE", 1),
        (&format!("?feed_id={atom_id}"), 1),
        ("?read=false", 4),
        ("?limit=2", 2),
    ] {
        let resp = app
            .get(
                &format!("/api/v1/news-feeds/items{query}"),
                &member.bearer(),
            )
            .await;
        assert_eq!(resp.status, 200, "{query}: {}", resp.text);
        assert_eq!(
            resp.body["items"].as_array().unwrap().len(),
            expected,
            "{query}: {}",
            resp.text
        );
    }
    for (query, field) in [
        ("?category=gossip", "category"),
        ("?severity=urgent", "severity"),
        ("?cve=log4shell", "cve"),
    ] {
        let resp = app
            .get(
                &format!("/api/v1/news-feeds/items{query}"),
                &member.bearer(),
            )
            .await;
        resp.assert_error(422);
        assert_eq!(resp.body["field"], field, "{}", resp.text);
    }

    // Read marks are per user.
    let chrome_id = chrome["id"].as_str().unwrap().to_string();
    let read = app
        .call(
            reqwest::Method::PUT,
            &format!("/api/v1/news-feeds/items/{chrome_id}/read"),
            &member.bearer(),
            None,
        )
        .await;
    assert_eq!(read.status, 200, "{}", read.text);
    assert_eq!(read.body["read"], true);
    assert_eq!(items(&app, &member, "?read=true").await.len(), 1);
    assert_eq!(items(&app, &owner, "?read=true").await.len(), 0);
    let stats = app
        .get("/api/v1/news-feeds/items/stats", &member.bearer())
        .await;
    assert_eq!(stats.body["unread"], 3, "{}", stats.text);
    assert_eq!(stats.body["relevant"], 1);
    assert_eq!(stats.body["by_category"]["exploit_in_the_wild"], 1);
    assert_eq!(stats.body["by_severity"]["critical"], 1);
    let unread = app
        .call(
            reqwest::Method::PUT,
            &format!("/api/v1/news-feeds/items/{chrome_id}/read"),
            &member.bearer(),
            Some(json!({"read": false})),
        )
        .await;
    assert_eq!(unread.body["read"], false, "{}", unread.text);

    // Assignment to members of the tenant only.
    let assign = |user: Value| {
        let path = format!("/api/v1/news-feeds/items/{chrome_id}/assign");
        let app = &app;
        let owner = owner.clone();
        async move {
            app.call(
                reqwest::Method::PUT,
                &path,
                &owner.bearer(),
                Some(json!({"user_id": user})),
            )
            .await
        }
    };
    let assigned = assign(json!(member.user_id)).await;
    assert_eq!(assigned.status, 200, "{}", assigned.text);
    assert_eq!(assigned.body["assigned_to"], json!(member.user_id));
    assert_eq!(items(&app, &member, "?assigned_to=me").await.len(), 1);
    assert_eq!(items(&app, &owner, "?assigned_to=me").await.len(), 0);
    assert_eq!(items(&app, &owner, "?assigned=false").await.len(), 3);
    let refused = assign(json!(other.user_id)).await;
    refused.assert_error(422);
    assert_eq!(refused.body["field"], "user_id");
    let cleared = assign(Value::Null).await;
    assert_eq!(cleared.body["assigned_to"], Value::Null, "{}", cleared.text);

    // A refresh asks conditionally and stores only what is new.
    let before = site.requests().len();
    refresh(&app, &member).await;
    let conditional: Vec<_> = site.requests()[before..].to_vec();
    assert_eq!(conditional.len(), 2, "{conditional:?}");
    for request in &conditional {
        assert_eq!(request.status, 304, "{conditional:?}");
    }
    let rss_request = conditional.iter().find(|r| r.path == "/rss.xml").unwrap();
    assert_eq!(rss_request.if_none_match.as_deref(), Some("\"rss-v3\""));
    let atom_request = conditional.iter().find(|r| r.path == "/atom.xml").unwrap();
    assert_eq!(
        atom_request.if_modified_since.as_deref(),
        Some(ATOM_MODIFIED)
    );
    let feeds = app.get("/api/v1/news-feeds/feeds", &member.bearer()).await;
    assert!(
        feeds
            .body
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["last_status"] == "not_modified"),
        "{}",
        feeds.text
    );
    site.add_rss_item(RssItem::new(
        "swire-2026-1124-ransom",
        "Ransomware gang hits logistics firm",
        "The malware encrypted servers.",
    ));
    refresh(&app, &member).await;
    refresh(&app, &member).await;
    let all = items(&app, &member, "").await;
    assert_eq!(all.len(), 5, "{all:?}");
    let ransom = titled(&all, "Ransomware gang");
    assert_eq!(ransom["category"], "malware", "{ransom}");
    assert_eq!(ransom["severity"], "high");

    // Another tenant sees and touches none of it.
    assert_eq!(items(&app, &other, "").await.len(), 0);
    let theirs = app.get("/api/v1/news-feeds/feeds", &other.bearer()).await;
    assert_eq!(theirs.body, json!([]));
    let stats = app
        .get("/api/v1/news-feeds/items/stats", &other.bearer())
        .await;
    assert_eq!(stats.body["total"], 0, "{}", stats.text);
    for (method, path, body) in [
        (
            reqwest::Method::PUT,
            format!("/api/v1/news-feeds/items/{chrome_id}/read"),
            None,
        ),
        (
            reqwest::Method::PUT,
            format!("/api/v1/news-feeds/items/{chrome_id}/assign"),
            Some(json!({"user_id": "me"})),
        ),
        (
            reqwest::Method::POST,
            format!("/api/v1/news-feeds/items/{chrome_id}/classify"),
            None,
        ),
        (
            reqwest::Method::POST,
            "/api/v1/news-feeds/classify".to_string(),
            Some(json!({"item_ids": [chrome_id]})),
        ),
        (
            reqwest::Method::DELETE,
            format!("/api/v1/news-feeds/feeds/{rss_id}"),
            None,
        ),
    ] {
        app.call(method, &path, &other.bearer(), body)
            .await
            .assert_error(404);
    }
    let mine = app
        .get(
            "/api/v1/news-feeds/items?cve=CVE-2023-2033",
            &member.bearer(),
        )
        .await;
    assert_eq!(mine.body["items"][0]["read"], false, "{}", mine.text);
    assert_eq!(mine.body["items"][0]["assigned_to"], Value::Null);

    // Seeding the default feeds is idempotent; deleting a feed removes
    // its items.
    let seeded = app
        .post("/api/v1/news-feeds/feeds/seed", &owner.bearer(), json!({}))
        .await;
    assert_eq!(seeded.status, 200, "{}", seeded.text);
    let first = seeded.body["added"].as_u64().unwrap();
    assert!(first >= 6, "{}", seeded.text);
    assert!(seeded.text.contains("https://www.cisa.gov/"));
    let again = app
        .post("/api/v1/news-feeds/feeds/seed", &owner.bearer(), json!({}))
        .await;
    assert_eq!(again.body["added"], 0, "{}", again.text);
    assert_eq!(
        again.body["feeds"].as_array().unwrap().len() as u64,
        first + 2
    );
    app.post("/api/v1/news-feeds/feeds/seed", &member.bearer(), json!({}))
        .await
        .assert_error(403);
    let deleted = app
        .delete(
            &format!("/api/v1/news-feeds/feeds/{rss_id}"),
            &owner.bearer(),
        )
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    let left = items(&app, &member, "").await;
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(left.iter().all(|i| i["feed_id"] == json!(atom_id)));
    app.finish().await;
}

async fn news_is_classified_by_the_model_and_falls_back_to_the_rules(backend: Backend) {
    let site = FakeFeeds::start(site_items(), vec![]).await;
    let model = FakeModel::start().await;
    let Some(app) = start(backend, Some(&model)).await else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    with_chrome(&app, &owner).await;
    let added = app
        .post(
            "/api/v1/news-feeds/feeds",
            &owner.bearer(),
            json!({"url": format!("{}/rss.xml", site.url)}),
        )
        .await;
    assert_eq!(added.status, 201, "{}", added.text);
    wait_classified(&app, &owner).await;
    let all = items(&app, &owner, "").await;
    let chrome = titled(&all, "Google Chrome zero-day");
    assert_eq!(chrome["classified_by"], "model", "{chrome}");
    assert_eq!(chrome["category"], "vulnerability");
    assert_eq!(chrome["severity"], "high");
    assert_eq!(chrome["vendors"], json!(["Google"]));
    assert_eq!(chrome["products"], json!(["Chrome"]));
    assert_eq!(chrome["cve_ids"], json!(["CVE-2023-2033"]));
    // Relevance is the tenant's own data, whoever classified.
    assert_eq!(chrome["relevant"], true);
    assert_eq!(
        titled(&all, "Security vendor posts")["classified_by"],
        "model"
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    for request in &requests {
        assert_eq!(
            request.authorization.as_deref(),
            Some(format!("Bearer {MODEL_KEY}").as_str())
        );
        assert_eq!(request.body["model"], "gpt-test");
        assert_eq!(request.body["response_format"]["type"], "json_schema");
        assert_eq!(
            request.body["response_format"]["json_schema"]["name"],
            "news_classification"
        );
    }
    let chrome_id = chrome["id"].as_str().unwrap().to_string();
    let classify = || {
        let path = format!("/api/v1/news-feeds/items/{chrome_id}/classify");
        let app = &app;
        let owner = owner.clone();
        async move {
            let resp = app.post(&path, &owner.bearer(), json!({})).await;
            assert_eq!(resp.status, 200, "{}", resp.text);
            resp.body
        }
    };

    // A malformed answer and a timeout: the rules answer, and say why.
    model.set_mode(ModelMode::Malformed);
    let item = classify().await;
    assert_eq!(item["classified_by"], "rules", "{item}");
    assert_eq!(item["category"], "exploit_in_the_wild");
    assert!(
        item["classifier_note"]
            .as_str()
            .unwrap()
            .contains("not JSON of the asked shape"),
        "{item}"
    );
    model.set_mode(ModelMode::Slow(Duration::from_secs(3)));
    let item = classify().await;
    assert_eq!(item["classified_by"], "rules", "{item}");
    assert!(
        item["classifier_note"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{item}"
    );

    // A batch asks again for the items named.
    model.set_mode(ModelMode::Good);
    let queued = app
        .post(
            "/api/v1/news-feeds/classify",
            &owner.bearer(),
            json!({"item_ids": [chrome_id]}),
        )
        .await;
    assert_eq!(queued.status, 202, "{}", queued.text);
    let job = app
        .wait_for_job(&owner, queued.body["job_id"].as_str().unwrap())
        .await;
    assert_eq!(job["status"], "success", "{job}");
    let item = titled(&items(&app, &owner, "").await, "Google Chrome zero-day").clone();
    assert_eq!(item["classified_by"], "model", "{item}");
    assert_eq!(item["classifier_note"], Value::Null);
    for bad in [
        json!({"item_ids": []}),
        json!({"limit": 0}),
        json!({"limit": 201}),
    ] {
        app.post("/api/v1/news-feeds/classify", &owner.bearer(), bad)
            .await
            .assert_error(422);
    }
    app.finish().await;
}

async fn feed_urls_follow_the_outbound_rules(backend: Backend) {
    let site = FakeFeeds::start(site_items(), vec![]).await;
    // Neither loopback nor plain http is granted here.
    let Some(app) = TestApp::start_with(backend, |s| {
        s.outbound_private_networks = String::new();
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let refused = app
        .post(
            "/api/v1/news-feeds/feeds",
            &owner.bearer(),
            json!({"url": format!("{}/rss.xml", site.url)}),
        )
        .await;
    refused.assert_error(422);
    assert!(refused.text.contains("use https"), "{}", refused.text);
    let port = site.url.rsplit(':').next().unwrap();
    for url in [
        format!("https://127.0.0.1:{port}/rss.xml"),
        format!("https://localhost:{port}/rss.xml"),
        "https://user:secret@news.example/rss.xml".to_string(),
    ] {
        let refused = app
            .post(
                "/api/v1/news-feeds/feeds",
                &owner.bearer(),
                json!({"url": url}),
            )
            .await;
        refused.assert_error(422);
        assert_eq!(refused.body["field"], "url", "{}", refused.text);
    }
    assert!(site.requests().is_empty(), "{:?}", site.requests());
    let feeds = app.get("/api/v1/news-feeds/feeds", &owner.bearer()).await;
    assert_eq!(feeds.body, json!([]));
    app.finish().await;
}
