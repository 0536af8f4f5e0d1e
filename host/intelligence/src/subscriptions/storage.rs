//! `subscriptions` and `subscription_cves`: every statement takes the
//! tenant.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::json;
use sqlx::Row;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, to_rfc3339, Db};
use cairn_core::ids::TenantId;

pub const VENDOR: &str = "vendor";
pub const PRODUCT: &str = "product";
/// What a subscription follows.
pub const SUB_TYPES: [&str; 2] = [VENDOR, PRODUCT];

/// How a subscription's last sync went.
pub const SYNC_STATUSES: [&str; 2] = ["success", "error"];

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SubscriptionView {
    pub id: String,
    /// `vendor` or `product`.
    pub sub_type: String,
    /// As subscribed.
    pub name: String,
    /// The name as the CVE store writes names (`google`, `http_server`).
    pub cpe_name: String,
    /// A product's vendor, when given.
    pub vendor: Option<String>,
    /// CVEs the syncs brought for it.
    pub cve_count: i64,
    pub created_at: String,
    pub last_synced_at: Option<String>,
    /// `success` or `error`, for the last sync; absent before the first.
    pub last_status: Option<String>,
    pub last_error: Option<String>,
    /// The NVD query the last sync made (`virtualMatchString=...` or
    /// `keywordSearch=...`).
    pub last_query: Option<String>,
    /// A sync is waiting or running for it.
    pub sync_pending: bool,
}

const COLUMNS: &str = "s.id, s.sub_type, s.name, s.name_key, s.vendor, \
    (SELECT COUNT(*) FROM subscription_cves c WHERE c.subscription_id = s.id) AS cve_count, \
    s.created_at, s.last_synced_at, s.last_status, s.last_error, s.last_query, s.sync_requested_at";

fn view(r: sqlx::any::AnyRow) -> sqlx::Result<SubscriptionView> {
    Ok(SubscriptionView {
        id: r.try_get("id")?,
        sub_type: r.try_get("sub_type")?,
        name: r.try_get("name")?,
        cpe_name: r.try_get("name_key")?,
        vendor: r.try_get("vendor")?,
        cve_count: r.try_get("cve_count")?,
        created_at: to_rfc3339(r.try_get("created_at")?),
        last_synced_at: r
            .try_get::<Option<i64>, _>("last_synced_at")?
            .map(to_rfc3339),
        last_status: r.try_get("last_status")?,
        last_error: r.try_get("last_error")?,
        last_query: r.try_get("last_query")?,
        sync_pending: r.try_get::<Option<i64>, _>("sync_requested_at")?.is_some(),
    })
}

pub async fn subscriptions(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<SubscriptionView>> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM subscriptions s WHERE s.tenant_id = $1 \
         ORDER BY s.sub_type, s.name_key"
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter().map(view).collect()
}

pub async fn subscription(
    db: &Db,
    tenant: &TenantId,
    id: &str,
) -> sqlx::Result<Option<SubscriptionView>> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM subscriptions s WHERE s.tenant_id = $1 AND s.id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(view).transpose()
}

/// The subscription of that type and CPE name, if any.
pub async fn by_name(
    db: &Db,
    tenant: &TenantId,
    sub_type: &str,
    name_key: &str,
) -> sqlx::Result<Option<SubscriptionView>> {
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM subscriptions s WHERE s.tenant_id = $1 AND s.sub_type = $2 \
         AND s.name_key = $3"
    ))
    .bind(tenant.as_str())
    .bind(sub_type)
    .bind(name_key)
    .fetch_optional(&db.pool)
    .await?;
    row.map(view).transpose()
}

/// A new subscription, its sync asked for.
pub struct NewSubscription<'a> {
    pub sub_type: &'a str,
    pub name: &'a str,
    pub name_key: &'a str,
    pub vendor: Option<&'a str>,
    pub by: &'a str,
}

/// Stores a subscription; `None` when the tenant has it already.
pub async fn create(
    db: &Db,
    tenant: &TenantId,
    new: &NewSubscription<'_>,
) -> sqlx::Result<Option<String>> {
    let id = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    let _turn = db.write_turn().await;
    let inserted = sqlx::query(
        "INSERT INTO subscriptions (id, tenant_id, sub_type, name, name_key, vendor, created_by, \
         created_at, sync_requested_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) \
         ON CONFLICT (tenant_id, sub_type, name_key) DO NOTHING",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(new.sub_type)
    .bind(new.name)
    .bind(new.name_key)
    .bind(new.vendor)
    .bind(new.by)
    .bind(now)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok((inserted == 1).then_some(id))
}

/// Deletes a subscription (its CVE links cascade).
pub async fn delete(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<bool> {
    cairn_core::db::delete_tenant_row(db, "subscriptions", tenant, id).await
}

/// Asks a sync of every subscription of `tenant`; how many it has.
pub async fn request_sync(db: &Db, tenant: &TenantId) -> sqlx::Result<u64> {
    let _turn = db.write_turn().await;
    Ok(
        sqlx::query("UPDATE subscriptions SET sync_requested_at = $2 WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .bind(now_ms())
            .execute(&db.pool)
            .await?
            .rows_affected(),
    )
}

/// Tenants with at least one subscription.
pub async fn tenants_with_subscriptions(db: &Db) -> sqlx::Result<Vec<TenantId>> {
    let ids: Vec<String> = sqlx::query_scalar("SELECT DISTINCT tenant_id FROM subscriptions")
        .fetch_all(&db.pool)
        .await?;
    Ok(ids.into_iter().map(TenantId).collect())
}

/// Tenants with a subscription asked to sync before `before`.
pub async fn tenants_waiting(db: &Db, before: i64) -> sqlx::Result<Vec<TenantId>> {
    let ids: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT tenant_id FROM subscriptions WHERE sync_requested_at < $1",
    )
    .bind(before)
    .fetch_all(&db.pool)
    .await?;
    Ok(ids.into_iter().map(TenantId).collect())
}

/// A subscription a sync is to run for.
pub struct Pending {
    pub id: String,
    pub sub_type: String,
    pub name: String,
    pub name_key: String,
    pub vendor: Option<String>,
    pub synced_before: bool,
}

/// The oldest subscription of `tenant` whose sync was asked for.
pub async fn next_pending(db: &Db, tenant: &TenantId) -> sqlx::Result<Option<Pending>> {
    let row = sqlx::query(
        "SELECT id, sub_type, name, name_key, vendor, last_synced_at FROM subscriptions \
         WHERE tenant_id = $1 AND sync_requested_at IS NOT NULL \
         ORDER BY sync_requested_at, id LIMIT 1",
    )
    .bind(tenant.as_str())
    .fetch_optional(&db.pool)
    .await?;
    row.map(|r| -> sqlx::Result<Pending> {
        Ok(Pending {
            id: r.try_get("id")?,
            sub_type: r.try_get("sub_type")?,
            name: r.try_get("name")?,
            name_key: r.try_get("name_key")?,
            vendor: r.try_get("vendor")?,
            synced_before: r.try_get::<Option<i64>, _>("last_synced_at")?.is_some(),
        })
    })
    .transpose()
}

/// How a sync of one subscription ended.
pub enum SyncOutcome<'a> {
    /// Every CVE of the search, with its last modification.
    Synced(&'a [(String, i64)]),
    Failed(&'a str),
}

/// Records a sync that started at `started`: the CVEs it found (new ones,
/// and known ones whose record changed, stamped now), the status, and the
/// request cleared unless it was asked again meanwhile. One transaction.
pub async fn record_sync(
    db: &Db,
    tenant: &TenantId,
    pending: &Pending,
    started: i64,
    query: &str,
    outcome: SyncOutcome<'_>,
) -> sqlx::Result<()> {
    let now = now_ms();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    // Deleted while it synced: nothing to record.
    let exists: Option<String> =
        sqlx::query_scalar("SELECT id FROM subscriptions WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(&pending.id)
            .fetch_optional(&mut *tx)
            .await?;
    if exists.is_none() {
        return Ok(());
    }
    let (status, error) = match outcome {
        SyncOutcome::Failed(error) => ("error", Some(error)),
        SyncOutcome::Synced(cves) => {
            let known: HashMap<String, i64> = sqlx::query(
                "SELECT cve_id, last_modified FROM subscription_cves \
                 WHERE tenant_id = $1 AND subscription_id = $2",
            )
            .bind(tenant.as_str())
            .bind(&pending.id)
            .fetch_all(&mut *tx)
            .await?
            .into_iter()
            .map(|r| Ok((r.try_get("cve_id")?, r.try_get("last_modified")?)))
            .collect::<sqlx::Result<_>>()?;
            let baseline = i64::from(!pending.synced_before);
            let mut added = vec![];
            let mut changed = vec![];
            for (cve, modified) in cves {
                match known.get(cve) {
                    None => added.push(json!([cve, modified])),
                    Some(before) if before != modified => changed.push(json!([cve, modified])),
                    Some(_) => {}
                }
            }
            let rows = cairn_core::db::json_array_rows(db.backend, 1);
            for chunk in added.chunks(5_000) {
                sqlx::query(&format!(
                    "INSERT INTO subscription_cves (subscription_id, tenant_id, cve_id, last_modified, \
                     added_at, baseline) SELECT $2, $3, value->>0, CAST(value->>1 AS BIGINT), $4, $5 \
                     FROM {rows} WHERE true ON CONFLICT (subscription_id, cve_id) DO NOTHING"
                ))
                .bind(serde_json::to_string(chunk).unwrap_or_default())
                .bind(&pending.id)
                .bind(tenant.as_str())
                .bind(now)
                .bind(baseline)
                .execute(&mut *tx)
                .await?;
            }
            for chunk in changed.chunks(5_000) {
                sqlx::query(&format!(
                    "UPDATE subscription_cves SET changed_at = $3, \
                     last_modified = (SELECT CAST(value->>1 AS BIGINT) FROM {rows} \
                                      WHERE value->>0 = subscription_cves.cve_id) \
                     WHERE subscription_id = $2 AND cve_id IN (SELECT value->>0 FROM {rows})"
                ))
                .bind(serde_json::to_string(chunk).unwrap_or_default())
                .bind(&pending.id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            ("success", None)
        }
    };
    // A failed sync keeps the CVEs it had; its time is the attempt's.
    sqlx::query(
        "UPDATE subscriptions SET last_synced_at = CASE WHEN $3 = 'success' THEN $5 ELSE last_synced_at END, \
         last_status = $3, last_error = $4, last_query = $6, \
         sync_requested_at = CASE WHEN sync_requested_at <= $7 THEN NULL ELSE sync_requested_at END \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(&pending.id)
    .bind(status)
    .bind(error)
    .bind(now)
    .bind(query)
    .bind(started)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// A new or changed CVE of a subscription.
pub struct Activity {
    /// `new` or `changed`.
    pub event: &'static str,
    pub at: i64,
    pub subscription_id: String,
    pub sub_type: String,
    pub subscription_name: String,
    pub cve_id: String,
}

/// New and changed CVEs of the tenant's subscriptions since `since`,
/// newest first: a page and the total. A CVE the first sync of a
/// subscription brought is history, not news.
pub async fn activity(
    db: &Db,
    tenant: &TenantId,
    since: i64,
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<Activity>, i64)> {
    let from = "FROM subscription_cves x JOIN subscriptions s ON s.id = x.subscription_id \
                WHERE x.tenant_id = $1 AND (x.changed_at >= $2 OR (x.baseline = 0 AND x.added_at >= $2))";
    let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) {from}"))
        .bind(tenant.as_str())
        .bind(since)
        .fetch_one(&db.pool)
        .await?;
    let rows = sqlx::query(&format!(
        "SELECT x.cve_id, x.changed_at, COALESCE(x.changed_at, x.added_at) AS at, s.id AS subscription_id, \
         s.sub_type, s.name {from} ORDER BY at DESC, x.cve_id, s.id LIMIT $3 OFFSET $4"
    ))
    .bind(tenant.as_str())
    .bind(since)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    Ok((
        rows.into_iter()
            .map(|r| {
                Ok(Activity {
                    cve_id: r.try_get("cve_id")?,
                    event: if r.try_get::<Option<i64>, _>("changed_at")?.is_some() {
                        "changed"
                    } else {
                        "new"
                    },
                    at: r.try_get("at")?,
                    subscription_id: r.try_get("subscription_id")?,
                    sub_type: r.try_get("sub_type")?,
                    subscription_name: r.try_get("name")?,
                })
            })
            .collect::<sqlx::Result<_>>()?,
        total,
    ))
}
