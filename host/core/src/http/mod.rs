//! The HTTP vocabulary every area's routes share: the one error type with
//! its mapping to statuses, the JSON extractor that answers a bad body with
//! that error, and the middleware that adds the path to a 500.

pub mod error;
pub mod json;
pub mod middleware;
pub mod paging;
