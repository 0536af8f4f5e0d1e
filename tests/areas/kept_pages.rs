//! The applications list's default pages, kept in memory between rollups:
//! a page is answered again without a read until a write of the rolled-up
//! rows is counted (every rollup transaction counts itself), at once in the
//! writing process and, on PostgreSQL, once another process's notification
//! arrives; nothing is kept on PostgreSQL without a listener.

use std::time::Duration;

use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_inventory::applications::{self, ApplicationRow};
use cairn_inventory::search::{self, Page, SearchRequest};
use cairn_tests::inventory::{item, rollup_write};
use cairn_tests::{backend_tests, wait_for, Backend, TestDb};
use tokio_util::sync::CancellationToken;

backend_tests!(kept_pages_move_with_every_counted_rollup_write);

/// The names on the default page `skip`, `limit` of `tenant`'s
/// applications, and the total.
async fn page(db: &Db, tenant: &TenantId, skip: i64, limit: i64) -> (Vec<String>, i64) {
    let request = SearchRequest {
        skip: Some(skip),
        limit: Some(limit),
        ..SearchRequest::default()
    };
    let page: Page<ApplicationRow> = search::run(db, tenant, &applications::table(), &request)
        .await
        .unwrap();
    let names = page
        .items
        .iter()
        .map(|row| row.name().to_string())
        .collect();
    (names, page.total)
}

/// Renames `from` to `to` in `tenant`'s applications: through a rollup
/// transaction of `db` when `counted`, else by plain SQL, as a hand edit
/// that nothing counts.
async fn rename(db: &Db, tenant: &TenantId, from: &str, to: &str, counted: bool) {
    let sql =
        format!("UPDATE applications SET name = '{to}' WHERE tenant_id = $1 AND name = '{from}'");
    if counted {
        rollup_write(db, tenant, &sql).await;
    } else {
        sqlx::query(&sql)
            .bind(tenant.as_str())
            .execute(&db.pool)
            .await
            .unwrap();
    }
}

fn names(of: &[&str]) -> Vec<String> {
    of.iter().map(|n| n.to_string()).collect()
}

async fn kept_pages_move_with_every_counted_rollup_write(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    // Three applications on 3, 2 and 1 devices, for each of two tenants.
    let mut rows = vec![];
    for (app, devices) in [("Alpha", 3), ("Beta", 2), ("Gamma", 1)] {
        for d in 0..devices {
            rows.push(item(&format!("D{d}"), app, "Vendor", "1.0", "windows"));
        }
    }
    let a = db.tenant("a").await;
    let b = db.tenant("b").await;
    for tenant in [&a, &b] {
        db.seed(tenant, "rmm", &rows).await;
        db.rebuild(tenant).await;
    }
    let stop = CancellationToken::new();
    if backend == Backend::Postgres {
        // Without its listener a process keeps nothing: a hand edit is
        // seen by the next page.
        page(&db.db, &a, 0, 2).await;
        rename(&db.db, &a, "Alpha", "Alpha 2", false).await;
        assert_eq!(page(&db.db, &a, 0, 2).await.0, names(&["Alpha 2", "Beta"]));
        rename(&db.db, &a, "Alpha 2", "Alpha", false).await;
        db.listen_for_changes(&stop).await;
    }
    let first = (names(&["Alpha", "Beta"]), 3);
    assert_eq!(page(&db.db, &a, 0, 2).await, first);

    // Kept: a hand edit, which no rollup counted, is not read again, by
    // this page or another cut from the rows read with it.
    rename(&db.db, &a, "Beta", "Beta (edited)", false).await;
    assert_eq!(page(&db.db, &a, 0, 2).await, first, "the page was kept");
    assert_eq!(page(&db.db, &a, 1, 1).await, (names(&["Beta"]), 3));

    // Another tenant's rollup write leaves the page kept.
    rename(&db.db, &b, "Gamma", "Gamma (b)", true).await;
    assert_eq!(page(&db.db, &a, 0, 2).await, first);
    assert_eq!(
        page(&db.db, &b, 1, 2).await.0,
        names(&["Beta", "Gamma (b)"]),
        "the other tenant's pages are its own"
    );

    // A counted rollup write of this process is seen at once, with the
    // hand edit before it.
    rename(&db.db, &a, "Alpha", "Alpha (rolled up)", true).await;
    assert_eq!(
        page(&db.db, &a, 0, 2).await,
        (names(&["Alpha (rolled up)", "Beta (edited)"]), 3)
    );

    // A real rebuild after a sync: a fourth application on every device.
    let more: Vec<_> = (0..4)
        .map(|d| item(&format!("D{d}"), "Delta", "Vendor", "1.0", "windows"))
        .collect();
    db.seed(&a, "rmm", &more).await;
    db.rebuild_incremental(&a).await;
    let (top, total) = page(&db.db, &a, 0, 2).await;
    assert_eq!((top[0].as_str(), total), ("Delta", 4));

    if backend == Backend::Postgres {
        // Another process's rollup write: this one hears of it only
        // through PostgreSQL, and its page moves once that arrives.
        let other = Db::connect(db.url(), 2).await.unwrap();
        rename(&other, &a, "Delta", "Delta (elsewhere)", true).await;
        wait_for(
            "another process's write to reach the kept page",
            Duration::from_secs(10),
            async || page(&db.db, &a, 0, 2).await.0[0] == "Delta (elsewhere)",
        )
        .await;
        other.close().await;
    }
    stop.cancel();
    db.finish().await;
}
