//! What a partner reads across customers, on a real database: each
//! tenant's posture from its findings (table-driven), kept until the
//! tenant's findings are written again, and which customers a partner
//! user reaches.

use cairn_core::db::now_ms;
use cairn_core::ids::TenantId;
use cairn_platform::auth::storage::UserRow;
use cairn_platform::auth::Role;
use cairn_platform::partner::{self, storage, CustomerScope};
use cairn_tests::{backend_tests, Backend, TestDb};
use cairn_vulnerabilities::findings::posture::{self, Posture};

backend_tests!(
    a_tenants_posture_counts_its_open_findings,
    kept_postures_move_with_every_counted_write,
    partner_users_reach_their_customers_only,
);

const DAY: i64 = 86_400_000;

/// (CVE, severity, in KEV, EPSS score)
const CVES: [(&str, &str, bool, Option<f64>); 4] = [
    ("CVE-2026-90001", "CRITICAL", true, Some(0.9)),
    ("CVE-2026-90002", "HIGH", false, Some(0.05)),
    ("CVE-2026-90003", "MEDIUM", true, None),
    ("CVE-2026-90004", "LOW", false, Some(0.1)),
];

async fn reference(db: &TestDb) {
    let now = now_ms();
    for (id, severity, kev, epss) in CVES {
        sqlx::query(
            "INSERT INTO vuln_cves (id, description, status, published, last_modified, severity, \
             cvss_score, metrics, cwe_ids, refs, has_nvd_config, source, imported_at) \
             VALUES ($1, 'test', 'Analyzed', $2, $2, $3, 5.0, '{}', '[]', '[]', 1, 'nvd', $2)",
        )
        .bind(id)
        .bind(now)
        .bind(severity)
        .execute(&db.db.pool)
        .await
        .unwrap();
        if kev {
            sqlx::query(
                "INSERT INTO vuln_kev (cve_id, vendor_project, product, name, date_added, due_date, \
                 ransomware_use, required_action) VALUES ($1, 'v', 'p', 'n', '2026-01-01', '2026-02-01', 'Unknown', 'patch')",
            )
            .bind(id)
            .execute(&db.db.pool)
            .await
            .unwrap();
        }
        if let Some(score) = epss {
            sqlx::query(
                "INSERT INTO vuln_epss (cve_id, score, percentile, score_date) VALUES ($1, $2, $2, '2026-11-24')",
            )
            .bind(id)
            .bind(score)
            .execute(&db.db.pool)
            .await
            .unwrap();
        }
    }
}

/// A finding of `cve` on `device`, first seen `age_days` ago, open or
/// fixed; written with the count a scan makes.
async fn finding(
    db: &TestDb,
    tenant: &TenantId,
    device: &str,
    cve: &str,
    age_days: i64,
    open: bool,
) {
    let first_seen = now_ms() - age_days * DAY;
    let mut tx = db.db.pool.begin().await.unwrap();
    sqlx::query(
        "INSERT INTO vuln_findings (tenant_id, device_name, application_name, version, cve_id, \
         vendor, product, source, criteria, version_range, fix_version, status, first_seen, \
         last_seen, fixed_at) VALUES ($1, $2, 'App', '1.0', $3, 'acme', 'app', 'nvd', 'cpe', \
         '< 2.0', '2.0', $4, $5, $5, $6)",
    )
    .bind(tenant.as_str())
    .bind(device)
    .bind(cve)
    .bind(if open { "open" } else { "fixed" })
    .bind(first_seen)
    .bind((!open).then(now_ms))
    .execute(&mut *tx)
    .await
    .unwrap();
    posture::count_write(&mut tx, &db.db, tenant).await.unwrap();
    posture::commit(tx, &db.db, tenant).await.unwrap();
}

async fn a_tenants_posture_counts_its_open_findings(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    reference(&db).await;
    // (findings as (device, CVE index, age in days, open), expected
    // (open, critical, high, KEV, high EPSS, oldest open KEV age)).
    type Case = (
        Vec<(&'static str, usize, i64, bool)>,
        (i64, i64, i64, i64, i64, Option<i64>),
    );
    let cases: Vec<Case> = vec![
        (vec![], (0, 0, 0, 0, 0, None)),
        (vec![("A", 0, 3, true)], (1, 1, 0, 1, 1, Some(3))),
        // Fixed findings count nowhere.
        (
            vec![("A", 0, 3, false), ("A", 1, 1, true)],
            (1, 0, 1, 0, 0, None),
        ),
        // The oldest open KEV finding of two KEV CVEs; EPSS 0.1 is high,
        // 0.05 and none are not.
        (
            vec![
                ("A", 0, 2, true),
                ("B", 2, 40, true),
                ("B", 3, 1, true),
                ("C", 1, 9, true),
            ],
            (4, 1, 1, 2, 2, Some(40)),
        ),
        // One CVE on many devices counts per device.
        (
            vec![("A", 0, 5, true), ("B", 0, 6, true), ("C", 0, 7, true)],
            (3, 3, 0, 3, 3, Some(7)),
        ),
    ];
    for (i, (findings, expected)) in cases.into_iter().enumerate() {
        let tenant = db.tenant(&format!("case {i}")).await;
        for (device, cve, age, open) in &findings {
            finding(&db, &tenant, device, CVES[*cve].0, *age, *open).await;
        }
        let got = posture::count(&db.db, &tenant).await.unwrap();
        let oldest = got.oldest_open_kev_since.map(posture::age_days);
        assert_eq!(
            (
                got.open_findings,
                got.critical,
                got.high,
                got.kev_findings,
                got.high_epss_findings,
                oldest
            ),
            expected,
            "case {i}: {findings:?}"
        );
    }
    db.finish().await;
}

async fn kept_postures_move_with_every_counted_write(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    reference(&db).await;
    let a = db.tenant("a").await;
    let b = db.tenant("b").await;
    finding(&db, &a, "A1", CVES[0].0, 1, true).await;
    let both = [a.clone(), b.clone()];
    let first = posture::postures(&db.db, &both).await.unwrap();
    assert_eq!(first[a.as_str()].open_findings, 1);
    assert_eq!(first[b.as_str()], Posture::default());
    // A counted write (a scan's, a triage change's) is seen at once, for
    // that tenant only.
    finding(&db, &b, "B1", CVES[1].0, 1, true).await;
    let second = posture::postures(&db.db, &both).await.unwrap();
    assert_eq!(second[b.as_str()].high, 1);
    assert_eq!(second[a.as_str()], first[a.as_str()]);
    // A triage change counts itself: risk accepted takes the finding out.
    cairn_tests::accept_risk(&db.db, &a, CVES[0].0, 30).await;
    let third = posture::postures(&db.db, &both).await.unwrap();
    assert_eq!(third[a.as_str()].open_findings, 0, "{third:?}");
    // A row written without the count is not seen until a counted write:
    // kept figures trust the counter (which is why every writer counts).
    sqlx::query("UPDATE vuln_findings SET status = 'fixed', fixed_at = $1 WHERE tenant_id = $2")
        .bind(now_ms())
        .bind(b.as_str())
        .execute(&db.db.pool)
        .await
        .unwrap();
    assert_eq!(
        posture::postures(&db.db, &both).await.unwrap()[b.as_str()].high,
        1
    );
    let mut tx = db.db.pool.begin().await.unwrap();
    posture::count_write(&mut tx, &db.db, &b).await.unwrap();
    posture::commit(tx, &db.db, &b).await.unwrap();
    assert_eq!(
        posture::postures(&db.db, &both).await.unwrap()[b.as_str()].high,
        0
    );
    db.finish().await;
}

/// A user of `partner` with `role`.
async fn user(db: &TestDb, partner: &TenantId, email: &str, role: Role) -> UserRow {
    cairn_platform::auth::storage::insert_user(
        &db.db.pool,
        partner.as_str(),
        cairn_platform::auth::storage::NewUser {
            email,
            name: None,
            password_hash: "x",
            role,
        },
    )
    .await
    .unwrap()
}

async fn partner_users_reach_their_customers_only(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let msp = db.tenant("msp").await;
    let other = db.tenant("other msp").await;
    let x = storage::create_customer(&db.db, &msp, "X", "UTC")
        .await
        .unwrap()
        .id;
    let y = storage::create_customer(&db.db, &msp, "Y", "UTC")
        .await
        .unwrap()
        .id;
    let z = storage::create_customer(&db.db, &msp, "Z", "UTC")
        .await
        .unwrap()
        .id;
    let elsewhere = storage::create_customer(&db.db, &other, "E", "UTC")
        .await
        .unwrap()
        .id;
    let group = uuid::Uuid::now_v7().to_string();
    storage::save_group(
        &db.db,
        &msp,
        &group,
        true,
        storage::GroupChanges {
            name: Some("Contract"),
            description: None,
            customer_ids: Some(&[y.clone(), elsewhere.clone()]),
        },
    )
    .await
    .unwrap();
    let admin = user(&db, &msp, "admin@msp", Role::PartnerAdmin).await;
    let analyst = user(&db, &msp, "analyst@msp", Role::PartnerAnalyst).await;
    let member = user(&db, &msp, "member@msp", Role::Member).await;
    storage::set_analyst_access(
        &db.db,
        &msp,
        &analyst.id,
        &storage::AnalystAccess {
            all_customers: false,
            customer_ids: vec![x.clone(), elsewhere.clone()],
            group_ids: vec![group.clone()],
        },
    )
    .await
    .unwrap();
    // (user, customer, role it acts with)
    let cases = [
        (&admin, &x, Some(Role::Admin)),
        (&admin, &z, Some(Role::Admin)),
        (&admin, &elsewhere, None),
        (&analyst, &x, Some(Role::Member)),
        // Through the group.
        (&analyst, &y, Some(Role::Member)),
        (&analyst, &z, None),
        // Listed, and in the group, but another partner's: the group
        // never took it in.
        (&analyst, &elsewhere, None),
        (&member, &x, None),
    ];
    // The user as acting_role reads them: their tenant, id and role.
    let acting = async |user: &UserRow, customer: &str| {
        let tenant = TenantId(user.tenant_id.clone());
        partner::acting_role(&db.db, (&tenant, user.id.as_str(), user.role()), customer)
            .await
            .unwrap()
    };
    for (who, customer, expected) in cases {
        let got = acting(who, customer).await;
        assert_eq!(got, expected, "{} in {customer}", who.email);
    }
    let scope = partner::scope_of(&db.db, &msp, &analyst.id, Role::PartnerAnalyst)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        scope,
        CustomerScope::Only([x.clone(), y.clone()].into_iter().collect())
    );
    // Removing Y from the partner takes it from the group and the reach.
    assert!(storage::remove_customer(&db.db, &msp, &y).await.unwrap());
    assert_eq!(acting(&analyst, &y).await, None);
    assert_eq!(acting(&admin, &y).await, None);
    assert!(!storage::remove_customer(&db.db, &msp, &elsewhere)
        .await
        .unwrap());
    db.finish().await;
}
