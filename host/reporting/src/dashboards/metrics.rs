//! One engine evaluating every metric of the catalog over a tenant, read
//! through the public figures of the areas that own the data
//! (vulnerabilities, devices, integrations) and this area's snapshots.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use utoipa::ToSchema;

use super::catalog::{self, number, Metric, Resolved, Shape};
use super::snapshots;
use cairn_core::db::{now_ms, Db};
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;
use cairn_inventory::devices::figures::{self as device_figures, AssetScope, Assets};
use cairn_inventory::search::{QueryGroup, SearchError};
use cairn_vulnerabilities::findings::figures::{self as finding_figures, Devices};

const DAY_MS: i64 = 86_400_000;

/// What a widget shows: a metric, its parameters, and optionally a device
/// search query narrowing it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DataSource {
    /// A metric of `/api/v1/dashboards/catalog/metrics`.
    pub metric: String,
    /// The metric's parameters; those left out take their defaults.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub params: Map<String, Value>,
    /// A device search query object (as `POST /devices/devices/search`
    /// takes in `query`): the metric counts only the matching assets and
    /// their findings. Only for metrics marked `filterable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<QueryGroup>)]
    pub filter: Option<Value>,
}

/// A checked data source: its metric, resolved parameters and filter.
pub struct Checked {
    pub metric: &'static Metric,
    pub params: Resolved,
    pub filter: Option<QueryGroup>,
}

/// Checks a data source; a 422 names the field under `field`.
pub fn check(source: &DataSource, field: &str) -> Result<Checked, ApiError> {
    let metric = catalog::metric(&source.metric, &format!("{field}.metric"))?;
    let params = catalog::resolve(metric, &source.params, &format!("{field}.params"))?;
    let filter = match &source.filter {
        None | Some(Value::Null) => None,
        Some(_) if !metric.filterable => {
            return Err(ApiError::validation(
                &format!("{field}.filter"),
                format!("{} cannot be narrowed by a device query", metric.name),
            ))
        }
        Some(value) => Some(cairn_inventory::devices::figures::query(
            value,
            &format!("{field}.filter"),
        )?),
    };
    Ok(Checked {
        metric,
        params,
        filter,
    })
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Category {
    pub label: String,
    pub value: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Point {
    /// `YYYY-MM-DD` (UTC).
    pub date: String,
    pub value: i64,
}

/// A metric's value, in its shape.
#[derive(Debug, Serialize, ToSchema)]
#[serde(tag = "shape", rename_all = "snake_case")]
pub enum MetricValue {
    Number {
        /// Null only where the metric says so.
        #[schema(value_type = Option<f64>)]
        value: Value,
        unit: &'static str,
    },
    Categories {
        items: Vec<Category>,
    },
    Series {
        points: Vec<Point>,
    },
    Rows {
        columns: Vec<&'static str>,
        /// Cells are strings, numbers or null, in the order of `columns`.
        #[schema(value_type = Vec<Vec<serde_json::Value>>)]
        rows: Vec<Vec<Value>>,
    },
}

fn categories(pairs: Vec<(String, i64)>) -> MetricValue {
    MetricValue::Categories {
        items: pairs
            .into_iter()
            .map(|(label, value)| Category { label, value })
            .collect(),
    }
}

fn count(value: i64, unit: &'static str) -> MetricValue {
    MetricValue::Number {
        value: Value::from(value),
        unit,
    }
}

/// The severities in the order a chart shows them.
const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "unknown"];

/// Evaluates a checked data source over the tenant at `now` (the
/// service's clock).
pub async fn evaluate(
    db: &Db,
    tenant: &TenantId,
    checked: &Checked,
    now: i64,
) -> Result<MetricValue, ApiError> {
    let scope: Option<AssetScope> = match &checked.filter {
        Some(query) => Some(device_figures::scope(db, tenant, query).await.map_err(
            |err| match err {
                SearchError::Database(err) => ApiError::from(err),
                other => ApiError::validation("data_source.filter", other.to_string()),
            },
        )?),
        None => None,
    };
    let devices = Devices(scope.as_ref().map(|s| s.names.as_slice()));
    let assets = Assets(scope.as_ref().map(|s| s.keys.as_slice()));
    let params = &checked.params;
    let value = match checked.metric.name {
        "open_findings_by_severity" => {
            let counts = finding_figures::open_findings_by_severity(db, tenant, &devices).await?;
            categories(
                SEVERITIES
                    .iter()
                    .map(|s| {
                        let n = counts.iter().find(|(l, _)| l == s).map_or(0, |(_, n)| *n);
                        (s.to_string(), n)
                    })
                    .collect(),
            )
        }
        "kev_findings" => count(
            finding_figures::kev_open_findings(db, tenant, &devices).await?,
            "findings",
        ),
        "epss_high_risk_cves" => {
            let risks = finding_figures::epss_high_risk(
                db,
                tenant,
                params.get("threshold"),
                params.get("limit") as i64,
                &devices,
            )
            .await?;
            MetricValue::Rows {
                columns: vec!["cve_id", "epss_score", "epss_percentile", "devices"],
                rows: risks
                    .into_iter()
                    .map(|r| {
                        vec![
                            json!(r.cve_id),
                            json!(r.epss_score),
                            json!(r.epss_percentile),
                            json!(r.devices),
                        ]
                    })
                    .collect(),
            }
        }
        "top_vulnerable_applications" => categories(
            finding_figures::top_vulnerable_applications(
                db,
                tenant,
                params.get("limit") as i64,
                &devices,
            )
            .await?,
        ),
        "devices_by_os" => categories(device_figures::by_platform(db, tenant, &assets).await?),
        "devices_by_source" => categories(device_figures::by_source(db, tenant, &assets).await?),
        "stale_devices" => {
            let before = now_ms() - params.get("days") as i64 * DAY_MS;
            count(
                device_figures::stale(db, tenant, before, &assets).await?,
                "devices",
            )
        }
        "sync_health" => {
            let health = cairn_integrations::sync_health(db, tenant).await?;
            MetricValue::Rows {
                columns: vec![
                    "area",
                    "connector",
                    "health",
                    "last_status",
                    "last_run_at",
                    "last_success_at",
                    "last_error",
                ],
                rows: health
                    .into_iter()
                    .map(|h| {
                        vec![
                            json!(h.area),
                            json!(h.connector),
                            json!(h.health),
                            json!(h.last_status),
                            json!(h.last_run_at),
                            json!(h.last_success_at),
                            json!(h.last_error),
                        ]
                    })
                    .collect(),
            }
        }
        "finding_trend" => {
            let days = params.get("days") as i64;
            MetricValue::Series {
                points: snapshots::open_findings_by_day(db, tenant, days)
                    .await?
                    .into_iter()
                    .map(|(date, value)| Point { date, value })
                    .collect(),
            }
        }
        "mean_time_to_fix" => {
            let since = now - params.get("days") as i64 * DAY_MS;
            let (mean, _) = finding_figures::mean_days_to_fix(db, tenant, since, &devices).await?;
            MetricValue::Number {
                value: mean.map_or(Value::Null, |days| number((days * 10.0).round() / 10.0)),
                unit: "days",
            }
        }
        "open_findings_by_sla_state" => {
            let standing = cairn_workflow::sla::standing_of(db, tenant, now, 30).await?;
            categories(vec![
                ("overdue".into(), standing.overdue),
                ("due_soon".into(), standing.due_soon),
                ("within".into(), standing.within),
                ("excepted".into(), standing.excepted),
                ("untracked".into(), standing.untracked),
            ])
        }
        "sla_compliance" => {
            let days = params.get("days") as i64;
            let standing = cairn_workflow::sla::standing_of(db, tenant, now, days).await?;
            MetricValue::Number {
                value: standing.compliance_percent.map_or(Value::Null, number),
                unit: "percent",
            }
        }
        "assets_by_tier" => categories(
            cairn_inventory::tiers::counts(db, tenant)
                .await?
                .into_iter()
                .map(|(tier, n)| (tier.as_str().to_string(), n))
                .collect(),
        ),
        "applications_without_cpe" => {
            let (_, total) =
                cairn_vulnerabilities::findings::views::unmatched(db, tenant, 0, 0).await?;
            count(total, "applications")
        }
        other => {
            return Err(ApiError::Internal(anyhow::anyhow!(
                "metric {other} is in the catalog but not evaluated"
            )))
        }
    };
    debug_assert_eq!(shape_of(&value), checked.metric.shape);
    Ok(value)
}

fn shape_of(value: &MetricValue) -> Shape {
    match value {
        MetricValue::Number { .. } => Shape::Number,
        MetricValue::Categories { .. } => Shape::Categories,
        MetricValue::Series { .. } => Shape::Series,
        MetricValue::Rows { .. } => Shape::Rows,
    }
}
