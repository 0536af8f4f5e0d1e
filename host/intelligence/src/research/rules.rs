//! `version_rules`: a tenant's minimum version per application.

use serde::Serialize;
use sqlx::Row;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, to_rfc3339, Db};
use cairn_core::ids::TenantId;
use cairn_inventory::search::fold;

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct VersionRule {
    pub id: String,
    /// The application, as the inventory names it (compared ignoring case).
    pub application: String,
    /// Versions below it (by the inventory's version ordering) are not
    /// compliant.
    pub minimum_version: String,
    pub note: String,
    pub created_at: String,
}

pub async fn rules(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<VersionRule>> {
    let rows = sqlx::query(
        "SELECT id, application, minimum_version, note, created_at FROM version_rules \
         WHERE tenant_id = $1 ORDER BY application_key",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter()
        .map(|r| {
            Ok(VersionRule {
                id: r.try_get("id")?,
                application: r.try_get("application")?,
                minimum_version: r.try_get("minimum_version")?,
                note: r.try_get("note")?,
                created_at: to_rfc3339(r.try_get("created_at")?),
            })
        })
        .collect()
}

/// Stores a rule, replacing the application's previous one; its id.
pub async fn put(
    db: &Db,
    tenant: &TenantId,
    application: &str,
    minimum_version: &str,
    note: &str,
    by: &str,
) -> sqlx::Result<String> {
    let id = uuid::Uuid::now_v7().to_string();
    let _turn = db.write_turn().await;
    let stored: String = sqlx::query_scalar(
        "INSERT INTO version_rules (id, tenant_id, application, application_key, minimum_version, \
         note, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (tenant_id, application_key) DO UPDATE SET application = excluded.application, \
         minimum_version = excluded.minimum_version, note = excluded.note, \
         created_by = excluded.created_by, created_at = excluded.created_at RETURNING id",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(application)
    .bind(fold(application))
    .bind(minimum_version)
    .bind(note)
    .bind(by)
    .bind(now_ms())
    .fetch_one(&db.pool)
    .await?;
    Ok(stored)
}

pub async fn delete(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<bool> {
    cairn_core::db::delete_tenant_row(db, "version_rules", tenant, id).await
}
