//! `dashboards` and `dashboard_widgets`. A dashboard is its owner's; the
//! tenant's members see it too when it is shared. Every statement takes
//! the tenant, and reads also the caller (what they may see).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::Row;
use utoipa::ToSchema;

use super::metrics::DataSource;
use cairn_core::db::{now_ms, stored_json, to_rfc3339, Db};
use cairn_core::ids::TenantId;

/// Where a widget sits on the dashboard's 12-column grid.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Position {
    #[schema(minimum = 0, maximum = 11)]
    pub x: u32,
    #[schema(minimum = 0, maximum = 1000)]
    pub y: u32,
    #[schema(minimum = 1, maximum = 12)]
    pub w: u32,
    #[schema(minimum = 1, maximum = 24)]
    pub h: u32,
}

impl Position {
    /// `Err` with the reason when it does not fit the grid.
    pub fn check(&self) -> Result<(), String> {
        if self.w == 0 || self.h == 0 || self.h > 24 || self.y > 1000 || self.x + self.w > 12 {
            return Err("must fit the 12-column grid: w and h at least 1, x + w at most 12, h at most 24, y at most 1000".into());
        }
        Ok(())
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct WidgetView {
    pub id: String,
    pub dashboard_id: String,
    pub title: String,
    /// A type of `/api/v1/dashboards/catalog/widget-types`.
    pub widget_type: String,
    pub data_source: DataSource,
    pub position: Position,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DashboardView {
    pub id: String,
    pub name: String,
    pub owner_id: String,
    /// Seen by every member of the tenant (else only by its owner).
    pub shared: bool,
    /// The owner's default dashboard.
    pub is_default: bool,
    /// Free-form layout settings of a client (columns, theme, ...).
    #[schema(value_type = Object)]
    pub layout: Value,
    /// Whether the caller may change it (its owner).
    pub editable: bool,
    pub widget_count: i64,
    /// In the answer for one dashboard.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub widgets: Option<Vec<WidgetView>>,
    pub created_at: String,
    pub updated_at: String,
}

const COLUMNS: &str = "d.id, d.name, d.owner_id, d.shared, d.is_default, d.layout, \
    (SELECT COUNT(*) FROM dashboard_widgets w WHERE w.dashboard_id = d.id) AS widget_count, \
    d.created_at, d.updated_at";

/// `$1` the tenant, `$2` the caller.
const VISIBLE: &str = "d.tenant_id = $1 AND (d.owner_id = $2 OR d.shared = 1)";

fn view(r: sqlx::any::AnyRow, user_id: &str) -> sqlx::Result<DashboardView> {
    let owner_id: String = r.try_get("owner_id")?;
    Ok(DashboardView {
        id: r.try_get("id")?,
        name: r.try_get("name")?,
        editable: owner_id == user_id,
        owner_id,
        shared: r.try_get::<i64, _>("shared")? != 0,
        is_default: r.try_get::<i64, _>("is_default")? != 0,
        layout: stored_json("layout", r.try_get("layout")?)?,
        widget_count: r.try_get("widget_count")?,
        widgets: None,
        created_at: to_rfc3339(r.try_get("created_at")?),
        updated_at: to_rfc3339(r.try_get("updated_at")?),
    })
}

/// The dashboards the caller sees: theirs, then those shared with them.
pub async fn list(db: &Db, tenant: &TenantId, user_id: &str) -> sqlx::Result<Vec<DashboardView>> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM dashboards d WHERE {VISIBLE} \
         ORDER BY CASE WHEN d.owner_id = $2 THEN 0 ELSE 1 END, d.is_default DESC, d.name, d.id"
    ))
    .bind(tenant.as_str())
    .bind(user_id)
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter().map(|r| view(r, user_id)).collect()
}

/// One dashboard the caller sees, with its widgets.
pub async fn get(
    db: &Db,
    tenant: &TenantId,
    user_id: &str,
    id: &str,
) -> sqlx::Result<Option<DashboardView>> {
    let Some(row) = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM dashboards d WHERE {VISIBLE} AND d.id = $3"
    ))
    .bind(tenant.as_str())
    .bind(user_id)
    .bind(id)
    .fetch_optional(&db.pool)
    .await?
    else {
        return Ok(None);
    };
    let mut dashboard = view(row, user_id)?;
    dashboard.widgets = Some(widgets_of(db, tenant, id).await?);
    Ok(Some(dashboard))
}

const WIDGET_COLUMNS: &str =
    "id, dashboard_id, title, widget_type, data_source, position, created_at, updated_at";

fn widget_view(r: sqlx::any::AnyRow) -> sqlx::Result<WidgetView> {
    Ok(WidgetView {
        id: r.try_get("id")?,
        dashboard_id: r.try_get("dashboard_id")?,
        title: r.try_get("title")?,
        widget_type: r.try_get("widget_type")?,
        data_source: stored_json("data_source", r.try_get("data_source")?)?,
        position: stored_json("position", r.try_get("position")?)?,
        created_at: to_rfc3339(r.try_get("created_at")?),
        updated_at: to_rfc3339(r.try_get("updated_at")?),
    })
}

async fn widgets_of(
    db: &Db,
    tenant: &TenantId,
    dashboard_id: &str,
) -> sqlx::Result<Vec<WidgetView>> {
    let rows = sqlx::query(&format!(
        "SELECT {WIDGET_COLUMNS} FROM dashboard_widgets WHERE tenant_id = $1 AND dashboard_id = $2 \
         ORDER BY created_at, id"
    ))
    .bind(tenant.as_str())
    .bind(dashboard_id)
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter().map(widget_view).collect()
}

/// A widget of a dashboard the caller sees.
pub async fn visible_widget(
    db: &Db,
    tenant: &TenantId,
    user_id: &str,
    widget_id: &str,
) -> sqlx::Result<Option<WidgetView>> {
    let row = sqlx::query(&format!(
        "SELECT {} FROM dashboard_widgets w JOIN dashboards d ON d.id = w.dashboard_id \
         WHERE {VISIBLE} AND w.id = $3",
        WIDGET_COLUMNS
            .split(", ")
            .map(|c| format!("w.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
    .bind(tenant.as_str())
    .bind(user_id)
    .bind(widget_id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(widget_view).transpose()
}

/// A widget to store.
pub struct NewWidget {
    pub title: String,
    pub widget_type: String,
    pub data_source: DataSource,
    pub position: Position,
}

/// A dashboard to store, with its widgets.
pub struct NewDashboard {
    pub name: String,
    pub shared: bool,
    pub is_default: bool,
    pub layout: Value,
    pub widgets: Vec<NewWidget>,
}

/// Stores a dashboard owned by `user_id` with its widgets, in one
/// transaction; its id.
pub async fn create(
    db: &Db,
    tenant: &TenantId,
    user_id: &str,
    dashboard: NewDashboard,
) -> sqlx::Result<String> {
    let id = uuid::Uuid::now_v7().to_string();
    let now = now_ms();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    sqlx::query(
        "INSERT INTO dashboards (id, tenant_id, owner_id, name, shared, is_default, layout, \
         created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(user_id)
    .bind(&dashboard.name)
    .bind(i64::from(dashboard.shared))
    .bind(i64::from(dashboard.is_default))
    .bind(dashboard.layout.to_string())
    .bind(now)
    .execute(&mut *tx)
    .await?;
    for widget in &dashboard.widgets {
        insert_widget(&mut tx, tenant, &id, widget, now).await?;
    }
    tx.commit().await?;
    Ok(id)
}

async fn insert_widget(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    tenant: &TenantId,
    dashboard_id: &str,
    widget: &NewWidget,
    now: i64,
) -> sqlx::Result<String> {
    let id = uuid::Uuid::now_v7().to_string();
    sqlx::query(
        "INSERT INTO dashboard_widgets (id, tenant_id, dashboard_id, title, widget_type, \
         data_source, position, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(dashboard_id)
    .bind(&widget.title)
    .bind(&widget.widget_type)
    .bind(serde_json::to_string(&widget.data_source).unwrap_or_default())
    .bind(serde_json::to_string(&widget.position).unwrap_or_default())
    .bind(now)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

/// The caller's default dashboard, if they have one.
pub async fn default_of(db: &Db, tenant: &TenantId, user_id: &str) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT id FROM dashboards WHERE tenant_id = $1 AND owner_id = $2 AND is_default = 1",
    )
    .bind(tenant.as_str())
    .bind(user_id)
    .fetch_optional(&db.pool)
    .await
}

/// What the caller may do with a dashboard.
pub enum Access {
    Owner,
    /// Seen (shared) but not theirs.
    ReadOnly,
    Hidden,
}

pub async fn access(db: &Db, tenant: &TenantId, user_id: &str, id: &str) -> sqlx::Result<Access> {
    let owner: Option<(String, i64)> =
        sqlx::query_as("SELECT owner_id, shared FROM dashboards WHERE tenant_id = $1 AND id = $2")
            .bind(tenant.as_str())
            .bind(id)
            .fetch_optional(&db.pool)
            .await?;
    Ok(match owner {
        Some((owner, _)) if owner == user_id => Access::Owner,
        Some((_, shared)) if shared != 0 => Access::ReadOnly,
        _ => Access::Hidden,
    })
}

/// Changes of a dashboard; `None` leaves a field.
pub struct DashboardChanges {
    pub name: Option<String>,
    pub shared: Option<bool>,
    pub layout: Option<Value>,
}

/// Applies `changes` to the owner's dashboard.
pub async fn update(
    db: &Db,
    tenant: &TenantId,
    owner_id: &str,
    id: &str,
    changes: DashboardChanges,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let updated = sqlx::query(
        "UPDATE dashboards SET name = COALESCE($4, name), \
         shared = COALESCE(CAST($5 AS BIGINT), shared), layout = COALESCE($6, layout), \
         updated_at = $7 WHERE tenant_id = $1 AND owner_id = $2 AND id = $3",
    )
    .bind(tenant.as_str())
    .bind(owner_id)
    .bind(id)
    .bind(changes.name)
    .bind(changes.shared.map(i64::from))
    .bind(changes.layout.map(|l| l.to_string()))
    .bind(now_ms())
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(updated == 1)
}

/// Deletes the owner's dashboard with its widgets.
pub async fn delete(db: &Db, tenant: &TenantId, owner_id: &str, id: &str) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let deleted =
        sqlx::query("DELETE FROM dashboards WHERE tenant_id = $1 AND owner_id = $2 AND id = $3")
            .bind(tenant.as_str())
            .bind(owner_id)
            .bind(id)
            .execute(&db.pool)
            .await?
            .rows_affected();
    Ok(deleted == 1)
}

/// Adds a widget to the owner's dashboard (and touches the dashboard);
/// its id, or `None` when the dashboard is not theirs.
pub async fn add_widget(
    db: &Db,
    tenant: &TenantId,
    owner_id: &str,
    dashboard_id: &str,
    widget: &NewWidget,
) -> sqlx::Result<Option<String>> {
    let now = now_ms();
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    let touched = sqlx::query(
        "UPDATE dashboards SET updated_at = $4 WHERE tenant_id = $1 AND owner_id = $2 AND id = $3",
    )
    .bind(tenant.as_str())
    .bind(owner_id)
    .bind(dashboard_id)
    .bind(now)
    .execute(&mut *tx)
    .await?
    .rows_affected();
    if touched != 1 {
        return Ok(None);
    }
    let id = insert_widget(&mut tx, tenant, dashboard_id, widget, now).await?;
    tx.commit().await?;
    Ok(Some(id))
}

/// The stored widget `widget_id` of `dashboard_id`, as it is now.
pub async fn widget(
    db: &Db,
    tenant: &TenantId,
    dashboard_id: &str,
    widget_id: &str,
) -> sqlx::Result<Option<WidgetView>> {
    let row = sqlx::query(&format!(
        "SELECT {WIDGET_COLUMNS} FROM dashboard_widgets \
         WHERE tenant_id = $1 AND dashboard_id = $2 AND id = $3"
    ))
    .bind(tenant.as_str())
    .bind(dashboard_id)
    .bind(widget_id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(widget_view).transpose()
}

/// Replaces a widget of `dashboard_id` (the caller checked ownership).
pub async fn replace_widget(
    db: &Db,
    tenant: &TenantId,
    dashboard_id: &str,
    widget_id: &str,
    widget: &NewWidget,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let updated = sqlx::query(
        "UPDATE dashboard_widgets SET title = $4, widget_type = $5, data_source = $6, \
         position = $7, updated_at = $8 WHERE tenant_id = $1 AND dashboard_id = $2 AND id = $3",
    )
    .bind(tenant.as_str())
    .bind(dashboard_id)
    .bind(widget_id)
    .bind(&widget.title)
    .bind(&widget.widget_type)
    .bind(serde_json::to_string(&widget.data_source).unwrap_or_default())
    .bind(serde_json::to_string(&widget.position).unwrap_or_default())
    .bind(now_ms())
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(updated == 1)
}

pub async fn delete_widget(
    db: &Db,
    tenant: &TenantId,
    dashboard_id: &str,
    widget_id: &str,
) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let deleted = sqlx::query(
        "DELETE FROM dashboard_widgets WHERE tenant_id = $1 AND dashboard_id = $2 AND id = $3",
    )
    .bind(tenant.as_str())
    .bind(dashboard_id)
    .bind(widget_id)
    .execute(&db.pool)
    .await?
    .rows_affected();
    Ok(deleted == 1)
}
