//! The parts of the OpenAPI document that no handler declares: info,
//! security schemes, tags.

use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Cairn",
        description = "Multi-tenant vulnerability and asset management API. Every route under \
                       `/api/v1` needs a session cookie (`cairn.session_token`) or a bearer JWT, \
                       except register, login and the public invite routes. Errors are JSON \
                       `{detail, type}` (`field` on validation errors, `path` on 500s).",
        license(name = "Apache-2.0")
    ),
    // The query tree is recursive, so its node types are registered here
    // rather than inlined where they are used.
    components(schemas(
        crate::inventory::search::QueryNode,
        crate::inventory::search::QueryRule,
        crate::inventory::search::QueryGroup,
    )),
    modifiers(&SecuritySchemes),
    security(("session_cookie" = []), ("bearer" = [])),
    tags(
        (name = "service", description = "Health, version, docs"),
        (name = "auth", description = "Accounts, sessions and tokens"),
        (name = "tenant", description = "The caller's organization and members"),
        (name = "invites", description = "Inviting people into a tenant"),
        (name = "jobs", description = "Background jobs: syncs and file parsing"),
        (name = "integrations", description = "Loaded connectors and CSV providers"),
        (name = "inventory", description = "Software rollup, items, vendors and structured search"),
        (name = "devices", description = "Assets (NetBIOS view), device names and asset search"),
        (name = "portal", description = "Running the client portal: clients, keys, invoices, payment webhooks"),
    )
)]
struct ApiDoc;

struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "session_cookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(
                crate::auth::SESSION_COOKIE,
            ))),
        );
    }
}

pub fn base() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    doc
}
