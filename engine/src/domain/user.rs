//! A merchant's dashboard user: signs in with an email and a
//! password, kept only as an argon2id hash.

use uuid::Uuid;

/// A person who signs in to a merchant's dashboard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerchantUser {
    /// Identifier.
    pub id: Uuid,
    /// The merchant whose dashboard this is.
    pub merchant_id: Uuid,
    /// Lower-cased; unique across merchants (it is the sign-in name).
    pub email: String,
    /// PHC string of the argon2id hash of the password.
    pub password_hash: String,
    /// Creation time, Unix ms.
    pub created_at_ms: i64,
}
