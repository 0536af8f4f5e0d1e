//! `dashboard_daily_figures`: one row per tenant and UTC day with the
//! tenant's key figures, the history trends are drawn from. Each hour the
//! schedule rewrites today's row of every tenant with a dashboard, so a
//! day ends with its last value; a trend's today is read live.

use std::time::Duration;

use cairn_core::db::{now_ms, Db};
use cairn_core::ids::TenantId;
use cairn_jobs::schedule::Schedule;
use cairn_vulnerabilities::findings::figures::{key_figures, open_finding_count, KeyFigures};

const DAY_MS: i64 = 86_400_000;

/// `YYYY-MM-DD` (UTC) of `ms`.
pub fn day_of(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .format("%Y-%m-%d")
        .to_string()
}

/// Records the tenant's figures now as today's; returns them.
pub async fn record_today(db: &Db, tenant: &TenantId) -> sqlx::Result<KeyFigures> {
    let figures = key_figures(db, tenant).await?;
    let now = now_ms();
    let _turn = db.write_turn().await;
    sqlx::query(
        "INSERT INTO dashboard_daily_figures (tenant_id, day, open_findings, critical, high, \
         kev_findings, affected_devices, recorded_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (tenant_id, day) DO UPDATE SET open_findings = excluded.open_findings, \
         critical = excluded.critical, high = excluded.high, kev_findings = excluded.kev_findings, \
         affected_devices = excluded.affected_devices, recorded_at = excluded.recorded_at",
    )
    .bind(tenant.as_str())
    .bind(day_of(now))
    .bind(figures.open_findings)
    .bind(figures.critical)
    .bind(figures.high)
    .bind(figures.kev_findings)
    .bind(figures.affected_devices)
    .bind(now)
    .execute(&db.pool)
    .await?;
    Ok(figures)
}

/// Open findings per recorded day of the last `days` days, oldest first,
/// today's value live.
pub async fn open_findings_by_day(
    db: &Db,
    tenant: &TenantId,
    days: i64,
) -> sqlx::Result<Vec<(String, i64)>> {
    let now = now_ms();
    let today = day_of(now);
    let since = day_of(now - (days - 1) * DAY_MS);
    let mut points: Vec<(String, i64)> = sqlx::query_as(
        "SELECT day, open_findings FROM dashboard_daily_figures \
         WHERE tenant_id = $1 AND day >= $2 AND day < $3 ORDER BY day",
    )
    .bind(tenant.as_str())
    .bind(since)
    .bind(&today)
    .fetch_all(&db.pool)
    .await?;
    points.push((today, open_finding_count(db, tenant).await?));
    Ok(points)
}

/// Every hour, today's figures of each tenant with a dashboard.
pub fn schedule(db: Db) -> Schedule {
    Schedule::every(
        "daily dashboard figures",
        Duration::from_secs(3600),
        move || {
            let db = db.clone();
            async move { record_all(&db).await }
        },
    )
}

/// Records today's figures of every tenant with a dashboard (what the
/// schedule does each hour).
pub async fn record_all(db: &Db) -> sqlx::Result<()> {
    let tenants: Vec<String> = sqlx::query_scalar("SELECT DISTINCT tenant_id FROM dashboards")
        .fetch_all(&db.pool)
        .await?;
    for tenant in tenants {
        record_today(db, &TenantId(tenant)).await?;
    }
    Ok(())
}
