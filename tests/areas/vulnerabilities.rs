//! The vulnerabilities area's logic on a real database, through its
//! public functions: real NVD records imported as an operator imports
//! them, installed software written through the sync's upsert, a scan run
//! as the job runs it; then which CVEs each installation has (matching),
//! what a later scan does to them (findings), and what triage takes out of
//! the open counts. The HTTP contract of the same routes stays in
//! `tests/platform/vulnerabilities.rs`.

use std::collections::BTreeSet;

use cairn_core::db::fence::NoFence;
use cairn_core::db::now_ms;
use cairn_core::ids::TenantId;
use cairn_plugins::MappedRow;
use cairn_tests::inventory::software;
use cairn_tests::{backend_tests, fake_nvd, Backend, TestDb};
use cairn_vulnerabilities::findings::vocabulary::ScanScope;
use cairn_vulnerabilities::findings::{triage, views, writes};
use cairn_vulnerabilities::matching::identify::{clean_name, Translations};
use cairn_vulnerabilities::reference::cpe::ProductKey;
use cairn_vulnerabilities::reference::import;
use cairn_vulnerabilities::scan;

backend_tests!(
    installed_versions_match_the_cves_their_ranges_name,
    a_later_scan_fixes_and_reopens_findings,
    triage_takes_findings_out_of_the_open_counts_until_it_expires,
    triage_holds_across_an_upgrade_and_keeps_its_trail,
);

/// Imports the NVD records of `tests/fixtures/nvd` (real records, as NVD's
/// API 2.0 serves them) with a rejected 7-Zip record and a PuTTY record of
/// odd bounds as one API page, and Zoom's CVE JSON 5 record, the way
/// `cairn vuln import` does.
async fn load_nvd(test_db: &TestDb) {
    let mut cves = fake_nvd::fixture_records();
    cves.extend([fake_nvd::rejected_record(), fake_nvd::putty_record()]);
    let records: Vec<_> = cves
        .into_iter()
        .map(|cve| serde_json::json!({ "cve": cve }))
        .collect();
    let dir = std::env::temp_dir().join(format!("cairn-nvd-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = serde_json::json!({
        "resultsPerPage": records.len(),
        "startIndex": 0,
        "totalResults": records.len(),
        "format": "NVD_CVE",
        "version": "2.0",
        "timestamp": "2026-11-01T00:00:00.000",
        "vulnerabilities": records,
    });
    std::fs::write(dir.join("page.json"), page.to_string()).unwrap();
    std::fs::write(
        dir.join("CVE-2024-24691.json"),
        fake_nvd::zoom_cve5_record().to_string(),
    )
    .unwrap();
    let reports = import::import_paths(&test_db.db, std::slice::from_ref(&dir))
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let written: Vec<(&str, u64)> = reports.iter().map(|r| (r.kind, r.written)).collect();
    assert!(written.contains(&("nvd", 9)), "{reports:?}");
    assert!(written.contains(&("cve5", 1)), "{reports:?}");
}

/// Writes `rows` as the tenant's RMM reported them (replacing what the RMM
/// reported before), rebuilds the rollup and runs a whole scan.
async fn sync_and_scan(test_db: &TestDb, tenant: &TenantId, run: &str, rows: &[MappedRow]) {
    let mut tx = test_db.db.pool.begin().await.unwrap();
    cairn_integrations::storage::upsert_rows(&mut tx, tenant, "rmm", (run, 0), rows)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    cairn_inventory::seen::prune_unseen(&test_db.db, &NoFence, tenant, "rmm", run)
        .await
        .unwrap();
    test_db.rebuild(tenant).await;
    let scope = ScanScope {
        full: true,
        ..ScanScope::default()
    };
    let scan_id = writes::create_scan(&test_db.db, tenant, &scope)
        .await
        .unwrap();
    scan::run_scan(
        &test_db.db,
        &NoFence,
        &Translations::shipped(),
        tenant,
        &scan_id,
        &scope,
    )
    .await
    .unwrap();
}

/// (device, application, CVE) of the tenant's findings of `cve` in
/// `status` (`open`, `fixed` or `all`).
async fn findings_of(
    test_db: &TestDb,
    tenant: &TenantId,
    cve: &str,
    status: &str,
) -> BTreeSet<(String, String)> {
    let (rows, _) = views::cve_findings(&test_db.db, tenant, cve, status, 0, 100)
        .await
        .unwrap();
    rows.into_iter()
        .map(|f| (f.device_name, f.version))
        .collect()
}

fn log4j(version: &str) -> MappedRow {
    software(
        "SRV-01",
        "log4j",
        "Apache Software Foundation",
        version,
        "linux",
    )
}

fn putty(version: &str) -> MappedRow {
    software(
        "WS-01",
        &format!("PuTTY release {version} (64-bit)"),
        "Simon Tatham",
        &format!("{version}.0.0"),
        "windows",
    )
}

async fn installed_versions_match_the_cves_their_ranges_name(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    load_nvd(&test_db).await;
    // (case, installed program, the CVEs it has; every other fixture CVE
    // must not be found). Each case is a tenant of its own.
    let cases: &[(&str, MappedRow, &[&str])] = &[
        (
            "7-Zip below the fix (end excluding 24.09)",
            software(
                "WS-01",
                "7-Zip 24.08 (x64)",
                "Igor Pavlov",
                "24.08",
                "windows",
            ),
            &["CVE-2025-0411"],
        ),
        (
            "7-Zip at the fix",
            software(
                "WS-01",
                "7-Zip 24.09 (x64)",
                "Igor Pavlov",
                "24.09",
                "windows",
            ),
            &[],
        ),
        (
            "7-Zip with no version matches nothing",
            software("WS-01", "7-Zip 23.01 (x64)", "Igor Pavlov", "", "windows"),
            &[],
        ),
        (
            "Chrome one build below the fix",
            software(
                "WS-01",
                "Google Chrome",
                "Google LLC",
                "112.0.5615.49",
                "windows",
            ),
            &["CVE-2023-2033"],
        ),
        (
            "Chrome at the fix",
            software(
                "WS-01",
                "Google Chrome",
                "Google LLC",
                "112.0.5615.121",
                "windows",
            ),
            &[],
        ),
        (
            "a Google program named like Chrome is not Chrome",
            software(
                "WS-01",
                "Chrome Remote Desktop Host",
                "Google LLC",
                "112.0.5615.49",
                "windows",
            ),
            &[],
        ),
        (
            "Firefox inside the range; its Android row never applies",
            software(
                "WS-01",
                "Mozilla Firefox (x64 en-US)",
                "Mozilla",
                "97.0.1",
                "windows",
            ),
            &["CVE-2022-26485"],
        ),
        (
            "Firefox at the fix",
            software(
                "WS-01",
                "Mozilla Firefox (x64 en-US)",
                "Mozilla",
                "97.0.2",
                "windows",
            ),
            &[],
        ),
        (
            "Edge one build below the fix",
            software(
                "WS-01",
                "Microsoft Edge",
                "Microsoft Corporation",
                "121.0.2277.82",
                "windows",
            ),
            &["CVE-2024-21388"],
        ),
        (
            "Firefox ESR inside the ESR range",
            software(
                "WS-01",
                "Mozilla Firefox 91.6.0 ESR (x64 en-US)",
                "Mozilla",
                "91.6.0",
                "windows",
            ),
            &["CVE-2022-26485"],
        ),
        (
            "Zoom for Windows: NVD's row and the CNA's record (no NVD configuration)",
            software(
                "WS-01",
                "Zoom",
                "Zoom Video Communications, Inc.",
                "5.9.1",
                "windows",
            ),
            &["CVE-2022-22784", "CVE-2024-24691"],
        ),
        (
            "Zoom on a Mac: the CNA names only the Windows client",
            software(
                "MAC-01",
                "zoom.us",
                "Zoom Video Communications, Inc.",
                "5.9.0",
                "macOS",
            ),
            &["CVE-2022-22784"],
        ),
        (
            "Zoom at the CNA's fix, past NVD's range",
            software(
                "WS-01",
                "Zoom",
                "Zoom Video Communications, Inc.",
                "5.16.5",
                "windows",
            ),
            &[],
        ),
        (
            "log4j at the start it includes (found through the dictionary)",
            log4j("2.4.0"),
            &["CVE-2021-44228"],
        ),
        ("log4j at the end it excludes", log4j("2.15.0"), &[]),
        (
            "log4j's exact pre-release",
            log4j("2.0-rc1"),
            &["CVE-2021-44228"],
        ),
        ("PuTTY at the start it excludes", putty("0.70"), &[]),
        ("PuTTY past the start", putty("0.71"), &["CVE-1999-0001"]),
        (
            "PuTTY at the end it includes",
            putty("0.80"),
            &["CVE-1999-0001"],
        ),
        ("PuTTY past the end", putty("0.81"), &[]),
        (
            "Xcode on a Mac below 13.3",
            software("MAC-01", "Xcode", "Apple", "13.2.1", "macOS"),
            &["CVE-2021-44228"],
        ),
        (
            "firmware of an AND configuration, on a PC without the hardware",
            software(
                "WS-04",
                "SIMATIC Firmware Tool",
                "Siemens",
                "2.0",
                "windows",
            ),
            &[],
        ),
        (
            "the hardware of that configuration (vulnerable: false)",
            software(
                "WS-04",
                "SIMATIC Hardware Tool",
                "Siemens",
                "1.0",
                "windows",
            ),
            &[],
        ),
        (
            "a tenant-mapped product at the end it includes",
            software("SRV-01", "Rhythmyx CMS", "Percussion", "7.3.2", "windows"),
            &["CVE-2021-44228"],
        ),
        (
            "a tenant-mapped product past it",
            software("SRV-01", "Rhythmyx CMS", "Percussion", "7.3.3", "windows"),
            &[],
        ),
    ];
    // The tenant's own mappings, as `PUT /vulnerabilities/mappings` stores them.
    let mappings = [
        (
            "SIMATIC Firmware Tool",
            "siemens:6bk1602-0aa12-0tp0_firmware",
        ),
        ("SIMATIC Hardware Tool", "siemens:6bk1602-0aa12-0tp0"),
        ("Rhythmyx CMS", "percussion:rhythmyx"),
    ];
    let mut all_cves: Vec<String> = fake_nvd::fixture_records()
        .iter()
        .chain(&[fake_nvd::rejected_record(), fake_nvd::putty_record()])
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    all_cves.push("CVE-2024-24691".into());
    all_cves.sort();
    all_cves.dedup();
    for (i, (case, row, expected)) in cases.iter().enumerate() {
        let tenant = test_db.tenant(&format!("t{i}")).await;
        for (application, product) in mappings {
            let key = ProductKey::parse(product);
            writes::set_mapping(&test_db.db, &tenant, &clean_name(application), key.as_ref())
                .await
                .unwrap();
        }
        sync_and_scan(&test_db, &tenant, "run-1", std::slice::from_ref(row)).await;
        let mut found = vec![];
        for cve in &all_cves {
            if !findings_of(&test_db, &tenant, cve, "open").await.is_empty() {
                found.push(cve.as_str());
            }
        }
        assert_eq!(found, *expected, "{case}");
    }
    test_db.finish().await;
}

async fn a_later_scan_fixes_and_reopens_findings(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    load_nvd(&test_db).await;
    let tenant = test_db.tenant("t").await;
    let cve = "CVE-2025-0411";
    let zip = |device: &str, version: &str| {
        software(device, "7-Zip (x64)", "Igor Pavlov", version, "windows")
    };
    // (step, what the RMM reports, open findings, fixed findings), each
    // as (device, version).
    type Step<'a> = (
        &'a str,
        Vec<MappedRow>,
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
    );
    let steps: Vec<Step> = vec![
        (
            "two vulnerable devices",
            vec![zip("WS-01", "24.08"), zip("WS-02", "24.07")],
            &[("WS-01", "24.08"), ("WS-02", "24.07")],
            &[],
        ),
        (
            "WS-01 upgraded: its finding is fixed, WS-02's stays open",
            vec![zip("WS-01", "24.09"), zip("WS-02", "24.07")],
            &[("WS-02", "24.07")],
            &[("WS-01", "24.08")],
        ),
        (
            "WS-02 gone from the inventory: fixed too",
            vec![zip("WS-01", "24.09")],
            &[],
            &[("WS-01", "24.08"), ("WS-02", "24.07")],
        ),
        (
            "WS-01 rolled back: the same finding is open again",
            vec![zip("WS-01", "24.08")],
            &[("WS-01", "24.08")],
            &[("WS-02", "24.07")],
        ),
    ];
    let pairs = |list: &[(&str, &str)]| -> BTreeSet<(String, String)> {
        list.iter()
            .map(|(d, v)| (d.to_string(), v.to_string()))
            .collect()
    };
    for (i, (step, rows, open, fixed)) in steps.into_iter().enumerate() {
        sync_and_scan(&test_db, &tenant, &format!("run-{i}"), &rows).await;
        assert_eq!(
            findings_of(&test_db, &tenant, cve, "open").await,
            pairs(open),
            "{step}: open"
        );
        assert_eq!(
            findings_of(&test_db, &tenant, cve, "fixed").await,
            pairs(fixed),
            "{step}: fixed"
        );
    }
    test_db.finish().await;
}

async fn triage_takes_findings_out_of_the_open_counts_until_it_expires(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    load_nvd(&test_db).await;
    let now = now_ms();
    let day = 86_400_000;
    // (status, expiry relative to now, whether the CVE still counts open).
    let cases: &[(&str, Option<i64>, bool)] = &[
        ("in_analysis", None, true),
        ("remediation_in_progress", None, true),
        ("not_affected", None, false),
        ("false_positive", None, false),
        ("risk_accepted", Some(30 * day), false),
        // An acceptance that ran out counts again, with no job needed.
        ("risk_accepted", Some(-day), true),
    ];
    for (i, (status, expires_in, counts)) in cases.iter().enumerate() {
        let tenant = test_db.tenant(&format!("t{i}")).await;
        let row = software(
            "WS-01",
            "7-Zip 24.08 (x64)",
            "Igor Pavlov",
            "24.08",
            "windows",
        );
        sync_and_scan(&test_db, &tenant, "run-1", &[row]).await;
        assert_eq!(
            views::open_cve_count(&test_db.db, &tenant).await.unwrap(),
            1
        );
        let products = triage::products_of_cve(&test_db.db, &tenant, "CVE-2025-0411")
            .await
            .unwrap();
        let (vendor, product) = products.first().cloned().expect("the finding's product");
        triage::set(
            &test_db.db,
            &tenant,
            &triage::Change {
                cve_id: "CVE-2025-0411",
                vendor: &vendor,
                product: &product,
                status,
                justification: None,
                expires_at: expires_in.map(|d| now + d),
                assignee_id: None,
                comment: "checked",
                by: "analyst@msp.example",
            },
        )
        .await
        .unwrap();
        let open = views::open_cve_count(&test_db.db, &tenant).await.unwrap();
        assert_eq!(open == 1, *counts, "{status} {expires_in:?}");
        let history = triage::history(&test_db.db, &tenant, "CVE-2025-0411")
            .await
            .unwrap();
        assert_eq!(history.len(), 1, "{status}: one change recorded");
    }
    test_db.finish().await;
}

/// A triage decision is about a CVE in a product, not one installed build:
/// a device that moves to another vulnerable build keeps the decision, and
/// the trail of changes keeps every step, newest first, with who made it.
async fn triage_holds_across_an_upgrade_and_keeps_its_trail(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    load_nvd(&test_db).await;
    let (db, cve) = (&test_db.db, "CVE-2025-0411");
    let tenant = test_db.tenant("t").await;
    let seven_zip = |version: &str| {
        let name = format!("7-Zip {version} (x64)");
        software("WS-01", &name, "Igor Pavlov", version, "windows")
    };
    sync_and_scan(&test_db, &tenant, "run-1", &[seven_zip("24.07")]).await;
    let (vendor, product) = triage::products_of_cve(db, &tenant, cve)
        .await
        .unwrap()
        .first()
        .cloned()
        .expect("the finding's product");
    let change = |status: &'static str, by: &'static str| triage::Change {
        cve_id: cve,
        vendor: &vendor,
        product: &product,
        status,
        justification: None,
        expires_at: None,
        assignee_id: None,
        comment: "checked",
        by,
    };
    triage::set(db, &tenant, &change("in_analysis", "analyst@msp.example"))
        .await
        .unwrap();
    let mut accepted = change("risk_accepted", "owner@msp.example");
    accepted.expires_at = Some(now_ms() + 30 * 86_400_000);
    triage::set(db, &tenant, &accepted).await.unwrap();

    sync_and_scan(&test_db, &tenant, "run-2", &[seven_zip("24.08")]).await;
    assert_eq!(views::open_cve_count(db, &tenant).await.unwrap(), 0);
    let (accepted, _) = views::cve_findings(db, &tenant, cve, "accepted", 0, 10)
        .await
        .unwrap();
    let builds: Vec<(&str, &str)> = accepted
        .iter()
        .map(|f| (f.version.as_str(), f.status.as_str()))
        .collect();
    assert_eq!(builds, [("24.08", "open")], "the new build, still accepted");

    triage::set(db, &tenant, &change("in_analysis", "analyst@msp.example"))
        .await
        .unwrap();
    assert_eq!(views::open_cve_count(db, &tenant).await.unwrap(), 1);
    let trail: Vec<(String, String, String)> = triage::history(db, &tenant, cve)
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.from_status, c.to_status, c.changed_by))
        .collect();
    let step = |from: &str, to: &str, by: &str| (from.into(), to.into(), by.into());
    assert_eq!(
        trail,
        [
            step("risk_accepted", "in_analysis", "analyst@msp.example"),
            step("in_analysis", "risk_accepted", "owner@msp.example"),
            step("to_evaluate", "in_analysis", "analyst@msp.example"),
        ]
    );
    test_db.finish().await;
}
