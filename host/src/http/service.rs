//! Service-level routes outside `/api/v1`: health, version, docs, schema.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use cairn_platform::app::AppState;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(health))
        .routes(routes!(root))
        .routes(routes!(cairn_platform::http::metrics::metrics_endpoint))
        .routes(routes!(openapi_json))
        .routes(routes!(docs))
        .routes(routes!(redoc))
}

/// Static assets of the docs pages, vendored so the pages work offline.
pub fn assets() -> Router<AppState> {
    Router::new()
        .route(
            "/docs/assets/swagger-ui-bundle.js",
            get(|| async {
                asset(
                    "text/javascript",
                    include_bytes!("../../assets/docs/swagger-ui-bundle.js"),
                )
            }),
        )
        .route(
            "/docs/assets/swagger-ui.css",
            get(|| async {
                asset(
                    "text/css",
                    include_bytes!("../../assets/docs/swagger-ui.css"),
                )
            }),
        )
        .route(
            "/docs/assets/redoc.standalone.js",
            get(|| async {
                asset(
                    "text/javascript",
                    include_bytes!("../../assets/docs/redoc.standalone.js"),
                )
            }),
        )
}

fn asset(content_type: &'static str, bytes: &'static [u8]) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        bytes,
    )
        .into_response()
}

#[derive(Serialize, ToSchema)]
pub struct Health {
    /// `ok`, or `degraded` when the database did not answer.
    status: &'static str,
    environment: String,
    /// `ok` after a real round trip to the database, else `unreachable`.
    database: &'static str,
    /// `sqlite` or `postgres`.
    backend: &'static str,
    version: &'static str,
}

/// Liveness and database reachability.
#[utoipa::path(get, path = "/health", tag = "service", security(()),
    responses((status = 200, body = Health), (status = 503, body = Health, description = "Database unreachable")))]
async fn health(State(state): State<AppState>) -> Response {
    let database_ok = state.db.ping().await;
    let body = Health {
        status: if database_ok { "ok" } else { "degraded" },
        environment: state.settings.environment.clone(),
        database: if database_ok { "ok" } else { "unreachable" },
        backend: state.db.backend.name(),
        version: env!("CARGO_PKG_VERSION"),
    };
    let status = if database_ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, axum::Json(body)).into_response()
}

#[derive(Serialize, ToSchema)]
pub struct ServiceInfo {
    name: &'static str,
    version: &'static str,
    docs: &'static str,
    redoc: &'static str,
    openapi: &'static str,
}

/// Service name, version and where the docs are.
#[utoipa::path(get, path = "/", tag = "service", security(()), responses((status = 200, body = ServiceInfo)))]
async fn root() -> axum::Json<ServiceInfo> {
    axum::Json(ServiceInfo {
        name: "cairn",
        version: env!("CARGO_PKG_VERSION"),
        docs: "/docs",
        redoc: "/redoc",
        openapi: "/openapi.json",
    })
}

/// The serialized OpenAPI document, attached as an extension once the router
/// is assembled (the document describes the router, so it comes after it).
#[derive(Clone)]
pub struct OpenApiJson(pub Arc<String>);

/// This OpenAPI 3.1 document.
#[utoipa::path(get, path = "/openapi.json", tag = "service", security(()),
    responses((status = 200, content_type = "application/json", body = Object)))]
async fn openapi_json(Extension(doc): Extension<OpenApiJson>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        doc.0.as_str().to_owned(),
    )
        .into_response()
}

/// Interactive API docs (Swagger UI).
#[utoipa::path(get, path = "/docs", tag = "service", security(()),
    responses((status = 200, content_type = "text/html", body = String)))]
async fn docs() -> Html<&'static str> {
    Html(
        r##"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Cairn API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><p style="font-family:sans-serif;margin:1em">Reference docs: <a href="/redoc">/redoc</a> · schema: <a href="/openapi.json">/openapi.json</a>
· client portal API (<code>/api</code>, version 0.1.0): <a href="/docs?spec=portal">docs</a>, <a href="/api/openapi.json">/api/openapi.json</a></p>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>const portal = new URLSearchParams(location.search).get("spec") === "portal";
window.ui = SwaggerUIBundle({ url: portal ? "/api/openapi.json" : "/openapi.json", dom_id: "#swagger-ui", withCredentials: true });</script>
</body></html>"##,
    )
}

/// Reference API docs (Redoc).
#[utoipa::path(get, path = "/redoc", tag = "service", security(()),
    responses((status = 200, content_type = "text/html", body = String)))]
async fn redoc() -> Html<&'static str> {
    Html(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Cairn API reference</title></head>
<body><redoc spec-url="/openapi.json"></redoc>
<script src="/docs/assets/redoc.standalone.js"></script>
</body></html>"#,
    )
}
