//! One rule against the tenant's findings as they are now: what starts to
//! match (fires), what stops, what a finding new since the last run was
//! skipped for, the tickets to open, note and close and the messages to
//! send. [`plan`] decides without touching the database, so a dry run and
//! a real run decide alike; [`super::storage::apply`] writes a plan.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::rules::{Action, DigestEvery, StoredRule, Trigger, WebhookFormat};
use crate::sla::TrackedFinding;

/// Findings named in one message at most; the rest are counted.
pub const LISTED_IN_MESSAGE: usize = 200;
/// Skips logged per run at most; the rest are counted in one line.
const SKIPS_LOGGED: usize = 200;

/// A finding's key: device, application, version, CVE.
pub type MatchKey = (String, String, String, String);

pub fn key_of(f: &TrackedFinding) -> MatchKey {
    (
        f.device_name.clone(),
        f.application_name.clone(),
        f.version.clone(),
        f.cve_id.clone(),
    )
}

/// The ticket a rule keeps for a CVE, as stored.
#[derive(Debug, Clone)]
pub struct KeptTicket {
    pub ticket_id: Option<String>,
    pub devices: BTreeSet<String>,
    pub open: bool,
}

/// What a rule knows before a run.
pub struct Memory {
    /// What it matched after its last run, and whether it fired for each.
    pub matches: HashMap<MatchKey, bool>,
    pub tickets: HashMap<String, KeptTicket>,
}

/// A finding as the log and messages name it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AutomationFinding)]
pub struct Named {
    pub device_name: String,
    pub application_name: String,
    pub version: String,
    pub cve_id: String,
    pub severity: Option<String>,
    pub kev: bool,
    pub epss_score: Option<f64>,
    pub tier: String,
    pub sla_state: Option<String>,
    /// RFC 3339.
    pub due_at: Option<String>,
}

impl Named {
    fn of(f: &TrackedFinding) -> Named {
        Named {
            device_name: f.device_name.clone(),
            application_name: f.application_name.clone(),
            version: f.version.clone(),
            cve_id: f.cve_id.clone(),
            severity: f.severity.clone(),
            kev: f.kev,
            epss_score: f.epss_score,
            tier: f.tier.as_str().to_string(),
            sla_state: f.sla_state.map(|s| s.as_str().to_string()),
            due_at: f.due_at.map(cairn_core::db::to_rfc3339),
        }
    }
}

/// A finding new since the rule's last run that it did not act on.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AutomationSkip)]
pub struct Skip {
    pub cve_id: String,
    pub device_name: String,
    /// The condition that was false, as a sentence.
    pub reason: String,
}

/// A delivery a run queues.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AutomationPlannedDelivery)]
pub struct Planned {
    /// `ticket_create`, `ticket_update`, `ticket_close`, `email` or
    /// `webhook`.
    pub action: String,
    /// The CVE (tickets), the addresses (e-mail) or the URL (webhook).
    pub target: String,
    /// What is sent, as the delivery keeps it.
    pub payload: Value,
}

/// What one run of a rule decides.
#[derive(Debug, Default, Clone, Serialize, ToSchema)]
#[schema(as = AutomationPlan)]
pub struct Plan {
    /// Findings that started to match and that the rule acts on.
    pub fired: Vec<Named>,
    /// Findings that matched at the rule's first run and are left alone
    /// (the rule does not include existing findings).
    pub baseline: usize,
    /// Findings that stopped matching (fixed, excepted, or changed).
    pub left: usize,
    pub skipped: Vec<Skip>,
    /// Skips not listed in `skipped`.
    pub skipped_more: usize,
    pub deliveries: Vec<Planned>,
    /// Why the run did nothing although findings fired (a limit).
    pub stopped: Option<String>,
    /// Set when a digest went out for this period.
    pub digest_period: Option<String>,
    #[serde(skip)]
    pub seen_until: Option<i64>,
    #[serde(skip)]
    pub matches_after: Vec<(MatchKey, bool)>,
    #[serde(skip)]
    pub tickets_after: BTreeMap<String, (BTreeSet<String>, bool)>,
}

/// The period a digest sent at `now` covers: the UTC day or ISO week.
pub fn period(every: DigestEvery, now: i64) -> String {
    let at = chrono::DateTime::from_timestamp_millis(now).unwrap_or_default();
    match every {
        DigestEvery::Daily => at.format("%Y-%m-%d").to_string(),
        DigestEvery::Weekly => at.format("%G-W%V").to_string(),
    }
}

/// Decides one run of `rule` over the tenant's open findings at `now`.
/// `in_devices` answers the rule's device query (true without one).
pub fn plan(
    rule: &StoredRule,
    findings: &[TrackedFinding],
    memory: &Memory,
    in_devices: &dyn Fn(&str) -> bool,
    now: i64,
) -> Plan {
    let input = &rule.input;
    let first_run = rule.evaluated_at.is_none();
    let since = rule.seen_until.unwrap_or(i64::MAX);
    let mut out = Plan {
        seen_until: findings.iter().map(|f| f.first_seen).max().or(rule.seen_until),
        ..Plan::default()
    };
    let mut matching: Vec<&TrackedFinding> = vec![];
    let mut skips: Vec<Skip> = vec![];
    for f in findings {
        if f.status != "open" {
            continue;
        }
        let refusal = if f.exception_id.is_some() {
            Some("an approved exception sets it aside".to_string())
        } else {
            input
                .trigger
                .refuses(f)
                .or_else(|| input.conditions.refuses(f, now, in_devices))
        };
        match refusal {
            None => matching.push(f),
            // Only findings new since the last run are worth a line: the
            // rest were logged (or baselined) before.
            Some(reason) if f.first_seen > since && !first_run => skips.push(Skip {
                cve_id: f.cve_id.clone(),
                device_name: f.device_name.clone(),
                reason,
            }),
            Some(_) => {}
        }
    }
    out.skipped_more = skips.len().saturating_sub(SKIPS_LOGGED);
    skips.truncate(SKIPS_LOGGED);
    out.skipped = skips;

    if let Trigger::Digest { every } = input.trigger {
        let period = period(every, now);
        if rule.digest_period.as_deref() != Some(period.as_str()) && !matching.is_empty() {
            out.fired = matching.iter().map(|f| Named::of(f)).collect();
            out.deliveries = messages(rule, &out.fired, Some(&period));
            out.digest_period = Some(period);
        }
        return out;
    }

    let baseline_run = first_run && !input.include_existing;
    let mut fired_now: Vec<&TrackedFinding> = vec![];
    let mut after: Vec<(MatchKey, bool)> = Vec::with_capacity(matching.len());
    let mut seen: HashSet<MatchKey> = HashSet::with_capacity(matching.len());
    for f in &matching {
        let key = key_of(f);
        let fired = match memory.matches.get(&key) {
            Some(fired) => *fired,
            None if baseline_run => {
                out.baseline += 1;
                false
            }
            None => {
                fired_now.push(f);
                true
            }
        };
        seen.insert(key.clone());
        after.push((key, fired));
    }
    out.left = memory.matches.keys().filter(|k| !seen.contains(*k)).count();

    // Tickets: each CVE's devices among the findings the rule fired for.
    let ticket = input.actions.iter().find_map(|a| match a {
        Action::Ticket { .. } => Some(a),
        _ => None,
    });
    let mut tickets_after: BTreeMap<String, (BTreeSet<String>, bool)> = BTreeMap::new();
    let mut ticket_deliveries: Vec<Planned> = vec![];
    let mut opens = 0usize;
    if let Some(action) = ticket {
        let mut wanted: BTreeMap<String, (BTreeSet<String>, Vec<&TrackedFinding>)> =
            BTreeMap::new();
        for (f, (_, fired)) in matching.iter().zip(&after) {
            if *fired {
                let entry = wanted.entry(f.cve_id.clone()).or_default();
                entry.0.insert(f.device_name.clone());
                entry.1.push(f);
            }
        }
        for (cve, (devices, findings)) in &wanted {
            match memory.tickets.get(cve) {
                Some(kept) if kept.open => {
                    let added: Vec<&String> = devices.difference(&kept.devices).collect();
                    if !added.is_empty() {
                        ticket_deliveries.push(ticket_note(action, cve, &added, devices));
                    }
                }
                _ => {
                    opens += 1;
                    ticket_deliveries.push(ticket_open(action, cve, findings, devices));
                }
            }
            tickets_after.insert(cve.clone(), (devices.clone(), true));
        }
        for (cve, kept) in &memory.tickets {
            if kept.open && !wanted.contains_key(cve) {
                ticket_deliveries.push(ticket_close(action, cve, &kept.devices));
                tickets_after.insert(cve.clone(), (kept.devices.clone(), false));
            }
        }
    }
    if opens > input.max_tickets_per_run as usize {
        out.stopped = Some(format!(
            "this run would open {opens} tickets, more than the rule's limit of {}; nothing was \
             opened or sent. Raise max_tickets_per_run or narrow the conditions",
            input.max_tickets_per_run
        ));
        // Nothing is remembered either: the same findings fire once the
        // limit allows.
        out.fired = fired_now.iter().map(|f| Named::of(f)).collect();
        out.matches_after = memory.matches.iter().map(|(k, f)| (k.clone(), *f)).collect();
        out.tickets_after = memory
            .tickets
            .iter()
            .map(|(c, t)| (c.clone(), (t.devices.clone(), t.open)))
            .collect();
        return out;
    }
    out.fired = fired_now.iter().map(|f| Named::of(f)).collect();
    out.deliveries = ticket_deliveries;
    if !out.fired.is_empty() {
        let messages = messages(rule, &out.fired, None);
        out.deliveries.extend(messages);
    }
    out.matches_after = after;
    out.tickets_after = tickets_after;
    out
}

fn ticket_fields(action: &Action) -> Value {
    match action {
        Action::Ticket {
            company_id,
            board_id,
            priority_id,
            close_status_id,
        } => json!({
            "company_id": company_id,
            "board_id": board_id,
            "priority_id": priority_id,
            "close_status_id": close_status_id,
        }),
        _ => Value::Null,
    }
}

/// A ticket summary within ConnectWise's 100 characters, starting with
/// the CVE id (what a retried creation looks the ticket up by).
pub fn ticket_summary(cve: &str, findings: &[&TrackedFinding], devices: usize) -> String {
    let application = findings
        .first()
        .map(|f| f.application_name.as_str())
        .unwrap_or("software");
    let plural = if devices == 1 { "" } else { "s" };
    let text = format!("{cve}: {application} on {devices} device{plural}");
    text.chars().take(100).collect()
}

fn ticket_open(
    action: &Action,
    cve: &str,
    findings: &[&TrackedFinding],
    devices: &BTreeSet<String>,
) -> Planned {
    let mut lines = vec![format!(
        "Cairn automation: {cve} is open on {} device(s).",
        devices.len()
    )];
    if let Some(f) = findings.first() {
        lines.push(format!(
            "Severity: {}. KEV: {}. EPSS: {}.",
            f.severity.as_deref().unwrap_or("unknown"),
            if f.kev { "yes" } else { "no" },
            f.epss_score.map_or("none".to_string(), |s| format!("{s:.3}")),
        ));
    }
    lines.push(String::new());
    for f in findings.iter().take(LISTED_IN_MESSAGE) {
        let due = f
            .due_at
            .map(|d| format!(", due {}", cairn_core::db::to_rfc3339(d)))
            .unwrap_or_default();
        lines.push(format!(
            "- {}: {} {}{due}",
            f.device_name, f.application_name, f.version
        ));
    }
    let mut payload = ticket_fields(action);
    payload["cve_id"] = json!(cve);
    payload["summary"] = json!(ticket_summary(cve, findings, devices.len()));
    payload["description"] = json!(lines.join("\n"));
    payload["devices"] = json!(devices);
    Planned {
        action: "ticket_create".into(),
        target: cve.into(),
        payload,
    }
}

fn ticket_note(action: &Action, cve: &str, added: &[&String], devices: &BTreeSet<String>) -> Planned {
    let names: Vec<&str> = added.iter().map(|s| s.as_str()).collect();
    let mut payload = ticket_fields(action);
    payload["cve_id"] = json!(cve);
    payload["text"] = json!(format!(
        "Cairn automation: {} more device(s) now have {cve}: {}. Affected now: {}.",
        names.len(),
        names.join(", "),
        devices.len()
    ));
    payload["devices"] = json!(devices);
    Planned {
        action: "ticket_update".into(),
        target: cve.into(),
        payload,
    }
}

fn ticket_close(action: &Action, cve: &str, devices: &BTreeSet<String>) -> Planned {
    let mut payload = ticket_fields(action);
    payload["cve_id"] = json!(cve);
    payload["text"] = json!(format!(
        "Cairn automation: every device that had {cve} is fixed or excepted ({} device(s)).",
        devices.len()
    ));
    Planned {
        action: "ticket_close".into(),
        target: cve.into(),
        payload,
    }
}

/// The e-mails and webhooks of one run: one each, listing `fired`.
fn messages(rule: &StoredRule, fired: &[Named], period: Option<&str>) -> Vec<Planned> {
    let listed: Vec<&Named> = fired.iter().take(LISTED_IN_MESSAGE).collect();
    let more = fired.len().saturating_sub(listed.len());
    let trigger = rule.input.trigger.as_str();
    let headline = match period {
        Some(period) => format!(
            "{}: {} open finding(s) match, digest for {period}",
            rule.input.name,
            fired.len()
        ),
        None => format!("{}: {} finding(s) fired ({trigger})", rule.input.name, fired.len()),
    };
    let lines: Vec<String> = listed
        .iter()
        .map(|f| {
            format!(
                "{} on {}: {} {} (severity {}, KEV {}, tier {})",
                f.cve_id,
                f.device_name,
                f.application_name,
                f.version,
                f.severity.as_deref().unwrap_or("unknown"),
                if f.kev { "yes" } else { "no" },
                f.tier
            )
        })
        .collect();
    let mut text = lines.join("\n");
    if more > 0 {
        text.push_str(&format!("\n... and {more} more"));
    }
    rule.input
        .actions
        .iter()
        .filter_map(|action| match action {
            Action::Ticket { .. } => None,
            Action::Email { to } => Some(Planned {
                action: "email".into(),
                target: to.join(", "),
                payload: json!({
                    "to": to,
                    "subject": format!("[Cairn] {headline}"),
                    "body": format!("{headline}\n\n{text}\n"),
                }),
            }),
            Action::Webhook { url, format, .. } => Some(Planned {
                action: "webhook".into(),
                target: url.clone(),
                payload: json!({
                    "format": format,
                    "body": webhook_body(rule, *format, &headline, &text, &listed, more, period),
                }),
            }),
        })
        .collect()
}

/// The version of Cairn's own webhook body.
pub const WEBHOOK_SCHEMA: &str = "cairn.automation.v1";

fn webhook_body(
    rule: &StoredRule,
    format: WebhookFormat,
    headline: &str,
    text: &str,
    listed: &[&Named],
    more: usize,
    period: Option<&str>,
) -> Value {
    match format {
        WebhookFormat::Json => json!({
            "schema": WEBHOOK_SCHEMA,
            "tenant_id": rule.tenant_id,
            "rule": {"id": rule.id, "name": rule.input.name, "trigger": rule.input.trigger.as_str()},
            "digest_period": period,
            "findings": listed,
            "more": more,
        }),
        WebhookFormat::Slack => json!({"text": format!("*{headline}*\n{text}")}),
        WebhookFormat::Teams => json!({
            "type": "message",
            "attachments": [{
                "contentType": "application/vnd.microsoft.card.adaptive",
                "contentUrl": null,
                "content": {
                    "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                    "type": "AdaptiveCard",
                    "version": "1.4",
                    "body": [
                        {"type": "TextBlock", "text": headline, "weight": "Bolder", "wrap": true},
                        {"type": "TextBlock", "text": text, "wrap": true}
                    ]
                }
            }]
        }),
    }
}
