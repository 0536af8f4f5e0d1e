//! `news_feeds`, `news_items` (with `news_item_cves` and the per-user
//! `news_item_reads`): every statement takes the tenant.

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use super::classify::{Classification, Relevance};
use super::fetch::{FeedItem, Validators};
use cairn_core::db::{now_ms, to_rfc3339, Db};
use cairn_core::ids::TenantId;
use cairn_inventory::search::escape_like;

/// The formats a feed is read in.
pub const FEED_FORMATS: [&str; 3] = ["rss", "atom", "json"];
/// How a feed's last fetch went.
pub const FETCH_STATUSES: [&str; 3] = ["success", "not_modified", "error"];

#[derive(Debug, Serialize, ToSchema)]
pub struct FeedView {
    pub id: String,
    pub url: String,
    pub title: String,
    /// `rss`, `atom` or `json`, as last read; none before the first fetch.
    pub format: Option<String>,
    /// Added by `POST /news-feeds/feeds/seed`.
    pub seeded: bool,
    pub item_count: i64,
    pub last_fetched_at: Option<String>,
    /// `success`, `not_modified` (fetched, nothing new) or `error`,
    /// for the last fetch.
    pub last_status: Option<String>,
    pub last_error: Option<String>,
    pub created_at: String,
}

const FEED_COLUMNS: &str = "f.id, f.url, f.title, f.format, f.seeded, \
    (SELECT COUNT(*) FROM news_items i WHERE i.feed_id = f.id) AS item_count, \
    f.last_fetched_at, f.last_status, f.last_error, f.created_at";

fn feed_view(r: sqlx::any::AnyRow) -> sqlx::Result<FeedView> {
    Ok(FeedView {
        id: r.try_get("id")?,
        url: r.try_get("url")?,
        title: r.try_get("title")?,
        format: r.try_get("format")?,
        seeded: r.try_get::<i64, _>("seeded")? != 0,
        item_count: r.try_get("item_count")?,
        last_fetched_at: r
            .try_get::<Option<i64>, _>("last_fetched_at")?
            .map(to_rfc3339),
        last_status: r.try_get("last_status")?,
        last_error: r.try_get("last_error")?,
        created_at: to_rfc3339(r.try_get("created_at")?),
    })
}

pub async fn feeds(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<FeedView>> {
    let rows = sqlx::query(&format!(
        "SELECT {FEED_COLUMNS} FROM news_feeds f WHERE f.tenant_id = $1 ORDER BY f.title, f.id"
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter().map(feed_view).collect()
}

pub async fn feed(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<Option<FeedView>> {
    let row = sqlx::query(&format!(
        "SELECT {FEED_COLUMNS} FROM news_feeds f WHERE f.tenant_id = $1 AND f.id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(feed_view).transpose()
}

/// A feed to fetch: its id, URL and validators.
pub struct FeedToFetch {
    pub id: String,
    pub url: String,
    pub validators: Validators,
}

pub async fn feeds_to_fetch(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<FeedToFetch>> {
    let rows: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT id, url, etag, last_modified FROM news_feeds WHERE tenant_id = $1 ORDER BY id",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, url, etag, last_modified)| FeedToFetch {
            id,
            url,
            validators: Validators {
                etag,
                last_modified,
            },
        })
        .collect())
}

/// Adds a feed; `None` when the tenant has this URL already.
pub async fn add_feed(
    db: &Db,
    tenant: &TenantId,
    url: &str,
    title: &str,
    seeded: bool,
) -> sqlx::Result<Option<String>> {
    let id = uuid::Uuid::now_v7().to_string();
    let _turn = db.write_turn().await;
    let inserted = sqlx::query(
        "INSERT INTO news_feeds (id, tenant_id, url, title, seeded, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, url) DO NOTHING",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(url)
    .bind(title)
    .bind(i64::from(seeded))
    .bind(now_ms())
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok((inserted == 1).then_some(id))
}

/// Removes a feed with its items; false when there is none.
pub async fn delete_feed(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let deleted = sqlx::query("DELETE FROM news_feeds WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(id)
        .execute(&db.pool)
        .await?
        .rows_affected();
    Ok(deleted == 1)
}

/// How a fetch ended.
pub enum FetchOutcome<'a> {
    /// A document with these items and validators (and format and title).
    Read {
        items: &'a [FeedItem],
        validators: &'a Validators,
        format: &'a str,
    },
    NotModified,
    Failed(&'a str),
}

/// Records a fetch of `feed_id`, storing the items it brought that the
/// tenant does not have (by dedupe key), in one transaction; the ids of
/// the new items.
pub async fn record_fetch(
    db: &Db,
    tenant: &TenantId,
    feed_id: &str,
    outcome: FetchOutcome<'_>,
) -> sqlx::Result<Vec<String>> {
    let now = now_ms();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let mut added = vec![];
    let (status, error) = match &outcome {
        FetchOutcome::Read { .. } => ("success", None),
        FetchOutcome::NotModified => ("not_modified", None),
        FetchOutcome::Failed(reason) => ("error", Some(*reason)),
    };
    sqlx::query(
        "UPDATE news_feeds SET last_fetched_at = $3, last_status = $4, last_error = $5 \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(feed_id)
    .bind(now)
    .bind(status)
    .bind(error)
    .execute(&mut *tx)
    .await?;
    if let FetchOutcome::Read {
        items,
        validators,
        format,
    } = outcome
    {
        sqlx::query(
            "UPDATE news_feeds SET etag = $3, last_modified = $4, format = $5 \
             WHERE tenant_id = $1 AND id = $2",
        )
        .bind(tenant.as_str())
        .bind(feed_id)
        .bind(validators.etag.as_deref())
        .bind(validators.last_modified.as_deref())
        .bind(format)
        .execute(&mut *tx)
        .await?;
        for item in items {
            let id = uuid::Uuid::now_v7().to_string();
            let inserted = sqlx::query(
                "INSERT INTO news_items (id, tenant_id, feed_id, dedupe_key, title, link, summary, \
                 published_at, fetched_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
                 ON CONFLICT (tenant_id, dedupe_key) DO NOTHING",
            )
            .bind(&id)
            .bind(tenant.as_str())
            .bind(feed_id)
            .bind(&item.dedupe_key)
            .bind(&item.title)
            .bind(item.link.as_deref())
            .bind(&item.summary)
            .bind(item.published_at)
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            if inserted == 1 {
                added.push(id);
            }
        }
    }
    tx.commit().await?;
    Ok(added)
}

/// The text of an item, for classification.
#[derive(Debug, sqlx_macros::FromRow)]
pub struct ItemToClassify {
    pub id: String,
    pub title: String,
    pub summary: String,
}

/// Items never classified or asked to be classified again, newest first
/// (at most `limit`).
pub async fn items_to_classify(
    db: &Db,
    tenant: &TenantId,
    limit: i64,
) -> sqlx::Result<Vec<ItemToClassify>> {
    sqlx::query_as(
        "SELECT id, title, summary FROM news_items \
         WHERE tenant_id = $1 AND (classified_at IS NULL OR reclassify = 1) \
         ORDER BY fetched_at DESC, id DESC LIMIT $2",
    )
    .bind(tenant.as_str())
    .bind(limit)
    .fetch_all(&db.pool)
    .await
}

/// One item's text.
pub async fn item_to_classify(
    db: &Db,
    tenant: &TenantId,
    item_id: &str,
) -> sqlx::Result<Option<ItemToClassify>> {
    sqlx::query_as("SELECT id, title, summary FROM news_items WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(item_id)
        .fetch_optional(&db.pool)
        .await
}

/// Asks the next classification job to classify `ids` again; all or
/// none: `false` (nothing marked) when one is not the tenant's.
pub async fn request_reclassification(
    db: &Db,
    tenant: &TenantId,
    ids: &[String],
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let marked = sqlx::query(&format!(
        "UPDATE news_items SET reclassify = 1 WHERE tenant_id = $1 AND id IN ({})",
        cairn_core::db::json_text_values(db.backend, 2)
    ))
    .bind(tenant.as_str())
    .bind(serde_json::to_string(ids).unwrap_or_default())
    .execute(&mut *tx)
    .await?
    .rows_affected();
    let distinct: std::collections::HashSet<&String> = ids.iter().collect();
    if marked as usize != distinct.len() {
        tx.rollback().await?;
        return Ok(false);
    }
    tx.commit().await?;
    Ok(true)
}

/// Stores an item's classification and its CVE ids together.
pub async fn save_classification(
    db: &Db,
    tenant: &TenantId,
    item_id: &str,
    classification: &Classification,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    sqlx::query(
        "UPDATE news_items SET category = $3, severity = $4, vendors = $5, products = $6, \
         relevance = $7, relevant = $8, classified_by = $9, classifier_note = $10, \
         classified_at = $11, reclassify = 0 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(item_id)
    .bind(&classification.category)
    .bind(&classification.severity)
    .bind(json(&classification.vendors))
    .bind(json(&classification.products))
    .bind(json(&classification.relevance))
    .bind(i64::from(!classification.relevance.is_empty()))
    .bind(classification.classified_by)
    .bind(classification.note.as_deref())
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM news_item_cves WHERE tenant_id = $1 AND item_id = $2")
        .bind(tenant.as_str())
        .bind(item_id)
        .execute(&mut *tx)
        .await?;
    for cve in &classification.cve_ids {
        sqlx::query(
            "INSERT INTO news_item_cves (tenant_id, item_id, cve_id) VALUES ($1, $2, $3) \
             ON CONFLICT DO NOTHING",
        )
        .bind(tenant.as_str())
        .bind(item_id)
        .bind(cve)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await
}

fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "[]".into())
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ItemView {
    pub id: String,
    pub feed_id: String,
    pub feed_title: String,
    pub title: String,
    pub link: Option<String>,
    /// The item's text without markup.
    pub summary: String,
    pub published_at: Option<String>,
    pub fetched_at: String,
    /// One of `vulnerability`, `exploit_in_the_wild`, `breach`, `malware`,
    /// `patch_release`, `advisory`, `other`; none until classified.
    pub category: Option<String>,
    /// `critical`, `high`, `medium` or `low`; none until classified.
    pub severity: Option<String>,
    pub cve_ids: Vec<String>,
    pub vendors: Vec<String>,
    pub products: Vec<String>,
    /// The tenant's applications, vendors and CVEs the item concerns.
    pub relevance: Vec<Relevance>,
    pub relevant: bool,
    /// `model` or `rules`.
    pub classified_by: Option<String>,
    /// Why the model did not classify the item, when one is configured.
    pub classifier_note: Option<String>,
    pub classified_at: Option<String>,
    /// Whether the caller has read it.
    pub read: bool,
    /// The member it is assigned to (user id).
    pub assigned_to: Option<String>,
    pub assigned_at: Option<String>,
}

/// What a list narrows to; `None` fields do not narrow.
#[derive(Debug, Default)]
pub struct ItemFilter {
    pub feed_id: Option<String>,
    pub category: Option<String>,
    pub severity: Option<String>,
    pub read: Option<bool>,
    pub assigned: Option<bool>,
    pub assigned_to: Option<String>,
    pub relevant: Option<bool>,
    pub cve_id: Option<String>,
    pub search: Option<String>,
}

const ITEM_COLUMNS: &str =
    "i.id, i.feed_id, f.title AS feed_title, i.title, i.link, i.summary, i.published_at, \
    i.fetched_at, i.category, i.severity, i.vendors, i.products, i.relevance, i.relevant, \
    i.classified_by, i.classifier_note, i.classified_at, \
    CASE WHEN r.user_id IS NULL THEN 0 ELSE 1 END AS is_read, i.assigned_to, i.assigned_at";

/// `$1` tenant, `$2` the caller (for `read`).
const ITEM_FROM: &str = "news_items i JOIN news_feeds f ON f.id = i.feed_id \
    LEFT JOIN news_item_reads r ON r.item_id = i.id AND r.user_id = $2";

const ITEM_FILTER: &str = "i.tenant_id = $1 \
    AND (CAST($3 AS TEXT) IS NULL OR i.feed_id = $3) \
    AND (CAST($4 AS TEXT) IS NULL OR i.category = $4) \
    AND (CAST($5 AS TEXT) IS NULL OR i.severity = $5) \
    AND (CAST($6 AS BIGINT) IS NULL OR (CASE WHEN r.user_id IS NULL THEN 0 ELSE 1 END) = $6) \
    AND (CAST($7 AS BIGINT) IS NULL OR (CASE WHEN i.assigned_to IS NULL THEN 0 ELSE 1 END) = $7) \
    AND (CAST($8 AS TEXT) IS NULL OR i.assigned_to = $8) \
    AND (CAST($9 AS BIGINT) IS NULL OR i.relevant = $9) \
    AND (CAST($10 AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM news_item_cves c \
         WHERE c.tenant_id = i.tenant_id AND c.item_id = i.id AND c.cve_id = $10)) \
    AND (CAST($11 AS TEXT) IS NULL OR LOWER(i.title) LIKE LOWER($11) ESCAPE '\\' \
         OR LOWER(i.summary) LIKE LOWER($11) ESCAPE '\\')";

fn bind_filter<'q>(
    query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    tenant: &'q TenantId,
    user_id: &'q str,
    filter: &'q ItemFilter,
) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
    query
        .bind(tenant.as_str())
        .bind(user_id)
        .bind(filter.feed_id.as_deref())
        .bind(filter.category.as_deref())
        .bind(filter.severity.as_deref())
        .bind(filter.read.map(i64::from))
        .bind(filter.assigned.map(i64::from))
        .bind(filter.assigned_to.as_deref())
        .bind(filter.relevant.map(i64::from))
        .bind(filter.cve_id.as_deref())
        .bind(
            filter
                .search
                .as_deref()
                .map(|s| format!("%{}%", escape_like(s))),
        )
}

/// A page of the tenant's items, newest first, as `user_id` sees them.
pub async fn items(
    db: &Db,
    tenant: &TenantId,
    user_id: &str,
    filter: &ItemFilter,
    skip: i64,
    limit: i64,
) -> sqlx::Result<(Vec<ItemView>, i64)> {
    let rows = bind_filter(
        sqlx::query(&format!(
            "SELECT {ITEM_COLUMNS} FROM {ITEM_FROM} WHERE {ITEM_FILTER} \
             ORDER BY COALESCE(i.published_at, i.fetched_at) DESC, i.id DESC \
             LIMIT $12 OFFSET $13"
        )),
        tenant,
        user_id,
        filter,
    )
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total: i64 = bind_filter(
        sqlx::query(&format!(
            "SELECT COUNT(*) AS total FROM {ITEM_FROM} WHERE {ITEM_FILTER}"
        )),
        tenant,
        user_id,
        filter,
    )
    .fetch_one(&db.pool)
    .await?
    .try_get("total")?;
    Ok((with_cves(db, tenant, rows).await?, total))
}

/// One item as `user_id` sees it.
pub async fn item(
    db: &Db,
    tenant: &TenantId,
    user_id: &str,
    item_id: &str,
) -> sqlx::Result<Option<ItemView>> {
    let rows = sqlx::query(&format!(
        "SELECT {ITEM_COLUMNS} FROM {ITEM_FROM} WHERE i.tenant_id = $1 AND i.id = $3"
    ))
    .bind(tenant.as_str())
    .bind(user_id)
    .bind(item_id)
    .fetch_all(&db.pool)
    .await?;
    Ok(with_cves(db, tenant, rows).await?.pop())
}

async fn with_cves(
    db: &Db,
    tenant: &TenantId,
    rows: Vec<sqlx::any::AnyRow>,
) -> sqlx::Result<Vec<ItemView>> {
    let ids: Vec<String> = rows
        .iter()
        .map(|r| r.try_get::<String, _>("id"))
        .collect::<sqlx::Result<_>>()?;
    let mut cves: std::collections::HashMap<String, Vec<String>> = Default::default();
    if !ids.is_empty() {
        let pairs: Vec<(String, String)> = sqlx::query_as(&format!(
            "SELECT item_id, cve_id FROM news_item_cves WHERE tenant_id = $1 \
             AND item_id IN ({}) ORDER BY item_id, cve_id",
            cairn_core::db::json_text_values(db.backend, 2)
        ))
        .bind(tenant.as_str())
        .bind(serde_json::to_string(&ids).unwrap_or_default())
        .fetch_all(&db.pool)
        .await?;
        for (item, cve) in pairs {
            cves.entry(item).or_default().push(cve);
        }
    }
    fn list<T: serde::de::DeserializeOwned>(
        r: &sqlx::any::AnyRow,
        column: &str,
    ) -> sqlx::Result<Vec<T>> {
        cairn_core::db::stored_json(column, &r.try_get::<String, _>(column)?)
    }
    rows.into_iter()
        .map(|r| {
            let id: String = r.try_get("id")?;
            Ok(ItemView {
                cve_ids: cves.remove(&id).unwrap_or_default(),
                id,
                feed_id: r.try_get("feed_id")?,
                feed_title: r.try_get("feed_title")?,
                title: r.try_get("title")?,
                link: r.try_get("link")?,
                summary: r.try_get("summary")?,
                published_at: r.try_get::<Option<i64>, _>("published_at")?.map(to_rfc3339),
                fetched_at: to_rfc3339(r.try_get("fetched_at")?),
                category: r.try_get("category")?,
                severity: r.try_get("severity")?,
                vendors: list(&r, "vendors")?,
                products: list(&r, "products")?,
                relevance: list(&r, "relevance")?,
                relevant: r.try_get::<i64, _>("relevant")? != 0,
                classified_by: r.try_get("classified_by")?,
                classifier_note: r.try_get("classifier_note")?,
                classified_at: r
                    .try_get::<Option<i64>, _>("classified_at")?
                    .map(to_rfc3339),
                read: r.try_get::<i64, _>("is_read")? != 0,
                assigned_to: r.try_get("assigned_to")?,
                assigned_at: r.try_get::<Option<i64>, _>("assigned_at")?.map(to_rfc3339),
            })
        })
        .collect()
}

/// Marks an item read (or unread) for `user_id`; false when the tenant
/// has no such item.
pub async fn mark_read(
    db: &Db,
    tenant: &TenantId,
    user_id: &str,
    item_id: &str,
    read: bool,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let exists: Option<String> =
        sqlx::query_scalar("SELECT id FROM news_items WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(item_id)
            .fetch_optional(&mut *tx)
            .await?;
    if exists.is_none() {
        return Ok(false);
    }
    if read {
        sqlx::query(
            "INSERT INTO news_item_reads (tenant_id, item_id, user_id, read_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (item_id, user_id) DO NOTHING",
        )
        .bind(tenant.as_str())
        .bind(item_id)
        .bind(user_id)
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
    } else {
        sqlx::query(
            "DELETE FROM news_item_reads WHERE tenant_id = $1 AND item_id = $2 AND user_id = $3",
        )
        .bind(tenant.as_str())
        .bind(item_id)
        .bind(user_id)
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// Assigns an item to `member` (a user of the tenant, checked by the
/// caller) or clears it; false when the tenant has no such item.
pub async fn assign(
    db: &Db,
    tenant: &TenantId,
    item_id: &str,
    member: Option<&str>,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let updated = sqlx::query(
        "UPDATE news_items SET assigned_to = $3, assigned_at = $4 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(item_id)
    .bind(member)
    .bind(member.map(|_| now_ms()))
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(updated == 1)
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ItemStats {
    pub total: i64,
    /// Items the caller has not read.
    pub unread: i64,
    /// Items naming the tenant's software or CVEs it has findings of.
    pub relevant: i64,
    pub unclassified: i64,
    /// Items assigned to the caller.
    pub assigned_to_me: i64,
    /// Items per category (classified items only).
    pub by_category: std::collections::BTreeMap<String, i64>,
    pub by_severity: std::collections::BTreeMap<String, i64>,
}

pub async fn stats(db: &Db, tenant: &TenantId, user_id: &str) -> sqlx::Result<ItemStats> {
    let totals = sqlx::query(
        // PostgreSQL sums BIGINTs as NUMERIC; counting keeps them BIGINT.
        "SELECT COUNT(*) AS total, COUNT(*) - COUNT(r.user_id) AS unread, \
         COUNT(CASE WHEN i.relevant = 1 THEN 1 END) AS relevant, \
         COUNT(CASE WHEN i.classified_at IS NULL THEN 1 END) AS unclassified, \
         COUNT(CASE WHEN i.assigned_to = $2 THEN 1 END) AS assigned_to_me \
         FROM news_items i LEFT JOIN news_item_reads r ON r.item_id = i.id AND r.user_id = $2 \
         WHERE i.tenant_id = $1",
    )
    .bind(tenant.as_str())
    .bind(user_id)
    .fetch_one(&db.pool)
    .await?;
    let grouped = |column: &'static str| async move {
        let rows: Vec<(String, i64)> = sqlx::query_as(&format!(
            "SELECT {column}, COUNT(*) FROM news_items WHERE tenant_id = $1 \
             AND {column} IS NOT NULL GROUP BY {column}"
        ))
        .bind(tenant.as_str())
        .fetch_all(&db.pool)
        .await?;
        Ok::<_, sqlx::Error>(
            rows.into_iter()
                .collect::<std::collections::BTreeMap<_, _>>(),
        )
    };
    Ok(ItemStats {
        total: totals.try_get("total")?,
        unread: totals.try_get("unread")?,
        relevant: totals.try_get("relevant")?,
        unclassified: totals.try_get("unclassified")?,
        assigned_to_me: totals.try_get("assigned_to_me")?,
        by_category: grouped("category").await?,
        by_severity: grouped("severity").await?,
    })
}

/// Tenants with at least one feed, for the schedule.
pub async fn tenants_with_feeds(db: &Db) -> sqlx::Result<Vec<TenantId>> {
    let ids: Vec<String> = sqlx::query_scalar("SELECT DISTINCT tenant_id FROM news_feeds")
        .fetch_all(&db.pool)
        .await?;
    Ok(ids.into_iter().map(TenantId).collect())
}
