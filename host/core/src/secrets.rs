//! Encryption of integration secrets at rest: AES-256-GCM with the key from
//! settings (`encryption_key`, 32 bytes hex, generated on first run).

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand::RngCore;

#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    #[error("encryption_key must be 64 hex characters (32 bytes)")]
    BadKey,
    #[error("stored secrets cannot be decrypted with this encryption_key")]
    Undecryptable,
}

#[derive(Clone)]
pub struct SecretBox {
    cipher: Aes256Gcm,
}

impl SecretBox {
    pub fn new(hex_key: &str) -> Result<SecretBox, SecretError> {
        let key = hex::decode(hex_key.trim()).map_err(|_| SecretError::BadKey)?;
        let cipher = Aes256Gcm::new_from_slice(&key).map_err(|_| SecretError::BadKey)?;
        Ok(SecretBox { cipher })
    }

    /// base64(nonce || ciphertext).
    pub fn seal(&self, plaintext: &str) -> String {
        let mut nonce = [0u8; 12];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        let ciphertext = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), plaintext.as_bytes())
            .expect("AES-GCM encryption of an in-memory buffer cannot fail");
        let mut sealed = nonce.to_vec();
        sealed.extend_from_slice(&ciphertext);
        STANDARD.encode(sealed)
    }

    pub fn open(&self, sealed: &str) -> Result<String, SecretError> {
        let bytes = STANDARD
            .decode(sealed)
            .map_err(|_| SecretError::Undecryptable)?;
        if bytes.len() < 12 {
            return Err(SecretError::Undecryptable);
        }
        let (nonce, ciphertext) = bytes.split_at(12);
        let plaintext = self
            .cipher
            .decrypt(Nonce::from_slice(nonce), ciphertext)
            .map_err(|_| SecretError::Undecryptable)?;
        String::from_utf8(plaintext).map_err(|_| SecretError::Undecryptable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_secrets_open_only_with_their_key() {
        let key = "11".repeat(32);
        let secret_box = SecretBox::new(&key).unwrap();
        let sealed = secret_box.seal(r#"{"password":"hunter2"}"#);
        assert!(!sealed.contains("hunter2"));
        assert_ne!(
            sealed,
            secret_box.seal(r#"{"password":"hunter2"}"#),
            "fresh nonce each time"
        );
        assert_eq!(
            secret_box.open(&sealed).unwrap(),
            r#"{"password":"hunter2"}"#
        );
        let other = SecretBox::new(&"22".repeat(32)).unwrap();
        assert!(other.open(&sealed).is_err());
        assert!(SecretBox::new("short").is_err());
    }
}
