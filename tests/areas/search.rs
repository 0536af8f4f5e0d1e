//! Structured search over the software rollup through `search::run`, on a
//! real database: every operator on each field type, each combinator, deep
//! nesting, hostile values, version order, what is refused, sorting and
//! paging, and a differential test against a plain in-memory evaluator. The HTTP contract (statuses, the
//! field a 422 names, the caps) is in `tests/platform/search.rs`.

use cairn_core::ids::TenantId;
use cairn_inventory::applications::{self, ApplicationRow};
use cairn_inventory::assets::{self, AssetRow};
use cairn_inventory::search::{self, Page, SearchRequest};
use cairn_inventory::version::compare_release;
use cairn_tests::inventory::{device_record, item, rollup_write, sorted_names};
use cairn_tests::query_eval::{
    eval_group, group, known, positive, random_operator, refused, rule, takes, FieldKind,
};
use cairn_tests::{backend_tests, Backend, TestDb};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

backend_tests!(
    every_operator_combinator_and_hostile_value,
    random_queries_agree_with_an_in_memory_evaluator,
    default_pages_agree_with_the_order_at_every_depth,
    kept_device_searches_answer_every_write,
);

/// Names of the applications `counts` describes (name, devices) in the
/// list's default order: most installed first, then by name.
fn default_order(counts: &std::collections::BTreeMap<String, usize>) -> Vec<String> {
    let mut names: Vec<(&String, &usize)> = counts.iter().collect();
    names.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    names.into_iter().map(|(name, _)| name.clone()).collect()
}

/// The default list's pages (the rollup keeps their order numbered, so a
/// deep page is a seek) hold what the order says at every depth, after a
/// whole rebuild, after an incremental one that moves applications, and
/// while a rebuild is under way and has moved rows it has not numbered yet.
async fn default_pages_agree_with_the_order_at_every_depth(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let owner = db.tenant("owner").await;
    let other = db.tenant("other").await;
    let mut counts = std::collections::BTreeMap::new();
    let mut rows = vec![];
    for a in 0..60 {
        // Seven device counts over sixty names: many ties, broken by name.
        let devices = a % 7 + 1;
        let name = format!("App {a:02}");
        for d in 0..devices {
            rows.push(item(&format!("D{d}"), &name, "Vendor", "1.0", "windows"));
        }
        counts.insert(name, devices);
    }
    db.seed(&owner, "rmm", &rows).await;
    db.seed(&other, "rmm", &rows[..10]).await;
    db.rebuild(&owner).await;
    db.rebuild(&other).await;

    let pages_match = async |counts: &std::collections::BTreeMap<String, usize>, when: &str| {
        let expected = default_order(counts);
        for skip in [0, 1, 6, 23, 49, 55, 59, 60, 75, i64::MAX as usize] {
            for limit in [1, 10, 50] {
                let page = search(&db, &owner, json!({"skip": skip, "limit": limit})).await;
                let names = page_names(&page);
                let want = window(&expected, skip, limit);
                assert_eq!(names, want, "{when}: skip {skip}, limit {limit}");
                assert_eq!(page["total"], expected.len(), "{when}");
                // The unfiltered page is read packed as one JSON value; a
                // rule matching every row reads the same page row by row,
                // and every field of every item agrees.
                let every = json!({"kind": "group", "combinator": "and", "rules": [
                    {"kind": "rule", "field": "device_count", "operator": "gte", "value": 0}
                ]});
                let by_rows = search(
                    &db,
                    &owner,
                    json!({"skip": skip, "limit": limit, "query": every}),
                )
                .await;
                assert_eq!(page, by_rows, "{when}: skip {skip}, limit {limit}");
            }
        }
    };
    pages_match(&counts, "after a whole rebuild").await;

    // An application moves to the top, a new one comes in among the ties.
    let mut more = vec![];
    for d in 10..20 {
        more.push(item(&format!("D{d}"), "App 03", "Vendor", "1.0", "windows"));
    }
    for d in 0..3 {
        more.push(item(&format!("D{d}"), "App 99", "Vendor", "1.0", "windows"));
    }
    db.seed(&owner, "rmm", &more).await;
    *counts.get_mut("App 03").unwrap() += 10;
    counts.insert("App 99".into(), 3);
    db.rebuild_incremental(&owner).await;
    pages_match(&counts, "after an incremental rebuild").await;

    // A whole rebuild under way: it has begun (a new `rollup_at`) and a
    // batch (a transaction of the rollup's own kind) has moved an
    // application, but the places are not numbered again until its last
    // transaction. The pages above were kept; the write ends them.
    sqlx::query("UPDATE rollup_state SET rollup_at = rollup_at + 1 WHERE tenant_id = $1")
        .bind(owner.as_str())
        .execute(&db.db.pool)
        .await
        .unwrap();
    rollup_write(
        &db.db,
        &owner,
        "UPDATE applications SET device_count = 100 WHERE tenant_id = $1 AND name = 'App 10'",
    )
    .await;
    *counts.get_mut("App 10").unwrap() = 100;
    pages_match(&counts, "while a rebuild is under way").await;

    // More applications than one block of kept rows (500): pages within
    // a block, across two and at the end agree with the order, read fresh
    // and again from what was kept.
    let many = db.tenant("many").await;
    let mut many_counts = std::collections::BTreeMap::new();
    let mut rows = vec![];
    for a in 0..1_050 {
        let name = format!("Tool {a:04}");
        let devices = a % 3 + 1;
        for d in 0..devices {
            rows.push(item(&format!("D{d}"), &name, "Vendor", "1.0", "windows"));
        }
        many_counts.insert(name, devices);
    }
    db.seed(&many, "rmm", &rows).await;
    db.rebuild(&many).await;
    let expected = default_order(&many_counts);
    for round in ["read", "kept"] {
        for skip in [0, 480, 499, 500, 990, 1_000, 1_049, 1_050] {
            for limit in [1, 50, 500] {
                let page = search(&db, &many, json!({"skip": skip, "limit": limit})).await;
                let names = page_names(&page);
                assert_eq!(
                    names,
                    window(&expected, skip, limit),
                    "{round}: {skip}, {limit}"
                );
                assert_eq!(page["total"], 1_050, "{round}");
            }
        }
    }

    // Ten rows of the other tenant: App 00 to App 03 on 1 to 4 devices.
    let theirs = search(&db, &other, json!({"skip": 1, "limit": 50})).await;
    assert_eq!(theirs["total"], 4, "the other tenant's own count");
    assert_eq!(
        sorted_names(&theirs),
        ["App 00", "App 01", "App 02"],
        "the other tenant's pages hold only its own applications"
    );
    db.finish().await;
}

/// A device search keeps its matches between requests (pages after the
/// first are read by id): every page holds what the rows hold now, after
/// an incremental rebuild, a whole one, a write through the rollup's own
/// transaction from elsewhere (another process) and a deleted device, at
/// every depth, in both orders, and for each tenant only its own devices.
async fn kept_device_searches_answer_every_write(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let owner = db.tenant("owner").await;
    let other = db.tenant("other").await;
    // Threats per device: the search asks for Windows devices with at
    // least three, or named D1*.
    let mut threats: std::collections::BTreeMap<String, u32> =
        (0..40).map(|d| (format!("D{d:02}"), d % 5)).collect();
    let windows = |device: &str| device[1..].parse::<u32>().unwrap() % 3 != 0;
    let rows: Vec<_> = threats
        .keys()
        .map(|d| {
            let platform = if windows(d) { "windows" } else { "macos" };
            item(d, "App", "Vendor", "1.0", platform)
        })
        .collect();
    let records = |threats: &std::collections::BTreeMap<String, u32>| -> Vec<_> {
        threats
            .iter()
            .map(|(d, n)| device_record(d, json!({"active_threats": n})))
            .collect()
    };
    db.seed(&owner, "rmm", &rows).await;
    db.seed(&owner, "edr", &records(&threats)).await;
    db.seed(&other, "rmm", &rows[..6]).await;
    db.seed(&other, "edr", &records(&threats)[..6]).await;
    db.rebuild(&owner).await;
    db.rebuild(&other).await;

    let query = json!({"kind": "group", "combinator": "and", "rules": [
        {"kind": "rule", "field": "os_platform", "operator": "equals", "value": "windows"},
        {"kind": "group", "combinator": "or", "rules": [
            {"kind": "rule", "field": "edr.active_threats", "operator": "gte", "value": "3"},
            {"kind": "rule", "field": "device_name", "operator": "starts_with", "value": "d1"}
        ]}
    ]});
    let pages_match = async |threats: &std::collections::BTreeMap<String, u32>, when: &str| {
        let mut expected: Vec<String> = threats
            .iter()
            .filter(|(d, n)| windows(d) && (**n >= 3 || d.starts_with("D1")))
            .map(|(d, _)| d.to_lowercase())
            .collect();
        for sort in ["device_name", "-device_name"] {
            if sort.starts_with('-') {
                expected.reverse();
            }
            // Twice each: the first read keeps the matches, the second
            // answers from them.
            for _ in 0..2 {
                for skip in [0, 1, 4, 9, 14, 40, i64::MAX as usize] {
                    for limit in [1, 5, 50] {
                        let body =
                            json!({"query": query, "sort": sort, "skip": skip, "limit": limit});
                        let page = device_search(&db, &owner, body).await;
                        let want = window(&expected, skip, limit);
                        assert_eq!(page.0, want, "{when}: {sort}, skip {skip}, limit {limit}");
                        assert_eq!(page.1, expected.len() as i64, "{when}: {sort}, total");
                    }
                }
            }
        }
    };
    pages_match(&threats, "after the first rebuild").await;

    // Through a sync and the incremental rebuild: two devices gain
    // threats, one loses them.
    for (device, n) in [("D01", 4), ("D02", 3), ("D04", 0)] {
        threats.insert(device.into(), n);
    }
    let changed: std::collections::BTreeMap<String, u32> = ["D01", "D02", "D04"]
        .iter()
        .map(|d| (d.to_string(), threats[*d]))
        .collect();
    db.seed(&owner, "edr", &records(&changed)).await;
    db.rebuild_incremental(&owner).await;
    pages_match(&threats, "after an incremental rebuild").await;

    // A whole rebuild that adds devices.
    for d in 40..46 {
        threats.insert(format!("D{d:02}"), 3);
    }
    let added: Vec<_> = (40..46)
        .map(|d| {
            let device = format!("D{d:02}");
            let platform = if windows(&device) { "windows" } else { "macos" };
            item(&device, "App", "Vendor", "1.0", platform)
        })
        .collect();
    db.seed(&owner, "rmm", &added).await;
    db.seed(&owner, "edr", &records(&threats)).await;
    db.rebuild(&owner).await;
    pages_match(&threats, "after a whole rebuild").await;

    // Another process's rollup: a transaction of the rollup's own kind
    // (`hold`) that deletes a device this process has kept as a match.
    rollup_write(
        &db.db,
        &owner,
        "DELETE FROM assets WHERE tenant_id = $1 AND asset_key = 'D41'",
    )
    .await;
    threats.remove("D41");
    pages_match(&threats, "after another process deleted a device").await;

    // The other tenant's same search: only its own six devices.
    let theirs = device_search(&db, &other, json!({"query": query, "limit": 50})).await;
    assert_eq!(theirs.0, ["d04"], "the other tenant's matches");
    assert_eq!(theirs.1, 1);
    db.finish().await;
}

/// The device names on a page of a device search, and its total.
async fn device_search(db: &TestDb, tenant: &TenantId, body: Value) -> (Vec<String>, i64) {
    let request: SearchRequest = serde_json::from_value(body.clone()).expect("a search request");
    let page: Page<AssetRow> = search::run(&db.db, tenant, &assets::table(), &request)
        .await
        .unwrap_or_else(|err| panic!("{body}: {err}"));
    let names = page
        .items
        .into_iter()
        .map(|row| row.device_name.to_lowercase())
        .collect();
    (names, page.total)
}

/// The page of `expected` at `skip` and `limit`, as a list route pages.
/// The names on a page, in its order.
fn page_names(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .expect("a page")
        .iter()
        .map(|item| item["name"].as_str().expect("a name"))
        .collect()
}

fn window(expected: &[String], skip: usize, limit: usize) -> Vec<&str> {
    expected
        .iter()
        .skip(skip)
        .take(limit)
        .map(String::as_str)
        .collect()
}

/// What `body`, a search request as a client sends it, finds for `tenant`:
/// the page as the route answers it.
async fn search(db: &TestDb, tenant: &TenantId, body: Value) -> Value {
    let request: SearchRequest = serde_json::from_value(body.clone()).expect("a search request");
    let page: Page<ApplicationRow> = search::run(&db.db, tenant, &applications::table(), &request)
        .await
        .unwrap_or_else(|err| panic!("{body}: {err}"));
    // No findings here: every count is 0.
    serde_json::to_value(page.map(|row| row.into_view(0))).expect("a page as JSON")
}

const ALL: [&str; 7] = [
    "100% Pure_Tool",
    "100x Pure-Tool",
    "Google Chrome",
    "Mozilla Firefox",
    "OpenSSH",
    "a.b*c",
    "aXbbc",
];

fn all_but(excluded: &[&str]) -> Vec<&'static str> {
    ALL.iter()
        .copied()
        .filter(|n| !excluded.contains(n))
        .collect()
}

async fn every_operator_combinator_and_hostile_value(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let owner = db.tenant("owner").await;
    let other = db.tenant("other").await;
    let mut rows = vec![];
    for (d, version) in [
        ("D1", "120.0"),
        ("D2", "120.0"),
        ("D3", "120.0"),
        ("D4", "119.0"),
    ] {
        rows.push(item(d, "Google Chrome", "Google", version, "windows"));
    }
    for d in ["D1", "D2"] {
        rows.push(item(d, "Mozilla Firefox", "Mozilla", "128.0", "macos"));
    }
    rows.push(item(
        "D5",
        "100% Pure_Tool",
        r"O'Reilly \ Co",
        "1.0",
        "linux",
    ));
    rows.push(item("D6", "100x Pure-Tool", "Decoy", "1.0", "linux"));
    rows.push(item("D5", "a.b*c", "Regex", "2.0", "windows"));
    rows.push(item("D6", "aXbbc", "Regex", "2.0", "windows"));
    for d in ["D1", "D5", "D6"] {
        rows.push(item(d, "OpenSSH", "", "9.6", "linux"));
    }
    db.seed(&owner, "rmm", &rows).await;
    db.seed(
        &other,
        "rmm",
        &[item("X1", "Google Chrome Secret", "Google", "1", "windows")],
    )
    .await;
    db.rebuild(&owner).await;
    db.rebuild(&other).await;

    let cases: Vec<(Value, Vec<&str>)> = vec![
        // Text.
        (
            rule("name", "contains", json!("CHROME")),
            vec!["Google Chrome"],
        ),
        (
            rule("name", "not_contains", json!("o")),
            vec!["a.b*c", "aXbbc"],
        ),
        (rule("name", "equals", json!("openssh")), vec!["OpenSSH"]),
        (
            rule("name", "not_equals", json!("OpenSSH")),
            all_but(&["OpenSSH"]),
        ),
        (
            rule("name", "starts_with", json!("100%")),
            vec!["100% Pure_Tool"],
        ),
        (
            rule("name", "not_starts_with", json!("100")),
            all_but(&["100% Pure_Tool", "100x Pure-Tool"]),
        ),
        (
            rule("name", "ends_with", json!("_tool")),
            vec!["100% Pure_Tool"],
        ),
        (
            rule("name", "not_ends_with", json!("C")),
            all_but(&["a.b*c", "aXbbc"]),
        ),
        (
            rule("name", "in", json!("openssh, a.b*c")),
            vec!["OpenSSH", "a.b*c"],
        ),
        (
            rule("name", "in", json!(["OpenSSH", "aXbbc"])),
            vec!["OpenSSH", "aXbbc"],
        ),
        (
            rule("name", "not_in", json!("OpenSSH,a.b*c")),
            all_but(&["OpenSSH", "a.b*c"]),
        ),
        (rule("vendor", "is_empty", Value::Null), vec!["OpenSSH"]),
        (
            rule("vendor", "is_not_empty", Value::Null),
            all_but(&["OpenSSH"]),
        ),
        // Hostile values match only what they literally say.
        (rule("name", "contains", json!("a.b*c")), vec!["a.b*c"]),
        (rule("name", "contains", json!("%")), vec!["100% Pure_Tool"]),
        (rule("name", "contains", json!("_")), vec!["100% Pure_Tool"]),
        (rule("name", "equals", json!("%")), vec![]),
        (
            rule("vendor", "equals", json!(r"O'Reilly \ Co")),
            vec!["100% Pure_Tool"],
        ),
        (
            rule("vendor", "contains", json!("'")),
            vec!["100% Pure_Tool"],
        ),
        (
            rule("vendor", "contains", json!(r"\")),
            vec!["100% Pure_Tool"],
        ),
        (rule("vendor", "contains", json!("' OR '1'='1")), vec![]),
        (rule("name", "contains", json!("[a-z]+")), vec![]),
        // Numbers.
        (
            rule("device_count", "equals", json!(4)),
            vec!["Google Chrome"],
        ),
        (
            rule("device_count", "not_equals", json!("1")),
            vec!["Google Chrome", "Mozilla Firefox", "OpenSSH"],
        ),
        (
            rule("device_count", "gt", json!("2")),
            vec!["Google Chrome", "OpenSSH"],
        ),
        (
            rule("device_count", "gte", json!(3)),
            vec!["Google Chrome", "OpenSSH"],
        ),
        (
            rule("device_count", "lt", json!(2)),
            vec!["100% Pure_Tool", "100x Pure-Tool", "a.b*c", "aXbbc"],
        ),
        (
            rule("device_count", "lte", json!("2.0")),
            all_but(&["Google Chrome", "OpenSSH"]),
        ),
        (
            rule("device_count", "in", json!("2, 3")),
            vec!["Mozilla Firefox", "OpenSSH"],
        ),
        (
            rule("device_count", "not_in", json!("1")),
            vec!["Google Chrome", "Mozilla Firefox", "OpenSSH"],
        ),
        (rule("size_bytes", "is_empty", Value::Null), ALL.to_vec()),
        (rule("size_bytes", "is_not_empty", Value::Null), vec![]),
        // Lists: any element matches; negations mean no element does.
        (
            rule("version", "equals", json!("119.0")),
            vec!["Google Chrome"],
        ),
        (
            rule("version", "contains", json!("12")),
            vec!["Google Chrome", "Mozilla Firefox"],
        ),
        (
            rule("version", "not_equals", json!("120.0")),
            all_but(&["Google Chrome"]),
        ),
        (
            rule("platform", "equals", json!("linux")),
            vec!["100% Pure_Tool", "100x Pure-Tool", "OpenSSH"],
        ),
        (
            rule("platform", "not_in", json!("windows,linux")),
            vec!["Mozilla Firefox"],
        ),
        (
            rule("platform", "starts_with", json!("mac")),
            vec!["Mozilla Firefox"],
        ),
        // Versions compare in version order, not as text: 119.0 is below
        // 120 and 128.0 above it; `between` includes both ends.
        (
            rule("version", "lt", json!("120")),
            all_but(&["Mozilla Firefox"]),
        ),
        (
            rule("version", "between", json!("100,119.9")),
            vec!["Google Chrome"],
        ),
        (
            rule("version", "gte", json!("120.0.0")),
            vec!["Google Chrome", "Mozilla Firefox"],
        ),
        (
            rule("version", "gt", json!("9.10")),
            vec!["Google Chrome", "Mozilla Firefox"],
        ),
        (
            rule("version", "between", json!(["2", "9.6"])),
            vec!["OpenSSH", "a.b*c", "aXbbc"],
        ),
        (
            rule("version", "between", json!("9.6,128")),
            vec!["Google Chrome", "Mozilla Firefox", "OpenSSH"],
        ),
        (
            rule("device_count", "between", json!("2,3")),
            vec!["Mozilla Firefox", "OpenSSH"],
        ),
        // Combinators.
        (
            group(
                "and",
                vec![
                    rule("vendor", "equals", json!("Regex")),
                    rule("name", "starts_with", json!("a.")),
                ],
            ),
            vec!["a.b*c"],
        ),
        (
            group(
                "or",
                vec![
                    rule("name", "equals", json!("OpenSSH")),
                    rule("device_count", "gt", json!(3)),
                ],
            ),
            vec!["Google Chrome", "OpenSSH"],
        ),
        (
            group(
                "none",
                vec![
                    rule("platform", "equals", json!("windows")),
                    rule("platform", "equals", json!("linux")),
                ],
            ),
            vec!["Mozilla Firefox"],
        ),
        (
            group(
                "not_all",
                vec![
                    rule("vendor", "equals", json!("Regex")),
                    rule("name", "equals", json!("aXbbc")),
                ],
            ),
            all_but(&["aXbbc"]),
        ),
        (group("and", vec![]), ALL.to_vec()),
        (group("none", vec![]), ALL.to_vec()),
        // Five deep.
        (
            group(
                "and",
                vec![group(
                    "or",
                    vec![group(
                        "and",
                        vec![group(
                            "or",
                            vec![group("and", vec![rule("name", "contains", json!("fire"))])],
                        )],
                    )],
                )],
            ),
            vec!["Mozilla Firefox"],
        ),
        (
            group(
                "none",
                vec![group(
                    "or",
                    vec![group(
                        "and",
                        vec![group(
                            "none",
                            vec![group("or", vec![rule("name", "equals", json!("OpenSSH"))])],
                        )],
                    )],
                )],
            ),
            vec!["OpenSSH"],
        ),
    ];
    for (query, want) in cases {
        let query = if query["kind"] == "rule" {
            group("and", vec![query])
        } else {
            query
        };
        let page = search(&db, &owner, json!({"query": query})).await;
        assert_eq!(sorted_names(&page), want, "{query}");
        assert_eq!(page["total"], want.len(), "{query}");
    }

    // Spec rule 8: a rule on a field the search does not know (however
    // it is spelt) is skipped and named; with `strict` it is refused like
    // every other mistake below.
    for (query, path) in [
        (
            rule("tenant_id", "equals", json!(other.as_str())),
            "query.rules[0]",
        ),
        (rule("1=1", "equals", json!("1")), "query.rules[0]"),
        (
            group(
                "or",
                vec![group("and", vec![]), rule("nope", "equals", json!("x"))],
            ),
            "query.rules[0].rules[1]",
        ),
        (rule("name", "matches", json!(".*")), "query.rules[0]"),
    ] {
        let query = group("and", vec![query]);
        let request: SearchRequest =
            serde_json::from_value(json!({ "query": query })).expect("a search request");
        let page = search::run::<ApplicationRow>(&db.db, &owner, &applications::table(), &request)
            .await
            .unwrap();
        let skipped: Vec<&str> = page.skipped_rules.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(skipped, [path], "{query}");
        // Nothing of the other tenant's, whatever the skipped rule said.
        assert_eq!(page.total, ALL.len() as i64, "{query}");
    }

    // What the search does not know is refused under `strict`, naming the
    // part: an unknown field (however it is spelt), an unknown operator,
    // an operator its field's type has no meaning for, a value not of the
    // field's type. Without `strict` only the last two are.
    for (query, path, says) in [
        (
            rule("tenant_id", "equals", json!(other.as_str())),
            "query.rules[0].field",
            "`tenant_id` is not a field",
        ),
        (
            rule("1=1", "equals", json!("1")),
            "query.rules[0].field",
            "not a field",
        ),
        (
            group(
                "or",
                vec![group("and", vec![]), rule("nope", "equals", json!("x"))],
            ),
            "query.rules[0].rules[1].field",
            "`nope` is not a field",
        ),
        (
            rule("name", "matches", json!(".*")),
            "query.rules[0].operator",
            "`matches` is not an operator",
        ),
        (
            rule("name", "gt", json!("a")),
            "query.rules[0].operator",
            "`gt` does not apply to `name`, a text field",
        ),
        (
            rule("device_count", "contains", json!("4")),
            "query.rules[0].operator",
            "a number field",
        ),
        (
            rule("device_count", "gt", json!("many")),
            "query.rules[0].value",
            "needs a number",
        ),
        (
            rule("version", "between", json!(["1"])),
            "query.rules[0].value",
            "two values",
        ),
    ] {
        let query = group("and", vec![query]);
        let request: SearchRequest =
            serde_json::from_value(json!({ "query": query, "strict": true }))
                .expect("a search request");
        match search::run::<ApplicationRow>(&db.db, &owner, &applications::table(), &request).await
        {
            Err(search::SearchError::Rule { path: at, message }) => {
                assert_eq!(at, path, "{query}");
                assert!(message.contains(says), "{query}: {message}");
            }
            other => panic!("{query}: {other:?}"),
        }
    }

    // Sort, page and free text.
    let page = search(
        &db,
        &owner,
        json!({"sort": "-device_count", "skip": 1, "limit": 2, "search": "o"}),
    )
    .await;
    let listed: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["OpenSSH", "Mozilla Firefox"]);
    assert_eq!(page["total"], 5);

    db.finish().await;
}

// ---- differential -------------------------------------------------------

const TEXT_FIELDS: [&str; 3] = ["name", "vendor", "publisher"];
const LIST_FIELDS: [&str; 2] = ["version", "platform"];
/// Small alphabet with LIKE metacharacters, so collisions and escapes are
/// common.
const ALPHABET: [&str; 8] = ["a", "B", "%", "_", "\\", "'", ".", " "];

fn word(rng: &mut StdRng, max: usize) -> String {
    let len = rng.gen_range(0..=max);
    (0..len)
        .map(|_| ALPHABET[rng.gen_range(0..ALPHABET.len())])
        .collect()
}

fn random_rule(rng: &mut StdRng) -> Value {
    let (field, value) = match rng.gen_range(0..10) {
        0..=3 => (TEXT_FIELDS[rng.gen_range(0..3)], json!(word(rng, 2))),
        4..=5 => (LIST_FIELDS[rng.gen_range(0..2)], json!(word(rng, 2))),
        6..=8 => ("device_count", json!(rng.gen_range(0..5).to_string())),
        _ => ("not_a_field", json!("x")),
    };
    let operator = random_operator(rng, kind_of(field).unwrap_or(FieldKind::Text), 7);
    let value = if operator.ends_with("in") && field == "device_count" {
        json!(format!("{},{}", rng.gen_range(0..5), rng.gen_range(0..5)))
    } else if operator.ends_with("in") {
        json!(format!("{},{}", word(rng, 2), word(rng, 2)))
    } else {
        value
    };
    rule(field, operator, value)
}

fn random_group(rng: &mut StdRng, depth: u32) -> Value {
    let combinator = ["and", "or", "none", "not_all"][rng.gen_range(0..4)];
    let n = rng.gen_range(0..=3);
    let rules = (0..n)
        .map(|_| {
            if depth < 3 && rng.gen_bool(0.3) {
                random_group(rng, depth + 1)
            } else {
                random_rule(rng)
            }
        })
        .collect();
    group(combinator, rules)
}

/// The values of a field on an application, as text; lists have many.
fn values(app: &Value, field: &str) -> Vec<String> {
    match field {
        "version" => app["version_counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap().to_string())
            .collect(),
        "platform" => app["platforms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect(),
        _ => app[field]
            .as_str()
            .map(|s| vec![s.to_string()])
            .unwrap_or_default(),
    }
}

fn split(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The type the applications search gives `field`; `None` for a field it
/// does not have.
fn kind_of(field: &str) -> Option<FieldKind> {
    match field {
        "version" => Some(FieldKind::Version),
        "device_count" => Some(FieldKind::Number),
        _ if TEXT_FIELDS.contains(&field) || LIST_FIELDS.contains(&field) => Some(FieldKind::Text),
        _ => None,
    }
}

/// Whether the search refuses `rule`: a known operator on a known field
/// that does not take it. A rule on an unknown field, or with an unknown
/// operator, is skipped instead (spec rule 8; see [`taken`]).
fn refuses(rule: &Value) -> bool {
    let operator = rule["operator"].as_str().unwrap();
    kind_of(rule["field"].as_str().unwrap())
        .is_some_and(|kind| known(operator) && !takes(kind, operator))
}

/// `group` without the rules the search skips (an unknown field or
/// operator), as the search reads it.
fn taken(group: &Value) -> Value {
    let mut group = group.clone();
    let rules: Vec<Value> = group["rules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|node| {
            if node["kind"] == "group" {
                Some(taken(node))
            } else {
                let operator = node["operator"].as_str().unwrap_or("");
                let field = node["field"].as_str().unwrap_or("");
                (known(operator) && kind_of(field).is_some()).then(|| node.clone())
            }
        })
        .collect();
    group["rules"] = Value::Array(rules);
    group
}

/// What a rule the search takes means, written plainly.
fn eval_rule(app: &Value, rule: &Value) -> bool {
    let field = rule["field"].as_str().unwrap();
    let operator = rule["operator"].as_str().unwrap();
    let value = rule["value"].as_str().unwrap_or("");
    let (positive, negated) = positive(operator);
    if field == "device_count" {
        let n = app["device_count"].as_f64().unwrap();
        let v: f64 = value
            .split(',')
            .next()
            .unwrap_or("0")
            .trim()
            .parse()
            .unwrap_or(0.0);
        let hit = match positive {
            "equals" => n == v,
            "gt" => n > v,
            "gte" => n >= v,
            "lt" => n < v,
            "lte" => n <= v,
            "is_not_empty" => true,
            "in" => split(value).iter().any(|x| x.parse::<f64>().unwrap() == n),
            _ => unreachable!("not a number operator: {positive}"),
        };
        return hit != negated;
    }
    if ["gt", "gte", "lt", "lte"].contains(&positive) {
        // Only versions are taken here, and compare in version order.
        let bound = value.trim().to_string();
        return values(app, field).iter().any(|v| {
            let order = compare_release(v, &bound);
            match positive {
                "gt" => order.is_gt(),
                "gte" => order.is_ge(),
                "lt" => order.is_lt(),
                _ => order.is_le(),
            }
        });
    }
    let needle = value.to_ascii_lowercase();
    let matches = |text: &String| {
        let text = text.to_ascii_lowercase();
        match positive {
            "contains" => text.contains(&needle),
            "equals" => text == needle,
            "starts_with" => text.starts_with(&needle),
            "ends_with" => text.ends_with(&needle),
            "is_not_empty" => !text.is_empty(),
            "in" => split(value).iter().any(|x| x.to_ascii_lowercase() == text),
            _ => unreachable!("not a text operator: {positive}"),
        }
    };
    values(app, field).iter().any(matches) != negated
}

async fn random_queries_agree_with_an_in_memory_evaluator(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let owner = db.tenant("owner").await;
    let other = db.tenant("other").await;
    let seed: u64 = std::env::var("CAIRN_SEARCH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("search differential seed: {seed} (set CAIRN_SEARCH_SEED to replay)");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut rows = vec![];
    for a in 0..40 {
        let name = format!("{}{a}", word(&mut rng, 3));
        for _ in 0..rng.gen_range(1..4) {
            let device = format!("D{}", rng.gen_range(0..8));
            let mut row = item(
                &device,
                &name,
                &word(&mut rng, 3),
                &word(&mut rng, 2),
                ["windows", "Linux", "mac%", "a_b"][rng.gen_range(0..4)],
            );
            if let cairn_plugins::MappedRow::Inventory(inner) = &mut row {
                inner.publisher = rng.gen_bool(0.5).then(|| word(&mut rng, 3).into());
            }
            rows.push(row);
        }
    }
    db.seed(&owner, "rmm", &rows).await;
    db.seed(&other, "rmm", &rows).await;
    db.rebuild(&owner).await;
    db.rebuild(&other).await;
    let everything = search(&db, &owner, json!({"limit": 500})).await;
    let apps = everything["items"].as_array().unwrap().clone();
    assert_eq!(everything["total"].as_u64().unwrap() as usize, apps.len());

    for _ in 0..150 {
        let query = random_group(&mut rng, 0);
        let body = json!({"query": query, "limit": 500});
        // The answer to `body` is a 422 naming a rule.
        let refuses_rule = async |body: Value| {
            let request: SearchRequest = serde_json::from_value(body).unwrap();
            let answer =
                search::run::<ApplicationRow>(&db.db, &owner, &applications::table(), &request)
                    .await;
            assert!(
                matches!(answer, Err(search::SearchError::Rule { .. })),
                "seed {seed}, query {query}: {answer:?}"
            );
        };
        if refused(&query, &refuses) {
            refuses_rule(body).await;
            continue;
        }
        let read = taken(&query);
        if read != query {
            // Skipped by default; under `strict`, refused.
            let mut strict = body.clone();
            strict["strict"] = json!(true);
            refuses_rule(strict).await;
        }
        let mut want: Vec<String> = apps
            .iter()
            .filter(|a| eval_group(*a, &read, &eval_rule).unwrap_or(true))
            .map(|a| a["name"].as_str().unwrap().to_string())
            .collect();
        want.sort();
        let page = search(&db, &owner, body).await;
        assert_eq!(sorted_names(&page), want, "seed {seed}, query {query}");
    }
    db.finish().await;
}
