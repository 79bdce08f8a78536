//! Merchants: settlement type, fees, limits, credentials and keys.

use crate::cluster::{in_shard, shard_of_credential};
use crate::limits::defaults;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use uuid::Uuid;

/// How a merchant receives its money.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SettlementType {
    /// Funds accumulate in a wallet and are disbursed on demand.
    #[serde(rename = "WALLET")]
    Wallet,
    /// The platform pays out in scheduled settlements.
    #[serde(rename = "MANUAL")]
    Manual,
}

impl SettlementType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SettlementType::Wallet => "WALLET",
            SettlementType::Manual => "MANUAL",
        }
    }
}

/// Per-merchant fees, all in minor units except the bps rate.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Fees {
    /// QRIS MDR in basis points.
    pub qris_mdr_bps: i64,
    /// Flat bank-transfer MDR.
    pub bank_transfer_mdr_minor: i64,
    /// Per paid order.
    pub platform_fee_minor: i64,
    /// Per paid order.
    pub aggregator_fee_minor: i64,
    /// Per bank disbursement.
    pub disbursement_fee_bank_minor: i64,
    /// Per e-wallet disbursement.
    pub disbursement_fee_ewallet_minor: i64,
}

impl Default for Fees {
    fn default() -> Self {
        Fees {
            qris_mdr_bps: defaults::QRIS_MDR_BPS,
            bank_transfer_mdr_minor: defaults::BANK_TRANSFER_MDR_MINOR,
            platform_fee_minor: defaults::PLATFORM_FEE_MINOR,
            aggregator_fee_minor: defaults::AGGREGATOR_FEE_MINOR,
            disbursement_fee_bank_minor: defaults::DISBURSEMENT_FEE_BANK_MINOR,
            disbursement_fee_ewallet_minor: defaults::DISBURSEMENT_FEE_EWALLET_MINOR,
        }
    }
}

/// Per-merchant limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Limits {
    /// Largest single disbursement request amount.
    pub per_transaction_minor: i64,
    /// Sum of a WIB day's disbursement request amounts.
    pub daily_minor: i64,
    /// At or above: manual review.
    pub review_threshold_minor: i64,
    /// Sustained requests per second per API key.
    pub rate_limit_per_second: i64,
    /// Burst per API key.
    pub rate_limit_burst: i64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            per_transaction_minor: defaults::PER_TRANSACTION_MINOR,
            daily_minor: defaults::DAILY_MINOR,
            review_threshold_minor: defaults::REVIEW_THRESHOLD_MINOR,
            rate_limit_per_second: defaults::RATE_LIMIT_PER_SECOND,
            rate_limit_burst: defaults::RATE_LIMIT_BURST,
        }
    }
}

/// Where a MANUAL merchant's settlements are paid.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SettlementBank {
    /// A bank of the catalog.
    pub bank_short_code: String,
    /// Destination account.
    pub account_number: String,
    /// Holder's name.
    pub account_name: String,
}

/// Credentials as shown once to the operator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credentials {
    /// V1 `X-API-Key`: 64 lowercase hex characters.
    pub api_key: String,
    /// Legacy `clientId`.
    pub client_id: String,
    /// Legacy `clientSecret`.
    pub client_secret: String,
    /// `whsec_` + base64 of 32 random bytes.
    pub webhook_secret: String,
}

/// Credentials as kept: the API key only as its SHA-256. The secrets are kept
/// whole because the Legacy signatures and webhook HMACs need them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredCredentials {
    /// SHA-256 of the API key.
    pub api_key_sha256: [u8; 32],
    /// Legacy `clientId`; stays the same across rotations.
    pub client_id: String,
    /// Legacy `clientSecret`.
    pub client_secret: String,
    /// Webhook and `X-Signature` secret.
    pub webhook_secret: String,
}

/// SHA-256 of an API key, the form in which keys are stored and looked up.
pub fn api_key_hash(api_key: &str) -> [u8; 32] {
    Sha256::digest(api_key.as_bytes()).into()
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes
}

fn random_client_id() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let bytes = random_bytes::<14>();
    let tail: String = bytes
        .iter()
        .map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char)
        .collect();
    format!("PG{tail}")
}

impl Credentials {
    /// Fresh credentials with a new client id.
    pub fn generate() -> Credentials {
        Credentials::generate_in(None)
    }

    /// Fresh credentials whose API key and client id route to `shard`
    /// (`cluster::shard_of_credential`); any without a cluster.
    pub fn generate_in(shard: Option<u16>) -> Credentials {
        let client_id = in_shard(shard, random_client_id, |id| shard_of_credential(id));
        Credentials::rotate_in(client_id, shard)
    }

    /// Fresh key and secrets for an existing client id.
    pub fn rotate(client_id: String) -> Credentials {
        Credentials::rotate_in(client_id, None)
    }

    /// Fresh key and secrets for an existing client id, the key routing to
    /// `shard` as the client id already does.
    pub fn rotate_in(client_id: String, shard: Option<u16>) -> Credentials {
        use base64::Engine as _;
        let api_key = in_shard(
            shard,
            || hex::encode(random_bytes::<32>()),
            |key| shard_of_credential(key),
        );
        Credentials {
            api_key,
            client_id,
            client_secret: hex::encode(random_bytes::<24>()),
            webhook_secret: format!(
                "whsec_{}",
                base64::engine::general_purpose::STANDARD.encode(random_bytes::<32>())
            ),
        }
    }

    /// The form kept on disk.
    pub fn to_stored(&self) -> StoredCredentials {
        StoredCredentials {
            api_key_sha256: api_key_hash(&self.api_key),
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
            webhook_secret: self.webhook_secret.clone(),
        }
    }
}

impl StoredCredentials {
    /// Constant-time check of a presented API key.
    pub fn api_key_matches(&self, api_key: &str) -> bool {
        self.api_key_sha256.ct_eq(&api_key_hash(api_key)).into()
    }
}

/// Everything the platform knows about a merchant except its money.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerchantRecord {
    /// Merchant id.
    pub id: Uuid,
    /// Owning organization (white-label aggregator).
    pub organization_id: Uuid,
    /// Display name.
    pub name: String,
    /// WALLET or MANUAL.
    pub settlement_type: SettlementType,
    /// Payout destination for settlements.
    pub settlement_bank: Option<SettlementBank>,
    /// Fees.
    pub fees: Fees,
    /// Limits.
    pub limits: Limits,
    /// Webhook URL used when a resource has none.
    pub default_notify_url: Option<String>,
    /// Inactive merchants are refused (403 `MERCHANT_INACTIVE`).
    pub is_active: bool,
    /// Makes `X-Signature` mandatory on V1 writes.
    pub require_signature: bool,
    /// Key hash and secrets.
    pub credentials: StoredCredentials,
    /// PEM of the RSA public key for Legacy disbursements.
    pub public_key_pem: Option<String>,
    /// Creation time, Unix ms.
    pub created_at_ms: i64,
    /// Last change, Unix ms.
    pub updated_at_ms: i64,
}
