//! Extractors of our own so that malformed requests get our error shape
//! instead of axum's plain-text rejections.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::FromRequest;
use axum::extract::FromRequestParts;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// `axum::Json` with our error body on rejection (400 malformed, 422 wrong
/// shape, 415 wrong content type reported as 400). NUL characters are
/// taken out of every string of the body first: text is stored without
/// them (PostgreSQL refuses them), so a NUL means what its absence means.
#[derive(Debug, Clone, Copy, Default)]
pub struct Json<T>(pub T);

impl<S, T> FromRequest<S> for Json<T>
where
    S: Send + Sync,
    T: serde::de::DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(request: axum::extract::Request, state: &S) -> Result<Self, ApiError> {
        let axum::Json(mut value) =
            axum::Json::<serde_json::Value>::from_request(request, state).await?;
        without_nul(&mut value);
        from_value(value).map(Json)
    }
}

/// `value` read as `T`; a 422 whose `field` is the path of the value that
/// did not fit (`query.rules[0].operator`), or `body` for the whole.
pub fn from_value<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    from_value_at(value, "body")
}

/// [`from_value`] for a value held at `at` within a request (a stored
/// filter at `scope.filter`): the 422's `field` starts there.
pub fn from_value_at<T: serde::de::DeserializeOwned>(
    value: serde_json::Value,
    at: &str,
) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let field = match (path.as_str(), at) {
            (".", _) => at.to_string(),
            (_, "body") => path,
            _ => format!("{at}.{path}"),
        };
        ApiError::validation(&field, e.into_inner().to_string())
    })
}

/// Takes every NUL character out of the strings (and keys) of `value`.
fn without_nul(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::String(text) if text.contains('\0') => text.retain(|c| c != '\0'),
        Value::Array(items) => items.iter_mut().for_each(without_nul),
        Value::Object(map) if map.keys().any(|k| k.contains('\0')) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                without_nul(&mut item);
                map.insert(key.replace('\0', ""), item);
            }
        }
        Value::Object(map) => map.values_mut().for_each(without_nul),
        _ => {}
    }
}

impl<T: serde::Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        // Into a `Vec` handed over as the body without a copy: serde writes
        // a page of 50 applications in thousands of small pieces, and
        // `axum::Json`'s `BytesMut` writer checks and copies each one
        // through `put_slice` (about 5 % of that page's time under load).
        let mut body = Vec::with_capacity(1024);
        match serde_json::to_writer(&mut body, &self.0) {
            Ok(()) => (
                [(
                    axum::http::header::CONTENT_TYPE,
                    axum::http::HeaderValue::from_static("application/json"),
                )],
                body,
            )
                .into_response(),
            Err(err) => {
                ApiError::Internal(anyhow::anyhow!("encoding the answer: {err}")).into_response()
            }
        }
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
        query_refusal(&rejection.body_text())
    }
}

/// serde's words for a query it could not read ("Failed to deserialize
/// query string: epss_min: invalid float literal") as a sentence naming
/// the parameter.
fn query_refusal(text: &str) -> ApiError {
    let reason = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(text);
    match reason.split_once(": ") {
        Some((name, why)) if !name.is_empty() && !name.contains(' ') => ApiError::validation(
            name,
            format!("The query parameter {name} is not valid: {why}."),
        ),
        _ => ApiError::validation("query", format!("The query string is not valid: {reason}.")),
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
/// `T::default()`; malformed JSON is a 400 and a wrong shape a 422, and
/// NULs are taken out, as for [`Json`].
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
        let mut value: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::BadRequest(format!("malformed JSON: {e}")))?;
        without_nul(&mut value);
        from_value(value).map(OptionalJson)
    }
}

#[cfg(test)]
mod tests {
    use super::{query_refusal, without_nul, ApiError};

    #[test]
    fn a_refused_query_names_its_parameter_in_a_sentence() {
        for (text, field, detail) in [
            (
                "Failed to deserialize query string: epss_min: invalid float literal",
                "epss_min",
                "The query parameter epss_min is not valid: invalid float literal.",
            ),
            (
                "Failed to deserialize query string: expected `,` or `}`",
                "query",
                "The query string is not valid: expected `,` or `}`.",
            ),
        ] {
            match query_refusal(text) {
                ApiError::Validation { field: f, message } => {
                    assert_eq!((f.as_str(), message.as_str()), (field, detail));
                }
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn nul_characters_leave_strings_and_keys() {
        let mut value = serde_json::json!({"na\u{0}me": ["a\u{0}b", {"c": "\u{0}"}], "n": 1});
        without_nul(&mut value);
        assert_eq!(
            value,
            serde_json::json!({"name": ["ab", {"c": ""}], "n": 1})
        );
    }
}
