//! The ids every area passes around. Each is its own type so that one
//! cannot stand for another: a tenant id is never taken for a user id.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A tenant's id. Distinct from [`UserId`] so one cannot stand for the other.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = String)]
pub struct TenantId(pub String);

/// A user's id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(transparent)]
#[schema(value_type = String)]
pub struct UserId(pub String);

impl TenantId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl UserId {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}
