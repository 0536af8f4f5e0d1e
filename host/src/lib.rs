//! Cairn's service: the composition root that assembles every area's
//! routes, job handlers and schedules into one server. See ARCHITECTURE.md
//! at the repository root for the map.

pub mod allocator;
pub mod areas;
pub mod http;
pub mod logging;
pub mod reload;
pub mod server;
pub mod shelf;
