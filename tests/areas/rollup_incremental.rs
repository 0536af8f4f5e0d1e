//! The incremental rollup against the whole rebuild: after random syncs
//! through the host's own write path (upsert, then the prune that records
//! the run's completion), folding the change queue in must leave exactly
//! the applications, vendors and assets a rebuild from scratch writes.

use std::collections::BTreeMap;

use cairn_core::db::fence::NoFence;
use cairn_core::ids::TenantId;
use cairn_integrations::storage::upsert_rows;
use cairn_inventory::rollup::{self, Mode};
use cairn_inventory::seen::prune_unseen;
use cairn_plugins::{InventoryRow, MappedRow, RecordRow, RowText};
use cairn_tests::{backend_tests, Backend, TestDb};
use serde_json::json;

backend_tests!(incremental_rollup_equals_a_whole_rebuild_on_random_changes);

/// A small deterministic generator: the same rounds on every run.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, values: &[&'a str]) -> &'a str {
        values[self.roll(values.len())]
    }

    fn maybe(&mut self, values: &[&str]) -> Option<RowText> {
        let i = self.roll(values.len() + 1);
        values.get(i).map(|&v| v.into())
    }
}

/// Device names that merge (case, FQDN and 15-character NetBIOS forms),
/// differ only in padding, are blank, or are not ASCII.
const DEVICES: &[&str] = &[
    "WS-01",
    "ws-01",
    "WS-01.corp.example.com",
    " WS-01 ",
    "ACCOUNTING-LAPTOP-07",
    "ACCOUNTING-LAPT",
    "ÉCOLE-PC",
    "école-pc",
    "MÜLLER-NB",
    "SRV-DB",
    "   ",
    "KIOSK_%",
];
const APPLICATIONS: &[&str] = &[
    "Chrome",
    "Chrome (x64)",
    "Teams (3f2504e0-4f89-11d3-9a0c-0305e82c3301)",
    "Teams",
    "Zoom",
    "Büro Suite",
    "7-Zip 23.01 (x64)",
    "Notepad++",
];
/// Each application's vendor, and the other spelling some agents report.
const VENDORS: &[(&str, &str)] = &[
    ("Google", "Google LLC"),
    ("Google", "Google LLC"),
    ("Microsoft", "Microsoft Corporation"),
    ("Microsoft", "Microsoft Corporation"),
    ("Zoom Video", "Zoom Video Communications"),
    ("Büro GmbH", "BÜRO GMBH"),
    ("Igor Pavlov", "Igor Pavlov"),
    ("Don Ho", "Notepad++ Team"),
];
const VERSIONS: &[&str] = &["1.0", "1.1", "2.0", "10.0.1", "9.9"];

fn random_item(dice: &mut Dice) -> InventoryRow {
    // One row in eight has no device name at all.
    let device_name = (dice.roll(8) != 0).then(|| dice.pick(DEVICES).into());
    let application = dice.roll(APPLICATIONS.len() + 1);
    let (usual, other) = VENDORS[application % VENDORS.len()];
    let vendor = match dice.roll(6) {
        0 => None,
        1 => Some(other.into()),
        _ => Some(usual.into()),
    };
    InventoryRow {
        device_name,
        device_id: dice
            .maybe(&["agent-1", "agent-2"])
            .filter(|_| dice.roll(4) == 0),
        os_platform: dice.maybe(&["windows", "Windows", "macOS"]),
        os_version: dice.maybe(&["10", "11", "14.2"]),
        os_name: dice.maybe(&["Windows 11 Pro", "macOS Sonoma"]),
        os_build: dice.maybe(&["22631.2861", "23C71"]),
        user_email: dice.maybe(&["ana@msp.example", "ANA@MSP.EXAMPLE", "jörg@msp.example"]),
        user_name: dice.maybe(&["Ana", "Jörg"]),
        application_name: APPLICATIONS.get(application).map(|&a| a.into()),
        vendor,
        version: dice.maybe(VERSIONS),
        publisher: dice.maybe(&["Acme A", "Acme B"]),
        client_id: None,
        group_ids: vec![],
    }
}

fn random_record(dice: &mut Dice, key: usize) -> RecordRow {
    let fields = json!({
        "device_id": format!("dev-{}", dice.roll(3)),
        "managed_device_id": format!("uuid-{}", dice.roll(3)),
        "infected": dice.roll(2) == 0,
        "active_threats": dice.roll(4),
        "risk_score": dice.roll(10),
    });
    RecordRow {
        collection: "devices".into(),
        record_type: "device".into(),
        key: format!("record-{key}").into(),
        device_name: Some(dice.pick(DEVICES).into()),
        client_id: None,
        group_ids: vec![],
        body: fields.to_string(),
        fields,
    }
}

/// What one source holds upstream: the sync writes all of it, and the
/// prune removes what it no longer holds.
#[derive(Default)]
struct Upstream {
    items: Vec<InventoryRow>,
    records: Vec<RecordRow>,
}

impl Upstream {
    fn change(&mut self, dice: &mut Dice, records: bool) {
        for _ in 0..dice.roll(4) {
            if !self.items.is_empty() {
                let i = dice.roll(self.items.len());
                self.items.remove(i);
            }
        }
        for _ in 0..dice.roll(4) {
            self.items.push(random_item(dice));
        }
        for _ in 0..dice.roll(4) {
            if self.items.is_empty() {
                break;
            }
            // The same row reported with other details.
            let i = dice.roll(self.items.len());
            let fresh = random_item(dice);
            let row = &mut self.items[i];
            match dice.roll(5) {
                0 => row.os_version = fresh.os_version,
                1 => row.user_email = fresh.user_email,
                2 => row.vendor = fresh.vendor,
                3 => row.publisher = fresh.publisher,
                _ => row.os_platform = fresh.os_platform,
            }
        }
        if records {
            let len = self.records.len();
            match dice.roll(3) {
                0 if len > 0 => {
                    self.records.remove(dice.roll(len));
                }
                1 if len > 0 => {
                    let key = dice.roll(len);
                    let fresh = random_record(dice, 0);
                    self.records[key].fields = fresh.fields;
                    self.records[key].device_name = fresh.device_name;
                }
                _ => {
                    let key = 100 + dice.roll(1000);
                    self.records.push(random_record(dice, key));
                }
            }
        }
    }

    async fn sync(&self, test_db: &TestDb, tenant: &TenantId, source: &str, run: &str) {
        let rows: Vec<MappedRow> = self
            .items
            .iter()
            .cloned()
            .map(MappedRow::Inventory)
            .chain(self.records.iter().cloned().map(MappedRow::Record))
            .collect();
        let mut tx = test_db.db.pool.begin().await.unwrap();
        upsert_rows(&mut tx, tenant, source, (run, 0), &rows)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        prune_unseen(&test_db.db, &NoFence, tenant, source, run)
            .await
            .unwrap();
    }
}

/// The rollup's tables as a reader sees them, without the stamps.
async fn stored_rollup(test_db: &TestDb, tenant: &TenantId) -> BTreeMap<String, Vec<String>> {
    let queries = [
        (
            "applications",
            "SELECT name, vendor, CAST(device_count AS TEXT), most_common_version, newest_version, \
             oldest_version, version_counts, versions, platforms, sources, publisher, tally, \
             sort_key FROM applications WHERE tenant_id = $1 ORDER BY name",
        ),
        (
            "assets",
            "SELECT asset_key, device_name, names, raw_names, device_id, os_platform, os_version, \
             user_email, user_name, CAST(application_count AS TEXT), applications, sources, \
             CAST(mdm AS TEXT), CAST(edr AS TEXT), CAST(scan AS TEXT), CAST(last_seen AS TEXT), \
             sort_key FROM assets WHERE tenant_id = $1 ORDER BY asset_key",
        ),
        (
            "vendors",
            "SELECT name, CAST(application_count AS TEXT), CAST(device_count AS TEXT), sort_key \
             FROM vendors WHERE tenant_id = $1 ORDER BY name",
        ),
        (
            // What device search reads: kept in step with the assets,
            // removed with them.
            "asset terms",
            "SELECT a.asset_key, t.field, t.text_value, CAST(t.number_value AS TEXT) \
             FROM asset_terms t JOIN assets a ON a.id = t.asset_id WHERE t.tenant_id = $1 \
             ORDER BY a.asset_key, t.field, t.text_value, t.number_value",
        ),
        (
            "state",
            "SELECT blank_names, completions FROM rollup_state WHERE tenant_id = $1",
        ),
    ];
    let mut tables = BTreeMap::new();
    for (table, query) in queries {
        let rows = sqlx::query(query)
            .bind(tenant.as_str())
            .fetch_all(&test_db.db.pool)
            .await
            .unwrap();
        let rows = rows
            .iter()
            .map(|row| {
                use sqlx::Row;
                (0..row.len())
                    .map(|i| {
                        row.get::<Option<String>, _>(i)
                            .unwrap_or_else(|| "∅".into())
                    })
                    .collect::<Vec<_>>()
                    .join(" | ")
            })
            .collect();
        tables.insert(table.to_string(), rows);
    }
    tables
}

async fn incremental_rollup_equals_a_whole_rebuild_on_random_changes(backend: Backend) {
    let Some(test_db) = TestDb::create(backend).await else {
        return;
    };
    let tenant = test_db.tenant("owner").await;
    let db = &test_db.db;
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    // Syncs of three areas (mdm and edr with device records) and a CSV
    // provider, which records no completion.
    let sources = ["rmm", "mdm", "edr", "scanner", "csv-software"];
    let mut upstream: Vec<Upstream> = sources.iter().map(|_| Upstream::default()).collect();
    for (i, source) in sources.iter().enumerate() {
        for _ in 0..12 {
            upstream[i].change(&mut dice, ["mdm", "edr", "scanner"].contains(source));
        }
        upstream[i].sync(&test_db, &tenant, source, "run-0").await;
    }
    let first = rollup::rebuild_until_current(db, &tenant, Mode::Incremental)
        .await
        .unwrap();
    assert_eq!(first.changes, None, "the first rebuild reads everything");

    let mut folded = 0;
    for round in 1..=24 {
        for _ in 0..1 + dice.roll(2) {
            let i = dice.roll(sources.len());
            let source = sources[i];
            upstream[i].change(&mut dice, ["mdm", "edr", "scanner"].contains(&source));
            upstream[i]
                .sync(&test_db, &tenant, source, &format!("run-{round}"))
                .await;
        }
        // Completion times are milliseconds: keep rounds apart.
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
        let stats = rollup::rebuild_until_current(db, &tenant, Mode::Incremental)
            .await
            .unwrap();
        if stats.changes.is_some() {
            folded += 1;
        }
        let incremental = stored_rollup(&test_db, &tenant).await;
        rollup::rebuild_until_current(db, &tenant, Mode::Whole)
            .await
            .unwrap();
        let whole = stored_rollup(&test_db, &tenant).await;
        for (table, rows) in &whole {
            assert_eq!(
                &incremental[table], rows,
                "round {round}: {table} differ (left: incremental, right: whole)"
            );
        }
        assert!(!whole["applications"].is_empty() && !whole["assets"].is_empty());
        assert!(whole["asset terms"].len() > whole["assets"].len());
    }
    // Only a dominant vendor changing under untouched devices gives way
    // to a whole rebuild.
    assert!(folded >= 18, "only {folded} of 24 rounds were incremental");
    test_db.finish().await;
}
