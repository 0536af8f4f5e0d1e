//! The parts of the OpenAPI document that no handler declares: info,
//! security schemes, tags, and the error answers every operation shares.

use utoipa::openapi::path::ParameterIn;
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{Content, Ref, RefOr, Response, ResponseBuilder};
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
        cairn_inventory::search::QueryNode,
        cairn_inventory::search::QueryRule,
        cairn_inventory::search::QueryGroup,
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
        (name = "research", description = "A CVE or a product researched against the tenant's devices, and the history"),
        (name = "versions", description = "Versions in use, compliance with minimum versions, outdated software"),
        (name = "weaknesses", description = "CWE weaknesses with their CVE counts"),
        (name = "tags", description = "Tags on CVEs, vendors and products"),
        (name = "projects", description = "Projects of vendors and products and their CVEs"),
        (name = "subscriptions", description = "Vendor and product subscriptions synced from NVD"),
        (name = "threat-intel", description = "Exploitation and likelihood of CVEs (KEV, EPSS), enrichment"),
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
                cairn_platform::auth::SESSION_COOKIE,
            ))),
        );
    }
}

pub fn base() -> utoipa::openapi::OpenApi {
    let mut doc = ApiDoc::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").to_string();
    doc
}

/// Documents the answers operations give that no handler declares: the
/// extractors' 400 (malformed JSON, wrong content type, a bad path value)
/// and 422 (a body or query value of the wrong shape), 401 where a
/// credential is needed, 404 where the path names something, and 429 from
/// the rate limit on `/api`. A response an operation declares itself is
/// kept as it is.
pub fn document_common_errors(doc: &mut utoipa::openapi::OpenApi) {
    let global_secured = doc.security.as_ref().is_some_and(|s| !s.is_empty());
    for (path, item) in doc.paths.paths.iter_mut() {
        let operations = [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ];
        for operation in operations.into_iter().flatten() {
            let parameters = operation.parameters.as_deref().unwrap_or_default();
            let has = |place: ParameterIn| parameters.iter().any(|p| p.parameter_in == place);
            let (in_path, in_query) = (has(ParameterIn::Path), has(ParameterIn::Query));
            let json_body = operation
                .request_body
                .as_ref()
                .is_some_and(|body| body.content.contains_key("application/json"));
            let any_body = operation.request_body.is_some();
            let secured = match &operation.security {
                None => global_secured,
                // No requirement, or an empty one among the alternatives:
                // no credential needed.
                Some(requirements) => {
                    !requirements.is_empty()
                        && !requirements.contains(&SecurityRequirement::default())
                }
            };
            let errors = [
                (
                    "400",
                    any_body || in_path,
                    "Malformed request: unreadable JSON or form, wrong content type, or a path value of the wrong type",
                ),
                (
                    "401",
                    secured,
                    "No valid credential",
                ),
                ("404", in_path, "Nothing by that name or id in the caller's tenant"),
                (
                    "422",
                    json_body || in_query,
                    "A body or query value of the wrong shape; `field` names it",
                ),
                (
                    "429",
                    path.starts_with("/api/"),
                    "Rate limited; `Retry-After` says when to try again",
                ),
            ];
            for (status, applies, description) in errors {
                if applies {
                    operation
                        .responses
                        .responses
                        .entry(status.to_string())
                        .or_insert_with(|| error_response(description));
                }
            }
        }
    }
}

fn error_response(description: &str) -> RefOr<Response> {
    RefOr::T(
        ResponseBuilder::new()
            .description(description)
            .content(
                "application/json",
                Content::new(Some(Ref::from_schema_name("ErrorBody"))),
            )
            .build(),
    )
}
