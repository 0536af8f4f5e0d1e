//! An advisory's text for a CVE or an application: what it is, who is
//! affected, what to do, the fix version, whether it is exploited. The
//! configured model writes it from the facts gathered here; without one,
//! or when it fails, a template does, and the draft says which.

use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

use super::affected::{Affected, Target};
use crate::language_model::LanguageModel;
use cairn_core::db::Db;
use cairn_core::settings::Settings;
use cairn_inventory::version::{compare_versions, newest};
use cairn_vulnerabilities::reference::store::{self, CveDetail};

/// What an advisory states, gathered from the store and the tenant.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AdvisoryFacts {
    pub cve_id: Option<String>,
    pub application: Option<String>,
    pub description: Option<String>,
    pub severity: Option<String>,
    pub cvss_score: Option<f64>,
    /// In CISA's Known Exploited Vulnerabilities catalog.
    pub exploited: bool,
    pub kev_required_action: Option<String>,
    pub kev_due_date: Option<String>,
    pub epss_score: Option<f64>,
    /// Applications affected, with the versions the tenant runs.
    pub affected_applications: Vec<AffectedApplication>,
    /// The version to upgrade to: the highest fix version of the findings,
    /// else the one the caller gave.
    pub fix_version: Option<String>,
    pub affected_devices: usize,
    pub affected_users: usize,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct AffectedApplication {
    pub name: String,
    pub versions: Vec<String>,
}

/// Who wrote a draft: the language model, or the built-in template when
/// no model is set or it failed.
pub const DRAFTED_BY: [&str; 2] = ["model", "template"];

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Draft {
    pub subject: String,
    pub body: String,
    /// `model` or `template`.
    pub drafted_by: String,
    /// Why the model did not write it, when one is configured.
    pub model_note: Option<String>,
    pub facts: AdvisoryFacts,
}

/// The facts of `target` for the tenant whose affected set is `affected`.
pub async fn facts(
    db: &Db,
    target: &Target,
    affected: &Affected,
    fix_version: Option<&str>,
) -> sqlx::Result<AdvisoryFacts> {
    let detail: Option<CveDetail> = match target.cve_id() {
        Some(id) => store::cve_detail(db, id).await?,
        None => None,
    };
    let mut applications: Vec<AffectedApplication> = vec![];
    for device in &affected.devices {
        match applications
            .iter_mut()
            .find(|a| a.name == device.application)
        {
            Some(app) if !app.versions.contains(&device.version) => {
                app.versions.push(device.version.clone())
            }
            Some(_) => {}
            None => applications.push(AffectedApplication {
                name: device.application.clone(),
                versions: vec![device.version.clone()],
            }),
        }
    }
    for app in &mut applications {
        app.versions.sort_by(|a, b| compare_versions(a, b));
    }
    let known_fix = newest(
        affected
            .devices
            .iter()
            .filter_map(|d| d.fix_version.as_deref()),
    );
    let fix_version = known_fix
        .map(String::from)
        .or_else(|| fix_version.map(String::from));
    Ok(AdvisoryFacts {
        cve_id: target.cve_id().map(String::from),
        application: target.application().map(String::from),
        description: detail.as_ref().map(|d| d.description.clone()),
        severity: detail.as_ref().and_then(|d| d.severity.clone()),
        cvss_score: detail.as_ref().and_then(|d| d.cvss_score),
        exploited: detail.as_ref().is_some_and(|d| d.kev),
        kev_required_action: detail.as_ref().and_then(|d| d.kev_required_action.clone()),
        kev_due_date: detail.as_ref().and_then(|d| d.kev_due_date.clone()),
        epss_score: detail.as_ref().and_then(|d| d.epss_score),
        affected_applications: applications,
        fix_version,
        affected_devices: affected
            .devices
            .iter()
            .map(|d| d.device_name.as_str())
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        affected_users: affected.users.len(),
    })
}

/// Drafts the advisory: by the model when configured and answering well,
/// else by [`template`].
pub async fn draft(settings: &Settings, facts: AdvisoryFacts) -> Draft {
    let mut model_note = None;
    if let Some(model) = LanguageModel::from_settings(settings) {
        let material = serde_json::to_string_pretty(&facts).unwrap_or_default();
        match model
            .json_answer("advisory_draft", INSTRUCTIONS, &material, &answer_schema())
            .await
        {
            Ok(answer) => {
                let text = |key: &str| answer[key].as_str().unwrap_or_default().trim().to_string();
                return Draft {
                    subject: text("subject"),
                    body: text("body"),
                    drafted_by: "model".into(),
                    model_note: None,
                    facts,
                };
            }
            Err(err) => model_note = Some(err.to_string()),
        }
    }
    let (subject, body) = template(&facts);
    Draft {
        subject,
        body,
        drafted_by: "template".into(),
        model_note,
        facts,
    }
}

const INSTRUCTIONS: &str = "You write a security advisory e-mail from a managed service \
provider to the people at a customer who use affected software. Plain text, no Markdown. \
Say what the problem is, whether it is being exploited, who is affected, and exactly what to \
do (the version to update to). Be short and calm. Use only the facts given. Answer JSON with \
a subject (at most 150 characters) and a body.";

fn answer_schema() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["subject", "body"],
        "properties": {
            "subject": {"type": "string", "minLength": 5, "maxLength": 150},
            "body": {"type": "string", "minLength": 20, "maxLength": 20000},
        }
    })
}

/// The template advisory.
pub fn template(facts: &AdvisoryFacts) -> (String, String) {
    let software = match facts.affected_applications.as_slice() {
        [] => facts
            .application
            .clone()
            .unwrap_or_else(|| "affected software".into()),
        [one] => one.name.clone(),
        many => many
            .iter()
            .map(|a| a.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    };
    let topic = match &facts.cve_id {
        Some(id) => format!("{id} in {software}"),
        None => software.clone(),
    };
    let urgency = if facts.exploited {
        "Action required now"
    } else {
        "Update required"
    };
    let subject: String = format!("Security advisory: {topic} ({urgency})")
        .chars()
        .take(150)
        .collect();
    let mut what = match &facts.cve_id {
        Some(id) => {
            let severity = facts
                .severity
                .as_deref()
                .unwrap_or("security")
                .to_lowercase();
            let mut line = format!("What: {id} is a {severity} vulnerability");
            if let Some(score) = facts.cvss_score {
                line.push_str(&format!(" (CVSS {score:.1})"));
            }
            line.push_str(&format!(" in {software}."));
            if let Some(description) = &facts.description {
                line.push_str(&format!(" {description}"));
            }
            line
        }
        None => format!("What: the versions of {software} listed below need to be updated."),
    };
    if facts.exploited {
        what.push_str(
            "\n\nExploited: yes. CISA lists it in its Known Exploited Vulnerabilities \
             catalog, so attackers are using it now.",
        );
        if let Some(due) = &facts.kev_due_date {
            what.push_str(&format!(" CISA's remediation due date is {due}."));
        }
    } else if facts.cve_id.is_some() {
        what.push_str(
            "\n\nExploited: not according to CISA's Known Exploited Vulnerabilities catalog.",
        );
    }
    let mut who = format!(
        "Who is affected: {} device(s) in your organization run an affected version:",
        facts.affected_devices
    );
    for app in &facts.affected_applications {
        who.push_str(&format!("\n- {} {}", app.name, app.versions.join(", ")));
    }
    let mut what_to_do = match &facts.fix_version {
        Some(fix) => {
            format!("What to do: update {software} to version {fix} or later as soon as possible.")
        }
        None => format!("What to do: update {software} to its latest version as soon as possible."),
    };
    if let Some(action) = &facts.kev_required_action {
        what_to_do.push_str(&format!(" CISA's required action: {action}"));
    }
    let body = [
        "Hello,".to_string(),
        what,
        who,
        what_to_do,
        "If you are unsure how to update, or need help, reply to this message.\n".to_string(),
    ]
    .join("\n\n");
    (subject, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(exploited: bool) -> AdvisoryFacts {
        AdvisoryFacts {
            cve_id: Some("CVE-2023-2033".into()),
            application: None,
            description: Some("Type confusion in V8.".into()),
            severity: Some("HIGH".into()),
            cvss_score: Some(8.8),
            exploited,
            kev_required_action: exploited.then(|| "Apply updates per vendor instructions.".into()),
            kev_due_date: exploited.then(|| "2023-05-08".into()),
            epss_score: None,
            affected_applications: vec![AffectedApplication {
                name: "Google Chrome".into(),
                versions: vec!["111.0.1".into(), "112.0.0".into()],
            }],
            fix_version: Some("112.0.5615.121".into()),
            affected_devices: 2,
            affected_users: 2,
        }
    }

    #[test]
    fn the_template_says_what_who_and_what_to_do() {
        let (subject, body) = template(&facts(true));
        assert_eq!(
            subject,
            "Security advisory: CVE-2023-2033 in Google Chrome (Action required now)"
        );
        for expected in [
            "CVE-2023-2033 is a high vulnerability (CVSS 8.8) in Google Chrome. Type confusion in V8.",
            "Exploited: yes.",
            "due date is 2023-05-08",
            "2 device(s)",
            "- Google Chrome 111.0.1, 112.0.0",
            "update Google Chrome to version 112.0.5615.121 or later",
        ] {
            assert!(body.contains(expected), "{expected:?} in {body}");
        }
        let (_, body) = template(&facts(false));
        assert!(body.contains("Exploited: not according to"));
    }
}
