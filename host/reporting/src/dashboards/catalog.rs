//! The named metrics a widget can show, their parameters and the shape of
//! what each returns, and the widget types with the shapes each can draw.

use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use cairn_core::http::error::ApiError;

/// What a metric returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// One value.
    Number,
    /// Labelled counts.
    Categories,
    /// Values by day.
    Series,
    /// A table: named columns and rows.
    Rows,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ParameterType {
    Integer,
    Number,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Parameter {
    pub name: &'static str,
    #[serde(rename = "type")]
    pub kind: ParameterType,
    pub default: f64,
    pub minimum: f64,
    pub maximum: f64,
    pub description: &'static str,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Metric {
    pub name: &'static str,
    pub description: &'static str,
    pub shape: Shape,
    pub parameters: &'static [Parameter],
    /// Whether a device search query (`data_source.filter`) can narrow it.
    pub filterable: bool,
}

const LIMIT: Parameter = Parameter {
    name: "limit",
    kind: ParameterType::Integer,
    default: 10.0,
    minimum: 1.0,
    maximum: 100.0,
    description: "Most entries returned",
};

/// The period an SLA figure counts fixes over.
const SLA_DAYS: Parameter = Parameter {
    name: "days",
    kind: ParameterType::Integer,
    default: 30.0,
    minimum: 1.0,
    maximum: 366.0,
    description: "Days back from now the fixes are counted over",
};

pub const METRICS: &[Metric] = &[
    Metric {
        name: "open_findings_by_severity",
        description: "Open findings (device, application, version, CVE) by the CVE's severity: critical, high, medium, low, unknown",
        shape: Shape::Categories,
        parameters: &[],
        filterable: true,
    },
    Metric {
        name: "kev_findings",
        description: "Open findings whose CVE is in CISA's Known Exploited Vulnerabilities catalog",
        shape: Shape::Number,
        parameters: &[],
        filterable: true,
    },
    Metric {
        name: "epss_high_risk_cves",
        description: "CVEs with an open finding and an EPSS score of at least `threshold`, highest first, with their devices",
        shape: Shape::Rows,
        parameters: &[
            Parameter {
                name: "threshold",
                kind: ParameterType::Number,
                default: 0.5,
                minimum: 0.0,
                maximum: 1.0,
                description: "Lowest EPSS score (probability of exploitation in 30 days)",
            },
            LIMIT,
        ],
        filterable: true,
    },
    Metric {
        name: "top_vulnerable_applications",
        description: "Applications by distinct open CVEs, most first",
        shape: Shape::Categories,
        parameters: &[LIMIT],
        filterable: true,
    },
    Metric {
        name: "devices_by_os",
        description: "Assets by OS platform (`unknown` when no source reported one)",
        shape: Shape::Categories,
        parameters: &[],
        filterable: true,
    },
    Metric {
        name: "devices_by_source",
        description: "Assets per reporting integration or upload (an asset two sources report counts for both)",
        shape: Shape::Categories,
        parameters: &[],
        filterable: true,
    },
    Metric {
        name: "sync_health",
        description: "Each configured integration's latest sync: status, when, last success, error, and `health`",
        shape: Shape::Rows,
        parameters: &[],
        filterable: false,
    },
    Metric {
        name: "stale_devices",
        description: "Assets no source has reported for `days` days",
        shape: Shape::Number,
        parameters: &[Parameter {
            name: "days",
            kind: ParameterType::Integer,
            default: 30.0,
            minimum: 1.0,
            maximum: 365.0,
            description: "Days without a report",
        }],
        filterable: true,
    },
    Metric {
        name: "finding_trend",
        description: "Open findings per day over the last `days` days, from the hourly snapshot of the tenant's figures kept while it has a dashboard (days without one are absent); today is live",
        shape: Shape::Series,
        parameters: &[Parameter {
            name: "days",
            kind: ParameterType::Integer,
            default: 30.0,
            minimum: 2.0,
            maximum: 365.0,
            description: "Days shown, today included",
        }],
        filterable: false,
    },
    Metric {
        name: "open_findings_by_sla_state",
        description: "Open findings against their SLA due dates: overdue, due_soon, within, excepted (an approved exception in force) and untracked (no rule of the policy covers it)",
        shape: Shape::Categories,
        parameters: &[],
        filterable: false,
    },
    Metric {
        name: "sla_compliance",
        description: "Percent of the findings with a due date fixed in the last `days` days that were fixed by it; empty when none was",
        shape: Shape::Number,
        parameters: &[SLA_DAYS],
        filterable: false,
    },
    Metric {
        name: "assets_by_tier",
        description: "Assets by tier: critical, high, standard, low",
        shape: Shape::Categories,
        parameters: &[],
        filterable: false,
    },
    Metric {
        name: "mean_time_to_fix",
        description: "Mean days from a finding's first sighting to its fix, over the findings fixed in the last `days` days; empty when none was",
        shape: Shape::Number,
        parameters: &[Parameter {
            name: "days",
            kind: ParameterType::Integer,
            default: 90.0,
            minimum: 1.0,
            maximum: 3650.0,
            description: "Window of fixes considered",
        }],
        filterable: true,
    },
    Metric {
        name: "applications_without_cpe",
        description: "Installed applications the last match could not map to a CPE product (see /vulnerabilities/unmatched)",
        shape: Shape::Number,
        parameters: &[],
        filterable: false,
    },
];

#[derive(Debug, Serialize, ToSchema)]
pub struct WidgetType {
    pub name: &'static str,
    pub description: &'static str,
    /// The metric shapes it can show.
    pub accepts: &'static [Shape],
}

pub const WIDGET_TYPES: &[WidgetType] = &[
    WidgetType {
        name: "counter",
        description: "One figure",
        accepts: &[Shape::Number],
    },
    WidgetType {
        name: "bar",
        description: "Bars of labelled counts",
        accepts: &[Shape::Categories],
    },
    WidgetType {
        name: "pie",
        description: "Shares of labelled counts",
        accepts: &[Shape::Categories],
    },
    WidgetType {
        name: "line",
        description: "Values over time",
        accepts: &[Shape::Series],
    },
    WidgetType {
        name: "table",
        description: "Rows with columns (labelled counts show as two columns)",
        accepts: &[Shape::Rows, Shape::Categories],
    },
    WidgetType {
        name: "list",
        description: "A ranked list",
        accepts: &[Shape::Rows, Shape::Categories],
    },
];

/// The metric named `name`; a 422 naming `field` otherwise.
pub fn metric(name: &str, field: &str) -> Result<&'static Metric, ApiError> {
    METRICS.iter().find(|m| m.name == name).ok_or_else(|| {
        ApiError::validation(
            field,
            format!("unknown metric {name:?}; see /api/v1/dashboards/catalog/metrics"),
        )
    })
}

/// Checks that `widget_type` exists and can show `metric`'s shape.
pub fn check_widget_type(widget_type: &str, metric: &Metric, field: &str) -> Result<(), ApiError> {
    let Some(kind) = WIDGET_TYPES.iter().find(|t| t.name == widget_type) else {
        return Err(ApiError::validation(
            field,
            format!(
                "unknown widget type {widget_type:?}; one of {}",
                WIDGET_TYPES
                    .iter()
                    .map(|t| t.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    };
    if !kind.accepts.contains(&metric.shape) {
        return Err(ApiError::validation(
            field,
            format!(
                "a {widget_type} widget cannot show {} ({:?} shape)",
                metric.name, metric.shape
            ),
        ));
    }
    Ok(())
}

/// The parameters of one evaluation, defaults filled in.
#[derive(Debug, Clone)]
pub struct Resolved(Vec<(&'static str, f64)>);

impl Resolved {
    pub fn get(&self, name: &str) -> f64 {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0.0, |(_, v)| *v)
    }

    pub fn as_json(&self) -> Map<String, Value> {
        self.0
            .iter()
            .map(|(name, value)| (name.to_string(), number(*value)))
            .collect()
    }
}

/// A whole number as an integer, else as a float.
pub fn number(value: f64) -> Value {
    if value.fract() == 0.0 && value.abs() < 9.0e15 {
        Value::from(value as i64)
    } else {
        Value::from(value)
    }
}

/// Checks `params` against `metric`'s parameters; a 422 names the
/// parameter (`<field>.<name>`).
pub fn resolve(
    metric: &Metric,
    params: &Map<String, Value>,
    field: &str,
) -> Result<Resolved, ApiError> {
    for name in params.keys() {
        if !metric.parameters.iter().any(|p| p.name == name) {
            return Err(ApiError::validation(
                &format!("{field}.{name}"),
                format!("{} takes no parameter {name:?}", metric.name),
            ));
        }
    }
    let mut resolved = vec![];
    for parameter in metric.parameters {
        let field = format!("{field}.{}", parameter.name);
        let value = match params.get(parameter.name) {
            None | Some(Value::Null) => parameter.default,
            Some(value) => value
                .as_f64()
                .ok_or_else(|| ApiError::validation(&field, "must be a number"))?,
        };
        if parameter.kind == ParameterType::Integer && value.fract() != 0.0 {
            return Err(ApiError::validation(&field, "must be a whole number"));
        }
        if !(parameter.minimum..=parameter.maximum).contains(&value) {
            return Err(ApiError::validation(
                &field,
                format!(
                    "must be between {} and {}",
                    parameter.minimum, parameter.maximum
                ),
            ));
        }
        resolved.push((parameter.name, value));
    }
    Ok(Resolved(resolved))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_metric_has_a_widget_type_that_shows_it() {
        for metric in METRICS {
            assert!(
                WIDGET_TYPES
                    .iter()
                    .any(|t| t.accepts.contains(&metric.shape)),
                "{}",
                metric.name
            );
        }
    }

    #[test]
    fn parameters_are_checked_and_defaulted() {
        let metric = metric("epss_high_risk_cves", "metric").unwrap();
        let resolved = resolve(metric, json!({"limit": 5}).as_object().unwrap(), "params").unwrap();
        assert_eq!(resolved.get("limit"), 5.0);
        assert_eq!(resolved.get("threshold"), 0.5);
        for (bad, field) in [
            (json!({"limit": 0}), "params.limit"),
            (json!({"limit": 2.5}), "params.limit"),
            (json!({"threshold": "high"}), "params.threshold"),
            (json!({"colour": 1}), "params.colour"),
        ] {
            let Err(ApiError::Validation { field: got, .. }) =
                resolve(metric, bad.as_object().unwrap(), "params")
            else {
                panic!("{bad} accepted");
            };
            assert_eq!(got, field);
        }
    }

    #[test]
    fn a_widget_type_must_show_the_metrics_shape() {
        let trend = metric("finding_trend", "m").unwrap();
        assert!(check_widget_type("line", trend, "widget_type").is_ok());
        assert!(check_widget_type("pie", trend, "widget_type").is_err());
        assert!(check_widget_type("gauge", trend, "widget_type").is_err());
    }
}
