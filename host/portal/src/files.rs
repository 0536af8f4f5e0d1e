//! Portal documents: their rows, and the short-lived signed download links
//! of the local store. Validation is `cairn_core::uploads`; where the bytes live
//! is `store.rs`.

use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;
use utoipa::ToSchema;

use cairn_core::db::{now_ms, Db};
use cairn_core::http::error::ApiError;
use cairn_core::ids::TenantId;
use cairn_core::uploads::Received;

use cairn_core::blobs::{Kept, StoreKind};

/// A stored document.
#[derive(Debug, Serialize, ToSchema, sqlx_macros::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct File {
    pub id: String,
    pub name: String,
    pub size_bytes: i64,
    pub content_type: Option<String>,
    /// Web address of the document in its store (the S3 object's URL, or
    /// `portal_s3_web_base_url` + key); null in the local store, which has
    /// none.
    pub sp_web_url: Option<String>,
}

const FILE_COLUMNS: &str = "id, name, size_bytes, content_type, sp_web_url";

pub async fn insert(
    db: &Db,
    tenant: &TenantId,
    client_id: &str,
    id: &str,
    received: &Received,
    storage_key: &str,
    kept: &Kept,
) -> sqlx::Result<File> {
    let _turn = db.write_turn().await;
    sqlx::query_as(&format!(
        "INSERT INTO portal_files (id, tenant_id, client_id, name, size_bytes, content_type, storage_key, \
         store, sp_web_url, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING {FILE_COLUMNS}",
    ))
    .bind(id)
    .bind(tenant.as_str())
    .bind(client_id)
    .bind(&received.name)
    .bind(received.size as i64)
    .bind(&received.content_type)
    .bind(storage_key)
    .bind(kept.kind.as_str())
    .bind(&kept.web_url)
    .bind(now_ms())
    .fetch_one(&db.pool)
    .await
}

pub async fn list(db: &Db, tenant: &TenantId, client_id: &str) -> sqlx::Result<Vec<File>> {
    sqlx::query_as(&format!(
        "SELECT {FILE_COLUMNS} FROM portal_files \
         WHERE tenant_id = $1 AND client_id = $2 ORDER BY created_at DESC, id DESC",
    ))
    .bind(tenant.as_str())
    .bind(client_id)
    .fetch_all(&db.pool)
    .await
}

/// Where one of the client's documents is kept.
#[derive(Debug)]
pub struct Stored {
    pub storage_key: String,
    pub store: StoreKind,
}

/// Where the file is kept, if it belongs to the client.
pub async fn owned(
    db: &Db,
    tenant: &TenantId,
    client_id: &str,
    id: &str,
) -> Result<Option<Stored>, ApiError> {
    let row: Option<(String, String)> = sqlx::query_as(
        "SELECT storage_key, store FROM portal_files WHERE tenant_id = $1 AND client_id = $2 AND id = $3",
    )
    .bind(tenant.as_str())
    .bind(client_id)
    .bind(id)
    .fetch_optional(&db.pool)
    .await?;
    row.map(|(storage_key, store)| {
        let store = StoreKind::parse(&store).ok_or_else(|| {
            ApiError::Internal(anyhow::anyhow!(
                "portal file {id} has unknown store {store:?}"
            ))
        })?;
        Ok(Stored { storage_key, store })
    })
    .transpose()
}

/// What a signed link serves: name, type, size, storage key. Only the local
/// store's documents are served this way.
pub async fn for_download(
    db: &Db,
    id: &str,
) -> sqlx::Result<Option<(String, Option<String>, i64, String)>> {
    sqlx::query_as(
        "SELECT name, content_type, size_bytes, storage_key FROM portal_files \
         WHERE id = $1 AND store = 'local'",
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

/// Keeps `received` (its temporary file is moved) in the portal's store as
/// a document of `client_id`, a client of `tenant`, and records it; on any
/// failure neither the object nor the row remains. Uploads through the
/// portal API and reports the provider publishes both come here.
pub async fn keep(
    db: &Db,
    store: &cairn_core::blobs::BlobStore,
    tenant: &TenantId,
    client_id: &str,
    received: &Received,
) -> Result<File, cairn_core::http::error::ApiError> {
    let id = uuid::Uuid::now_v7().to_string();
    let key = format!("{}/{}", tenant.as_str(), id);
    let kept = store.keep(received, &key).await?;
    match insert(db, tenant, client_id, &id, received, &key, &kept).await {
        Ok(file) => Ok(file),
        Err(err) => {
            if let Err(cleanup) = store.remove(&key).await {
                tracing::error!(error = %cleanup, key, "removing a stored document without a row failed");
            }
            Err(err.into())
        }
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
