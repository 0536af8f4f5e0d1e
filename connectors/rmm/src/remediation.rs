//! Remediation through Automate's scheduled scripts (SDK 0.4).
//!
//! Automate changes a computer by running one of its scripts on it: the
//! integration schedules the script once on the computer
//! (`POST /Computers/{id}/ScheduledScripts` with the script's id and its
//! parameters) and later reads the schedule back
//! (`GET /Computers/{id}/ScheduledScripts/{schedule id}`) for its status.
//! Updating a package is the operator's own update script (config
//! `update_script_id`), which receives the package and the version as its
//! parameters (`Package=...|Version=...`), as Automate scripts read
//! `@Package@` and `@Version@`.

use cairn_sdk::{
    base_url, json, package_inputs, text_of, Config, Error, Remediation, RemediationKind,
    RemediationRequest, RemediationState, Value,
};

pub const UPDATE_PACKAGE: &str = "update_package";
pub const RUN_SCRIPT: &str = "run_script";

pub fn declared() -> Vec<Remediation> {
    vec![
        Remediation {
            name: UPDATE_PACKAGE.into(),
            kind: RemediationKind::UpdatePackage,
            summary:
                "Run the configured update script (update_script_id) for a package and version"
                    .into(),
            input_schema: package_inputs(),
        },
        Remediation {
            name: RUN_SCRIPT.into(),
            kind: RemediationKind::RunScript,
            summary: "Run an Automate script on the computer".into(),
            input_schema: json!({
                "type": "object",
                "required": ["script_id"],
                "properties": {
                    "script_id": {"type": "integer", "minimum": 1},
                    "parameters": {"type": "string", "maxLength": 1000}
                },
                "additionalProperties": false
            }),
        },
    ]
}

/// A script parameter value: Automate separates parameters with `|` and
/// name from value with `=`, so neither may appear inside one.
fn parameter(name: &str, value: &str) -> Result<String, Error> {
    if value.contains(['|', '=']) {
        return Err(Error::InvalidInput {
            field: name.to_lowercase(),
            message: "may not contain '|' or '='".into(),
        });
    }
    Ok(format!("{name}={value}"))
}

fn computer_id(device: &str) -> Result<u64, Error> {
    device.parse().map_err(|_| Error::InvalidInput {
        field: "device".into(),
        message: format!("{device:?} is not an Automate computer id"),
    })
}

/// What to schedule for `request`: the script id and its parameters.
pub fn script_of(config: &Config, request: &RemediationRequest) -> Result<(u64, String), Error> {
    let inputs = &request.inputs;
    match request.action.as_str() {
        UPDATE_PACKAGE => {
            let script = config["update_script_id"].as_u64().ok_or_else(|| {
                Error::Config(
                    "set update_script_id to the Automate script that updates a package".into(),
                )
            })?;
            let package = inputs["package"].as_str().unwrap_or_default();
            let version = inputs["version"].as_str().unwrap_or_default();
            Ok((
                script,
                [
                    parameter("Package", package)?,
                    parameter("Version", version)?,
                ]
                .join("|"),
            ))
        }
        RUN_SCRIPT => Ok((
            inputs["script_id"].as_u64().unwrap_or_default(),
            inputs["parameters"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        )),
        other => Err(Error::NotFound(format!("unsupported remediation: {other}"))),
    }
}

/// Schedules the script once, now; the handle is `<computer>/<schedule>`.
pub fn remediate(config: &Config, request: &RemediationRequest) -> Result<String, Error> {
    let base = base_url(config, "base_url")?;
    let computer = computer_id(&request.device)?;
    let (script, parameters) = script_of(config, request)?;
    let body = json!({
        "ComputerId": computer,
        "ScriptId": script,
        "Parameters": parameters,
        // Once (1), now, highest priority; an offline computer runs it when
        // its agent checks in.
        "ScheduleType": 1,
        "Priority": 15,
        "SkipOffline": false,
        "Disabled": false,
    });
    let created = cairn_sdk::http::post_json(
        &format!("{base}/Computers/{computer}/ScheduledScripts"),
        &body,
    )?;
    let schedule = text_of(&created["Id"])
        .ok_or_else(|| Error::Upstream("Automate answered a schedule without an Id".into()))?;
    Ok(format!("{computer}/{schedule}"))
}

/// The schedule's status, in Automate's words.
pub fn status(config: &Config, handle: &str) -> Result<RemediationState, Error> {
    let base = base_url(config, "base_url")?;
    let (computer, schedule) = handle
        .split_once('/')
        .ok_or_else(|| Error::NotFound(format!("unknown remediation job {handle}")))?;
    let read = cairn_sdk::http::get_json(&format!(
        "{base}/Computers/{}/ScheduledScripts/{}",
        computer_id(computer)?,
        cairn_sdk::http::encode(schedule)
    ))?;
    Ok(state_of(&read))
}

pub fn state_of(schedule: &Value) -> RemediationState {
    let output = schedule["Output"].as_str().unwrap_or_default().to_string();
    match schedule["Status"].as_str().unwrap_or_default() {
        "Success" | "Completed" => RemediationState::Succeeded(output),
        "Failed" | "Error" | "Cancelled" => RemediationState::Failed(if output.is_empty() {
            format!("Automate reports {}", schedule["Status"])
        } else {
            output
        }),
        "Running" => RemediationState::Running,
        _ => RemediationState::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(action: &str, inputs: Value) -> RemediationRequest {
        RemediationRequest {
            action: action.into(),
            device: "101".into(),
            inputs,
        }
    }

    #[test]
    fn an_update_runs_the_configured_script_with_package_and_version() {
        let config = json!({"update_script_id": 6001});
        let (script, parameters) = script_of(
            &config,
            &request(
                UPDATE_PACKAGE,
                json!({"package": "Google Chrome", "version": "120.0.6099.71"}),
            ),
        )
        .unwrap();
        assert_eq!(script, 6001);
        assert_eq!(parameters, "Package=Google Chrome|Version=120.0.6099.71");
        assert!(matches!(
            script_of(
                &json!({}),
                &request(UPDATE_PACKAGE, json!({"package": "a", "version": "1"}))
            ),
            Err(Error::Config(_))
        ));
        assert!(matches!(
            script_of(&config, &request(UPDATE_PACKAGE, json!({"package": "a|b", "version": "1"}))),
            Err(Error::InvalidInput { field, .. }) if field == "package"
        ));
    }

    #[test]
    fn statuses_in_automate_words() {
        assert_eq!(
            state_of(&json!({"Status": "Pending"})),
            RemediationState::Pending
        );
        assert_eq!(
            state_of(&json!({"Status": "Running"})),
            RemediationState::Running
        );
        assert_eq!(
            state_of(&json!({"Status": "Success", "Output": "updated"})),
            RemediationState::Succeeded("updated".into())
        );
        assert!(matches!(
            state_of(&json!({"Status": "Failed"})),
            RemediationState::Failed(words) if words.contains("Failed")
        ));
    }
}
