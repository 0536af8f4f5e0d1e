//! What each report type says, independent of its format: a title, the
//! key figures, a severity chart, and tables. Read through the public
//! functions of the areas that own the data.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use cairn_core::db::{to_rfc3339, Db};
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;
use cairn_inventory::devices::figures::{self as device_figures, Assets};
use cairn_inventory::search::QueryGroup;
use cairn_inventory::storage::{application_summaries, items_of_device};
use cairn_vulnerabilities::findings::figures::{self as finding_figures, Devices, OpenFinding};

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
    /// A customer's quarterly review, with its partner's name, logo and
    /// colours: posture now, what the period (`scope.period_days`, default
    /// 90) opened and closed, mean time to remediate KEV and critical
    /// findings, the weekly trend, top risks and outdated software.
    CustomerReview,
    /// Every SLA exception: the CVE and devices it covers, why, the
    /// compensating control, who asked and when, who decided, when and
    /// why, and until when.
    ExceptionRegister,
    /// Evidence for a customer or an insurer over a period
    /// (`scope.period_days`, default 90): SLA compliance by severity and
    /// tier, KEV exposure and time to fix, open and overdue findings, the
    /// exception register, remediation attempts and outcomes, coverage
    /// (EDR, MDM, backup, a recent inventory), and each figure mapped to
    /// insurers' questions, CIS Controls v8 control 7 and ISO/IEC
    /// 27001:2022 A.8.8.
    EvidencePack,
}

impl ReportType {
    pub fn title(self) -> &'static str {
        match self {
            ReportType::ExecutiveSummary => "Executive summary",
            ReportType::Vulnerabilities => "Vulnerabilities in detail",
            ReportType::SoftwareInventory => "Software inventory",
            ReportType::VersionCompliance => "Version compliance",
            ReportType::Device => "Device report",
            ReportType::CustomerReview => "Security review",
            ReportType::ExceptionRegister => "SLA exception register",
            ReportType::EvidencePack => "Vulnerability management evidence",
        }
    }

    pub fn slug(self) -> &'static str {
        match self {
            ReportType::ExecutiveSummary => "executive-summary",
            ReportType::Vulnerabilities => "vulnerabilities",
            ReportType::SoftwareInventory => "software-inventory",
            ReportType::VersionCompliance => "version-compliance",
            ReportType::Device => "device",
            ReportType::CustomerReview => "security-review",
            ReportType::ExceptionRegister => "exception-register",
            ReportType::EvidencePack => "evidence-pack",
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
    /// The days a `customer_review` looks back over (7 to 730; default 90).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period_days: Option<i64>,
}

/// Days a review looks back over by default: a quarter.
const REVIEW_DAYS: i64 = 90;

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
            cairn_inventory::devices::figures::query(filter, "scope.filter")?;
        }
        match (report_type, self.period_days) {
            (ReportType::CustomerReview, Some(days)) if !(7..=730).contains(&days) => {
                return Err(ApiError::validation(
                    "scope.period_days",
                    "must be between 7 and 730",
                ))
            }
            (ReportType::EvidencePack, Some(days)) if !(7..=365).contains(&days) => {
                return Err(ApiError::validation(
                    "scope.period_days",
                    "must be between 7 and 365",
                ))
            }
            (ReportType::CustomerReview | ReportType::EvidencePack, _) | (_, None) => {}
            (_, Some(_)) => {
                return Err(ApiError::validation(
                    "scope.period_days",
                    "only a customer_review or an evidence_pack takes a period",
                ))
            }
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

/// Who a report is made by, on its pages: a partner's name, logo and
/// colours on the reviews it makes for its customers.
#[derive(Debug, Clone, Default)]
pub struct Brand {
    pub prepared_by: String,
    /// PNG bytes.
    pub logo_png: Option<Vec<u8>>,
    /// Headings and table headers (RGB, 0 to 1).
    pub primary: Option<(f32, f32, f32)>,
    /// Highlights: the severity chart's bars.
    pub accent: Option<(f32, f32, f32)>,
}

/// `#rrggbb` as RGB in 0 to 1.
fn rgb(hex: Option<&str>) -> Option<(f32, f32, f32)> {
    let hex = hex?.strip_prefix('#')?;
    let channel = |i: usize| {
        u8::from_str_radix(hex.get(i..i + 2)?, 16)
            .ok()
            .map(|v| f32::from(v) / 255.0)
    };
    Some((channel(0)?, channel(2)?, channel(4)?))
}

/// The brand of a customer's review: its partner's, when it has one.
async fn brand_of(db: &Db, tenant: &TenantId) -> Result<Option<Brand>, ApiError> {
    let Some(partner) = cairn_platform::partner::partner_of(db, tenant).await? else {
        return Ok(None);
    };
    let branding = cairn_platform::partner::branding(db, &partner).await?;
    let prepared_by = match branding.display_name {
        Some(name) => name,
        None => cairn_platform::tenancy::name_of(db, &partner)
            .await?
            .unwrap_or_default(),
    };
    use base64::Engine;
    let logo_png = branding
        .logo_png
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok());
    Ok(Some(Brand {
        prepared_by,
        logo_png,
        primary: rgb(branding.primary_color.as_deref()),
        accent: rgb(branding.accent_color.as_deref()),
    }))
}

/// A report's content.
#[derive(Debug, Clone)]
pub struct Content {
    pub title: String,
    pub tenant_name: String,
    /// Who made it (a partner's review); none for the tenant's own reports.
    pub brand: Option<Brand>,
    /// When the data was read (RFC 3339).
    pub as_of: String,
    /// What the scope narrowed, in words.
    pub scope_note: String,
    pub figures: Vec<(String, String)>,
    /// Open findings by severity, for the chart.
    pub severity_chart: Vec<(String, i64)>,
    pub tables: Vec<Table>,
}

/// Reads the content of a report as of `now` (the service's clock);
/// `for_document` leaves out the tables only spreadsheets show (and the
/// reverse), so a PDF never holds every finding in memory.
pub async fn gather(
    db: &Db,
    tenant: &TenantId,
    tenant_name: &str,
    report_type: ReportType,
    scope: &Scope,
    for_document: bool,
    now: i64,
) -> Result<Content, ApiError> {
    let scoped = match &scope.filter {
        Some(filter) => {
            let query = cairn_inventory::devices::figures::query(filter, "scope.filter")?;
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
    if matches!(
        report_type,
        ReportType::ExecutiveSummary | ReportType::CustomerReview | ReportType::EvidencePack
    ) {
        let days = scope.period_days.unwrap_or(REVIEW_DAYS);
        figures.extend(sla_figures(db, tenant, now, days).await?);
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
        ReportType::Vulnerabilities => {
            let due = due_dates(db, tenant, now).await?;
            tables.push(findings_table(&findings, &due));
        }
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
            let due = due_dates(db, tenant, now).await?;
            let mut table = findings_table(&findings, &due);
            table.shown = Shown::Everywhere;
            tables.push(table);
        }
        ReportType::CustomerReview => {
            let days = scope.period_days.unwrap_or(REVIEW_DAYS);
            let until = now;
            let since = until - days * 86_400_000;
            let period =
                cairn_vulnerabilities::findings::posture::remediation(db, tenant, since, until)
                    .await?;
            let mean = |d: Option<f64>| d.map_or("none closed".to_string(), |d| format!("{d:.1}"));
            figures.extend([
                (
                    format!("Findings opened in the last {days} days"),
                    period.opened.to_string(),
                ),
                (
                    format!("Findings closed in the last {days} days"),
                    period.closed.to_string(),
                ),
                (
                    format!(
                        "Mean days to remediate KEV findings ({} closed)",
                        period.kev_closed
                    ),
                    mean(period.kev_mean_days),
                ),
                (
                    format!(
                        "Mean days to remediate critical findings ({} closed)",
                        period.critical_closed
                    ),
                    mean(period.critical_mean_days),
                ),
            ]);
            tables.push(Table {
                name: "Trend by week".into(),
                columns: vec!["Week of", "Open at its end", "Opened", "Closed"],
                rows: period
                    .weeks
                    .iter()
                    .map(|w| {
                        vec![
                            text(&to_rfc3339(w.start)[..10]),
                            Cell::Integer(w.open_at_end),
                            Cell::Integer(w.opened),
                            Cell::Integer(w.closed),
                        ]
                    })
                    .collect(),
                shown: Shown::Everywhere,
            });
            tables.push(cve_table("Top risks", &cves, 15, Shown::Everywhere));
            tables.push(outdated_table(&findings, 50));
        }
        ReportType::EvidencePack => {
            let days = scope
                .period_days
                .unwrap_or(REVIEW_DAYS)
                .min(cairn_workflow::sla::kept::MAX_PERIOD_DAYS);
            let evidence = evidence(db, tenant, &assets, now, days).await?;
            figures.extend(evidence.figures);
            tables.extend(evidence.tables);
        }
        ReportType::ExceptionRegister => {
            let exceptions = cairn_workflow::sla::exceptions::list(db, tenant).await?;
            let views: Vec<_> = exceptions.into_iter().map(|e| e.view(now)).collect();
            // The register is about exceptions, not findings: its figures
            // count them by status.
            figures = ["pending", "approved", "rejected", "expired"]
                .iter()
                .map(|status| {
                    let n = views.iter().filter(|e| e.status == *status).count();
                    (format!("Exceptions {status}"), n.to_string())
                })
                .collect();
            tables.push(exception_table(&views));
            tables.push(exception_digest(&views));
        }
    }
    let brand = match report_type {
        ReportType::CustomerReview => brand_of(db, tenant).await?,
        _ => None,
    };
    Ok(Content {
        brand,
        title: match (report_type, &scope.device) {
            (ReportType::Device, Some(device)) => format!("Device report: {}", device.trim()),
            _ => report_type.title().to_string(),
        },
        tenant_name: tenant_name.to_string(),
        as_of: to_rfc3339(now),
        scope_note: scope_note(scope),
        figures,
        // A register is about exceptions, not findings.
        severity_chart: match report_type {
            ReportType::ExceptionRegister => vec![],
            _ => by_severity,
        },
        tables,
    })
}

/// What an evidence pack adds to the common figures.
struct Evidence {
    figures: Vec<(String, String)>,
    tables: Vec<Table>,
}

/// `n of total (p %)`.
fn share(n: i64, total: i64) -> String {
    match total {
        0 => format!("{n} of 0"),
        _ => format!("{n} of {total} ({:.1} %)", n as f64 * 100.0 / total as f64),
    }
}

/// The evidence pack's mapping of figures to insurers' questions and
/// controls, as data (`evidence_mapping.json`).
#[derive(Deserialize)]
struct Mapping {
    figures: Vec<MappedFigure>,
}

#[derive(Deserialize)]
struct MappedFigure {
    figure: String,
    insurer_question: String,
    cis_v8: String,
    iso_27001_2022: String,
}

fn mapping_table() -> Table {
    let mapping: Mapping = serde_json::from_str(include_str!("evidence_mapping.json"))
        .unwrap_or(Mapping { figures: vec![] });
    Table {
        name: "What each figure answers".into(),
        columns: vec![
            "Figure",
            "Insurer's question",
            "CIS Controls v8",
            "ISO/IEC 27001:2022",
        ],
        rows: mapping
            .figures
            .into_iter()
            .map(|m| {
                vec![
                    text(m.figure),
                    text(m.insurer_question),
                    text(m.cis_v8),
                    text(m.iso_27001_2022),
                ]
            })
            .collect(),
        shown: Shown::Everywhere,
    }
}

/// SLA compliance of `tracked` findings grouped by `key`: those with a
/// due date fixed in the period and on time, those open and overdue.
fn compliance_by(
    name: &str,
    tracked: &[cairn_workflow::sla::TrackedFinding],
    key: impl Fn(&cairn_workflow::sla::TrackedFinding) -> String,
) -> Table {
    use cairn_workflow::sla::policy::SlaState;
    let mut groups: BTreeMap<String, (i64, i64, i64, i64)> = BTreeMap::new();
    for finding in tracked {
        let entry = groups.entry(key(finding)).or_default();
        match finding.fixed_on_time {
            Some(on_time) => {
                entry.0 += 1;
                entry.1 += i64::from(on_time);
            }
            None if finding.status == "open" && finding.exception_id.is_none() => {
                entry.2 += 1;
                entry.3 += i64::from(finding.sla_state == Some(SlaState::Overdue));
            }
            None => {}
        }
    }
    Table {
        name: name.into(),
        columns: vec![
            "",
            "Fixed with a due date",
            "On time",
            "Share on time",
            "Open",
            "Overdue",
        ],
        rows: groups
            .into_iter()
            .map(|(group, (fixed, on_time, open, overdue))| {
                vec![
                    text(group),
                    Cell::Integer(fixed),
                    Cell::Integer(on_time),
                    match fixed {
                        0 => Cell::Empty,
                        _ => Cell::Number((on_time as f64 * 1000.0 / fixed as f64).round() / 10.0),
                    },
                    Cell::Integer(open),
                    Cell::Integer(overdue),
                ]
            })
            .collect(),
        shown: Shown::Everywhere,
    }
}

const DAY_MS: i64 = 86_400_000;

async fn evidence(
    db: &Db,
    tenant: &TenantId,
    assets: &Assets<'_>,
    now: i64,
    days: i64,
) -> Result<Evidence, ApiError> {
    let since = now - days * DAY_MS;
    let policy = cairn_workflow::sla::applied(db, tenant).await?.policy;
    let tracked = cairn_workflow::sla::tracked_with(db, tenant, &policy, now, since).await?;
    let mut figures = vec![];
    let mut tables = vec![
        compliance_by("SLA compliance by severity", &tracked, |f| {
            f.severity.clone().unwrap_or_else(|| "unknown".into())
        }),
        compliance_by("SLA compliance by tier", &tracked, |f| {
            f.tier.as_str().to_string()
        }),
    ];

    // KEV: open now, fixed in the period and how fast.
    let kev_open = tracked
        .iter()
        .filter(|f| f.kev && f.status == "open" && f.exception_id.is_none())
        .count();
    let kev_fixed: Vec<i64> = tracked
        .iter()
        .filter(|f| f.kev && f.status == "fixed")
        .filter_map(|f| f.fixed_at.map(|at| at - f.first_seen))
        .collect();
    figures.push(("Open KEV findings".into(), kev_open.to_string()));
    figures.push((
        format!("KEV findings fixed in the last {days} days"),
        kev_fixed.len().to_string(),
    ));
    figures.push((
        "Mean days to fix a KEV finding".into(),
        match kev_fixed.len() {
            0 => "nothing fixed".into(),
            n => format!(
                "{:.1}",
                kev_fixed.iter().sum::<i64>() as f64 / n as f64 / DAY_MS as f64
            ),
        },
    ));

    // Exceptions in force now, and the register.
    let exceptions: Vec<_> = cairn_workflow::sla::exceptions::list(db, tenant)
        .await?
        .into_iter()
        .map(|e| e.view(now))
        .collect();
    figures.push((
        "Exceptions in force".into(),
        exceptions
            .iter()
            .filter(|e| e.status == "approved")
            .count()
            .to_string(),
    ));
    tables.push(exception_table(&exceptions));

    // Remediation attempts of the period and what became of them.
    let outcomes = cairn_workflow::remediation::storage::outcomes_since(db, tenant, since).await?;
    let of = |state: &str| outcomes.get(state).copied().unwrap_or(0);
    let started: i64 = outcomes.values().sum();
    figures.push((
        format!("Remediations started in the last {days} days"),
        started.to_string(),
    ));
    figures.push((
        "Remediations verified fixed by inventory".into(),
        of("fixed").to_string(),
    ));
    figures.push((
        "Remediations the next inventory disproved".into(),
        of("remediation_failed").to_string(),
    ));
    figures.push((
        "Remediations the RMM reported failed".into(),
        of("failed").to_string(),
    ));
    tables.push(Table {
        name: "Remediation outcomes".into(),
        columns: vec!["Outcome", "Devices"],
        rows: [
            ("fixed, verified by inventory", of("fixed")),
            (
                "reported done, disproved by inventory",
                of("remediation_failed"),
            ),
            ("failed upstream", of("failed")),
            (
                "under way",
                of("starting") + of("pending") + of("running") + of("awaiting_inventory"),
            ),
        ]
        .into_iter()
        .map(|(outcome, n)| vec![text(outcome), Cell::Integer(n)])
        .collect(),
        shown: Shown::Everywhere,
    });

    // Coverage: the share of devices each kind of source sees.
    let total = device_figures::count(db, tenant, assets).await?;
    let by_source: BTreeMap<String, i64> = device_figures::by_source(db, tenant, assets)
        .await?
        .into_iter()
        .collect();
    let recent = total - device_figures::stale(db, tenant, now - 7 * DAY_MS, assets).await?;
    let coverage = [
        (
            "Devices seen by EDR",
            by_source.get("edr").copied().unwrap_or(0),
        ),
        (
            "Devices seen by MDM",
            by_source.get("mdm").copied().unwrap_or(0),
        ),
        (
            "Devices seen by backup",
            by_source.get("backup").copied().unwrap_or(0),
        ),
        ("Devices inventoried in the last 7 days", recent),
    ];
    tables.push(Table {
        name: "Coverage".into(),
        columns: vec!["", "Devices", "Of", "Share"],
        rows: coverage
            .iter()
            .map(|(label, n)| {
                vec![
                    text(*label),
                    Cell::Integer(*n),
                    Cell::Integer(total),
                    match total {
                        0 => Cell::Empty,
                        _ => Cell::Number((*n as f64 * 1000.0 / total as f64).round() / 10.0),
                    },
                ]
            })
            .collect(),
        shown: Shown::Everywhere,
    });
    figures.extend(coverage.map(|(label, n)| (label.to_string(), share(n, total))));
    tables.push(mapping_table());
    Ok(Evidence { figures, tables })
}

/// Application versions with open findings, most devices first: what to
/// upgrade, and to which version.
fn outdated_table(findings: &[OpenFinding], limit: usize) -> Table {
    type Versions<'a> = BTreeMap<
        (&'a str, &'a str),
        (
            std::collections::BTreeSet<&'a str>,
            std::collections::BTreeSet<&'a str>,
            Option<&'a str>,
        ),
    >;
    let mut by_version: Versions<'_> = BTreeMap::new();
    for f in findings {
        let entry = by_version
            .entry((&f.application_name, &f.version))
            .or_default();
        entry.0.insert(&f.device_name);
        entry.1.insert(&f.cve_id);
        if let Some(fix) = f.fix_version.as_deref() {
            // The highest fix version fixes every CVE listed.
            let newer = entry.2.is_none_or(|kept| {
                cairn_inventory::version::compare_versions(fix, kept) == std::cmp::Ordering::Greater
            });
            if newer {
                entry.2 = Some(fix);
            }
        }
    }
    let mut rows: Vec<_> = by_version.into_iter().collect();
    rows.sort_by(|a, b| b.1 .0.len().cmp(&a.1 .0.len()).then(a.0.cmp(&b.0)));
    Table {
        name: "Outdated software".into(),
        columns: vec![
            "Application",
            "Version",
            "Devices",
            "Open CVEs",
            "Upgrade to",
        ],
        rows: rows
            .into_iter()
            .take(limit)
            .map(|((app, version), (devices, cves, fix))| {
                vec![
                    text(app),
                    text(version),
                    Cell::Integer(devices.len() as i64),
                    Cell::Integer(cves.len() as i64),
                    optional(fix),
                ]
            })
            .collect(),
        shown: Shown::Everywhere,
    }
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
    if let Some(days) = scope.period_days {
        parts.push(format!("a period of {days} days"));
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

/// Where an open finding stands against its SLA, as the SLA routes show
/// it: the device's tier, the due date and the state.
struct Due {
    tier: &'static str,
    due_at: Option<i64>,
    state: Option<&'static str>,
}

type FindingKey = (String, String, String, String);

/// The SLA standing of each of the tenant's open findings at `now`, by
/// device, application, version and CVE (one computation with the SLA
/// routes: `cairn_workflow::sla::tracked_with`).
async fn due_dates(
    db: &Db,
    tenant: &TenantId,
    now: i64,
) -> Result<std::collections::HashMap<FindingKey, Due>, ApiError> {
    let applied = cairn_workflow::sla::applied(db, tenant).await?;
    let tracked =
        cairn_workflow::sla::tracked_with(db, tenant, &applied.policy, now, i64::MAX).await?;
    Ok(tracked
        .into_iter()
        .map(|f| {
            let due = Due {
                tier: f.tier.as_str(),
                due_at: f.due_at,
                state: f.sla_state.map(|s| s.as_str()),
            };
            (
                (f.device_name, f.application_name, f.version, f.cve_id),
                due,
            )
        })
        .collect())
}

/// The SLA's figures for a summary or a review: open findings by state
/// now, fixes on time over the last `days` (at most 366), assets by tier.
async fn sla_figures(
    db: &Db,
    tenant: &TenantId,
    now: i64,
    days: i64,
) -> Result<Vec<(String, String)>, ApiError> {
    let days = days.min(cairn_workflow::sla::kept::MAX_PERIOD_DAYS);
    let standing = cairn_workflow::sla::standing_of(db, tenant, now, days).await?;
    let mut figures = vec![
        (
            "Open findings overdue".to_string(),
            standing.overdue.to_string(),
        ),
        (
            "Open findings due soon".to_string(),
            standing.due_soon.to_string(),
        ),
        (
            "Open findings within their SLA".to_string(),
            standing.within.to_string(),
        ),
        (
            "Open findings excepted".to_string(),
            standing.excepted.to_string(),
        ),
        (
            format!("Fixed by their due date in the last {days} days"),
            match standing.compliance_percent {
                Some(percent) => format!(
                    "{} of {} ({percent:.1} %)",
                    standing.fixed_on_time, standing.fixed
                ),
                None => "nothing with a due date fixed".to_string(),
            },
        ),
    ];
    for (tier, assets) in cairn_inventory::tiers::counts(db, tenant).await? {
        figures.push((
            format!("Assets of tier {}", tier.as_str()),
            assets.to_string(),
        ));
    }
    Ok(figures)
}

fn findings_table(
    findings: &[OpenFinding],
    due: &std::collections::HashMap<FindingKey, Due>,
) -> Table {
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
            "Tier",
            "Due",
            "SLA state",
        ],
        rows: findings
            .iter()
            .map(|f| {
                let key = (
                    f.device_name.to_string(),
                    f.application_name.to_string(),
                    f.version.to_string(),
                    f.cve_id.to_string(),
                );
                let due = due.get(&key);
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
                    // Added last, so spreadsheets built on the earlier
                    // columns keep reading them where they were.
                    text(due.map_or("standard", |d| d.tier)),
                    optional(
                        due.and_then(|d| d.due_at)
                            .map(|at| to_rfc3339(at)[..10].to_string()),
                    ),
                    optional(due.and_then(|d| d.state)),
                ]
            })
            .collect(),
        shown: Shown::SpreadsheetsOnly,
    }
}

/// Every exception with who asked, who decided, when and why.
fn exception_table(exceptions: &[cairn_workflow::sla::exceptions::ExceptionView]) -> Table {
    let day = |at: i64| text(to_rfc3339(at)[..10].to_string());
    Table {
        name: "Exceptions".into(),
        columns: vec![
            "CVE",
            "Devices",
            "Status",
            "Reason",
            "Compensating control",
            "Requested by",
            "Requested",
            "Decided by",
            "Decided",
            "Decision comment",
            "Expires",
        ],
        rows: exceptions
            .iter()
            .map(|e| {
                vec![
                    text(e.cve_id.clone()),
                    text(if e.devices.is_empty() {
                        "every device".to_string()
                    } else {
                        e.devices.join(", ")
                    }),
                    text(e.status.clone()),
                    text(e.reason.clone()),
                    optional(e.compensating_control.clone()),
                    text(e.requested_by.clone()),
                    day(e.requested_at),
                    optional(e.decided_by.clone()),
                    e.decided_at.map_or(Cell::Empty, day),
                    optional(e.decision_comment.clone()),
                    day(e.expires_at),
                ]
            })
            .collect(),
        shown: Shown::SpreadsheetsOnly,
    }
}

/// The register on a page: the same facts in fewer, wider columns.
fn exception_digest(exceptions: &[cairn_workflow::sla::exceptions::ExceptionView]) -> Table {
    let day = |at: i64| to_rfc3339(at)[..10].to_string();
    Table {
        name: "Exceptions".into(),
        columns: vec![
            "CVE on devices",
            "Status",
            "Why",
            "Requested",
            "Decided",
            "Expires",
        ],
        rows: exceptions
            .iter()
            .map(|e| {
                let devices = if e.devices.is_empty() {
                    "every device".to_string()
                } else {
                    e.devices.join(", ")
                };
                let why = match &e.compensating_control {
                    Some(control) => format!("{}; control: {control}", e.reason),
                    None => e.reason.clone(),
                };
                let decided = match (&e.decided_by, e.decided_at) {
                    (Some(by), Some(at)) => {
                        let comment = e.decision_comment.as_deref().unwrap_or_default();
                        format!("{by} {} {comment}", day(at)).trim_end().to_string()
                    }
                    _ => String::new(),
                };
                vec![
                    text(format!("{} on {devices}", e.cve_id)),
                    text(e.status.clone()),
                    text(why),
                    text(format!("{} {}", e.requested_by, day(e.requested_at))),
                    text(decided),
                    text(day(e.expires_at)),
                ]
            })
            .collect(),
        shown: Shown::DocumentOnly,
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
