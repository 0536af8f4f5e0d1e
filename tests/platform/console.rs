//! The web console: served by the binary with its security headers, and an
//! analyst's journey through it in a real browser (Debian's Chromium,
//! driven by `tests/console/journey.mjs`). The browser part runs where
//! Chromium and the script's packages are installed (`cargo xtask test`
//! installs them; `CAIRN_REQUIRE_BROWSER=1` makes their absence a failure).

use std::io::Write;
use std::path::{Path, PathBuf};

use cairn_tests::fake_rmm::{FakeRmm, PASSWORD as RMM_PASSWORD, USERNAME as RMM_USER};
use cairn_tests::{backend_tests, Backend, TestApp, PASSWORD};
use reqwest::Method;
use serde_json::{json, Value};

use super::vulnerabilities::{loaded_with, scan, software};

backend_tests!(
    the_console_is_served_with_its_policy,
    an_analyst_works_through_the_console_in_a_browser,
);

const HOSTILE: &str = "<img src=x onerror=alert(1)>";

async fn the_console_is_served_with_its_policy(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    for path in [
        "/console",
        "/console/",
        "/console/applications?page=2",
        "/console/cves/CVE-2024-1",
    ] {
        let resp = app
            .http
            .get(format!("{}{path}", app.url))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .unwrap()
                .to_str()
                .unwrap()
                .to_string()
        };
        let policy = header("content-security-policy");
        for directive in [
            "script-src 'self'",
            "style-src 'self'",
            "frame-ancestors 'none'",
            "default-src 'none'",
        ] {
            assert!(policy.contains(directive), "{path}: {policy}");
        }
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        assert_eq!(header("x-content-type-options"), "nosniff");
        let html = resp.text().await.unwrap();
        assert!(html.contains(r#"<script type="module" src="/console/app.js">"#));
        assert!(!html.contains("<script>"), "no inline script");
        assert!(!html.contains("style="), "no inline style");
    }
    let missing = app
        .get("/console/nothing.js", &cairn_tests::Auth::None)
        .await;
    missing.assert_error(404);
    let script = app
        .http
        .get(format!("{}/console/app.js", app.url))
        .send()
        .await
        .unwrap();
    assert!(script.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/javascript"));

    // The icon a browser asks for at the root, and the one the page names.
    for path in ["/favicon.ico", "/console/favicon.svg"] {
        let icon = app
            .http
            .get(format!("{}{path}", app.url))
            .send()
            .await
            .unwrap();
        assert_eq!(icon.status(), 200, "{path}");
        assert_eq!(icon.headers()["content-type"], "image/svg+xml", "{path}");
    }

    // Nothing is loaded from another origin.
    for file in ["index.html", "app.js", "style.css", "favicon.svg"] {
        // The SVG namespace is a name, not an address anything loads.
        let text = std::fs::read_to_string(console_dir().join(file))
            .unwrap()
            .replace("http://www.w3.org/2000/svg", "");
        assert!(
            !text.contains("http://") && !text.contains("https://"),
            "{file} names another origin"
        );
        assert!(
            !text.contains("localStorage.set") && !text.contains("innerHTML"),
            "{file}"
        );
    }

    // Cookie-authenticated writes from another origin are refused; the
    // service's own pages and bearer clients are not.
    let owner = app.register("owner@msp.example").await;
    let write = |origin: &'static str, bearer: bool| {
        let mut request = app
            .http
            .request(Method::PATCH, format!("{}/api/v1/tenant/me", app.url))
            .header("origin", origin)
            .json(&json!({"timezone": "Europe/Berlin"}));
        request = if bearer {
            request.bearer_auth(&owner.access_token)
        } else {
            request.header("cookie", format!("cairn.session_token={}", owner.session))
        };
        request.send()
    };
    let refused = write("https://evil.example", false).await.unwrap();
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("this service's own pages"),
        "{body}"
    );
    assert_eq!(
        app.get("/api/v1/tenant/me", &owner.bearer()).await.body["timezone"],
        "UTC",
        "the refused write changed nothing"
    );
    let own_origin: &'static str = Box::leak(app.url.clone().into_boxed_str());
    assert_eq!(write(own_origin, false).await.unwrap().status(), 200);
    assert_eq!(
        write("https://evil.example", true).await.unwrap().status(),
        200
    );
    app.finish().await;
}

fn console_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../host/assets/console")
}

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("console")
}

/// Whether Chromium and the journey's packages are here; required under
/// `CAIRN_REQUIRE_BROWSER=1`.
fn browser_ready() -> bool {
    let ready = Path::new("/usr/bin/chromium").exists()
        && scripts_dir().join("node_modules/playwright-core").exists()
        && scripts_dir().join("node_modules/axe-core").exists();
    if !ready && std::env::var("CAIRN_REQUIRE_BROWSER").is_ok_and(|v| v == "1") {
        panic!("the browser test needs /usr/bin/chromium and `npm ci` in tests/console (cargo xtask test installs both)");
    }
    ready
}

async fn an_analyst_works_through_the_console_in_a_browser(backend: Backend) {
    if !browser_ready() {
        return;
    }
    let rmm = FakeRmm::start(super::rmm::fake_data()).await;
    let components = cairn_tests::components::connectors_dir(
        &["csv-providers/software-inventory", "connectors/rmm"],
        &[],
    );
    let Some((app, _nvd)) = loaded_with(backend, move |s| {
        s.connectors_dir = components;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
    })
    .await
    else {
        return;
    };
    let owner = app.register("analyst@msp.example").await;
    let rows = vec![
        software(
            "WS-01",
            "Google Chrome",
            "Google LLC",
            "112.0.5615.49",
            "windows",
        ),
        software(
            "WS-02",
            "Google Chrome",
            "Google LLC",
            "112.0.5615.121",
            "windows",
        ),
        software(
            "WS-02",
            "7-Zip 23.01 (x64)",
            "Igor Pavlov",
            "23.01",
            "windows",
        ),
        software("WS-03", HOSTILE, "Mallory", "1.0", "windows"),
    ];
    app.seed(&owner, "rmm", &rows).await;
    app.rebuild(&owner).await;
    scan(&app, &owner, json!({})).await;
    let customer = app
        .post(
            "/api/v1/partner/customers",
            &owner.bearer(),
            json!({"name": "Acme Dental"}),
        )
        .await;
    assert_eq!(customer.status, 201, "{}", customer.text);
    let customer_id = customer.body["id"].as_str().unwrap().to_string();
    // The customer's own inventory, reached by acting in it.
    let acme = super::partner::act(&app, &owner, customer.body["id"].as_str().unwrap()).await;
    let acme_rows = vec![software(
        "AD-01",
        "Google Chrome",
        "Google LLC",
        "111.0.5563.64",
        "windows",
    )];
    app.seed(&acme, "rmm", &acme_rows).await;
    app.rebuild(&acme).await;

    // A partner analyst nobody has granted a customer yet.
    app.add_member(&owner, "partner.analyst@msp.example", "partner_analyst")
        .await;

    // A pending invite, for the accessibility check of its page.
    let pending = app
        .post(
            "/api/v1/invites",
            &owner.bearer(),
            json!({"email": "pending@example.com"}),
        )
        .await;
    assert_eq!(pending.status, 201, "{}", pending.text);
    let pending_token = pending.body["token"].as_str().unwrap().to_string();

    let shots = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/console-screenshots")
        .join(format!("{backend:?}").to_lowercase());
    std::fs::create_dir_all(&shots).unwrap();
    let out = tokio::process::Command::new("node")
        .arg(scripts_dir().join("journey.mjs"))
        .env("CAIRN_URL", &app.url)
        .env("CAIRN_EMAIL", "analyst@msp.example")
        .env("CAIRN_PASSWORD", PASSWORD)
        .env("CAIRN_SCREENSHOTS", &shots)
        .env("CAIRN_HOSTILE", HOSTILE)
        .env("CAIRN_PENDING_INVITE", &pending_token)
        .env("CAIRN_RMM_URL", &rmm.base_url)
        .env("CAIRN_RMM_USER", RMM_USER)
        .env("CAIRN_RMM_PASSWORD", RMM_PASSWORD)
        .output()
        .await
        .expect("node runs the journey");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|_| {
            panic!(
                "journey output: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert!(
        result["error"].is_null(),
        "the journey failed: {}",
        result["error"].as_str().unwrap_or_default()
    );
    let checks = &result["checks"];
    println!(
        "console first load (navigation to a usable sign-in form): {} ms; assets {} bytes gzipped",
        checks["first_load_ms"],
        compressed_assets()
    );
    assert_eq!(checks["redirected_to"], "/console/login");
    // The default dashboard's widgets, with charts drawn.
    assert!(
        checks["widgets"].as_array().unwrap().len() >= 4,
        "{}",
        checks["widgets"]
    );
    assert!(
        checks["charts"].as_i64().unwrap() >= 1,
        "{}",
        checks["charts"]
    );
    assert_eq!(checks["login_error"], "wrong email or password");
    // A widget added from the page, with only the types that can draw its
    // metric offered, then removed again.
    assert_eq!(
        checks["widget_types_offered"],
        json!(["bar", "pie", "table", "list"])
    );
    let added = checks["widget_added"].as_str().unwrap_or_default();
    assert!(
        added.starts_with("Where devices come from: rmm 3"),
        "{added}"
    );
    assert_eq!(
        checks["widgets_after_removal"].as_u64(),
        Some(checks["widgets"].as_array().unwrap().len() as u64)
    );
    // The hostile name is text: no image, no script ran, no policy broken.
    assert_eq!(checks["images_in_main"], 0);
    assert_eq!(result["dialogs"], json!([]));
    assert_eq!(
        result["csp_violations"],
        json!([]),
        "{}",
        result["csp_violations"]
    );
    // An upload says first what it replaces, then which rows it refused
    // and why; the page keeps it among the past uploads.
    let warning = checks["replace_warning"].as_str().unwrap_or_default();
    assert!(warning.contains("holds nothing yet"), "{warning}");
    let warning = checks["replace_warning_after"].as_str().unwrap_or_default();
    assert!(
        warning.contains("replaces what Software inventory holds now (2 rows on 2 devices"),
        "{warning}"
    );
    let refused = checks["upload_rejections"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{refused:?} {}", checks["upload_figures"]);
    assert!(refused[0].as_str().unwrap().starts_with('4'), "{refused:?}");
    let past = checks["past_uploads"].as_array().unwrap();
    assert_eq!(
        past[1..4],
        [
            json!("Software inventory"),
            json!("software.csv"),
            json!("succeeded")
        ],
        "{past:?}"
    );
    assert!(past[6].as_str().unwrap().starts_with("row 4: "), "{past:?}");
    // An unknown CVE (NVD does not know it, or cannot be reached here)
    // is a sentence, not a failure.
    let unknown = checks["unknown_cve"].as_str().unwrap_or_default();
    assert!(
        unknown.starts_with("CVE-2020-0001")
            && unknown.contains("is not in this service's CVE data")
            && !unknown.contains("Something went wrong"),
        "{unknown}"
    );
    // Moments read as a person reads them, not as RFC 3339.
    for moment in [&checks["member_joined"], &checks["invite_expires"]] {
        let text = moment.as_str().unwrap_or_default();
        // "30 Nov 2026, 09:20 UTC"
        let (date, time) = text.split_once(", ").unwrap_or_default();
        let date: Vec<&str> = date.split(' ').collect();
        assert!(
            date.len() == 3
                && date[1].chars().all(char::is_alphabetic)
                && time.len() == 9
                && time.ends_with(" UTC"),
            "{text}"
        );
    }
    // No page shows a value the console failed to put in words.
    assert_eq!(
        checks["words_of_code"],
        json!([]),
        "pages showing null, undefined or NaN"
    );
    assert_eq!(checks["filtered_rows"], 1);
    let versions = checks["chrome_versions"].as_str().unwrap_or_default();
    assert!(
        versions.contains("112.0.5615.49 (1)") && versions.contains("112.0.5615.121 (1)"),
        "{versions}"
    );
    let researched: Vec<String> =
        serde_json::from_value(checks["research_versions"].clone()).unwrap();
    assert_eq!(researched.len(), 2, "{researched:?}");
    assert!(
        researched
            .iter()
            .any(|r| r.contains("112.0.5615.49") && r.contains("CVE-2023-2033")),
        "{researched:?}"
    );
    assert_eq!(checks["filtered_url"], "?search=chrome");
    let devices: Vec<String> = serde_json::from_value(checks["devices"].clone()).unwrap();
    assert_eq!(devices.len(), 3, "{devices:?} {}", checks["devices_errors"]);
    // Name contains WS-0 and (an application starting 7-zip, or macOS).
    assert_eq!(checks["rules_renumbered"], json!([1, 0]));
    assert_eq!(checks["ruled_devices"], json!(["WS-02"]));
    // Chrome below 112.0.5615.100 in version order: WS-01's .49, not
    // WS-02's .121 (as text, .121 sorts first).
    assert_eq!(checks["below_version"], json!(["WS-01"]));
    // The vulnerabilities open with the known exploited first: every
    // KEV row before every other.
    let kev: Vec<String> =
        serde_json::from_value(checks["vulnerabilities_kev_column"].clone()).unwrap();
    let first_other = kev.iter().position(|k| k != "yes").unwrap_or(kev.len());
    assert!(
        first_other > 0 && kev[first_other..].iter().all(|k| k != "yes"),
        "{kev:?}"
    );
    // A heading sorts the rows shown: twice on Devices, most first.
    let counts: Vec<i64> = checks["sorted_by_devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().parse().unwrap())
        .collect();
    assert!(
        counts.len() > 1 && counts.windows(2).all(|w| w[0] >= w[1]),
        "{counts:?}"
    );
    assert_eq!(checks["devices_sort_state"], "descending");
    // Then by name (the browser's collation): 7-Zip before Google Chrome,
    // which led by devices.
    let names: Vec<String> = serde_json::from_value(checks["sorted_by_name"].clone()).unwrap();
    let at = |name: &str| names.iter().position(|n| n.starts_with(name));
    assert!(
        at("7-Zip") < at("Google Chrome") && at("7-Zip").is_some(),
        "{names:?}"
    );
    // Counters read in words: a unit agrees with its figure.
    let counters: Vec<String> = serde_json::from_value(checks["counters"].clone()).unwrap();
    assert!(
        counters
            .iter()
            .any(|c| c.ends_with(" application") || c.ends_with(" applications")),
        "{counters:?}"
    );
    for counter in &counters {
        let (figure, unit) = counter.split_once(' ').unwrap_or((counter, ""));
        assert!(
            figure != "1" || !unit.ends_with('s'),
            "{counter} in {counters:?}"
        );
    }
    // The sync health table is not clipped by its widget at 1280 px, and
    // the KEV counter opens the KEV findings.
    let fits = &checks["sync_health_fits"];
    assert!(
        fits["table"].as_f64() <= fits["widget"].as_f64() && fits["widget"].as_f64() > Some(900.0),
        "{fits}"
    );
    assert_eq!(
        checks["kev_widget_opened"],
        "/console/vulnerabilities?kev=true"
    );
    // A customer's name opens its page: its figures and syncs.
    let customer = checks["customer_page"].as_str().unwrap_or_default();
    assert!(
        customer.contains("Devices\n1")
            && customer.contains("Inventory last rebuilt")
            && customer.contains("In no group."),
        "{customer}"
    );
    // An analyst with no customer is told why; once granted from the
    // access page, Acme Dental is the one customer it sees.
    let unassigned = checks["analyst_unassigned"].as_str().unwrap_or_default();
    assert!(
        unassigned.starts_with("You reach no customer yet"),
        "{unassigned}"
    );
    assert_eq!(checks["access_status"], 200);
    assert_eq!(checks["access_saved"], true);
    let theirs: Vec<String> = serde_json::from_value(checks["analyst_customers"].clone()).unwrap();
    assert!(
        theirs.len() == 1 && theirs[0].starts_with("Acme Dental"),
        "{theirs:?}"
    );
    let granted = app.get("/api/v1/partner/access", &owner.bearer()).await;
    assert_eq!(
        granted.body[0]["access"]["customer_ids"],
        json!([customer_id]),
        "{}",
        granted.text
    );
    // Widget tables head their columns in words, not field names.
    assert_eq!(
        checks["widget_headers"],
        json!([
            "CVE ID",
            "EPSS score",
            "EPSS percentile",
            "Devices",
            "Area",
            "Connector",
            "Health",
            "Last status",
            "Last run",
            "Last success",
            "Last error"
        ])
    );
    // Each device's open and KEV CVEs beside it; by risk, the devices
    // with open findings, WS-01 (its KEV CVE) first.
    let columns = checks["device_columns"].as_array().unwrap();
    assert_eq!(
        columns[5..7],
        [json!("Open CVEs"), json!("KEV CVEs")],
        "{columns:?}"
    );
    let exposure = checks["device_exposure"].as_array().unwrap();
    let ws01 = exposure.iter().find(|row| row[0] == "WS-01").unwrap();
    assert_ne!(ws01[1], "0", "{exposure:?}");
    assert_eq!(ws01[2], "1", "{exposure:?}");
    let risky = checks["risky_devices"].as_array().unwrap();
    assert_eq!(risky[0][0], "WS-01", "{risky:?}");
    assert_eq!(risky[0][1], "1", "{risky:?}");
    assert_eq!(
        checks["ruled_rules_kept"], "macos",
        "the rules stay in the form"
    );
    assert_eq!(checks["cve_devices"], 1, "WS-01 only");
    assert_eq!(checks["device_cves"], json!(["CVE-2023-2033"]));
    // Each application with its version, publisher and source; each
    // finding with its EPSS and triage beside severity, KEV and SLA.
    let software = checks["device_software"].as_array().unwrap();
    assert_eq!(
        software[..3],
        [
            json!("Google Chrome"),
            json!("112.0.5615.49"),
            json!("Google LLC")
        ],
        "{software:?}"
    );
    for column in ["Severity", "KEV", "EPSS", "SLA", "Triage"] {
        assert!(
            checks["device_cve_columns"]
                .as_array()
                .unwrap()
                .contains(&json!(column)),
            "{column}: {}",
            checks["device_cve_columns"]
        );
    }
    assert_eq!(checks["triage_error"], "not_affected needs a justification");
    assert!(checks["triage_error_described"].is_string());
    assert_eq!(checks["triage_status_shown"], "not_affected");
    assert_eq!(
        checks["triage_justification_shown"],
        "The vulnerable code is not used"
    );
    let offered: Vec<String> = serde_json::from_value(checks["triage_offered"].clone()).unwrap();
    assert!(
        offered.contains(&"resolved".to_string()) && offered.len() == 7,
        "{offered:?}"
    );
    // When, who, product, from, to, justification, comment.
    let row: Vec<String> = serde_json::from_value(checks["triage_history"].clone()).unwrap();
    assert_eq!(
        row[1..],
        [
            "analyst@msp.example",
            "google chrome",
            "to evaluate",
            "not affected",
            "The vulnerable code is not used",
            "checked with the vendor"
        ],
        "{row:?}"
    );
    // The SLA: CVE-2023-2033 is in KEV, so WS-01's finding is due on
    // CISA's date, long past; the exception's requester may not approve it.
    let due_row: Vec<String> = serde_json::from_value(checks["cve_due_row"].clone()).unwrap();
    assert_eq!(due_row[0], "WS-01", "{due_row:?}");
    assert_eq!(checks["cve_device_link"], "/console/devices/WS-01");
    assert_eq!(due_row[3], "standard", "{due_row:?}");
    assert_eq!(due_row[4].len(), 10, "a date: {due_row:?}");
    assert!(due_row[5].starts_with("overdue ("), "{due_row:?}");
    assert_eq!(checks["exception_error"], "must be in the future");
    let shown: Vec<String> = serde_json::from_value(checks["sla_figures"].clone()).unwrap();
    assert_eq!(
        shown,
        [
            "Overdue",
            "Due soon",
            "Within SLA",
            "Excepted",
            "Fixed on time (30 d)"
        ]
    );
    let listed: Vec<String> = serde_json::from_value(checks["sla_findings"].clone()).unwrap();
    assert!(
        listed
            .iter()
            .any(|r| r.contains("CVE-2023-2033") && r.contains("overdue")),
        "{listed:?}"
    );
    let exception: Vec<String> = serde_json::from_value(checks["sla_exceptions"].clone()).unwrap();
    assert_eq!(
        exception[..3],
        ["CVE-2023-2033", "every device", "pending"],
        "{exception:?}"
    );
    assert_eq!(
        checks["self_approval"],
        "no one decides an exception they requested"
    );
    let overdue: Vec<String> = serde_json::from_value(checks["sla_overdue"].clone()).unwrap();
    assert!(
        !overdue.is_empty() && overdue.iter().all(|c| c.starts_with("CVE-")),
        "{overdue:?}"
    );
    assert_eq!(checks["sla_badges"].as_u64(), Some(overdue.len() as u64));
    // Automation: the dry run names what would go out, the saved rule runs
    // once, its log says it fired, its e-mail waits with the reason.
    assert_eq!(checks["automation_empty"], "No rule yet.");
    let dry = checks["automation_dry_run"].as_str().unwrap_or_default();
    assert_eq!(
        dry,
        "Would fire for 1 finding(s) and send: email to soc@example.com. Nothing was sent."
    );
    let dry_rows: Vec<String> =
        serde_json::from_value(checks["automation_dry_rows"].clone()).unwrap();
    // The device rule kept WS-02's KEV finding (7-Zip) out.
    assert_eq!(dry_rows.len(), 1, "{dry_rows:?}");
    assert!(
        dry_rows[0].contains("CVE-2023-2033") && dry_rows[0].contains("WS-01"),
        "{dry_rows:?}"
    );
    let rule: Vec<String> = serde_json::from_value(checks["automation_rules"].clone()).unwrap();
    assert_eq!(
        rule[..4],
        [
            "KEV findings to the SOC",
            "a CVE in KEV",
            "e-mail to soc@example.com",
            "yes"
        ],
        "{rule:?}"
    );
    assert_eq!(checks["automation_disabled"], "no");
    let kept = app.get("/api/v1/automation/rules", &owner.bearer()).await;
    assert_eq!(kept.body[0]["enabled"], false, "{}", kept.text);
    assert_eq!(
        kept.body[0]["conditions"]["devices"]["rules"][0]["value"],
        "WS-01"
    );
    // A remediation planned from the CVE's page, then approved: one script
    // scheduled on the computer, the RMM's words shown, the fix awaited.
    assert!(
        checks["remediation_draft"]
            .as_str()
            .unwrap_or_default()
            .starts_with("A draft: nothing has been sent."),
        "{}",
        checks["remediation_draft"]
    );
    let planned: Vec<String> =
        serde_json::from_value(checks["remediation_planned"].clone()).unwrap();
    assert_eq!(planned[..3], ["ACME-WS-01", "7-Zip 23.01 (x64)", "23.01"]);
    assert_eq!(planned[4], "planned", "{planned:?}");
    let sent: Vec<String> = serde_json::from_value(checks["remediation_sent"].clone()).unwrap();
    assert_eq!(sent[4], "reported done; waiting for the next inventory");
    assert!(
        sent[5].starts_with("7-Zip 23.01 (x64) updated to"),
        "{sent:?}"
    );
    let again: Vec<String> =
        serde_json::from_value(checks["remediation_device_plan"].clone()).unwrap();
    assert_eq!(again[..3], ["ACME-WS-01", "7-Zip 23.01 (x64)", "23.01"]);
    assert_eq!(again[4], "left out", "{again:?}");
    assert!(
        again[5].starts_with("a remediation of it is under way"),
        "{again:?}"
    );
    let schedules = rmm.schedules();
    assert_eq!(schedules.len(), 1, "{schedules:?}");
    assert_eq!(schedules[0]["ComputerId"], 101);
    assert_eq!(
        schedules[0]["Parameters"],
        format!("Package=7-Zip 23.01 (x64)|Version={}", planned[3])
    );
    let outcomes: Vec<String> = serde_json::from_value(checks["automation_log"].clone()).unwrap();
    assert!(outcomes.contains(&"fired".to_string()), "{outcomes:?}");
    let sent: Vec<String> =
        serde_json::from_value(checks["automation_deliveries"].clone()).unwrap();
    assert!(
        sent.iter()
            .any(|c| c.contains("no SMTP server is configured")),
        "{sent:?}"
    );
    // Each finding fired once over the whole journey (later uploads add
    // findings of their own, which fire then).
    let lines = app
        .get("/api/v1/automation/log?limit=500", &owner.bearer())
        .await;
    let mut fired: Vec<(String, String)> = lines.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["outcome"] == "fired")
        .map(|l| (l["cve_id"].to_string(), l["device_name"].to_string()))
        .collect();
    fired.sort();
    let count = fired.len();
    fired.dedup();
    assert_eq!(count, fired.len(), "{}", lines.text);
    assert!(
        fired.contains(&("\"CVE-2023-2033\"".into(), "\"WS-01\"".into())),
        "{fired:?}"
    );
    let customers: Vec<String> = serde_json::from_value(checks["customers"].clone()).unwrap();
    assert!(customers[0].starts_with("Acme Dental"), "{customers:?}");
    // Acting in the customer shows its data, not the partner's.
    let acting: Vec<String> =
        serde_json::from_value(checks["acting_applications"].clone()).unwrap();
    assert_eq!(acting.len(), 1, "{acting:?}");
    assert!(acting[0].starts_with("Google Chrome"), "{acting:?}");
    // The partner's own pages: a group made and shown, an application
    // across customers, the audit of what was written.
    assert_eq!(checks["group_members"], "Acme Dental");
    assert_eq!(checks["group_overview"], json!(["Acme Dental"]));
    let across: Vec<String> = serde_json::from_value(checks["across_customers"].clone()).unwrap();
    assert_eq!(across.len(), 1, "{across:?}");
    assert!(
        across[0].contains("Acme Dental") && across[0].contains("111.0.5563.64 (1)"),
        "{across:?}"
    );
    let audited: Vec<String> = serde_json::from_value(checks["audit_rows"].clone()).unwrap();
    assert!(
        audited
            .iter()
            .any(|row| row.contains("POST /api/v1/partner/groups")),
        "{audited:?}"
    );
    let audit = app.get("/api/v1/partner/audit", &owner.bearer()).await;
    assert!(
        audit.text.contains("/api/v1/partner/customers"),
        "{}",
        audit.text
    );
    assert_eq!(checks["bookmark_rows"], 1);
    // The invite link opens its page, which joins the tenant as invited.
    let link = checks["invite_link"].as_str().unwrap_or_default();
    assert!(link.contains("/console/invites/"), "{link}");
    let organization = app.get("/api/v1/tenant/me", &owner.bearer()).await.body["name"].clone();
    assert_eq!(
        checks["invite_heading"],
        format!("Join {}", organization.as_str().unwrap_or_default())
    );
    assert_eq!(checks["invite_error"], "must be 8 to 256 characters");
    assert_eq!(
        checks["joined_as"],
        "Signed in as colleague@example.com (member)."
    );
    assert_eq!(checks["used_invite"], "this invite has already been used.");
    let members = app.get("/api/v1/tenant/members", &owner.bearer()).await;
    assert!(
        members.text.contains("colleague@example.com"),
        "{}",
        members.text
    );
    assert_eq!(
        checks["storage_keys"], 0,
        "nothing kept in the browser's storage"
    );
    assert_eq!(checks["page_mentions_token"], false);
    assert_eq!(checks["phone_overflow"], 0, "nothing wider than 390 px");
    assert_eq!(
        checks["phone_overflow_elsewhere"],
        json!({"/console/": 0, "/console/devices": 0, "/console/devices/WS-01": 0,
               "/console/members": 0, "/console/uploads": 0, "/console/partner/groups": 0,
               "/console/partner": 0, "/console/partner/access": 0, "/console/sla": 0, "/console/automation": 0, "/console/remediation": 0}),
        "nothing wider than 390 px"
    );
    assert_eq!(checks["desktop_overflow"], 0, "nothing wider than 1280 px");
    // The triage was written through the API.
    let triage = app
        .get(
            "/api/v1/vulnerabilities/cve/CVE-2023-2033/triage",
            &owner.bearer(),
        )
        .await;
    assert!(
        triage.text.contains("checked with the vendor"),
        "{}",
        triage.text
    );
    // Accessibility: no serious or critical violation on any page.
    let mut serious = vec![];
    for page in result["axe"].as_array().unwrap() {
        for violation in page["violations"].as_array().unwrap() {
            if matches!(violation["impact"].as_str(), Some("serious" | "critical")) {
                serious.push(format!("{}: {}", page["path"], violation));
            }
        }
    }
    assert_eq!(result["axe"].as_array().unwrap().len(), 24);
    assert!(serious.is_empty(), "{serious:#?}");
    let listed: Vec<String> = serde_json::from_value(result["screenshots"].clone()).unwrap();
    assert_eq!(listed.len(), 30);
    for name in listed {
        assert!(shots.join(&name).exists(), "{name}");
    }
    app.finish().await;
}

/// The console's files gzipped, in bytes.
fn compressed_assets() -> usize {
    let mut total = 0;
    for file in ["index.html", "app.js", "style.css", "favicon.svg"] {
        let bytes = std::fs::read(console_dir().join(file)).unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&bytes).unwrap();
        total += gz.finish().unwrap().len();
    }
    total
}
