//! Extractors of our own so that malformed requests get our error shape
//! instead of axum's plain-text rejections.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::FromRequest;
use axum::extract::FromRequestParts;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// `axum::Json` with our error body on rejection (400 malformed, 422 wrong shape,
/// 415 wrong content type reported as 400).
#[derive(Debug, Clone, Copy, Default, FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct Json<T>(pub T);

impl<T: serde::Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection {
            JsonRejection::JsonDataError(e) => ApiError::validation("body", e.body_text()),
            other => ApiError::BadRequest(other.body_text()),
        }
    }
}

#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Path), rejection(ApiError))]
pub struct Path<T>(pub T);

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        ApiError::BadRequest(rejection.body_text())
    }
}

#[derive(Debug, FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct Query<T>(pub T);

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        ApiError::validation("query", rejection.body_text())
    }
}

/// `axum::extract::Multipart` with our error body when the request is not
/// multipart or its boundary is missing.
pub struct Multipart(pub axum::extract::Multipart);

impl<S: Send + Sync> FromRequest<S> for Multipart {
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        axum::extract::Multipart::from_request(request, state)
            .await
            .map(Multipart)
            .map_err(|rejection| ApiError::BadRequest(rejection.body_text()))
    }
}

/// A JSON body that may be left out: no body (or only whitespace) is
/// `T::default()`; malformed JSON is a 400 and a wrong shape a 422, as for
/// [`Json`].
pub struct OptionalJson<T>(pub T);

impl<S, T> FromRequest<S> for OptionalJson<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned + Default,
{
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let body = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|e| ApiError::BadRequest(e.body_text()))?;
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(OptionalJson(T::default()));
        }
        serde_json::from_slice(&body)
            .map(OptionalJson)
            .map_err(|e| match e.classify() {
                serde_json::error::Category::Data => ApiError::validation("body", e.to_string()),
                _ => ApiError::BadRequest(format!("malformed JSON: {e}")),
            })
    }
}
