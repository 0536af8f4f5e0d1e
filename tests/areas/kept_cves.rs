//! A tenant's open CVEs by application, which every applications page
//! reads, kept in memory until its findings are written again: each
//! counted write moves it at once in the writing process, another
//! process's write moves it once PostgreSQL's notification arrives, and
//! nothing is kept on PostgreSQL without a listener.

use std::sync::Arc;
use std::time::Duration;

use cairn_core::db::{now_ms, Db};
use cairn_core::ids::TenantId;
use cairn_tests::{backend_tests, wait_for, Backend, TestDb};
use cairn_vulnerabilities::findings::posture;
use cairn_vulnerabilities::findings::views::open_cves_by_application;
use tokio_util::sync::CancellationToken;

backend_tests!(kept_open_cves_move_with_every_counted_write);

/// A finding of `cve` in `application` on one device, open, written by
/// `db` with the count a scan makes, told to its own process after the
/// commit as a scan does.
async fn finding(db: &Db, tenant: &TenantId, application: &str, cve: &str) {
    let mut tx = db.pool.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO vuln_findings (tenant_id, device_name, application_name, version, cve_id, \
         vendor, product, source, criteria, version_range, fix_version, status, first_seen, \
         last_seen, fixed_at) VALUES ($1, 'PC-1', $2, '1.0', $3, 'acme', 'app', 'nvd', 'cpe', \
         '< 2.0', '2.0', 'open', $4, $4, NULL)",
    )
    .bind(tenant.as_str())
    .bind(application)
    .bind(cve)
    .bind(now_ms())
    .execute(&mut *tx)
    .await
    .unwrap();
    posture::count_write(&mut tx, db, tenant).await.unwrap();
    posture::commit(tx, db, tenant).await.unwrap();
}

/// The answer as sorted (application, CVE) pairs.
async fn open(db: &Db, tenant: &TenantId) -> Vec<(String, String)> {
    let answer = open_cves_by_application(db, tenant).await.unwrap();
    let mut pairs: Vec<(String, String)> = answer
        .iter()
        .flat_map(|(app, cves)| cves.iter().map(move |cve| (app.clone(), cve.clone())))
        .collect();
    pairs.sort();
    pairs
}

fn pairs(of: &[(&str, &str)]) -> Vec<(String, String)> {
    of.iter()
        .map(|(a, c)| (a.to_string(), c.to_string()))
        .collect()
}

async fn kept_open_cves_move_with_every_counted_write(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let stop = CancellationToken::new();
    if backend == Backend::Postgres {
        // Without its listener a process keeps nothing: it cannot see the
        // other processes' writes.
        let t = db.tenant("unlistened").await;
        let first = open_cves_by_application(&db.db, &t).await.unwrap();
        let second = open_cves_by_application(&db.db, &t).await.unwrap();
        assert!(!Arc::ptr_eq(&first, &second), "kept without a listener");
        db.listen_for_changes(&stop).await;
    }
    let a = db.tenant("a").await;
    let b = db.tenant("b").await;
    finding(&db.db, &a, "Editor", "CVE-2026-0001").await;
    assert_eq!(
        open(&db.db, &a).await,
        pairs(&[("Editor", "CVE-2026-0001")])
    );

    // Kept: the same answer twice, and another tenant's write leaves it.
    let kept = open_cves_by_application(&db.db, &a).await.unwrap();
    finding(&db.db, &b, "Browser", "CVE-2026-0002").await;
    assert!(Arc::ptr_eq(
        &kept,
        &open_cves_by_application(&db.db, &a).await.unwrap()
    ));
    assert_eq!(
        open(&db.db, &b).await,
        pairs(&[("Browser", "CVE-2026-0002")])
    );

    // A counted write of this process is seen at once.
    finding(&db.db, &a, "Browser", "CVE-2026-0003").await;
    assert_eq!(
        open(&db.db, &a).await,
        pairs(&[("Browser", "CVE-2026-0003"), ("Editor", "CVE-2026-0001")])
    );

    // A triage change counts itself: the accepted risk leaves the answer.
    cairn_tests::accept_risk(&db.db, &a, "CVE-2026-0001", 1).await;
    assert_eq!(
        open(&db.db, &a).await,
        pairs(&[("Browser", "CVE-2026-0003")])
    );

    if backend == Backend::Postgres {
        // Another process's counted write: this one never hears of it but
        // through PostgreSQL, and its answer moves once that arrives.
        let other = Db::connect(db.url(), 2).await.unwrap();
        finding(&other, &a, "Mail", "CVE-2026-0004").await;
        wait_for(
            "another process's write to reach the kept answer",
            Duration::from_secs(10),
            async || {
                open(&db.db, &a)
                    .await
                    .contains(&pairs(&[("Mail", "CVE-2026-0004")])[0])
            },
        )
        .await;
        other.close().await;
    }
    stop.cancel();
    db.finish().await;
}
