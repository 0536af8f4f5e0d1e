//! Integration configs and the rows syncs write, scoped by tenant.

use std::borrow::Cow;

use serde_json::Value;
use sqlx::{Any, Transaction};

use cairn_core::db::{now_ms, Backend, Db};
use cairn_core::ids::TenantId;
use cairn_core::secrets::SecretBox;
use cairn_inventory::items::{self, ReplaceRule};
use cairn_inventory::normalize::DeviceOs;
use cairn_inventory::records;
use cairn_inventory::seen::{self, KeyOf};
use cairn_plugins::{InventoryRow, MappedRow};

#[derive(Clone)]
pub struct StoredConfig {
    /// The connector chosen for the area; `None`: the area's only one.
    pub connector: Option<String>,
    /// Non-secret fields.
    pub settings: Value,
    /// Secret fields, decrypted.
    pub secrets: Value,
    pub updated_at: i64,
    /// The partner whose config this is, shared with the tenant (a
    /// customer): settings are the partner's with the customer's scope
    /// over them, secrets the partner's.
    pub shared_from: Option<String>,
}

/// Secrets print as their names only: a config can end up in a log line.
impl std::fmt::Debug for StoredConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret_names: Vec<&String> = self
            .secrets
            .as_object()
            .map(|s| s.keys().collect())
            .unwrap_or_default();
        f.debug_struct("StoredConfig")
            .field("connector", &self.connector)
            .field("settings", &self.settings)
            .field("secrets", &secret_names)
            .field("updated_at", &self.updated_at)
            .field("shared_from", &self.shared_from)
            .finish()
    }
}

impl StoredConfig {
    /// Settings and secrets in one object: what the host uses.
    pub fn full(&self) -> Value {
        let mut full = self.settings.clone();
        if let (Some(target), Some(secrets)) = (full.as_object_mut(), self.secrets.as_object()) {
            for (k, v) in secrets {
                target.insert(k.clone(), v.clone());
            }
        }
        full
    }
}

pub async fn config(
    db: &Db,
    secret_box: &SecretBox,
    tenant: &TenantId,
    area: &str,
) -> anyhow::Result<Option<StoredConfig>> {
    let Some(row) = config_row(db, tenant, area).await? else {
        return Ok(None);
    };
    let Some(partner) = row.shared_from else {
        return Ok(Some(StoredConfig {
            connector: row.connector,
            settings: serde_json::from_str(&row.settings)?,
            secrets: serde_json::from_str(&secret_box.open(&row.secrets)?)?,
            updated_at: row.updated_at,
            shared_from: None,
        }));
    };
    // A share holds while the tenant is still the partner's customer and
    // the partner still has its own config for the area.
    let current = cairn_platform::partner::partner_of(db, tenant).await?;
    if current.as_ref().map(TenantId::as_str) != Some(partner.as_str()) {
        return Ok(None);
    }
    let Some(own) = config_row(db, &TenantId(partner.clone()), area)
        .await?
        .filter(|r| r.shared_from.is_none())
    else {
        return Ok(None);
    };
    let mut settings: Value = serde_json::from_str(&own.settings)?;
    let scope: Value = serde_json::from_str(&row.settings)?;
    if let (Some(target), Some(scope)) = (settings.as_object_mut(), scope.as_object()) {
        for (k, v) in scope {
            target.insert(k.clone(), v.clone());
        }
    }
    Ok(Some(StoredConfig {
        connector: own.connector,
        settings,
        secrets: serde_json::from_str(&secret_box.open(&own.secrets)?)?,
        updated_at: row.updated_at,
        shared_from: Some(partner),
    }))
}

#[derive(sqlx_macros::FromRow)]
struct ConfigRow {
    connector: Option<String>,
    settings: String,
    secrets: String,
    updated_at: i64,
    shared_from: Option<String>,
}

async fn config_row(db: &Db, tenant: &TenantId, area: &str) -> sqlx::Result<Option<ConfigRow>> {
    sqlx::query_as(
        "SELECT connector, settings, secrets, updated_at, shared_from FROM integration_configs \
         WHERE tenant_id = $1 AND integration = $2",
    )
    .bind(tenant.as_str())
    .bind(area)
    .fetch_optional(&db.pool)
    .await
}

/// A customer's share of its partner's config for an area.
#[derive(Debug, Clone)]
pub struct Share {
    pub customer: String,
    /// The settings laid over the partner's for this customer.
    pub scope: Value,
    pub updated_at: i64,
}

/// The shares of `partner`'s config for `area`, by customer.
pub async fn shares(db: &Db, partner: &TenantId, area: &str) -> anyhow::Result<Vec<Share>> {
    let rows: Vec<(String, String, i64)> = sqlx::query_as(
        "SELECT tenant_id, settings, updated_at FROM integration_configs \
         WHERE shared_from = $1 AND integration = $2 ORDER BY tenant_id",
    )
    .bind(partner.as_str())
    .bind(area)
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter()
        .map(|(customer, scope, updated_at)| {
            Ok(Share {
                customer,
                scope: serde_json::from_str(&scope)?,
                updated_at,
            })
        })
        .collect()
}

/// Whether saving a share landed.
#[derive(Debug, PartialEq, Eq)]
pub enum ShareSaved {
    Saved(i64),
    /// The customer has a config of its own for the area; it keeps it.
    OwnConfig,
}

/// Shares `partner`'s config for `area` with `customer` under `scope`
/// (replacing an earlier share). Secrets are not copied: the row holds an
/// empty sealed object and the scope.
pub async fn save_share(
    db: &Db,
    secret_box: &SecretBox,
    customer: &TenantId,
    area: &str,
    partner: &TenantId,
    connector: &str,
    scope: &Value,
) -> sqlx::Result<ShareSaved> {
    let _turn = db.write_turn().await;
    let now = now_ms();
    let mut tx = db.pool.begin().await?;
    let own: Option<Option<String>> = sqlx::query_scalar(
        "SELECT shared_from FROM integration_configs WHERE tenant_id = $1 AND integration = $2",
    )
    .bind(customer.as_str())
    .bind(area)
    .fetch_optional(&mut *tx)
    .await?;
    if matches!(own, Some(None)) {
        return Ok(ShareSaved::OwnConfig);
    }
    sqlx::query(
        "INSERT INTO integration_configs (tenant_id, integration, connector, settings, secrets, shared_from, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7) \
         ON CONFLICT (tenant_id, integration) DO UPDATE SET connector = excluded.connector, \
         settings = excluded.settings, secrets = excluded.secrets, shared_from = excluded.shared_from, \
         updated_at = excluded.updated_at",
    )
    .bind(customer.as_str())
    .bind(area)
    .bind(connector)
    .bind(scope.to_string())
    .bind(secret_box.seal("{}"))
    .bind(partner.as_str())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(ShareSaved::Saved(now))
}

/// A config to store for an area.
pub struct NewConfig<'a> {
    pub connector: &'a str,
    pub settings: &'a Value,
    pub secrets: &'a Value,
    /// The tenant switches the area to another connector: what the old one
    /// synced is removed in the same transaction.
    pub switching: bool,
}

/// Stores the area's config; returns its `updated_at`.
pub async fn save_config(
    db: &Db,
    secret_box: &SecretBox,
    tenant: &TenantId,
    area: &str,
    config: NewConfig<'_>,
) -> sqlx::Result<i64> {
    let _turn = db.write_turn().await;
    let now = now_ms();
    let mut tx = db.pool.begin().await?;
    if config.switching {
        delete_synced(&mut tx, tenant, area).await?;
    }
    sqlx::query(
        "INSERT INTO integration_configs (tenant_id, integration, connector, settings, secrets, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6) \
         ON CONFLICT (tenant_id, integration) DO UPDATE SET connector = excluded.connector, \
         settings = excluded.settings, secrets = excluded.secrets, shared_from = NULL, \
         updated_at = excluded.updated_at",
    )
    .bind(tenant.as_str())
    .bind(area)
    .bind(config.connector)
    .bind(config.settings.to_string())
    .bind(secret_box.seal(&config.secrets.to_string()))
    .bind(now)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(now)
}

/// Deletes what `source` synced for the tenant, and what its runs saw,
/// inside `tx`.
async fn delete_synced(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    source: &str,
) -> sqlx::Result<()> {
    items::delete_source(tx, tenant, source).await?;
    seen::delete_source(tx, tenant, source).await?;
    records::delete_source(tx, tenant, source).await?;
    Ok(())
}

/// Removes the area's config and everything it synced, in one
/// transaction. False when there was no config.
pub async fn delete_config(db: &Db, tenant: &TenantId, area: &str) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let deleted =
        sqlx::query("DELETE FROM integration_configs WHERE tenant_id = $1 AND integration = $2")
            .bind(tenant.as_str())
            .bind(area)
            .execute(&mut *tx)
            .await?
            .rows_affected();
    delete_synced(&mut tx, tenant, area).await?;
    tx.commit().await?;
    Ok(deleted == 1)
}

/// Whether the tenant configured `area` (`Some`), and the connector its
/// config names: what a view needs, without reading the secrets.
pub async fn area_choice(
    db: &Db,
    tenant: &TenantId,
    area: &str,
) -> sqlx::Result<Option<Option<String>>> {
    sqlx::query_scalar(
        "SELECT connector FROM integration_configs WHERE tenant_id = $1 AND integration = $2",
    )
    .bind(tenant.as_str())
    .bind(area)
    .fetch_optional(&db.pool)
    .await
}

/// The areas the tenant configured, with the connector each names.
pub async fn configured_areas(
    db: &Db,
    tenant: &TenantId,
) -> sqlx::Result<Vec<(String, Option<String>)>> {
    sqlx::query_as("SELECT integration, connector FROM integration_configs WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_all(&db.pool)
        .await
}

const HOLD_CONFIG_POSTGRES: &str = "SELECT 1 FROM integration_configs \
     WHERE tenant_id = $1 AND integration = $2 AND updated_at = $3 FOR SHARE";

/// Locks the tenant's config row for the rest of `tx`: true while it is
/// the config read at `updated_at`. A sync writes each page only under this
/// lock, so a page can never land after the config was removed (which
/// deletes the synced rows) or replaced; a removal waits for the page's
/// commit and then deletes its rows too. On PostgreSQL the lock is shared,
/// so a sync's pages written at once do not wait for each other; on SQLite
/// the no-op update takes the database's write lock first.
pub async fn hold_config(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    integration: &str,
    updated_at: i64,
) -> sqlx::Result<bool> {
    let statement = match cairn_core::db::backend_of(tx) {
        Backend::Postgres => HOLD_CONFIG_POSTGRES,
        Backend::Sqlite => {
            "UPDATE integration_configs SET updated_at = updated_at \
             WHERE tenant_id = $1 AND integration = $2 AND updated_at = $3 RETURNING 1"
        }
    };
    let held: Option<i64> = sqlx::query_scalar(statement)
        .bind(tenant.as_str())
        .bind(integration)
        .bind(updated_at)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(held.is_some())
}

/// [`hold_config`] inside a transaction on PostgreSQL's own driver.
pub async fn hold_config_on_postgres(
    conn: &mut sqlx::PgConnection,
    tenant: &TenantId,
    integration: &str,
    updated_at: i64,
) -> sqlx::Result<bool> {
    let held = sqlx::query(HOLD_CONFIG_POSTGRES)
        .bind(tenant.as_str())
        .bind(integration)
        .bind(updated_at)
        .fetch_optional(conn)
        .await?;
    Ok(held.is_some())
}

/// The identity of an inventory row within its source: one row per device,
/// application and version.
fn item_key(item: &InventoryRow) -> String {
    let device = item
        .device_id
        .as_deref()
        .or(item.device_name.as_deref())
        .unwrap_or("");
    format!(
        "{}\u{1f}{}\u{1f}{}",
        device.to_lowercase(),
        item.application_name
            .as_deref()
            .unwrap_or("")
            .to_lowercase(),
        item.version.as_deref().unwrap_or("")
    )
    .replace('\0', "")
}

/// Rows per staged array: on PostgreSQL one bound JSON array each, so a
/// page of thousands is a few statements, not hundreds.
const UPSERT_CHUNK: usize = 5000;

/// PostgreSQL refuses NUL in text, and upstream agents do send it; it is
/// dropped here so one bad name cannot fail a whole page. The rollup strips
/// the other control characters.
fn text(value: Option<&str>) -> Option<Cow<'_, str>> {
    value.map(|v| {
        if v.contains('\0') {
            Cow::Owned(v.replace('\0', ""))
        } else {
            Cow::Borrowed(v)
        }
    })
}

/// A page's rows made ready for the database: one row per key (the last
/// one), in key order, the hashes of what the page saw, and the rows
/// staged as `backend`'s upserts take them. Preparing is CPU work only, so
/// a sync prepares a page before it waits for its turn to write. A write
/// that may have to be tried again borrows it (`write_prepared`); `Clone`
/// is there for `Cow` and would copy every staged value.
#[derive(Clone)]
pub struct PreparedPage {
    hashes: Vec<u8>,
    items: Vec<items::StagedRows>,
    records: Vec<records::StagedRows>,
}

/// How a prepared page is going to be written, which decides how its rows
/// are staged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageWriter {
    /// [`write_prepared`]'s statements on `Backend`.
    Statements(Backend),
    /// [`copy_prepared`] on PostgreSQL (a first sync's new keys); a page
    /// staged so can still be written by [`write_prepared`].
    Copy,
}

/// Prepares `rows` for `writer`.
pub fn prepare_rows(writer: PageWriter, rows: &[MappedRow]) -> PreparedPage {
    let mut items: Vec<(String, &InventoryRow)> = vec![];
    let mut records: Vec<&cairn_plugins::RecordRow> = vec![];
    let mut seen_items = std::collections::HashMap::new();
    let mut seen_records = std::collections::HashMap::new();
    for row in rows {
        match row {
            MappedRow::Inventory(item) => {
                let key = item_key(item);
                match seen_items.get(&key) {
                    Some(&i) => items[i] = (key, item),
                    None => {
                        seen_items.insert(key.clone(), items.len());
                        items.push((key, item));
                    }
                }
            }
            MappedRow::Record(record) => match seen_records.get(&(&record.collection, &record.key))
            {
                Some(&i) => records[i] = record,
                None => {
                    seen_records.insert((&record.collection, &record.key), records.len());
                    records.push(record);
                }
            },
        }
    }
    // In key order: a sync writes pages at once, and transactions that
    // take their rows' locks in one order cannot deadlock on a key two
    // pages share.
    items.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    records.sort_unstable_by(|a, b| (&a.collection, &a.key).cmp(&(&b.collection, &b.key)));
    let mut hashes = Vec::with_capacity((items.len() + records.len()) * 8);
    for (key, _) in &items {
        hashes.extend_from_slice(&seen::key_hash(KeyOf::Item, "", key));
    }
    for record in &records {
        hashes.extend_from_slice(&seen::key_hash(
            KeyOf::Record,
            &record.collection,
            &record.key.replace('\0', ""),
        ));
    }
    // An item's values are the layout of `cairn_inventory::items`, a
    // record's of `cairn_inventory::records`.
    let items = items
        .chunks(UPSERT_CHUNK)
        .map(|chunk| {
            let mut staged = match writer {
                PageWriter::Statements(backend) => {
                    items::StagedRows::with_capacity(backend, chunk.len())
                }
                PageWriter::Copy => items::StagedRows::for_copy(chunk.len()),
            };
            for (key, item) in chunk {
                let os = DeviceOs::of(
                    item.os_platform.as_deref(),
                    item.os_version.as_deref(),
                    item.os_name.as_deref(),
                );
                let group_ids =
                    serde_json::to_string(&item.group_ids).unwrap_or_else(|_| "[]".into());
                staged.push([
                    Some(key.as_str()),
                    text(item.device_name.as_deref()).as_deref(),
                    text(item.device_id.as_deref()).as_deref(),
                    text(os.platform).as_deref(),
                    text(os.version.as_deref()).as_deref(),
                    text(item.user_email.as_deref()).as_deref(),
                    text(item.user_name.as_deref()).as_deref(),
                    text(item.application_name.as_deref()).as_deref(),
                    text(item.vendor.as_deref()).as_deref(),
                    text(item.version.as_deref()).as_deref(),
                    text(item.publisher.as_deref()).as_deref(),
                    text(item.client_id.as_deref()).as_deref(),
                    Some(group_ids.as_str()),
                    text(os.name.as_deref()).as_deref(),
                    text(item.os_build.as_deref()).as_deref(),
                ]);
            }
            staged
        })
        .collect();
    let records = records
        .chunks(UPSERT_CHUNK)
        .map(|chunk| {
            let mut staged = match writer {
                PageWriter::Statements(backend) => {
                    records::StagedRows::with_capacity(backend, chunk.len())
                }
                PageWriter::Copy => records::StagedRows::for_copy(chunk.len()),
            };
            for record in chunk {
                let group_ids =
                    serde_json::to_string(&record.group_ids).unwrap_or_else(|_| "[]".into());
                let (fields, body) = (record.fields.to_string(), record.body.to_string());
                staged.push([
                    Some(record.collection.as_str()),
                    Some(record.record_type.as_str()),
                    text(Some(&record.key)).as_deref(),
                    text(record.device_name.as_deref()).as_deref(),
                    text(record.client_id.as_deref()).as_deref(),
                    Some(group_ids.as_str()),
                    Some(fields.as_str()),
                    Some(body.as_str()),
                ]);
            }
            staged
        })
        .collect();
    PreparedPage {
        hashes,
        items,
        records,
    }
}

/// Upserts page `page` of `run`, inside the caller's transaction: new rows
/// and rows whose content changed are written and stamped with `run`; a row
/// the page holds unchanged is left as it is, and what the page saw is
/// recorded for the prune after the run ([`super::seen`]). Rows with the
/// same key within the page keep the last one, since one statement may not
/// touch a row twice.
pub async fn upsert_rows(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    source: &str,
    at: (&str, i64),
    rows: &[MappedRow],
) -> sqlx::Result<()> {
    let backend = cairn_core::db::backend_of(tx);
    let prepared = prepare_rows(PageWriter::Statements(backend), rows);
    write_prepared(
        tx,
        tenant,
        source,
        at,
        Cow::Owned(prepared),
        ReplaceRule::ChangedContent,
    )
    .await
}

/// [`upsert_rows`] of a page prepared beforehand, under `rule`:
/// [`ReplaceRule::ChangedContent`], or [`ReplaceRule::NewKeys`] while the
/// source is expected to hold none of the page's keys (a key it holds then
/// fails the write as a unique violation, and nothing of the page stays
/// once the caller drops the transaction). A page handed over owned has
/// each chunk of rows dropped once written (on SQLite a page's staged
/// values are a good part of a sync's peak memory); a borrowed one is
/// kept whole for a write that may have to be tried again.
pub async fn write_prepared(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    source: &str,
    (run, page): (&str, i64),
    prepared: Cow<'_, PreparedPage>,
    rule: ReplaceRule,
) -> sqlx::Result<()> {
    let now = now_ms();
    seen::record_page(tx, tenant, source, run, page, &prepared.hashes).await?;
    let backend = cairn_core::db::backend_of(tx);
    // Items and records go through the inventory's writers; a page's rows
    // are one per key already (`prepare_rows` keeps the last).
    let (items_sql, records_sql) = (
        items::upsert_sql(backend, rule),
        records::upsert_sql(backend, rule),
    );
    let to = (tenant, source);
    // Chunks by value when the page is owned, so each is dropped once
    // written; by reference when it is only borrowed.
    let (item_chunks, record_chunks): (Vec<Cow<'_, _>>, Vec<Cow<'_, _>>) = match prepared {
        Cow::Owned(page) => (
            page.items.into_iter().map(Cow::Owned).collect(),
            page.records.into_iter().map(Cow::Owned).collect(),
        ),
        Cow::Borrowed(page) => (
            page.items.iter().map(Cow::Borrowed).collect(),
            page.records.iter().map(Cow::Borrowed).collect(),
        ),
    };
    for chunk in item_chunks {
        items::upsert(tx, &items_sql, to, run, &chunk, now).await?;
    }
    for chunk in record_chunks {
        records::upsert(tx, &records_sql, to, run, &chunk, now).await?;
    }
    Ok(())
}

/// [`write_prepared`] of a first sync's page under
/// [`ReplaceRule::NewKeys`] with PostgreSQL's COPY, inside the
/// transaction on `conn` (`Db::copy`): a key the source already holds
/// fails it as a unique violation, and nothing of the page stays once the
/// caller drops the transaction.
pub async fn copy_prepared(
    conn: &mut sqlx::PgConnection,
    tenant: &TenantId,
    source: &str,
    (run, page): (&str, i64),
    prepared: &PreparedPage,
) -> sqlx::Result<()> {
    let now = now_ms();
    seen::record_page_on_postgres(conn, tenant, source, run, page, &prepared.hashes).await?;
    let to = (tenant, source);
    items::copy_new(conn, to, run, &prepared.items, now).await?;
    records::copy_new(conn, to, run, &prepared.records, now).await?;
    Ok(())
}

/// After a CSV swap: deletes the source's rows the upload did not stamp
/// (every row of an upload is written with its stamp), in transactions of
/// at most [`PRUNE_BATCH`](cairn_inventory::seen::PRUNE_BATCH) rows.
/// Returns (items, records) deleted. A sync, which leaves unchanged rows
/// unstamped, prunes with `cairn_inventory::seen::prune_unseen`.
pub async fn prune_unstamped(
    db: &Db,
    tenant: &TenantId,
    source: &str,
    run: &str,
) -> sqlx::Result<(u64, u64)> {
    let items = items::prune_unstamped(db, tenant, source, run).await?;
    let records = records::prune_unstamped(db, tenant, source, run).await?;
    Ok((items, records))
}

/// How many (inventory items, source records) the source holds for the
/// tenant.
pub async fn row_counts(db: &Db, tenant: &TenantId, source: &str) -> sqlx::Result<(i64, i64)> {
    let records = records::count(db, tenant, source).await?;
    Ok((items::count(db, tenant, source).await?, records))
}

#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct SourceStats {
    pub inventory_items: i64,
    pub devices: i64,
    pub applications: i64,
    /// Source records by collection.
    pub records: std::collections::BTreeMap<String, i64>,
}

pub async fn stats(db: &Db, tenant: &TenantId, source: &str) -> sqlx::Result<SourceStats> {
    let held = items::source_counts(db, tenant, source).await?;
    let kinds = records::counts_by_kind(db, tenant, source).await?;
    Ok(SourceStats {
        inventory_items: held.items,
        devices: held.devices,
        applications: held.applications,
        records: kinds.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_secret_names_not_values() {
        let config = StoredConfig {
            connector: Some("acme".into()),
            settings: serde_json::json!({"base_url": "https://rmm.example"}),
            secrets: serde_json::json!({"password": "hunter2-very-secret"}),
            updated_at: 1,
            shared_from: None,
        };
        let printed = format!("{config:?}");
        assert!(printed.contains("password"), "{printed}");
        assert!(printed.contains("rmm.example"), "{printed}");
        assert!(!printed.contains("hunter2"), "{printed}");
    }
}
