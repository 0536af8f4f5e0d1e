//! Glue between the generated bindings and the SDK's types. Not part of the
//! API; the export macros call into it.

#[cfg(all(feature = "connector", feature = "csv-provider"))]
compile_error!("enable one of the cairn-sdk features `connector` and `csv-provider`, not both");

// Generated bindings: the lowered `invoke` takes the request's fields as
// flat arguments.
#[cfg(feature = "connector")]
#[allow(clippy::too_many_arguments)]
pub mod connector {
    wit_bindgen::generate!({
        path: "wit/v0.4",
        world: "connector",
        generate_all,
        pub_export_macro: true,
        default_bindings_module: "cairn_sdk::__private::connector",
    });
}

#[cfg(feature = "csv-provider")]
pub mod csv_provider {
    wit_bindgen::generate!({
        path: "wit/v0.4",
        world: "csv-provider",
        generate_all,
        pub_export_macro: true,
        default_bindings_module: "cairn_sdk::__private::csv_provider",
    });
}

#[cfg(feature = "connector")]
use connector::cairn::plugin0_2_0::{host, types as wit};
#[cfg(all(feature = "csv-provider", not(feature = "connector")))]
use csv_provider::cairn::plugin0_2_0::{host, types as wit};

use crate::{Error, LogLevel};

/// Sends panic messages to the host log before the trap, so the host can
/// report why the call failed.
fn install_panic_hook() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            log(LogLevel::Error, &format!("panic: {info}"));
        }));
    });
}

pub fn log(level: LogLevel, message: &str) {
    let level = match level {
        LogLevel::Trace => wit::LogLevel::Trace,
        LogLevel::Debug => wit::LogLevel::Debug,
        LogLevel::Info => wit::LogLevel::Info,
        LogLevel::Warn => wit::LogLevel::Warn,
        LogLevel::Error => wit::LogLevel::Error,
    };
    host::log(level, message);
}

fn request_to_wit(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> wit::HttpRequest {
    wit::HttpRequest {
        method: method.to_string(),
        url: url.to_string(),
        headers: headers
            .iter()
            .map(|(name, value)| wit::Header {
                name: name.to_string(),
                value: value.to_string(),
            })
            .collect(),
        body: body.to_vec(),
    }
}

fn response_from_wit(r: wit::HttpResponse) -> crate::http::Response {
    crate::http::Response {
        status: r.status,
        headers: r.headers.into_iter().map(|h| (h.name, h.value)).collect(),
        body: r.body,
    }
}

pub fn send(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<crate::http::Response, Error> {
    host::send(&request_to_wit(method, url, headers, body))
        .map(response_from_wit)
        .map_err(error_from_wit)
}

pub fn send_all(requests: &[crate::http::Request]) -> Vec<Result<crate::http::Response, Error>> {
    let requests: Vec<wit::HttpRequest> = requests
        .iter()
        .map(|r| {
            let headers: Vec<(&str, &str)> = r
                .headers
                .iter()
                .map(|(n, v)| (n.as_str(), v.as_str()))
                .collect();
            request_to_wit(&r.method, &r.url, &headers, &r.body)
        })
        .collect();
    host::send_all(&requests)
        .into_iter()
        .map(|answer| answer.map(response_from_wit).map_err(error_from_wit))
        .collect()
}

fn error_from_wit(err: wit::PluginError) -> Error {
    match err {
        wit::PluginError::Config(m) => Error::Config(m),
        wit::PluginError::Auth(a) => Error::Auth {
            status: a.status,
            message: a.message,
            permission_hint: a.permission_hint,
        },
        wit::PluginError::RateLimited(s) => Error::RateLimited {
            retry_after_secs: s,
        },
        wit::PluginError::Transient(m) => Error::Transient(m),
        wit::PluginError::Upstream(m) => Error::Upstream(m),
        wit::PluginError::InvalidInput(p) => Error::InvalidInput {
            field: p.field,
            message: p.message,
        },
        wit::PluginError::NotFound(m) => Error::NotFound(m),
    }
}

#[cfg(feature = "connector")]
fn error_to_wit(err: Error) -> wit::PluginError {
    match err {
        Error::Config(m) => wit::PluginError::Config(m),
        Error::Auth {
            status,
            message,
            permission_hint,
        } => wit::PluginError::Auth(wit::AuthFailure {
            status,
            message,
            permission_hint,
        }),
        Error::RateLimited { retry_after_secs } => wit::PluginError::RateLimited(retry_after_secs),
        Error::Transient(m) => wit::PluginError::Transient(m),
        Error::Upstream(m) => wit::PluginError::Upstream(m),
        Error::InvalidInput { field, message } => {
            wit::PluginError::InvalidInput(wit::FieldProblem { field, message })
        }
        Error::NotFound(m) => wit::PluginError::NotFound(m),
    }
}

#[cfg(feature = "connector")]
fn parse_config(config: &str) -> Result<serde_json::Value, wit::PluginError> {
    serde_json::from_str(config)
        .map_err(|e| wit::PluginError::Config(format!("config is not JSON: {e}")))
}

#[cfg(feature = "connector")]
pub use connector_exports::*;

#[cfg(feature = "connector")]
mod connector_exports {
    use super::*;
    use crate::Connector;

    pub fn describe_connector<C: Connector>() -> String {
        install_panic_hook();
        let mut descriptor = C::describe();
        descriptor.sdk_version = crate::SDK_VERSION.to_string();
        // Remediations come from their own trait method, not a descriptor
        // field: a connector that lists every field of `Descriptor` (as
        // the 0.3.0 guide did) keeps compiling.
        let mut described = serde_json::to_value(&descriptor).unwrap_or_default();
        if let Some(object) = described.as_object_mut() {
            object.insert(
                "remediations".into(),
                serde_json::to_value(C::remediations()).unwrap_or_default(),
            );
        }
        described.to_string()
    }

    pub fn check<C: Connector>(config: String) -> Result<(), wit::PluginError> {
        install_panic_hook();
        C::check(&parse_config(&config)?).map_err(error_to_wit)
    }

    pub fn fetch<C: Connector>(
        config: String,
        stream: String,
        cursor: Option<String>,
    ) -> Result<(String, Option<String>), wit::PluginError> {
        install_panic_hook();
        let page =
            C::fetch(&parse_config(&config)?, &stream, cursor.as_deref()).map_err(error_to_wit)?;
        let records = serde_json::Value::Array(page.records).to_string();
        Ok((records, page.next_cursor))
    }

    pub fn map_records<C: Connector>(stream: String, records: Vec<String>) -> Vec<u8> {
        install_panic_hook();
        let input_bytes = records.iter().map(String::len).sum();
        let mut page = crate::row_page::RowPageWriter::with_input_bytes(input_bytes);
        for raw in &records {
            let mapped = serde_json::from_str(raw)
                .map_err(|e| format!("record is not JSON: {e}"))
                .and_then(|record| C::map_record(&stream, &record));
            match mapped {
                Ok(rows) => page.rows(&rows),
                Err(reason) => page.failed(&reason),
            }
        }
        page.finish()
    }

    pub fn invoke<C: Connector>(
        config: String,
        request: wit::ActionRequest,
    ) -> Result<String, wit::PluginError> {
        install_panic_hook();
        let body: serde_json::Value = serde_json::from_str(&request.body).map_err(|e| {
            wit::PluginError::InvalidInput(wit::FieldProblem {
                field: "body".into(),
                message: format!("not JSON: {e}"),
            })
        })?;
        let pairs = |params: Vec<wit::Param>| -> Vec<(String, String)> {
            params.into_iter().map(|p| (p.name, p.value)).collect()
        };
        let request = crate::ActionRequest {
            action: request.action,
            path_params: pairs(request.path_params),
            query: pairs(request.query),
            body,
        };
        C::invoke(&parse_config(&config)?, &request)
            .map(|v| v.to_string())
            .map_err(error_to_wit)
    }

    pub fn remediate<C: Connector>(
        config: String,
        request: super::connector::RemediationRequest,
    ) -> Result<String, wit::PluginError> {
        install_panic_hook();
        let inputs: serde_json::Value = serde_json::from_str(&request.inputs).map_err(|e| {
            wit::PluginError::InvalidInput(wit::FieldProblem {
                field: "inputs".into(),
                message: format!("not JSON: {e}"),
            })
        })?;
        let request = crate::RemediationRequest {
            action: request.action,
            device: request.device,
            inputs,
        };
        C::remediate(&parse_config(&config)?, &request).map_err(error_to_wit)
    }

    pub fn remediation_status<C: Connector>(
        config: String,
        handle: String,
    ) -> Result<super::connector::RemediationState, wit::PluginError> {
        use super::connector::RemediationState as Wit;
        install_panic_hook();
        let state =
            C::remediation_status(&parse_config(&config)?, &handle).map_err(error_to_wit)?;
        Ok(match state {
            crate::RemediationState::Pending => Wit::Pending,
            crate::RemediationState::Running => Wit::Running,
            crate::RemediationState::Succeeded(words) => Wit::Succeeded(words),
            crate::RemediationState::Failed(words) => Wit::Failed(words),
        })
    }
}

#[cfg(feature = "csv-provider")]
pub use csv_exports::*;

#[cfg(feature = "csv-provider")]
mod csv_exports {
    use super::*;
    use crate::CsvProvider;

    pub fn describe_csv<P: CsvProvider>() -> String {
        install_panic_hook();
        let mut descriptor = P::describe();
        descriptor.sdk_version = crate::SDK_VERSION.to_string();
        serde_json::to_string(&descriptor).unwrap_or_default()
    }

    pub fn map_rows<P: CsvProvider>(headers: Vec<String>, rows: Vec<Vec<String>>) -> Vec<u8> {
        install_panic_hook();
        let input_bytes = rows.iter().flatten().map(String::len).sum();
        let mut page = crate::row_page::RowPageWriter::with_input_bytes(input_bytes);
        for cells in &rows {
            match P::map_row(&crate::CsvRow::new(&headers, cells)) {
                Ok(rows) => page.rows(&rows),
                Err(reason) => page.failed(&reason),
            }
        }
        page.finish()
    }
}
