//! Dashboard users: created by the operator, their passwords
//! kept as argon2id hashes, checked at sign-in in constant time whether or
//! not the email is known. They live in the catalog (few, read at every
//! sign-in, replayed at start like the other catalog records).

use super::Merchants;
use crate::domain::MerchantUser;
use crate::error::EngineError;
use crate::store::record::JournalRecord;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use std::sync::OnceLock;
use uuid::Uuid;

/// The shortest password a user may have.
pub const PASSWORD_CHARS_MIN: usize = 12;
/// The longest accepted: hashing is costly, and no passphrase needs more.
const PASSWORD_CHARS_MAX: usize = 1024;

fn hash(password: &str) -> Result<String, EngineError> {
    let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|error| EngineError::Internal(format!("argon2: {error}")))
}

/// A hash of no one's password: an unknown email is checked against it, so
/// sign-in takes as long whether or not the email exists.
fn decoy_hash() -> &'static str {
    static DECOY: OnceLock<String> = OnceLock::new();
    DECOY.get_or_init(|| hash("not the password of anyone at all").unwrap_or_default())
}

fn matches(password: &str, phc: &str) -> bool {
    PasswordHash::new(phc).is_ok_and(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
}

fn normalize_email(email: &str) -> Result<String, EngineError> {
    let email = email.trim().to_lowercase();
    let valid = email.len() <= 254
        && email
            .split_once('@')
            .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.') && !domain.starts_with('.'))
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if valid {
        Ok(email)
    } else {
        Err(EngineError::invalid("email", "must be an email address"))
    }
}

impl Merchants {
    /// Creates a dashboard user of `merchant_id` (`POST
    /// /admin/v1/merchants/{id}/users`). The email is unique across
    /// merchants: it is the sign-in name.
    pub async fn create_merchant_user(
        &self,
        merchant_id: Uuid,
        email: &str,
        password: &str,
    ) -> Result<MerchantUser, EngineError> {
        self.core.ensure_writable()?;
        let email = normalize_email(email)?;
        let length = password.chars().count();
        if !(PASSWORD_CHARS_MIN..=PASSWORD_CHARS_MAX).contains(&length) {
            return Err(EngineError::invalid("password", "must be 12 to 1024 characters"));
        }
        self.core.merchant(merchant_id).ok_or(EngineError::MerchantNotFound)?;
        let password = password.to_string();
        let password_hash = tokio::task::spawn_blocking(move || hash(&password))
            .await
            .map_err(|error| EngineError::Internal(error.to_string()))??;
        let _guard = self.core.catalog_lock().lock().await;
        if self.core.store().catalog().users.contains_key(&email) {
            return Err(EngineError::EmailTaken);
        }
        let user = MerchantUser {
            id: Uuid::new_v4(),
            merchant_id,
            email,
            password_hash,
            created_at_ms: self.core.now_ms(),
        };
        self.core.write(JournalRecord::MerchantUserSaved(user.clone())).await?;
        Ok(user)
    }

    /// The user `email` names if `password` is theirs. Takes one argon2
    /// check either way (off the async threads).
    pub async fn sign_in(&self, email: &str, password: &str) -> Option<MerchantUser> {
        let email = email.trim().to_lowercase();
        let user = self.core.store().catalog().users.get(&email).cloned();
        let phc = user
            .as_ref()
            .map_or_else(|| decoy_hash().to_string(), |u| u.password_hash.clone());
        let password = password.to_string();
        let matched = tokio::task::spawn_blocking(move || matches(&password, &phc))
            .await
            .unwrap_or(false);
        user.filter(|_| matched)
    }

    /// A dashboard user by id.
    pub fn merchant_user(&self, id: Uuid) -> Option<MerchantUser> {
        self.core.store().catalog().users.values().find(|u| u.id == id).cloned()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_hash_matches_its_password_only() {
        let phc = super::hash("correct horse battery").unwrap();
        assert!(phc.starts_with("$argon2id$"), "{phc}");
        assert!(super::matches("correct horse battery", &phc));
        assert!(!super::matches("correct horse batterz", &phc));
        assert!(!super::matches("anything", "not a hash"));
    }

    #[test]
    fn emails_are_lower_cased_and_checked() {
        assert_eq!(super::normalize_email(" Ops@Toko.CO.id ").unwrap(), "ops@toko.co.id");
        assert!(super::normalize_email("no-at-sign").is_err());
        assert!(super::normalize_email("a@nodot").is_err());
    }
}
