//! What the inventory shows of the vulnerabilities area, which sits above
//! it: CVE counts beside applications and vendors, and the re-match a
//! rebuild asks for. The inventory names no vulnerability table; the
//! composition root hands it the vulnerabilities area's implementation (to
//! the routes as an axum `Extension`, to the rollup job at registration).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use cairn_core::db::Db;
use cairn_core::ids::TenantId;

/// The vulnerabilities area as the inventory sees it.
#[async_trait]
pub trait CveExposure: Send + Sync + 'static {
    /// Open CVE ids per installed application name (as inventory items
    /// name it, before the rollup folds names). The same `Arc` comes back
    /// while the answer is unchanged, so what a caller derives from it can
    /// be kept beside it.
    async fn open_cves_by_application(
        &self,
        db: &Db,
        tenant: &TenantId,
    ) -> sqlx::Result<Arc<HashMap<String, Vec<String>>>>;

    /// Distinct CVEs with an open finding on the tenant's devices.
    async fn open_cve_count(&self, db: &Db, tenant: &TenantId) -> sqlx::Result<i64>;

    /// Told after a rebuild changed the tenant's inventory: its findings
    /// may have changed too.
    async fn inventory_changed(&self, db: &Db, tenant: &TenantId) -> sqlx::Result<()>;
}

/// The handle routes extract (`Extension<Exposure>`) and jobs hold.
#[derive(Clone)]
pub struct Exposure(pub Arc<dyn CveExposure>);

impl std::ops::Deref for Exposure {
    type Target = dyn CveExposure;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}
