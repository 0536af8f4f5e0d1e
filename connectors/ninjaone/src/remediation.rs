//! Remediation through NinjaOne scripts (SDK 0.4).
//!
//! NinjaOne changes a device by running a script (or a built-in action) on
//! it: `POST /v2/device/{id}/script/run` with `{type: "SCRIPT", id,
//! parameters, runAs}`, answered without a body. The run's outcome is an
//! activity of the device (`GET /v2/device/{id}/activities`, newest first,
//! `newerThan` an activity id): its `sourceName` is the script's name and
//! its `activityResult` says `SUCCESS` or `FAILURE`. So a run first reads
//! the script's name from the device's scripting options (which also tells
//! whether the script may run there at all) and the device's newest
//! activity id; the handle `<device>:<activity id>:<script id>` finds the
//! run's activity later. Updating a package is the operator's own script
//! (config `update_script_id`), which receives
//! `-Package "<name>" -Version "<version>"`.

use cairn_sdk::{
    base_url, http, json, package_inputs, text_of, Config, Error, Remediation, RemediationKind,
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
            summary: "Run a NinjaOne script on the device".into(),
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

/// A script argument: `-Name "value"`. A quote or a backtick would end or
/// escape the value in PowerShell, so neither may appear in it.
fn argument(name: &str, value: &str) -> Result<String, Error> {
    if value.contains(['"', '`']) || value.chars().any(char::is_control) {
        return Err(Error::InvalidInput {
            field: name.to_lowercase(),
            message: "may not contain a quote, a backtick or a control character".into(),
        });
    }
    Ok(format!("-{name} \"{value}\""))
}

fn device_id(device: &str) -> Result<u64, Error> {
    device.parse().map_err(|_| Error::InvalidInput {
        field: "device".into(),
        message: format!("{device:?} is not a NinjaOne device id"),
    })
}

/// What to run for `request`: the script id and its parameters.
pub fn script_of(config: &Config, request: &RemediationRequest) -> Result<(u64, String), Error> {
    let inputs = &request.inputs;
    match request.action.as_str() {
        UPDATE_PACKAGE => {
            let script = config["update_script_id"].as_u64().ok_or_else(|| {
                Error::Config(
                    "set update_script_id to the NinjaOne script that updates a package".into(),
                )
            })?;
            let package = inputs["package"].as_str().unwrap_or_default();
            let version = inputs["version"].as_str().unwrap_or_default();
            Ok((
                script,
                [argument("Package", package)?, argument("Version", version)?].join(" "),
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

/// The name of script `script` among the device's scripting options, or
/// why it cannot run there.
fn script_name(base: &str, device: u64, script: u64) -> Result<String, Error> {
    let options = http::get_json(&format!("{base}/v2/device/{device}/scripting/options"))?;
    options["scripts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["type"] == "SCRIPT" && s["id"].as_u64() == Some(script))
        .and_then(|s| text_of(&s["name"]))
        .ok_or_else(|| {
            Error::Config(format!(
                "NinjaOne offers no script {script} for device {device} (not in its scripting options)"
            ))
        })
}

/// The device's activities newer than `after`, newest first.
fn activities_after(base: &str, device: u64, after: u64) -> Result<Vec<Value>, Error> {
    let answer = http::get_json(&format!(
        "{base}/v2/device/{device}/activities?newerThan={after}&pageSize=200"
    ))?;
    Ok(answer["activities"].as_array().cloned().unwrap_or_default())
}

/// The newest activity id of the device (0 when it has none).
fn newest_activity(base: &str, device: u64) -> Result<u64, Error> {
    let answer = http::get_json(&format!("{base}/v2/device/{device}/activities?pageSize=1"))?;
    Ok(answer["activities"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["id"].as_u64())
        .max()
        .unwrap_or(0))
}

/// Runs the script now; the handle is `<device>:<activity id>:<script id>`.
pub fn remediate(config: &Config, request: &RemediationRequest) -> Result<String, Error> {
    let base = base_url(config, "base_url")?;
    let device = device_id(&request.device)?;
    let (script, parameters) = script_of(config, request)?;
    script_name(base, device, script)?;
    let after = newest_activity(base, device)?;
    let run_as = config["run_as"].as_str().unwrap_or("system");
    let body = json!({
        "type": "SCRIPT",
        "id": script,
        "parameters": parameters,
        "runAs": run_as,
    });
    let answer = http::send(
        "POST",
        &format!("{base}/v2/device/{device}/script/run"),
        &[("content-type", "application/json")],
        &cairn_sdk::serde_json::to_vec(&body)?,
    )?;
    if !(200..300).contains(&answer.status) {
        return Err(Error::from_status(
            answer.status,
            &String::from_utf8_lossy(&answer.body),
        ));
    }
    Ok(format!("{device}:{after}:{script}"))
}

/// The run's state, from the device's activities since it started.
pub fn status(config: &Config, handle: &str) -> Result<RemediationState, Error> {
    let base = base_url(config, "base_url")?;
    let unknown = || Error::NotFound(format!("unknown remediation job {handle}"));
    let mut parts = handle.split(':').map(str::parse::<u64>);
    let (Some(Ok(device)), Some(Ok(after)), Some(Ok(script)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(unknown());
    };
    let name = script_name(base, device, script)?;
    Ok(state_of(&activities_after(base, device, after)?, &name))
}

/// The state the newest activity of script `name` says.
pub fn state_of(activities: &[Value], name: &str) -> RemediationState {
    let Some(run) = activities
        .iter()
        .filter(|a| a["sourceName"].as_str() == Some(name))
        .max_by_key(|a| a["id"].as_u64().unwrap_or(0))
    else {
        return RemediationState::Pending;
    };
    let message = run["message"].as_str().unwrap_or_default().to_string();
    match run["activityResult"].as_str().unwrap_or_default() {
        "SUCCESS" => RemediationState::Succeeded(message),
        "FAILURE" | "UNSUPPORTED" => RemediationState::Failed(if message.is_empty() {
            format!("NinjaOne reports {}", run["activityResult"])
        } else {
            message
        }),
        _ => RemediationState::Running,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(action: &str, inputs: Value) -> RemediationRequest {
        RemediationRequest {
            action: action.into(),
            device: "41".into(),
            inputs,
        }
    }

    #[test]
    fn an_update_runs_the_configured_script_with_package_and_version() {
        let config = json!({"update_script_id": 77});
        let (script, parameters) = script_of(
            &config,
            &request(
                UPDATE_PACKAGE,
                json!({"package": "Google Chrome", "version": "112.0.5615.137"}),
            ),
        )
        .unwrap();
        assert_eq!(script, 77);
        assert_eq!(
            parameters,
            "-Package \"Google Chrome\" -Version \"112.0.5615.137\""
        );
        assert!(matches!(
            script_of(
                &json!({}),
                &request(UPDATE_PACKAGE, json!({"package": "a", "version": "1"}))
            ),
            Err(Error::Config(_))
        ));
        for bad in ["a\"; Remove-Item C:\\", "a`b", "a\nb"] {
            assert!(matches!(
                script_of(&config, &request(UPDATE_PACKAGE, json!({"package": bad, "version": "1"}))),
                Err(Error::InvalidInput { field, .. }) if field == "package"
            ));
        }
    }

    #[test]
    fn the_newest_activity_of_the_script_says_the_state() {
        let activity = |id: u64, name: &str, result: &str| {
            json!({"id": id, "sourceName": name, "activityResult": result, "status": "COMPLETED",
                   "message": format!("{name} {result}")})
        };
        let update = "Update package";
        for (activities, expected) in [
            (vec![], RemediationState::Pending),
            (
                vec![activity(5, "Other script", "SUCCESS")],
                RemediationState::Pending,
            ),
            (
                vec![activity(6, update, "UNCOMPLETED")],
                RemediationState::Running,
            ),
            (
                vec![
                    activity(7, update, "FAILURE"),
                    activity(9, update, "SUCCESS"),
                ],
                RemediationState::Succeeded("Update package SUCCESS".into()),
            ),
            (
                vec![activity(8, update, "FAILURE")],
                RemediationState::Failed("Update package FAILURE".into()),
            ),
        ] {
            assert_eq!(state_of(&activities, update), expected, "{activities:?}");
        }
    }
}
