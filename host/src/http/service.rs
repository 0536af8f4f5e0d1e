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
        .routes(routes!(health_live))
        .routes(routes!(health_ready))
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
pub struct Liveness {
    /// Always `ok`: the process answers.
    status: &'static str,
}

/// Liveness for an orchestrator (a Kubernetes liveness probe): the process
/// answers. It checks no dependency, so a database outage, which a
/// restart cannot fix, does not restart the process; readiness takes it
/// out of rotation instead.
#[utoipa::path(get, path = "/health/live", tag = "service", security(()),
    responses((status = 200, body = Liveness)))]
async fn health_live() -> axum::Json<Liveness> {
    axum::Json(Liveness { status: "ok" })
}

/// The readiness checks, by name: one per blob store (shelf).
pub const READINESS_CHECKS: [&str; 7] = [
    "database",
    "migrations",
    "connectors",
    "blob_store:portal",
    "blob_store:uploads",
    "blob_store:reports",
    "shared_files",
];

/// What readiness answers: every check passed; an advisory one failed
/// (the process serves, with a warning: 200); a required one failed (503).
pub const READINESS_STATUSES: [&str; 3] = ["ready", "degraded", "not_ready"];

/// One readiness check.
#[derive(Serialize, ToSchema)]
pub struct ReadinessCheck {
    /// `database`, `migrations`, `connectors`, or `blob_store:<shelf>`
    /// (`portal`, `uploads`, `reports`).
    name: String,
    ok: bool,
    /// What was found, in words.
    detail: String,
}

#[derive(Serialize, ToSchema)]
pub struct Readiness {
    /// `ready`; `degraded` when only an advisory check failed
    /// (`shared_files`: the process serves, and a load balancer should keep
    /// it); `not_ready` when a required one failed.
    status: &'static str,
    checks: Vec<ReadinessCheck>,
}

/// Readiness for a load balancer or a Kubernetes readiness probe: the
/// database answers a round trip, the newest migration of this build is
/// applied, the connector modules were loaded (files skipped are named,
/// and do not fail it), and each blob store takes a file (one is written
/// and removed). 503 naming the failed check otherwise. A process keeping
/// its files on a local disk while other processes serve the database is
/// `degraded` (200, with the `shared_files` check saying why).
#[utoipa::path(get, path = "/health/ready", tag = "service", security(()),
    responses((status = 200, body = Readiness, description = "Ready, or degraded"),
              (status = 503, body = Readiness, description = "A check failed")))]
async fn health_ready(State(state): State<AppState>) -> Response {
    let mut checks = vec![];
    let database = state.db.ping().await;
    checks.push(ReadinessCheck {
        name: "database".into(),
        ok: database,
        detail: match database {
            true => format!("{} answers", state.db.backend.name()),
            false => format!("{} does not answer", state.db.backend.name()),
        },
    });
    let migrations = match database {
        true => state.db.migrations_current().await,
        false => Ok(false),
    };
    checks.push(ReadinessCheck {
        name: "migrations".into(),
        ok: matches!(migrations, Ok(true)),
        detail: match migrations {
            Ok(true) => "the newest migration of this build is applied".into(),
            Ok(false) if !database => "not read: the database does not answer".into(),
            Ok(false) => "the newest migration of this build is not applied".into(),
            Err(err) => format!("the applied migrations could not be read: {err}"),
        },
    });
    let plugins = &state.plugins();
    let skipped: Vec<String> = plugins
        .skipped
        .iter()
        .map(|s| format!("{} ({})", s.file, s.reason))
        .collect();
    checks.push(ReadinessCheck {
        name: "connectors".into(),
        ok: true,
        detail: format!(
            "{} connectors and {} CSV providers loaded{}",
            plugins.connectors.len(),
            plugins.csv_providers.len(),
            match skipped.is_empty() {
                true => String::new(),
                false => format!("; skipped: {}", skipped.join("; ")),
            }
        ),
    });
    let stores = [
        ("portal", &state.blobs.portal),
        ("uploads", &state.blobs.uploads),
        ("reports", &state.blobs.reports),
    ];
    for (shelf, store) in stores {
        let probed = store.probe().await;
        debug_assert!(READINESS_CHECKS.contains(&format!("blob_store:{shelf}").as_str()));
        checks.push(ReadinessCheck {
            name: format!("blob_store:{shelf}"),
            ok: probed.is_ok(),
            detail: match probed {
                Ok(()) => format!("the {} store takes files", store.kind().as_str()),
                Err(err) => format!("the {} store takes no file: {err}", store.kind().as_str()),
            },
        });
    }
    let ready = checks.iter().all(|c| c.ok);
    // Advisory: files on a local disk while other processes serve the
    // database (docs: deployment). Only with the database answering.
    let mut degraded = false;
    if database && state.blobs.any_local() {
        let now = cairn_core::db::now_ms();
        let id = &state.jobs.worker_id;
        let others = cairn_platform::processes::others_alive(&state.db, id, now).await;
        degraded = matches!(others, Ok(n) if n > 0);
        checks.push(ReadinessCheck {
            name: "shared_files".into(),
            ok: !degraded,
            detail: match others {
                Ok(0) => "no other process serves this database".into(),
                Ok(n) => cairn_platform::processes::sharing_warning(n),
                Err(err) => format!("the other processes could not be read: {err}"),
            },
        });
    }
    let (status, words) = match (ready, degraded) {
        (false, _) => (StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
        (true, true) => (StatusCode::OK, "degraded"),
        (true, false) => (StatusCode::OK, "ready"),
    };
    let body = Readiness {
        status: words,
        checks,
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
