//! A fake S3-compatible object store on 127.0.0.1, speaking the REST wire
//! format that `object_store` uses with path-style addressing
//! (`/<bucket>/<key>`): PutObject, CreateMultipartUpload, UploadPart,
//! CompleteMultipartUpload, AbortMultipartUpload, GetObject, HeadObject,
//! DeleteObject and DeleteObjects, with S3's XML bodies and errors. Objects live in memory.
//!
//! Every request must carry a valid AWS Signature Version 4 made with the
//! one key pair the fake knows: in the `Authorization` header (the payload
//! hash in `x-amz-content-sha256` is checked against the body too), or in
//! the query string of a presigned URL (`X-Amz-Credential`, `X-Amz-Date`,
//! `X-Amz-Expires`, `X-Amz-Signature`; an expired URL is 403). The
//! signature is recomputed from the request as received, so a changed
//! method, path, query, signed header or signature is refused.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

pub const ACCESS_KEY_ID: &str = "AKIAFAKES3PORTALTEST";
pub const SECRET_ACCESS_KEY: &str = "fakeS3/secret+key/for/the/portal/tests";
pub const REGION: &str = "eu-test-1";
pub const BUCKET: &str = "portal-docs";

const ALGORITHM: &str = "AWS4-HMAC-SHA256";
const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
/// S3's floor for every part of a multipart upload but the last.
const MIN_PART_BYTES: usize = 5 * 1024 * 1024;
/// How far a signed request's date may be from the fake's clock.
const MAX_SKEW_SECS: i64 = 15 * 60;
/// S3's longest presigned URL lifetime (7 days).
const MAX_EXPIRES_SECS: i64 = 7 * 24 * 3600;

/// An object as the fake keeps it.
#[derive(Debug, Clone)]
pub struct StoredObject {
    pub bytes: Vec<u8>,
    pub content_type: Option<String>,
    pub content_disposition: Option<String>,
    pub etag: String,
    pub modified: DateTime<Utc>,
}

struct Upload {
    key: String,
    content_type: Option<String>,
    content_disposition: Option<String>,
    /// part number -> (ETag, bytes)
    parts: BTreeMap<u32, (String, Vec<u8>)>,
}

#[derive(Default)]
struct Shared {
    objects: Mutex<BTreeMap<String, StoredObject>>,
    uploads: Mutex<HashMap<String, Upload>>,
    /// (operation, status): the next request of that operation fails so.
    fail_next: Mutex<Vec<(String, u16)>>,
    upload_counter: AtomicUsize,
    multipart_completed: AtomicUsize,
    refused_signatures: AtomicUsize,
}

pub struct FakeS3 {
    /// `http://127.0.0.1:<port>`
    pub endpoint: String,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeS3 {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeS3 {
    pub async fn start() -> FakeS3 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake S3");
        let endpoint = format!("http://{}", listener.local_addr().expect("local address"));
        let shared = Arc::new(Shared::default());
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone())
            // Parts are several MiB; S3's own limit is 5 GiB.
            .layer(DefaultBodyLimit::max(64 * 1024 * 1024));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeS3 {
            endpoint,
            shared,
            server,
        }
    }

    /// Points the service's blob store at this fake.
    pub fn configure(&self, settings: &mut cairn_core::settings::Settings) {
        settings.blob_store = "s3".into();
        settings.s3_endpoint = self.endpoint.clone();
        settings.s3_bucket = BUCKET.into();
        settings.s3_region = REGION.into();
        settings.s3_access_key_id = ACCESS_KEY_ID.into();
        settings.s3_secret_access_key = SECRET_ACCESS_KEY.into();
    }

    pub fn object(&self, key: &str) -> Option<StoredObject> {
        lock(&self.shared.objects).get(key).cloned()
    }

    /// Removes an object, as an operator (or a bucket's lifecycle rule)
    /// would.
    pub fn remove(&self, key: &str) {
        lock(&self.shared.objects).remove(key);
    }

    pub fn keys(&self) -> Vec<String> {
        lock(&self.shared.objects).keys().cloned().collect()
    }

    /// Multipart uploads created and neither completed nor aborted.
    pub fn open_uploads(&self) -> usize {
        lock(&self.shared.uploads).len()
    }

    pub fn multipart_completed(&self) -> usize {
        self.shared.multipart_completed.load(Ordering::SeqCst)
    }

    /// Requests refused for their signature (missing, malformed, wrong or
    /// expired).
    pub fn refused_signatures(&self) -> usize {
        self.shared.refused_signatures.load(Ordering::SeqCst)
    }

    /// The next request of `operation` (e.g. `PutObject`,
    /// `CompleteMultipartUpload`) is answered with `status` and changes
    /// nothing.
    pub fn fail_next(&self, operation: &str, status: u16) {
        lock(&self.shared.fail_next).push((operation.to_string(), status));
    }

    /// A presigned GET URL for `key` as S3 would sign it at `signed_at`,
    /// valid `expires_secs` from then.
    pub fn presigned_get(&self, key: &str, signed_at: DateTime<Utc>, expires_secs: i64) -> String {
        let host = self.endpoint.trim_start_matches("http://");
        let path = format!("/{BUCKET}/{}", uri_encode(key, false));
        let amz_date = signed_at.format("%Y%m%dT%H%M%SZ").to_string();
        let scope = format!("{}/{REGION}/s3/aws4_request", &amz_date[..8]);
        let mut pairs = vec![
            ("X-Amz-Algorithm".to_string(), ALGORITHM.to_string()),
            (
                "X-Amz-Credential".to_string(),
                format!("{ACCESS_KEY_ID}/{scope}"),
            ),
            ("X-Amz-Date".to_string(), amz_date.clone()),
            ("X-Amz-Expires".to_string(), expires_secs.to_string()),
            ("X-Amz-SignedHeaders".to_string(), "host".to_string()),
        ];
        let canonical = canonical_request(
            "GET",
            &path,
            &canonical_query(&pairs),
            &format!("host:{host}\n"),
            "host",
            UNSIGNED_PAYLOAD,
        );
        let signature = signature(&amz_date, &scope, &canonical);
        pairs.push(("X-Amz-Signature".to_string(), signature));
        format!("{}{path}?{}", self.endpoint, canonical_query(&pairs))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// An S3 error: status and `<Error><Code>...` body.
#[derive(Debug)]
struct S3Error {
    status: StatusCode,
    code: &'static str,
    message: String,
}

fn s3_error(status: StatusCode, code: &'static str, message: impl Into<String>) -> S3Error {
    S3Error {
        status,
        code,
        message: message.into(),
    }
}

fn denied(code: &'static str, message: impl Into<String>) -> S3Error {
    s3_error(StatusCode::FORBIDDEN, code, message)
}

impl IntoResponse for S3Error {
    fn into_response(self) -> Response {
        let body = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}</Code><Message>{}</Message></Error>",
            self.code,
            xml_escape(&self.message)
        );
        (
            self.status,
            [(header::CONTENT_TYPE, "application/xml")],
            body,
        )
            .into_response()
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match serve(&shared, &method, &uri, &headers, &body) {
        Ok(response) => response,
        Err(err) => err.into_response(),
    }
}

fn serve(
    shared: &Shared,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Response, S3Error> {
    let path = uri.path();
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    authenticate(method, path, &query, headers, body).inspect_err(|_| {
        shared.refused_signatures.fetch_add(1, Ordering::SeqCst);
    })?;

    // DeleteObjects (`POST /<bucket>?delete`), which `object_store` sends
    // for every delete: the keys in an XML body, the result per key.
    if method == Method::POST
        && query.iter().any(|(k, _)| k == "delete")
        && path.trim_end_matches('/') == format!("/{BUCKET}")
    {
        if !headers.contains_key("content-md5") {
            return Err(s3_error(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                "Missing required header for this request: Content-MD5",
            ));
        }
        let body = std::str::from_utf8(body)
            .map_err(|_| s3_error(StatusCode::BAD_REQUEST, "MalformedXML", "not UTF-8"))?;
        let mut deleted = String::new();
        for object in elements(body, "Object") {
            let key = elements(object, "Key")
                .first()
                .map(|k| xml_unescape(k))
                .ok_or_else(|| s3_error(StatusCode::BAD_REQUEST, "MalformedXML", "no Key"))?;
            lock(&shared.objects).remove(&key);
            deleted.push_str(&format!(
                "<Deleted><Key>{}</Key></Deleted>",
                xml_escape(&key)
            ));
        }
        return Ok(xml(format!(
            "<DeleteResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{deleted}</DeleteResult>"
        )));
    }
    let key = path
        .strip_prefix(&format!("/{BUCKET}/"))
        .map(percent_decode)
        .ok_or_else(|| {
            s3_error(
                StatusCode::NOT_FOUND,
                "NoSuchBucket",
                "the fake holds one bucket",
            )
        })?;
    if key.is_empty() {
        return Err(s3_error(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            "bucket operations are not faked",
        ));
    }
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let operation = match (method.as_str(), param("uploads"), param("uploadId")) {
        ("POST", Some(_), _) => "CreateMultipartUpload",
        ("POST", None, Some(_)) => "CompleteMultipartUpload",
        ("PUT", _, Some(_)) => "UploadPart",
        ("PUT", _, None) => "PutObject",
        ("DELETE", _, Some(_)) => "AbortMultipartUpload",
        ("DELETE", _, None) => "DeleteObject",
        ("GET", _, _) => "GetObject",
        ("HEAD", _, _) => "HeadObject",
        _ => {
            return Err(s3_error(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                "not an operation the fake knows",
            ))
        }
    };
    {
        let mut failures = lock(&shared.fail_next);
        if let Some(at) = failures.iter().position(|(op, _)| op == operation) {
            let (_, status) = failures.remove(at);
            return Err(s3_error(
                StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                "InjectedFailure",
                format!("{operation} failed on request"),
            ));
        }
    }
    let upload_id = param("uploadId").unwrap_or_default();
    match operation {
        "PutObject" => {
            if headers.contains_key("x-amz-copy-source") {
                return Err(s3_error(
                    StatusCode::NOT_IMPLEMENTED,
                    "NotImplemented",
                    "CopyObject is not faked",
                ));
            }
            let object = stored(body.to_vec(), headers_of(headers), etag(body));
            let tag = object.etag.clone();
            lock(&shared.objects).insert(key, object);
            Ok((StatusCode::OK, [(header::ETAG, tag)]).into_response())
        }
        "CreateMultipartUpload" => {
            let n = shared.upload_counter.fetch_add(1, Ordering::SeqCst);
            let upload_id = format!("upload-{n}-{}", hex::encode(Sha256::digest(key.as_bytes())));
            let (content_type, content_disposition) = headers_of(headers);
            lock(&shared.uploads).insert(
                upload_id.clone(),
                Upload {
                    key: key.clone(),
                    content_type,
                    content_disposition,
                    parts: BTreeMap::new(),
                },
            );
            Ok(xml(format!(
                "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                 <Bucket>{BUCKET}</Bucket><Key>{}</Key><UploadId>{upload_id}</UploadId>\
                 </InitiateMultipartUploadResult>",
                xml_escape(&key)
            )))
        }
        "UploadPart" => {
            let number: u32 = param("partNumber")
                .and_then(|n| n.parse().ok())
                .filter(|n| (1..=10_000).contains(n))
                .ok_or_else(|| {
                    s3_error(
                        StatusCode::BAD_REQUEST,
                        "InvalidArgument",
                        "partNumber must be 1 to 10000",
                    )
                })?;
            let mut uploads = lock(&shared.uploads);
            let upload = uploads
                .get_mut(upload_id)
                .filter(|u| u.key == key)
                .ok_or_else(no_such_upload)?;
            let tag = etag(body);
            upload.parts.insert(number, (tag.clone(), body.to_vec()));
            Ok((StatusCode::OK, [(header::ETAG, tag)]).into_response())
        }
        "CompleteMultipartUpload" => {
            let listed = completion_parts(body)?;
            let mut uploads = lock(&shared.uploads);
            let upload = uploads
                .get(upload_id)
                .filter(|u| u.key == key)
                .ok_or_else(no_such_upload)?;
            let mut bytes = Vec::new();
            let mut previous = 0;
            for (index, (number, tag)) in listed.iter().enumerate() {
                if *number <= previous {
                    return Err(s3_error(
                        StatusCode::BAD_REQUEST,
                        "InvalidPartOrder",
                        "parts must be listed in ascending order",
                    ));
                }
                previous = *number;
                let part = upload
                    .parts
                    .get(number)
                    .filter(|(t, _)| t == tag)
                    .map(|(_, part)| part)
                    .ok_or_else(|| {
                        s3_error(
                            StatusCode::BAD_REQUEST,
                            "InvalidPart",
                            format!("part {number} was not uploaded with that ETag"),
                        )
                    })?;
                if index + 1 < listed.len() && part.len() < MIN_PART_BYTES {
                    return Err(s3_error(
                        StatusCode::BAD_REQUEST,
                        "EntityTooSmall",
                        format!("part {number} is smaller than 5 MiB"),
                    ));
                }
                bytes.extend_from_slice(part);
            }
            let upload = uploads.remove(upload_id).ok_or_else(no_such_upload)?;
            drop(uploads);
            let tag = format!("\"{}-{}\"", &etag(&bytes)[1..33], listed.len());
            let object = stored(
                bytes,
                (upload.content_type, upload.content_disposition),
                tag.clone(),
            );
            lock(&shared.objects).insert(key.clone(), object);
            shared.multipart_completed.fetch_add(1, Ordering::SeqCst);
            Ok(xml(format!(
                "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\
                 <Location>/{BUCKET}/{key}</Location><Bucket>{BUCKET}</Bucket><Key>{key}</Key>\
                 <ETag>{}</ETag></CompleteMultipartUploadResult>",
                xml_escape(&tag),
                key = xml_escape(&key),
            )))
        }
        "AbortMultipartUpload" => {
            let mut uploads = lock(&shared.uploads);
            match uploads.get(upload_id) {
                Some(upload) if upload.key == key => {
                    uploads.remove(upload_id);
                    Ok(StatusCode::NO_CONTENT.into_response())
                }
                _ => Err(no_such_upload()),
            }
        }
        "DeleteObject" => {
            lock(&shared.objects).remove(&key);
            Ok(StatusCode::NO_CONTENT.into_response())
        }
        "GetObject" | "HeadObject" => {
            let object = lock(&shared.objects).get(&key).cloned().ok_or_else(|| {
                s3_error(
                    StatusCode::NOT_FOUND,
                    "NoSuchKey",
                    "The specified key does not exist.",
                )
            })?;
            let mut response = if operation == "GetObject" {
                object.bytes.clone().into_response()
            } else {
                StatusCode::OK.into_response()
            };
            let out = response.headers_mut();
            let set = |out: &mut HeaderMap, name: header::HeaderName, value: &str| {
                if let Ok(value) = value.parse() {
                    out.insert(name, value);
                }
            };
            set(out, header::CONTENT_LENGTH, &object.bytes.len().to_string());
            set(out, header::ETAG, &object.etag);
            set(
                out,
                header::LAST_MODIFIED,
                &object
                    .modified
                    .format("%a, %d %b %Y %H:%M:%S GMT")
                    .to_string(),
            );
            set(
                out,
                header::CONTENT_TYPE,
                object
                    .content_type
                    .as_deref()
                    .unwrap_or("binary/octet-stream"),
            );
            if let Some(disposition) = &object.content_disposition {
                set(out, header::CONTENT_DISPOSITION, disposition);
            }
            Ok(response)
        }
        _ => Err(s3_error(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            operation,
        )),
    }
}

fn no_such_upload() -> S3Error {
    s3_error(
        StatusCode::NOT_FOUND,
        "NoSuchUpload",
        "The specified multipart upload does not exist.",
    )
}

fn stored(
    bytes: Vec<u8>,
    (content_type, content_disposition): (Option<String>, Option<String>),
    etag: String,
) -> StoredObject {
    StoredObject {
        bytes,
        content_type,
        content_disposition,
        etag,
        modified: Utc::now(),
    }
}

/// `Content-Type` and `Content-Disposition`, which S3 keeps with the object
/// and serves back.
fn headers_of(headers: &HeaderMap) -> (Option<String>, Option<String>) {
    let get = |name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    (get(header::CONTENT_TYPE), get(header::CONTENT_DISPOSITION))
}

fn etag(bytes: &[u8]) -> String {
    format!("\"{}\"", &hex::encode(Sha256::digest(bytes))[..32])
}

fn xml(body: String) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/xml")],
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n{body}"),
    )
        .into_response()
}

fn xml_escape(raw: &str) -> String {
    raw.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

fn xml_unescape(raw: &str) -> String {
    raw.replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// The text of each `<tag>` in `xml`, in order.
fn elements<'a>(xml: &'a str, tag: &str) -> Vec<&'a str> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut found = Vec::new();
    let mut rest = xml;
    while let Some(start) = rest.find(&open) {
        let after = &rest[start + open.len()..];
        let Some(end) = after.find(&close) else { break };
        found.push(&after[..end]);
        rest = &after[end + close.len()..];
    }
    found
}

/// The (part number, ETag) list of a CompleteMultipartUpload body.
fn completion_parts(body: &[u8]) -> Result<Vec<(u32, String)>, S3Error> {
    let malformed = || {
        s3_error(
            StatusCode::BAD_REQUEST,
            "MalformedXML",
            "not a CompleteMultipartUpload document",
        )
    };
    let text = std::str::from_utf8(body).map_err(|_| malformed())?;
    if !text.contains("<CompleteMultipartUpload") {
        return Err(malformed());
    }
    let parts: Vec<(u32, String)> = elements(text, "Part")
        .into_iter()
        .map(|part| {
            let number = elements(part, "PartNumber")
                .first()
                .and_then(|n| n.trim().parse().ok());
            let tag = elements(part, "ETag").first().map(|t| xml_unescape(t));
            number.zip(tag).ok_or_else(malformed)
        })
        .collect::<Result<_, _>>()?;
    if parts.is_empty() {
        return Err(malformed());
    }
    Ok(parts)
}

// ---- AWS Signature Version 4 ----

/// Checks the request's signature, in its headers or (presigned) its query.
fn authenticate(
    method: &Method,
    path: &str,
    query: &[(String, String)],
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), S3Error> {
    if query.iter().any(|(k, _)| k == "X-Amz-Signature") {
        authenticate_presigned(method, path, query, headers)
    } else {
        authenticate_header(method, path, query, headers, body)
    }
}

fn authenticate_header(
    method: &Method,
    path: &str,
    query: &[(String, String)],
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), S3Error> {
    let authorization = header_str(headers, "authorization")
        .ok_or_else(|| denied("AccessDenied", "the request is not signed"))?;
    let fields = authorization
        .strip_prefix(ALGORITHM)
        .filter(|rest| rest.starts_with(' '))
        .ok_or_else(|| {
            s3_error(
                StatusCode::BAD_REQUEST,
                "AuthorizationHeaderMalformed",
                "only AWS4-HMAC-SHA256 is accepted",
            )
        })?;
    let field = |name: &str| {
        fields
            .split(',')
            .map(str::trim)
            .find_map(|f| f.strip_prefix(name).and_then(|f| f.strip_prefix('=')))
    };
    let malformed = || {
        s3_error(
            StatusCode::BAD_REQUEST,
            "AuthorizationHeaderMalformed",
            "Credential, SignedHeaders and Signature are required",
        )
    };
    let credential = field("Credential").ok_or_else(malformed)?;
    let signed_headers = field("SignedHeaders").ok_or_else(malformed)?;
    let presented = field("Signature").ok_or_else(malformed)?;

    let amz_date = header_str(headers, "x-amz-date")
        .ok_or_else(|| denied("AccessDenied", "x-amz-date is required"))?;
    let signed_at = parse_amz_date(amz_date)?;
    let scope = check_credential(credential, amz_date)?;
    if (Utc::now() - signed_at).num_seconds().abs() > MAX_SKEW_SECS {
        return Err(denied(
            "RequestTimeTooSkewed",
            "the difference between the request time and the current time is too large",
        ));
    }
    let names: Vec<&str> = signed_headers.split(';').collect();
    for required in ["host", "x-amz-date", "x-amz-content-sha256"] {
        if !names.contains(&required) {
            return Err(denied(
                "AccessDenied",
                format!("{required} must be a signed header"),
            ));
        }
    }
    let payload_hash = header_str(headers, "x-amz-content-sha256").unwrap_or_default();
    if payload_hash != UNSIGNED_PAYLOAD && payload_hash != hex::encode(Sha256::digest(body)) {
        return Err(s3_error(
            StatusCode::BAD_REQUEST,
            "XAmzContentSHA256Mismatch",
            "the body does not match x-amz-content-sha256",
        ));
    }
    let canonical = canonical_request(
        method.as_str(),
        path,
        &canonical_query(query),
        &canonical_headers(headers, &names)?,
        signed_headers,
        payload_hash,
    );
    check_signature(amz_date, &scope, &canonical, presented)
}

fn authenticate_presigned(
    method: &Method,
    path: &str,
    query: &[(String, String)],
    headers: &HeaderMap,
) -> Result<(), S3Error> {
    let param = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let missing = |name: &str| denied("AccessDenied", format!("{name} is required"));
    if param("X-Amz-Algorithm") != Some(ALGORITHM) {
        return Err(missing("X-Amz-Algorithm=AWS4-HMAC-SHA256"));
    }
    let credential = param("X-Amz-Credential").ok_or_else(|| missing("X-Amz-Credential"))?;
    let amz_date = param("X-Amz-Date").ok_or_else(|| missing("X-Amz-Date"))?;
    let expires: i64 = param("X-Amz-Expires")
        .and_then(|e| e.parse().ok())
        .filter(|e| (1..=MAX_EXPIRES_SECS).contains(e))
        .ok_or_else(|| missing("X-Amz-Expires (1 to 604800)"))?;
    let signed_headers =
        param("X-Amz-SignedHeaders").ok_or_else(|| missing("X-Amz-SignedHeaders"))?;
    let presented = param("X-Amz-Signature").ok_or_else(|| missing("X-Amz-Signature"))?;
    let signed_at = parse_amz_date(amz_date)?;
    let scope = check_credential(credential, amz_date)?;
    let now = Utc::now();
    if (signed_at - now).num_seconds() > MAX_SKEW_SECS {
        return Err(denied("AccessDenied", "Request is not valid yet"));
    }
    if now.timestamp() > signed_at.timestamp() + expires {
        return Err(denied("AccessDenied", "Request has expired"));
    }
    let names: Vec<&str> = signed_headers.split(';').collect();
    if !names.contains(&"host") {
        return Err(denied("AccessDenied", "host must be a signed header"));
    }
    let unsigned: Vec<(String, String)> = query
        .iter()
        .filter(|(k, _)| k != "X-Amz-Signature")
        .cloned()
        .collect();
    let canonical = canonical_request(
        method.as_str(),
        path,
        &canonical_query(&unsigned),
        &canonical_headers(headers, &names)?,
        signed_headers,
        UNSIGNED_PAYLOAD,
    );
    check_signature(amz_date, &scope, &canonical, presented)
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn parse_amz_date(raw: &str) -> Result<DateTime<Utc>, S3Error> {
    NaiveDateTime::parse_from_str(raw, "%Y%m%dT%H%M%SZ")
        .map(|d| d.and_utc())
        .map_err(|_| denied("AccessDenied", "X-Amz-Date is not YYYYMMDDTHHMMSSZ"))
}

/// Checks `<key id>/<date>/<region>/s3/aws4_request` against the fake's key
/// and the request's date; returns the scope (everything after the key id).
fn check_credential(credential: &str, amz_date: &str) -> Result<String, S3Error> {
    let (key_id, scope) = credential
        .split_once('/')
        .ok_or_else(|| denied("AccessDenied", "malformed credential"))?;
    if key_id != ACCESS_KEY_ID {
        return Err(denied(
            "InvalidAccessKeyId",
            "The AWS Access Key Id you provided does not exist in our records.",
        ));
    }
    let expected = format!("{}/{REGION}/s3/aws4_request", &amz_date[..8]);
    if scope != expected {
        return Err(denied(
            "AccessDenied",
            format!("credential scope {scope} should be {expected}"),
        ));
    }
    Ok(scope.to_string())
}

fn check_signature(
    amz_date: &str,
    scope: &str,
    canonical: &str,
    presented: &str,
) -> Result<(), S3Error> {
    let expected = signature(amz_date, scope, canonical);
    let matches = expected.len() == presented.len()
        && expected
            .bytes()
            .zip(presented.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if matches {
        Ok(())
    } else {
        Err(denied(
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided.",
        ))
    }
}

fn canonical_request(
    method: &str,
    path: &str,
    query: &str,
    headers: &str,
    signed_headers: &str,
    payload_hash: &str,
) -> String {
    format!("{method}\n{path}\n{query}\n{headers}\n{signed_headers}\n{payload_hash}")
}

/// Query pairs sorted by name (then value), each part URI-encoded.
fn canonical_query(pairs: &[(String, String)]) -> String {
    let mut encoded: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (uri_encode(k, true), uri_encode(v, true)))
        .collect();
    encoded.sort();
    encoded
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// `name:value\n` for each signed header; values trimmed, inner runs of
/// spaces collapsed, repeated headers joined with commas.
fn canonical_headers(headers: &HeaderMap, names: &[&str]) -> Result<String, S3Error> {
    let mut out = String::new();
    for name in names {
        let values: Vec<String> = headers
            .get_all(*name)
            .iter()
            .map(|v| {
                v.to_str()
                    .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
                    .map_err(|_| denied("AccessDenied", "a signed header is not text"))
            })
            .collect::<Result<_, _>>()?;
        if values.is_empty() {
            return Err(denied(
                "AccessDenied",
                format!("signed header {name} is missing"),
            ));
        }
        out.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    Ok(out)
}

fn signature(amz_date: &str, scope: &str, canonical: &str) -> String {
    let to_sign = format!(
        "{ALGORITHM}\n{amz_date}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    );
    let date = &amz_date[..8];
    let key = hmac(format!("AWS4{SECRET_ACCESS_KEY}").as_bytes(), date);
    let key = hmac(&key, REGION);
    let key = hmac(&key, "s3");
    let key = hmac(&key, "aws4_request");
    hex::encode(hmac(&key, &to_sign))
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// SigV4's URI encoding: everything but `A-Za-z0-9-._~` as `%XX`, and `/`
/// too when `slash` is set.
fn uri_encode(raw: &str, slash: bool) -> String {
    let mut out = String::with_capacity(raw.len());
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric()
            || matches!(byte, b'-' | b'.' | b'_' | b'~')
            || (byte == b'/' && !slash)
        {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

fn percent_decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
