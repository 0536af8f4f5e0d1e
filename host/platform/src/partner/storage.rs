//! Partner rows: customers (tenants with this partner), groups, analysts'
//! access, the audit trail and branding. Every query names the partner.

use std::collections::HashSet;

use sqlx::Row;

use cairn_core::db::{json_text_values, now_ms, stored_json, Db};
use cairn_core::ids::TenantId;

/// A customer tenant as its partner sees it.
#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct CustomerRow {
    pub id: String,
    pub name: String,
    pub timezone: String,
    pub created_at: i64,
    /// The customer's own users.
    pub member_count: i64,
}

const CUSTOMER_COLUMNS: &str = "t.id, t.name, t.timezone, t.created_at, \
     (SELECT COUNT(*) FROM users u WHERE u.tenant_id = t.id) AS member_count";

/// Where a tenant stands: its own partner (when it is a customer) and
/// whether it is a partner.
pub async fn standing(db: &Db, tenant: &TenantId) -> sqlx::Result<Option<(Option<String>, bool)>> {
    let row = sqlx::query("SELECT partner_id, is_partner FROM tenants WHERE id = $1")
        .bind(tenant.as_str())
        .fetch_optional(&db.pool)
        .await?;
    row.map(|r| {
        let is_partner: i64 = r.try_get("is_partner")?;
        Ok((r.try_get("partner_id")?, is_partner != 0))
    })
    .transpose()
}

/// The partner of `customer`, if it has one.
pub async fn partner_of(db: &Db, customer: &str) -> sqlx::Result<Option<TenantId>> {
    let partner: Option<Option<String>> =
        sqlx::query_scalar("SELECT partner_id FROM tenants WHERE id = $1")
            .bind(customer)
            .fetch_optional(&db.pool)
            .await?;
    Ok(partner.flatten().map(TenantId))
}

/// Creates a customer tenant of `partner` and marks `partner` as one.
pub async fn create_customer(
    db: &Db,
    partner: &TenantId,
    name: &str,
    timezone: &str,
) -> sqlx::Result<CustomerRow> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let id = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    sqlx::query(
        "INSERT INTO tenants (id, name, timezone, partner_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $5)",
    )
    .bind(&id)
    .bind(name)
    .bind(timezone)
    .bind(partner.as_str())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    sqlx::query("UPDATE tenants SET is_partner = 1 WHERE id = $1")
        .bind(partner.as_str())
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(CustomerRow {
        id,
        name: name.to_string(),
        timezone: timezone.to_string(),
        created_at: now,
        member_count: 0,
    })
}

/// Every customer of `partner`, by name.
pub async fn customers(db: &Db, partner: &TenantId) -> sqlx::Result<Vec<CustomerRow>> {
    sqlx::query_as(&format!(
        "SELECT {CUSTOMER_COLUMNS} FROM tenants t WHERE t.partner_id = $1 ORDER BY t.name, t.id"
    ))
    .bind(partner.as_str())
    .fetch_all(&db.pool)
    .await
}

pub async fn customer(db: &Db, partner: &TenantId, id: &str) -> sqlx::Result<Option<CustomerRow>> {
    sqlx::query_as(&format!(
        "SELECT {CUSTOMER_COLUMNS} FROM tenants t WHERE t.partner_id = $1 AND t.id = $2"
    ))
    .bind(partner.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await
}

pub async fn rename_customer(
    db: &Db,
    partner: &TenantId,
    id: &str,
    name: Option<&str>,
    timezone: Option<&str>,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let done = sqlx::query(
        "UPDATE tenants SET name = COALESCE($1, name), timezone = COALESCE($2, timezone), \
         updated_at = $3 WHERE partner_id = $4 AND id = $5",
    )
    .bind(name)
    .bind(timezone)
    .bind(now_ms())
    .bind(partner.as_str())
    .bind(id)
    .execute(&db.pool)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Takes `id` from `partner`: the tenant and its data stay with the
/// customer's own users; the partner's groups lose it and every session
/// acting in it is revoked, in one transaction. False if it was not the
/// partner's.
pub async fn remove_customer(db: &Db, partner: &TenantId, id: &str) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let now = now_ms();
    let done = sqlx::query(
        "UPDATE tenants SET partner_id = NULL, updated_at = $1 WHERE partner_id = $2 AND id = $3",
    )
    .bind(now)
    .bind(partner.as_str())
    .bind(id)
    .execute(&mut *tx)
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    sqlx::query(
        "DELETE FROM partner_group_members WHERE customer_id = $1 \
         AND group_id IN (SELECT g.id FROM partner_groups g WHERE g.partner_id = $2)",
    )
    .bind(id)
    .bind(partner.as_str())
    .execute(&mut *tx)
    .await?;
    sqlx::query(
        "UPDATE sessions SET revoked_at = $1 WHERE acting_tenant_id = $2 AND revoked_at IS NULL",
    )
    .bind(now)
    .bind(id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(true)
}

/// A group of a partner's customers.
#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct GroupRow {
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

pub async fn groups(db: &Db, partner: &TenantId) -> sqlx::Result<Vec<GroupRow>> {
    sqlx::query_as(
        "SELECT id, name, description, created_at, updated_at FROM partner_groups \
         WHERE partner_id = $1 ORDER BY name, id",
    )
    .bind(partner.as_str())
    .fetch_all(&db.pool)
    .await
}

pub async fn group(db: &Db, partner: &TenantId, id: &str) -> sqlx::Result<Option<GroupRow>> {
    sqlx::query_as(
        "SELECT id, name, description, created_at, updated_at FROM partner_groups \
         WHERE partner_id = $1 AND id = $2",
    )
    .bind(partner.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await
}

/// (group id, customer id) of every group of `partner`.
pub async fn group_members(db: &Db, partner: &TenantId) -> sqlx::Result<Vec<(String, String)>> {
    sqlx::query_as(
        "SELECT m.group_id, m.customer_id FROM partner_group_members m \
         JOIN partner_groups g ON g.id = m.group_id WHERE g.partner_id = $1 \
         ORDER BY m.group_id, m.customer_id",
    )
    .bind(partner.as_str())
    .fetch_all(&db.pool)
    .await
}

/// What a group is saved with; `None` keeps the stored value.
pub struct GroupChanges<'a> {
    pub name: Option<&'a str>,
    pub description: Option<Option<&'a str>>,
    pub customer_ids: Option<&'a [String]>,
}

/// Creates a group (`id` `None`) or changes one; a taken name surfaces as
/// a unique violation. False when `id` is not the partner's group.
pub async fn save_group(
    db: &Db,
    partner: &TenantId,
    id: &str,
    create: bool,
    changes: GroupChanges<'_>,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let now = now_ms();
    if create {
        sqlx::query(
            "INSERT INTO partner_groups (id, partner_id, name, description, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $5)",
        )
        .bind(id)
        .bind(partner.as_str())
        .bind(changes.name.unwrap_or_default())
        .bind(changes.description.flatten())
        .bind(now)
        .execute(&mut *tx)
        .await?;
    } else {
        let (given, description) = match changes.description {
            Some(d) => (1i64, d),
            None => (0, None),
        };
        let done = sqlx::query(
            "UPDATE partner_groups SET name = COALESCE($1, name), \
             description = CASE WHEN $2 = 1 THEN $3 ELSE description END, updated_at = $4 \
             WHERE partner_id = $5 AND id = $6",
        )
        .bind(changes.name)
        .bind(given)
        .bind(description)
        .bind(now)
        .bind(partner.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Ok(false);
        }
    }
    if let Some(customers) = changes.customer_ids {
        sqlx::query("DELETE FROM partner_group_members WHERE group_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        // Only the partner's own customers join: the ids were checked, and
        // the join keeps that true inside the transaction.
        sqlx::query(&format!(
            "INSERT INTO partner_group_members (group_id, customer_id) \
             SELECT $1, t.id FROM tenants t WHERE t.partner_id = $2 AND t.id IN ({})",
            json_text_values(db.backend, 3)
        ))
        .bind(id)
        .bind(partner.as_str())
        .bind(serde_json::to_string(customers).unwrap_or_default())
        .execute(&mut *tx)
        .await?;
    }
    tx.commit().await?;
    Ok(true)
}

pub async fn delete_group(db: &Db, partner: &TenantId, id: &str) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    sqlx::query(
        "DELETE FROM partner_group_members WHERE group_id IN \
         (SELECT id FROM partner_groups WHERE partner_id = $1 AND id = $2)",
    )
    .bind(partner.as_str())
    .bind(id)
    .execute(&mut *tx)
    .await?;
    let done = sqlx::query("DELETE FROM partner_groups WHERE partner_id = $1 AND id = $2")
        .bind(partner.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(done.rows_affected() == 1)
}

/// What an analyst is assigned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnalystAccess {
    pub all_customers: bool,
    pub customer_ids: Vec<String>,
    pub group_ids: Vec<String>,
}

pub async fn analyst_access(
    db: &Db,
    partner: &TenantId,
    user_id: &str,
) -> sqlx::Result<AnalystAccess> {
    let row = sqlx::query(
        "SELECT all_customers, customer_ids, group_ids FROM partner_analyst_scopes \
         WHERE partner_id = $1 AND user_id = $2",
    )
    .bind(partner.as_str())
    .bind(user_id)
    .fetch_optional(&db.pool)
    .await?;
    let Some(row) = row else {
        return Ok(AnalystAccess::default());
    };
    let all: i64 = row.try_get("all_customers")?;
    Ok(AnalystAccess {
        all_customers: all != 0,
        customer_ids: stored_json("customer_ids", row.try_get("customer_ids")?)?,
        group_ids: stored_json("group_ids", row.try_get("group_ids")?)?,
    })
}

pub async fn set_analyst_access(
    db: &Db,
    partner: &TenantId,
    user_id: &str,
    access: &AnalystAccess,
) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO partner_analyst_scopes \
         (user_id, partner_id, all_customers, customer_ids, group_ids, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (user_id) DO UPDATE SET all_customers = excluded.all_customers, \
         customer_ids = excluded.customer_ids, group_ids = excluded.group_ids, \
         updated_at = excluded.updated_at",
    )
    .bind(user_id)
    .bind(partner.as_str())
    .bind(i64::from(access.all_customers))
    .bind(serde_json::to_string(&access.customer_ids).unwrap_or_default())
    .bind(serde_json::to_string(&access.group_ids).unwrap_or_default())
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// The customers an analyst's access reaches: its listed customers and
/// the current members of its listed groups, still the partner's.
pub async fn reached_customers(
    db: &Db,
    partner: &TenantId,
    access: &AnalystAccess,
) -> sqlx::Result<HashSet<String>> {
    let current: HashSet<String> = customers(db, partner)
        .await?
        .into_iter()
        .map(|c| c.id)
        .collect();
    let mut reached: HashSet<String> = access
        .customer_ids
        .iter()
        .filter(|id| current.contains(*id))
        .cloned()
        .collect();
    if !access.group_ids.is_empty() {
        for (group, customer) in group_members(db, partner).await? {
            if access.group_ids.contains(&group) && current.contains(&customer) {
                reached.insert(customer);
            }
        }
    }
    Ok(reached)
}

/// Whether `customer` is `partner`'s and in one of `groups`.
pub async fn in_groups(
    db: &Db,
    partner: &TenantId,
    customer: &str,
    groups: &[String],
) -> sqlx::Result<bool> {
    if groups.is_empty() {
        return Ok(false);
    }
    let found: Option<i64> = sqlx::query_scalar(&format!(
        "SELECT 1 FROM partner_group_members m JOIN partner_groups g ON g.id = m.group_id \
         WHERE g.partner_id = $1 AND m.customer_id = $2 AND m.group_id IN ({}) LIMIT 1",
        json_text_values(db.backend, 3)
    ))
    .bind(partner.as_str())
    .bind(customer)
    .bind(serde_json::to_string(groups).unwrap_or_default())
    .fetch_optional(&db.pool)
    .await?;
    Ok(found.is_some())
}

/// One write recorded in the partner's audit trail.
#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct AuditRow {
    pub id: String,
    pub customer_id: Option<String>,
    pub user_id: String,
    pub user_email: String,
    pub method: String,
    pub path: String,
    pub status: i64,
    pub at: i64,
}

pub async fn record_audit(db: &Db, partner: &TenantId, row: &AuditRow) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO partner_audit (id, partner_id, customer_id, user_id, user_email, method, path, status, at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(&row.id)
    .bind(partner.as_str())
    .bind(&row.customer_id)
    .bind(&row.user_id)
    .bind(&row.user_email)
    .bind(&row.method)
    .bind(&row.path)
    .bind(row.status)
    .bind(row.at)
    .execute(&db.pool)
    .await?;
    Ok(())
}

/// Which audit rows of a partner to read: narrowed to `customers` when
/// given (an analyst's reach), to one user, and to rows older than the id
/// `before` (the deprecated cursor).
pub struct AuditFilter<'a> {
    pub customers: Option<&'a [String]>,
    pub user_id: Option<&'a str>,
    pub before: Option<&'a str>,
}

/// A page of the newest audit rows of `partner` the filter keeps, at
/// (`skip`, `limit`), and how many it keeps in all.
pub async fn audit(
    db: &Db,
    partner: &TenantId,
    filter: &AuditFilter<'_>,
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<AuditRow>, i64)> {
    let customers_json = filter
        .customers
        .map(|c| serde_json::to_string(c).unwrap_or_default());
    let kept = format!(
        "FROM partner_audit WHERE partner_id = $1 AND ($2 IS NULL OR customer_id IN ({})) \
         AND ($3 IS NULL OR user_id = $3) AND ($4 IS NULL OR id < $4)",
        json_text_values(db.backend, 2)
    );
    let rows = sqlx::query_as(&format!(
        "SELECT id, customer_id, user_id, user_email, method, path, status, at {kept} \
         ORDER BY id DESC LIMIT $5 OFFSET $6"
    ))
    .bind(partner.as_str())
    .bind(&customers_json)
    .bind(filter.user_id)
    .bind(filter.before)
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total: i64 = sqlx::query_scalar(&format!("SELECT COUNT(*) {kept}"))
        .bind(partner.as_str())
        .bind(&customers_json)
        .bind(filter.user_id)
        .bind(filter.before)
        .fetch_one(&db.pool)
        .await?;
    Ok((rows, total))
}

/// The partner's name, logo and colours on its reports.
#[derive(Debug, Clone, Default, sqlx_macros::FromRow)]
pub struct BrandingRow {
    pub display_name: Option<String>,
    /// A PNG as base64.
    pub logo_png: Option<String>,
    pub primary_color: Option<String>,
    pub accent_color: Option<String>,
    pub updated_at: i64,
}

pub async fn branding(db: &Db, partner: &TenantId) -> sqlx::Result<Option<BrandingRow>> {
    sqlx::query_as(
        "SELECT display_name, logo_png, primary_color, accent_color, updated_at \
         FROM partner_branding WHERE partner_id = $1",
    )
    .bind(partner.as_str())
    .fetch_optional(&db.pool)
    .await
}

pub async fn set_branding(db: &Db, partner: &TenantId, branding: &BrandingRow) -> sqlx::Result<()> {
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO partner_branding (partner_id, display_name, logo_png, primary_color, accent_color, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (partner_id) DO UPDATE SET display_name = excluded.display_name, \
         logo_png = excluded.logo_png, primary_color = excluded.primary_color, \
         accent_color = excluded.accent_color, updated_at = excluded.updated_at",
    )
    .bind(partner.as_str())
    .bind(&branding.display_name)
    .bind(&branding.logo_png)
    .bind(&branding.primary_color)
    .bind(&branding.accent_color)
    .bind(now_ms())
    .execute(&db.pool)
    .await?;
    Ok(())
}
