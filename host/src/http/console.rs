//! The web console: a small client of the public API (vanilla ES modules,
//! no build step), embedded in the binary and served under `/console`.
//! Any path under `/console` without a file answers the page itself, so a
//! console URL can be bookmarked and shared. Every answer carries a
//! Content-Security-Policy that allows only this origin's own script and
//! style (no inline code) and no framing.

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use cairn_core::http::error::ApiError;
use cairn_platform::app::AppState;

/// The console's files: (name, content type, bytes).
const FILES: [(&str, &str, &[u8]); 4] = [
    (
        "index.html",
        "text/html; charset=utf-8",
        include_bytes!("../../assets/console/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../assets/console/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../../assets/console/style.css"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("../../assets/console/favicon.svg"),
    ),
];

/// Only this origin's files and API; no inline script or style, no
/// plugins, no framing, forms post only here.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; \
     base-uri 'none'; frame-ancestors 'none'";

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/console", get(|| async { file("index.html") }))
        .route("/console/", get(|| async { file("index.html") }))
        // Browsers ask for it at the root whatever the page says.
        .route("/favicon.ico", get(|| async { file("favicon.svg") }))
        .route(
            "/console/{*path}",
            get(|Path(path): Path<String>| async move { file(&path) }),
        )
}

fn file(path: &str) -> Response {
    let found = FILES.iter().find(|(name, _, _)| *name == path);
    let (content_type, bytes) = match found {
        Some((_, content_type, bytes)) => (*content_type, *bytes),
        // A file name that is not ours is missing; any other path is a
        // page of the console.
        None if path
            .rsplit('/')
            .next()
            .is_some_and(|last| last.contains('.')) =>
        {
            return ApiError::NotFound("file").into_response();
        }
        None => (FILES[0].1, FILES[0].2),
    };
    let mut response = (StatusCode::OK, bytes).into_response();
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-cache"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}
