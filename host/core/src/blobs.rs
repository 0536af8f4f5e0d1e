//! Where portal documents live: a local directory (the default), or an
//! S3-compatible bucket reached through the `object_store` crate. Uploads
//! reach either from the temporary file `crate::uploads` checked, and go up
//! in bounded pieces, so a large document never sits whole in memory.
//! Downloads never pass through here for S3: the client is sent to a
//! presigned URL and reads straight from the bucket.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::signer::Signer;
use object_store::{
    Attribute, Attributes, ClientOptions, MultipartUpload, ObjectStore, ObjectStoreExt,
    PutMultipartOptions, PutOptions, PutPayload, RetryConfig,
};
use tokio::io::AsyncReadExt;

use crate::settings::Settings;
use crate::uploads::Received;

/// Documents up to this size go up in one PUT (read whole, which this
/// bounds); larger ones as a multipart upload of parts this size. S3 wants
/// every part but the last to be at least 5 MiB.
const PART_BYTES: usize = 8 * 1024 * 1024;
/// Parts uploading at once; an upload holds about one more than this in
/// memory.
const PARTS_IN_FLIGHT: usize = 2;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("document store I/O failed: {0}")]
    Io(#[from] std::io::Error),
    #[error("object store request failed: {0}")]
    Object(#[from] object_store::Error),
    #[error("the S3 document store cannot be set up: {0}")]
    Config(#[source] object_store::Error),
    #[error("this document is kept in the {0} store, which is not configured")]
    NotConfigured(StoreKind),
}

/// Which store holds a document; recorded on its row, so documents kept
/// before a change of store stay reachable.
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

/// Where a kept document went.
#[derive(Debug)]
pub struct Kept {
    pub kind: StoreKind,
    pub web_url: Option<String>,
}

/// The store new documents go to (`portal_store`).
pub enum BlobStore {
    Local(LocalStore),
    S3(S3Store),
}

impl BlobStore {
    /// `settings` must have been through `Settings::prepare`, which refuses
    /// an incomplete S3 configuration.
    pub fn from_settings(settings: &Settings) -> Result<BlobStore, StoreError> {
        let local = LocalStore::new(settings.portal_files_dir.clone());
        if settings.portal_store == StoreKind::S3.as_str() {
            Ok(BlobStore::S3(S3Store::new(settings, local.tmp_dir())?))
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

    /// Where uploads wait while they are checked.
    pub fn tmp_dir(&self) -> PathBuf {
        match self {
            BlobStore::Local(local) => local.tmp_dir(),
            BlobStore::S3(s3) => s3.tmp.clone(),
        }
    }

    /// Keeps a checked upload under `key`. The temporary file is gone
    /// afterwards whatever the outcome, and a failure leaves nothing stored.
    pub async fn keep(&self, received: &Received, key: &str) -> Result<Kept, StoreError> {
        let outcome = match self {
            BlobStore::Local(local) => received
                .persist(&local.path(key))
                .await
                .map(|()| None)
                .map_err(StoreError::from),
            BlobStore::S3(s3) => match s3.upload(received, key).await {
                Ok(()) => Ok(Some(s3.web_url(key))),
                Err(err) => {
                    // The request may have failed after S3 kept the object
                    // (a lost response); the key is new, so deleting it can
                    // only remove what this upload wrote.
                    if let Err(cleanup) = s3.client.delete(&ObjectPath::from(key)).await {
                        tracing::warn!(error = %cleanup, key, "removing a failed upload's object failed");
                    }
                    Err(err)
                }
            },
        };
        // After a successful local keep the file has moved and this finds
        // nothing; in every other case it is the cleanup.
        let _ = tokio::fs::remove_file(&received.tmp).await;
        Ok(Kept {
            kind: self.kind(),
            web_url: outcome?,
        })
    }

    /// Removes a document kept by [`BlobStore::keep`] (when its row could
    /// not be written).
    pub async fn remove(&self, key: &str) -> Result<(), StoreError> {
        match self {
            BlobStore::Local(local) => Ok(tokio::fs::remove_file(local.path(key)).await?),
            BlobStore::S3(s3) => Ok(s3.client.delete(&ObjectPath::from(key)).await?),
        }
    }

    /// A URL that reads the S3 object `key` without credentials, valid for
    /// `ttl`.
    pub async fn presigned_get(&self, key: &str, ttl: Duration) -> Result<String, StoreError> {
        match self {
            BlobStore::S3(s3) => Ok(s3
                .client
                .signed_url(reqwest::Method::GET, &ObjectPath::from(key), ttl)
                .await?
                .to_string()),
            BlobStore::Local(_) => Err(StoreError::NotConfigured(StoreKind::S3)),
        }
    }
}

/// A directory, one file per document.
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
}

/// An S3-compatible bucket, addressed path-style (`<endpoint>/<bucket>/<key>`)
/// so that any S3-compatible service works, not only AWS.
pub struct S3Store {
    client: AmazonS3,
    web_base: String,
    tmp: PathBuf,
}

impl S3Store {
    fn new(settings: &Settings, tmp: PathBuf) -> Result<S3Store, StoreError> {
        let endpoint = settings.portal_s3_endpoint.trim_end_matches('/');
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
            .with_bucket_name(&settings.portal_s3_bucket)
            .with_region(&settings.portal_s3_region)
            .with_access_key_id(&settings.portal_s3_access_key_id)
            .with_secret_access_key(&settings.portal_s3_secret_access_key)
            .with_retry(retry)
            .build()
            .map_err(StoreError::Config)?;
        let web_base = if settings.portal_s3_web_base_url.is_empty() {
            format!("{endpoint}/{}", settings.portal_s3_bucket)
        } else {
            settings
                .portal_s3_web_base_url
                .trim_end_matches('/')
                .to_string()
        };
        Ok(S3Store {
            client,
            web_base,
            tmp,
        })
    }

    fn web_url(&self, key: &str) -> String {
        format!("{}/{key}", self.web_base)
    }

    async fn upload(&self, received: &Received, key: &str) -> Result<(), StoreError> {
        let location = ObjectPath::from(key);
        // Stored on the object so that a presigned download names and types
        // the file as the local store's links do.
        let attributes = Attributes::from_iter([
            (Attribute::ContentType, received.content_type.clone()),
            (
                Attribute::ContentDisposition,
                attachment_disposition(&received.name),
            ),
        ]);
        if received.size <= PART_BYTES as u64 {
            let bytes = tokio::fs::read(&received.tmp).await?;
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
        let sent = match send_parts(upload.as_mut(), &received.tmp).await {
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
            portal_store: "s3".into(),
            portal_s3_endpoint: "http://127.0.0.1:9000/".into(),
            portal_s3_bucket: "docs".into(),
            portal_s3_access_key_id: "AKID".into(),
            portal_s3_secret_access_key: "secret".into(),
            portal_s3_web_base_url: web_base.into(),
            portal_files_dir: PathBuf::from("/srv/portal"),
            ..Settings::default()
        }
    }

    #[test]
    fn web_urls_use_the_web_base_or_the_object_address() {
        let BlobStore::S3(plain) = BlobStore::from_settings(&s3_settings("")).unwrap() else {
            panic!("an S3 store")
        };
        assert_eq!(plain.web_url("t/f"), "http://127.0.0.1:9000/docs/t/f");
        assert_eq!(plain.tmp, PathBuf::from("/srv/portal/tmp"));
        let BlobStore::S3(fronted) =
            BlobStore::from_settings(&s3_settings("https://docs.example.com/files/")).unwrap()
        else {
            panic!("an S3 store")
        };
        assert_eq!(fronted.web_url("t/f"), "https://docs.example.com/files/t/f");
        let local = BlobStore::from_settings(&Settings::default()).unwrap();
        assert_eq!(local.kind(), StoreKind::Local);
    }

    #[test]
    fn store_kinds_round_trip() {
        for kind in [StoreKind::Local, StoreKind::S3] {
            assert_eq!(StoreKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(StoreKind::parse("ftp"), None);
    }
}
