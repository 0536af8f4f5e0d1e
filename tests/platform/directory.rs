//! The directory connector (Entra ID over Graph): users with aliases from
//! their proxy addresses, groups and members paged, and the user view's
//! joins: a badge roster row matched through an alias (its flag on the
//! user) and the devices whose user they are.

use cairn_tests::components::connectors_dir;
use cairn_tests::fake_graph::FakeGraph;
use cairn_tests::fake_oauth::{FakeOauth, CLIENT_ID, CLIENT_SECRET, DIRECTORY_TENANT};
use cairn_tests::{backend_tests, Backend, TestApp};
use serde_json::{json, Value};

use super::mdm::{config as mdm_config, graph_data, names, sync};

backend_tests!(
    directory_users_are_joined_to_rosters_groups_and_devices,
    the_directory_is_seeded_from_the_mdm_registration
);

fn user(upn: &str, mail: &str, proxy_addresses: Value) -> Value {
    json!({"id": format!("id-{upn}"), "userPrincipalName": upn, "mail": mail,
           "displayName": upn.split('@').next().unwrap(), "accountEnabled": true,
           "proxyAddresses": proxy_addresses})
}

async fn directory_users_are_joined_to_rosters_groups_and_devices(backend: Backend) {
    let idp = FakeOauth::start().await;
    let mut data = graph_data();
    data.users = vec![
        user(
            "Ada@Contoso.example",
            "Ada@Contoso.example",
            json!([
                "SMTP:ada@contoso.example",
                "smtp: A.Lovelace@Contoso.example ",
                "SIP:ada.sip@contoso.example",
                "X500:/o=Contoso/ou=ada"
            ]),
        ),
        user("grace@contoso.example", "grace@contoso.example", json!([])),
    ];
    data.groups = vec![
        json!({"id": "g-1", "displayName": "Engineering", "mail": null}),
        json!({"id": "g-2", "displayName": "Badge Admins", "mail": null}),
    ];
    data.members.insert(
        "g-1".into(),
        vec![
            json!({"@odata.type": "#microsoft.graph.user", "id": "id-ada", "userPrincipalName": "Ada@Contoso.example"}),
            json!({"@odata.type": "#microsoft.graph.user", "id": "id-grace", "userPrincipalName": "grace@contoso.example"}),
            json!({"@odata.type": "#microsoft.graph.group", "id": "g-2"}),
        ],
    );
    data.members.insert(
        "g-2".into(),
        vec![json!({"@odata.type": "#microsoft.graph.user", "id": "id-ada", "userPrincipalName": "Ada@Contoso.example"})],
    );
    // One user, group or member a page.
    data.directory_page_size = 1;
    // MAC-01's primary user is Ada under an alias.
    data.devices[2]["userPrincipalName"] = json!("A.Lovelace@Contoso.example");
    let graph = FakeGraph::start(&idp, data).await;
    let dir = connectors_dir(
        &[
            "connectors/mdm",
            "connectors/directory",
            "csv-providers/badge-roster",
        ],
        &[],
    );
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.plugin_plain_http_hosts = "127.0.0.1".into();
        s.job_poll_interval_ms = 50;
    })
    .await
    else {
        return;
    };
    let owner = app.register("owner@msp.example").await;
    let saved = app
        .post(
            "/api/v1/mdm/config",
            &owner.bearer(),
            mdm_config(&idp, &graph),
        )
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let directory = json!({
        "auth_url": idp.base_url, "graph_url": graph.base_url, "tenant_id": DIRECTORY_TENANT,
        "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET
    });
    let saved = app
        .post("/api/v1/directory/config", &owner.bearer(), directory)
        .await;
    assert_eq!(saved.status, 200, "{}", saved.text);
    let tested = app
        .post(
            "/api/v1/directory/test-connection",
            &owner.bearer(),
            json!({}),
        )
        .await;
    assert_eq!(tested.status, 200, "{}", tested.text);
    assert_eq!(sync(&app, &owner, "mdm").await["status"], "success");
    let job = sync(&app, &owner, "directory").await;
    assert_eq!(job["status"], "success", "{job}");

    let roster = "Badge Number,Cardholder,E-mail,Admin\n\
                  1001,Ada Lovelace,A.Lovelace@Contoso.example,Yes\n\
                  1002,Someone Else,nobody@contoso.example,No\n";
    let upload = app
        .ingest(&owner, "badge-roster", "badges.csv", roster.into())
        .await;
    assert_eq!(upload["status"], "success", "{upload}");

    let users = app.get("/api/v1/directory/users", &owner.bearer()).await;
    assert_eq!(users.status, 200, "{}", users.text);
    assert_eq!(users.body["total"], 2, "{}", users.text);
    let found = app
        .get("/api/v1/directory/users?search=GRACE", &owner.bearer())
        .await;
    assert_eq!(found.body["total"], 1, "{}", found.text);

    // Asked for in any case.
    let ada = app
        .get(
            "/api/v1/directory/user/ADA@contoso.example",
            &owner.bearer(),
        )
        .await;
    assert_eq!(ada.status, 200, "{}", ada.text);
    assert_eq!(
        ada.body["fields"]["aliases"],
        json!(["ada@contoso.example", "a.lovelace@contoso.example"]),
        "smtp: entries in any case, trimmed and lowercased; SIP and X500 ignored"
    );
    let mut groups: Vec<&str> = ada.body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["fields"]["group_name"].as_str().unwrap())
        .collect();
    groups.sort();
    assert_eq!(groups, ["Badge Admins", "Engineering"]);
    assert_eq!(
        ada.body["flags"],
        json!({"badge_admin": true}),
        "the roster row matched through an alias: {}",
        ada.text
    );
    assert_eq!(ada.body["enrichment"][0]["source"], "badge-roster");
    assert_eq!(
        ada.body["linked_devices"],
        json!([
            {"device_name": "LAPTOP-01", "sources": ["mdm"]},
            {"device_name": "MAC-01", "sources": ["mdm"]}
        ])
    );
    let grace = app
        .get(
            "/api/v1/directory/user/grace@contoso.example",
            &owner.bearer(),
        )
        .await;
    assert_eq!(grace.body["flags"], json!({}));
    assert_eq!(
        names(
            &json!({"items": grace.body["linked_devices"]}),
            "device_name"
        ),
        ["LAPTOP-02"]
    );

    // The device views show a device's user as the directory user, by
    // UPN or by alias.
    let devices = app.get("/api/v1/devices/devices", &owner.bearer()).await;
    let user_of = |name: &str| {
        devices.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["device_name"] == name)
            .map(|d| d["directory_user"]["upn"].clone())
            .unwrap()
    };
    assert_eq!(
        user_of("LAPTOP-01"),
        "ada@contoso.example",
        "{}",
        devices.text
    );
    assert_eq!(user_of("MAC-01"), "ada@contoso.example");
    assert_eq!(user_of("LAPTOP-02"), "grace@contoso.example");
    let rollup = app.wait_for_rollup(&owner).await;
    assert_eq!(rollup["status"], "success", "{rollup}");
    let asset = app
        .get("/api/v1/devices/by-name/mac-01", &owner.bearer())
        .await;
    assert_eq!(asset.status, 200, "{}", asset.text);
    assert_eq!(asset.body["directory_user"]["upn"], "ada@contoso.example");
    assert_eq!(asset.body["directory_user"]["source"], "directory");

    // Another tenant sees none of it.
    let other = app.register("other@msp.example").await;
    app.get(
        "/api/v1/directory/user/ada@contoso.example",
        &other.bearer(),
    )
    .await
    .assert_error(404);
    let theirs = app.get("/api/v1/directory/users", &other.bearer()).await;
    assert_eq!(theirs.body["items"], json!([]));
    app.finish().await;
}

/// A certificate and its key in one PEM bundle, as operators deploy them.
fn bundle() -> String {
    format!(
        "-----BEGIN CERTIFICATE-----\nMIIBfakecertificatebody\n-----END CERTIFICATE-----\n{}",
        cairn_tests::fake_oauth::PRIVATE_KEY
    )
}

async fn the_directory_is_seeded_from_the_mdm_registration(backend: Backend) {
    // The database exists before the service starts, with the default
    // tenant; a second tenant-default area (rmm) has no connector here.
    let Some(scratch) = cairn_tests::ScratchDatabase::create(backend).await else {
        return;
    };
    let url = scratch.url.clone();
    let db = cairn_core::db::Db::connect(&url, 2).await.unwrap();
    db.migrate().await.unwrap();
    let tenant = tenant_of();
    sqlx::query("INSERT INTO tenants (id, name, timezone, created_at, updated_at) VALUES ($1, 'MSP', 'UTC', 0, 0)")
        .bind(tenant.as_str())
        .execute(&db.pool)
        .await
        .unwrap();
    db.close().await;

    let seeds = json!({"mdm": {
        "auth_url": "https://login.microsoftonline.com", "graph_url": "https://graph.microsoft.com",
        "tenant_id": DIRECTORY_TENANT, "client_id": CLIENT_ID,
        "certificate_thumbprint": cairn_tests::fake_oauth::THUMBPRINT_SHA256,
        "private_key": bundle()
    }})
    .to_string();
    let dir = connectors_dir(&["connectors/mdm", "connectors/directory"], &[]);
    let seed_url = url.clone();
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.database_url = seed_url;
        s.encryption_key = "33".repeat(32);
        s.default_tenant_id = "tenant-default".into();
        s.seed_configs = seeds;
    })
    .await
    else {
        return;
    };
    let state = &app.server.state;
    let stored = |area: &'static str| async move {
        cairn_integrations::storage::config(&state.db, &state.secrets, &tenant_of(), area)
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{area} seeded"))
    };
    let mdm = stored("mdm").await;
    let directory = stored("directory").await;
    for field in [
        "tenant_id",
        "client_id",
        "certificate_thumbprint",
        "graph_url",
        "auth_url",
    ] {
        assert_eq!(directory.settings[field], mdm.settings[field], "{field}");
    }
    assert_eq!(mdm.secrets["private_key"], bundle());
    let key = directory.secrets["private_key"].as_str().unwrap();
    assert!(key.starts_with("-----BEGIN") && key.contains("PRIVATE KEY"));
    assert!(!key.contains("CERTIFICATE"), "only the key block is reused");
    assert!(
        directory.settings.get("private_key").is_none(),
        "the key is stored as a secret"
    );
    app.finish().await;

    // A second start seeds nothing over what is stored.
    let dir = connectors_dir(&["connectors/mdm", "connectors/directory"], &[]);
    let changed = json!({"mdm": {"auth_url": "https://changed.example", "graph_url": "https://changed.example",
        "tenant_id": "other", "client_id": "other", "client_secret": "other-secret"}})
    .to_string();
    let seed_url = url.clone();
    let Some(app) = TestApp::start_with(backend, move |s| {
        s.connectors_dir = dir;
        s.database_url = seed_url;
        s.encryption_key = "33".repeat(32);
        s.default_tenant_id = "tenant-default".into();
        s.seed_configs = changed;
    })
    .await
    else {
        return;
    };
    let state = &app.server.state;
    let kept =
        cairn_integrations::storage::config(&state.db, &state.secrets, &tenant_of(), "directory")
            .await
            .unwrap()
            .unwrap();
    assert_eq!(kept.settings["tenant_id"], DIRECTORY_TENANT);
    assert!(kept.secrets.get("client_secret").is_none());
    app.finish().await;
    scratch.remove().await;
}

fn tenant_of() -> cairn_core::ids::TenantId {
    cairn_core::ids::TenantId("tenant-default".into())
}
