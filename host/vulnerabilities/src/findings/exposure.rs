//! The vulnerabilities area as the inventory sees it (see
//! [`cairn_inventory::exposure`]).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use cairn_core::db::Db;
use cairn_core::ids::TenantId;
use cairn_inventory::exposure::{CveExposure, Exposure};

/// The implementation the composition root hands to the inventory.
pub fn exposure() -> Exposure {
    Exposure(Arc::new(Findings))
}

struct Findings;

#[async_trait]
impl CveExposure for Findings {
    async fn open_cves_by_application(
        &self,
        db: &Db,
        tenant: &TenantId,
    ) -> sqlx::Result<Arc<HashMap<String, Vec<String>>>> {
        crate::findings::views::open_cves_by_application(db, tenant).await
    }

    async fn open_cve_count(&self, db: &Db, tenant: &TenantId) -> sqlx::Result<i64> {
        crate::findings::views::open_cve_count(db, tenant).await
    }

    async fn inventory_changed(&self, db: &Db, tenant: &TenantId) -> sqlx::Result<()> {
        crate::inventory_changed(db, tenant).await
    }
}
