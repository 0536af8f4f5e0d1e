//! The software rollup's rules: rows written through the sync's own upsert,
//! the applications derived from them by a whole rebuild, what an
//! incremental rebuild folds in after a run stops reporting a device, a
//! superseded rebuild, a large one, the change queue the matcher reads, and
//! the tenant every inventory row must belong to.

use cairn_core::db::fence::{FencedError, NoFence, WriteFence};
use cairn_core::ids::TenantId;
use cairn_inventory::assets::{self, AssetRow};
use cairn_inventory::devices::assets::AssetView;
use cairn_inventory::rollup::{self, build::Application, Mode};
use cairn_inventory::search::{self, Page, SearchRequest};
use cairn_inventory::seen;
use cairn_plugins::MappedRow;
use cairn_tests::inventory::{device_record, full_item, item};
use cairn_tests::{backend_tests, Backend, TestDb};
use serde_json::json;

backend_tests!(
    each_rollup_rule_gives_its_applications,
    a_run_that_stops_reporting_a_device_drops_its_applications,
    a_run_that_lost_its_job_prunes_nothing,
    a_superseded_rebuild_stops_before_sweeping_newer_rows,
    a_rebuild_reads_every_row_of_a_large_inventory,
    the_change_queue_holds_the_key_of_each_changed_row,
    inventory_rows_belong_to_an_existing_tenant,
);

/// `source` reported `application` `version` from `vendor` on `device`
/// (`platform`).
struct Seen {
    source: &'static str,
    device: &'static str,
    application: &'static str,
    vendor: &'static str,
    version: &'static str,
    platform: &'static str,
}

const fn rmm(
    device: &'static str,
    application: &'static str,
    vendor: &'static str,
    version: &'static str,
    platform: &'static str,
) -> Seen {
    Seen {
        source: "rmm",
        device,
        application,
        vendor,
        version,
        platform,
    }
}

const fn edr(
    device: &'static str,
    application: &'static str,
    vendor: &'static str,
    version: &'static str,
    platform: &'static str,
) -> Seen {
    Seen {
        source: "edr",
        ..rmm(device, application, vendor, version, platform)
    }
}

/// An application as one line: name, vendor, devices, the most common,
/// newest and oldest versions, devices per version, platforms, sources.
fn line(app: &Application) -> String {
    let versions: Vec<String> = app
        .version_counts
        .iter()
        .map(|v| format!("{}x{}", v.version, v.count))
        .collect();
    format!(
        "{} | {} | {} devices | common {} newest {} oldest {} | {} | {} | {}",
        app.name,
        app.vendor.as_deref().unwrap_or("-"),
        app.device_count,
        app.most_common_version.as_deref().unwrap_or("-"),
        app.newest_version.as_deref().unwrap_or("-"),
        app.oldest_version.as_deref().unwrap_or("-"),
        versions.join(" "),
        app.platforms.join(" "),
        app.sources.join(" "),
    )
}

/// Writes `rows` for `tenant`, one sync run per source, as syncs do.
async fn write(db: &TestDb, tenant: &TenantId, run: &str, rows: &[Seen]) {
    let mut sources: Vec<&str> = rows.iter().map(|r| r.source).collect();
    sources.sort();
    sources.dedup();
    let mut tx = db.db.pool.begin().await.unwrap();
    for source in sources {
        let mapped: Vec<MappedRow> = rows
            .iter()
            .filter(|r| r.source == source)
            .map(|r| item(r.device, r.application, r.vendor, r.version, r.platform))
            .collect();
        cairn_integrations::storage::upsert_rows(&mut tx, tenant, source, (run, 0), &mapped)
            .await
            .unwrap();
    }
    tx.commit().await.unwrap();
}

/// The applications a whole rebuild derives from `rows`, one line each,
/// most installed first, are `expected`.
async fn check(db: &TestDb, rule: &str, rows: &[Seen], expected: &[&str]) {
    let tenant = db.tenant(rule).await;
    write(db, &tenant, "run", rows).await;
    let stats = rollup::rebuild_until_current(&db.db, &tenant, Mode::Whole)
        .await
        .unwrap();
    assert_eq!(stats.items, rows.len() as u64, "{rule}: rows read");
    let (_, derived) = rollup::derive(&db.db, &tenant).await.unwrap();
    let mut lines: Vec<String> = derived.applications.iter().map(line).collect();
    lines.sort();
    let mut expected: Vec<String> = expected.iter().map(|l| l.to_string()).collect();
    expected.sort();
    assert_eq!(lines, expected, "{rule}");
    // Stored as derived: the summaries clients read, most installed first.
    let stored = cairn_inventory::storage::application_summaries(&db.db, &tenant)
        .await
        .unwrap();
    let mut by_count: Vec<(i64, String)> = derived
        .applications
        .iter()
        .map(|a| (-a.device_count, a.name.clone()))
        .collect();
    by_count.sort();
    let stored_names: Vec<String> = stored.iter().map(|a| a.name.clone()).collect();
    let derived_names: Vec<String> = by_count.into_iter().map(|(_, n)| n).collect();
    assert_eq!(
        stored_names, derived_names,
        "{rule}: stored, most installed first"
    );
}

const TEAMS_GUID: &str = "Teams Machine-Wide Installer (3F2504E0-4F89-11D3-9A0C-0305E82C3301)";

async fn each_rollup_rule_gives_its_applications(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    check(
        &db,
        "an installer-id suffix merges with the plain name",
        &[
            rmm("WS-01", TEAMS_GUID, "Microsoft", "1.6", "windows"),
            rmm("WS-02", "Teams Machine-Wide Installer (a1b2c3d4e5)", "Microsoft", "1.6", "windows"),
            rmm("WS-03", "Teams Machine-Wide Installer", "Microsoft", "1.6", "windows"),
        ],
        &["Teams Machine-Wide Installer | Microsoft | 3 devices | common 1.6 newest 1.6 oldest 1.6 | 1.6x3 | windows | rmm"],
    )
    .await;
    check(
        &db,
        "an architecture suffix stays part of the name",
        &[
            rmm("WS-01", "7-Zip 23.01 (x64)", "Igor Pavlov", "23.01", "windows"),
            rmm("WS-02", "7-Zip 23.01", "Igor Pavlov", "23.01", "windows"),
        ],
        &[
            "7-Zip 23.01 (x64) | Igor Pavlov | 1 devices | common 23.01 newest 23.01 oldest 23.01 | 23.01x1 | windows | rmm",
            "7-Zip 23.01 | Igor Pavlov | 1 devices | common 23.01 newest 23.01 oldest 23.01 | 23.01x1 | windows | rmm",
        ],
    )
    .await;
    check(
        &db,
        "the vendor is the one on the most devices",
        &[
            rmm("WS-01", "Teams", "Microsoft", "1.6", "windows"),
            rmm("WS-02", "Teams", "Microsoft Corporation", "1.6", "windows"),
            rmm("WS-03", "Teams", "Microsoft Corporation", "1.6", "windows"),
        ],
        &["Teams | Microsoft Corporation | 3 devices | common 1.6 newest 1.6 oldest 1.6 | 1.6x3 | windows | rmm"],
    )
    .await;
    check(
        &db,
        "a device counts once, and once per version it has",
        &[
            rmm("WS-01", "Teams", "Microsoft", "1.6.0.1", "macos"),
            rmm("WS-01", "Teams", "Microsoft", "1.10.0.2", "macos"),
            rmm("WS-02", "Teams", "Microsoft", "1.6.0.1", "macos"),
        ],
        &["Teams | Microsoft | 2 devices | common 1.6.0.1 newest 1.10.0.2 oldest 1.6.0.1 | 1.6.0.1x2 1.10.0.2x1 | macos | rmm"],
    )
    .await;
    check(
        &db,
        "versions compare by number, not by text; most devices first",
        &[
            rmm("WS-01", "Teams", "Microsoft", "1.5.0.30767", "windows"),
            rmm("WS-02", "Teams", "Microsoft", "1.6.0.1", "windows"),
            rmm("WS-03", "Teams", "Microsoft", "1.6.0.1", "windows"),
            rmm("WS-04", "Teams", "Microsoft", "1.6.0.1", "windows"),
            rmm("WS-05", "Teams", "Microsoft", "1.10.0.2", "windows"),
        ],
        &["Teams | Microsoft | 5 devices | common 1.6.0.1 newest 1.10.0.2 oldest 1.5.0.30767 | 1.6.0.1x3 1.10.0.2x1 1.5.0.30767x1 | windows | rmm"],
    )
    .await;
    check(
        &db,
        "platforms are labelled once whatever their case",
        &[
            rmm("WS-01", "Teams", "Microsoft", "1.6", "windows"),
            rmm("WS-02", "Teams", "Microsoft", "1.6", "Windows"),
            rmm("WS-03", "Teams", "Microsoft", "1.6", "WINDOWS"),
            rmm("WS-04", "Teams", "Microsoft", "1.6", "macos"),
        ],
        &["Teams | Microsoft | 4 devices | common 1.6 newest 1.6 oldest 1.6 | 1.6x4 | macos windows | rmm"],
    )
    .await;
    check(
        &db,
        "one application gathers its sources; of versions on as many devices the newest leads",
        &[
            rmm("WS-03", "7-Zip 23.01 (x64)", "Igor Pavlov", "23.01", "windows"),
            edr("WS-01", "7-Zip 23.01 (x64)", "Igor Pavlov", "22.01", "windows"),
        ],
        &["7-Zip 23.01 (x64) | Igor Pavlov | 2 devices | common 23.01 newest 23.01 oldest 22.01 | 23.01x1 22.01x1 | windows | edr rmm"],
    )
    .await;
    check(
        &db,
        "a row without a name gives no application",
        &[rmm("WS-05", "", "Nobody", "1", "linux")],
        &[],
    )
    .await;
    check(
        &db,
        "control characters and NULs are stripped from names and vendors",
        &[rmm("WS-05", "Note\0pad\u{7}++", "Don\u{1}Ho", "8.6", "linux")],
        &["Notepad++ | DonHo | 1 devices | common 8.6 newest 8.6 oldest 8.6 | 8.6x1 | linux | rmm"],
    )
    .await;
    check(&db, "no rows, no applications", &[], &[]).await;
    db.finish().await;
}

/// A fence that no longer holds: the run lost its job to another worker.
struct LostJob;

#[async_trait::async_trait]
impl WriteFence for LostJob {
    async fn hold(&self, _tx: &mut sqlx::Transaction<'_, sqlx::Any>) -> sqlx::Result<bool> {
        Ok(false)
    }
}

/// A sync run that lost its job before its prune deletes nothing and
/// records no completion; the run that owns the job prunes as usual.
async fn a_run_that_lost_its_job_prunes_nothing(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = db.tenant("taken over").await;
    let rows = [
        rmm("WS-01", "7-Zip", "Igor Pavlov", "23.01", "windows"),
        rmm("WS-02", "Notepad++", "Don Ho", "8.6", "windows"),
    ];
    write(&db, &tenant, "first", &rows).await;
    write(&db, &tenant, "second", &rows[..1]).await;
    let items = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM inventory_items WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_one(&db.db.pool)
            .await
            .unwrap()
    };
    let completed = || async {
        cairn_inventory::seen::completed_runs(&db.db, &tenant)
            .await
            .unwrap()
    };
    let stored_pages = || async {
        sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM sync_seen WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_one(&db.db.pool)
            .await
            .unwrap()
    };
    let pages = stored_pages().await;
    assert!(pages > 0);

    let refused = seen::prune_unseen(&db.db, &LostJob, &tenant, "rmm", "second").await;
    assert!(matches!(refused, Err(FencedError::Lost)), "{refused:?}");
    let forgot = seen::forget_run(&db.db, &LostJob, &tenant, "rmm", "second").await;
    assert!(matches!(forgot, Err(FencedError::Lost)), "{forgot:?}");
    assert_eq!(items().await, 2, "nothing was pruned");
    assert!(completed().await.is_empty(), "no completion was recorded");
    assert_eq!(stored_pages().await, pages, "the run's pages are kept");

    let pruned = seen::prune_unseen(&db.db, &NoFence, &tenant, "rmm", "second")
        .await
        .unwrap();
    assert_eq!(pruned, (1, 0));
    assert_eq!(items().await, 1);
    assert!(completed().await.contains_key("rmm"));
}

async fn a_run_that_stops_reporting_a_device_drops_its_applications(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = db.tenant("re-imaged").await;
    let rows = [
        rmm("WS-01", TEAMS_GUID, "Microsoft", "1.5.0.30767", "windows"),
        rmm(
            "WS-02",
            "Teams Machine-Wide Installer",
            "Microsoft",
            "1.6.0.1",
            "windows",
        ),
        rmm("WS-05", "Notepad++", "Don Ho", "8.6", "linux"),
    ];
    write(&db, &tenant, "first", &rows).await;
    let first = rollup::rebuild_until_current(&db.db, &tenant, Mode::Incremental)
        .await
        .unwrap();
    assert_eq!((first.applications, first.assets), (2, 3));
    let stored = |db: &TestDb, tenant: &TenantId| {
        let (db, tenant) = (db.db.clone(), tenant.clone());
        async move {
            sqlx::query_as::<_, (String, String, i64)>(
                "SELECT name, id, rollup_at FROM applications WHERE tenant_id = $1 ORDER BY name",
            )
            .bind(tenant.as_str())
            .fetch_all(&db.pool)
            .await
            .unwrap()
        }
    };
    let before = stored(&db, &tenant).await;

    // WS-05 is re-imaged: the next run of rmm no longer reports Notepad++.
    write(&db, &tenant, "second", &rows[..2]).await;
    cairn_inventory::seen::prune_unseen(&db.db, &NoFence, &tenant, "rmm", "second")
        .await
        .unwrap();
    let second = rollup::rebuild_until_current(&db.db, &tenant, Mode::Incremental)
        .await
        .unwrap();
    // Only WS-05 changed: its row is folded in, nothing else is read.
    assert_eq!(second.changes, Some(1), "the prune queued WS-05's row");
    assert_eq!(
        (second.applications, second.assets, second.items),
        (1, 1, 0),
        "one application and one asset recomputed from no rows"
    );
    let after = stored(&db, &tenant).await;
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].0, "Teams Machine-Wide Installer");
    assert_eq!(after[0].1, before[1].1, "ids survive rebuilds");
    assert_eq!(
        after[0].2, before[1].2,
        "an application no change touched keeps the run that produced it"
    );
    let stats =
        cairn_inventory::storage::stats(&db.db, &cairn_vulnerabilities::exposure(), &tenant)
            .await
            .unwrap();
    assert_eq!((stats.applications, stats.vulnerabilities), (1, 0));
    // The unfiltered lists' totals (kept by the rebuild) follow the rows
    // through the incremental rebuild, as a filtered count does.
    let filtered = |text: &str| SearchRequest {
        search: Some(text.into()),
        ..SearchRequest::default()
    };
    for request in [SearchRequest::default(), filtered("teams")] {
        let applications: Page<cairn_inventory::applications::ApplicationRow> = search::run(
            &db.db,
            &tenant,
            &cairn_inventory::applications::table(),
            &request,
        )
        .await
        .unwrap();
        assert_eq!(applications.total, 1, "{:?}", request.search);
    }
    for request in [SearchRequest::default(), filtered("ws-0")] {
        let assets: Page<AssetRow> = search::run(&db.db, &tenant, &assets::table(), &request)
            .await
            .unwrap();
        assert_eq!(assets.total, 2, "{:?}", request.search);
    }
    db.finish().await;
}

/// The names of the tenant's applications as stored, sorted.
async fn application_names(db: &TestDb, tenant: &TenantId) -> Vec<String> {
    let mut names: Vec<String> = cairn_inventory::storage::application_summaries(&db.db, tenant)
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.name)
        .collect();
    names.sort();
    names
}

/// A rebuild that derived from older data and writes after a later rebuild
/// began (its job presumed dead and run again, say) must not sweep away
/// the later rebuild's rows.
async fn a_superseded_rebuild_stops_before_sweeping_newer_rows(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = db.tenant("superseded").await;
    db.seed(
        &tenant,
        "rmm",
        &[item("WS-01", "Alpha", "Acme", "1.0", "windows")],
    )
    .await;
    let (_, early) = rollup::store::begin(&db.db, &tenant).await.unwrap();
    let (_, stale) = rollup::derive(&db.db, &tenant).await.unwrap();

    db.seed(
        &tenant,
        "rmm",
        &[item("WS-02", "Beta", "Acme", "2.0", "windows")],
    )
    .await;
    rollup::rebuild_until_current(&db.db, &tenant, Mode::Incremental)
        .await
        .unwrap();
    assert_eq!(application_names(&db, &tenant).await, ["Alpha", "Beta"]);

    let late = rollup::store::write(&db.db, &tenant, early, &stale).await;
    assert_eq!(application_names(&db, &tenant).await, ["Alpha", "Beta"]);
    assert!(
        matches!(late, Err(rollup::WriteError::Superseded)),
        "{late:?}"
    );
    // Both devices keep their asset.
    let assets: Page<AssetRow> =
        search::run(&db.db, &tenant, &assets::table(), &SearchRequest::default())
            .await
            .unwrap();
    let mut devices: Vec<String> = assets
        .items
        .into_iter()
        .map(|row| AssetView::from_row(row, false).device_name)
        .collect();
    devices.sort();
    assert_eq!(devices, ["WS-01", "WS-02"]);
    db.finish().await;
}

/// More rows than one page of the rebuild's read, from two sources: every
/// row is counted once, and the job's detail says so.
async fn a_rebuild_reads_every_row_of_a_large_inventory(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = db.tenant("large").await;
    for (source, devices) in [("rmm", 0..6_000), ("csv-export", 4_000..9_000)] {
        let rows: Vec<MappedRow> = devices
            .flat_map(|d| {
                (0..5).map(move |a| {
                    item(
                        &format!("PC-{d:05}"),
                        &format!("App {a}"),
                        "Acme",
                        "1.0",
                        "windows",
                    )
                })
            })
            .collect();
        db.seed(&tenant, source, &rows).await;
    }
    // As the rollup job runs it.
    let stats = rollup::rebuild_until_current(&db.db, &tenant, Mode::Incremental)
        .await
        .unwrap();
    assert_eq!(
        stats.to_string(),
        "55000 inventory items rolled up into 5 applications and 9000 assets"
    );
    let stored = cairn_inventory::storage::application_summaries(&db.db, &tenant)
        .await
        .unwrap();
    assert_eq!(stored.len(), 5);
    for app in stored {
        assert_eq!(app.device_count, 9000, "{}", app.name);
    }
    db.finish().await;
}

/// The queue the vulnerability matcher reads (filled by triggers, per row on
/// SQLite and per statement on PostgreSQL) holds nothing for a tenant until
/// its queue is turned on (before the tenant's first whole match); from
/// then on it holds, through the sync's own upsert and prune: each inserted
/// and each deleted row's key, both keys of a row whose device was renamed,
/// nothing for a change matching does not read or for a row without an
/// application, and nothing of another tenant.
async fn the_change_queue_holds_the_key_of_each_changed_row(backend: Backend) {
    use cairn_integrations::storage;
    use cairn_inventory::changes;
    use cairn_inventory::seen;
    use cairn_inventory::software::SoftwareKey;

    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("owner").await;
    let other = test_db.tenant("other").await;
    let db = &test_db.db;
    let write = |tenant: cairn_core::ids::TenantId, run: &'static str, rows: Vec<MappedRow>| async move {
        let mut tx = db.pool.begin().await.unwrap();
        storage::upsert_rows(&mut tx, &tenant, "rmm", (run, 0), &rows)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        seen::prune_unseen(db, &NoFence, &tenant, "rmm", run)
            .await
            .unwrap();
    };
    let key = |device: &str, application: &str, version: &str| SoftwareKey {
        device_name: device.into(),
        application_name: application.into(),
        version: version.into(),
    };
    let with_id = |device: &str, id: &str| {
        let mut row = full_item(device, "Alpha", "Acme", "1.0");
        row.device_id = Some(id.into());
        MappedRow::Inventory(row)
    };
    let mut no_application = full_item("WS-04", "", "Acme", "1.0");
    no_application.application_name = None;
    let beta = full_item("WS-01", "Beta", "Acme", "2.0");

    // Before the queue is on, a sync queues nothing: the first whole
    // match reads everything.
    write(
        tenant.clone(),
        "run-0",
        vec![item("WS-00", "Zeta", "Acme", "0.1", "windows")],
    )
    .await;
    assert_eq!(changes::pending_count(db, &tenant).await.unwrap(), 0);
    changes::start_recording(db, &tenant).await.unwrap();
    changes::start_recording(db, &other).await.unwrap();
    // Turning it on twice changes nothing.
    changes::start_recording(db, &tenant).await.unwrap();

    write(
        tenant.clone(),
        "run-1",
        vec![
            with_id("WS-01", "id-1"),
            MappedRow::Inventory(beta.clone()),
            item("WS-02", "Gamma", "Acme", "3.0", "windows"),
            MappedRow::Inventory(no_application.clone()),
        ],
    )
    .await;
    // run-0's row, which run-1 no longer has, is pruned and queued.
    let (ids, keys) = changes::pending(db, &tenant).await.unwrap();
    assert_eq!(
        keys,
        [
            key("WS-00", "Zeta", "0.1"),
            key("WS-01", "Alpha", "1.0"),
            key("WS-01", "Beta", "2.0"),
            key("WS-02", "Gamma", "3.0")
        ]
    );
    assert_eq!(ids.len(), 4);
    let mut tx = db.pool.begin().await.unwrap();
    changes::consume(&mut tx, db.backend, &tenant, &ids)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    write(
        other.clone(),
        "run-x",
        vec![item("OTHER-01", "Omega", "Acme", "9.0", "windows")],
    )
    .await;

    // Alpha's device is renamed, Beta gains only a user, Gamma is gone,
    // Delta is new.
    let mut beta_with_user = beta;
    beta_with_user.user_name = Some("ACME\\jdoe".into());
    write(
        tenant.clone(),
        "run-2",
        vec![
            with_id("WS-01-NEW", "id-1"),
            MappedRow::Inventory(beta_with_user),
            item("WS-03", "Delta", "Acme", "4.0", "windows"),
            MappedRow::Inventory(no_application),
        ],
    )
    .await;
    let (ids, keys) = changes::pending(db, &tenant).await.unwrap();
    assert_eq!(
        keys,
        [
            key("WS-01", "Alpha", "1.0"),
            key("WS-01-NEW", "Alpha", "1.0"),
            key("WS-02", "Gamma", "3.0"),
            key("WS-03", "Delta", "4.0")
        ]
    );
    assert_eq!(ids.len(), 4, "one entry per key: {keys:?}");
    test_db.finish().await;
}

/// Inventory items and source records name an existing tenant (a foreign
/// key on SQLite, triggers on PostgreSQL): a row inserted or moved to an
/// unknown tenant is refused as a foreign key violation, and deleting a
/// tenant deletes its rows and nobody else's.
async fn inventory_rows_belong_to_an_existing_tenant(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let owner = test_db.tenant("owner").await;
    let other = test_db.tenant("other").await;
    let db = &test_db.db;
    for statement in [
        "INSERT INTO inventory_items (tenant_id, source, item_key, group_ids, seen_run, updated_at) \
         VALUES ($1, 'rmm', 'k', '[]', 'run', 0)",
        "INSERT INTO source_records (tenant_id, source, kind, record_type, record_key, body, \
         seen_run, updated_at) VALUES ($1, 'rmm', 'devices', 'device', 'k', '{}', 'run', 0)",
    ] {
        let refused = sqlx::query(statement)
            .bind("no-such-tenant")
            .execute(&db.pool)
            .await
            .expect_err(statement);
        assert_eq!(
            refused.as_database_error().map(|e| e.kind()),
            Some(sqlx::error::ErrorKind::ForeignKeyViolation),
            "{refused}"
        );
    }
    let rows = [
        item("WS-01", "Alpha", "Acme", "1.0", "windows"),
        device_record("WS-01", json!({"name": "WS-01"})),
    ];
    test_db.seed(&owner, "rmm", &rows).await;
    test_db.seed(&other, "rmm", &rows).await;
    let count = |table: &'static str, tenant: String| async move {
        sqlx::query_scalar::<_, i64>(&format!(
            "SELECT COUNT(*) FROM {table} WHERE tenant_id = $1"
        ))
        .bind(tenant)
        .fetch_one(&db.pool)
        .await
        .unwrap()
    };
    assert_eq!(
        count("inventory_items", owner.as_str().to_string()).await,
        1
    );
    assert_eq!(count("source_records", owner.as_str().to_string()).await, 1);
    for table in ["inventory_items", "source_records"] {
        let statement =
            format!("UPDATE {table} SET tenant_id = 'no-such-tenant' WHERE tenant_id = $1");
        let refused = sqlx::query(&statement)
            .bind(owner.as_str())
            .execute(&db.pool)
            .await
            .expect_err(&statement);
        assert_eq!(
            refused.as_database_error().map(|e| e.kind()),
            Some(sqlx::error::ErrorKind::ForeignKeyViolation),
            "{refused}"
        );
        assert_eq!(count(table, owner.as_str().to_string()).await, 1, "{table}");
    }

    sqlx::query("DELETE FROM tenants WHERE id = $1")
        .bind(owner.as_str())
        .execute(&db.pool)
        .await
        .unwrap();
    for table in ["inventory_items", "source_records"] {
        assert_eq!(count(table, owner.as_str().to_string()).await, 0, "{table}");
        assert_eq!(count(table, other.as_str().to_string()).await, 1, "{table}");
    }
    test_db.finish().await;
}
