//! # cairn-sdk
//!
//! Write a Cairn connector (an integration that syncs devices, software,
//! users, threats, findings or tickets from an upstream API) or a CSV
//! provider as a WebAssembly component.
//!
//! A connector is a type implementing [`Connector`], exported with
//! [`export_connector!`]; a CSV provider implements [`CsvProvider`] and is
//! exported with [`export_csv_provider!`]. Build with
//! `cargo build --release --target wasm32-wasip2` and drop the `.wasm` file
//! into the host's connectors directory. See `sdk/README.md`.
//!
//! Enable the SDK feature of the world you implement: `connector` or
//! `csv-provider`.
//!
//! Credentials never reach a component: the descriptor names an
//! [`AuthScheme`] and the host signs every request [`http::send`] makes.

mod allocator;
mod csv_row;
mod descriptor;
mod error;
pub mod http;
pub mod records;
mod remediation;
#[doc(hidden)]
pub mod row_page;
mod rows;
pub mod scanner;
pub mod time;

#[doc(hidden)]
pub mod __private;

#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
pub use allocator::SizeClassAllocator;
pub use allocator::SizeClasses;
pub use csv_row::CsvRow;
pub use descriptor::{
    column_aliases, Action, AuthScheme, Collection, ConfigFrom, CsvDescriptor, CsvTarget,
    Descriptor, Field, FieldType, Pull, Related, View, WebhookSignature,
};
pub use error::{base_url, text_of, without_keys, Error};
pub use remediation::{
    package_inputs, Remediation, RemediationKind, RemediationRequest, RemediationState,
};
pub use rows::{InventoryItem, Row, SourceRecord};
/// The JSON crate the SDK speaks, so a connector needs no dependency of
/// its own for it (`cairn_sdk::serde_json::from_str`).
pub use serde_json;
pub use serde_json::{json, Value};

/// The version of this SDK, stamped into every component through its
/// descriptor; the host refuses components built against a version it does
/// not support.
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The tenant's stored config for this connector, as JSON. Secret fields are
/// present only for the host's own use and arrive here redacted.
pub type Config = Value;

/// One page of raw upstream records and where the next page starts.
#[derive(Debug, Clone, Default)]
pub struct Page {
    /// Raw records as the upstream sent them; [`Connector::map_record`] maps each.
    pub records: Vec<Value>,
    /// Opaque cursor of the next page; `None` on the last page.
    pub next_cursor: Option<String>,
}

/// A call of one of the descriptor's [`Action`]s, after the host checked
/// its path, query and body against the declaration.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ActionRequest {
    /// The action's declared name.
    pub action: String,
    /// The path's `{name}` segments, decoded.
    pub path_params: Vec<(String, String)>,
    /// The query parameters, decoded, in order.
    pub query: Vec<(String, String)>,
    /// The request body (`Value::Null` when the action takes none).
    pub body: Value,
}

impl ActionRequest {
    /// The path parameter `name`; the host guarantees every declared one.
    pub fn path_param(&self, name: &str) -> Result<&str, Error> {
        self.path_params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .ok_or_else(|| Error::InvalidInput {
                field: name.into(),
                message: "missing path parameter".into(),
            })
    }

    /// The first query parameter `name`, if given.
    pub fn query_param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// An integration. Only [`Connector::describe`], [`Connector::fetch`] and
/// [`Connector::map_record`] must be written; the rest have documented
/// defaults.
pub trait Connector {
    /// Static facts: id, area, config schema, streams, hosts, auth scheme.
    fn describe() -> Descriptor;

    /// Checks that the config works with one cheap live call. The default
    /// fetches the first page of the first stream.
    fn check(config: &Config) -> Result<(), Error> {
        let descriptor = Self::describe();
        match descriptor.streams.first() {
            Some(stream) => Self::fetch(config, stream, None).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Fetches one page of `stream` starting at `cursor` (`None`: the start).
    fn fetch(config: &Config, stream: &str, cursor: Option<&str>) -> Result<Page, Error>;

    /// Maps one raw record of `stream` to rows. An error rejects this record
    /// only; the rest of the page goes on.
    fn map_record(stream: &str, record: &Value) -> Result<Vec<Row>, String>;

    /// A live action such as creating a ticket or a payment link, one of
    /// the descriptor's [`Action`]s. Its answer is returned to the caller
    /// as JSON. The default supports none.
    fn invoke(config: &Config, request: &ActionRequest) -> Result<Value, Error> {
        let _ = config;
        Err(Error::NotFound(format!(
            "unsupported action: {}",
            request.action
        )))
    }

    /// The remediation actions this connector can carry out on a device
    /// (SDK 0.4). The default offers none, and the host never calls
    /// [`Connector::remediate`] on such a connector.
    fn remediations() -> Vec<Remediation> {
        vec![]
    }

    /// Starts `request` upstream and answers the upstream job's handle,
    /// which the host later passes to [`Connector::remediation_status`].
    /// Say why a device cannot be remediated with a typed [`Error`]
    /// (`NotFound` for a device the upstream no longer knows).
    fn remediate(config: &Config, request: &RemediationRequest) -> Result<String, Error> {
        let _ = config;
        Err(Error::NotFound(format!(
            "unsupported remediation: {}",
            request.action
        )))
    }

    /// Where the upstream job `handle` (from [`Connector::remediate`])
    /// stands.
    fn remediation_status(config: &Config, handle: &str) -> Result<RemediationState, Error> {
        let _ = config;
        Err(Error::NotFound(format!("unknown remediation job {handle}")))
    }
}

/// A CSV/Excel provider: says which columns it understands and maps rows.
pub trait CsvProvider {
    fn describe() -> CsvDescriptor;

    /// Maps one data row to rows (usually one). An error rejects this row
    /// only, and its message is shown to the operator with the row number:
    /// say what is wrong and which column to fix.
    fn map_row(row: &CsvRow) -> Result<Vec<Row>, String>;
}

/// Writes a line to the host's log, tagged with the connector, tenant and job.
pub fn log(level: LogLevel, message: &str) {
    __private::log(level, message)
}

/// Log levels for [`log`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// Exports `$t` (a [`Connector`]) as this component's implementation.
#[cfg(feature = "connector")]
#[macro_export]
macro_rules! export_connector {
    ($t:ty) => {
        struct __CairnConnectorExport;
        impl $crate::__private::connector::Guest for __CairnConnectorExport {
            fn describe() -> ::std::string::String {
                $crate::__private::describe_connector::<$t>()
            }
            fn check(config: ::std::string::String) -> ::std::result::Result<(), $crate::__private::connector::PluginError> {
                $crate::__private::check::<$t>(config)
            }
            fn fetch(
                config: ::std::string::String,
                stream: ::std::string::String,
                cursor: ::std::option::Option<::std::string::String>,
            ) -> ::std::result::Result<(::std::string::String, ::std::option::Option<::std::string::String>), $crate::__private::connector::PluginError> {
                $crate::__private::fetch::<$t>(config, stream, cursor)
            }
            fn map_records(
                stream: ::std::string::String,
                records: ::std::vec::Vec<::std::string::String>,
            ) -> ::std::vec::Vec<u8> {
                $crate::__private::map_records::<$t>(stream, records)
            }
            fn invoke(
                config: ::std::string::String,
                request: $crate::__private::connector::ActionRequest,
            ) -> ::std::result::Result<::std::string::String, $crate::__private::connector::PluginError> {
                $crate::__private::invoke::<$t>(config, request)
            }
            fn remediate(
                config: ::std::string::String,
                request: $crate::__private::connector::RemediationRequest,
            ) -> ::std::result::Result<::std::string::String, $crate::__private::connector::PluginError> {
                $crate::__private::remediate::<$t>(config, request)
            }
            fn remediation_status(
                config: ::std::string::String,
                handle: ::std::string::String,
            ) -> ::std::result::Result<$crate::__private::connector::RemediationState, $crate::__private::connector::PluginError> {
                $crate::__private::remediation_status::<$t>(config, handle)
            }
        }
        $crate::__private::connector::export!(__CairnConnectorExport with_types_in $crate::__private::connector);
    };
}

/// Exports `$t` (a [`CsvProvider`]) as this component's implementation.
#[cfg(feature = "csv-provider")]
#[macro_export]
macro_rules! export_csv_provider {
    ($t:ty) => {
        struct __CairnCsvProviderExport;
        impl $crate::__private::csv_provider::Guest for __CairnCsvProviderExport {
            fn describe() -> ::std::string::String {
                $crate::__private::describe_csv::<$t>()
            }
            fn map_rows(
                headers: ::std::vec::Vec<::std::string::String>,
                rows: ::std::vec::Vec<::std::vec::Vec<::std::string::String>>,
            ) -> ::std::vec::Vec<u8> {
                $crate::__private::map_rows::<$t>(headers, rows)
            }
        }
        $crate::__private::csv_provider::export!(__CairnCsvProviderExport with_types_in $crate::__private::csv_provider);
    };
}
