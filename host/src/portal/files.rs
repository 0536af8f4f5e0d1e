//! Portal documents: upload validation, the local blob store (streamed both
//! ways, never whole in memory) and short-lived signed download URLs.

use std::path::{Path, PathBuf};

use axum::extract::multipart::Field;
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;
use tokio::io::AsyncWriteExt;
use utoipa::ToSchema;

use crate::auth::TenantId;
use crate::db::{now_ms, Db};
use crate::http::error::ApiError;

/// Bytes the content is sniffed from.
const SNIFF_WINDOW: usize = 8 * 1024;

/// The documents kind: extension -> accepted sniffed MIME prefixes. Text
/// formats have no magic number; they pass when nothing binary is sniffed
/// and the window holds no NUL byte.
const DOCUMENT_KINDS: &[(&str, &[&str])] = &[
    ("pdf", &["application/pdf"]),
    (
        "docx",
        &["application/vnd.openxmlformats", "application/zip"],
    ),
    (
        "xlsx",
        &["application/vnd.openxmlformats", "application/zip"],
    ),
    (
        "csv",
        &["text/", "application/csv", "application/vnd.ms-excel"],
    ),
    ("txt", &["text/"]),
    ("png", &["image/png"]),
    ("jpg", &["image/jpeg"]),
    ("jpeg", &["image/jpeg"]),
];

fn reject(check: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::UploadRejected {
        check,
        message: message.into(),
    }
}

/// The client's filename made safe to store and show: no directories, no
/// path separators or control characters, no leading dots.
pub fn sanitize_filename(raw: &str) -> String {
    let base = raw.rsplit(['/', '\\']).next().unwrap_or(raw);
    let cleaned: String = base
        .chars()
        .filter(|c| !c.is_control() && *c != '/' && *c != '\\')
        .collect();
    let trimmed = cleaned.trim().trim_start_matches('.').trim();
    let mut name: String = trimmed.chars().take(200).collect();
    if name.is_empty() {
        name = "upload".into();
    }
    name
}

fn extension(name: &str) -> Option<String> {
    name.rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
}

/// Checks the sniffed content against the extension's kind; returns the
/// content type to record.
fn check_content(ext: &str, head: &[u8]) -> Result<String, ApiError> {
    let accepted = DOCUMENT_KINDS
        .iter()
        .find(|(e, _)| *e == ext)
        .map(|(_, prefixes)| *prefixes)
        .ok_or_else(|| {
            reject(
                "extension",
                format!(".{ext} is not an accepted document type"),
            )
        })?;
    let text_kind = accepted.iter().any(|p| p.starts_with("text/"));
    match infer::get(head) {
        Some(kind) if accepted.iter().any(|p| kind.mime_type().starts_with(p)) => {
            Ok(kind.mime_type().to_string())
        }
        Some(kind) => Err(reject(
            "content",
            format!("the content is {}, not a .{ext} file", kind.mime_type()),
        )),
        None if text_kind && !head.contains(&0) => Ok(if ext == "csv" {
            "text/csv".into()
        } else {
            "text/plain".into()
        }),
        None => Err(reject(
            "content",
            format!("the content is not a .{ext} file"),
        )),
    }
}

/// A stored document.
#[derive(Debug, Serialize, ToSchema, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct File {
    pub id: String,
    pub name: String,
    pub size_bytes: i64,
    pub content_type: Option<String>,
    /// Web address in the document store; the local store has none.
    #[sqlx(default)]
    pub sp_web_url: Option<String>,
}

/// Where documents live: a directory, one file per document.
#[derive(Clone)]
pub struct LocalStore {
    root: PathBuf,
}

impl LocalStore {
    pub fn new(root: PathBuf) -> LocalStore {
        LocalStore { root }
    }

    pub fn path(&self, storage_key: &str) -> PathBuf {
        self.root.join(storage_key)
    }

    /// Streams the multipart field to a temporary file, checking size as it
    /// goes and sniffing the first 8 KB, then checks extension and content.
    /// On any failure nothing is left behind.
    pub async fn receive(
        &self,
        mut field: Field<'_>,
        max_bytes: u64,
    ) -> Result<Received, ApiError> {
        let name = sanitize_filename(field.file_name().unwrap_or("upload"));
        let ext = extension(&name)
            .ok_or_else(|| reject("extension", "the file name has no extension"))?;
        if !DOCUMENT_KINDS.iter().any(|(e, _)| *e == ext) {
            return Err(reject(
                "extension",
                format!(".{ext} is not an accepted document type"),
            ));
        }
        let tmp_dir = self.root.join("tmp");
        tokio::fs::create_dir_all(&tmp_dir)
            .await
            .map_err(|e| ApiError::Internal(e.into()))?;
        let tmp = tmp_dir.join(uuid::Uuid::new_v4().simple().to_string());
        let written = write_field(&mut field, &tmp, max_bytes).await;
        let (size, head) = match written {
            Ok(done) => done,
            Err(err) => {
                let _ = tokio::fs::remove_file(&tmp).await;
                return Err(err);
            }
        };
        let content_type = match (size, check_content(&ext, &head)) {
            (0, _) => Err(reject("size", "the file is empty")),
            (_, result) => result,
        };
        match content_type {
            Ok(content_type) => Ok(Received {
                tmp,
                name,
                size,
                content_type,
            }),
            Err(err) => {
                let _ = tokio::fs::remove_file(&tmp).await;
                Err(err)
            }
        }
    }

    /// Moves a received upload to its place.
    pub async fn keep(&self, received: &Received, storage_key: &str) -> std::io::Result<()> {
        let target = self.path(storage_key);
        if let Some(parent) = target.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        tokio::fs::rename(&received.tmp, target).await
    }
}

async fn write_field(
    field: &mut Field<'_>,
    tmp: &Path,
    max_bytes: u64,
) -> Result<(u64, Vec<u8>), ApiError> {
    let mut out = tokio::fs::File::create(tmp)
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    let mut size: u64 = 0;
    let mut head = Vec::with_capacity(SNIFF_WINDOW);
    while let Some(chunk) = field
        .chunk()
        .await
        .map_err(|e| ApiError::BadRequest(format!("reading the upload failed: {e}")))?
    {
        size += chunk.len() as u64;
        if size > max_bytes {
            return Err(reject(
                "size",
                format!("the file is larger than {} MB", max_bytes / (1024 * 1024)),
            ));
        }
        if head.len() < SNIFF_WINDOW {
            let take = (SNIFF_WINDOW - head.len()).min(chunk.len());
            head.extend_from_slice(&chunk[..take]);
        }
        out.write_all(&chunk)
            .await
            .map_err(|e| ApiError::Internal(e.into()))?;
    }
    out.flush()
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    Ok((size, head))
}

/// An upload that passed every check, waiting in a temporary file.
pub struct Received {
    tmp: PathBuf,
    pub name: String,
    pub size: u64,
    pub content_type: String,
}

impl Received {
    /// Removes the temporary file (when the upload is not kept).
    pub async fn discard(self) {
        let _ = tokio::fs::remove_file(&self.tmp).await;
    }
}

pub async fn insert(
    db: &Db,
    tenant: &TenantId,
    client_id: &str,
    id: &str,
    received: &Received,
    storage_key: &str,
) -> sqlx::Result<File> {
    let _turn = db.write_turn().await;
    sqlx::query_as(
        "INSERT INTO portal_files (id, tenant_id, client_id, name, size_bytes, content_type, storage_key, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id, name, size_bytes, content_type",
    )
    .bind(id)
    .bind(tenant.as_str())
    .bind(client_id)
    .bind(&received.name)
    .bind(received.size as i64)
    .bind(&received.content_type)
    .bind(storage_key)
    .bind(now_ms())
    .fetch_one(&db.pool)
    .await
}

pub async fn list(db: &Db, tenant: &TenantId, client_id: &str) -> sqlx::Result<Vec<File>> {
    sqlx::query_as(
        "SELECT id, name, size_bytes, content_type FROM portal_files \
         WHERE tenant_id = $1 AND client_id = $2 ORDER BY created_at DESC, id DESC",
    )
    .bind(tenant.as_str())
    .bind(client_id)
    .fetch_all(&db.pool)
    .await
}

/// The file's id, if it belongs to the client.
pub async fn owned(
    db: &Db,
    tenant: &TenantId,
    client_id: &str,
    id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar(
        "SELECT id FROM portal_files WHERE tenant_id = $1 AND client_id = $2 AND id = $3",
    )
    .bind(tenant.as_str())
    .bind(client_id)
    .bind(id)
    .fetch_optional(&db.pool)
    .await
}

/// What a signed link serves: name, type, size, storage key.
pub async fn for_download(
    db: &Db,
    id: &str,
) -> sqlx::Result<Option<(String, Option<String>, i64, String)>> {
    sqlx::query_as(
        "SELECT name, content_type, size_bytes, storage_key FROM portal_files WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(&db.pool)
    .await
}

/// Signs and checks download links: HMAC-SHA256 over the file id and the
/// expiry, keyed from the service's signing secret.
#[derive(Clone)]
pub struct LinkSigner {
    key: Vec<u8>,
}

impl LinkSigner {
    pub fn new(secret: &str) -> LinkSigner {
        // A key of its own, so a download signature can never stand in for
        // anything else signed with the service secret.
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
        mac.update(b"cairn portal download links");
        LinkSigner {
            key: mac.finalize().into_bytes().to_vec(),
        }
    }

    fn mac(&self, file_id: &str, expires: i64) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("any key length");
        mac.update(format!("{file_id}:{expires}").as_bytes());
        mac
    }

    /// The relative URL of a link to `file_id` valid until `expires`.
    pub fn link(&self, file_id: &str, expires: i64) -> String {
        let signature = hex::encode(self.mac(file_id, expires).finalize().into_bytes());
        format!("/api/files/{file_id}/content?expires={expires}&signature={signature}")
    }

    /// Checks a presented link at `now` (Unix seconds).
    pub fn verify(
        &self,
        file_id: &str,
        expires: i64,
        signature: &str,
        now: i64,
    ) -> Result<(), ApiError> {
        let bytes = hex::decode(signature)
            .map_err(|_| ApiError::Forbidden("invalid link signature".into()))?;
        self.mac(file_id, expires)
            .verify_slice(&bytes)
            .map_err(|_| ApiError::Forbidden("invalid link signature".into()))?;
        if now > expires {
            return Err(ApiError::Gone(
                "this download link has expired; request a new one".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filenames_lose_directories_and_control_characters() {
        assert_eq!(sanitize_filename("../../etc/passwd.pdf"), "passwd.pdf");
        assert_eq!(sanitize_filename("..\\..\\boot.ini.txt"), "boot.ini.txt");
        assert_eq!(sanitize_filename("re\u{0}port\n.pdf"), "report.pdf");
        assert_eq!(sanitize_filename("..."), "upload");
        assert_eq!(sanitize_filename(".hidden.txt"), "hidden.txt");
    }

    #[test]
    fn content_must_match_the_extension() {
        assert!(check_content("pdf", b"%PDF-1.7\n").is_ok());
        assert!(check_content("pdf", b"MZ\x90\x00\x03\x00\x00\x00\x04\x00").is_err());
        assert!(check_content("csv", b"a,b\n1,2\n").is_ok());
        assert!(check_content("csv", b"MZ\x90\x00\x03\x00\x00\x00\x04\x00").is_err());
        assert!(check_content("txt", b"bin\0ary").is_err());
        assert!(check_content("exe", b"MZ").is_err());
    }

    #[test]
    fn links_expire_and_resist_tampering() {
        let signer = LinkSigner::new("secret");
        let link = signer.link("f1", 1000);
        let signature = link.rsplit_once("signature=").unwrap().1;
        assert!(signer.verify("f1", 1000, signature, 999).is_ok());
        assert!(matches!(
            signer.verify("f1", 1000, signature, 1001),
            Err(ApiError::Gone(_))
        ));
        assert!(matches!(
            signer.verify("f2", 1000, signature, 999),
            Err(ApiError::Forbidden(_))
        ));
        assert!(matches!(
            signer.verify("f1", 2000, signature, 999),
            Err(ApiError::Forbidden(_))
        ));
        assert!(LinkSigner::new("other")
            .verify("f1", 1000, signature, 999)
            .is_err());
    }
}
