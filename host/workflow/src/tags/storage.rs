//! `tags` and `tag_assignments`: every statement takes the tenant.

use std::collections::BTreeMap;

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, to_rfc3339, Db, NamedUpdate};
use cairn_core::ids::TenantId;

/// What a tag can be assigned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum EntityType {
    Cve,
    Vendor,
    Product,
}

impl EntityType {
    pub fn as_str(self) -> &'static str {
        match self {
            EntityType::Cve => "cve",
            EntityType::Vendor => "vendor",
            EntityType::Product => "product",
        }
    }

    pub fn parse(text: &str) -> Option<EntityType> {
        match text {
            "cve" => Some(EntityType::Cve),
            "vendor" => Some(EntityType::Vendor),
            "product" => Some(EntityType::Product),
            _ => None,
        }
    }
}

/// An entity named by a person, with the key it is compared by: a CVE id
/// upper-cased, a vendor or product name lowered (Unicode) with its runs
/// of spaces made one.
#[derive(Debug, Clone)]
pub struct Entity {
    pub kind: EntityType,
    pub name: String,
    pub key: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TagView {
    pub id: String,
    pub name: String,
    /// `#rrggbb`.
    pub color: String,
    pub description: String,
    /// Assignments of the tag, of every entity type.
    pub assignment_count: i64,
    pub created_at: String,
    pub updated_at: String,
}

const TAG_COLUMNS: &str = "t.id, t.name, t.color, t.description, \
    (SELECT COUNT(*) FROM tag_assignments a WHERE a.tag_id = t.id) AS assignment_count, \
    t.created_at, t.updated_at";

fn tag_view(r: sqlx::any::AnyRow) -> sqlx::Result<TagView> {
    Ok(TagView {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        color: r.try_get("color")?,
        description: r.try_get("description")?,
        assignment_count: r.try_get("assignment_count")?,
        created_at: to_rfc3339(r.try_get("created_at")?),
        updated_at: to_rfc3339(r.try_get("updated_at")?),
    })
}

pub async fn tags(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<TagView>> {
    let rows = sqlx::query(&format!(
        "SELECT {TAG_COLUMNS} FROM tags t WHERE t.tenant_id = $1 ORDER BY t.name_key, t.id"
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter().map(tag_view).collect()
}

pub async fn tag(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<Option<TagView>> {
    let row = sqlx::query(&format!(
        "SELECT {TAG_COLUMNS} FROM tags t WHERE t.tenant_id = $1 AND t.id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(tag_view).transpose()
}

/// A tag's fields as stored.
pub struct TagFields<'a> {
    pub name: &'a str,
    pub color: &'a str,
    pub description: &'a str,
}

/// Creates a tag; `None` when the tenant has one of that name.
pub async fn create(
    db: &Db,
    tenant: &TenantId,
    fields: &TagFields<'_>,
) -> sqlx::Result<Option<String>> {
    let id = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    let _turn = db.write_turn().await;
    let inserted = sqlx::query(
        "INSERT INTO tags (id, tenant_id, name, name_key, color, description, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (tenant_id, name_key) DO NOTHING",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(fields.name)
    .bind(cairn_core::db::lower(fields.name))
    .bind(fields.color)
    .bind(fields.description)
    .bind(now)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok((inserted == 1).then_some(id))
}

pub async fn update(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    fields: &TagFields<'_>,
) -> sqlx::Result<NamedUpdate> {
    let _turn = db.write_turn().await;
    let result = sqlx::query(
        "UPDATE tags SET name = $3, name_key = $4, color = $5, description = $6, updated_at = $7 \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(fields.name)
    .bind(cairn_core::db::lower(fields.name))
    .bind(fields.color)
    .bind(fields.description)
    .bind(now_ms())
    .execute(&db.pool)
    .await;
    NamedUpdate::of(result)
}

/// Deletes a tag and its assignments (in one statement: they cascade).
pub async fn delete(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<bool> {
    cairn_core::db::delete_tenant_row(db, "tags", tenant, id).await
}

/// Assigns the tenant's tag `tag_id` to `entity`: `None` when the tag is
/// not the tenant's, else whether the assignment is new.
pub async fn assign(
    db: &Db,
    tenant: &TenantId,
    tag_id: &str,
    entity: &Entity,
    by: &str,
) -> sqlx::Result<Option<bool>> {
    let _turn = db.write_turn().await;
    // The tenant's tag is checked in the statement itself.
    let inserted = sqlx::query(
        "INSERT INTO tag_assignments (tag_id, tenant_id, entity_type, entity_name, entity_key, created_by, created_at) \
         SELECT id, tenant_id, $3, $4, $5, $6, $7 FROM tags WHERE tenant_id = $1 AND id = $2 \
         ON CONFLICT (tag_id, entity_type, entity_key) DO NOTHING",
    )
    .bind(tenant.as_str())
    .bind(tag_id)
    .bind(entity.kind.as_str())
    .bind(&entity.name)
    .bind(&entity.key)
    .bind(by)
    .bind(now_ms())
    .execute(&db.pool)
    .await?
    .rows_affected();
    if inserted == 1 {
        return Ok(Some(true));
    }
    let exists: Option<String> =
        sqlx::query_scalar("SELECT id FROM tags WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(tag_id)
            .fetch_optional(&db.pool)
            .await?;
    Ok(exists.map(|_| false))
}

/// Removes the tag from `entity`; whether it was assigned.
pub async fn unassign(
    db: &Db,
    tenant: &TenantId,
    tag_id: &str,
    entity: &Entity,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let deleted = sqlx::query(
        "DELETE FROM tag_assignments WHERE tenant_id = $1 AND tag_id = $2 \
         AND entity_type = $3 AND entity_key = $4",
    )
    .bind(tenant.as_str())
    .bind(tag_id)
    .bind(entity.kind.as_str())
    .bind(&entity.key)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(deleted == 1)
}

/// The tenant's tags on one entity, by name.
pub async fn tags_of(
    db: &Db,
    tenant: &TenantId,
    kind: EntityType,
    key: &str,
) -> sqlx::Result<Vec<TagView>> {
    let rows = sqlx::query(&format!(
        "SELECT {TAG_COLUMNS} FROM tags t JOIN tag_assignments x ON x.tag_id = t.id \
         WHERE x.tenant_id = $1 AND x.entity_type = $2 AND x.entity_key = $3 \
         ORDER BY t.name_key, t.id"
    ))
    .bind(tenant.as_str())
    .bind(kind.as_str())
    .bind(key)
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter().map(tag_view).collect()
}

/// One tagged entity and the ids and names of its tags.
#[derive(Debug, Serialize, ToSchema)]
pub struct TaggedEntity {
    /// As first assigned.
    pub entity_name: String,
    pub tags: Vec<TagRef>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TagRef {
    pub id: String,
    pub name: String,
    pub color: String,
}

/// Every entity of `kind` the tenant tagged, with its tags, by name.
pub async fn assignments_of_type(
    db: &Db,
    tenant: &TenantId,
    kind: EntityType,
) -> sqlx::Result<Vec<TaggedEntity>> {
    let rows = sqlx::query(
        "SELECT x.entity_key, x.entity_name, t.id AS tag_id, t.name, t.color FROM tag_assignments x \
         JOIN tags t ON t.id = x.tag_id \
         WHERE x.tenant_id = $1 AND x.entity_type = $2 ORDER BY x.entity_key, t.name_key, x.created_at",
    )
    .bind(tenant.as_str())
    .bind(kind.as_str())
    .fetch_all(&db.pool)
    .await?;
    let mut by_key: BTreeMap<String, TaggedEntity> = BTreeMap::new();
    for r in rows {
        let entity_name = r.try_get("entity_name")?;
        let entity = by_key
            .entry(r.try_get("entity_key")?)
            .or_insert_with(|| TaggedEntity {
                entity_name,
                tags: vec![],
            });
        entity.tags.push(TagRef {
            id: r.try_get("tag_id")?,
            name: r.try_get("name")?,
            color: r.try_get("color")?,
        });
    }
    Ok(by_key.into_values().collect())
}
