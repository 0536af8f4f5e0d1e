//! The client portal: a tenant's customers (portal clients) read their
//! invoices, pay them through a payments connector and exchange documents,
//! with a `chp_live_` key; a client linked to one of the partner's
//! customer tenants also decides that customer's SLA exceptions.
//!
//! - Owns `portal_clients`, `portal_keys`, `invoices`, `payment_events`
//!   and `portal_files`.
//! - Faces: `api()`, the portal API under `/api` with its own OpenAPI
//!   document (interface version in CHANGELOG.md), and `admin_router()`,
//!   how tenant admins run it under `/api/v1/portal` (and the payment
//!   webhook).
//! - Calls: the platform (state, callers), the plugin host (the payments
//!   connector's actions, through `cairn-integrations`' configured
//!   connector), the blob store for documents, and the workflow's SLA
//!   exceptions (`cairn_workflow::sla::exceptions`).
//!
//! `keys.rs` mints and hashes keys and is the `PortalClient` extractor
//! (tenant and client of the presented key); `invoices.rs` the status
//! machine and storage; `payments.rs` payment links and the host-side
//! webhook signature check; `files.rs` the document rows and the signed
//! download links.

mod admin;
mod api;
pub mod clients;
pub mod files;
pub mod invoices;
pub mod keys;
pub mod payments;

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{InfoBuilder, OpenApi, OpenApiBuilder};
use utoipa_axum::router::OpenApiRouter;

use cairn_platform::app::AppState;

pub use admin::router as admin_router;

/// The portal in the `/api/v1` service: how tenant admins run it, and the
/// payment webhook. (Its own API, [`api`], is served beside it.)
pub fn area(_state: &AppState) -> anyhow::Result<cairn_platform::area::Area> {
    Ok(cairn_platform::area::Area::new("portal").routes("/api/v1/portal", admin_router()))
}

/// The portal API's routes, and its OpenAPI document.
pub fn api() -> (axum::Router<AppState>, OpenApi) {
    let base = OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("Cairn client portal API")
                .version("0.3.0")
                .license(Some(
                    utoipa::openapi::LicenseBuilder::new()
                        .name("Apache-2.0")
                        .identifier(Some("Apache-2.0"))
                        .build(),
                ))
                .description(Some(
                    "Invoices, hosted payment links and documents of one client, and the SLA \
                     exceptions and remediation plans its provider asks it to decide, for the holder of \
                     its API key (`Authorization: Bearer chp_live_...`). A missing, malformed, unknown \
                     or revoked key is 401; another client's invoice or file is 404. Errors are \
                     `{detail, type}` JSON; amounts are integer cents, `currency` an upper-case ISO \
                     4217 code, `dueAt` and `paidAt` Unix epoch seconds.",
                ))
                .build(),
        )
        .build();
    let (router, mut doc) = OpenApiRouter::with_openapi(base)
        .nest("/api", api::router())
        .split_for_parts();
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "portal_key",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .bearer_format("chp_live_<key>")
                .build(),
        ),
    );
    doc.security = Some(vec![utoipa::openapi::security::SecurityRequirement::new(
        "portal_key",
        Vec::<String>::new(),
    )]);
    (router, doc)
}
