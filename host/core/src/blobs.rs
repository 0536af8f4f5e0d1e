//! Where every file written for later lives: CSV and Excel uploads waiting
//! for their parse, generated reports and portal documents. A local
//! directory per shelf (the default, one machine only), or one S3-compatible
//! bucket reached through the `object_store` crate, which several processes
//! share. Files go up from a temporary file in bounded pieces and come back
//! as a stream, so a large file never sits whole in memory. Portal
//! downloads never pass through here for S3: the client is sent to a
//! presigned URL and reads straight from the bucket.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::body::Bytes;
use futures::stream::{BoxStream, FuturesUnordered, StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::signer::Signer;
use object_store::{
    Attribute, Attributes, ClientOptions, MultipartUpload, ObjectStore, ObjectStoreExt,
    PutMultipartOptions, PutOptions, PutPayload, RetryConfig,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::settings::Settings;
use crate::uploads::Received;

/// Files up to this size go up in one PUT (read whole, which this bounds);
/// larger ones as a multipart upload of parts this size. S3 wants every
/// part but the last to be at least 5 MiB.
const PART_BYTES: usize = 8 * 1024 * 1024;
/// Parts uploading at once; an upload holds about one more than this in
/// memory.
const PARTS_IN_FLIGHT: usize = 2;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file was removed from the store (by an operator, a retention
    /// rule, or a change of store): what it held must be made again.
    #[error("the file is no longer in the store")]
    Missing,
    #[error("file store I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("object store request failed: {0}")]
    Object(#[source] object_store::Error),
    #[error("the S3 store cannot be set up: {0}")]
    Config(#[source] object_store::Error),
    #[error("this file is kept in the {0} store, which is not configured")]
    NotConfigured(StoreKind),
}

impl From<object_store::Error> for StoreError {
    fn from(err: object_store::Error) -> Self {
        match err {
            object_store::Error::NotFound { .. } => StoreError::Missing,
            other => StoreError::Object(other),
        }
    }
}

/// A local read that finds no file is a missing blob, not an I/O failure.
fn local_read(err: std::io::Error) -> StoreError {
    if err.kind() == std::io::ErrorKind::NotFound {
        StoreError::Missing
    } else {
        StoreError::Io(err)
    }
}

/// Which store holds a file; recorded on a portal document's row, so
/// documents kept before a change of store stay reachable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    Local,
    S3,
}

impl StoreKind {
    pub fn as_str(self) -> &'static str {
        match self {
            StoreKind::Local => "local",
            StoreKind::S3 => "s3",
        }
    }

    pub fn parse(raw: &str) -> Option<StoreKind> {
        match raw {
            "local" => Some(StoreKind::Local),
            "s3" => Some(StoreKind::S3),
            _ => None,
        }
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a store keeps. Each shelf has its own local directory and its own
/// key prefix in the bucket, so one bucket serves them all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shelf {
    /// Portal documents; unprefixed, as they were before the other shelves
    /// shared the bucket.
    Portal,
    /// CSV and Excel uploads until their parse has read them.
    Uploads,
    /// Generated reports until retention deletes them.
    Reports,
}

impl Shelf {
    fn local_root(self, settings: &Settings) -> PathBuf {
        match self {
            Shelf::Portal => settings.portal_files_dir.clone(),
            Shelf::Uploads => settings.csv_uploads_dir.clone(),
            Shelf::Reports => settings.reports_dir.clone(),
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Shelf::Portal => "",
            Shelf::Uploads => "csv-uploads/",
            Shelf::Reports => "reports/",
        }
    }
}

/// Where a kept document went.
#[derive(Debug)]
pub struct Kept {
    pub kind: StoreKind,
    pub web_url: Option<String>,
}

/// A file to put in the store: a local file and how it is served.
pub struct Outgoing<'a> {
    pub file: &'a Path,
    pub size: u64,
    pub content_type: &'a str,
    /// The name a download gives it.
    pub name: &'a str,
}

impl<'a> From<&'a Received> for Outgoing<'a> {
    fn from(received: &'a Received) -> Self {
        Outgoing {
            file: &received.tmp,
            size: received.size,
            content_type: &received.content_type,
            name: &received.name,
        }
    }
}

/// A stored file on this machine's disk, for a reader that needs a path
/// (the spreadsheet parsers). A copy fetched from the bucket is removed by
/// [`Fetched::release`].
#[derive(Debug)]
pub struct Fetched {
    pub path: PathBuf,
    temporary: bool,
}

impl Fetched {
    /// Removes the local copy of a fetched object; a local store's own
    /// file stays.
    pub async fn release(self) {
        if self.temporary {
            let _ = tokio::fs::remove_file(&self.path).await;
        }
    }
}

/// A stored file opened for reading: its size and its bytes as a stream.
pub struct Opened {
    pub size: u64,
    pub bytes: BoxStream<'static, std::io::Result<Bytes>>,
}

/// One store per shelf, built once from the settings.
#[derive(Clone)]
pub struct Blobs {
    pub portal: BlobStore,
    pub uploads: BlobStore,
    pub reports: BlobStore,
}

impl Blobs {
    /// Whether a file of any shelf is kept on this machine's disk, where
    /// another process cannot read it.
    pub fn any_local(&self) -> bool {
        [&self.portal, &self.uploads, &self.reports]
            .iter()
            .any(|store| store.kind() == StoreKind::Local)
    }

    pub fn from_settings(settings: &Settings) -> Result<Blobs, StoreError> {
        Ok(Blobs {
            portal: BlobStore::from_settings(settings, Shelf::Portal)?,
            uploads: BlobStore::from_settings(settings, Shelf::Uploads)?,
            reports: BlobStore::from_settings(settings, Shelf::Reports)?,
        })
    }
}

/// The store one shelf's new files go to (`blob_store`).
#[derive(Clone)]
pub enum BlobStore {
    Local(LocalStore),
    S3(S3Store),
}

impl BlobStore {
    /// `settings` must have been through `Settings::prepare`, which refuses
    /// an incomplete S3 configuration.
    pub fn from_settings(settings: &Settings, shelf: Shelf) -> Result<BlobStore, StoreError> {
        let local = LocalStore::new(shelf.local_root(settings));
        if settings.blob_store == StoreKind::S3.as_str() {
            Ok(BlobStore::S3(S3Store::new(
                settings,
                shelf.prefix(),
                local.tmp_dir(),
            )?))
        } else {
            Ok(BlobStore::Local(local))
        }
    }

    pub fn kind(&self) -> StoreKind {
        match self {
            BlobStore::Local(_) => StoreKind::Local,
            BlobStore::S3(_) => StoreKind::S3,
        }
    }

    /// Who can read this store's files: empty when every process can (a
    /// bucket); for a local directory, its id, kept in the directory, so
    /// processes sharing the directory share it. Work that needs a file
    /// goes to a process holding its store.
    pub fn holder(&self) -> Result<String, StoreError> {
        match self {
            BlobStore::Local(local) => Ok(local.id()?),
            BlobStore::S3(_) => Ok(String::new()),
        }
    }

    /// Where uploads wait while they are checked, and where objects are
    /// fetched to: on this machine, whichever store keeps the files.
    pub fn tmp_dir(&self) -> PathBuf {
        match self {
            BlobStore::Local(local) => local.tmp_dir(),
            BlobStore::S3(s3) => s3.tmp.clone(),
        }
    }

    /// Keeps a checked upload under `key`. The temporary file is gone
    /// afterwards whatever the outcome, and a failure leaves nothing stored.
    pub async fn keep(&self, received: &Received, key: &str) -> Result<Kept, StoreError> {
        self.put(Outgoing::from(received), key).await?;
        Ok(Kept {
            kind: self.kind(),
            web_url: match self {
                BlobStore::Local(_) => None,
                BlobStore::S3(s3) => Some(s3.web_url(key)),
            },
        })
    }

    /// Stores the local file `outgoing.file` under `key` (it is moved or
    /// sent, and gone afterwards whatever the outcome); a failure leaves
    /// nothing stored.
    pub async fn put(&self, outgoing: Outgoing<'_>, key: &str) -> Result<(), StoreError> {
        let outcome = match self {
            BlobStore::Local(local) => local.put(outgoing.file, key).await,
            BlobStore::S3(s3) => match s3.upload(&outgoing, key).await {
                Ok(()) => Ok(()),
                Err(err) => {
                    // The request may have failed after S3 kept the object
                    // (a lost response); the key is new, so deleting it can
                    // only remove what this call wrote.
                    if let Err(cleanup) = s3.client.delete(&s3.location(key)).await {
                        tracing::warn!(error = %cleanup, key, "removing a failed upload's object failed");
                    }
                    Err(err)
                }
            },
        };
        // After a successful local put the file has moved and this finds
        // nothing; in every other case it is the cleanup.
        let _ = tokio::fs::remove_file(outgoing.file).await;
        outcome
    }

    /// The file under `key` on this machine's disk: the local store's own
    /// file, or a copy of the object streamed into [`BlobStore::tmp_dir`].
    pub async fn fetch(&self, key: &str) -> Result<Fetched, StoreError> {
        match self {
            BlobStore::Local(local) => {
                let path = local.path(key);
                tokio::fs::metadata(&path).await.map_err(local_read)?;
                Ok(Fetched {
                    path,
                    temporary: false,
                })
            }
            BlobStore::S3(s3) => {
                let mut bytes = s3.client.get(&s3.location(key)).await?.into_stream();
                tokio::fs::create_dir_all(&s3.tmp).await?;
                let path = s3
                    .tmp
                    .join(format!("fetched-{}", uuid::Uuid::now_v7().simple()));
                let fetched = Fetched {
                    path,
                    temporary: true,
                };
                let mut file = tokio::fs::File::create(&fetched.path).await?;
                let copied: Result<(), StoreError> = async {
                    while let Some(piece) = bytes.next().await {
                        file.write_all(&piece?).await?;
                    }
                    file.flush().await?;
                    Ok(())
                }
                .await;
                match copied {
                    Ok(()) => Ok(fetched),
                    Err(err) => {
                        fetched.release().await;
                        Err(err)
                    }
                }
            }
        }
    }

    /// The file under `key` as a stream, for a download.
    pub async fn open(&self, key: &str) -> Result<Opened, StoreError> {
        match self {
            BlobStore::Local(local) => {
                let file = tokio::fs::File::open(local.path(key))
                    .await
                    .map_err(local_read)?;
                let size = file.metadata().await?.len();
                let bytes = tokio_util::io::ReaderStream::with_capacity(file, 64 * 1024);
                Ok(Opened {
                    size,
                    bytes: bytes.boxed(),
                })
            }
            BlobStore::S3(s3) => {
                let got = s3.client.get(&s3.location(key)).await?;
                let size = got.meta.size;
                let bytes = got.into_stream().map_err(std::io::Error::other);
                Ok(Opened {
                    size,
                    bytes: bytes.boxed(),
                })
            }
        }
    }

    /// Whether `key` is still stored: [`StoreError::Missing`] when not.
    pub async fn check(&self, key: &str) -> Result<(), StoreError> {
        match self {
            BlobStore::Local(local) => {
                tokio::fs::metadata(local.path(key))
                    .await
                    .map_err(local_read)?;
            }
            BlobStore::S3(s3) => {
                s3.client.head(&s3.location(key)).await?;
            }
        }
        Ok(())
    }

    /// Removes the file under `key`; one already gone is no error.
    pub async fn remove(&self, key: &str) -> Result<(), StoreError> {
        let removed = match self {
            BlobStore::Local(local) => tokio::fs::remove_file(local.path(key))
                .await
                .map_err(local_read),
            BlobStore::S3(s3) => s3
                .client
                .delete(&s3.location(key))
                .await
                .map_err(StoreError::from),
        };
        match removed {
            Err(StoreError::Missing) => Ok(()),
            other => other,
        }
    }

    /// Stores a small file and removes it again: whether this store
    /// takes new files now (for readiness).
    pub async fn probe(&self) -> Result<(), StoreError> {
        let tmp = self.tmp_dir();
        tokio::fs::create_dir_all(&tmp).await?;
        let name = format!("ready-probe-{}", uuid::Uuid::new_v4().simple());
        let file = tmp.join(&name);
        tokio::fs::write(&file, b"ready").await?;
        let key = format!("probes/{name}");
        let stored = self
            .put(
                Outgoing {
                    file: &file,
                    size: 5,
                    content_type: "text/plain",
                    name: &name,
                },
                &key,
            )
            .await;
        // `put` moved or sent the file; left over only when it failed early.
        let _ = tokio::fs::remove_file(&file).await;
        stored?;
        self.remove(&key).await
    }

    /// A URL that reads the S3 object `key` without credentials, valid for
    /// `ttl`.
    pub async fn presigned_get(&self, key: &str, ttl: Duration) -> Result<String, StoreError> {
        match self {
            BlobStore::S3(s3) => Ok(s3
                .client
                .signed_url(reqwest::Method::GET, &s3.location(key), ttl)
                .await?
                .to_string()),
            BlobStore::Local(_) => Err(StoreError::NotConfigured(StoreKind::S3)),
        }
    }
}

/// A directory, one file per key.
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

    /// Inside the store, so keeping an upload locally is a rename.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    /// The directory's id (`.store-id` in it), made by the first process
    /// to ask: written beside and linked into place, so two processes
    /// starting at once read the same one.
    fn id(&self) -> std::io::Result<String> {
        let file = self.root.join(".store-id");
        if let Ok(id) = std::fs::read_to_string(&file) {
            return Ok(id.trim().to_string());
        }
        std::fs::create_dir_all(&self.root)?;
        let id = format!("local-{}", uuid::Uuid::new_v4().simple());
        let beside = self.root.join(format!(".store-id.{id}"));
        std::fs::write(&beside, &id)?;
        let linked = std::fs::hard_link(&beside, &file);
        let _ = std::fs::remove_file(&beside);
        match linked {
            Ok(()) => Ok(id),
            Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {
                Ok(std::fs::read_to_string(&file)?.trim().to_string())
            }
            Err(err) => Err(err),
        }
    }

    async fn put(&self, file: &Path, key: &str) -> Result<(), StoreError> {
        let target = self.path(key);
        if let Some(parent) = target.parent() {
            tokio::fs::create_dir_all(parent).await?;
        }
        Ok(tokio::fs::rename(file, target).await?)
    }
}

/// An S3-compatible bucket, addressed path-style (`<endpoint>/<bucket>/<key>`)
/// so that any S3-compatible service works, not only AWS.
#[derive(Clone)]
pub struct S3Store {
    client: AmazonS3,
    /// The shelf's prefix, put before every key.
    prefix: &'static str,
    web_base: String,
    tmp: PathBuf,
}

impl S3Store {
    fn new(settings: &Settings, prefix: &'static str, tmp: PathBuf) -> Result<S3Store, StoreError> {
        let endpoint = settings.s3_endpoint.trim_end_matches('/');
        let options = ClientOptions::new()
            // A part of PART_BYTES over a slow uplink needs more than the
            // 30 s default.
            .with_timeout(Duration::from_secs(120))
            .with_allow_http(endpoint.starts_with("http://"));
        // The client is waiting for its upload: give up within a minute
        // rather than the crate's default of three.
        let retry = RetryConfig {
            max_retries: 3,
            retry_timeout: Duration::from_secs(60),
            ..RetryConfig::default()
        };
        let client = AmazonS3Builder::new()
            .with_client_options(options)
            .with_endpoint(endpoint)
            .with_allow_http(endpoint.starts_with("http://"))
            .with_virtual_hosted_style_request(false)
            .with_bucket_name(&settings.s3_bucket)
            .with_region(&settings.s3_region)
            .with_access_key_id(&settings.s3_access_key_id)
            .with_secret_access_key(&settings.s3_secret_access_key)
            .with_retry(retry)
            .build()
            .map_err(StoreError::Config)?;
        let web_base = if settings.s3_web_base_url.is_empty() {
            format!("{endpoint}/{}", settings.s3_bucket)
        } else {
            settings.s3_web_base_url.trim_end_matches('/').to_string()
        };
        Ok(S3Store {
            client,
            prefix,
            web_base,
            tmp,
        })
    }

    fn location(&self, key: &str) -> ObjectPath {
        ObjectPath::from(format!("{}{key}", self.prefix))
    }

    fn web_url(&self, key: &str) -> String {
        format!("{}/{}{key}", self.web_base, self.prefix)
    }

    async fn upload(&self, received: &Outgoing<'_>, key: &str) -> Result<(), StoreError> {
        let location = self.location(key);
        // Stored on the object so that a presigned download names and types
        // the file as the local store's links do.
        let attributes = Attributes::from_iter([
            (Attribute::ContentType, received.content_type.to_string()),
            (
                Attribute::ContentDisposition,
                attachment_disposition(received.name),
            ),
        ]);
        if received.size <= PART_BYTES as u64 {
            let bytes = tokio::fs::read(received.file).await?;
            let options = PutOptions {
                attributes,
                ..PutOptions::default()
            };
            self.client
                .put_opts(&location, PutPayload::from(bytes), options)
                .await?;
            return Ok(());
        }
        let options = PutMultipartOptions {
            attributes,
            ..PutMultipartOptions::default()
        };
        let mut upload = self.client.put_multipart_opts(&location, options).await?;
        let sent = match send_parts(upload.as_mut(), received.file).await {
            Ok(()) => upload
                .complete()
                .await
                .map(|_| ())
                .map_err(StoreError::from),
            Err(err) => Err(err),
        };
        if sent.is_err() {
            // An unfinished upload holds storage until it is aborted.
            if let Err(abort) = upload.abort().await {
                tracing::warn!(error = %abort, key, "aborting a failed multipart upload failed");
            }
        }
        sent
    }
}

/// Sends the file as parts of PART_BYTES, at most PARTS_IN_FLIGHT at once,
/// so that memory stays bounded whatever the file's size.
async fn send_parts(upload: &mut dyn MultipartUpload, file: &Path) -> Result<(), StoreError> {
    let mut file = tokio::fs::File::open(file).await?;
    let mut in_flight = FuturesUnordered::new();
    loop {
        let mut part = Vec::with_capacity(PART_BYTES);
        (&mut file)
            .take(PART_BYTES as u64)
            .read_to_end(&mut part)
            .await?;
        if part.is_empty() {
            break;
        }
        while in_flight.len() >= PARTS_IN_FLIGHT {
            if let Some(sent) = in_flight.next().await {
                sent?;
            }
        }
        let last = part.len() < PART_BYTES;
        // Part numbers follow the order of these calls.
        in_flight.push(upload.put_part(PutPayload::from(part)));
        if last {
            break;
        }
    }
    while let Some(sent) = in_flight.next().await {
        sent?;
    }
    Ok(())
}

/// The `Content-Disposition` a document is served with: its name, kept to
/// the characters a quoted header parameter can carry.
pub fn attachment_disposition(name: &str) -> String {
    let ascii: String = name
        .chars()
        .filter(|c| (c.is_ascii_graphic() || *c == ' ') && *c != '"' && *c != '\\')
        .collect();
    format!("attachment; filename=\"{ascii}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3_settings(web_base: &str) -> Settings {
        Settings {
            blob_store: "s3".into(),
            s3_endpoint: "http://127.0.0.1:9000/".into(),
            s3_bucket: "docs".into(),
            s3_access_key_id: "AKID".into(),
            s3_secret_access_key: "secret".into(),
            s3_web_base_url: web_base.into(),
            portal_files_dir: PathBuf::from("/srv/portal"),
            ..Settings::default()
        }
    }

    #[test]
    fn web_urls_use_the_web_base_or_the_object_address() {
        let BlobStore::S3(plain) =
            BlobStore::from_settings(&s3_settings(""), Shelf::Portal).unwrap()
        else {
            panic!("an S3 store")
        };
        assert_eq!(plain.web_url("t/f"), "http://127.0.0.1:9000/docs/t/f");
        assert_eq!(plain.tmp, PathBuf::from("/srv/portal/tmp"));
        let BlobStore::S3(fronted) = BlobStore::from_settings(
            &s3_settings("https://docs.example.com/files/"),
            Shelf::Portal,
        )
        .unwrap() else {
            panic!("an S3 store")
        };
        assert_eq!(fronted.web_url("t/f"), "https://docs.example.com/files/t/f");
        let local = BlobStore::from_settings(&Settings::default(), Shelf::Portal).unwrap();
        assert_eq!(local.kind(), StoreKind::Local);
        // Other shelves share the bucket under their own prefix.
        let BlobStore::S3(reports) =
            BlobStore::from_settings(&s3_settings(""), Shelf::Reports).unwrap()
        else {
            panic!("an S3 store")
        };
        assert_eq!(reports.location("t/r.pdf").as_ref(), "reports/t/r.pdf");
    }

    #[test]
    fn store_kinds_round_trip() {
        for kind in [StoreKind::Local, StoreKind::S3] {
            assert_eq!(StoreKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(StoreKind::parse("ftp"), None);
    }
}
