//! The rollup's change queue (`rollup_changes`, migration 0027): which
//! inventory rows and device records changed since the last rebuild, and
//! what each changed row was before.
//!
//! The unit of an incremental rebuild is a *group*: the rows whose device
//! name has one NetBIOS key (one asset), or the rows with no device name.
//! A device belongs to exactly one group, so groups add up: the tallies
//! of untouched groups stay as stored, and a touched group's rows as the
//! last rebuild counted them are taken off and its rows now added.

use std::collections::{BTreeSet, HashMap, HashSet};

use sqlx::{Any, Transaction};

use super::build::{is_detail_source, ItemRow};
use crate::changes::{consume_from, Queue};
use crate::normalize::{self, clean};
use cairn_core::db::Backend;
use cairn_core::ids::TenantId;

/// An asset's NetBIOS key, or `None` for the rows with no device name.
pub type Group = Option<String>;

/// The group of a device name as the inventory holds it.
pub fn group_of(raw: Option<&str>) -> Group {
    clean(raw).map(|name| normalize::netbios_key(Some(&name)))
}

#[derive(sqlx_macros::FromRow)]
struct Entry {
    id: i64,
    kind: String,
    source: String,
    item_key: String,
    device_name: Option<String>,
    had_old: i64,
    old_device_name: Option<String>,
    old_device_id: Option<String>,
    old_os_platform: Option<String>,
    old_os_version: Option<String>,
    old_user_email: Option<String>,
    old_user_name: Option<String>,
    old_application_name: Option<String>,
    old_vendor: Option<String>,
    old_version: Option<String>,
    old_publisher: Option<String>,
    old_updated_at: Option<i64>,
}

/// What the queue says changed, folded into the groups it touches.
#[derive(Debug, Default)]
pub struct Touched {
    /// The entries read, to consume with the result.
    pub ids: Vec<i64>,
    pub groups: HashSet<Group>,
    /// Device names (as stored) the changed rows and records had or have.
    pub names: BTreeSet<String>,
    /// The inventory rows that changed, by (source, item key).
    pub changed: HashSet<(String, String)>,
    /// Each changed row as the last rebuild counted it, if it existed then.
    pub before: Vec<ItemRow>,
}

/// Reads up to `limit` entries of the tenant's queue; `None` when there
/// are more (a whole rebuild is then cheaper than folding them in).
pub async fn read(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    limit: usize,
) -> sqlx::Result<Option<Touched>> {
    let entries: Vec<Entry> = sqlx::query_as(
        "SELECT id, kind, source, item_key, device_name, CAST(had_old AS BIGINT) AS had_old, \
         old_device_name, old_device_id, old_os_platform, old_os_version, old_user_email, \
         old_user_name, old_application_name, old_vendor, old_version, old_publisher, \
         old_updated_at FROM rollup_changes WHERE tenant_id = $1 ORDER BY id LIMIT $2",
    )
    .bind(tenant.as_str())
    .bind(limit as i64 + 1)
    .fetch_all(&mut **tx)
    .await?;
    if entries.len() > limit {
        return Ok(None);
    }
    let mut touched = Touched::default();
    for entry in entries {
        touched.ids.push(entry.id);
        let record = entry.kind == "record";
        // A removed row has no device now; a row with no device name
        // belongs to the group of those, a record to none.
        let mut names = Vec::with_capacity(2);
        if entry.had_old == 1 {
            names.push(&entry.old_device_name);
        }
        if entry.kind != "item-removed" {
            names.push(&entry.device_name);
        }
        for name in names {
            if record && name.is_none() {
                continue;
            }
            touched.groups.insert(group_of(name.as_deref()));
            if let Some(name) = name {
                touched.names.insert(name.clone());
            }
        }
        if record {
            touch_record(&mut touched, &entry);
            continue;
        }
        let key = (entry.source.clone(), entry.item_key.clone());
        // The first entry of a row since the last rebuild holds what that
        // rebuild read; later ones hold states it never saw.
        if !touched.changed.insert(key) || entry.had_old == 0 {
            continue;
        }
        touched.before.push(ItemRow {
            source: entry.source,
            item_key: entry.item_key,
            device_name: entry.old_device_name,
            device_id: entry.old_device_id,
            os_platform: entry.old_os_platform,
            os_version: entry.old_os_version,
            user_email: entry.old_user_email,
            user_name: entry.old_user_name,
            application_name: entry.old_application_name,
            vendor: entry.old_vendor,
            version: entry.old_version,
            publisher: entry.old_publisher,
            updated_at: entry.old_updated_at.unwrap_or(0),
            // The queue keeps what the application tallies need; an
            // asset's fields are read again from its rows now.
            os_name: None,
            os_build: None,
            group_ids: None,
        });
    }
    Ok(Some(touched))
}

/// A device record attaches to the asset it names, a scanner record also
/// to the one its short host names.
fn touch_record(touched: &mut Touched, entry: &Entry) {
    if is_detail_source(&entry.source) != Some(super::build::SCANNER_SOURCE) {
        return;
    }
    for name in [&entry.device_name, &entry.old_device_name] {
        let Some(name) = clean(name.as_deref()) else {
            continue;
        };
        touched
            .groups
            .insert(group_of(Some(normalize::short_host(&name))));
    }
}

/// The ids of every entry of the tenant's queue: what a whole rebuild,
/// reading the inventory in the same snapshot, accounts for.
pub async fn pending_ids(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
) -> sqlx::Result<Vec<i64>> {
    sqlx::query_scalar("SELECT id FROM rollup_changes WHERE tenant_id = $1")
        .bind(tenant.as_str())
        .fetch_all(&mut **tx)
        .await
}

/// Deletes the entries a rebuild read, in the transaction that writes its
/// result.
pub async fn consume(
    tx: &mut Transaction<'_, Any>,
    backend: Backend,
    tenant: &TenantId,
    ids: &[i64],
) -> sqlx::Result<()> {
    consume_from(tx, backend, Queue::Rollup, tenant, ids).await
}

/// The rows of the touched groups now and as the last rebuild counted
/// them, given every current row whose device name the groups could hold.
pub fn split(touched: &Touched, current: Vec<ItemRow>) -> (Vec<ItemRow>, Vec<ItemRow>) {
    let mut seen: HashSet<(String, String)> = HashSet::new();
    let mut now = Vec::with_capacity(current.len());
    let mut before = Vec::new();
    for row in current {
        if !touched
            .groups
            .contains(&group_of(row.device_name.as_deref()))
        {
            continue;
        }
        let key = (row.source.clone(), row.item_key.clone());
        // A name may be asked for twice (as stored and as changed).
        if !seen.insert(key.clone()) {
            continue;
        }
        if !touched.changed.contains(&key) {
            before.push(row.clone());
        }
        now.push(row);
    }
    before.extend(
        touched
            .before
            .iter()
            .filter(|row| {
                touched
                    .groups
                    .contains(&group_of(row.device_name.as_deref()))
            })
            .cloned(),
    );
    (now, before)
}

/// Per source, the completion times that moved since `before`.
pub fn moved_completions(
    before: &HashMap<String, i64>,
    now: &HashMap<String, i64>,
) -> Vec<(String, i64)> {
    let mut moved: Vec<(String, i64)> = now
        .iter()
        .filter(|(source, at)| before.get(*source).is_none_or(|b| b < at))
        .map(|(source, at)| (source.clone(), *at))
        .collect();
    moved.sort();
    moved
}
