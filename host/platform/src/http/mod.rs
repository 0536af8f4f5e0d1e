//! The request-wide layers that need the shared state: rate limits and
//! request metrics.

pub mod limits;
pub mod metrics;
pub mod rate_limit;
pub mod recorder;
