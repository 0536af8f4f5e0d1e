//! Distribution advisories as distributions publish them: a whole real
//! AlmaLinux release's OSV set imported with every record counted, and
//! real AlmaLinux and Ubuntu records judging installed packages (epochs an
//! inventory dropped, Ubuntu Pro builds), through the vulnerabilities
//! area's public functions on a real database.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use cairn_inventory::software::InstalledSoftware;
use cairn_tests::{backend_tests, Backend, TestDb};
use cairn_vulnerabilities::matching::identify::Translations;
use cairn_vulnerabilities::matching::packages;
use cairn_vulnerabilities::reference::{import, osv};

backend_tests!(
    a_whole_almalinux_release_is_imported_with_every_record_counted,
    ubuntu_records_judge_standard_and_pro_builds,
    a_notice_names_each_releases_own_cves,
    bad_entries_are_counted_by_reason_and_the_import_goes_on
);

fn fixture(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/osv")
        .join(path)
}

fn package(os: &str, name: &str, version: &str) -> InstalledSoftware {
    InstalledSoftware {
        device_name: Arc::from("HOST-1"),
        application_name: Arc::from(name),
        publisher: None,
        version: Some(Arc::from(version)),
        os_platform: Some(Arc::from("linux")),
        os_version: Some(Arc::from(os)),
    }
}

/// The CVEs each package is found exposed to, in the order given.
async fn exposed(db: &TestDb, software: &[InstalledSoftware]) -> Vec<BTreeSet<String>> {
    let matches = packages::match_packages(&db.db, &Translations::shipped(), software)
        .await
        .unwrap();
    matches
        .of_item
        .iter()
        .map(|key| {
            let key = key.as_ref().expect("a distribution package");
            matches.evaluated[key]
                .1
                .iter()
                .map(|hit| hit.cve_id.clone())
                .collect()
        })
        .collect()
}

fn cves(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|c| c.to_string()).collect()
}

/// AlmaLinux 9's `all.zip` as published (1,783 records): every entry is
/// read, loaded or refused with its reason. The CVE ids are in `related`;
/// the largest records (texlive 133 KB, glibc 78 KB) write `modified` after
/// `affected`, past any prefix a sniffer reads.
async fn a_whole_almalinux_release_is_imported_with_every_record_counted(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let zip = fixture("almalinux/almalinux9-all.zip");
    let entries = zip::ZipArchive::new(std::fs::File::open(&zip).unwrap())
        .unwrap()
        .len() as u64;
    let reports = import::import_paths(&db.db, std::slice::from_ref(&zip))
        .await
        .unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    let report = &reports[0];
    assert_eq!(report.kind, "osv");
    assert_eq!(report.records, entries, "{report:?}");
    // Seven records name no CVE (bug-fix ALBA and four ALSA without one),
    // each counted by its reason; every other is loaded.
    assert_eq!(
        report.skipped_by_reason.iter().collect::<Vec<_>>(),
        [(&"names no CVE".to_string(), &7)],
        "{report:?}"
    );
    assert_eq!(report.written + report.skipped, entries, "{report:?}");
    let (stored, _) = osv::counts(&db.db).await.unwrap();
    assert_eq!(stored as u64, report.written);

    // Again: nothing new, nothing lost.
    let again = import::import_paths(&db.db, std::slice::from_ref(&zip))
        .await
        .unwrap();
    assert_eq!(
        (again[0].written, again[0].unchanged, again[0].skipped),
        (0, report.written, 7),
        "{again:?}"
    );

    let alma = "AlmaLinux 9.4 (Seafoam Ocelot)";
    let found = exposed(
        &db,
        &[
            // `rpm -qa` without the epoch against ALSA-2023:3661's
            // `9:20200406-26.el9_2`.
            package(alma, "texlive", "20200406-25.el9"),
            package(alma, "texlive", "20200406-26.el9_2"),
            package(alma, "texlive", "9:20200406-26.el9_2"),
            // Fixed by ALSA-2024:3339; every later glibc advisory applies.
            package(alma, "glibc", "2.34-100.el9_4.2"),
        ],
    )
    .await;
    let later_glibc = cves(&[
        "CVE-2025-0395",
        "CVE-2025-4802",
        "CVE-2025-5702",
        "CVE-2025-15281",
        "CVE-2026-0861",
        "CVE-2026-0915",
        "CVE-2026-4046",
        "CVE-2026-4437",
        "CVE-2026-4438",
        "CVE-2026-5435",
        "CVE-2026-5450",
        "CVE-2026-5928",
        "CVE-2026-6238",
    ]);
    assert_eq!(
        found,
        [cves(&["CVE-2023-32700"]), cves(&[]), cves(&[]), later_glibc]
    );
    db.finish().await;
}

/// Ubuntu's current record shape (the id is the CVE, `aliases` empty, the
/// binaries one object of name: version) with Ubuntu Pro ranges beside the
/// standard ones: a binary package is judged, an epoch-less version is
/// read under the fix's epoch, and a `+esm` build by Pro's ranges.
async fn ubuntu_records_judge_standard_and_pro_builds(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let reports = import::import_paths(&db.db, &[fixture("ubuntu/CVE-2023-22809.json")])
        .await
        .unwrap();
    assert_eq!(
        reports
            .iter()
            .map(|r| (r.kind, r.written, r.skipped))
            .collect::<Vec<_>>(),
        [("osv", 1, 0)],
        "{reports:?}"
    );
    let sudoedit = cves(&["CVE-2023-22809"]);
    let jammy = "Ubuntu 22.04.3 LTS";
    let xenial = "Ubuntu 16.04.7 LTS";
    let found = exposed(
        &db,
        &[
            package(jammy, "sudo", "1.9.9-1ubuntu2.1"),
            package(jammy, "sudo", "1.9.9-1ubuntu2.2"),
            // A binary of the sudo source, named in the record's binaries.
            package(jammy, "sudo-ldap", "1.9.9-1ubuntu2"),
            // 16.04 past standard support: the fix is Pro's build alone,
            // so the last standard build lacks it.
            package(xenial, "sudo", "1.8.16-0ubuntu1.10"),
            package(xenial, "sudo", "1.8.16-0ubuntu1.10+esm1"),
            package(xenial, "sudo", "1.8.16-0ubuntu1.9+esm1"),
        ],
    )
    .await;
    assert_eq!(
        found,
        [
            sudoedit.clone(),
            cves(&[]),
            sudoedit.clone(),
            sudoedit.clone(),
            cves(&[]),
            sudoedit.clone()
        ]
    );
    db.finish().await;
}

/// A zip of real records with bad entries among them: each bad entry is
/// counted under its reason and named in the answer, the good records
/// load, and nothing of a refused record is stored.
async fn bad_entries_are_counted_by_reason_and_the_import_goes_on(backend: Backend) {
    use std::io::{Read, Write};
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("cairn-osv-bad-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mixed-all.zip");
    {
        let mut real = zip::ZipArchive::new(
            std::fs::File::open(fixture("almalinux/almalinux9-all.zip")).unwrap(),
        )
        .unwrap();
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        let options = zip::write::SimpleFileOptions::default();
        // Two real advisories, the large texlive one among them.
        for name in ["ALSA-2023:3661.json", "ALSA-2024:3339.json"] {
            let mut text = String::new();
            real.by_name(name)
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            zip.start_file(name, options).unwrap();
            zip.write_all(text.as_bytes()).unwrap();
        }
        for (name, bytes) in [
            (
                "truncated.json",
                &br#"{"id": "ALSA-2099:1", "affected": ["#[..],
            ),
            ("README.md", &b"# not a record"[..]),
            ("other.json", &br#"{"kind": "something else"}"#[..]),
            (
                "no-modified.json",
                &br#"{"id": "ALSA-2099:2", "related": ["CVE-2099-0002"], "affected": []}"#[..],
            ),
            (
                "no-cve.json",
                &br#"{"id": "ALBA-2099:3", "modified": "2099-01-01T00:00:00Z", "affected": []}"#[..],
            ),
        ] {
            zip.start_file(name, options).unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap();
    }
    let reports = import::import_paths(&db.db, std::slice::from_ref(&path))
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    /// A report as (kind, records read, written, skipped by reason).
    type Summary<'a> = (&'a str, u64, u64, Vec<(&'a str, u64)>);
    let summary: Vec<Summary> = reports
        .iter()
        .map(|r| {
            (
                r.kind,
                r.records,
                r.written,
                r.skipped_by_reason
                    .iter()
                    .map(|(why, n)| (why.as_str(), *n))
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "osv",
                4,
                2,
                vec![("names no CVE", 1), ("no modified time", 1)]
            ),
            (
                "unrecognized",
                3,
                0,
                vec![("not JSON", 1), ("not a record cairn reads", 2)]
            ),
        ],
        "{reports:?}"
    );
    // Each refused entry is named with its reason.
    let named: Vec<&str> = reports
        .iter()
        .flat_map(|r| &r.errors)
        .map(String::as_str)
        .collect();
    for entry in [
        "truncated.json",
        "README.md",
        "other.json",
        "no-modified.json",
        "no-cve.json",
    ] {
        assert!(
            named.iter().any(|e| e.starts_with(entry)),
            "{entry}: {named:?}"
        );
    }
    let (stored, _) = osv::counts(&db.db).await.unwrap();
    assert_eq!(stored, 2);
    db.finish().await;
}

/// Ubuntu's notice USN-5811-1 as published: two CVEs, but its
/// `cves_map` says CVE-2022-33070 affected 22.04 only. A build of 18.04
/// below the notice's fix is exposed to the other CVE alone, through the
/// database as a scan reads it.
async fn a_notice_names_each_releases_own_cves(backend: Backend) {
    let Some(db) = TestDb::create(backend).await else {
        return;
    };
    let reports = import::import_paths(&db.db, &[fixture("ubuntu/USN-5811-1.json")])
        .await
        .unwrap();
    assert_eq!(
        reports
            .iter()
            .map(|r| (r.kind, r.written))
            .collect::<Vec<_>>(),
        [("osv", 1)],
        "{reports:?}"
    );
    let found = exposed(
        &db,
        &[
            package("Ubuntu 18.04.6 LTS", "sudo", "1.8.21p2-3ubuntu1.4"),
            package("Ubuntu 20.04.6 LTS", "sudo-ldap", "1.8.31-1ubuntu1.2"),
            package("Ubuntu 22.04.3 LTS", "sudo", "1.9.9-1ubuntu2.1"),
            package("Ubuntu 22.04.3 LTS", "sudo", "1.9.9-1ubuntu2.2"),
        ],
    )
    .await;
    assert_eq!(
        found,
        [
            cves(&["CVE-2023-22809"]),
            cves(&["CVE-2023-22809"]),
            cves(&["CVE-2022-33070", "CVE-2023-22809"]),
            cves(&[]),
        ]
    );
    db.finish().await;
}
