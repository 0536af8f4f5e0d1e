//! The inventory's writers of `inventory_items` and `source_records` and
//! their replace rules: which row wins when a key comes again, and when a
//! stored row is rewritten, through `cairn_inventory::items` and
//! `cairn_inventory::records` on a real database.

use cairn_core::ids::TenantId;
use cairn_inventory::items::{self, ReplaceRule};
use cairn_inventory::records;
use cairn_tests::{backend_tests, Backend, TestDb};
use serde_json::json;

backend_tests!(
    each_replace_rule_keeps_the_row_it_documents,
    each_replace_rule_keeps_the_record_it_documents,
    a_long_array_is_written_whole_in_order,
    new_keys_refuse_a_stored_key_and_write_nothing,
    copy_writes_what_the_insert_writes
);

/// The two stamped tables, through their owners' functions.
#[derive(Clone, Copy, PartialEq)]
enum Table {
    Items,
    Records,
}

impl Table {
    /// One row in the owner's layout, keyed `key`, holding `version`: an
    /// item of a device, or a device record whose body holds it.
    fn row(self, key: &str, version: &str) -> serde_json::Value {
        match self {
            Table::Items => json!([
                key, "HOST-1", null, "windows", null, null, null, "7-Zip", null, version, null,
                null, "[]", null, null
            ]),
            Table::Records => json!([
                "device", "device", key, "HOST-1", null, "[]", "{}", {"version": version}
            ]),
        }
    }

    async fn write(
        self,
        test_db: &TestDb,
        tenant: &TenantId,
        at: (ReplaceRule, &str),
        rows: &[serde_json::Value],
        now: i64,
    ) {
        self.try_write(test_db, tenant, at, rows, now)
            .await
            .unwrap();
    }

    /// [`Table::write`], committed only if every statement succeeds.
    async fn try_write(
        self,
        test_db: &TestDb,
        tenant: &TenantId,
        (rule, stamp): (ReplaceRule, &str),
        rows: &[serde_json::Value],
        now: i64,
    ) -> sqlx::Result<()> {
        let backend = test_db.db.backend;
        let scope = (tenant, "src");
        let mut tx = test_db.db.pool.begin().await.unwrap();
        match self {
            Table::Items => {
                let statement = items::upsert_sql(backend, rule);
                let mut staged = items::StagedRows::new(backend);
                for row in rows {
                    staged.push_json(&row.to_string()).unwrap();
                }
                items::upsert(&mut tx, &statement, scope, stamp, &staged, now).await
            }
            Table::Records => {
                let statement = records::upsert_sql(backend, rule);
                let mut staged = records::StagedRows::new(backend);
                for row in rows {
                    staged.push_json(&row.to_string()).unwrap();
                }
                records::upsert(&mut tx, &statement, scope, stamp, &staged, now).await
            }
        }?;
        tx.commit().await
    }

    /// [`Table::try_write`] of new keys with COPY, in a transaction on
    /// the PostgreSQL driver's own pool (what a first sync's pages use
    /// there).
    async fn try_copy(
        self,
        test_db: &TestDb,
        tenant: &TenantId,
        stamp: &str,
        rows: &[serde_json::Value],
        now: i64,
    ) -> sqlx::Result<()> {
        let pool = test_db.db.copy.as_ref().expect("PostgreSQL's own pool");
        let scope = (tenant, "src");
        let mut tx = pool.begin().await?;
        match self {
            Table::Items => {
                let mut staged = items::StagedRows::for_copy(rows.len());
                for row in rows {
                    staged.push_json(&row.to_string()).unwrap();
                }
                items::copy_new(&mut tx, scope, stamp, [&staged], now).await
            }
            Table::Records => {
                let mut staged = records::StagedRows::for_copy(rows.len());
                for row in rows {
                    staged.push_json(&row.to_string()).unwrap();
                }
                records::copy_new(&mut tx, scope, stamp, [&staged], now).await
            }
        }?;
        tx.commit().await
    }

    /// Every column but the tenant of each of the tenant's rows, as JSON
    /// text, in key order (PostgreSQL).
    async fn stored_rows(self, test_db: &TestDb, tenant: &TenantId) -> Vec<String> {
        let sql = match self {
            Table::Items => {
                "SELECT CAST(to_jsonb(t) - 'tenant_id' AS TEXT) FROM inventory_items t \
                 WHERE tenant_id = $1 ORDER BY item_key"
            }
            Table::Records => {
                "SELECT CAST(to_jsonb(t) - 'tenant_id' AS TEXT) FROM source_records t \
                 WHERE tenant_id = $1 ORDER BY kind, record_key"
            }
        };
        sqlx::query_scalar(sql)
            .bind(tenant.as_str())
            .fetch_all(&test_db.db.pool)
            .await
            .unwrap()
    }

    /// (version, seen_run, updated_at) of the tenant's row keyed `k`.
    async fn stored(self, test_db: &TestDb, tenant: &TenantId) -> (String, String, i64) {
        let sql = match self {
            Table::Items => {
                "SELECT version, seen_run, updated_at FROM inventory_items \
                 WHERE tenant_id = $1 AND source = 'src' AND item_key = 'k'"
            }
            Table::Records => {
                "SELECT body AS version, seen_run, updated_at FROM source_records \
                 WHERE tenant_id = $1 AND source = 'src' AND kind = 'device' AND record_key = 'k'"
            }
        };
        let (version, stamp, at): (String, String, i64) = sqlx::query_as(sql)
            .bind(tenant.as_str())
            .fetch_one(&test_db.db.pool)
            .await
            .unwrap();
        let version = match self {
            Table::Items => version,
            Table::Records => {
                let body: serde_json::Value = serde_json::from_str(&version).unwrap();
                body["version"].as_str().unwrap().to_string()
            }
        };
        (version, stamp, at)
    }

    /// (rows, distinct devices) the source holds for the tenant.
    async fn counts(self, test_db: &TestDb, tenant: &TenantId) -> (i64, i64) {
        match self {
            Table::Items => {
                let counts = items::source_counts(&test_db.db, tenant, "src")
                    .await
                    .unwrap();
                let count = items::count(&test_db.db, tenant, "src").await.unwrap();
                assert_eq!(count, counts.items);
                (count, counts.devices)
            }
            Table::Records => {
                let counts = records::source_counts(&test_db.db, tenant, "src")
                    .await
                    .unwrap();
                (counts.records, counts.devices)
            }
        }
    }

    /// Runs [`CASES`] against the table, each in a tenant of its own.
    async fn check_rules(self, test_db: &TestDb) {
        for (i, (case, rule, writes, kept)) in CASES.iter().enumerate() {
            let tenant = test_db.tenant(&format!("t{i}")).await;
            for (stamp, versions, now) in writes.iter() {
                let rows: Vec<_> = versions.iter().map(|v| self.row("k", v)).collect();
                self.write(test_db, &tenant, (*rule, stamp), &rows, *now)
                    .await;
            }
            let (version, stamp, at) = self.stored(test_db, &tenant).await;
            assert_eq!((version.as_str(), stamp.as_str(), at), *kept, "{case}");
            assert_eq!(self.counts(test_db, &tenant).await, (1, 1), "{case}");
        }
    }
}

/// A write: (stamp, versions in one array, now).
type Write = (&'static str, &'static [&'static str], i64);
/// The row kept: (version, stamp, updated_at).
type Kept = (&'static str, &'static str, i64);

use ReplaceRule::{ChangedContent, FirstOfStamp, NewKeys};

/// The rules' cases, the same for both tables.
const CASES: &[(&str, ReplaceRule, &[Write], Kept)] = &[
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
    (
        "a first sync: a new key is inserted and stamped",
        NewKeys,
        &[("run-1", &["1.0"], 10)],
        ("1.0", "run-1", 10),
    ),
];

async fn each_replace_rule_keeps_the_row_it_documents(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let table = Table::Items;
    table.check_rules(&test_db).await;
    // The prune after an upload deletes exactly what it did not stamp.
    let tenant = test_db.tenant("prune").await;
    let old = [table.row("gone", "1"), table.row("k", "1")];
    table
        .write(&test_db, &tenant, (FirstOfStamp, "old"), &old, 1)
        .await;
    let new = [table.row("k", "2")];
    table
        .write(&test_db, &tenant, (FirstOfStamp, "new"), &new, 2)
        .await;
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

async fn each_replace_rule_keeps_the_record_it_documents(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let table = Table::Records;
    table.check_rules(&test_db).await;
    // A key is (kind, key): a user keyed like a device is another record.
    // The prune after an upload deletes exactly what it did not stamp, and
    // removing the source removes the rest.
    let tenant = test_db.tenant("prune").await;
    let mut user = table.row("k", "1");
    user[0] = json!("user");
    user[1] = json!("user");
    let old = [table.row("gone", "1"), table.row("k", "1"), user];
    table
        .write(&test_db, &tenant, (FirstOfStamp, "old"), &old, 1)
        .await;
    let new = [table.row("k", "2")];
    table
        .write(&test_db, &tenant, (FirstOfStamp, "new"), &new, 2)
        .await;
    let by_kind = records::counts_by_kind(&test_db.db, &tenant, "src")
        .await
        .unwrap();
    assert_eq!(
        by_kind,
        [("device".to_string(), 2), ("user".to_string(), 1)]
    );
    let deleted = records::prune_unstamped(&test_db.db, &tenant, "src", "new")
        .await
        .unwrap();
    assert_eq!(
        deleted, 2,
        "the device and the user the new upload left out"
    );
    let (page, total) = records::of_source(&test_db.db, &tenant, "src", 0, 10)
        .await
        .unwrap();
    assert_eq!(total, 1);
    assert_eq!(page[0].body["version"], "2");
    let found = records::device_record(&test_db.db, &tenant, "src", "host-1")
        .await
        .unwrap()
        .expect("the device by its name, case ignored");
    assert_eq!(found.record_key, "k");
    let mut tx = test_db.db.pool.begin().await.unwrap();
    records::delete_source(&mut tx, &tenant, "src")
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let counts = records::source_counts(&test_db.db, &tenant, "src")
        .await
        .unwrap();
    assert_eq!(counts.records, 0);
    test_db.finish().await;
}

/// An array longer than any one statement the engine binds (1,234 rows:
/// SQLite writes it in statements of 500, 50, 5 and 1 rows) is stored
/// whole, each value as it was staged (null, quotes, a backslash, text
/// beyond ASCII); under `FirstOfStamp` a key repeated across those
/// statements keeps its first row. (`ChangedContent` arrays hold each key
/// once: the sync keeps the last row of a key before it stages.)
async fn a_long_array_is_written_whole_in_order(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let db = &test_db.db;
    let backend = db.backend;
    let version = |i: usize| format!("{i}.0 \"quoted\" C:\\path é");
    for (rule, repeats) in [
        (FirstOfStamp, true),
        (ChangedContent, false),
        (NewKeys, false),
    ] {
        // Row 499 ends the first statement of 500 rows, row 1233 is the
        // last one, written alone; with `repeats` both repeat key 0's.
        let key = |i: usize| match i {
            499 | 1233 if repeats => "key-0000".to_string(),
            i => format!("key-{i:04}"),
        };
        let tenant = test_db.tenant(&format!("{rule:?}")).await;
        let mut staged = items::StagedRows::new(backend);
        for i in 0..1234 {
            let (key, version) = (key(i), version(i));
            let mut row = [None; 15];
            row[0] = Some(key.as_str());
            row[1] = Some("HOST-1");
            row[7] = Some("7-Zip");
            row[9] = Some(version.as_str());
            row[12] = Some("[]");
            staged.push(row);
        }
        assert_eq!(staged.len(), 1234);
        let mut tx = db.pool.begin().await.unwrap();
        items::upsert(
            &mut tx,
            &items::upsert_sql(backend, rule),
            (&tenant, "src"),
            "stamp",
            &staged,
            5,
        )
        .await
        .unwrap();
        tx.commit().await.unwrap();
        let stored: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT item_key, version, user_email FROM inventory_items \
             WHERE tenant_id = $1 ORDER BY item_key",
        )
        .bind(tenant.as_str())
        .fetch_all(&db.pool)
        .await
        .unwrap();
        let expected: Vec<(String, Option<String>, Option<String>)> = (0..1234)
            .filter(|&i| !(repeats && (i == 499 || i == 1233)))
            .map(|i| (key(i), Some(version(i)), None))
            .collect();
        assert_eq!(stored.len(), expected.len(), "{rule:?}");
        assert_eq!(stored, expected, "{rule:?}");
    }

    // A staged line of the wrong width is refused, not written short.
    let mut staged = records::StagedRows::new(backend);
    let refused = staged
        .push_json(r#"["device", "device", "k"]"#)
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "a staged row holds 3 values where the table's layout has 8"
    );
    assert!(staged.push_json("not json").is_err());
    assert!(staged.is_empty());
}

/// `NewKeys` (a first sync's plain inserts) over a key the source already
/// holds fails as a unique violation, which the sync answers by writing
/// the page again as an upsert; the failed write leaves nothing, not even
/// its new keys, and the stored row as it was.
async fn new_keys_refuse_a_stored_key_and_write_nothing(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    for table in [Table::Items, Table::Records] {
        let tenant = test_db.tenant(&format!("{}", table as u8)).await;
        let first = [table.row("k", "1.0")];
        table
            .write(&test_db, &tenant, (NewKeys, "run-1"), &first, 10)
            .await;
        let page = [table.row("a-new-key", "1.0"), table.row("k", "2.0")];
        let err = table
            .try_write(&test_db, &tenant, (NewKeys, "run-2"), &page, 20)
            .await
            .expect_err("a stored key refused");
        assert!(
            cairn_core::db::is_unique_violation(&err),
            "a unique violation, which the sync answers: {err}"
        );
        assert_eq!(table.counts(&test_db, &tenant).await.0, 1);
        assert_eq!(
            table.stored(&test_db, &tenant).await,
            ("1.0".to_string(), "run-1".to_string(), 10)
        );
        // The page again as the sync writes it then.
        table
            .write(&test_db, &tenant, (ChangedContent, "run-2"), &page, 20)
            .await;
        assert_eq!(table.counts(&test_db, &tenant).await.0, 2);
        assert_eq!(
            table.stored(&test_db, &tenant).await,
            ("2.0".to_string(), "run-2".to_string(), 20)
        );
    }
    test_db.finish().await;
}

/// Values COPY's text format reads specially, and others a source may send.
const AWKWARD: &[Option<&str>] = &[
    Some("tab\there"),
    Some("two\nlines"),
    Some("carriage\rreturn"),
    Some("back\\slash"),
    Some("\\."),
    Some("\\N"),
    None,
    Some(""),
    Some("quote \" and 'apostrophe'"),
    Some("Zürich, 東京, emoji 🦀"),
    Some("C:\\Program Files\\7-Zip\\7z.exe"),
];

/// On PostgreSQL, a first sync's pages go in with COPY: the rows it writes
/// are, column for column, the rows the insert from a bound array writes,
/// whatever the values hold; a stored key fails it as a unique violation
/// and leaves nothing of the page. SQLite has no COPY (and no pool for it).
async fn copy_writes_what_the_insert_writes(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    if backend == Backend::Sqlite {
        assert!(test_db.db.copy.is_none());
        test_db.finish().await;
        return;
    }
    for table in [Table::Items, Table::Records] {
        let rows: Vec<serde_json::Value> = AWKWARD
            .iter()
            .enumerate()
            .map(|(i, value)| {
                let mut row = table.row(&format!("k{i:02}"), value.unwrap_or("none"));
                let cells = row.as_array_mut().unwrap();
                // Every column that takes null: an item's but its key and
                // groups, a record's device and client.
                let awkward: &[usize] = match table {
                    Table::Items => &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14],
                    Table::Records => &[3, 4],
                };
                for &i in awkward {
                    cells[i] = json!(value);
                }
                // A sync stages a record's body as its JSON text (an
                // upload's staging file holds the object, which the
                // insert on PostgreSQL reads through jsonb; uploads never
                // take COPY).
                if table == Table::Records {
                    cells[7] = json!(cells[7].to_string());
                }
                row
            })
            .collect();
        let inserted = test_db.tenant(&format!("inserted-{}", table as u8)).await;
        table
            .write(&test_db, &inserted, (NewKeys, "run-1"), &rows, 10)
            .await;
        let copied = test_db.tenant(&format!("copied-{}", table as u8)).await;
        table
            .try_copy(&test_db, &copied, "run-1", &rows, 10)
            .await
            .unwrap();
        let (by_insert, by_copy) = (
            table.stored_rows(&test_db, &inserted).await,
            table.stored_rows(&test_db, &copied).await,
        );
        assert_eq!(by_copy.len(), AWKWARD.len());
        assert_eq!(by_copy, by_insert);
        // Not the same mistake twice: the values are what was sent.
        for (stored, value) in by_copy.iter().zip(AWKWARD) {
            let stored: serde_json::Value = serde_json::from_str(stored).unwrap();
            assert_eq!(stored["device_name"], json!(value), "{stored}");
            assert_eq!(stored["seen_run"], json!("run-1"));
            assert_eq!(stored["updated_at"], json!(10));
        }

        // A page with a stored key: refused whole.
        let page = [table.row("a-new-key", "1.0"), table.row("k00", "2.0")];
        let err = table
            .try_copy(&test_db, &copied, "run-2", &page, 20)
            .await
            .expect_err("a stored key refused");
        assert!(cairn_core::db::is_unique_violation(&err), "{err}");
        assert_eq!(table.stored_rows(&test_db, &copied).await, by_copy);
    }
    test_db.finish().await;
}
