//! The inventory's one writer of `inventory_items` and its replace rules:
//! which row wins when a key comes again, and when a stored row is
//! rewritten, through `cairn_inventory::items` on a real database.

use cairn_core::ids::TenantId;
use cairn_inventory::items::{self, ReplaceRule};
use cairn_tests::{backend_tests, Backend, TestDb};
use serde_json::json;

backend_tests!(each_replace_rule_keeps_the_row_it_documents);

/// One row in the module's layout: a key, a device and a version.
fn row(key: &str, version: &str) -> serde_json::Value {
    json!([
        key, "HOST-1", null, "windows", null, null, null, "7-Zip", null, version, null, null, "[]",
        null, null
    ])
}

async fn write(
    test_db: &TestDb,
    tenant: &TenantId,
    rule: ReplaceRule,
    stamp: &str,
    rows: &[serde_json::Value],
    now: i64,
) {
    let statement = items::upsert_sql(test_db.db.backend, rule);
    let mut tx = test_db.db.pool.begin().await.unwrap();
    items::upsert(
        &mut tx,
        &statement,
        (tenant, "src"),
        stamp,
        json!(rows).to_string(),
        now,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
}

/// (version, seen_run, updated_at) of the tenant's row keyed `k`.
async fn stored(test_db: &TestDb, tenant: &TenantId) -> (String, String, i64) {
    sqlx::query_as(
        "SELECT version, seen_run, updated_at FROM inventory_items \
         WHERE tenant_id = $1 AND source = 'src' AND item_key = 'k'",
    )
    .bind(tenant.as_str())
    .fetch_one(&test_db.db.pool)
    .await
    .unwrap()
}

async fn each_replace_rule_keeps_the_row_it_documents(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    use ReplaceRule::{ChangedContent, FirstOfStamp};
    // (rule, writes as (stamp, versions in one array, now), the row kept).
    type Write = (&'static str, &'static [&'static str], i64);
    type Kept = (&'static str, &'static str, i64);
    let cases: &[(&str, ReplaceRule, &[Write], Kept)] = &[
        (
            "a sync page: unchanged content keeps the run that changed it",
            ChangedContent,
            &[("run-1", &["1.0"], 10), ("run-2", &["1.0"], 20)],
            ("1.0", "run-1", 10),
        ),
        (
            "a sync page: changed content is rewritten and stamped",
            ChangedContent,
            &[("run-1", &["1.0"], 10), ("run-2", &["2.0"], 20)],
            ("2.0", "run-2", 20),
        ),
        (
            "an upload: a key repeated in one array keeps its first row",
            FirstOfStamp,
            &[("upload-1", &["1.0", "2.0"], 10)],
            ("1.0", "upload-1", 10),
        ),
        (
            "an upload: a later array of the same upload leaves the row alone",
            FirstOfStamp,
            &[("upload-1", &["1.0"], 10), ("upload-1", &["2.0"], 20)],
            ("1.0", "upload-1", 10),
        ),
        (
            "an upload: the next upload stamps every row, changed or not",
            FirstOfStamp,
            &[("upload-1", &["1.0"], 10), ("upload-2", &["1.0"], 20)],
            ("1.0", "upload-2", 20),
        ),
    ];
    for (i, (case, rule, writes, kept)) in cases.iter().enumerate() {
        let tenant = test_db.tenant(&format!("t{i}")).await;
        for (stamp, versions, now) in writes.iter() {
            let rows: Vec<_> = versions.iter().map(|v| row("k", v)).collect();
            write(&test_db, &tenant, *rule, stamp, &rows, *now).await;
        }
        let (version, stamp, at) = stored(&test_db, &tenant).await;
        assert_eq!((version.as_str(), stamp.as_str(), at), *kept, "{case}");
        assert_eq!(
            items::count(&test_db.db, &tenant, "src").await.unwrap(),
            1,
            "{case}"
        );
    }
    // The prune after an upload deletes exactly what it did not stamp.
    let tenant = test_db.tenant("prune").await;
    write(
        &test_db,
        &tenant,
        FirstOfStamp,
        "old",
        &[row("gone", "1"), row("k", "1")],
        1,
    )
    .await;
    write(&test_db, &tenant, FirstOfStamp, "new", &[row("k", "2")], 2).await;
    let deleted = items::prune_unstamped(&test_db.db, &tenant, "src", "new")
        .await
        .unwrap();
    assert_eq!(deleted, 1);
    let counts = items::source_counts(&test_db.db, &tenant, "src")
        .await
        .unwrap();
    assert_eq!(
        (counts.items, counts.devices, counts.applications),
        (1, 1, 1)
    );
    test_db.finish().await;
}
