//! Router assembly and the cross-cutting HTTP pieces. Areas own their routes;
//! this module only mounts them and wraps them in middleware.
//!
//! The cross-cutting HTTP layer only: `error.rs` (the one `ApiError` and its
//! mapping), `json.rs` (our `Json`/`Path`/`Query`/ `Multipart` extractors so
//! rejections use our error body), `middleware.rs` (panics and 500s become
//! `{detail, type, path}`), `rate_limit.rs`, `metrics.rs`, `service.rs`
//! (health, root, docs), `openapi.rs` (info, security schemes, tags, and
//! `document_common_errors`, which adds the 400/401/404/422/429 answers
//! every operation shares to both documents; the schemathesis run in `cargo
//! xtask test`, driven by `xtask/fuzz.py`, holds the documents to what the
//! service answers).

pub mod admin;
mod closed_sets;
pub mod console;
mod openapi;
pub mod service;

use std::sync::Arc;

use axum::extract::{MatchedPath, Request};
use axum::http::{header, HeaderName, HeaderValue, Method};
use axum::middleware::{from_fn, from_fn_with_state};
use axum::response::IntoResponse;
use axum::{Extension, Router};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa_axum::router::OpenApiRouter;

use cairn_core::http::error::{self as error, ApiError};
use cairn_core::http::middleware;
use cairn_platform::app::AppState;
use cairn_platform::http::{metrics, rate_limit};

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The largest upload any route takes, with room for its form's other
/// parts; a refused upload is read up to that before its answer.
fn read_before_answering(
    settings: &cairn_core::settings::Settings,
) -> middleware::ReadBeforeAnswering {
    let largest_mb = settings
        .csv_max_upload_mb
        .max(settings.portal_max_upload_mb);
    middleware::ReadBeforeAnswering {
        max_bytes: (largest_mb + 1) * 1024 * 1024,
        max_wait: std::time::Duration::from_secs(60),
    }
}

/// Every route of the service, and the OpenAPI documents describing them:
/// `areas` (the areas' routes, `cairn_platform::area::assemble`) and the
/// operator's under the default rate limit, the service's own, the portal
/// API and the console. `reloads` is what the reload route asks.
pub fn router(
    state: &AppState,
    areas: OpenApiRouter<AppState>,
    reloads: admin::Reloads,
) -> (Router, Documents) {
    let api = areas
        .nest(admin::ADMIN_PREFIX, admin::router())
        .layer(from_fn_with_state(state.clone(), rate_limit::default_limit));
    let (routes, doc) = OpenApiRouter::with_openapi(openapi::base())
        .merge(service::router())
        .merge(api)
        .split_for_parts();
    let documents = Documents::finish(doc, cairn_portal::api().1);
    let doc_json = pretty(&documents.api);
    let portal_json = pretty(&documents.portal);
    let (portal, _) = cairn_portal::api();
    let portal = portal
        .route(
            "/api/openapi.json",
            axum::routing::get(move || async move {
                (
                    [(axum::http::header::CONTENT_TYPE, "application/json")],
                    portal_json,
                )
            }),
        )
        .layer(from_fn_with_state(state.clone(), rate_limit::default_limit));
    let router = routes
        .merge(portal)
        .merge(service::assets())
        .merge(console::router())
        .fallback(|request: Request| async move {
            ApiError::NotFound(if request.uri().path().starts_with("/api") {
                "route"
            } else {
                "page"
            })
        })
        .method_not_allowed_fallback(|| async {
            (
                axum::http::StatusCode::METHOD_NOT_ALLOWED,
                axum::Json(error::ErrorBody {
                    detail: "method not allowed on this route".into(),
                    kind: "method_not_allowed".into(),
                    field: None,
                    upstream_status: None,
                    permission_hint: None,
                    path: None,
                }),
            )
                .into_response()
        })
        .layer(Extension(service::OpenApiJson(Arc::new(doc_json))))
        .layer(Extension(reloads))
        .layer(Extension(cairn_vulnerabilities::exposure()))
        .layer(Extension(cairn_workflow::sla::due_dates()))
        .layer(Extension(cairn_integrations::directory(
            state.live_plugins.clone(),
        )))
        .layer(axum::middleware::from_fn(
            cairn_platform::auth::kept::forget_after_writes,
        ))
        .layer(from_fn_with_state(
            state.clone(),
            cairn_platform::partner::audit_partner_writes,
        ))
        .layer(from_fn_with_state(
            state.clone(),
            cairn_platform::auth::resolve_identity,
        ))
        .layer(from_fn(metrics::track))
        .layer(from_fn(middleware::internal_errors))
        .layer(from_fn(middleware::log_requests))
        .layer(from_fn_with_state(
            state.db.requests_in_flight().clone(),
            middleware::count_in_flight,
        ))
        .layer(from_fn_with_state(
            read_before_answering(&state.settings),
            middleware::read_before_answering,
        ))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(request_span)
                .on_response(())
                .on_failure(()),
        )
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
        .layer(cors(&state.settings.cors_origin_list()))
        .with_state(state.clone());
    (router, documents)
}

/// The two OpenAPI documents as clients receive them.
pub struct Documents {
    /// `/openapi.json`: the `/api/v1` service.
    pub api: serde_json::Value,
    /// `/api/openapi.json`: the client portal.
    pub portal: serde_json::Value,
}

impl Documents {
    fn finish(
        mut api: utoipa::openapi::OpenApi,
        mut portal: utoipa::openapi::OpenApi,
    ) -> Documents {
        openapi::document_common_errors(&mut api);
        openapi::document_common_errors(&mut portal);
        let searches = [
            openapi::Search {
                prefix: "Device",
                fields: cairn_inventory::assets::AssetFields::names(),
                operations: &[("/api/v1/devices/devices/search", "post")],
            },
            openapi::Search {
                prefix: "Application",
                fields: cairn_inventory::applications::FIELDS
                    .iter()
                    .map(|f| f.to_string())
                    .collect(),
                operations: &[("/api/v1/inventory/applications/search", "post")],
            },
        ];
        Documents {
            api: openapi::finish(&api, &searches, &closed_sets::api()),
            portal: openapi::finish(&portal, &[], &closed_sets::portal()),
        }
    }
}

impl Documents {
    /// Every documented path of both APIs, answered with or without its
    /// trailing slash.
    pub fn either_spelling(&self) -> middleware::EitherSpelling {
        let paths = [&self.api, &self.portal]
            .into_iter()
            .filter_map(|doc| doc["paths"].as_object())
            .flat_map(|paths| paths.keys().map(String::as_str));
        middleware::EitherSpelling::new(paths)
    }
}

fn pretty(doc: &serde_json::Value) -> String {
    serde_json::to_string_pretty(doc).expect("a JSON value serializes")
}

/// The span every log line of a request carries. It names the route
/// template, never the raw path: paths can hold invite tokens.
fn request_span(request: &Request) -> tracing::Span {
    let request_id = request
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("-");
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str)
        .unwrap_or("unmatched");
    tracing::info_span!("request", request_id, method = %request.method(), route)
}

fn cors(origins: &[String]) -> CorsLayer {
    let origins: Vec<HeaderValue> = origins.iter().filter_map(|o| o.parse().ok()).collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_credentials(true)
        .allow_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ])
        .allow_headers([
            header::CONTENT_TYPE,
            header::AUTHORIZATION,
            header::ACCEPT,
            REQUEST_ID,
        ])
        .expose_headers([REQUEST_ID, header::RETRY_AFTER])
}
