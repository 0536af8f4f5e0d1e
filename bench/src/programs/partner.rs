//! A partner with 200 customers, each with 500 devices of 60 applications
//! and their findings (3 vulnerable applications per device, 2 CVEs each;
//! 400 CVEs, a tenth in KEV, all EPSS-scored):
//!
//! - `GET /api/v1/partner/overview`: the first read (every customer
//!   counted), then 100 reads: p50 and p99 (goal: p99 within 200 ms); then
//!   100 reads while one customer's triage changes before each (one
//!   customer counted again per read);
//! - `GET /api/v1/partner/cves/{cve_id}` for 100 CVEs: p50 and p99 (goal:
//!   p99 within 100 ms);
//! - SLAs: the partner's default policy changed (every open finding's due
//!   date computed before and after, to say how many moved): seconds and
//!   peak memory; the first `GET /api/v1/sla/customers` and
//!   `/api/v1/partner/overview` after it (every customer's digest built
//!   again); then each read by 50 connections at once, 4 reads each: p50
//!   and p99 (goal: p99 within 200 ms).
//!
//! `cairn-bench partner sqlite|postgres [customers] [devices per customer]`

use std::time::{Duration, Instant};

use cairn_core::ids::TenantId;
use cairn_tests::{Account, Backend, TestApp};
use serde_json::json;

const APPS: usize = 60;
const VULNERABLE_APPS: usize = 3;
const CVES: usize = 400;
const READS: usize = 100;

pub async fn main() -> anyhow::Result<()> {
    let mut args = crate::args().skip(1);
    let backend = match args.next().as_deref() {
        Some("postgres") => Backend::Postgres,
        _ => Backend::Sqlite,
    };
    let customers: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let devices: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(500);
    std::env::set_var("CAIRN_REQUIRE_POSTGRES", "1");
    let app = TestApp::start_with(backend, |s| s.job_workers = 0)
        .await
        .ok_or_else(|| anyhow::anyhow!("the service did not start"))?;
    println!("== {backend:?}: {customers} customers x {devices} devices x {APPS} applications");
    let owner = app.register("bench@msp.example").await;
    let seeding = Instant::now();
    let ids = seed(&app, &owner, customers, devices).await?;
    println!(
        "seeded {} inventory rows and {} findings in {:.0} s",
        customers * devices * APPS,
        customers * devices * VULNERABLE_APPS * 2,
        seeding.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    let first = app.get("/api/v1/partner/overview", &owner.bearer()).await;
    anyhow::ensure!(first.status == 200, "{}", first.text);
    anyhow::ensure!(
        first.body["customers"].as_array().map(Vec::len) == Some(customers),
        "the overview lists every customer"
    );
    println!(
        "overview, first read (every customer counted): {:.0} ms; {} devices, {} open findings",
        started.elapsed().as_secs_f64() * 1000.0,
        first.body["devices"],
        first.body["totals"]["open_findings"]
    );
    let mut times = vec![];
    for _ in 0..READS {
        let started = Instant::now();
        let resp = app
            .get(
                "/api/v1/partner/overview?sort=kev_findings",
                &owner.bearer(),
            )
            .await;
        times.push(started.elapsed());
        anyhow::ensure!(resp.status == 200, "{}", resp.text);
    }
    report("overview", &mut times, 200.0);

    // One customer's triage changes before each read: that customer is
    // counted again, the others are answered from what was kept.
    let mut times = vec![];
    for i in 0..READS {
        let customer = &ids[i % ids.len()];
        let status = if i % 2 == 0 {
            "in_analysis"
        } else {
            "to_evaluate"
        };
        let triage = cairn_vulnerabilities::findings::triage::Change {
            cve_id: &cve(i % CVES),
            vendor: "bench",
            product: "app",
            status,
            justification: None,
            expires_at: None,
            assignee_id: None,
            comment: "bench",
            by: &owner.user_id,
        };
        cairn_vulnerabilities::findings::triage::set(app.db(), customer, &triage).await?;
        let started = Instant::now();
        let resp = app.get("/api/v1/partner/overview", &owner.bearer()).await;
        times.push(started.elapsed());
        anyhow::ensure!(resp.status == 200, "{}", resp.text);
    }
    report("overview after a customer's write", &mut times, 200.0);

    let mut times = vec![];
    let mut exposed = 0;
    for i in 0..READS {
        let id = cve((i * 7) % (VULNERABLE_APPS * 2 * 20));
        let started = Instant::now();
        let resp = app
            .get(&format!("/api/v1/partner/cves/{id}"), &owner.bearer())
            .await;
        times.push(started.elapsed());
        anyhow::ensure!(resp.status == 200, "{}", resp.text);
        exposed = exposed.max(resp.body["devices_exposed"].as_i64().unwrap_or(0));
    }
    report(
        &format!("cves/{{id}} (up to {exposed} devices exposed)"),
        &mut times,
        100.0,
    );
    sla(&app, &owner).await?;
    app.finish().await;
    Ok(())
}

/// The SLA figures: a policy change over every customer, then the
/// standing of each.
async fn sla(app: &TestApp, owner: &Account) -> anyhow::Result<()> {
    cairn_bench::reset_peak_rss();
    let rss_before = cairn_bench::rss_mib();
    let started = Instant::now();
    let policy = json!({"name": "Contract", "rules": [
        {"severities": ["critical"], "days": 7}, {"kev": true, "days": 14}, {"days": 45}]});
    let changed = app
        .call(
            reqwest::Method::PUT,
            "/api/v1/sla/policies/default",
            &owner.bearer(),
            Some(policy),
        )
        .await;
    anyhow::ensure!(changed.status == 200, "{}", changed.text);
    println!(
        "sla policy change: {} open due dates moved in {:.1} s; peak memory {:.0} MiB (resident before {rss_before:.0} MiB)",
        changed.body["moved"],
        started.elapsed().as_secs_f64(),
        cairn_bench::peak_rss_mib()
    );
    // The first reads after the change build each customer's digest
    // again; the others are answered from what was kept.
    for path in ["/api/v1/sla/customers", "/api/v1/partner/overview"] {
        let started = Instant::now();
        let resp = app.get(path, &owner.bearer()).await;
        anyhow::ensure!(resp.status == 200, "{}", resp.text);
        println!(
            "{path}, first read after the change: {:.0} ms",
            started.elapsed().as_secs_f64() * 1000.0
        );
    }
    for path in [
        "/api/v1/sla/customers",
        "/api/v1/partner/overview?sort=overdue",
    ] {
        let (mut times, overdue) = concurrently(app, owner, path, CONNECTIONS, 4).await?;
        report(
            &format!("{path} x{CONNECTIONS} ({overdue} overdue)"),
            &mut times,
            200.0,
        );
    }
    Ok(())
}

/// Connections reading at once in the SLA reads.
const CONNECTIONS: usize = 50;

/// `connections` clients reading `path` `reads` times each, all at once:
/// every read's time, and the overdue findings the last answer counted.
async fn concurrently(
    app: &TestApp,
    owner: &Account,
    path: &str,
    connections: usize,
    reads: usize,
) -> anyhow::Result<(Vec<Duration>, i64)> {
    let client = |_| async {
        let mut times = vec![];
        let mut overdue = 0;
        for _ in 0..reads {
            let started = Instant::now();
            let resp = app.get(path, &owner.bearer()).await;
            times.push(started.elapsed());
            anyhow::ensure!(resp.status == 200, "{}", resp.text);
            let rows = resp.body.get("customers").unwrap_or(&resp.body);
            overdue = rows.as_array().map_or(0, |customers| {
                customers
                    .iter()
                    .map(|c| {
                        let standing = c.get("standing").or_else(|| c.get("sla"));
                        standing.map_or(0, |s| s["overdue"].as_i64().unwrap_or(0))
                    })
                    .sum::<i64>()
            });
        }
        Ok((times, overdue))
    };
    let mut all = vec![];
    let mut overdue = 0;
    for result in futures::future::join_all((0..connections).map(client)).await {
        let (times, seen) = result?;
        all.extend(times);
        overdue = seen;
    }
    Ok((all, overdue))
}

fn report(name: &str, times: &mut [Duration], goal_ms: f64) {
    let p50 = cairn_bench::percentile_ms(times, 0.5);
    let p99 = cairn_bench::percentile_ms(times, 0.99);
    println!("{name:<45} p50 {p50:7.1} ms   p99 {p99:7.1} ms   (goal: p99 within {goal_ms} ms)");
}

fn cve(i: usize) -> String {
    format!("CVE-2026-{:05}", 20000 + i)
}

/// The customers, their inventory on the host's write path and a rollup
/// each; CVEs in the reference store; findings written in bulk as a scan
/// leaves them. Returns the customers' tenants.
async fn seed(
    app: &TestApp,
    owner: &Account,
    customers: usize,
    devices: usize,
) -> anyhow::Result<Vec<TenantId>> {
    let db = app.db();
    let now = cairn_core::db::now_ms();
    let mut tx = db.pool.begin().await?;
    let severities = ["CRITICAL", "HIGH", "MEDIUM", "LOW"];
    for c in 0..CVES {
        sqlx::query(
            "INSERT INTO vuln_cves (id, description, status, published, last_modified, severity, \
             cvss_score, metrics, cwe_ids, refs, has_nvd_config, source, imported_at) \
             VALUES ($1, 'bench', 'Analyzed', $2, $2, $3, 9.0, '{}', '[]', '[]', 1, 'nvd', $2)",
        )
        .bind(cve(c))
        .bind(now)
        .bind(severities[c % 4])
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "INSERT INTO vuln_epss (cve_id, score, percentile, score_date) VALUES ($1, $2, $2, '2026-11-24')",
        )
        .bind(cve(c))
        .bind((c % 100) as f64 / 100.0)
        .execute(&mut *tx)
        .await?;
        if c % 10 == 0 {
            sqlx::query(
                "INSERT INTO vuln_kev (cve_id, vendor_project, product, name, date_added, due_date, \
                 ransomware_use, required_action) VALUES ($1, 'v', 'p', 'n', '2026-01-01', '2026-02-01', 'Unknown', 'patch')",
            )
            .bind(cve(c))
            .execute(&mut *tx)
            .await?;
        }
    }
    tx.commit().await?;
    let mut ids = vec![];
    for n in 0..customers {
        let created = app
            .post(
                "/api/v1/partner/customers",
                &owner.bearer(),
                json!({"name": format!("Customer {n:03}")}),
            )
            .await;
        anyhow::ensure!(created.status == 201, "{}", created.text);
        let tenant = TenantId(created.body["id"].as_str().unwrap().to_string());
        let rows = (0..devices).flat_map(|d| {
            (0..APPS).map(move |a| {
                cairn_bench::row(
                    format!("C{n:03}-DEV-{d:04}"),
                    format!("App {a:02}"),
                    "Bench".into(),
                    format!("1.{}", (d + a) % 3),
                    "windows",
                )
            })
        });
        cairn_bench::write_pages(db, &tenant, "bench", rows).await?;
        cairn_inventory::rollup::rebuild_until_current(
            db,
            &tenant,
            cairn_inventory::rollup::Mode::Incremental,
        )
        .await
        .map_err(|e| anyhow::anyhow!("rollup: {e:?}"))?;
        // Each customer's vulnerable applications carry CVEs of its own
        // slice of the store, so the exposure of one CVE spans some
        // customers, not all.
        let findings: Vec<serde_json::Value> = (0..devices)
            .flat_map(|d| {
                (0..VULNERABLE_APPS).flat_map(move |a| {
                    (0..2).map(move |k| {
                        let c = ((n % 20) * VULNERABLE_APPS * 2 + a * 2 + k) % CVES;
                        json!([
                            format!("C{n:03}-DEV-{d:04}"),
                            format!("App {a:02}"),
                            format!("1.{}", (d + a) % 3),
                            cve(c)
                        ])
                    })
                })
            })
            .collect();
        let rows = cairn_core::db::json_array_rows(db.backend, 2);
        let mut tx = db.pool.begin().await?;
        sqlx::query(&format!(
            "INSERT INTO vuln_findings (tenant_id, device_name, application_name, version, \
             cve_id, vendor, product, source, criteria, version_range, fix_version, status, \
             first_seen, last_seen, fixed_at) \
             SELECT $1, value->>0, value->>1, value->>2, value->>3, 'bench', 'app', 'nvd', 'cpe', \
             '< 2.0', '2.0', 'open', $3, $3, NULL FROM {rows} WHERE true ON CONFLICT DO NOTHING"
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(&findings)?)
        .bind(now - 20 * 86_400_000)
        .execute(&mut *tx)
        .await?;
        cairn_vulnerabilities::findings::posture::count_write(&mut tx, db, &tenant).await?;
        cairn_vulnerabilities::findings::posture::commit(tx, db, &tenant).await?;
        ids.push(tenant);
        if (n + 1) % 50 == 0 {
            println!("  {} customers seeded", n + 1);
        }
    }
    if db.backend == cairn_core::db::Backend::Postgres {
        sqlx::query("ANALYZE").execute(&db.pool).await?;
    }
    Ok(ids)
}
