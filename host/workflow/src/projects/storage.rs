//! `projects` and `project_entries`: every statement takes the tenant.

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, to_rfc3339, Db, NamedUpdate};
use cairn_core::ids::TenantId;

pub const VENDOR: &str = "vendor";
pub const PRODUCT: &str = "product";

#[derive(Debug, Serialize, ToSchema)]
pub struct ProjectView {
    pub id: String,
    pub name: String,
    pub description: String,
    /// CPE vendor names, as the CVE store names vendors (`microsoft`).
    pub vendors: Vec<String>,
    /// CPE product names (`chrome`, `http_server`).
    pub products: Vec<String>,
    pub created_at: String,
    pub updated_at: String,
}

pub async fn projects(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<ProjectView>> {
    let rows = sqlx::query(
        "SELECT id, name, description, created_at, updated_at FROM projects \
         WHERE tenant_id = $1 ORDER BY name_key, id",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    let entries: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT project_id, kind, name_key FROM project_entries WHERE tenant_id = $1 \
         ORDER BY name_key",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter()
        .map(|r| {
            let id: String = r.try_get("id")?;
            let of = |kind: &str| -> Vec<String> {
                entries
                    .iter()
                    .filter(|(p, k, _)| *p == id && k == kind)
                    .map(|(_, _, name)| name.clone())
                    .collect()
            };
            Ok(ProjectView {
                vendors: of(VENDOR),
                products: of(PRODUCT),
                name: r.try_get("name")?,
                description: r.try_get("description")?,
                created_at: to_rfc3339(r.try_get("created_at")?),
                updated_at: to_rfc3339(r.try_get("updated_at")?),
                id,
            })
        })
        .collect()
}

pub async fn project(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<Option<ProjectView>> {
    // A tenant has tens of projects: one read of them all is simplest.
    Ok(projects(db, tenant).await?.into_iter().find(|p| p.id == id))
}

/// A new project's name, description and entries (already CPE-style).
pub struct NewProject<'a> {
    pub name: &'a str,
    pub description: &'a str,
    pub vendors: &'a [String],
    pub products: &'a [String],
}

/// Creates a project with its entries in one transaction; `None` when
/// the tenant has one of that name.
pub async fn create(
    db: &Db,
    tenant: &TenantId,
    project: &NewProject<'_>,
) -> sqlx::Result<Option<String>> {
    let id = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let inserted = sqlx::query(
        "INSERT INTO projects (id, tenant_id, name, name_key, description, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (tenant_id, name_key) DO NOTHING",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(project.name)
    .bind(cairn_core::db::lower(project.name))
    .bind(project.description)
    .bind(now)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if inserted == 0 {
        return Ok(None);
    }
    for (kind, names) in [(VENDOR, project.vendors), (PRODUCT, project.products)] {
        for name in names {
            add_entry_in(&mut tx, tenant, &id, kind, name, now).await?;
        }
    }
    tx.commit().await?;
    Ok(Some(id))
}

async fn add_entry_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant: &TenantId,
    project_id: &str,
    kind: &str,
    name: &str,
    now: i64,
) -> sqlx::Result<u64> {
    Ok(sqlx::query(
        "INSERT INTO project_entries (project_id, tenant_id, kind, name, name_key, created_at) \
         SELECT id, tenant_id, $3, $4, $4, $5 FROM projects WHERE tenant_id = $1 AND id = $2 \
         ON CONFLICT (project_id, kind, name_key) DO NOTHING",
    )
    .bind(tenant.as_str())
    .bind(project_id)
    .bind(kind)
    .bind(name)
    .bind(now)
    .execute(&mut **tx)
    .await?
    .rows_affected())
}

pub async fn update(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    name: &str,
    description: &str,
) -> sqlx::Result<NamedUpdate> {
    let _turn = db.write_turn().await;
    let result = sqlx::query(
        "UPDATE projects SET name = $3, name_key = $4, description = $5, updated_at = $6 \
         WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(name)
    .bind(cairn_core::db::lower(name))
    .bind(description)
    .bind(now_ms())
    .execute(&db.pool)
    .await;
    NamedUpdate::of(result)
}

/// Deletes a project (its entries cascade).
pub async fn delete(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<bool> {
    cairn_core::db::delete_tenant_row(db, "projects", tenant, id).await
}

/// Adds a vendor or product to the tenant's project and stamps the
/// project; whether it was new.
pub async fn add_entry(
    db: &Db,
    tenant: &TenantId,
    project_id: &str,
    kind: &str,
    name: &str,
) -> sqlx::Result<bool> {
    let now = now_ms();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let added = add_entry_in(&mut tx, tenant, project_id, kind, name, now).await?;
    touch_in(&mut tx, tenant, project_id, now).await?;
    tx.commit().await?;
    Ok(added == 1)
}

/// Removes a vendor or product; whether it was there.
pub async fn remove_entry(
    db: &Db,
    tenant: &TenantId,
    project_id: &str,
    kind: &str,
    name: &str,
) -> sqlx::Result<bool> {
    let now = now_ms();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let removed = sqlx::query(
        "DELETE FROM project_entries WHERE tenant_id = $1 AND project_id = $2 \
         AND kind = $3 AND name_key = $4",
    )
    .bind(tenant.as_str())
    .bind(project_id)
    .bind(kind)
    .bind(name)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    touch_in(&mut tx, tenant, project_id, now).await?;
    tx.commit().await?;
    Ok(removed == 1)
}

async fn touch_in(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant: &TenantId,
    project_id: &str,
    now: i64,
) -> sqlx::Result<()> {
    sqlx::query("UPDATE projects SET updated_at = $3 WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(project_id)
        .bind(now)
        .execute(&mut **tx)
        .await?;
    Ok(())
}
