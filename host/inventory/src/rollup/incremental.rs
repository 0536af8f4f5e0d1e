//! The incremental rebuild: folds the change queue into the stored rollup
//! instead of reading the whole inventory again.
//!
//! Only the groups (assets, see [`changes`]) the queue names are read, in
//! the snapshot the queue is read in. Their rows as the last rebuild
//! counted them are taken off the stored tallies of the applications they
//! hold and their rows now are added, which gives exactly what a whole
//! rebuild would: the tallies add up over groups. The touched assets are
//! built again from their rows; the others only see their last_seen move
//! when a source that reports them completed a run.
//!
//! It gives way to a whole rebuild (returns `None`) when the stored
//! tallies do not account for the queue (no rebuild yet, or one cut off),
//! when the queue is long enough that reading everything is cheaper, and
//! when an application's dominant vendor changed while devices outside the
//! touched groups hold it (their vendors' device counts would change
//! unseen).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::build::{record_names, Counts, Rollup, Vendor};
use super::changes::{self, moved_completions};
use super::store::{self, ApplicationRows, WriteError};
use super::RebuildStats;
use crate::normalize::clean;
use cairn_core::db::Db;
use cairn_core::ids::TenantId;

/// Queue entries beyond which a whole rebuild runs instead.
const LIMIT: usize = 100_000;

/// Folds the tenant's pending changes into its rollup, stamping what it
/// writes `rollup_at`; `None` when a whole rebuild must run instead.
pub async fn apply(
    db: &Db,
    tenant: &TenantId,
    rollup_at: i64,
) -> Result<Option<RebuildStats>, WriteError> {
    let state = store::read_state(db, tenant).await?;
    if !state.tallied {
        return Ok(None);
    }
    let completions = crate::seen::completed_runs(db, tenant).await?;
    let backend = db.backend;
    let mut tx = store::snapshot(db).await?;
    let Some(touched) = changes::read(&mut tx, tenant, LIMIT).await? else {
        return Ok(None);
    };

    let keys: Vec<String> = touched.groups.iter().flatten().cloned().collect();
    let blank = touched.groups.contains(&None);
    let mut names: BTreeSet<String> = touched.names.clone();
    names.extend(store::asset_names(&mut tx, backend, tenant, &keys).await?);
    if blank {
        names.extend(state.blank_names.iter().cloned());
    }
    let names: Vec<String> = names.into_iter().collect();
    let current = store::read_items_named(&mut tx, backend, tenant, &names, blank).await?;
    let (rows_now, rows_before) = changes::split(&touched, current);
    let items = rows_now.len() as u64;
    let mut now = Rollup::with_completed_runs(completions.clone());
    rows_now.into_iter().for_each(|row| now.add(row));
    let mut before = Rollup::default();
    rows_before.into_iter().for_each(|row| before.add(row));

    let tallies_now = now.tallies();
    let tallies_before = before.tallies();
    let touched_apps: Vec<String> = tallies_now
        .keys()
        .chain(tallies_before.keys())
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let stored = store::read_tallies(&mut tx, backend, tenant, &touched_apps).await?;
    let mut fresh: Vec<(String, Counts)> = Vec::with_capacity(touched_apps.len());
    for name in touched_apps {
        let mut counts = match stored.get(&name) {
            Some(app) => match &app.tally {
                Some(tally) => tally.clone(),
                None => return Ok(None),
            },
            None => Counts::default(),
        };
        if let Some(counts_before) = tallies_before.get(&name) {
            counts.apply(counts_before, -1);
        }
        if let Some(counts_now) = tallies_now.get(&name) {
            counts.apply(counts_now, 1);
        }
        if counts.devices < 0 || counts.rows < 0 {
            // The stored tallies do not match the queue: start afresh.
            tracing::warn!(tenant = %tenant.as_str(), application = %name, "rollup tallies out of step; rebuilding whole");
            return Ok(None);
        }
        fresh.push((name, counts));
    }

    let vendor_before = |name: &str| stored.get(name).and_then(|app| app.vendor.clone());
    let vendor_now: HashMap<&str, Option<String>> = fresh
        .iter()
        .map(|(name, counts)| {
            let vendor = (!counts.is_empty())
                .then(|| counts.dominant_vendor().map(str::to_string))
                .flatten();
            (name.as_str(), vendor)
        })
        .collect();
    for (name, counts) in &fresh {
        let flipped = stored.contains_key(name) && vendor_now[name.as_str()] != vendor_before(name);
        let held_here = tallies_now.get(name).map_or(0, |c| c.devices);
        if flipped && !counts.is_empty() && counts.devices > held_here {
            return Ok(None);
        }
    }
    let devices_before = before.vendor_devices(vendor_before);
    let devices_now = now.vendor_devices(|name| vendor_now.get(name).cloned().flatten());
    let mut vendor_names: BTreeSet<String> = devices_before
        .keys()
        .chain(devices_now.keys())
        .cloned()
        .collect();
    for (name, _) in &fresh {
        vendor_names.extend(vendor_before(name));
        vendor_names.extend(vendor_now[name.as_str()].clone());
    }
    let vendor_names: Vec<String> = vendor_names.into_iter().collect();
    let stored_vendors = store::read_vendors(&mut tx, backend, tenant, &vendor_names).await?;
    let mut vendors = Vec::new();
    let mut vendors_gone = Vec::new();
    for name in vendor_names {
        let (mut applications, mut devices) = stored_vendors.get(&name).copied().unwrap_or((0, 0));
        devices += devices_now.get(&name).copied().unwrap_or(0)
            - devices_before.get(&name).copied().unwrap_or(0);
        for (app, _) in &fresh {
            if stored.contains_key(app) && vendor_before(app).as_deref() == Some(name.as_str()) {
                applications -= 1;
            }
            if vendor_now[app.as_str()].as_deref() == Some(name.as_str()) {
                applications += 1;
            }
        }
        if applications > 0 {
            vendors.push(Vendor {
                name,
                application_count: applications,
                device_count: devices,
            });
        } else {
            vendors_gone.push(name);
        }
    }

    // The detail records that name a touched asset, found by name first
    // so that only those bodies are read.
    let wanted = now.match_forms();
    let mut record_keys: HashMap<String, Vec<String>> = HashMap::new();
    for (source, key, name) in store::read_device_record_names(&mut tx, tenant).await? {
        let Some(name) = clean(name.as_deref()) else {
            continue;
        };
        if record_names(&source, &name)
            .iter()
            .any(|form| wanted.contains(form))
        {
            record_keys.entry(source).or_default().push(key);
        }
    }
    let mut records = Vec::new();
    for (source, keys) in &record_keys {
        records
            .extend(store::read_device_records_of(&mut tx, backend, tenant, source, keys).await?);
    }
    tx.commit().await?;

    let blank_names: Vec<String> = if blank {
        now.blank_names().iter().cloned().collect()
    } else {
        state.blank_names
    };
    let derived = tokio::task::spawn_blocking(move || Folded::new(now, records, fresh))
        .await
        .unwrap_or_else(|failed| std::panic::resume_unwind(failed.into_panic()));
    let built: HashSet<&str> = derived.assets.iter().map(|a| a.key.as_str()).collect();
    let assets_gone: Vec<String> = keys
        .iter()
        .filter(|key| !built.contains(key.as_str()))
        .cloned()
        .collect();

    let _turn = db.write_turn().await;
    let mut tx = store::hold(db, tenant, rollup_at).await?;
    let rows = ApplicationRows {
        applications: &derived.applications,
        tallies: &derived.tallies,
        documents: &derived.application_documents,
    };
    store::upsert_applications(&mut tx, backend, tenant, rollup_at, rows).await?;
    store::delete_named(
        &mut tx,
        backend,
        store::Named::Applications,
        tenant,
        &derived.gone,
    )
    .await?;
    store::upsert_assets(
        &mut tx,
        backend,
        tenant,
        rollup_at,
        &derived.assets,
        &derived.asset_search,
    )
    .await?;
    store::delete_named(&mut tx, backend, store::Named::Assets, tenant, &assets_gone).await?;
    store::upsert_vendors(&mut tx, db.backend, tenant, rollup_at, &vendors).await?;
    store::delete_named(
        &mut tx,
        backend,
        store::Named::Vendors,
        tenant,
        &vendors_gone,
    )
    .await?;
    for (source, completed) in moved_completions(&state.completions, &completions) {
        store::bump_last_seen(&mut tx, backend, tenant, &source, completed, rollup_at).await?;
    }
    changes::consume(&mut tx, backend, tenant, &touched.ids).await?;
    store::save_state(&mut tx, backend, tenant, &blank_names, &completions).await?;
    tx.commit().await?;
    Ok(Some(RebuildStats {
        items,
        applications: derived.applications.len() + derived.gone.len(),
        assets: derived.assets.len() + assets_gone.len(),
        rollup_at,
        changes: Some(touched.ids.len()),
    }))
}

/// What the fold derived, ready to write.
struct Folded {
    applications: Vec<super::build::Application>,
    tallies: Vec<Counts>,
    application_documents: Vec<String>,
    /// Applications no row names any more.
    gone: Vec<String>,
    assets: Vec<super::build::Asset>,
    asset_search: Vec<crate::assets::AssetSearch>,
}

impl Folded {
    fn new(
        mut now: Rollup,
        records: Vec<super::build::DeviceRecord>,
        fresh: Vec<(String, Counts)>,
    ) -> Folded {
        let assets = now.assets(records);
        let mut folded = Folded {
            applications: Vec::new(),
            tallies: Vec::new(),
            application_documents: Vec::new(),
            gone: Vec::new(),
            asset_search: assets.iter().map(crate::assets::search).collect(),
            assets,
        };
        for (name, counts) in fresh {
            if counts.is_empty() {
                folded.gone.push(name);
                continue;
            }
            let application = counts.application(&name);
            folded
                .application_documents
                .push(super::build::search_document(&application));
            folded.applications.push(application);
            folded.tallies.push(counts);
        }
        folded
    }
}
