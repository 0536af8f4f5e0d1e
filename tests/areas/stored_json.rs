//! Rows that fail loudly: a connector record whose stored JSON does not
//! decode is an error naming its column when an area reads it, never a
//! record with empty fields. Read through the integrations area's public
//! functions on a real database.

use cairn_tests::{backend_tests, Backend, TestDb};

backend_tests!(
    a_record_whose_stored_json_is_broken_names_the_column,
    a_finding_column_of_the_wrong_type_is_an_error_naming_it
);

async fn a_record_whose_stored_json_is_broken_names_the_column(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    // (key, fields, body, the column the read must name, or none).
    let cases = [
        ("whole", r#"{"cve_ids":["CVE-2024-3094"]}"#, "{}", None),
        ("broken-fields", r#"{"cve_ids":"#, "{}", Some("fields")),
        ("broken-body", "{}", "not json", Some("body")),
    ];
    for (key, fields, body, _) in &cases {
        sqlx::query(
            "INSERT INTO source_records (tenant_id, source, kind, record_type, record_key, \
             fields, body, seen_run, updated_at) VALUES ($1, 'scanner', 'findings', 'finding', \
             $2, $3, $4, 'r', 0)",
        )
        .bind(tenant.as_str())
        .bind(key)
        .bind(fields)
        .bind(body)
        .execute(&test_db.db.pool)
        .await
        .unwrap();
    }
    for (key, _, _, broken) in cases {
        let read =
            cairn_integrations::typed_by_key(&test_db.db, &tenant, "scanner", "finding", key).await;
        match broken {
            None => {
                let record = read.unwrap().expect("the record");
                assert_eq!(record.fields["cve_ids"][0], "CVE-2024-3094");
            }
            Some(column) => {
                let err = read.expect_err(key);
                assert!(
                    matches!(&err, sqlx::Error::ColumnDecode { index, .. } if index.contains(column)),
                    "{key}: {err}"
                );
            }
        }
    }
    test_db.finish().await;
}

/// A row whose column holds what its reader does not expect (SQLite keeps
/// any value in any column; a hand edit or a bad migration does this) is
/// an error naming the column, not a panic of the request or the job.
async fn a_finding_column_of_the_wrong_type_is_an_error_naming_it(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("t").await;
    // PostgreSQL refuses the value itself; the read is SQLite's to check.
    let first_seen = match backend {
        Backend::Sqlite => "'yesterday'",
        Backend::Postgres => "1",
    };
    sqlx::query(&format!(
        "INSERT INTO vuln_findings (tenant_id, device_name, application_name, version, cve_id, \
         vendor, product, source, criteria, version_range, fix_version, status, first_seen, \
         last_seen) VALUES ($1, 'PC-1', 'App', '1.0', 'CVE-2024-3094', 'acme', 'app', 'nvd', \
         'cpe', '< 2.0', '2.0', 'open', {first_seen}, 1)"
    ))
    .bind(tenant.as_str())
    .execute(&test_db.db.pool)
    .await
    .unwrap();
    let read = cairn_vulnerabilities::findings::views::cve_findings(
        &test_db.db,
        &tenant,
        "CVE-2024-3094",
        "all",
        0,
        10,
    )
    .await;
    match backend {
        Backend::Sqlite => {
            let err = read.expect_err("a text first_seen is not a time");
            assert!(err.to_string().contains("first_seen"), "{err}");
        }
        Backend::Postgres => assert_eq!(read.unwrap().1, 1),
    }
    test_db.finish().await;
}
