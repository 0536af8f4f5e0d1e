//! What a sync run has seen, and the prune of what it has not.
//!
//! A page's upsert leaves a row whose content did not change as it is: no
//! new row version, no index or change-queue work, its `updated_at` still
//! the time it last changed. Its `seen_run` therefore names the run that
//! last changed it, not the last run that saw it, and cannot say on its own
//! what a run missed. Each page's transaction also stores the hashes of the
//! keys the page saw (`sync_seen`); after a complete run, the rows whose key
//! hash no page of the run stored are deleted. A run resumed after an
//! interruption finds the pages it wrote before in the table.
//!
//! For the same reason a row's `updated_at` is when it last changed, not
//! when it was last reported. A complete run records its end
//! (`sync_completions`): every row the source still holds was reported by
//! then, and readers that need "last reported" (an asset's last_seen, the
//! freshest value across sources) take the later of the two.

use std::collections::{HashMap, HashSet};

use futures::TryStreamExt;
use sha2::{Digest, Sha256};
use sqlx::{Any, Transaction};

use cairn_core::db::fence::{self, FencedError, WriteFence};
use cairn_core::db::{json_array_rows, now_ms, Db, WriteBatches};
use cairn_core::ids::TenantId;

/// Rows per pruning transaction at most (fewer on SQLite, see
/// [`WriteBatches`]).
pub const PRUNE_BATCH: usize = 5000;

/// A row a prune may delete: its collection (`''` for an item) and key.
#[derive(sqlx_macros::FromRow)]
struct KindAndKey {
    kind: String,
    row_key: String,
}

/// Bytes of one stored key hash.
const HASH_BYTES: usize = 8;

/// Which table a key belongs to, so an item and a record never share a hash
/// by having the same key text.
#[derive(Debug, Clone, Copy)]
pub enum KeyOf {
    Item,
    Record,
}

/// The hash a page stores for a row's key: the first 8 bytes of a SHA-256,
/// the same in every build (a resumed run may be another version of the
/// service). A collision can only keep a row that is gone upstream until a
/// later run; it never deletes a row the run saw.
pub fn key_hash(of: KeyOf, kind: &str, key: &str) -> [u8; HASH_BYTES] {
    let mut hasher = Sha256::new();
    hasher.update(match of {
        KeyOf::Item => b"i\x1f".as_slice(),
        KeyOf::Record => b"r\x1f".as_slice(),
    });
    hasher.update(kind.as_bytes());
    hasher.update(b"\x1f");
    hasher.update(key.as_bytes());
    let digest = hasher.finalize();
    let mut hash = [0u8; HASH_BYTES];
    hash.copy_from_slice(&digest[..HASH_BYTES]);
    hash
}

const RECORD_PAGE: &str = "INSERT INTO sync_seen (tenant_id, source, run, page, hashes) \
     VALUES ($1, $2, $3, $4, $5) \
     ON CONFLICT (tenant_id, source, run, page) DO UPDATE SET hashes = excluded.hashes";

/// [`record_page`] inside a page's transaction on PostgreSQL's own driver
/// (a page written with COPY, `cairn_core::db::Db::copy`).
pub async fn record_page_on_postgres(
    conn: &mut sqlx::PgConnection,
    tenant: &TenantId,
    source: &str,
    run: &str,
    page: i64,
    hashes: &[u8],
) -> sqlx::Result<()> {
    sqlx::query(RECORD_PAGE)
        .bind(tenant.as_str())
        .bind(source)
        .bind(run)
        .bind(page)
        .bind(hashes)
        .execute(conn)
        .await?;
    Ok(())
}

/// Stores what page `page` of `run` saw, inside the page's transaction. A
/// page written again (a resumed run) replaces its earlier hashes.
pub async fn record_page(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    source: &str,
    run: &str,
    page: i64,
    hashes: &[u8],
) -> sqlx::Result<()> {
    sqlx::query(RECORD_PAGE)
        .bind(tenant.as_str())
        .bind(source)
        .bind(run)
        .bind(page)
        .bind(hashes)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

/// Everything `run` saw of `source`.
async fn seen_by(
    db: &Db,
    tenant: &TenantId,
    source: &str,
    run: &str,
) -> sqlx::Result<HashSet<[u8; HASH_BYTES]>> {
    let pages: Vec<Vec<u8>> = sqlx::query_scalar(
        "SELECT hashes FROM sync_seen WHERE tenant_id = $1 AND source = $2 AND run = $3",
    )
    .bind(tenant.as_str())
    .bind(source)
    .bind(run)
    .fetch_all(&db.pool)
    .await?;
    let mut seen = HashSet::with_capacity(pages.iter().map(|p| p.len() / HASH_BYTES).sum());
    for page in &pages {
        for hash in page.chunks_exact(HASH_BYTES) {
            let mut key = [0u8; HASH_BYTES];
            key.copy_from_slice(hash);
            seen.insert(key);
        }
    }
    Ok(seen)
}

/// After a complete run: deletes the source's rows the run did not see
/// (devices gone upstream or out of scope) in transactions of at most
/// [`PRUNE_BATCH`] rows, then records the run's completion and forgets the
/// pages of this run and of any earlier run that never completed. Returns
/// (items, records) deleted.
pub async fn prune_unseen(
    db: &Db,
    fence: &dyn WriteFence,
    tenant: &TenantId,
    source: &str,
    run: &str,
) -> Result<(u64, u64), FencedError> {
    prune_unseen_keeping(db, fence, tenant, source, run, &[]).await
}

/// [`prune_unseen`], keeping every record of the collections `kept` (what
/// a bulk pull stored: a sync never sees it).
pub async fn prune_unseen_keeping(
    db: &Db,
    fence: &dyn WriteFence,
    tenant: &TenantId,
    source: &str,
    run: &str,
    kept: &[String],
) -> Result<(u64, u64), FencedError> {
    let seen = seen_by(db, tenant, source, run).await?;
    let keys = json_array_rows(db.backend, 4);
    // Each table's rows as (kind, key) pairs: items have no kind. A row this
    // run changed carries its stamp and was seen; the rest are checked
    // against the pages' hashes. The delete checks the stamp again: a row
    // changed since it was read was seen.
    let tables = [
        (
            KeyOf::Item,
            "SELECT '' AS kind, item_key AS row_key FROM inventory_items \
             WHERE tenant_id = $1 AND source = $2 AND seen_run <> $3",
            format!(
                "DELETE FROM inventory_items WHERE tenant_id = $1 AND source = $2 \
                 AND seen_run <> $3 AND item_key IN (SELECT value->>1 FROM {keys})"
            ),
        ),
        (
            KeyOf::Record,
            "SELECT kind, record_key AS row_key FROM source_records \
             WHERE tenant_id = $1 AND source = $2 AND seen_run <> $3",
            format!(
                "DELETE FROM source_records WHERE tenant_id = $1 AND source = $2 \
                 AND seen_run <> $3 AND (kind, record_key) IN \
                 (SELECT value->>0, value->>1 FROM {keys})"
            ),
        ),
    ];
    let mut deleted = [0u64; 2];
    let mut sizes = WriteBatches::new(db.backend, 200, PRUNE_BATCH);
    for (i, (of, candidates, delete)) in tables.iter().enumerate() {
        let mut unseen: Vec<serde_json::Value> = vec![];
        let mut rows = sqlx::query_as::<_, KindAndKey>(candidates)
            .bind(tenant.as_str())
            .bind(source)
            .bind(run)
            .fetch(&db.pool);
        while let Some(row) = rows.try_next().await? {
            let KindAndKey { kind, row_key: key } = row;
            if kept.contains(&kind) {
                continue;
            }
            if !seen.contains(&key_hash(*of, &kind, &key)) {
                unseen.push(serde_json::json!([kind, key]));
            }
        }
        drop(rows);
        let mut rest = unseen.as_slice();
        while !rest.is_empty() {
            let (batch, after) = rest.split_at(sizes.rows().min(rest.len()));
            rest = after;
            let _turn = db.write_turn().await;
            let started = std::time::Instant::now();
            let mut tx = db.pool.begin().await?;
            fence::hold(fence, &mut tx).await?;
            deleted[i] += sqlx::query(delete)
                .bind(tenant.as_str())
                .bind(source)
                .bind(run)
                .bind(serde_json::Value::Array(batch.to_vec()).to_string())
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            sizes.record(batch.len(), started.elapsed());
        }
    }
    complete(db, fence, tenant, source).await?;
    Ok((deleted[0], deleted[1]))
}

/// Deletes what `run` saw of `source`: a bulk pull's pages, which no prune
/// reads.
pub async fn forget_run(
    db: &Db,
    fence: &dyn WriteFence,
    tenant: &TenantId,
    source: &str,
    run: &str,
) -> Result<(), FencedError> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    fence::hold(fence, &mut tx).await?;
    sqlx::query("DELETE FROM sync_seen WHERE tenant_id = $1 AND source = $2 AND run = $3")
        .bind(tenant.as_str())
        .bind(source)
        .bind(run)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// Records that `source` completed a run now and deletes its stored pages.
async fn complete(
    db: &Db,
    fence: &dyn WriteFence,
    tenant: &TenantId,
    source: &str,
) -> Result<(), FencedError> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    fence::hold(fence, &mut tx).await?;
    sqlx::query(
        "INSERT INTO sync_completions (tenant_id, source, completed_at) VALUES ($1, $2, $3) \
         ON CONFLICT (tenant_id, source) DO UPDATE SET completed_at = excluded.completed_at",
    )
    .bind(tenant.as_str())
    .bind(source)
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    sqlx::query("DELETE FROM sync_seen WHERE tenant_id = $1 AND source = $2")
        .bind(tenant.as_str())
        .bind(source)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(())
}

/// Forgets what the syncs of `source` saw and when they last completed,
/// inside `tx` (the source's rows are being removed with it).
pub async fn delete_source(
    tx: &mut Transaction<'_, Any>,
    tenant: &TenantId,
    source: &str,
) -> sqlx::Result<()> {
    for statement in [
        "DELETE FROM sync_seen WHERE tenant_id = $1 AND source = $2",
        "DELETE FROM sync_completions WHERE tenant_id = $1 AND source = $2",
    ] {
        sqlx::query(statement)
            .bind(tenant.as_str())
            .bind(source)
            .execute(&mut **tx)
            .await?;
    }
    Ok(())
}

/// When each of the tenant's synced sources last completed a run (epoch
/// ms): every row such a source holds was reported then at the latest.
pub async fn completed_runs(db: &Db, tenant: &TenantId) -> sqlx::Result<HashMap<String, i64>> {
    let rows: Vec<(String, i64)> =
        sqlx::query_as("SELECT source, completed_at FROM sync_completions WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_all(&db.pool)
            .await?;
    Ok(rows.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_hashes_are_fixed_and_keep_items_and_records_apart() {
        // Fixed across builds: a run resumed by another version must find
        // the pages it wrote.
        assert_eq!(
            key_hash(KeyOf::Item, "", "ws-01\u{1f}7-zip\u{1f}23.01"),
            [92, 17, 221, 67, 153, 234, 120, 18]
        );
        assert_ne!(
            key_hash(KeyOf::Item, "", "d1"),
            key_hash(KeyOf::Record, "", "d1")
        );
        assert_ne!(
            key_hash(KeyOf::Record, "devices", "d1"),
            key_hash(KeyOf::Record, "agents", "d1")
        );
    }
}
