//! The one error type of the HTTP layer and its mapping to responses.
//!
//! Client mistakes carry `{detail, type}` (plus `field` for validation);
//! anything internal is logged here and answered with a bare 500, to which the
//! `internal_errors` middleware adds the request path.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{message}")]
    Validation { field: String, message: String },
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A 404 whose detail says what is missing (an upstream's answer, a
    /// route a tenant's connector does not serve).
    #[error("{0}")]
    Missing(String),
    #[error("{0}")]
    Conflict(String),
    /// An upload failed one of the upload checks (`check` names it:
    /// extension, size, content or filename).
    #[error("upload rejected: {message}")]
    UploadRejected {
        check: &'static str,
        message: String,
    },
    #[error("{0}")]
    Gone(String),
    #[error("too many requests; retry in {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
    /// An integration's upstream refused its credentials or permissions.
    #[error("upstream authentication failed ({status}): {message}")]
    UpstreamAuth {
        status: u16,
        message: String,
        permission_hint: String,
    },
    /// An integration's upstream (or its plugin) failed.
    #[error("{0}")]
    Upstream(String),
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// The `detail` an error answer gave, kept on the response for the request
/// log ("a 4xx says why").
#[derive(Debug, Clone)]
pub struct RefusalReason(pub String);

/// Body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// Human-readable explanation.
    pub detail: String,
    /// Stable machine-readable kind, e.g. `not_found`, `validation_error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The offending field, for validation errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The upstream's status, on `upstream_auth_error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upstream_status: Option<u16>,
    /// The permission to grant upstream, on `upstream_auth_error`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_hint: Option<String>,
    /// Request path, on 500 responses only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl ApiError {
    pub fn validation(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::Validation {
            field: field.to_string(),
            message: message.into(),
        }
    }

    pub fn status_code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) | ApiError::UploadRejected { .. } => StatusCode::BAD_REQUEST,
            ApiError::Validation { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) | ApiError::Missing(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Gone(_) => StatusCode::GONE,
            ApiError::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::UpstreamAuth { .. } | ApiError::Upstream(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            ApiError::BadRequest(_) => "bad_request",
            ApiError::UploadRejected { .. } => "upload_rejected",
            ApiError::Validation { .. } => "validation_error",
            ApiError::Unauthorized(_) => "not_authenticated",
            ApiError::Forbidden(_) => "forbidden",
            ApiError::NotFound(_) | ApiError::Missing(_) => "not_found",
            ApiError::Conflict(_) => "conflict",
            ApiError::Gone(_) => "gone",
            ApiError::RateLimited { .. } => "rate_limited",
            ApiError::UpstreamAuth { .. } => "upstream_auth_error",
            ApiError::Upstream(_) => "upstream_error",
            ApiError::Internal(_) => "internal_error",
        }
    }
}

impl From<crate::uploads::UploadError> for ApiError {
    fn from(err: crate::uploads::UploadError) -> Self {
        use crate::uploads::UploadError;
        match err {
            UploadError::Rejected { check, message } => ApiError::UploadRejected { check, message },
            UploadError::Body(_) => ApiError::BadRequest(err.to_string()),
            UploadError::Io(err) => ApiError::Internal(err.into()),
        }
    }
}

impl From<crate::blobs::StoreError> for ApiError {
    // A missing file is gone for good (410); nothing else in a store
    // failure is the client's to fix, and its detail (endpoints, bucket) is
    // not the client's to see: it is logged.
    fn from(err: crate::blobs::StoreError) -> Self {
        match err {
            crate::blobs::StoreError::Missing => {
                ApiError::Gone("the file is no longer in the store".into())
            }
            other => ApiError::Internal(other.into()),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(err: sqlx::Error) -> Self {
        ApiError::Internal(err.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status_code();
        let detail = match &self {
            ApiError::Internal(err) => {
                tracing::error!(error = %format!("{err:#}"), "internal error");
                "internal server error".to_string()
            }
            other => other.to_string(),
        };
        let field = match &self {
            ApiError::Validation { field, .. } => Some(field.clone()),
            ApiError::UploadRejected { check, .. } => Some(check.to_string()),
            _ => None,
        };
        let (upstream_status, permission_hint) = match &self {
            ApiError::UpstreamAuth {
                status,
                permission_hint,
                ..
            } => (Some(*status), Some(permission_hint.clone())),
            _ => (None, None),
        };
        let body = ErrorBody {
            detail,
            kind: self.kind().to_string(),
            field,
            upstream_status,
            permission_hint,
            path: None,
        };
        let reason = RefusalReason(body.detail.clone());
        let mut response = (status, axum::Json(body)).into_response();
        response.extensions_mut().insert(reason);
        if let ApiError::RateLimited { retry_after_secs } = self {
            response.headers_mut().insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after_secs.max(1)),
            );
        }
        response
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
