//! A rule as a tenant writes it: a trigger, conditions over one finding,
//! actions and limits; its checks; and `automation_rules`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::sla::policy::Tier;
use crate::sla::TrackedFinding;
use cairn_core::db::{stored_json, Db};
use cairn_core::ids::TenantId;

/// Most rules a tenant may keep.
pub const MAX_RULES: i64 = 100;
/// Tickets one run may open when the rule does not say.
const DEFAULT_MAX_TICKETS: u32 = 20;
/// Actions one rule may deliver in an hour when it does not say.
const DEFAULT_ACTIONS_PER_HOUR: u32 = 60;

/// When a rule acts: a finding starts to match it (`new_finding`: it
/// appeared; `kev_added`: its CVE is in CISA's KEV catalogue;
/// `epss_crossed`: its EPSS score reached `threshold`; `due_soon`,
/// `overdue`: its SLA state), once a period with everything that matches
/// (`digest`), or an event: an SLA exception requested, approved, or
/// expiring within `days` (default 7); an integration's sync failing (once
/// per outage: it fires again after a sync succeeded); an upload failing;
/// a subscription bringing a new or changed CVE.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[schema(as = AutomationTrigger)]
pub enum Trigger {
    NewFinding,
    KevAdded,
    EpssCrossed {
        #[schema(minimum = 0, maximum = 1)]
        threshold: f64,
    },
    DueSoon,
    Overdue,
    Digest {
        every: DigestEvery,
    },
    ExceptionRequested,
    ExceptionApproved,
    ExceptionExpiring {
        #[serde(default = "week")]
        #[schema(minimum = 1, maximum = 90)]
        days: u32,
    },
    SyncFailed,
    UploadFailed,
    SubscriptionMatch,
    /// A remediation the RMM reported done was disproved by the next
    /// inventory, or the RMM reported it failed.
    RemediationFailed,
}

fn week() -> u32 {
    7
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = AutomationDigestEvery)]
pub enum DigestEvery {
    Daily,
    Weekly,
}

impl Trigger {
    /// Every kind [`Trigger::as_str`] names, for the API's document.
    pub const KINDS: [&'static str; 13] = [
        "new_finding",
        "kev_added",
        "epss_crossed",
        "due_soon",
        "overdue",
        "digest",
        "exception_requested",
        "exception_approved",
        "exception_expiring",
        "sync_failed",
        "upload_failed",
        "subscription_match",
        "remediation_failed",
    ];

    pub fn as_str(&self) -> &'static str {
        match self {
            Trigger::NewFinding => "new_finding",
            Trigger::KevAdded => "kev_added",
            Trigger::EpssCrossed { .. } => "epss_crossed",
            Trigger::DueSoon => "due_soon",
            Trigger::Overdue => "overdue",
            Trigger::Digest { .. } => "digest",
            Trigger::ExceptionRequested => "exception_requested",
            Trigger::ExceptionApproved => "exception_approved",
            Trigger::ExceptionExpiring { .. } => "exception_expiring",
            Trigger::SyncFailed => "sync_failed",
            Trigger::UploadFailed => "upload_failed",
            Trigger::SubscriptionMatch => "subscription_match",
            Trigger::RemediationFailed => "remediation_failed",
        }
    }

    /// Whether the trigger is about something other than findings (an
    /// exception, a sync, an upload): conditions and tickets do not apply.
    pub fn is_event(&self) -> bool {
        matches!(
            self,
            Trigger::ExceptionRequested
                | Trigger::ExceptionApproved
                | Trigger::ExceptionExpiring { .. }
                | Trigger::SyncFailed
                | Trigger::UploadFailed
                | Trigger::SubscriptionMatch
                | Trigger::RemediationFailed
        )
    }

    /// Why `finding` is not what the trigger is about, if it is not.
    pub fn refuses(&self, finding: &TrackedFinding) -> Option<String> {
        use crate::sla::policy::SlaState;
        match self {
            Trigger::NewFinding | Trigger::Digest { .. } => None,
            // Never asked of a finding (see `is_event`).
            Trigger::ExceptionRequested
            | Trigger::ExceptionApproved
            | Trigger::ExceptionExpiring { .. }
            | Trigger::SyncFailed
            | Trigger::UploadFailed
            | Trigger::SubscriptionMatch
            | Trigger::RemediationFailed => Some("the rule's trigger is not about findings".into()),
            Trigger::KevAdded => {
                (!finding.kev).then(|| "its CVE is not in CISA's KEV catalogue".to_string())
            }
            Trigger::EpssCrossed { threshold } => match finding.epss_score {
                Some(score) if score >= *threshold => None,
                Some(score) => Some(format!("EPSS {score} is below {threshold}")),
                None => Some("its CVE has no EPSS score".into()),
            },
            Trigger::DueSoon => (finding.sla_state != Some(SlaState::DueSoon))
                .then(|| format!("it is not due soon (SLA state {})", sla_word(finding))),
            Trigger::Overdue => (finding.sla_state != Some(SlaState::Overdue))
                .then(|| format!("it is not overdue (SLA state {})", sla_word(finding))),
        }
    }
}

fn sla_word(finding: &TrackedFinding) -> &'static str {
    finding.sla_state.map_or("none", |s| s.as_str())
}

/// CVSS severity words, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = AutomationSeverity)]
pub enum Severity {
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    fn parse(word: &str) -> Option<Severity> {
        match word.to_ascii_lowercase().as_str() {
            "low" => Some(Severity::Low),
            "medium" => Some(Severity::Medium),
            "high" => Some(Severity::High),
            "critical" => Some(Severity::Critical),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }
}

/// What a finding must be for the rule to act on it; every condition given
/// must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AutomationConditions)]
pub struct Conditions {
    pub severity_at_least: Option<Severity>,
    #[schema(minimum = 0, maximum = 10)]
    pub cvss_at_least: Option<f64>,
    /// true: only KEV-listed CVEs; false: only those not listed.
    pub kev: Option<bool>,
    #[schema(minimum = 0, maximum = 1)]
    pub epss_at_least: Option<f64>,
    /// The device's tier is one of these.
    pub tiers: Option<Vec<Tier>>,
    /// The identified vendor, exactly (ignoring case), e.g. `google`.
    pub vendor: Option<String>,
    /// The identified product, exactly (ignoring case), e.g. `chrome`.
    pub product: Option<String>,
    /// The device matches this device search query (the query object of
    /// `POST /api/v1/devices/search`).
    pub devices: Option<Value>,
    /// The finding has been open at least this many days.
    #[schema(minimum = 0, maximum = 3650)]
    pub open_days_at_least: Option<u32>,
}

impl Conditions {
    /// The first condition `finding` fails, said as a sentence; `None`
    /// when it passes every one. `in_devices` answers the device query.
    pub fn refuses(
        &self,
        finding: &TrackedFinding,
        now: i64,
        in_devices: impl Fn(&str) -> bool,
    ) -> Option<String> {
        if let Some(least) = self.severity_at_least {
            match finding.severity.as_deref().and_then(Severity::parse) {
                Some(severity) if severity >= least => {}
                Some(severity) => {
                    return Some(format!(
                        "severity {} is below {}",
                        severity.as_str(),
                        least.as_str()
                    ))
                }
                None => return Some(format!("it has no severity (wanted {})", least.as_str())),
            }
        }
        if let Some(least) = self.cvss_at_least {
            match finding.cvss_score {
                Some(score) if score >= least => {}
                Some(score) => return Some(format!("CVSS {score} is below {least}")),
                None => return Some(format!("it has no CVSS score (wanted {least})")),
            }
        }
        if let Some(kev) = self.kev {
            if finding.kev != kev {
                return Some(if kev {
                    "its CVE is not in CISA's KEV catalogue".into()
                } else {
                    "its CVE is in CISA's KEV catalogue".into()
                });
            }
        }
        if let Some(least) = self.epss_at_least {
            match finding.epss_score {
                Some(score) if score >= least => {}
                Some(score) => return Some(format!("EPSS {score} is below {least}")),
                None => return Some(format!("it has no EPSS score (wanted {least})")),
            }
        }
        if let Some(tiers) = &self.tiers {
            if !tiers.contains(&finding.tier) {
                return Some(format!(
                    "the device's tier {} is not one asked for",
                    finding.tier.as_str()
                ));
            }
        }
        let same = |wanted: &Option<String>, have: &Option<String>| match wanted {
            None => true,
            Some(wanted) => have
                .as_deref()
                .is_some_and(|have| have.eq_ignore_ascii_case(wanted.trim())),
        };
        if !same(&self.vendor, &finding.vendor) {
            return Some(format!(
                "vendor {} is not {}",
                finding.vendor.as_deref().unwrap_or("(none)"),
                self.vendor.as_deref().unwrap_or_default()
            ));
        }
        if !same(&self.product, &finding.product) {
            return Some(format!(
                "product {} is not {}",
                finding.product.as_deref().unwrap_or("(none)"),
                self.product.as_deref().unwrap_or_default()
            ));
        }
        if self.devices.is_some() && !in_devices(&finding.device_name) {
            return Some("the device does not match the rule's device query".into());
        }
        if let Some(days) = self.open_days_at_least {
            let open_days = (now - finding.first_seen).max(0) / 86_400_000;
            if open_days < i64::from(days) {
                return Some(format!("open {open_days} days, fewer than {days}"));
            }
        }
        None
    }
}

/// How a webhook's body is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = AutomationWebhookFormat)]
pub enum WebhookFormat {
    /// Cairn's own body (`cairn.automation.v1`, see the docs), signed.
    Json,
    /// A Slack incoming webhook's `{"text": ...}`.
    Slack,
    /// A Microsoft Teams incoming webhook's message with an Adaptive Card.
    Teams,
}

/// A customer's company in the partner's PSA.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AutomationCustomerCompany)]
pub struct CustomerCompany {
    pub customer_id: String,
    #[schema(minimum = 1)]
    pub company_id: u64,
}

/// What a rule does when it fires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schema(as = AutomationAction)]
pub enum Action {
    /// One PSA ticket per CVE (and customer) through the psa connector of
    /// the rule's owner: opened when the CVE's first device matches, a note
    /// when more join, closed (with `close_status_id`) or noted when none
    /// is left.
    Ticket {
        #[schema(minimum = 1)]
        company_id: u64,
        #[schema(minimum = 1)]
        board_id: Option<u64>,
        #[schema(minimum = 1)]
        priority_id: Option<u64>,
        /// The upstream status a ticket is moved to once every device is
        /// fixed or excepted; without it the ticket gets a note instead.
        #[schema(minimum = 1)]
        close_status_id: Option<u64>,
        /// A partner's rule: the PSA company of each customer named here
        /// (the others get `company_id`).
        #[serde(skip_serializing_if = "Option::is_none")]
        companies: Option<Vec<CustomerCompany>>,
    },
    /// One message per run, listing what fired.
    Email {
        #[schema(min_items = 1, max_items = 20)]
        to: Vec<String>,
    },
    /// One POST per run. `secret` (write-only, at least 16 characters)
    /// signs Cairn's own format; Slack and Teams URLs carry their own.
    Webhook {
        url: String,
        format: WebhookFormat,
        /// Write-only: answers never show it.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[schema(write_only)]
        secret: Option<String>,
    },
}

impl Action {
    /// The action as an answer shows it: without its secret.
    pub fn shown(self) -> Action {
        match self {
            Action::Webhook { url, format, .. } => Action::Webhook {
                url,
                format,
                secret: None,
            },
            other => other,
        }
    }

    /// A ticket action's PSA company for `tenant`'s findings.
    pub fn company_for(&self, tenant: &str) -> Option<u64> {
        match self {
            Action::Ticket {
                company_id,
                companies,
                ..
            } => Some(
                companies
                    .iter()
                    .flatten()
                    .find(|c| c.customer_id == tenant)
                    .map_or(*company_id, |c| c.company_id),
            ),
            _ => None,
        }
    }

    pub fn kind(&self) -> &'static str {
        match self {
            Action::Ticket { .. } => "ticket",
            Action::Email { .. } => "email",
            Action::Webhook { .. } => "webhook",
        }
    }
}

/// The customers a partner's rule runs over: every one, one group's, or
/// the ones named (exactly one of the three).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AutomationCustomers)]
pub struct Customers {
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub customer_ids: Option<Vec<String>>,
}

impl Customers {
    /// Whether the selection reaches `customer`, given the groups it is in.
    pub fn reaches(&self, customer: &str, groups: &[String]) -> bool {
        self.all
            || self.group_id.as_ref().is_some_and(|g| groups.contains(g))
            || self
                .customer_ids
                .as_ref()
                .is_some_and(|ids| ids.iter().any(|id| id == customer))
    }
}

/// A rule as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AutomationRuleInput)]
pub struct RuleInput {
    /// 1 to 100 printable characters.
    pub name: String,
    #[serde(default = "yes")]
    pub enabled: bool,
    pub trigger: Trigger,
    #[serde(default)]
    pub conditions: Conditions,
    /// 1 to 5 actions.
    pub actions: Vec<Action>,
    /// Act on findings that already match when the rule is saved (default:
    /// only on those that start to match later).
    #[serde(default)]
    pub include_existing: bool,
    /// A run that would open more tickets than this opens none and says
    /// so (default 20).
    #[serde(default = "max_tickets")]
    #[schema(minimum = 1, maximum = 500)]
    pub max_tickets_per_run: u32,
    /// Deliveries of this rule in any hour at most; more wait (default 60).
    #[serde(default = "actions_per_hour")]
    #[schema(minimum = 1, maximum = 10000)]
    pub max_actions_per_hour: u32,
    /// A partner's rule over its customers' findings instead of its own:
    /// which customers. Tickets go through the partner's psa connector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub customers: Option<Customers>,
}

fn yes() -> bool {
    true
}
fn max_tickets() -> u32 {
    DEFAULT_MAX_TICKETS
}
fn actions_per_hour() -> u32 {
    DEFAULT_ACTIONS_PER_HOUR
}

/// A rule refused: the field and why.
#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    pub field: String,
    pub message: String,
}

fn invalid(field: &str, message: impl Into<String>) -> Invalid {
    Invalid {
        field: field.into(),
        message: message.into(),
    }
}

impl RuleInput {
    /// Checks what serde cannot; the device query is checked by the caller
    /// (it needs the inventory's fields).
    pub fn check(&self) -> Result<(), Invalid> {
        let name = self.name.trim();
        if name.is_empty() || name.chars().count() > 100 || name.chars().any(char::is_control) {
            return Err(invalid("name", "must be 1 to 100 printable characters"));
        }
        let unit = |field: &str, value: Option<f64>| match value {
            Some(v) if !(0.0..=1.0).contains(&v) => Err(invalid(field, "must be between 0 and 1")),
            _ => Ok(()),
        };
        if let Trigger::EpssCrossed { threshold } = &self.trigger {
            unit("trigger.threshold", Some(*threshold))?;
        }
        if let Trigger::ExceptionExpiring { days } = &self.trigger {
            if !(1..=90).contains(days) {
                return Err(invalid("trigger.days", "must be 1 to 90"));
            }
        }
        if self.trigger.is_event() && self.conditions != Conditions::default() {
            return Err(invalid(
                "conditions",
                "conditions are about findings; this trigger is not",
            ));
        }
        unit("conditions.epss_at_least", self.conditions.epss_at_least)?;
        if let Some(cvss) = self.conditions.cvss_at_least {
            if !(0.0..=10.0).contains(&cvss) {
                return Err(invalid(
                    "conditions.cvss_at_least",
                    "must be between 0 and 10",
                ));
            }
        }
        if self.conditions.open_days_at_least.is_some_and(|d| d > 3650) {
            return Err(invalid("conditions.open_days_at_least", "at most 3650"));
        }
        for (field, value) in [
            ("conditions.vendor", &self.conditions.vendor),
            ("conditions.product", &self.conditions.product),
        ] {
            if value
                .as_deref()
                .is_some_and(|v| v.trim().is_empty() || v.len() > 200)
            {
                return Err(invalid(field, "must be 1 to 200 characters"));
            }
        }
        if self.actions.is_empty() || self.actions.len() > 5 {
            return Err(invalid("actions", "a rule has 1 to 5 actions"));
        }
        if !(1..=500).contains(&self.max_tickets_per_run) {
            return Err(invalid("max_tickets_per_run", "must be 1 to 500"));
        }
        if !(1..=10_000).contains(&self.max_actions_per_hour) {
            return Err(invalid("max_actions_per_hour", "must be 1 to 10000"));
        }
        if let Some(customers) = &self.customers {
            let chosen = usize::from(customers.all)
                + usize::from(customers.group_id.is_some())
                + usize::from(customers.customer_ids.is_some());
            if chosen != 1 {
                return Err(invalid(
                    "customers",
                    "give exactly one of all, group_id and customer_ids",
                ));
            }
            if customers
                .customer_ids
                .as_ref()
                .is_some_and(|ids| ids.is_empty() || ids.len() > 1000)
            {
                return Err(invalid("customers.customer_ids", "1 to 1000 customers"));
            }
        }
        for (i, action) in self.actions.iter().enumerate() {
            let at = |field: &str| format!("actions[{i}].{field}");
            match action {
                Action::Ticket { .. }
                    if matches!(self.trigger, Trigger::Digest { .. })
                        || self.trigger.is_event() =>
                {
                    return Err(invalid(
                        &format!("actions[{i}]"),
                        "tickets follow findings (one per CVE); this trigger sends messages only",
                    ))
                }
                Action::Ticket { companies, .. } => {
                    if companies.is_some() && self.customers.is_none() {
                        return Err(invalid(
                            &at("companies"),
                            "companies by customer are for a partner's rule over its customers",
                        ));
                    }
                }
                Action::Email { to } => {
                    if to.is_empty() || to.len() > 20 {
                        return Err(invalid(&at("to"), "1 to 20 addresses"));
                    }
                    if let Some(bad) = to.iter().find(|a| !plausible_address(a)) {
                        return Err(invalid(
                            &at("to"),
                            format!("{bad:?} is not an e-mail address"),
                        ));
                    }
                }
                Action::Webhook {
                    url,
                    format,
                    secret,
                } => {
                    let parsed =
                        url::Url::parse(url).map_err(|_| invalid(&at("url"), "not a URL"))?;
                    if !matches!(parsed.scheme(), "http" | "https")
                        || parsed.host_str().is_none()
                        || !parsed.username().is_empty()
                    {
                        return Err(invalid(
                            &at("url"),
                            "an http(s) URL without user information",
                        ));
                    }
                    match (format, secret) {
                        (WebhookFormat::Json, None) => {
                            return Err(invalid(
                                &at("secret"),
                                "Cairn's format is signed: give a secret of at least 16 characters",
                            ))
                        }
                        (_, Some(s)) if s.chars().count() < 16 || s.len() > 200 => {
                            return Err(invalid(&at("secret"), "16 to 200 characters"))
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }
}

fn plausible_address(address: &str) -> bool {
    let Some((local, domain)) = address.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && address.len() <= 254
        && !address
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || c == ',')
}

/// A rule as stored.
#[derive(Debug, Clone)]
pub struct StoredRule {
    pub id: String,
    pub tenant_id: String,
    pub input: RuleInput,
    pub owner_email: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub version: i64,
}

/// Where a rule's runs over one tenant stand.
#[derive(Debug, Clone, Default, sqlx_macros::FromRow)]
pub struct RunState {
    /// `None` before the first run.
    pub version: Option<i64>,
    pub evaluated_at: Option<i64>,
    /// The newest `first_seen` among the findings of the last run (the
    /// findings' own clock).
    pub seen_until: Option<i64>,
    pub digest_period: Option<String>,
}

#[derive(sqlx_macros::FromRow)]
struct RuleRow {
    id: String,
    tenant_id: String,
    rule: String,
    owner_email: String,
    created_at: i64,
    updated_at: i64,
    version: i64,
}

impl TryFrom<RuleRow> for StoredRule {
    type Error = sqlx::Error;
    fn try_from(row: RuleRow) -> sqlx::Result<StoredRule> {
        Ok(StoredRule {
            input: stored_json("rule", &row.rule)?,
            id: row.id,
            tenant_id: row.tenant_id,
            owner_email: row.owner_email,
            created_at: row.created_at,
            updated_at: row.updated_at,
            version: row.version,
        })
    }
}

const COLUMNS: &str = "id, tenant_id, rule, owner_email, created_at, updated_at, version";

/// The rule as stored: secrets sealed by `seal`.
fn stored_text(input: &RuleInput, seal: &(dyn Fn(&str) -> String + Sync)) -> String {
    let mut value = serde_json::to_value(input).unwrap_or(Value::Null);
    for (i, action) in input.actions.iter().enumerate() {
        if let Action::Webhook {
            secret: Some(secret),
            ..
        } = action
        {
            value["actions"][i]["secret"] = Value::String(seal(secret));
        }
    }
    value.to_string()
}

/// The tenant's rules, oldest first.
pub async fn list(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<StoredRule>> {
    let rows: Vec<RuleRow> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM automation_rules WHERE tenant_id = $1 ORDER BY created_at, id"
    ))
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    rows.into_iter().map(StoredRule::try_from).collect()
}

pub async fn get(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<Option<StoredRule>> {
    let row: Option<RuleRow> = sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM automation_rules WHERE tenant_id = $1 AND id = $2"
    ))
    .bind(tenant.as_str())
    .bind(id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(StoredRule::try_from).transpose()
}

/// Saves a new rule; `None` when the tenant has [`MAX_RULES`] already.
pub async fn create(
    db: &Db,
    tenant: &TenantId,
    input: &RuleInput,
    owner: (&str, &str),
    seal: &(dyn Fn(&str) -> String + Sync),
    now: i64,
) -> sqlx::Result<Option<String>> {
    let _turn = db.write_turn().await;
    let count: i64 =
        sqlx::query_scalar("SELECT COUNT(*) FROM automation_rules WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_one(&db.pool)
            .await?;
    if count >= MAX_RULES {
        return Ok(None);
    }
    let id = uuid::Uuid::now_v7().to_string();
    sqlx::query(
        "INSERT INTO automation_rules (id, tenant_id, name, enabled, customers, rule, owner_id, \
         owner_email, created_at, updated_at, version) \
         VALUES ($1, $2, $3, $4, $9, $5, $6, $7, $8, $8, 1)",
    )
    .bind(&id)
    .bind(tenant.as_str())
    .bind(input.name.trim())
    .bind(i64::from(input.enabled))
    .bind(stored_text(input, seal))
    .bind(owner.0)
    .bind(owner.1)
    .bind(now)
    .bind(i64::from(input.customers.is_some()))
    .execute(&db.pool)
    .await?;
    Ok(Some(id))
}

/// Replaces a rule. A secret left out keeps the one stored for the same
/// URL. A changed trigger or conditions start the rule afresh (its
/// matches forgotten, so what matches then is its new baseline).
pub async fn replace(
    db: &Db,
    tenant: &TenantId,
    id: &str,
    input: &RuleInput,
    seal: &(dyn Fn(&str) -> String + Sync),
    now: i64,
) -> sqlx::Result<bool> {
    let Some(before) = get(db, tenant, id).await? else {
        return Ok(false);
    };
    let mut input = input.clone();
    for action in &mut input.actions {
        if let Action::Webhook {
            url,
            secret: kept @ None,
            ..
        } = action
        {
            *kept = before.input.actions.iter().find_map(|a| match a {
                Action::Webhook {
                    url: old,
                    secret: Some(secret),
                    ..
                } if old == url => Some(secret.clone()),
                _ => None,
            });
        }
    }
    // Secrets read back are sealed already: keep them as they are.
    let stored = {
        let mut value = serde_json::to_value(&input).unwrap_or(Value::Null);
        for (i, action) in input.actions.iter().enumerate() {
            if let Action::Webhook {
                url,
                secret: Some(secret),
                ..
            } = action
            {
                let sealed_before = before.input.actions.iter().any(|a| {
                    matches!(a, Action::Webhook { url: old, secret: Some(s), .. } if old == url && s == secret)
                });
                value["actions"][i]["secret"] = Value::String(if sealed_before {
                    secret.clone()
                } else {
                    seal(secret)
                });
            }
        }
        value.to_string()
    };
    let afresh = before.input.trigger != input.trigger
        || before.input.conditions != input.conditions
        || before.input.include_existing != input.include_existing
        || before.input.customers != input.customers;
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    sqlx::query(
        "UPDATE automation_rules SET name = $3, enabled = $4, rule = $5, updated_at = $6, \
         customers = $7, version = version + 1 WHERE tenant_id = $1 AND id = $2",
    )
    .bind(tenant.as_str())
    .bind(id)
    .bind(input.name.trim())
    .bind(i64::from(input.enabled))
    .bind(stored)
    .bind(now)
    .bind(i64::from(input.customers.is_some()))
    .execute(&mut *tx)
    .await?;
    if afresh {
        // Over every tenant it ran over (a partner's customers).
        sqlx::query("DELETE FROM automation_matches WHERE rule_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        sqlx::query("DELETE FROM automation_rule_runs WHERE rule_id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    Ok(true)
}

/// Deletes a rule with its matches and tickets; its log and deliveries
/// stay as history.
pub async fn delete(db: &Db, tenant: &TenantId, id: &str) -> sqlx::Result<bool> {
    let _turn = db.write_turn().await;
    let mut tx = db.pool.begin().await?;
    // The rule's id is the tenant's (checked by the last statement, which
    // rolls all back when it deletes nothing); its matches and tickets
    // may be its customers'.
    sqlx::query("DELETE FROM automation_matches WHERE rule_id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM automation_tickets WHERE rule_id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    let gone = sqlx::query("DELETE FROM automation_rules WHERE tenant_id = $1 AND id = $2")
        .bind(tenant.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if gone == 0 {
        tx.rollback().await?;
        return Ok(false);
    }
    tx.commit().await?;
    Ok(true)
}

/// Tenants whose findings some rule runs over: those with rules
/// of their own, and every customer of a partner with a rule over its
/// customers (the run checks which the rule reaches).
pub async fn tenants_with_rules(db: &Db) -> sqlx::Result<Vec<String>> {
    let owners: Vec<(String, i64)> = sqlx::query_as(
        // Disabled rules too: their runs say in the log that they did not run.
        "SELECT DISTINCT tenant_id, customers FROM automation_rules",
    )
    .fetch_all(&db.pool)
    .await?;
    let mut tenants = std::collections::BTreeSet::new();
    for (owner, customers) in owners {
        if customers == 0 {
            tenants.insert(owner);
            continue;
        }
        for customer in cairn_platform::partner::storage::customers(db, &TenantId(owner)).await? {
            tenants.insert(customer.id);
        }
    }
    Ok(tenants.into_iter().collect())
}

/// The rules that run over `tenant`'s findings, enabled or not: its own,
/// and its partner's rules over customers that reach it.
pub async fn running_over(db: &Db, tenant: &TenantId) -> sqlx::Result<Vec<StoredRule>> {
    let mut rules: Vec<StoredRule> = list(db, tenant)
        .await?
        .into_iter()
        .filter(|r| r.input.customers.is_none())
        .collect();
    let Some(partner) = cairn_platform::partner::partner_of(db, tenant).await? else {
        return Ok(rules);
    };
    let partner_rules: Vec<StoredRule> = list(db, &partner)
        .await?
        .into_iter()
        .filter(|r| r.input.customers.is_some())
        .collect();
    if partner_rules.is_empty() {
        return Ok(rules);
    }
    let groups: Vec<String> = cairn_platform::partner::storage::group_members(db, &partner)
        .await?
        .into_iter()
        .filter(|(_, customer)| customer == tenant.as_str())
        .map(|(group, _)| group)
        .collect();
    rules.extend(partner_rules.into_iter().filter(|r| {
        r.input
            .customers
            .as_ref()
            .is_some_and(|c| c.reaches(tenant.as_str(), &groups))
    }));
    Ok(rules)
}

/// Where `rule`'s runs over `tenant` stand.
pub async fn run_state(db: &Db, rule_id: &str, tenant: &TenantId) -> sqlx::Result<RunState> {
    Ok(sqlx::query_as(
        "SELECT version, evaluated_at, seen_until, digest_period FROM automation_rule_runs \
         WHERE rule_id = $1 AND tenant_id = $2",
    )
    .bind(rule_id)
    .bind(tenant.as_str())
    .fetch_optional(&db.pool)
    .await?
    .unwrap_or_default())
}

/// When each of the tenant's rules last ran (over any tenant).
pub async fn last_runs(
    db: &Db,
    tenant: &TenantId,
) -> sqlx::Result<std::collections::HashMap<String, i64>> {
    let rows: Vec<(String, Option<i64>)> = sqlx::query_as(
        "SELECT r.id, MAX(u.evaluated_at) FROM automation_rules r \
         JOIN automation_rule_runs u ON u.rule_id = r.id WHERE r.tenant_id = $1 GROUP BY r.id",
    )
    .bind(tenant.as_str())
    .fetch_all(&db.pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, at)| Some((id, at?)))
        .collect())
}
