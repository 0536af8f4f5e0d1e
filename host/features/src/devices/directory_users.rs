//! A device's user shown as a directory user when a directory area knows
//! the address (by UPN, mail or alias, ignoring case).

use super::assets::AssetView;
use super::storage::DeviceView;
use cairn_core::ids::TenantId;
use cairn_integrations::{directory_users_named, DirectoryUser};
use cairn_platform::app::AppState;

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
    state: &AppState,
    tenant: &TenantId,
    views: &mut [T],
) -> sqlx::Result<()> {
    let mut addresses: Vec<String> = views.iter().flat_map(HasUser::user_addresses).collect();
    addresses.sort();
    addresses.dedup();
    let named = directory_users_named(&state.db, &state.plugins, tenant, &addresses).await?;
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
