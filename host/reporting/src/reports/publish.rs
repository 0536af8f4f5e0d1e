//! Publishing a written report into a client's documents in the client
//! portal. The portal is a sibling area, so reporting declares what it
//! needs ([`Shelf`]) and the composition root hands it the portal's.

use std::sync::Arc;

use async_trait::async_trait;

use cairn_core::ids::TenantId;
use cairn_core::uploads::Received;

/// Where a report's file can be published: a portal client's documents.
#[async_trait]
pub trait Shelf: Send + Sync {
    /// Whether `client_id` is one of `tenant`'s portal clients.
    async fn knows(&self, tenant: &TenantId, client_id: &str) -> anyhow::Result<bool>;

    /// Keeps `file` (its temporary file is moved) as one of the client's
    /// documents; the document's id.
    async fn publish(
        &self,
        tenant: &TenantId,
        client_id: &str,
        file: Received,
    ) -> anyhow::Result<String>;
}

/// The shelf the composition root hands the reports area.
pub type Shelves = Arc<dyn Shelf>;
