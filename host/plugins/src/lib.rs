//! WebAssembly plugins: connectors and CSV providers loaded from a directory
//! at start and again on reload, each call in a fresh sandboxed instance.
//!
//! - [`loader`] scans the directory, compiles (with an on-disk cache keyed by
//!   the engine's compatibility hash and the file's SHA-256), type-checks,
//!   reads each descriptor and checks its SDK version. A bad file is logged
//!   and skipped. [`Plugins::reload`] reads the directory again on the same
//!   engine, keeping unchanged modules and, for a file that no longer loads,
//!   the module loaded from it before; [`live`] holds the set serving now.
//! - [`runtime`] runs one call: a new store with a memory cap, WASI with no
//!   filesystem, environment or sockets, and the host imports (`send`, `log`,
//!   `now-ms`). A running guest yields its thread every epoch tick; the whole
//!   call, host waits included, is dropped at its wall-clock deadline.
//! - [`rows`] is what mappings return, with the size caps every row meets.
//! - [`outbound`] is the `send` import: the allow-list, plain-http grants,
//!   response caps and 429 retries.
//!
//! Nothing here names a vendor: what a connector is comes from its descriptor.
//! It owns no table and calls only the vocabulary; the areas call it.
//!
//! The WebAssembly plugin host. `loader.rs` scans the connectors directory,
//! compiles through an on-disk artifact cache (`engine.rs`, keyed by the
//! engine's compatibility hash and the file's SHA-256), type-checks against
//! the WIT worlds (current contract first, then v0.2, then v0.1), reads
//! descriptors, checks the SDK version and every declaration
//! (`descriptor.rs::check_declarations`: among others, no route the host
//! serves for the area, `HOST_AREA_ROUTES`, and no pull parameter named like
//! a config field, since parameters are merged into the config), and skips a
//! connector whose routes would not fit its area's router beside the others;
//! `instances.rs` dispatches each call to the bindings of the contract a
//! component was built against; `row_page.rs` reads the buffer of rows a
//! v0.3 component answers a mapping call with straight into the host's rows
//! (`rows.rs`; every length checked against what is left: a malformed buffer
//! fails the call, never panics; a row over the row caps fails its input
//! only), their texts `RowText`, held inline up to 24 bytes, so a page of
//! rows is read without an allocation per field; a page is mapped in runs of
//! at most 256 KiB of input on one instance, so the component's memory is
//! reused while in cache; `v01.rs` is the only place that knows the v0.1
//! contract: its host imports served by the current ones, its rows and
//! errors converted, its descriptor upgraded (id as area, kinds as
//! collections, the views v0.1 hosts served, actions as `GET`s, its fixed
//! token-exchange keys); `runtime.rs` holds the `bindgen!` of both worlds of
//! the three contracts (v0.3 imports v0.2's host interface and types, so one
//! set of host imports serves v0.2 and v0.3), the store of one call (fresh
//! instance, memory cap, a yield to the runtime every epoch tick, WASI with
//! nothing granted), `bounded` (the wall-clock deadline every call,
//! instantiation included, runs under, so a guest parked in a sleep or a
//! slow upstream is stopped too) and the host imports; `rows.rs` the mapped
//! rows and their size caps (a row over them rejects its record or CSV row
//! with the reason); `outbound/` is the one outbound path, used by plugins
//! and reference-data sources alike: `policy.rs` (exact origins: scheme,
//! host, port; no user information; plain http by grant), `addresses.rs`
//! (the private-address rule, applied in the HTTP client's resolver so it
//! holds at connect time), and `mod.rs` (credentials, redirects followed by
//! hand with each hop re-checked, size cap, 429 waits, token caches keyed by
//! tenant, connector and config, and `send_all`, a batch at most the
//! connector's `max_concurrent_requests` at once, capped by the operator).

mod bindings;
pub mod descriptor;
mod engine;
mod instances;
pub mod live;
pub mod loader;
pub mod outbound;
mod row_page;
pub mod rows;
pub mod runtime;
mod v01;

pub use descriptor::{
    Action, AuthScheme, Collection, ColumnAlias, ConfigFrom, ConnectorDescriptor, CsvDescriptor,
    FieldType, Pull, Remediation, RemediationKind, View, WebhookSignature,
};
pub use live::{ChangedModule, LivePlugins, PluginChanges};
pub use loader::{
    ActionCall, LoadedConnector, LoadedCsvProvider, Plugins, RemediationCall, RemediationStatus,
    Skipped,
};
pub use rows::{InventoryRow, MappedRow, RecordRow, RowText};
pub use runtime::{CallError, CallScope};

/// SDK versions this host loads (major.minor of `cairn-sdk`).
pub const SUPPORTED_SDK: &[&str] = &["0.1", "0.2", "0.3", "0.4"];
