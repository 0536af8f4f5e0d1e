//! WebAssembly plugins: connectors and CSV providers loaded at start from a
//! directory, each call in a fresh sandboxed instance.
//!
//! - [`loader`] scans the directory, compiles (with an on-disk cache keyed by
//!   the engine's compatibility hash and the file's SHA-256), type-checks,
//!   reads each descriptor and checks its SDK version. A bad file is logged
//!   and skipped.
//! - [`runtime`] runs one call: a new store with a memory cap, WASI with no
//!   filesystem, environment or sockets, and the host imports (`send`, `log`,
//!   `now-ms`). A running guest yields its thread every epoch tick; the whole
//!   call, host waits included, is dropped at its wall-clock deadline.
//! - [`rows`] is what mappings return, with the size caps every row meets.
//! - [`outbound`] is the `send` import: the allow-list, plain-http grants,
//!   response caps and 429 retries.
//!
//! Nothing here names a vendor: what a connector is comes from its descriptor.

pub mod descriptor;
mod engine;
mod instances;
pub mod loader;
pub mod outbound;
mod row_page;
pub mod rows;
pub mod runtime;
mod v01;

pub use descriptor::{
    Action, AuthScheme, Collection, ConfigFrom, ConnectorDescriptor, CsvDescriptor, FieldType,
    Pull, View, WebhookSignature,
};
pub use loader::{ActionCall, LoadedConnector, LoadedCsvProvider, Plugins, Skipped};
pub use rows::{InventoryRow, MappedRow, RecordRow, RowText};
pub use runtime::{CallError, CallScope};

/// SDK versions this host loads (major.minor of `cairn-sdk`).
pub const SUPPORTED_SDK: &[&str] = &["0.1", "0.2", "0.3"];
