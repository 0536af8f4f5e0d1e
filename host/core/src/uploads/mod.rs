//! Upload validation, one place for every upload route: the extension must
//! be in the kind's whitelist, the size non-empty and within the call's
//! maximum, and the content sniffed from the first 8 KB must match the
//! extension. Files stream to a temporary file as they are checked, so a
//! large upload never sits whole in memory.
//!
//! Upload validation for every upload route (kinds with their extensions and
//! sniffed MIME prefixes, size, sanitized filenames); streams the part to a
//! temporary file while checking.

use std::path::{Path, PathBuf};

use axum::extract::multipart::Field;
use axum::extract::Multipart;
use tokio::io::AsyncWriteExt;

/// Bytes the content is sniffed from.
const SNIFF_WINDOW: usize = 8 * 1024;

const CSV_TYPES: &[&str] = &["text/", "application/csv", "application/vnd.ms-excel"];
const EXCEL_TYPES: &[&str] = &[
    "application/vnd.openxmlformats",
    "application/vnd.ms-excel",
    "application/zip",
];

/// What a route accepts: extension -> accepted sniffed MIME prefixes.
/// Text formats have no magic number; they pass when nothing binary is
/// sniffed and the window holds no NUL byte (UTF-16 text is recognised by
/// its byte-order mark).
#[derive(Debug, Clone, Copy)]
pub struct UploadKind {
    /// How the kind is named in messages ("document", "spreadsheet").
    pub label: &'static str,
    pub types: &'static [(&'static str, &'static [&'static str])],
}

/// Portal documents: pdf, docx, xlsx, csv, txt, png, jpg.
pub const DOCUMENTS: UploadKind = UploadKind {
    label: "document",
    types: &[
        ("pdf", &["application/pdf"]),
        (
            "docx",
            &["application/vnd.openxmlformats", "application/zip"],
        ),
        (
            "xlsx",
            &["application/vnd.openxmlformats", "application/zip"],
        ),
        ("csv", CSV_TYPES),
        ("txt", &["text/"]),
        ("png", &["image/png"]),
        ("jpg", &["image/jpeg"]),
        ("jpeg", &["image/jpeg"]),
    ],
};

/// CSV source uploads: the spec's csv and excel kinds together.
pub const SPREADSHEETS: UploadKind = UploadKind {
    label: "CSV or Excel",
    types: &[
        ("csv", CSV_TYPES),
        ("xlsx", EXCEL_TYPES),
        ("xls", EXCEL_TYPES),
    ],
};

/// Why an upload was not accepted.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// A validation check failed; `check` is `extension`, `size`, `content`
    /// or `file`.
    #[error("{message}")]
    Rejected {
        check: &'static str,
        message: String,
    },
    /// The request body broke off or was not valid multipart.
    #[error("reading the upload failed: {0}")]
    Body(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

pub fn reject(check: &'static str, message: impl Into<String>) -> UploadError {
    UploadError::Rejected {
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

impl UploadKind {
    fn prefixes(&self, ext: &str) -> Option<&'static [&'static str]> {
        self.types
            .iter()
            .find(|(e, _)| *e == ext)
            .map(|(_, prefixes)| *prefixes)
    }

    fn check_extension(&self, name: &str) -> Result<String, UploadError> {
        let ext =
            extension(name).ok_or_else(|| reject("extension", "the file name has no extension"))?;
        match self.prefixes(&ext) {
            Some(_) => Ok(ext),
            None => Err(reject(
                "extension",
                format!(
                    ".{ext} is not an accepted {} type (accepted: {})",
                    self.label,
                    self.types
                        .iter()
                        .map(|(e, _)| format!(".{e}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }

    /// Checks the sniffed content against the extension; returns the
    /// content type to record.
    pub fn check_content(&self, ext: &str, head: &[u8]) -> Result<String, UploadError> {
        let accepted = self.prefixes(ext).ok_or_else(|| {
            reject(
                "extension",
                format!(".{ext} is not an accepted {} type", self.label),
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
            None if text_kind && looks_like_text(head) => Ok(if ext == "csv" {
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
}

/// Text has no NUL byte, unless it is UTF-16 and says so with a BOM.
fn looks_like_text(head: &[u8]) -> bool {
    head.starts_with(&[0xFF, 0xFE]) || head.starts_with(&[0xFE, 0xFF]) || !head.contains(&0)
}

/// An upload that passed every check, waiting in a temporary file.
#[derive(Debug)]
pub struct Received {
    pub tmp: PathBuf,
    pub name: String,
    pub size: u64,
    pub content_type: String,
}

impl Received {
    /// Moves the file to `target`, creating its directory.
    pub async fn persist(&self, target: &Path) -> std::io::Result<()> {
        if let Some(parent) = target.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        tokio::fs::rename(&self.tmp, target).await
    }

    /// Removes the temporary file (when the upload is not kept).
    pub async fn discard(self) {
        let _ = tokio::fs::remove_file(&self.tmp).await;
    }
}

/// The multipart/form-data body of every upload route, as OpenAPI shows
/// it: one part named `file` with the file's bytes and its name in the
/// part's `Content-Disposition`.
#[derive(utoipa::ToSchema)]
pub struct FileUpload {
    /// The file; its name (with extension) is read from the part.
    #[schema(value_type = String, format = Binary)]
    pub file: Vec<u8>,
}

/// Reads a form that carries exactly one part named `file` (other parts are
/// ignored) and receives it as [`receive`] does. A second `file` part
/// rejects the upload and removes the first, so a refused form keeps
/// nothing.
pub async fn receive_one(
    mut multipart: Multipart,
    kind: UploadKind,
    tmp_dir: &Path,
    max_bytes: u64,
) -> Result<Received, UploadError> {
    let mut received: Option<Received> = None;
    loop {
        let field = match multipart.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => break,
            Err(err) => {
                if let Some(first) = received {
                    first.discard().await;
                }
                return Err(UploadError::Body(format!(
                    "malformed multipart body: {err}"
                )));
            }
        };
        if field.name() != Some("file") {
            continue;
        }
        if let Some(first) = received.take() {
            first.discard().await;
            return Err(reject("file", "send exactly one part named `file`"));
        }
        received = Some(receive(field, kind, tmp_dir, max_bytes).await?);
    }
    received.ok_or_else(|| reject("file", "no part named `file` in the form"))
}

/// Streams the multipart field into `tmp_dir`, checking size as it goes and
/// sniffing the first 8 KB, then checks extension and content. On any
/// failure nothing is left behind.
pub async fn receive(
    mut field: Field<'_>,
    kind: UploadKind,
    tmp_dir: &Path,
    max_bytes: u64,
) -> Result<Received, UploadError> {
    let name = sanitize_filename(field.file_name().unwrap_or("upload"));
    let ext = kind.check_extension(&name)?;
    tokio::fs::create_dir_all(tmp_dir).await?;
    let tmp = tmp_dir.join(uuid::Uuid::new_v4().simple().to_string());
    let checked = match write_field(&mut field, &tmp, max_bytes).await {
        Ok((0, _)) => Err(reject("size", "the file is empty")),
        Ok((size, head)) => kind.check_content(&ext, &head).map(|t| (size, t)),
        Err(err) => Err(err),
    };
    match checked {
        Ok((size, content_type)) => Ok(Received {
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

async fn write_field(
    field: &mut Field<'_>,
    tmp: &Path,
    max_bytes: u64,
) -> Result<(u64, Vec<u8>), UploadError> {
    let mut out = tokio::fs::File::create(tmp).await?;
    let mut size: u64 = 0;
    let mut head = Vec::with_capacity(SNIFF_WINDOW);
    while let Some(chunk) = field
        .chunk()
        .await
        .map_err(|e| UploadError::Body(e.to_string()))?
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
        out.write_all(&chunk).await?;
    }
    out.flush().await?;
    Ok((size, head))
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
        let exe = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00";
        assert!(DOCUMENTS.check_content("pdf", b"%PDF-1.7\n").is_ok());
        assert!(DOCUMENTS.check_content("pdf", exe).is_err());
        assert!(DOCUMENTS.check_content("csv", b"a,b\n1,2\n").is_ok());
        assert!(DOCUMENTS.check_content("csv", exe).is_err());
        assert!(DOCUMENTS.check_content("txt", b"bin\0ary").is_err());
        assert!(DOCUMENTS.check_content("exe", b"MZ").is_err());
        assert!(SPREADSHEETS
            .check_content("csv", b"\xFF\xFEa\0,\0b\0")
            .is_ok());
        assert!(SPREADSHEETS
            .check_content("xlsx", b"PK\x03\x04\x14\0\0\0")
            .is_ok());
        assert!(SPREADSHEETS.check_content("xlsx", exe).is_err());
        assert!(SPREADSHEETS.check_extension("report.pdf").is_err());
    }
}
