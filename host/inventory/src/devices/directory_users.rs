//! A device's user shown as a directory user when a directory area knows
//! the address (by UPN, mail or alias, ignoring case). The directories are
//! the integrations' user collections, an area above this one: the devices
//! name no integration table and see them through [`UserDirectory`], which
//! the composition root fills (to the routes as an axum `Extension`).

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use super::assets::AssetView;
use super::storage::DeviceView;
use cairn_core::db::Db;
use cairn_core::ids::TenantId;

/// A device's user as a directory knows them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, utoipa::ToSchema)]
pub struct DirectoryUser {
    /// The user's key in the directory (the lowercased UPN).
    pub upn: String,
    pub display_name: Option<String>,
    /// The area that synced the user.
    pub source: String,
}

/// The directory areas as the devices see them.
#[async_trait]
pub trait UserDirectory: Send + Sync + 'static {
    /// The directory users named by `addresses`, by lowercased address (a
    /// user is named by their key, mail and aliases).
    async fn users_named(
        &self,
        db: &Db,
        tenant: &TenantId,
        addresses: &[String],
    ) -> sqlx::Result<HashMap<String, DirectoryUser>>;
}

/// The handle routes extract (`Extension<Directory>`).
#[derive(Clone)]
pub struct Directory(pub Arc<dyn UserDirectory>);

/// A view whose user can be looked up in the directory.
pub trait HasUser {
    /// The addresses the sources reported for the device's user.
    fn user_addresses(&self) -> Vec<String>;
    fn set_directory_user(&mut self, user: DirectoryUser);
}

impl HasUser for DeviceView {
    fn user_addresses(&self) -> Vec<String> {
        self.user_email.iter().cloned().collect()
    }

    fn set_directory_user(&mut self, user: DirectoryUser) {
        self.directory_user = Some(user);
    }
}

impl HasUser for AssetView {
    fn user_addresses(&self) -> Vec<String> {
        let area_user = |detail: &Option<serde_json::Value>| {
            detail
                .as_ref()
                .and_then(|d| d["user"].as_str())
                .map(String::from)
        };
        self.user_email
            .iter()
            .cloned()
            .chain(area_user(&self.mdm))
            .chain(area_user(&self.edr))
            .collect()
    }

    fn set_directory_user(&mut self, user: DirectoryUser) {
        self.directory_user = Some(user);
    }
}

/// Sets each view's directory user, with one lookup for the whole page.
pub async fn attach<T: HasUser>(
    db: &Db,
    directory: &Directory,
    tenant: &TenantId,
    views: &mut [T],
) -> sqlx::Result<()> {
    let mut addresses: Vec<String> = views.iter().flat_map(HasUser::user_addresses).collect();
    addresses.sort();
    addresses.dedup();
    let named = directory.0.users_named(db, tenant, &addresses).await?;
    if named.is_empty() {
        return Ok(());
    }
    for view in views {
        let found = view
            .user_addresses()
            .iter()
            .find_map(|a| named.get(&cairn_core::db::lower(a.trim())).cloned());
        if let Some(user) = found {
            view.set_directory_user(user);
        }
    }
    Ok(())
}
