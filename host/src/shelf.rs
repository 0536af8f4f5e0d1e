//! The client portal's documents as the reports area's shelf: reporting and
//! the portal are sibling areas, so the composition root joins them.

use std::sync::Arc;

use async_trait::async_trait;

use cairn_core::ids::TenantId;
use cairn_core::uploads::Received;
use cairn_platform::app::AppState;
use cairn_reporting::reports::publish::{Shelf, Shelves};

struct PortalDocuments {
    state: AppState,
}

#[async_trait]
impl Shelf for PortalDocuments {
    async fn knows(&self, tenant: &TenantId, client_id: &str) -> anyhow::Result<bool> {
        Ok(cairn_portal::clients::exists(&self.state.db, tenant, client_id).await?)
    }

    async fn publish(
        &self,
        tenant: &TenantId,
        client_id: &str,
        file: Received,
    ) -> anyhow::Result<String> {
        let kept = cairn_portal::files::keep(
            &self.state.db,
            &self.state.blobs.portal,
            tenant,
            client_id,
            &file,
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
        Ok(kept.id)
    }
}

/// The portal's documents, for the reports area.
pub fn portal_documents(state: &AppState) -> Shelves {
    Arc::new(PortalDocuments {
        state: state.clone(),
    })
}
