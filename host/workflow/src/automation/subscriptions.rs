//! What the `subscription_match` trigger reads: the CVEs the tenant's
//! subscriptions (vendors and products it follows) brought lately. The
//! subscriptions live in the intelligence area, above this one, so it
//! answers through this trait and the composition root hands it over.

use std::sync::Arc;

use async_trait::async_trait;

use cairn_core::db::Db;
use cairn_core::ids::TenantId;

/// A CVE a subscription brought: new to it, or changed since.
#[derive(Debug, Clone)]
pub struct SubscriptionMatch {
    pub subscription_id: String,
    /// `vendor` or `product`.
    pub sub_type: String,
    pub subscription_name: String,
    pub cve_id: String,
    /// `new` or `changed`.
    pub event: String,
    /// Unix ms.
    pub at: i64,
}

/// The subscriptions as automation sees them.
#[async_trait]
pub trait SubscriptionMatches: Send + Sync + 'static {
    /// The tenant's subscription matches at or after `since`, newest
    /// first, at most `limit`.
    async fn matches_since(
        &self,
        db: &Db,
        tenant: &TenantId,
        since: i64,
        limit: i64,
    ) -> sqlx::Result<Vec<SubscriptionMatch>>;
}

/// The source the area is built with.
#[derive(Clone)]
pub struct Subscriptions(pub Arc<dyn SubscriptionMatches>);

/// No subscriptions (a build without the intelligence area, and tests of
/// this area alone).
pub struct NoSubscriptions;

#[async_trait]
impl SubscriptionMatches for NoSubscriptions {
    async fn matches_since(
        &self,
        _db: &Db,
        _tenant: &TenantId,
        _since: i64,
        _limit: i64,
    ) -> sqlx::Result<Vec<SubscriptionMatch>> {
        Ok(vec![])
    }
}
