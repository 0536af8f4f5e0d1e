//! The client portal: a tenant's customers read their invoices, pay them
//! through a payments connector and exchange documents, with a `chp_live_`
//! key. `api.rs` is the portal API under `/api` (its own OpenAPI document,
//! interface version 0.1.2, see CHANGELOG.md); `admin.rs` is how tenant admins run it under
//! `/api/v1/portal`. Documents are kept by `store.rs` (a local directory or
//! an S3-compatible bucket).
//!
//! The client portal. `keys.rs` mints and hashes `chp_live_` keys and is the
//! `PortalClient` extractor (tenant and client of the presented key);
//! `api.rs` the `/api` routes with their own OpenAPI document
//! (`portal::api()`); `admin.rs` the `/api/v1/portal` routes for tenant
//! admins and the payment webhook; `invoices.rs` the status machine and
//! storage; `payments.rs` payment links through the `payments` connector's
//! `invoke` and host-side webhook signature checks; `files.rs` the document
//! rows and the local store's signed download links; `store.rs` the blob
//! store (`BlobStore::Local`, a directory, or `BlobStore::S3`, an
//! S3-compatible bucket through `object_store`, path style, multipart above
//! 8 MiB, downloads by presigned URL). Each row records its store, so
//! switching `portal_store` strands nothing.

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

/// The portal API's routes, and its OpenAPI document.
pub fn api() -> (axum::Router<AppState>, OpenApi) {
    let base = OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("Cairn client portal API")
                .version("0.1.2")
                .description(Some(
                    "Invoices, hosted payment links and documents of one client, for the holder of \
                     its API key (`Authorization: Bearer chp_live_...`). A missing, malformed, unknown \
                     or revoked key is 401; another client's invoice or file is 404. Errors are \
                     `{detail, type}` JSON; amounts are integer cents, `currency` an upper-case ISO \
                     4217 code, `dueAt` and `paidAt` Unix epoch seconds.",
                ))
                .build(),
        )
        .build();
    let (router, mut doc) = OpenApiRouter::with_openapi(base)
        .merge(api::router())
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
