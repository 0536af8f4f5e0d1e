//! Managed devices from Graph, a page at a time.

use cairn_sdk::{Config, Error, Page, Value};
use microsoft_graph::{get_page, graph_url};

/// The stream of managed devices, each with its detected apps attached.
pub const MANAGED_DEVICES: &str = "managed_devices";
/// The stream of the tenant's detected apps, with Intune's device counts.
pub const DETECTED_APPS: &str = "detected_apps";

/// Intune pages devices by 100 unless told otherwise.
const DEFAULT_PAGE_SIZE: u64 = 100;

/// What the app registration needs, named in every auth error.
pub const PERMISSION_HINT: &str = "grant the app registration the application permissions \
     DeviceManagementManagedDevices.Read.All and DeviceManagementApps.Read.All, with admin consent";

fn page_size(config: &Config) -> u64 {
    config["page_size"]
        .as_u64()
        .unwrap_or(DEFAULT_PAGE_SIZE)
        .clamp(1, 1000)
}

fn first_page_url(config: &Config, top: u64) -> Result<String, Error> {
    Ok(format!(
        "{}/v1.0/deviceManagement/managedDevices?$top={top}",
        graph_url(config)?
    ))
}

/// One managed device, to check the credentials and the permissions.
pub fn first_device(config: &Config) -> Result<Vec<Value>, Error> {
    get_page(&first_page_url(config, 1)?, PERMISSION_HINT).map(|(devices, _)| devices)
}

/// One page of devices (from `cursor`, the previous page's
/// `@odata.nextLink`) with each device's apps under `_detectedApps`.
pub fn fetch_devices(config: &Config, cursor: Option<&str>) -> Result<Page, Error> {
    let url = match cursor {
        Some(next) => next.to_string(),
        None => first_page_url(config, page_size(config))?,
    };
    let (devices, next_cursor) = get_page(&url, PERMISSION_HINT)?;
    let records = crate::batch::attach_apps(config, devices)?;
    Ok(Page {
        records,
        next_cursor,
    })
}

/// One page of the tenant-wide detected apps (from `cursor`, the previous
/// page's `@odata.nextLink`).
pub fn fetch_detected_apps(config: &Config, cursor: Option<&str>) -> Result<Page, Error> {
    let url = match cursor {
        Some(next) => next.to_string(),
        None => format!(
            "{}/v1.0/deviceManagement/detectedApps?$top={}",
            graph_url(config)?,
            page_size(config)
        ),
    };
    let (records, next_cursor) = get_page(&url, PERMISSION_HINT)?;
    Ok(Page {
        records,
        next_cursor,
    })
}
