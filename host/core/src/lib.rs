//! Cairn's shared vocabulary: what every area needs and nothing else.
//!
//! Settings, the database handle and its dialect helpers, the id types, the
//! HTTP error and JSON body every route answers with, and the few services
//! every layer may hold (mail, blob store, secret box, upload checks). No
//! module here knows any area; the layering test (`tests/layers.rs`) keeps
//! it that way. It owns no table: it runs the migrations that create them.

pub mod blobs;
pub mod clock;
pub mod db;
pub mod http;
pub mod ids;
pub mod mail;
pub mod secrets;
pub mod settings;
pub mod telemetry;
pub mod uploads;
