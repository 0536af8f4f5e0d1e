//! One rule against the tenant's findings as they are now: what starts to
//! match (fires), what stops, what a finding new since the last run was
//! skipped for, the tickets to open, note and close and the messages to
//! send. [`plan`] decides without touching the database, so a dry run and
//! a real run decide alike; [`super::storage::apply`] writes a plan.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::rules::{Action, DigestEvery, RunState, StoredRule, Trigger, WebhookFormat};
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
    /// The keys of what it fired on once: an event trigger's events, or
    /// the remediation verdicts its tickets were told of.
    pub noted: HashSet<String>,
}

/// A remediation item's verdict, as a rule's ticket for one of its CVEs is
/// told of it.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// What is noted once: plan, device, application, version and state.
    pub key: String,
    pub cve_ids: Vec<String>,
    pub device_name: String,
    /// The verdict as a line of the note.
    pub line: String,
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

/// Something other than a finding a rule fires on once: an exception in
/// a state, an integration's failing sync, a failed upload.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = AutomationEvent)]
pub struct Event {
    /// What fires once, e.g. `exception:<id>:approved`, `sync:rmm`,
    /// `upload:<id>`.
    pub key: String,
    /// The trigger's kind (`exception_requested`, `sync_failed`, ...).
    pub kind: String,
    /// The event as a sentence.
    pub summary: String,
    pub cve_id: Option<String>,
}

/// Decides one run of an event trigger's `rule`: the events not seen
/// before fire (on its first run they are its baseline, unless it
/// includes existing ones).
pub fn plan_events(
    rule: &StoredRule,
    over: Over<'_>,
    events: &[Event],
    seen: &std::collections::HashSet<String>,
) -> Plan {
    let Over { tenant, state, .. } = over;
    let fresh: Vec<&Event> = events.iter().filter(|e| !seen.contains(&e.key)).collect();
    let mut out = Plan {
        seen_until: state.seen_until,
        left: seen
            .iter()
            .filter(|k| !events.iter().any(|e| &e.key == *k))
            .count(),
        events_after: Some(events.iter().map(|e| e.key.clone()).collect()),
        ..Plan::default()
    };
    if state.version.is_none() && !rule.input.include_existing {
        out.baseline = fresh.len();
        return out;
    }
    out.events = fresh.into_iter().cloned().collect();
    if !out.events.is_empty() {
        let headline = format!(
            "{}: {} event(s) ({})",
            rule.input.name,
            out.events.len(),
            rule.input.trigger.as_str()
        );
        let listed: Vec<&Event> = out.events.iter().take(LISTED_IN_MESSAGE).collect();
        let message = Message {
            lines: listed.iter().map(|e| e.summary.clone()).collect(),
            items: ("events", json!(listed)),
            more: out.events.len() - listed.len(),
            headline,
            period: None,
        };
        out.deliveries = messages(rule, tenant, &message);
    }
    out
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
    /// For an event trigger: the events that fired.
    pub events: Vec<Event>,
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
    /// For an event trigger: every event's key as it stands now.
    #[serde(skip)]
    pub events_after: Option<Vec<String>>,
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

/// What a run is over: the tenant whose open findings are read, and where
/// the rule's runs over it stand.
pub struct Over<'a> {
    pub tenant: &'a str,
    pub state: &'a RunState,
    /// The tenant's recent remediation verdicts (for a rule with tickets).
    pub verdicts: &'a [Verdict],
}

/// Decides one run of `rule` over `over.tenant`'s open findings at `now`.
/// `in_devices` answers the rule's device query (true without one).
pub fn plan(
    rule: &StoredRule,
    over: Over<'_>,
    findings: &[TrackedFinding],
    memory: &Memory,
    in_devices: &dyn Fn(&str) -> bool,
    now: i64,
) -> Plan {
    let input = &rule.input;
    let Over {
        tenant,
        state,
        verdicts,
    } = over;
    let first_run = state.version.is_none();
    let since = state.seen_until.unwrap_or(i64::MAX);
    let mut out = Plan {
        seen_until: findings
            .iter()
            .map(|f| f.first_seen)
            .max()
            .or(state.seen_until),
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
        if state.digest_period.as_deref() != Some(period.as_str()) && !matching.is_empty() {
            out.fired = matching.iter().map(|f| Named::of(f)).collect();
            let message = findings_message(rule, &out.fired, Some(&period));
            out.deliveries = messages(rule, tenant, &message);
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
    let ticket = input
        .actions
        .iter()
        .find(|a| matches!(a, Action::Ticket { .. }));
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
                        ticket_deliveries.push(ticket_note(action, tenant, cve, &added, devices));
                    }
                }
                _ => {
                    opens += 1;
                    ticket_deliveries.push(ticket_open(action, tenant, cve, findings, devices));
                }
            }
            tickets_after.insert(cve.clone(), (devices.clone(), true));
        }
        for (cve, kept) in &memory.tickets {
            if kept.open && !wanted.contains_key(cve) {
                ticket_deliveries.push(ticket_close(action, tenant, cve, &kept.devices));
                tickets_after.insert(cve.clone(), (kept.devices.clone(), false));
            }
        }
        // Before the closings: a ticket closed by this run's fixes tells
        // how they were made first.
        let (notes, noted) = verdict_notes(action, tenant, memory, verdicts, in_devices);
        ticket_deliveries.splice(0..0, notes);
        out.events_after = Some(noted);
    }
    if opens > input.max_tickets_per_run as usize {
        out.stopped = Some(format!(
            "this run would open {opens} tickets, more than the rule's limit of {}; nothing was \
             opened or sent. Raise max_tickets_per_run or narrow the conditions",
            input.max_tickets_per_run
        ));
        // Nothing is remembered either: the same findings fire (and the
        // same verdicts are noted) once the limit allows.
        out.events_after = None;
        out.fired = fired_now.iter().map(|f| Named::of(f)).collect();
        out.matches_after = memory
            .matches
            .iter()
            .map(|(k, f)| (k.clone(), *f))
            .collect();
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
        let message = findings_message(rule, &out.fired, None);
        let messages = messages(rule, tenant, &message);
        out.deliveries.extend(messages);
    }
    out.matches_after = after;
    out.tickets_after = tickets_after;
    out
}

fn ticket_fields(action: &Action, tenant: &str) -> Value {
    match action {
        Action::Ticket {
            board_id,
            priority_id,
            close_status_id,
            ..
        } => json!({
            "company_id": action.company_for(tenant),
            "board_id": board_id,
            "priority_id": priority_id,
            "close_status_id": close_status_id,
        }),
        _ => Value::Null,
    }
}

/// A ticket summary within 100 characters (what a PSA takes), starting with
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
    tenant: &str,
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
            f.epss_score
                .map_or("none".to_string(), |s| format!("{s:.3}")),
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
    let mut payload = ticket_fields(action, tenant);
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

fn ticket_note(
    action: &Action,
    tenant: &str,
    cve: &str,
    added: &[&String],
    devices: &BTreeSet<String>,
) -> Planned {
    let names: Vec<&str> = added.iter().map(|s| s.as_str()).collect();
    let mut payload = ticket_fields(action, tenant);
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

/// A note on each ticket the rule kept open for a verdict's CVE, of the
/// verdicts on devices the rule covers that it was not told of yet;
/// answers the notes and the verdicts told of, before or now (a verdict
/// no longer recent is forgotten, and is not among `verdicts` again
/// either). A fixed device may have left the ticket's devices already (a
/// run between the sync and the verdict), so the rule's device query
/// decides, not the ticket's current devices.
fn verdict_notes(
    action: &Action,
    tenant: &str,
    memory: &Memory,
    verdicts: &[Verdict],
    in_devices: &dyn Fn(&str) -> bool,
) -> (Vec<Planned>, Vec<String>) {
    let mut lines: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut noted = vec![];
    for verdict in verdicts {
        if memory.noted.contains(&verdict.key) {
            noted.push(verdict.key.clone());
            continue;
        }
        let mut told = false;
        for cve in &verdict.cve_ids {
            let Some(kept) = memory.tickets.get(cve) else {
                continue;
            };
            if kept.open && in_devices(&verdict.device_name) {
                lines.entry(cve).or_default().push(&verdict.line);
                told = true;
            }
        }
        if told {
            noted.push(verdict.key.clone());
        }
    }
    let notes = lines
        .into_iter()
        .map(|(cve, lines)| {
            let mut payload = ticket_fields(action, tenant);
            payload["cve_id"] = json!(cve);
            payload["text"] = json!(format!("Cairn remediation:\n{}", lines.join("\n")));
            Planned {
                action: "ticket_update".into(),
                target: cve.into(),
                payload,
            }
        })
        .collect();
    (notes, noted)
}

fn ticket_close(action: &Action, tenant: &str, cve: &str, devices: &BTreeSet<String>) -> Planned {
    let mut payload = ticket_fields(action, tenant);
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

/// What one run's messages say: a headline, a line per item (at most
/// [`LISTED_IN_MESSAGE`]), the items as the webhook body names them, and
/// how many more there were.
struct Message {
    headline: String,
    lines: Vec<String>,
    items: (&'static str, Value),
    more: usize,
    period: Option<String>,
}

/// The message of a run that fired findings (a digest, with `period`).
fn findings_message(rule: &StoredRule, fired: &[Named], period: Option<&str>) -> Message {
    let listed: Vec<&Named> = fired.iter().take(LISTED_IN_MESSAGE).collect();
    let trigger = rule.input.trigger.as_str();
    let headline = match period {
        Some(period) => format!(
            "{}: {} open finding(s) match, digest for {period}",
            rule.input.name,
            fired.len()
        ),
        None => format!(
            "{}: {} finding(s) fired ({trigger})",
            rule.input.name,
            fired.len()
        ),
    };
    let lines = listed
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
    Message {
        headline,
        lines,
        items: ("findings", json!(listed)),
        more: fired.len() - listed.len(),
        period: period.map(String::from),
    }
}

/// The e-mails and webhooks of one run: one each.
fn messages(rule: &StoredRule, tenant: &str, message: &Message) -> Vec<Planned> {
    let headline = &message.headline;
    let mut text = message.lines.join("\n");
    if message.more > 0 {
        text.push_str(&format!("\n... and {} more", message.more));
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
                    "body": webhook_body(rule, tenant, *format, message, &text),
                }),
            }),
        })
        .collect()
}

/// The version of Cairn's own webhook body.
pub const WEBHOOK_SCHEMA: &str = "cairn.automation.v1";

fn webhook_body(
    rule: &StoredRule,
    tenant: &str,
    format: WebhookFormat,
    message: &Message,
    text: &str,
) -> Value {
    let headline = &message.headline;
    match format {
        WebhookFormat::Json => {
            let mut body = json!({
                "schema": WEBHOOK_SCHEMA,
                "tenant_id": tenant,
                "rule": {"id": rule.id, "name": rule.input.name, "trigger": rule.input.trigger.as_str()},
                "digest_period": message.period,
                "more": message.more,
            });
            body[message.items.0] = message.items.1.clone();
            body
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::automation::rules::{Conditions, RuleInput};
    use crate::sla::policy::{SlaState, Tier};

    const NOW: i64 = 1_800_000_000_000;
    const CVE: &str = "CVE-2023-2033";

    fn finding(device: &str, cve: &str, kev: bool, first_seen: i64) -> TrackedFinding {
        TrackedFinding {
            device_name: device.into(),
            application_name: "Google Chrome".into(),
            version: "112.0.5615.49".into(),
            cve_id: cve.into(),
            status: "open".into(),
            severity: Some("high".into()),
            kev,
            epss_score: Some(0.4),
            cvss_score: Some(8.8),
            vendor: Some("google".into()),
            product: Some("chrome".into()),
            fix_version: None,
            tier: Tier::Standard,
            first_seen,
            fixed_at: None,
            due_at: Some(NOW + 86_400_000),
            sla_state: Some(SlaState::DueSoon),
            days_left: Some(1),
            fixed_on_time: None,
            exception_id: None,
        }
    }

    fn rule(trigger: Trigger, actions: Vec<Action>, include_existing: bool) -> StoredRule {
        StoredRule {
            id: "r1".into(),
            tenant_id: "t1".into(),
            input: RuleInput {
                name: "KEV".into(),
                enabled: true,
                trigger,
                conditions: Conditions::default(),
                actions,
                include_existing,
                max_tickets_per_run: 2,
                max_actions_per_hour: 60,
                customers: None,
            },
            owner_email: "owner@msp.example".into(),
            created_at: NOW - 1000,
            updated_at: NOW - 1000,
            version: 1,
        }
    }

    fn ticket() -> Action {
        Action::Ticket {
            company_id: 2,
            board_id: None,
            priority_id: None,
            close_status_id: Some(5),
            companies: None,
        }
    }

    fn email() -> Action {
        Action::Email {
            to: vec!["soc@msp.example".into()],
        }
    }

    fn empty() -> Memory {
        Memory {
            matches: HashMap::new(),
            tickets: HashMap::new(),
            noted: HashSet::new(),
        }
    }

    /// The memory a run leaves (as `storage::apply` writes it).
    fn after(plan: &Plan) -> Memory {
        Memory {
            matches: plan.matches_after.iter().cloned().collect(),
            tickets: plan
                .tickets_after
                .iter()
                .map(|(cve, (devices, open))| {
                    (
                        cve.clone(),
                        KeptTicket {
                            ticket_id: Some("9".into()),
                            devices: devices.clone(),
                            open: *open,
                        },
                    )
                })
                .collect(),
            noted: plan.events_after.iter().flatten().cloned().collect(),
        }
    }

    /// Where the rule stands after `plan` was written over `state`.
    fn ran(state: &RunState, plan: &Plan) -> RunState {
        RunState {
            version: Some(state.version.unwrap_or(0) + 1),
            evaluated_at: Some(NOW),
            seen_until: plan.seen_until,
            digest_period: plan.digest_period.clone().or(state.digest_period.clone()),
        }
    }

    fn over(state: &RunState) -> Over<'_> {
        Over {
            tenant: "t1",
            state,
            verdicts: &[],
        }
    }

    fn never() -> RunState {
        RunState::default()
    }

    fn actions(plan: &Plan) -> Vec<(&str, &str)> {
        plan.deliveries
            .iter()
            .map(|d| (d.action.as_str(), d.target.as_str()))
            .collect()
    }

    const ALL: &dyn Fn(&str) -> bool = &|_| true;

    #[test]
    fn a_first_run_takes_what_matches_as_its_baseline_unless_told() {
        let findings = [finding("WEB01", CVE, true, NOW - 5000)];
        for (include_existing, fired, baseline, deliveries) in [
            (false, 0, 1, vec![]),
            (
                true,
                1,
                0,
                vec![("ticket_create", CVE), ("email", "soc@msp.example")],
            ),
        ] {
            let rule = rule(Trigger::KevAdded, vec![ticket(), email()], include_existing);
            let plan = plan(&rule, over(&never()), &findings, &empty(), ALL, NOW);
            assert_eq!(
                plan.fired.len(),
                fired,
                "include_existing {include_existing}"
            );
            assert_eq!(plan.baseline, baseline);
            assert_eq!(actions(&plan), deliveries);
        }
    }

    #[test]
    fn tickets_open_grow_close_and_reopen_with_the_devices() {
        let rule = rule(Trigger::KevAdded, vec![ticket(), email()], false);
        let plan0 = plan(&rule, over(&never()), &[], &empty(), ALL, NOW);
        let mut state = ran(&never(), &plan0);
        let web = finding("WEB01", CVE, true, NOW);
        let laptop = finding("LAPTOP-9", CVE, true, NOW);
        let desk = finding("DESK-3", CVE, true, NOW + 1);
        type Step<'a> = (Vec<&'a TrackedFinding>, Vec<(&'a str, &'a str)>);
        let steps: [Step; 5] = [
            (
                vec![&web, &laptop],
                vec![("ticket_create", CVE), ("email", "soc@msp.example")],
            ),
            // The same again: nothing.
            (vec![&web, &laptop], vec![]),
            (
                vec![&web, &laptop, &desk],
                vec![("ticket_update", CVE), ("email", "soc@msp.example")],
            ),
            // Fixed everywhere: closed; no message (nothing fired).
            (vec![], vec![("ticket_close", CVE)]),
            (
                vec![&web],
                vec![("ticket_create", CVE), ("email", "soc@msp.example")],
            ),
        ];
        let mut memory = empty();
        for (i, (open, expected)) in steps.into_iter().enumerate() {
            let open: Vec<TrackedFinding> = open.into_iter().cloned().collect();
            let plan = plan(&rule, over(&state), &open, &memory, ALL, NOW);
            assert_eq!(actions(&plan), expected, "step {i}");
            memory = after(&plan);
            state = ran(&state, &plan);
        }
    }

    #[test]
    fn an_excepted_finding_leaves_and_its_ticket_closes() {
        let rule = rule(Trigger::KevAdded, vec![ticket()], true);
        let open = [finding("WEB01", CVE, true, NOW)];
        let plan1 = plan(&rule, over(&never()), &open, &empty(), ALL, NOW);
        assert_eq!(actions(&plan1), [("ticket_create", CVE)]);
        let mut excepted = open[0].clone();
        excepted.exception_id = Some("e1".into());
        let state = ran(&never(), &plan1);
        let plan2 = plan(&rule, over(&state), &[excepted], &after(&plan1), ALL, NOW);
        assert_eq!(actions(&plan2), [("ticket_close", CVE)]);
        assert_eq!(plan2.left, 1);
    }

    #[test]
    fn a_run_over_the_ticket_limit_stops_and_remembers_nothing() {
        let rule = rule(Trigger::KevAdded, vec![ticket(), email()], true);
        let open: Vec<TrackedFinding> = ["CVE-2021-0001", "CVE-2021-0002", "CVE-2021-0003"]
            .iter()
            .map(|cve| finding("WEB01", cve, true, NOW))
            .collect();
        let plan = plan(&rule, over(&never()), &open, &empty(), ALL, NOW);
        assert!(plan.deliveries.is_empty());
        assert!(plan.matches_after.is_empty());
        let said = plan.stopped.unwrap();
        assert!(
            said.contains("would open 3 tickets, more than the rule's limit of 2"),
            "{said}"
        );
    }

    #[test]
    fn new_findings_that_do_not_match_are_skipped_with_the_condition() {
        let mut rule = rule(Trigger::NewFinding, vec![email()], false);
        rule.input.conditions.severity_at_least =
            Some(crate::automation::rules::Severity::Critical);
        let old = finding("WEB01", CVE, false, NOW - 10);
        let plan0 = plan(
            &rule,
            over(&never()),
            std::slice::from_ref(&old),
            &empty(),
            ALL,
            NOW,
        );
        assert!(plan0.skipped.is_empty(), "the first run logs no skip");
        let state = ran(&never(), &plan0);
        let new = finding("DESK-3", CVE, false, NOW);
        let plan = plan(&rule, over(&state), &[old, new], &after(&plan0), ALL, NOW);
        assert_eq!(plan.skipped.len(), 1);
        assert_eq!(plan.skipped[0].device_name, "DESK-3");
        assert_eq!(plan.skipped[0].reason, "severity high is below critical");
    }

    #[test]
    fn conditions_say_which_one_is_false() {
        let f = finding("WEB01", CVE, false, NOW - 3 * 86_400_000);
        let cases: Vec<(Conditions, Option<&str>)> = vec![
            (Conditions::default(), None),
            (
                Conditions {
                    cvss_at_least: Some(9.0),
                    ..Default::default()
                },
                Some("CVSS 8.8 is below 9"),
            ),
            (
                Conditions {
                    kev: Some(true),
                    ..Default::default()
                },
                Some("its CVE is not in CISA's KEV catalogue"),
            ),
            (
                Conditions {
                    epss_at_least: Some(0.5),
                    ..Default::default()
                },
                Some("EPSS 0.4 is below 0.5"),
            ),
            (
                Conditions {
                    tiers: Some(vec![Tier::Critical]),
                    ..Default::default()
                },
                Some("the device's tier standard is not one asked for"),
            ),
            (
                Conditions {
                    vendor: Some("Google".into()),
                    product: Some("chrome".into()),
                    ..Default::default()
                },
                None,
            ),
            (
                Conditions {
                    product: Some("edge".into()),
                    ..Default::default()
                },
                Some("product chrome is not edge"),
            ),
            (
                Conditions {
                    open_days_at_least: Some(7),
                    ..Default::default()
                },
                Some("open 3 days, fewer than 7"),
            ),
            (
                Conditions {
                    devices: Some(serde_json::json!({})),
                    ..Default::default()
                },
                Some("the device does not match the rule's device query"),
            ),
        ];
        for (conditions, expected) in cases {
            let said = conditions.refuses(&f, NOW, |_| false);
            assert_eq!(said.as_deref(), expected, "{conditions:?}");
        }
    }

    #[test]
    fn a_digest_goes_once_a_period_with_everything_that_matches() {
        let rule = rule(
            Trigger::Digest {
                every: DigestEvery::Daily,
            },
            vec![email()],
            false,
        );
        let open = [
            finding("WEB01", CVE, true, NOW - 99),
            finding("PC-01", CVE, true, NOW),
        ];
        let plan1 = plan(&rule, over(&never()), &open, &empty(), ALL, NOW);
        assert_eq!(plan1.fired.len(), 2, "a digest has no baseline");
        assert_eq!(actions(&plan1), [("email", "soc@msp.example")]);
        let state = ran(&never(), &plan1);
        assert!(plan(&rule, over(&state), &open, &empty(), ALL, NOW + 1000)
            .deliveries
            .is_empty());
        let tomorrow = plan(&rule, over(&state), &open, &empty(), ALL, NOW + 86_400_000);
        assert_eq!(tomorrow.deliveries.len(), 1);
        assert_eq!(period(DigestEvery::Weekly, NOW), "2027-W02");
    }

    fn verdict(device: &str, state: &str) -> Verdict {
        Verdict {
            key: format!("p1:{device}:Chrome:118.0:{state}"),
            cve_ids: vec![CVE.into()],
            device_name: device.into(),
            line: format!("{device}: {state}"),
        }
    }

    #[test]
    fn remediation_verdicts_are_noted_once_on_the_cves_open_ticket() {
        let rule = rule(Trigger::KevAdded, vec![ticket()], true);
        let both = [
            finding("WEB01", CVE, true, NOW),
            finding("LAPTOP-9", CVE, true, NOW),
        ];
        let web = &both[..1];
        let plan1 = plan(&rule, over(&never()), &both, &empty(), ALL, NOW);
        assert_eq!(actions(&plan1), [("ticket_create", CVE)]);
        let state = ran(&never(), &plan1);
        // WEB01's update failed, LAPTOP-9's worked (its finding is gone,
        // and may have left the ticket's devices before its verdict); a
        // device outside the rule's device query is not its business.
        let verdicts = [
            verdict("WEB01", "remediation_failed"),
            verdict("LAPTOP-9", "fixed"),
            verdict("PC-77", "fixed"),
        ];
        let with = |state| Over {
            tenant: "t1",
            state,
            verdicts: &verdicts,
        };
        const NOT_PC77: &dyn Fn(&str) -> bool = &|d| d != "PC-77";
        // LAPTOP-9 left the ticket's devices on a run before its verdict.
        let mut before = after(&plan1);
        before
            .tickets
            .get_mut(CVE)
            .unwrap()
            .devices
            .remove("LAPTOP-9");
        let plan2 = plan(&rule, with(&state), web, &before, NOT_PC77, NOW);
        assert_eq!(actions(&plan2), [("ticket_update", CVE)]);
        let text = plan2.deliveries[0].payload["text"].as_str().unwrap();
        assert!(text.contains("WEB01: remediation_failed"), "{text}");
        assert!(text.contains("LAPTOP-9: fixed"), "{text}");
        assert!(!text.contains("PC-77"), "{text}");
        // Told once.
        let state = ran(&state, &plan2);
        let plan3 = plan(&rule, with(&state), web, &after(&plan2), NOT_PC77, NOW);
        assert!(plan3.deliveries.is_empty(), "{:?}", actions(&plan3));
        // WEB01 fixed at last: the note comes before the closing.
        let verdicts = [verdict("WEB01", "fixed")];
        let over = Over {
            tenant: "t1",
            state: &ran(&state, &plan3),
            verdicts: &verdicts,
        };
        let plan4 = plan(&rule, over, &[], &after(&plan3), ALL, NOW);
        assert_eq!(
            actions(&plan4),
            [("ticket_update", CVE), ("ticket_close", CVE)]
        );
    }

    #[test]
    fn a_partners_ticket_goes_to_each_customers_company() {
        let mut rule = rule(Trigger::KevAdded, vec![ticket()], true);
        rule.input.actions = vec![Action::Ticket {
            company_id: 2,
            board_id: Some(1),
            priority_id: None,
            close_status_id: None,
            companies: Some(vec![crate::automation::rules::CustomerCompany {
                customer_id: "globex".into(),
                company_id: 3,
            }]),
        }];
        let open = [finding("PC-01", CVE, true, NOW)];
        for (tenant, company) in [("globex", 3), ("acme", 2)] {
            let over = Over {
                tenant,
                state: &never(),
                verdicts: &[],
            };
            let plan = plan(&rule, over, &open, &empty(), ALL, NOW);
            assert_eq!(
                plan.deliveries[0].payload["company_id"], company,
                "{tenant}"
            );
        }
    }

    #[test]
    fn customers_are_reached_by_all_a_group_or_by_name() {
        use crate::automation::rules::Customers;
        let groups = ["dental".to_string()];
        let cases = [
            (
                Customers {
                    all: true,
                    ..Default::default()
                },
                true,
            ),
            (
                Customers {
                    group_id: Some("dental".into()),
                    ..Default::default()
                },
                true,
            ),
            (
                Customers {
                    group_id: Some("legal".into()),
                    ..Default::default()
                },
                false,
            ),
            (
                Customers {
                    customer_ids: Some(vec!["acme".into()]),
                    ..Default::default()
                },
                true,
            ),
            (
                Customers {
                    customer_ids: Some(vec!["globex".into()]),
                    ..Default::default()
                },
                false,
            ),
        ];
        for (customers, reached) in cases {
            assert_eq!(customers.reaches("acme", &groups), reached, "{customers:?}");
        }
    }

    #[test]
    fn events_fire_once_and_again_after_they_left() {
        let rule = rule(Trigger::SyncFailed, vec![email()], false);
        let failing = |area: &str| Event {
            key: format!("sync:{area}"),
            kind: "sync_failed".into(),
            summary: format!("the {area} sync failed: HTTP 401"),
            cve_id: None,
        };
        let mut state = never();
        let mut seen = std::collections::HashSet::new();
        let steps: [(Vec<Event>, usize, usize); 5] = [
            // The first run: what fails already is the baseline.
            (vec![failing("rmm")], 0, 1),
            (vec![failing("rmm"), failing("psa")], 1, 0),
            (vec![failing("rmm"), failing("psa")], 0, 0),
            // psa recovered, then failed again: it fires again.
            (vec![failing("rmm")], 0, 0),
            (vec![failing("rmm"), failing("psa")], 1, 0),
        ];
        for (i, (events, fired, baseline)) in steps.into_iter().enumerate() {
            let plan = plan_events(&rule, over(&state), &events, &seen);
            assert_eq!(
                (plan.events.len(), plan.baseline),
                (fired, baseline),
                "step {i}"
            );
            assert_eq!(plan.deliveries.len(), usize::from(fired > 0), "step {i}");
            if fired > 0 {
                assert!(plan.deliveries[0].payload["body"]
                    .as_str()
                    .unwrap()
                    .contains("the psa sync failed: HTTP 401"));
            }
            seen = plan.events_after.clone().unwrap().into_iter().collect();
            state = ran(&state, &plan);
        }
    }

    #[test]
    fn triggers_pick_their_findings() {
        let mut f = finding("WEB01", CVE, false, NOW);
        assert!(Trigger::NewFinding.refuses(&f).is_none());
        assert!(Trigger::KevAdded.refuses(&f).is_some());
        assert!(Trigger::EpssCrossed { threshold: 0.3 }
            .refuses(&f)
            .is_none());
        assert_eq!(
            Trigger::EpssCrossed { threshold: 0.5 }
                .refuses(&f)
                .as_deref(),
            Some("EPSS 0.4 is below 0.5")
        );
        assert!(Trigger::DueSoon.refuses(&f).is_none());
        assert_eq!(
            Trigger::Overdue.refuses(&f).as_deref(),
            Some("it is not overdue (SLA state due_soon)")
        );
        f.sla_state = Some(SlaState::Overdue);
        assert!(Trigger::Overdue.refuses(&f).is_none());
    }
}
