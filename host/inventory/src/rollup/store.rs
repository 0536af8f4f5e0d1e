//! Reading what the rebuild needs and writing what it derived.

use futures::TryStreamExt;
use sqlx::{Any, Transaction};

use std::collections::HashMap;

use super::build::{
    Application, Asset, Counts, DeviceRecord, ItemRow, Rollup, Vendor, EDR_SOURCE, MDM_SOURCE,
    SCANNER_SOURCE,
};
use crate::assets::AssetSearch;
use crate::search::{fold, TermValue};
use cairn_core::db::{
    changes, json_text_values, now_ms, values_placeholders, values_placeholders_wrapped, Backend,
    Db,
};
use cairn_core::ids::TenantId;

/// Rows per transaction, as the spec fixes it.
pub const BATCH: usize = 1000;
/// Rows per multi-row statement inside a batch: large enough that statement
/// overhead vanishes, small enough that binding stays cheap.
const STATEMENT_ROWS: usize = 50;

/// Item rows per page of the SQLite read.
const READ_PAGE: i64 = 5_000;

/// A read transaction that sees one state of the database throughout: the
/// inventory and the change queue entries it reflects are read together,
/// so a rebuild consumes exactly the changes its result includes.
pub async fn snapshot(db: &Db) -> sqlx::Result<Transaction<'_, Any>> {
    let mut tx = db.pool.begin().await?;
    if db.backend == Backend::Postgres {
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .execute(&mut *tx)
            .await?;
    }
    Ok(tx)
}

/// Starts recording the tenant's inventory changes, if it has not yet:
/// called before a whole rebuild's snapshot, so every change that snapshot
/// misses is recorded (migration 0027 explains the lock on PostgreSQL).
pub async fn start_recording(db: &Db, tenant: &TenantId) -> sqlx::Result<()> {
    let recording: Option<i64> = sqlx::query_scalar(
        "SELECT CAST(recording AS BIGINT) FROM rollup_state WHERE tenant_id = $1",
    )
    .bind(tenant.as_str())
    .fetch_optional(&db.pool)
    .await?;
    if recording == Some(1) {
        return Ok(());
    }
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    if db.backend == Backend::Postgres {
        // Waits for every writer that looked while it was off to commit.
        sqlx::query("SELECT CAST(pg_advisory_xact_lock(27, hashtext($1)) AS TEXT)")
            .bind(tenant.as_str())
            .fetch_one(&mut *tx)
            .await?;
    }
    sqlx::query(
        "INSERT INTO rollup_state (tenant_id, requested, built, recording) VALUES ($1, 0, 0, 1) \
         ON CONFLICT (tenant_id) DO UPDATE SET recording = 1",
    )
    .bind(tenant.as_str())
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// The columns of [`ItemRow`], in its order.
const ITEM_COLUMNS: &str = "source, item_key, device_name, device_id, os_platform, os_version, \
    user_email, user_name, application_name, vendor, version, publisher, updated_at, os_name, \
    os_build, NULLIF(group_ids, '[]') AS group_ids";

/// Streams the tenant's inventory into `rollup` without holding every row.
pub async fn read_items(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    rollup: &mut Rollup,
) -> sqlx::Result<u64> {
    match backend {
        Backend::Sqlite => read_items_in_pages(tx, tenant, rollup).await,
        Backend::Postgres => {
            let statement =
                format!("SELECT {ITEM_COLUMNS} FROM inventory_items WHERE tenant_id = $1");
            let mut rows = sqlx::query_as::<_, ItemRow>(&statement)
                .bind(tenant.as_str())
                .fetch(&mut **tx);
            let mut count = 0;
            while let Some(row) = rows.try_next().await? {
                rollup.add(row);
                count += 1;
            }
            Ok(count)
        }
    }
}

/// One item as a page of the SQLite read carries it: its primary key, then
/// the [`ItemRow`] fields.
type PagedItem = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// SQLite hands a streamed query's rows over one by one from its worker
/// thread, a context switch each; a million of them cost seconds. Pages of
/// rows aggregated into one JSON value each cross over a few dozen times.
async fn read_items_in_pages(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    rollup: &mut Rollup,
) -> sqlx::Result<u64> {
    let mut after: Option<(String, String)> = None;
    let mut count = 0;
    loop {
        let past = match after {
            Some(_) => "AND (source, item_key) > ($3, $4)",
            None => "",
        };
        let statement = format!(
            "SELECT json_group_array(json_array(source, item_key, device_name, device_id, \
             os_platform, os_version, user_email, user_name, application_name, vendor, version, \
             publisher, updated_at, os_name, os_build, NULLIF(group_ids, '[]'))) \
             FROM (SELECT * FROM inventory_items WHERE tenant_id = $1 \
             {past} ORDER BY source, item_key LIMIT $2)"
        );
        let mut query = sqlx::query_scalar(&statement)
            .bind(tenant.as_str())
            .bind(READ_PAGE);
        if let Some((source, key)) = &after {
            query = query.bind(source).bind(key);
        }
        let page: Option<String> = query.fetch_one(&mut **tx).await?;
        let rows: Vec<PagedItem> = serde_json::from_str(page.as_deref().unwrap_or("[]"))
            .map_err(|e| sqlx::Error::Decode(Box::new(e)))?;
        let full = rows.len() as i64 == READ_PAGE;
        // The aggregate's order is not promised: the next page starts after
        // the page's greatest key.
        if let Some((source, key)) = rows.iter().map(|r| (&r.0, &r.1)).max() {
            after = Some((source.clone(), key.clone()));
        }
        for row in rows {
            rollup.add(ItemRow {
                source: row.0,
                item_key: row.1,
                device_name: row.2,
                device_id: row.3,
                os_platform: row.4,
                os_version: row.5,
                user_email: row.6,
                user_name: row.7,
                application_name: row.8,
                vendor: row.9,
                version: row.10,
                publisher: row.11,
                updated_at: row.12,
                os_name: row.13,
                os_build: row.14,
                group_ids: row.15,
            });
            count += 1;
        }
        if !full {
            return Ok(count);
        }
    }
}

/// The device records of the areas whose detail attaches to assets.
pub async fn read_device_records(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
) -> sqlx::Result<Vec<DeviceRecord>> {
    sqlx::query_as(
        "SELECT source, record_key, device_name, fields, body, updated_at FROM source_records \
         WHERE tenant_id = $1 AND record_type = 'device' AND source IN ($2, $3, $4)",
    )
    .bind(tenant.as_str())
    .bind(MDM_SOURCE)
    .bind(EDR_SOURCE)
    .bind(SCANNER_SOURCE)
    .fetch_all(&mut **tx)
    .await
}

/// Each detail record's source, key and device name, without its body.
pub async fn read_device_record_names(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
) -> sqlx::Result<Vec<(String, String, Option<String>)>> {
    sqlx::query_as(
        "SELECT source, record_key, device_name FROM source_records \
         WHERE tenant_id = $1 AND record_type = 'device' AND source IN ($2, $3, $4)",
    )
    .bind(tenant.as_str())
    .bind(MDM_SOURCE)
    .bind(EDR_SOURCE)
    .bind(SCANNER_SOURCE)
    .fetch_all(&mut **tx)
    .await
}

/// The named detail records of one source, whole.
pub async fn read_device_records_of(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    source: &str,
    keys: &[String],
) -> sqlx::Result<Vec<DeviceRecord>> {
    let mut records = Vec::new();
    for chunk in keys.chunks(IN_LIST) {
        let statement = format!(
            "SELECT source, record_key, device_name, fields, body, updated_at FROM source_records \
             WHERE tenant_id = $1 AND record_type = 'device' AND source = $2 \
             AND record_key IN ({})",
            json_text_values(backend, 3)
        );
        let found: Vec<DeviceRecord> = sqlx::query_as(&statement)
            .bind(tenant.as_str())
            .bind(source)
            .bind(json(&chunk))
            .fetch_all(&mut **tx)
            .await?;
        records.extend(found);
    }
    Ok(records)
}

/// Values per `IN (...)` list of the incremental reads.
const IN_LIST: usize = 2_000;

/// The inventory rows whose device name is one of `names` (as stored), and
/// with `blank` also those with no device name.
pub async fn read_items_named(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    names: &[String],
    blank: bool,
) -> sqlx::Result<Vec<ItemRow>> {
    let mut rows = Vec::new();
    for chunk in names.chunks(IN_LIST) {
        let statement = format!(
            "SELECT {ITEM_COLUMNS} FROM inventory_items WHERE tenant_id = $1 \
             AND device_name IN ({})",
            json_text_values(backend, 2)
        );
        let found: Vec<ItemRow> = sqlx::query_as(&statement)
            .bind(tenant.as_str())
            .bind(json(&chunk))
            .fetch_all(&mut **tx)
            .await?;
        rows.extend(found);
    }
    if blank {
        let statement = format!(
            "SELECT {ITEM_COLUMNS} FROM inventory_items WHERE tenant_id = $1 \
             AND device_name IS NULL"
        );
        let found: Vec<ItemRow> = sqlx::query_as(&statement)
            .bind(tenant.as_str())
            .fetch_all(&mut **tx)
            .await?;
        rows.extend(found);
    }
    Ok(rows)
}

/// Every device name the stored assets `keys` were built from, as cleaned
/// and as the inventory spells them.
pub async fn asset_names(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    keys: &[String],
) -> sqlx::Result<Vec<String>> {
    let mut names = Vec::new();
    for chunk in keys.chunks(IN_LIST) {
        let statement = format!(
            "SELECT names, raw_names FROM assets WHERE tenant_id = $1 AND asset_key IN ({})",
            json_text_values(backend, 2)
        );
        let rows: Vec<(String, String)> = sqlx::query_as(&statement)
            .bind(tenant.as_str())
            .bind(json(&chunk))
            .fetch_all(&mut **tx)
            .await?;
        for (cleaned, raw) in rows {
            for list in [cleaned, raw] {
                let list: Vec<String> = cairn_core::db::stored_json("names", &list)?;
                names.extend(list);
            }
        }
    }
    Ok(names)
}

/// A stored application as the incremental rebuild adds to it: its
/// tallies (None when written before tallies were kept) and vendor.
pub struct StoredApplication {
    pub tally: Option<Counts>,
    pub vendor: Option<String>,
}

pub async fn read_tallies(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    names: &[String],
) -> sqlx::Result<HashMap<String, StoredApplication>> {
    let mut stored = HashMap::new();
    for chunk in names.chunks(IN_LIST) {
        let statement = format!(
            "SELECT name, tally, vendor FROM applications WHERE tenant_id = $1 AND name IN ({})",
            json_text_values(backend, 2)
        );
        let rows: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(&statement)
            .bind(tenant.as_str())
            .bind(json(&chunk))
            .fetch_all(&mut **tx)
            .await?;
        for (name, tally, vendor) in rows {
            // A tally is a kept shortcut: one that does not decode (an
            // older version's shape) is no tally, and the application is
            // counted again from its items, as one without a tally is.
            let tally = tally.and_then(|t| serde_json::from_str(&t).ok());
            stored.insert(name, StoredApplication { tally, vendor });
        }
    }
    Ok(stored)
}

/// Stored vendors' application and device counts.
pub async fn read_vendors(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    names: &[String],
) -> sqlx::Result<HashMap<String, (i64, i64)>> {
    let mut stored = HashMap::new();
    for chunk in names.chunks(IN_LIST) {
        let statement = format!(
            "SELECT name, application_count, device_count FROM vendors \
             WHERE tenant_id = $1 AND name IN ({})",
            json_text_values(backend, 2)
        );
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(&statement)
            .bind(tenant.as_str())
            .bind(json(&chunk))
            .fetch_all(&mut **tx)
            .await?;
        stored.extend(
            rows.into_iter()
                .map(|(name, apps, devices)| (name, (apps, devices))),
        );
    }
    Ok(stored)
}

/// What the last rebuild left for the next: see migration 0027.
#[derive(Debug, Default)]
pub struct State {
    /// The stored tallies account for every change not yet consumed.
    pub tallied: bool,
    pub blank_names: Vec<String>,
    pub completions: HashMap<String, i64>,
}

pub async fn read_state(db: &Db, tenant: &TenantId) -> sqlx::Result<State> {
    let row: Option<(i64, String, String)> = sqlx::query_as(
        "SELECT CAST(tallied AS BIGINT), blank_names, completions FROM rollup_state \
         WHERE tenant_id = $1",
    )
    .bind(tenant.as_str())
    .fetch_optional(&db.pool)
    .await?;
    Ok(match row {
        Some((tallied, blank_names, completions)) => State {
            tallied: tallied == 1,
            blank_names: cairn_core::db::stored_json("blank_names", &blank_names)?,
            completions: cairn_core::db::stored_json("completions", &completions)?,
        },
        None => State::default(),
    })
}

/// Records what the rebuild's result reflects, in its last transaction.
pub async fn save_state(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    blank_names: &[String],
    completions: &HashMap<String, i64>,
) -> sqlx::Result<()> {
    number_places(tx, backend, tenant).await?;
    // The counts and places are taken where every write of the rebuild is
    // in, so an unfiltered list's total and pages (`search::Table::
    // kept_total`, `kept_order`) match the rows.
    sqlx::query(
        "UPDATE rollup_state SET tallied = 1, blank_names = $2, completions = $3, \
         applications_count = (SELECT COUNT(*) FROM applications WHERE tenant_id = $1), \
         assets_count = (SELECT COUNT(*) FROM assets WHERE tenant_id = $1), \
         places_at = rollup_at \
         WHERE tenant_id = $1",
    )
    .bind(tenant.as_str())
    .bind(json(&blank_names))
    .bind(json(
        &completions
            .iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
    ))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Numbers the tenant's applications 1, 2, ... in the list's default
/// order (`application_fields::default_order`), writing only the places that
/// moved: most rebuilds move few applications.
async fn number_places(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
) -> sqlx::Result<()> {
    let order = crate::application_fields::default_order(backend);
    sqlx::query(&format!(
        "UPDATE applications SET place = ranked.place \
         FROM (SELECT a.id, ROW_NUMBER() OVER (ORDER BY {order}) AS place \
               FROM applications a WHERE a.tenant_id = $1) ranked \
         WHERE applications.tenant_id = $1 AND applications.id = ranked.id \
         AND (applications.place IS NULL OR applications.place <> ranked.place)"
    ))
    .bind(tenant.as_str())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// The search document's column as a placeholder list wants it: binary
/// JSON on both engines (`jsonb`; SQLite's JSONB blob), so a search reads
/// it without parsing text per row.
fn document_wraps(backend: Backend, column: usize) -> Vec<(usize, &'static str)> {
    match backend {
        Backend::Sqlite => vec![(column, "jsonb({})")],
        Backend::Postgres => vec![(column, "CAST({} AS jsonb)")],
    }
}

/// Applications to write, each with its tallies and search document at
/// the same index.
pub struct ApplicationRows<'a> {
    pub applications: &'a [Application],
    pub tallies: &'a [Counts],
    pub documents: &'a [String],
}

pub async fn upsert_applications(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    rollup_at: i64,
    rows: ApplicationRows<'_>,
) -> sqlx::Result<()> {
    let chunks = rows
        .applications
        .chunks(STATEMENT_ROWS)
        .zip(rows.tallies.chunks(STATEMENT_ROWS))
        .zip(rows.documents.chunks(STATEMENT_ROWS));
    for ((chunk, tallies), documents) in chunks {
        let statement = format!(
            "INSERT INTO applications (id, tenant_id, name, vendor, device_count, most_common_version, \
             newest_version, oldest_version, version_counts, versions, platforms, sources, publisher, rollup_at, \
             search_doc, sort_key, tally) \
             VALUES {} ON CONFLICT (tenant_id, name) DO UPDATE SET vendor = excluded.vendor, \
             device_count = excluded.device_count, most_common_version = excluded.most_common_version, \
             newest_version = excluded.newest_version, oldest_version = excluded.oldest_version, \
             version_counts = excluded.version_counts, versions = excluded.versions, \
             platforms = excluded.platforms, sources = excluded.sources, \
             publisher = excluded.publisher, rollup_at = excluded.rollup_at, \
             search_doc = excluded.search_doc, sort_key = excluded.sort_key, tally = excluded.tally",
            values_placeholders_wrapped(backend, chunk.len(), 17, &document_wraps(backend, 15))
        );
        let mut query = sqlx::query(&statement);
        for ((app, tally), document) in chunk.iter().zip(tallies).zip(documents) {
            let versions: Vec<&str> = app
                .version_counts
                .iter()
                .map(|v| v.version.as_str())
                .collect();
            query = query
                .bind(uuid::Uuid::now_v7().to_string())
                .bind(tenant.as_str())
                .bind(app.name.as_str())
                .bind(app.vendor.as_deref())
                .bind(app.device_count)
                .bind(app.most_common_version.as_deref())
                .bind(app.newest_version.as_deref())
                .bind(app.oldest_version.as_deref())
                .bind(json(&app.version_counts))
                .bind(json(&versions))
                .bind(json(&app.platforms))
                .bind(json(&app.sources))
                .bind(app.publisher.as_deref())
                .bind(rollup_at)
                .bind(document.as_str())
                .bind(fold(&app.name))
                .bind(json(tally));
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
}

pub async fn upsert_assets(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    rollup_at: i64,
    assets: &[Asset],
    search: &[AssetSearch],
) -> sqlx::Result<()> {
    // Each asset's stable id (migration 0029), which its terms point at.
    let mut ids: HashMap<String, i64> = HashMap::with_capacity(assets.len());
    for (chunk, search) in assets
        .chunks(STATEMENT_ROWS)
        .zip(search.chunks(STATEMENT_ROWS))
    {
        let statement = format!(
            "INSERT INTO assets (tenant_id, asset_key, device_name, device_id, os_platform, os_version, \
             user_email, user_name, application_count, names, applications, sources, mdm, edr, scan, \
             last_seen, rollup_at, search_doc, sort_key, raw_names, os_name, os_build, group_ids) VALUES {} \
             ON CONFLICT (tenant_id, asset_key) DO UPDATE SET \
             device_name = excluded.device_name, device_id = excluded.device_id, \
             os_platform = excluded.os_platform, os_version = excluded.os_version, \
             user_email = excluded.user_email, user_name = excluded.user_name, \
             application_count = excluded.application_count, names = excluded.names, \
             applications = excluded.applications, sources = excluded.sources, mdm = excluded.mdm, \
             edr = excluded.edr, scan = excluded.scan, last_seen = excluded.last_seen, \
             rollup_at = excluded.rollup_at, search_doc = excluded.search_doc, \
             sort_key = excluded.sort_key, raw_names = excluded.raw_names, \
             os_name = excluded.os_name, os_build = excluded.os_build, \
             group_ids = excluded.group_ids \
             RETURNING asset_key, id",
            values_placeholders_wrapped(backend, chunk.len(), 23, &document_wraps(backend, 18))
        );
        let mut query = sqlx::query_as::<_, (String, i64)>(&statement);
        for (asset, search) in chunk.iter().zip(search) {
            query = query
                .bind(tenant.as_str())
                .bind(asset.key.as_str())
                .bind(asset.device_name.as_str())
                .bind(asset.device_id.as_deref())
                .bind(asset.os_platform.as_deref())
                .bind(asset.os_version.as_deref())
                .bind(asset.user_email.as_deref())
                .bind(asset.user_name.as_deref())
                .bind(asset.applications.len() as i64)
                .bind(json(&asset.names))
                .bind(json(&asset.applications))
                .bind(json(&asset.sources))
                .bind(asset.mdm.as_ref().map(json))
                .bind(asset.edr.as_ref().map(json))
                .bind(asset.scan.as_ref().map(json))
                .bind(asset.last_seen)
                .bind(rollup_at)
                .bind(search.document.as_str())
                .bind(fold(&asset.device_name))
                .bind(json(&asset.raw_names))
                .bind(asset.os_name.as_deref())
                .bind(asset.os_build.as_deref())
                .bind(json(&asset.group_ids));
        }
        ids.extend(query.fetch_all(&mut **tx).await?);
    }
    replace_terms(tx, backend, tenant, assets, &ids, search).await
}

/// Terms one statement writes: a JSON array of this many small rows.
const TERM_ROWS: usize = 5_000;

/// Replaces the search terms (migration 0028) of `assets` with what each
/// holds now (`search`, at the same index); `ids` are the assets' ids.
async fn replace_terms(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    assets: &[Asset],
    ids: &HashMap<String, i64>,
    search: &[AssetSearch],
) -> sqlx::Result<()> {
    let written: Vec<i64> = ids.values().copied().collect();
    sqlx::query(&format!(
        "DELETE FROM asset_terms WHERE tenant_id = $1 AND asset_id IN (SELECT CAST(value AS BIGINT) FROM {})",
        cairn_core::db::json_array_rows(backend, 2)
    ))
    .bind(tenant.as_str())
    .bind(json(&written))
    .execute(&mut **tx)
    .await?;
    let insert = format!(
        "INSERT INTO asset_terms (tenant_id, asset_id, field, text_value, number_value) \
         SELECT $1, CAST(value->>0 AS BIGINT), value->>1, value->>2, CAST(value->>3 AS DOUBLE PRECISION) FROM {}",
        cairn_core::db::json_array_rows(backend, 2)
    );
    let mut rows: Vec<serde_json::Value> = Vec::with_capacity(TERM_ROWS);
    for (asset, search) in assets.iter().zip(search) {
        // The upsert returns every row it inserts or updates, so each
        // asset has its id; the lookup cannot miss.
        let Some(id) = ids.get(&asset.key) else {
            continue;
        };
        for term in &search.terms {
            let (text, number) = match &term.value {
                TermValue::Text(text) => (Some(text), None),
                TermValue::Number(number) => (None, Some(number)),
            };
            rows.push(serde_json::json!([id, term.field, text, number]));
        }
        if rows.len() >= TERM_ROWS {
            write_terms(tx, &insert, tenant, &rows).await?;
            rows.clear();
        }
    }
    if !rows.is_empty() {
        write_terms(tx, &insert, tenant, &rows).await?;
    }
    Ok(())
}

async fn write_terms(
    tx: &mut Transaction<'_, Any>,
    insert: &str,
    tenant: &TenantId,
    rows: &[serde_json::Value],
) -> sqlx::Result<()> {
    sqlx::query(insert)
        .bind(tenant.as_str())
        .bind(json(&rows))
        .execute(&mut **tx)
        .await?;
    Ok(())
}

pub async fn upsert_vendors(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    rollup_at: i64,
    vendors: &[Vendor],
) -> sqlx::Result<()> {
    for chunk in vendors.chunks(STATEMENT_ROWS) {
        let statement = format!(
            "INSERT INTO vendors (tenant_id, name, application_count, device_count, rollup_at, \
             sort_key) VALUES {} \
             ON CONFLICT (tenant_id, name) DO UPDATE SET application_count = excluded.application_count, \
             device_count = excluded.device_count, rollup_at = excluded.rollup_at, \
             sort_key = excluded.sort_key",
            values_placeholders(backend, chunk.len(), 6)
        );
        let mut query = sqlx::query(&statement);
        for vendor in chunk {
            query = query
                .bind(tenant.as_str())
                .bind(vendor.name.as_str())
                .bind(vendor.application_count)
                .bind(vendor.device_count)
                .bind(rollup_at)
                .bind(fold(&vendor.name));
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
}

/// The rollup's tables, each keyed within a tenant by one name column.
#[derive(Debug, Clone, Copy)]
pub enum Named {
    Applications,
    Assets,
    Vendors,
}

impl Named {
    fn table_and_key(self) -> (&'static str, &'static str) {
        match self {
            Named::Applications => ("applications", "name"),
            Named::Assets => ("assets", "asset_key"),
            Named::Vendors => ("vendors", "name"),
        }
    }
}

/// Deletes the tenant's rows of `table` named in `names`.
pub async fn delete_named(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    table: Named,
    tenant: &TenantId,
    names: &[String],
) -> sqlx::Result<()> {
    let (table, key) = table.table_and_key();
    for chunk in names.chunks(IN_LIST) {
        let statement = format!(
            "DELETE FROM {table} WHERE tenant_id = $1 AND {key} IN ({})",
            json_text_values(backend, 2)
        );
        sqlx::query(&statement)
            .bind(tenant.as_str())
            .bind(json(&chunk))
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// Moves the last_seen of every asset `source` reports to `completed`
/// where it is earlier: the source completed a run, which reported them
/// whether or not their rows changed.
pub async fn bump_last_seen(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    source: &str,
    completed: i64,
    rollup_at: i64,
) -> sqlx::Result<()> {
    let sources = match backend {
        Backend::Sqlite => "SELECT value FROM json_each(assets.sources)",
        Backend::Postgres => "SELECT jsonb_array_elements_text(CAST(assets.sources AS jsonb))",
    };
    sqlx::query(&format!(
        "UPDATE assets SET last_seen = $3, rollup_at = $4 \
         WHERE tenant_id = $1 AND last_seen < $3 AND $2 IN ({sources})"
    ))
    .bind(tenant.as_str())
    .bind(source)
    .bind(completed)
    .bind(rollup_at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// What one rebuild derived; each row's search document is beside it, at
/// the same index.
pub struct Derived {
    pub applications: Vec<Application>,
    pub tallies: Vec<Counts>,
    pub application_documents: Vec<String>,
    pub vendors: Vec<Vendor>,
    pub assets: Vec<Asset>,
    pub asset_search: Vec<AssetSearch>,
    /// Spellings of a blank device name in the rows read.
    pub blank_names: Vec<String>,
    /// The source completion times the assets' last_seen reflect.
    pub completions: HashMap<String, i64>,
    /// The change queue entries the rows read already include.
    pub changes: Vec<i64>,
}

/// Why a rebuild's write stopped.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// A later rebuild of the tenant began: its rows stand, and this one's
    /// stale ones must not sweep them away.
    #[error("a later rebuild of the tenant superseded this one")]
    Superseded,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// Writes the rebuild in transactions of [`BATCH`] rows, then deletes the
/// tenant's rows another rebuild stamped: readers see every application
/// throughout, old or new, never an empty list.
///
/// Every transaction first checks that `rollup_at` is still the tenant's
/// latest rebuild (`begin` gives each a later one), so a rebuild that lost
/// the race, such as one whose job was presumed dead and run again, stops
/// at its next batch instead of deleting the newer rebuild's rows.
pub async fn write(
    db: &Db,
    tenant: &TenantId,
    rollup_at: i64,
    derived: &Derived,
) -> Result<(), WriteError> {
    let applications = derived
        .applications
        .chunks(BATCH)
        .zip(derived.tallies.chunks(BATCH))
        .zip(derived.application_documents.chunks(BATCH));
    {
        // Until the last batch commits, the stored rows are a mix of two
        // rebuilds: only a whole rebuild may follow one cut off.
        let _turn = db.write_turn().await;
        let mut tx = hold(db, tenant, rollup_at).await?;
        sqlx::query("UPDATE rollup_state SET tallied = 0 WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .execute(&mut **tx)
            .await?;
        tx.commit().await?;
    }
    for ((applications, tallies), documents) in applications {
        let _turn = db.write_turn().await;
        let mut tx = hold(db, tenant, rollup_at).await?;
        let rows = ApplicationRows {
            applications,
            tallies,
            documents,
        };
        upsert_applications(&mut tx, db.backend, tenant, rollup_at, rows).await?;
        tx.commit().await?;
    }
    let assets = derived
        .assets
        .chunks(BATCH)
        .zip(derived.asset_search.chunks(BATCH));
    for (batch, search) in assets {
        let _turn = db.write_turn().await;
        let mut tx = hold(db, tenant, rollup_at).await?;
        upsert_assets(&mut tx, db.backend, tenant, rollup_at, batch, search).await?;
        tx.commit().await?;
    }
    for batch in derived.vendors.chunks(BATCH) {
        let _turn = db.write_turn().await;
        let mut tx = hold(db, tenant, rollup_at).await?;
        upsert_vendors(&mut tx, db.backend, tenant, rollup_at, batch).await?;
        tx.commit().await?;
    }
    let _turn = db.write_turn().await;
    let mut tx = hold(db, tenant, rollup_at).await?;
    for table in ["applications", "assets", "vendors"] {
        sqlx::query(&format!(
            "DELETE FROM {table} WHERE tenant_id = $1 AND rollup_at <> $2"
        ))
        .bind(tenant.as_str())
        .bind(rollup_at)
        .execute(&mut **tx)
        .await?;
    }
    super::changes::consume(&mut tx, db.backend, tenant, &derived.changes).await?;
    save_state(
        &mut tx,
        db.backend,
        tenant,
        &derived.blank_names,
        &derived.completions,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

pub use crate::changes::ROLLUP_TOPIC;

/// Opens a transaction that holds the tenant's `rollup_state` row while
/// `rollup_at` is its latest rebuild; on PostgreSQL the row lock also makes
/// a concurrent `begin` wait for the commit. Every write of rolled-up rows
/// goes through here, so the transaction counts itself twice: in `writes`,
/// the number a search's kept matches are checked against
/// ([`crate::search::KeptMatches`]), and as a write of [`ROLLUP_TOPIC`]
/// (announced to other processes at commit, counted here by
/// [`Held::commit`]), which kept pages are checked against.
pub async fn hold<'a>(
    db: &'a Db,
    tenant: &TenantId,
    rollup_at: i64,
) -> Result<Held<'a>, WriteError> {
    let mut tx = db.pool.begin().await?;
    let held = sqlx::query(
        "UPDATE rollup_state SET writes = writes + 1 WHERE tenant_id = $1 AND rollup_at = $2",
    )
    .bind(tenant.as_str())
    .bind(rollup_at)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if held != 1 {
        return Err(WriteError::Superseded);
    }
    changes::announce(&mut tx, db, ROLLUP_TOPIC, tenant.as_str()).await?;
    Ok(Held {
        tx,
        db,
        tenant: tenant.clone(),
    })
}

/// A transaction opened by [`hold`]: written through as a transaction, and
/// ended by [`Held::commit`], so that no write of rolled-up rows commits
/// without being counted.
pub struct Held<'a> {
    tx: Transaction<'a, Any>,
    db: &'a Db,
    tenant: TenantId,
}

impl Held<'_> {
    /// Commits, then counts the write in this process: an answer read
    /// before the commit is not kept past it.
    pub async fn commit(self) -> sqlx::Result<()> {
        self.tx.commit().await?;
        changes::written(self.db, ROLLUP_TOPIC, self.tenant.as_str());
        Ok(())
    }
}

impl<'a> std::ops::Deref for Held<'a> {
    type Target = Transaction<'a, Any>;
    fn deref(&self) -> &Self::Target {
        &self.tx
    }
}

impl std::ops::DerefMut for Held<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.tx
    }
}

/// Asks for a rebuild: bumps the tenant's request counter. Returns it.
pub async fn bump_requested(db: &Db, tenant: &TenantId) -> sqlx::Result<i64> {
    let _turn = db.write_turn().await;
    sqlx::query_scalar(
        "INSERT INTO rollup_state (tenant_id, requested, built) VALUES ($1, 1, 0) \
         ON CONFLICT (tenant_id) DO UPDATE SET requested = rollup_state.requested + 1 \
         RETURNING requested",
    )
    .bind(tenant.as_str())
    .fetch_one(&db.pool)
    .await
}

/// The request counter a rebuild starts from, and its `rollup_at`: later
/// than the previous rebuild's even within one millisecond, so the stale
/// sweep never spares an old row.
pub async fn begin(db: &Db, tenant: &TenantId) -> sqlx::Result<(i64, i64)> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let previous: Option<(i64, Option<i64>)> =
        sqlx::query_as("SELECT requested, rollup_at FROM rollup_state WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_optional(&mut *tx)
            .await?;
    let (requested, last) = previous.unwrap_or((0, None));
    let rollup_at = now_ms().max(last.unwrap_or(0) + 1);
    sqlx::query(
        "INSERT INTO rollup_state (tenant_id, requested, built, rollup_at) VALUES ($1, $2, 0, $3) \
         ON CONFLICT (tenant_id) DO UPDATE SET rollup_at = excluded.rollup_at",
    )
    .bind(tenant.as_str())
    .bind(requested)
    .bind(rollup_at)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok((requested, rollup_at))
}

/// The stamp of the tenant's latest rebuild; none before its first.
pub async fn latest_rollup_at(db: &Db, tenant: &TenantId) -> sqlx::Result<Option<i64>> {
    let stamp: Option<Option<i64>> =
        sqlx::query_scalar("SELECT rollup_at FROM rollup_state WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_optional(&db.pool)
            .await?;
    Ok(stamp.flatten())
}

/// Records that the rebuild started at `requested` is written. True when
/// another request came in meanwhile.
pub async fn finish(db: &Db, tenant: &TenantId, requested: i64) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let now: i64 = sqlx::query_scalar(
        "UPDATE rollup_state SET built = $2 WHERE tenant_id = $1 RETURNING requested",
    )
    .bind(tenant.as_str())
    .bind(requested)
    .fetch_one(&db.pool)
    .await?;
    Ok(now > requested)
}

/// Tenants with a request no rebuild has answered.
pub async fn behind(db: &Db) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar("SELECT tenant_id FROM rollup_state WHERE requested > built")
        .fetch_all(&db.pool)
        .await
}
