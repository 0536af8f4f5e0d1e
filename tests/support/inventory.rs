//! Seeding inventory through the host's own write path (the one syncs use)
//! and waiting for the rollup rebuild the way a client would.

use cairn_core::ids::TenantId;
use cairn_integrations::storage::upsert_rows;
use cairn_plugins::{InventoryRow, MappedRow, RecordRow};
use serde_json::Value;

use crate::{Account, TestApp};

/// An inventory row with the fields tests vary.
pub fn item(
    device: &str,
    application: &str,
    vendor: &str,
    version: &str,
    platform: &str,
) -> MappedRow {
    MappedRow::Inventory(InventoryRow {
        device_name: Some(device.into()),
        device_id: None,
        os_platform: Some(platform.into()),
        os_version: None,
        os_name: None,
        os_build: None,
        user_email: None,
        user_name: None,
        application_name: Some(application.into()),
        vendor: Some(vendor.into()),
        version: Some(version.into()),
        publisher: None,
        client_id: None,
        group_ids: vec![],
    })
}

/// An installed program as an RMM reports it: its display name and
/// publisher (no vendor), as matching reads them.
pub fn software(
    device: &str,
    name: &str,
    publisher: &str,
    version: &str,
    platform: &str,
) -> MappedRow {
    MappedRow::Inventory(InventoryRow {
        device_name: Some(device.into()),
        device_id: None,
        os_platform: Some(platform.into()),
        os_version: None,
        os_name: None,
        os_build: None,
        user_email: None,
        user_name: None,
        application_name: Some(name.into()),
        vendor: None,
        version: Some(version.into()),
        publisher: Some(publisher.into()),
        client_id: None,
        group_ids: vec![],
    })
}

/// [`item`] on Windows as the row itself, for tests that change a field.
pub fn full_item(device: &str, application: &str, vendor: &str, version: &str) -> InventoryRow {
    match item(device, application, vendor, version, "windows") {
        MappedRow::Inventory(row) => row,
        MappedRow::Record(_) => unreachable!("item makes an inventory row"),
    }
}

/// The `name`s of a page of applications (`{"items": [...]}`), sorted.
pub fn sorted_names(page: &Value) -> Vec<String> {
    let mut names: Vec<String> = page["items"]
        .as_array()
        .expect("a page")
        .iter()
        .map(|a| a["name"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    names
}

/// A device record of an mdm, edr or scanner area, `fields` in the shared
/// device shape (also kept as its body).
pub fn device_record(device: &str, fields: Value) -> MappedRow {
    MappedRow::Record(RecordRow {
        collection: "devices".into(),
        record_type: "device".into(),
        key: device.to_lowercase().into(),
        device_name: Some(device.into()),
        client_id: None,
        group_ids: vec![],
        body: fields.to_string(),
        fields,
    })
}

impl TestApp {
    /// Writes `rows` as `source` reported them for the account's tenant.
    pub async fn seed(&self, account: &Account, source: &str, rows: &[MappedRow]) {
        let tenant = TenantId(account.tenant_id.clone());
        let mut tx = self.db().pool.begin().await.unwrap();
        upsert_rows(&mut tx, &tenant, source, ("seed", 0), rows)
            .await
            .unwrap();
        tx.commit().await.unwrap();
    }

    /// Asks for a rollup rebuild, as a sync does, and waits until every
    /// rebuild of the tenant has finished; returns the last rebuild job.
    pub async fn rebuild(&self, account: &Account) -> Value {
        let tenant = TenantId(account.tenant_id.clone());
        cairn_inventory::rollup::request(self.db(), &tenant, "test")
            .await
            .unwrap();
        self.wait_for_rollup(account).await
    }

    /// Waits until the tenant has a finished rollup job and none queued or
    /// running; returns the newest.
    pub async fn wait_for_rollup(&self, account: &Account) -> Value {
        let limit = std::time::Duration::from_secs(60);
        crate::wait_until("the rollup", limit, async || {
            let jobs = self
                .get("/api/v1/jobs?kind=rollup", &account.bearer())
                .await;
            let items = jobs.body["items"].as_array().cloned().unwrap_or_default();
            let active = items
                .iter()
                .any(|j| ["queued", "running"].contains(&j["status"].as_str().unwrap_or("")));
            match items.first() {
                Some(newest) if !active => Ok(newest.clone()),
                _ => Err(jobs.text),
            }
        })
        .await
    }
}

/// Runs `sql` (`$1`: the tenant) in a transaction of the rollup's own kind
/// (`rollup::store::hold` at the tenant's current rebuild), as the rollup
/// writes: counted in `db`'s process, and announced on PostgreSQL.
pub async fn rollup_write(db: &cairn_core::db::Db, tenant: &TenantId, sql: &str) {
    let rollup_at: i64 =
        sqlx::query_scalar("SELECT rollup_at FROM rollup_state WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_one(&db.pool)
            .await
            .expect("the tenant's rollup state");
    let mut tx = cairn_inventory::rollup::store::hold(db, tenant, rollup_at)
        .await
        .expect("hold the rollup");
    sqlx::query(sql)
        .bind(tenant.as_str())
        .execute(&mut **tx)
        .await
        .expect("the rollup's write");
    tx.commit().await.expect("commit");
}
