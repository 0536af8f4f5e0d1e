//! Remediation: actions a connector carries out on a device of its
//! upstream (SDK 0.4, contract `cairn:plugin@0.4.0`).
//!
//! A connector lists what it can do in [`crate::Connector::remediations`];
//! the host plans, asks for approval, checks each request's inputs against
//! the declared schema, calls [`crate::Connector::remediate`] and follows the
//! upstream job with [`crate::Connector::remediation_status`]. What the
//! upstream answers is a report, not the proof: the host marks a finding
//! fixed only when a later sync or upload shows the fixed version.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a remediation does, so the host can choose one for a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RemediationKind {
    /// Updates installed software to a version. The host passes `package`
    /// (the software's name as inventoried), `version` (the lowest fixed
    /// version) and `vendor` when known.
    UpdatePackage,
    /// Installs software that is not there yet; inputs as for
    /// [`RemediationKind::UpdatePackage`].
    InstallPackage,
    /// Runs a named script or patch policy of the upstream.
    RunScript,
    /// Reboots the device.
    Reboot,
}

/// The inputs the host sends a [`RemediationKind::UpdatePackage`] or
/// [`RemediationKind::InstallPackage`] action, as the JSON Schema to
/// declare for it (SDK 0.4.1): `package` and `version` required, `vendor`
/// optional, nothing else.
pub fn package_inputs() -> Value {
    serde_json::json!({
        "type": "object",
        "required": ["package", "version"],
        "properties": {
            "package": {"type": "string", "minLength": 1, "maxLength": 200},
            "version": {"type": "string", "minLength": 1, "maxLength": 100},
            "vendor": {"type": "string", "maxLength": 200}
        },
        "additionalProperties": false
    })
}

/// A remediation action the connector offers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Remediation {
    /// Unique within the connector; what [`RemediationRequest::action`]
    /// carries.
    pub name: String,
    pub kind: RemediationKind,
    /// One line for the plan and the console.
    pub summary: String,
    /// JSON Schema of the inputs (an object schema). The host refuses a
    /// plan whose inputs do not fit it, naming the field.
    pub input_schema: Value,
}

/// A call of one of the connector's [`Remediation`]s on one device.
#[derive(Debug, Clone, PartialEq)]
pub struct RemediationRequest {
    /// The declared remediation's name.
    pub action: String,
    /// The device's key in the connector's own device collection: the `key`
    /// of the record its mapping produced for that device.
    pub device: String,
    /// The inputs, checked by the host against the declared schema.
    pub inputs: Value,
}

/// Where an upstream remediation job stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemediationState {
    /// Accepted, not started.
    Pending,
    /// Running on the device.
    Running,
    /// The upstream reports success, in its own words.
    Succeeded(String),
    /// The upstream reports failure, in its own words.
    Failed(String),
}
