//! What each report type says, independent of its format: a title, the
//! key figures, a severity chart, and tables. Read through the public
//! functions of the areas that own the data.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::devices::figures::{self as device_figures, Assets};
use cairn_core::db::{to_rfc3339, Db};
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;
use cairn_inventory::search::QueryGroup;
use cairn_inventory::storage::{application_summaries, items_of_device};
use cairn_vulnerabilities::figures::{self as finding_figures, Devices, OpenFinding};

/// The report types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReportType {
    /// Key figures, the severity chart, the top CVEs and applications.
    ExecutiveSummary,
    /// Every open finding (spreadsheets), every CVE with its devices (PDF).
    Vulnerabilities,
    /// The applications with their vendors, devices and versions.
    SoftwareInventory,
    /// Each application version in use, compliant when it has no open
    /// finding.
    VersionCompliance,
    /// One device: its software and its open findings (`scope.device`).
    Device,
}

impl ReportType {
    pub fn title(self) -> &'static str {
        match self {
            ReportType::ExecutiveSummary => "Executive summary",
            ReportType::Vulnerabilities => "Vulnerabilities in detail",
            ReportType::SoftwareInventory => "Software inventory",
            ReportType::VersionCompliance => "Version compliance",
            ReportType::Device => "Device report",
        }
    }

    pub fn slug(self) -> &'static str {
        match self {
            ReportType::ExecutiveSummary => "executive-summary",
            ReportType::Vulnerabilities => "vulnerabilities",
            ReportType::SoftwareInventory => "software-inventory",
            ReportType::VersionCompliance => "version-compliance",
            ReportType::Device => "device",
        }
    }
}

/// What a report covers.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Scope {
    /// Only findings of these CVE severities (`critical`, `high`,
    /// `medium`, `low`, `unknown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Vec<String>>,
    /// A device search query object: only the matching assets (a client,
    /// a site, a platform, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<QueryGroup>)]
    pub filter: Option<serde_json::Value>,
    /// The device of a `device` report (its name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "unknown"];

impl Scope {
    /// Checks the scope for `report_type`; a 422 names the field.
    pub fn check(&self, report_type: ReportType) -> Result<(), ApiError> {
        if let Some(severities) = &self.severity {
            if let Some(bad) = severities
                .iter()
                .find(|s| !SEVERITIES.contains(&s.to_lowercase().as_str()))
            {
                return Err(ApiError::validation(
                    "scope.severity",
                    format!("{bad:?} is not one of {}", SEVERITIES.join(", ")),
                ));
            }
        }
        if let Some(filter) = &self.filter {
            crate::devices::figures::query(filter, "scope.filter")?;
        }
        match (report_type, self.device.as_deref().map(str::trim)) {
            (ReportType::Device, None | Some("")) => Err(ApiError::validation(
                "scope.device",
                "a device report names its device",
            )),
            (ReportType::Device, _) | (_, None) => Ok(()),
            (_, Some(_)) => Err(ApiError::validation(
                "scope.device",
                "only a device report takes a device",
            )),
        }
    }
}

/// A cell of a table, typed for spreadsheets.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Shared: a report repeats device, application and CVE names.
    Text(Arc<str>),
    Integer(i64),
    Number(f64),
    Empty,
}

impl Cell {
    pub fn text(&self) -> String {
        match self {
            Cell::Text(t) => t.to_string(),
            Cell::Integer(n) => n.to_string(),
            Cell::Number(n) => format!("{n:.3}")
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_string(),
            Cell::Empty => String::new(),
        }
    }
}

fn text(value: impl Into<Arc<str>>) -> Cell {
    Cell::Text(value.into())
}

fn optional(value: Option<impl Into<Arc<str>>>) -> Cell {
    value.map_or(Cell::Empty, |v| Cell::Text(v.into()))
}

fn number(value: Option<f64>) -> Cell {
    value.map_or(Cell::Empty, Cell::Number)
}

/// Which formats show a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Everywhere,
    /// Too long for a document; CSV and XLSX only.
    SpreadsheetsOnly,
    /// A document's digest of a spreadsheet table.
    DocumentOnly,
}

#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    pub columns: Vec<&'static str>,
    pub rows: Vec<Vec<Cell>>,
    pub shown: Shown,
}

/// A report's content.
#[derive(Debug, Clone)]
pub struct Content {
    pub title: String,
    pub tenant_name: String,
    /// When the data was read (RFC 3339).
    pub as_of: String,
    /// What the scope narrowed, in words.
    pub scope_note: String,
    pub figures: Vec<(String, String)>,
    /// Open findings by severity, for the chart.
    pub severity_chart: Vec<(String, i64)>,
    pub tables: Vec<Table>,
}

/// Reads the content of a report; `for_document` leaves out the tables
/// only spreadsheets show (and the reverse), so a PDF never holds every
/// finding in memory.
pub async fn gather(
    db: &Db,
    tenant: &TenantId,
    tenant_name: &str,
    report_type: ReportType,
    scope: &Scope,
    for_document: bool,
) -> Result<Content, ApiError> {
    let scoped = match &scope.filter {
        Some(filter) => {
            let query = crate::devices::figures::query(filter, "scope.filter")?;
            Some(
                device_figures::scope(db, tenant, &query)
                    .await
                    .map_err(|e| ApiError::validation("scope.filter", e.to_string()))?,
            )
        }
        None => None,
    };
    let device_names: Option<Vec<String>> = match (&scope.device, &scoped) {
        (Some(device), _) => Some(vec![device.trim().to_string()]),
        (None, Some(s)) => Some(s.names.clone()),
        (None, None) => None,
    };
    let devices = Devices(device_names.as_deref());
    let assets = Assets(scoped.as_ref().map(|s| s.keys.as_slice()));
    let findings =
        finding_figures::open_findings(db, tenant, &devices, scope.severity.as_deref()).await?;
    let mut by_severity: Vec<(String, i64)> =
        SEVERITIES.iter().map(|s| (s.to_string(), 0)).collect();
    for finding in &findings {
        let severity = finding.severity.as_deref().unwrap_or("unknown");
        if let Some(entry) = by_severity.iter_mut().find(|(s, _)| s == severity) {
            entry.1 += 1;
        }
    }
    let affected: std::collections::BTreeSet<&str> =
        findings.iter().map(|f| &*f.device_name).collect();
    let cves = per_cve(&findings);
    // The figures describe the report's scope: one device names it rather
    // than counting the tenant's devices.
    let devices_figure = match &scope.device {
        Some(device) => ("Device".to_string(), device.trim().to_string()),
        None => (
            "Devices".to_string(),
            device_figures::count(db, tenant, &assets)
                .await?
                .to_string(),
        ),
    };
    let mut figures = vec![
        devices_figure,
        (
            "Devices with open findings".into(),
            affected.len().to_string(),
        ),
        ("Open findings".into(), findings.len().to_string()),
        ("Distinct CVEs".into(), cves.len().to_string()),
        (
            "Findings of known exploited CVEs (CISA KEV)".into(),
            findings.iter().filter(|f| f.kev).count().to_string(),
        ),
    ];
    for (severity, n) in &by_severity {
        figures.push((format!("Open findings, {severity}"), n.to_string()));
    }
    let mut tables = vec![];
    match report_type {
        ReportType::ExecutiveSummary => {
            tables.push(cve_table(
                "Top CVEs by devices affected",
                &cves,
                20,
                Shown::Everywhere,
            ));
            tables.push(application_table(&findings, 20));
        }
        ReportType::Vulnerabilities if for_document => {
            tables.push(cve_table(
                "Vulnerabilities",
                &cves,
                usize::MAX,
                Shown::DocumentOnly,
            ));
        }
        ReportType::Vulnerabilities => tables.push(findings_table(&findings)),
        ReportType::SoftwareInventory => {
            let applications = application_summaries(db, tenant).await?;
            tables.push(Table {
                name: "Applications".into(),
                columns: vec![
                    "Application",
                    "Vendor",
                    "Devices",
                    "Versions",
                    "Newest version",
                ],
                rows: applications
                    .into_iter()
                    .map(|a| {
                        vec![
                            text(a.name),
                            optional(a.vendor),
                            Cell::Integer(a.device_count),
                            Cell::Integer(a.versions.len() as i64),
                            optional(a.newest_version),
                        ]
                    })
                    .collect(),
                shown: Shown::Everywhere,
            });
        }
        ReportType::VersionCompliance => {
            tables.push(compliance_table(
                &application_summaries(db, tenant).await?,
                &findings,
            ));
        }
        ReportType::Device => {
            let name = scope.device.as_deref().unwrap_or_default().trim();
            let (items, _) = items_of_device(db, tenant, name, 0, 10_000).await?;
            if items.is_empty() {
                return Err(ApiError::Missing(format!("no device named {name}")));
            }
            tables.push(Table {
                name: "Installed software".into(),
                columns: vec!["Application", "Version", "Vendor", "Source"],
                rows: items
                    .into_iter()
                    .map(|i| {
                        vec![
                            optional(i.application_name),
                            optional(i.version),
                            optional(i.vendor.or(i.publisher)),
                            text(i.source),
                        ]
                    })
                    .collect(),
                shown: Shown::Everywhere,
            });
            let mut table = findings_table(&findings);
            table.shown = Shown::Everywhere;
            tables.push(table);
        }
    }
    Ok(Content {
        title: match (report_type, &scope.device) {
            (ReportType::Device, Some(device)) => format!("Device report: {}", device.trim()),
            _ => report_type.title().to_string(),
        },
        tenant_name: tenant_name.to_string(),
        as_of: to_rfc3339(cairn_core::db::now_ms()),
        scope_note: scope_note(scope),
        figures,
        severity_chart: by_severity,
        tables,
    })
}

fn scope_note(scope: &Scope) -> String {
    let mut parts = vec![];
    if let Some(severities) = &scope.severity {
        parts.push(format!("severities {}", severities.join(", ")));
    }
    if scope.filter.is_some() {
        parts.push("the devices a query matched".to_string());
    }
    if let Some(device) = &scope.device {
        parts.push(format!("device {}", device.trim()));
    }
    if parts.is_empty() {
        "All devices and findings of the organization".into()
    } else {
        format!("Narrowed to {}", parts.join("; "))
    }
}

/// A CVE with its findings, for the per-CVE tables.
struct CveSummary<'a> {
    first: &'a OpenFinding,
    devices: std::collections::BTreeSet<&'a str>,
    applications: std::collections::BTreeSet<&'a str>,
    fix_versions: std::collections::BTreeSet<&'a str>,
}

/// CVEs by severity rank, then devices affected.
fn per_cve(findings: &[OpenFinding]) -> Vec<CveSummary<'_>> {
    let mut by_id: BTreeMap<&str, CveSummary<'_>> = BTreeMap::new();
    for f in findings {
        let entry = by_id.entry(&f.cve_id).or_insert_with(|| CveSummary {
            first: f,
            devices: Default::default(),
            applications: Default::default(),
            fix_versions: Default::default(),
        });
        entry.devices.insert(&f.device_name);
        entry.applications.insert(&f.application_name);
        if let Some(fix) = &f.fix_version {
            entry.fix_versions.insert(fix);
        }
    }
    let rank = |s: Option<&str>| {
        SEVERITIES
            .iter()
            .position(|x| Some(*x) == s)
            .unwrap_or(SEVERITIES.len())
    };
    let mut cves: Vec<CveSummary<'_>> = by_id.into_values().collect();
    cves.sort_by(|a, b| {
        rank(a.first.severity.as_deref())
            .cmp(&rank(b.first.severity.as_deref()))
            .then(b.devices.len().cmp(&a.devices.len()))
            .then(a.first.cve_id.cmp(&b.first.cve_id))
    });
    cves
}

/// Device names a document lists per CVE before "and N more".
const DEVICES_LISTED: usize = 10;

fn cve_table(name: &str, cves: &[CveSummary<'_>], limit: usize, shown: Shown) -> Table {
    Table {
        name: name.into(),
        columns: vec![
            "CVE",
            "Severity",
            "CVSS",
            "KEV",
            "EPSS",
            "Devices",
            "Applications",
            "Fixed in",
            "Affected devices",
        ],
        rows: cves
            .iter()
            .take(limit)
            .map(|c| {
                let listed: Vec<&str> = c.devices.iter().take(DEVICES_LISTED).copied().collect();
                let more = c.devices.len().saturating_sub(DEVICES_LISTED);
                let mut devices = listed.join(", ");
                if more > 0 {
                    devices.push_str(&format!(" and {more} more"));
                }
                vec![
                    text(c.first.cve_id.clone()),
                    optional(c.first.severity.clone()),
                    number(c.first.cvss_score),
                    text(if c.first.kev { "yes" } else { "no" }),
                    number(c.first.epss_score),
                    Cell::Integer(c.devices.len() as i64),
                    text(
                        c.applications
                            .iter()
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                    text(
                        c.fix_versions
                            .iter()
                            .copied()
                            .collect::<Vec<_>>()
                            .join(", "),
                    ),
                    text(devices),
                ]
            })
            .collect(),
        shown,
    }
}

fn findings_table(findings: &[OpenFinding]) -> Table {
    Table {
        name: "Open findings".into(),
        columns: vec![
            "Device",
            "Application",
            "Version",
            "CVE",
            "Severity",
            "CVSS",
            "KEV",
            "EPSS",
            "Fixed in",
            "First seen",
        ],
        rows: findings
            .iter()
            .map(|f| {
                vec![
                    text(f.device_name.clone()),
                    text(f.application_name.clone()),
                    text(f.version.clone()),
                    text(f.cve_id.clone()),
                    optional(f.severity.clone()),
                    number(f.cvss_score),
                    text(if f.kev { "yes" } else { "no" }),
                    number(f.epss_score),
                    optional(f.fix_version.clone()),
                    text(to_rfc3339(f.first_seen)[..10].to_string()),
                ]
            })
            .collect(),
        shown: Shown::SpreadsheetsOnly,
    }
}

fn application_table(findings: &[OpenFinding], limit: usize) -> Table {
    let mut per_app: BTreeMap<
        &str,
        (
            std::collections::BTreeSet<&str>,
            std::collections::BTreeSet<&str>,
        ),
    > = BTreeMap::new();
    for f in findings {
        let entry = per_app.entry(&f.application_name).or_default();
        entry.0.insert(&f.cve_id);
        entry.1.insert(&f.device_name);
    }
    let mut apps: Vec<(&str, usize, usize)> = per_app
        .into_iter()
        .map(|(name, (cves, devices))| (name, cves.len(), devices.len()))
        .collect();
    apps.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(b.0)));
    Table {
        name: "Most vulnerable applications".into(),
        columns: vec!["Application", "Open CVEs", "Devices"],
        rows: apps
            .into_iter()
            .take(limit)
            .map(|(name, cves, devices)| {
                vec![
                    text(name),
                    Cell::Integer(cves as i64),
                    Cell::Integer(devices as i64),
                ]
            })
            .collect(),
        shown: Shown::Everywhere,
    }
}

fn compliance_table(
    applications: &[cairn_inventory::storage::ApplicationSummary],
    findings: &[OpenFinding],
) -> Table {
    // Open CVEs per installed (application, version), folded so the
    // rollup's names meet the installed ones.
    let fold = cairn_inventory::search::fold;
    let mut open: BTreeMap<(String, String), std::collections::BTreeSet<&str>> = BTreeMap::new();
    for f in findings {
        open.entry((fold(&f.application_name), f.version.to_string()))
            .or_default()
            .insert(&f.cve_id);
    }
    let mut rows = vec![];
    for app in applications {
        for (version, devices) in &app.versions {
            let cves = open
                .get(&(fold(&app.name), version.clone()))
                .map_or(0, |c| c.len() as i64);
            rows.push(vec![
                text(app.name.clone()),
                text(version.clone()),
                Cell::Integer(*devices),
                Cell::Integer(cves),
                text(if cves == 0 {
                    "compliant"
                } else {
                    "not compliant"
                }),
            ]);
        }
    }
    Table {
        name: "Versions in use".into(),
        columns: vec!["Application", "Version", "Devices", "Open CVEs", "Status"],
        rows,
        shown: Shown::Everywhere,
    }
}
