//! The SLA area's tables: `sla_policies` and `sla_policy_changes`.

use serde::Serialize;
use utoipa::ToSchema;

use super::policy::Policy;
use cairn_core::db::{Db, StoredJson};
use cairn_core::ids::TenantId;

/// Which findings a stored policy covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every tenant the owner answers for: itself, and a partner's
    /// customers that no narrower policy covers.
    Default,
    /// The customers in a partner's group.
    Group(String),
    /// One customer of a partner.
    Customer(String),
}

impl Scope {
    /// The words [`Scope::parts`] names a stored policy's scope with.
    pub const NAMES: [&'static str; 3] = ["default", "group", "customer"];
    /// The scope of the policy that applies to a finding: a stored one's,
    /// or the service's own when none is stored.
    pub const SOURCES: [&'static str; 4] = ["default", "group", "customer", "built_in"];

    pub fn parts(&self) -> (&'static str, &str) {
        match self {
            Scope::Default => ("default", ""),
            Scope::Group(id) => ("group", id),
            Scope::Customer(id) => ("customer", id),
        }
    }
}

/// A stored policy and where it applies.
#[derive(Debug, Clone, sqlx_macros::FromRow)]
pub struct PolicyRow {
    pub owner_id: String,
    /// `default`, `group` or `customer`.
    pub scope: String,
    /// The group's or customer's id; empty for a default.
    pub scope_id: String,
    pub rules: StoredJson<Policy>,
    pub updated_by: String,
    pub updated_at: i64,
}

const POLICY_COLUMNS: &str = "owner_id, scope, scope_id, rules, updated_by, updated_at";

/// Every policy `owner` set.
pub async fn policies(db: &Db, owner: &TenantId) -> sqlx::Result<Vec<PolicyRow>> {
    sqlx::query_as(&format!(
        "SELECT {POLICY_COLUMNS} FROM sla_policies WHERE owner_id = $1 ORDER BY scope, scope_id"
    ))
    .bind(owner.as_str())
    .fetch_all(&db.pool)
    .await
}

/// The policy `owner` set for `scope`.
pub async fn policy(db: &Db, owner: &TenantId, scope: &Scope) -> sqlx::Result<Option<PolicyRow>> {
    let (kind, id) = scope.parts();
    sqlx::query_as(&format!(
        "SELECT {POLICY_COLUMNS} FROM sla_policies WHERE owner_id = $1 AND scope = $2 AND scope_id = $3"
    ))
    .bind(owner.as_str())
    .bind(kind)
    .bind(id)
    .fetch_optional(&db.pool)
    .await
}

/// The change of one policy, as recorded.
pub struct Change<'a> {
    pub owner: &'a TenantId,
    pub scope: &'a Scope,
    pub before: Option<&'a Policy>,
    /// `None` removes the policy.
    pub after: Option<&'a Policy>,
    pub by: &'a str,
    pub at: i64,
    /// Open findings whose due date the change moved.
    pub moved: i64,
}

/// Saves (or removes) the policy and records the change, in one
/// transaction.
pub async fn change_policy(db: &Db, change: &Change<'_>) -> sqlx::Result<()> {
    let (kind, id) = change.scope.parts();
    let json =
        |policy: Option<&Policy>| policy.map(|p| serde_json::to_string(p).unwrap_or_default());
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    match change.after {
        Some(policy) => {
            sqlx::query(
                "INSERT INTO sla_policies (owner_id, scope, scope_id, name, rules, updated_by, updated_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (owner_id, scope, scope_id) DO UPDATE SET name = excluded.name, \
                 rules = excluded.rules, updated_by = excluded.updated_by, updated_at = excluded.updated_at",
            )
            .bind(change.owner.as_str())
            .bind(kind)
            .bind(id)
            .bind(&policy.name)
            .bind(json(Some(policy)))
            .bind(change.by)
            .bind(change.at)
            .execute(&mut *tx)
            .await?;
        }
        None => {
            sqlx::query(
                "DELETE FROM sla_policies WHERE owner_id = $1 AND scope = $2 AND scope_id = $3",
            )
            .bind(change.owner.as_str())
            .bind(kind)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        }
    }
    sqlx::query(
        "INSERT INTO sla_policy_changes \
         (id, owner_id, scope, scope_id, changed_by, changed_at, before, after, moved) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(uuid::Uuid::now_v7().to_string())
    .bind(change.owner.as_str())
    .bind(kind)
    .bind(id)
    .bind(change.by)
    .bind(change.at)
    .bind(json(change.before))
    .bind(json(change.after))
    .bind(change.moved)
    .execute(&mut *tx)
    .await?;
    tx.commit().await
}

/// One recorded change of a policy.
#[derive(Debug, Serialize, ToSchema, sqlx_macros::FromRow)]
#[schema(as = SlaPolicyChange)]
pub struct PolicyChange {
    /// `default`, `group` or `customer`.
    pub scope: String,
    /// The group's or customer's id; empty for a default.
    pub scope_id: String,
    /// The e-mail of who changed it.
    pub changed_by: String,
    /// Unix ms.
    pub changed_at: i64,
    /// The policy before; absent when there was none.
    pub before: OptionalPolicy,
    /// The policy after; absent when it was removed.
    pub after: OptionalPolicy,
    /// Open findings whose due date moved.
    pub moved: i64,
}

/// A policy column that may be empty, decoded loudly.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = OptionalSlaPolicy)]
#[serde(transparent)]
pub struct OptionalPolicy(pub Option<Policy>);

impl sqlx::Type<sqlx::Any> for OptionalPolicy {
    fn type_info() -> sqlx::any::AnyTypeInfo {
        <StoredJson<Policy> as sqlx::Type<sqlx::Any>>::type_info()
    }

    fn compatible(ty: &sqlx::any::AnyTypeInfo) -> bool {
        <StoredJson<Policy> as sqlx::Type<sqlx::Any>>::compatible(ty)
    }
}

impl<'r> sqlx::Decode<'r, sqlx::Any> for OptionalPolicy {
    fn decode(value: sqlx::any::AnyValueRef<'r>) -> Result<Self, sqlx::error::BoxDynError> {
        let stored = <Option<StoredJson<Policy>> as sqlx::Decode<sqlx::Any>>::decode(value)?;
        Ok(OptionalPolicy(stored.map(|stored| stored.0)))
    }
}

/// A page of `owner`'s policy changes, newest first, and how many there are.
pub async fn changes(
    db: &Db,
    owner: &TenantId,
    (skip, limit): (i64, i64),
) -> sqlx::Result<(Vec<PolicyChange>, i64)> {
    let rows = sqlx::query_as(
        "SELECT scope, scope_id, changed_by, changed_at, before, after, moved \
         FROM sla_policy_changes WHERE owner_id = $1 ORDER BY changed_at DESC, id DESC \
         LIMIT $2 OFFSET $3",
    )
    .bind(owner.as_str())
    .bind(limit)
    .bind(skip)
    .fetch_all(&db.pool)
    .await?;
    let total = sqlx::query_scalar("SELECT COUNT(*) FROM sla_policy_changes WHERE owner_id = $1")
        .bind(owner.as_str())
        .fetch_one(&db.pool)
        .await?;
    Ok((rows, total))
}

/// Policy changes ever recorded, by anyone: every change of a policy
/// adds one, so a figure computed under the same count saw the same
/// policies.
pub async fn policy_changes_count(db: &Db) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT COUNT(*) FROM sla_policy_changes")
        .fetch_one(&db.pool)
        .await
}

pub use cairn_inventory::tiers::device_key;
