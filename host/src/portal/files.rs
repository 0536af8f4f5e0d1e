//! Portal documents: the local blob store (streamed both ways, never whole
//! in memory) and short-lived signed download URLs. Validation is
//! `crate::uploads`.

use std::path::PathBuf;

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;
use utoipa::ToSchema;

use crate::auth::TenantId;
use crate::db::{now_ms, Db};
use crate::http::error::ApiError;
use crate::uploads::Received;

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

    /// Where uploads wait while they are checked: inside the store, so
    /// keeping one is a rename.
    pub fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
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
