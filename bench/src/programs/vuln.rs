//! The vulnerability goals on one backend, in process through the
//! library's own import and scan:
//! - import a real AlmaLinux release's OSV advisories (AlmaLinux 9's
//!   `all.zip` as published, vendored in `tests/fixtures/osv/almalinux`):
//!   records read, loaded, refused by reason, seconds and peak memory;
//! - import a whole Debian release's OSV advisories (40,000 generated
//!   records, each for two releases, in one all.zip as Debian publishes
//!   them): seconds, advisories/s, peak memory (measured first, so the peak
//!   is the import's own);
//! - import 250,000 generated CVE records in NVD 2.0 shape (one feed file,
//!   gzip): seconds, CVEs/s, peak memory;
//! - a full match of 10,000 devices with 150 applications each against
//!   them;
//! - an incremental re-match after 1 % of the inventory changed version;
//! - an incremental re-match after NVD revised every CVE of 4 of the 400
//!   products the fleet runs (1 %).
//!
//! Usage: cairn-bench vuln sqlite|postgres [cves]

use std::io::Write;
use std::time::Instant;

use cairn_core::db::fence::NoFence;
use cairn_core::ids::TenantId;
use cairn_integrations::storage::upsert_rows;
use cairn_plugins::{InventoryRow, MappedRow};
use cairn_vulnerabilities::matching::identify::Translations;
use cairn_vulnerabilities::scan;
use serde_json::json;

const DEVICES: usize = 10_000;
const APPS_PER_DEVICE: usize = 150;
/// Distinct applications in the fleet; every fifth is a product with CVEs.
const APP_POOL: usize = 2_000;
/// Products with CVEs: 250,000 CVEs spread over this many.
const PRODUCTS: usize = 50_000;

/// A small deterministic generator (no dependency, same figures each run).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Application `a` of the pool: its name, publisher and CPE key. Products
/// with CVEs are the ones whose index is a multiple of 5.
fn application(a: usize) -> (String, String) {
    (
        format!("Prod{a:05} (x64)"),
        format!("Vendor{:04} Inc.", a % 997),
    )
}

fn version(minor: usize) -> String {
    format!("3.{minor}.{}", minor * 7 % 10)
}

/// A feed of the CVEs `ids`, last modified at `modified`; `seed` draws
/// their fixed versions.
fn write_feed(
    path: &std::path::Path,
    ids: &[usize],
    modified: &str,
    seed: u64,
) -> anyhow::Result<()> {
    let cves = ids.len();
    let file = std::fs::File::create(path)?;
    let mut out =
        flate2::write::GzEncoder::new(std::io::BufWriter::new(file), flate2::Compression::fast());
    write!(
        out,
        r#"{{"resultsPerPage":{cves},"startIndex":0,"totalResults":{cves},"format":"NVD_CVE","version":"2.0","vulnerabilities":["#
    )?;
    let mut rng = Lcg(seed);
    for (n, &i) in ids.iter().enumerate() {
        // The pool's CVE products come first; the rest are products no
        // device has, as most of NVD is for any one fleet.
        let product = i % PRODUCTS;
        let app = product * 5;
        let (vendor, name) = if app < APP_POOL {
            (format!("vendor{:04}", app % 997), format!("prod{app:05}"))
        } else {
            (
                format!("othervendor{}", product % 3000),
                format!("other{product}"),
            )
        };
        let fix = version(1 + rng.below(9));
        let record = json!({"cve": {
            "id": format!("CVE-2030-{:06}", i),
            "sourceIdentifier": "cve@mitre.org",
            "published": "2030-01-01T00:00:00.000",
            "lastModified": modified,
            "vulnStatus": "Analyzed",
            "descriptions": [{"lang": "en", "value": format!("Generated vulnerability {i} in {name} before {fix}.")}],
            "metrics": {"cvssMetricV31": [{"source": "nvd@nist.gov", "type": "Primary", "cvssData": {
                "version": "3.1", "vectorString": "CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:H/I:H/A:H",
                "baseScore": 4.0 + (i % 60) as f64 / 10.0, "baseSeverity": "HIGH"}}]},
            "weaknesses": [{"source": "nvd@nist.gov", "type": "Primary", "description": [{"lang": "en", "value": "CWE-787"}]}],
            "configurations": [{"nodes": [{"operator": "OR", "negate": false, "cpeMatch": [
                {"vulnerable": true, "criteria": format!("cpe:2.3:a:{vendor}:{name}:*:*:*:*:*:*:*:*"),
                 "versionStartIncluding": "3.0.0", "versionEndExcluding": fix,
                 "matchCriteriaId": format!("{:08X}-0000-0000-0000-000000000000", i)},
                {"vulnerable": true, "criteria": format!("cpe:2.3:a:{vendor}:{name}:*:*:*:*:*:android:*:*"),
                 "versionEndExcluding": "9.0", "matchCriteriaId": format!("{:08X}-0000-0000-0000-000000000001", i)}
            ]}]}],
            "references": [{"url": format!("https://example.com/advisories/{i}"), "source": "cve@mitre.org"}]
        }});
        if n > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut out, &record)?;
    }
    out.write_all(b"]}")?;
    out.finish()?.flush()?;
    Ok(())
}

/// Advisories in a Debian release's OSV export (DEBIAN-CVE and DSA/DLA
/// records; bookworm had about this many).
const OSV_ADVISORIES: usize = 40_000;

/// An all.zip of `count` advisories: each a CVE of one of 5,000 source
/// packages, fixed in Debian 12 and still open in Debian 11 for a tenth.
fn write_osv_zip(path: &std::path::Path, count: usize) -> anyhow::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut zip = zip::ZipWriter::new(std::io::BufWriter::new(file));
    let options = zip::write::SimpleFileOptions::default();
    let mut rng = Lcg(5);
    for i in 0..count {
        let package = format!("pkg{:04}", rng.below(5_000));
        let fixed = format!(
            "{}.{}.{}-{}+deb12u{}",
            rng.below(9) + 1,
            rng.below(30),
            rng.below(20),
            rng.below(5) + 1,
            rng.below(9) + 1
        );
        let bullseye = if i % 10 == 0 {
            json!([{"introduced": "0"}])
        } else {
            json!([{"introduced": "0"}, {"fixed": format!("{}+deb11u1", fixed.replace("+deb12u", "~"))}])
        };
        let record = json!({
            "schema_version": "1.6.0",
            "id": format!("DEBIAN-CVE-2030-{i:06}"),
            "modified": "2030-01-01T00:00:00Z",
            "upstream": [format!("CVE-2030-{i:06}")],
            "details": "A generated advisory for the benchmark.",
            "affected": [
                {"package": {"ecosystem": "Debian:12", "name": package},
                 "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": fixed}]}]},
                {"package": {"ecosystem": "Debian:11", "name": package},
                 "ranges": [{"type": "ECOSYSTEM", "events": bullseye}]}
            ]
        });
        zip.start_file(format!("DEBIAN-CVE-2030-{i:06}.json"), options)?;
        zip.write_all(record.to_string().as_bytes())?;
    }
    zip.finish()?;
    Ok(())
}

fn row(device: usize, app: usize, minor: usize) -> MappedRow {
    let (name, publisher) = application(app);
    MappedRow::Inventory(InventoryRow {
        device_name: Some(format!("WS-{device:05}").into()),
        device_id: None,
        os_platform: Some("windows".into()),
        os_version: Some("10.0.19045".into()),
        os_name: None,
        os_build: None,
        user_email: None,
        user_name: None,
        application_name: Some(name.into()),
        vendor: None,
        version: Some(version(minor).into()),
        publisher: Some(publisher.into()),
        client_id: None,
        group_ids: vec![],
    })
}

/// Each device's applications and versions, deterministic.
fn fleet() -> Vec<Vec<(usize, usize)>> {
    let mut rng = Lcg(42);
    (0..DEVICES)
        .map(|_| {
            let mut apps: Vec<(usize, usize)> = Vec::with_capacity(APPS_PER_DEVICE);
            while apps.len() < APPS_PER_DEVICE {
                let app = rng.below(APP_POOL);
                if !apps.iter().any(|(a, _)| *a == app) {
                    apps.push((app, rng.below(10)));
                }
            }
            apps
        })
        .collect()
}

async fn write_fleet(
    db: &cairn_core::db::Db,
    tenant: &TenantId,
    run: &str,
    fleet: &[Vec<(usize, usize)>],
) -> anyhow::Result<()> {
    let mut page = Vec::with_capacity(5000);
    let mut pages = 0;
    for (device, apps) in fleet.iter().enumerate() {
        for (app, minor) in apps {
            page.push(row(device, *app, *minor));
            if page.len() == 5000 {
                let mut tx = db.pool.begin().await?;
                upsert_rows(&mut tx, tenant, "rmm", (run, pages), &page).await?;
                tx.commit().await?;
                page.clear();
                pages += 1;
            }
        }
    }
    let mut tx = db.pool.begin().await?;
    upsert_rows(&mut tx, tenant, "rmm", (run, pages), &page).await?;
    tx.commit().await?;
    cairn_inventory::seen::prune_unseen(db, &NoFence, tenant, "rmm", run).await?;
    Ok(())
}

pub async fn main() -> anyhow::Result<()> {
    let mut args = crate::args().skip(1);
    let backend = args.next().unwrap_or_else(|| "sqlite".into());
    let cves: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(250_000);
    let (db, url) = cairn_bench::fresh_database(&backend).await?;
    println!("== cairn vulnerability benchmark: {backend}");

    let dir = std::env::temp_dir().join(format!("cairn-cairn-bench vuln-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    let alma = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/osv/almalinux/almalinux9-all.zip");
    let started = Instant::now();
    let reports =
        cairn_vulnerabilities::reference::import::import_paths(&db, std::slice::from_ref(&alma))
            .await?;
    let seconds = started.elapsed().as_secs_f64();
    let (alma_stored, alma_ranges) = cairn_vulnerabilities::reference::osv::counts(&db).await?;
    for report in &reports {
        let refused: Vec<String> = report
            .skipped_by_reason
            .iter()
            .map(|(why, count)| format!("{count} {why}"))
            .collect();
        println!(
            "OSV import (AlmaLinux 9, real): {} {} records read, {} loaded, {} refused ({})",
            report.records,
            report.kind,
            report.written,
            report.skipped,
            if refused.is_empty() {
                "none".into()
            } else {
                refused.join(", ")
            }
        );
    }
    println!(
        "OSV import (AlmaLinux 9, real): {alma_stored} advisories, {alma_ranges} ranges stored in {seconds:.1} s; peak memory {:.0} MiB",
        cairn_bench::peak_rss_mib()
    );

    let advisories_zip = dir.join("debian-all.zip");
    let started = Instant::now();
    write_osv_zip(&advisories_zip, OSV_ADVISORIES)?;
    println!(
        "generated {OSV_ADVISORIES} OSV advisories ({:.1} MB zip) in {:.1} s",
        std::fs::metadata(&advisories_zip)?.len() as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let reports = cairn_vulnerabilities::reference::import::import_paths(
        &db,
        std::slice::from_ref(&advisories_zip),
    )
    .await?;
    let seconds = started.elapsed().as_secs_f64();
    let written: u64 = reports.iter().map(|r| r.written).sum();
    let (stored, ranges) = cairn_vulnerabilities::reference::osv::counts(&db).await?;
    let (stored, ranges) = (stored - alma_stored, ranges - alma_ranges);
    println!(
        "OSV import (a Debian release): {written} advisories ({stored} stored, {ranges} ranges) in {seconds:.1} s = {:.0} advisories/s; peak memory {:.0} MiB",
        written as f64 / seconds,
        cairn_bench::peak_rss_mib()
    );

    let feed = dir.join("nvdcve-2.0-generated.json.gz");
    let started = Instant::now();
    let all: Vec<usize> = (0..cves).collect();
    write_feed(&feed, &all, "2030-02-01T00:00:00.000", 7)?;
    println!(
        "generated {cves} CVE records ({:.1} MB gzip) in {:.1} s",
        std::fs::metadata(&feed)?.len() as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let reports =
        cairn_vulnerabilities::reference::import::import_paths(&db, std::slice::from_ref(&feed))
            .await?;
    let seconds = started.elapsed().as_secs_f64();
    let written: u64 = reports.iter().map(|r| r.written).sum();
    println!(
        "import: {written} CVEs in {seconds:.1} s = {:.0} CVEs/s (goal 15,000) {}; peak memory so far {:.0} MiB (goal 1,024)",
        written as f64 / seconds,
        if written as f64 / seconds >= 15_000.0 { "MET" } else { "NOT MET" },
        cairn_bench::peak_rss_mib()
    );

    let tenant = TenantId(uuid::Uuid::now_v7().to_string());
    sqlx::query(
        "INSERT INTO tenants (id, name, created_at, updated_at) VALUES ($1, 'bench', 0, 0)",
    )
    .bind(tenant.as_str())
    .execute(&db.pool)
    .await?;
    let mut devices = fleet();
    let started = Instant::now();
    write_fleet(&db, &tenant, "run-1", &devices).await?;
    println!(
        "inventory: {} rows written in {:.1} s",
        DEVICES * APPS_PER_DEVICE,
        started.elapsed().as_secs_f64()
    );

    let translations = Translations::shipped();
    let scope = scan::ScanScope::default();
    let scan_id =
        cairn_vulnerabilities::findings::writes::create_scan(&db, &tenant, &scope).await?;
    let started = Instant::now();
    let full = scan::run_scan(&db, &NoFence, &translations, &tenant, &scan_id, &scope).await?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "full match: {} devices, {} applications, {} findings in {seconds:.1} s (goal 60 s) {}; peak memory {:.0} MiB",
        full.devices,
        full.applications,
        full.findings,
        if seconds <= 60.0 { "MET" } else { "NOT MET" },
        cairn_bench::peak_rss_mib()
    );

    // 1 % of the rows move to another version.
    let mut rng = Lcg(99);
    let changes = DEVICES * APPS_PER_DEVICE / 100;
    for _ in 0..changes {
        let device = rng.below(DEVICES);
        let slot = rng.below(APPS_PER_DEVICE);
        devices[device][slot].1 = (devices[device][slot].1 + 1 + rng.below(8)) % 10;
    }
    write_fleet(&db, &tenant, "run-2", &devices).await?;
    let scan_id =
        cairn_vulnerabilities::findings::writes::create_scan(&db, &tenant, &scope).await?;
    let started = Instant::now();
    let incremental =
        scan::run_scan(&db, &NoFence, &translations, &tenant, &scan_id, &scope).await?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "re-match after {changes} changed rows: {} findings, {} new, {} fixed in {seconds:.1} s (goal 5 s) {}; peak memory {:.0} MiB",
        incremental.findings,
        incremental.new_findings,
        incremental.fixed_findings,
        if seconds <= 5.0 { "MET" } else { "NOT MET" },
        cairn_bench::peak_rss_mib()
    );

    // NVD revises every CVE of 4 of the 400 products the fleet runs (1 %).
    let revised = dir.join("nvdcve-2.0-revised.json.gz");
    std::fs::create_dir_all(&dir)?;
    let ids: Vec<usize> = (0..4)
        .flat_map(|product| (product..cves).step_by(PRODUCTS))
        .collect();
    let revised_cves = ids.len();
    write_feed(&revised, &ids, "2030-03-01T00:00:00.000", 11)?;
    cairn_vulnerabilities::reference::import::import_paths(&db, std::slice::from_ref(&revised))
        .await?;
    let _ = std::fs::remove_dir_all(&dir);
    let scan_id =
        cairn_vulnerabilities::findings::writes::create_scan(&db, &tenant, &scope).await?;
    let started = Instant::now();
    let revised = scan::run_scan(&db, &NoFence, &translations, &tenant, &scan_id, &scope).await?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "re-match after {revised_cves} revised CVEs: {} applications, {} findings, {} new, {} fixed in {seconds:.1} s (goal 5 s) {}; peak memory {:.0} MiB",
        revised.applications,
        revised.findings,
        revised.new_findings,
        revised.fixed_findings,
        if seconds <= 5.0 { "MET" } else { "NOT MET" },
        cairn_bench::peak_rss_mib()
    );
    cairn_bench::drop_database(db, &url).await;
    Ok(())
}
