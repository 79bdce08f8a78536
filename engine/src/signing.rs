//! Signature schemes the engine verifies: RSA public keys for Legacy
//! disbursements (RSASSA-PKCS1-v1_5 with SHA-256).

use crate::error::EngineError;
use crate::limits;
use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::pkcs8::DecodePublicKey;
use rsa::traits::PublicKeyParts;
use rsa::RsaPublicKey;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Parses a PEM RSA public key, SPKI (`BEGIN PUBLIC KEY`) or PKCS#1
/// (`BEGIN RSA PUBLIC KEY`), of at least 2048 bits.
pub fn parse_rsa_public_key(pem: &str) -> Result<RsaPublicKey, EngineError> {
    let pem = pem.trim();
    let key = if pem.starts_with("-----BEGIN PUBLIC KEY-----") {
        RsaPublicKey::from_public_key_pem(pem)
            .map_err(|_| EngineError::invalid("pem", "not a valid SPKI RSA public key"))?
    } else if pem.starts_with("-----BEGIN RSA PUBLIC KEY-----") {
        RsaPublicKey::from_pkcs1_pem(pem)
            .map_err(|_| EngineError::invalid("pem", "not a valid PKCS#1 RSA public key"))?
    } else {
        return Err(EngineError::invalid(
            "pem",
            "must be a PEM RSA public key (BEGIN PUBLIC KEY or BEGIN RSA PUBLIC KEY)",
        ));
    };
    if key.size() * 8 < limits::RSA_KEY_BITS_MIN {
        return Err(EngineError::invalid("pem", "RSA key must be at least 2048 bits"));
    }
    Ok(key)
}

/// Verifying keys parsed from PEM, by the PEM's SHA-256: a merchant's key
/// is parsed once, not on every Legacy request. Past `PARSED_KEYS_MAX`
/// (keys rotated away, or many merchants) it starts over.
type ParsedKeys = HashMap<[u8; 32], rsa::pkcs1v15::VerifyingKey<sha2::Sha256>>;

/// Parsed keys kept at most.
const PARSED_KEYS_MAX: usize = 4096;

fn verifying_key(public_key_pem: &str) -> Option<rsa::pkcs1v15::VerifyingKey<sha2::Sha256>> {
    use sha2::Digest;
    static PARSED: OnceLock<Mutex<ParsedKeys>> = OnceLock::new();
    let parsed = PARSED.get_or_init(Default::default);
    let fingerprint: [u8; 32] = sha2::Sha256::digest(public_key_pem.as_bytes()).into();
    if let Some(key) = parsed.lock().expect("parsed keys lock").get(&fingerprint) {
        return Some(key.clone());
    }
    let key = rsa::pkcs1v15::VerifyingKey::<sha2::Sha256>::new(parse_rsa_public_key(public_key_pem).ok()?);
    let mut parsed = parsed.lock().expect("parsed keys lock");
    if parsed.len() >= PARSED_KEYS_MAX {
        parsed.clear();
    }
    parsed.insert(fingerprint, key.clone());
    Some(key)
}

/// Verifies a base64 RSASSA-PKCS1-v1_5 SHA-256 signature of `message` with
/// a PEM public key (Legacy `X-SIGNATURE`).
pub fn verify_rsa_sha256(public_key_pem: &str, message: &[u8], signature_base64: &str) -> bool {
    use base64::Engine as _;
    use rsa::signature::Verifier;
    let Some(key) = verifying_key(public_key_pem) else {
        return false;
    };
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(signature_base64.trim()) else {
        return false;
    };
    let Ok(signature) = rsa::pkcs1v15::Signature::try_from(bytes.as_slice()) else {
        return false;
    };
    key.verify(message, &signature).is_ok()
}

/// `sha256=<lowercase hex HMAC-SHA256(secret, body)>`: the V1
/// `X-Signature`, and how paygate and HTTP payment vendors sign each other.
pub fn hmac_sha256_header(secret: &str, body: &[u8]) -> String {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// Constant-time check of a `sha256=<hex>` header made by `hmac_sha256_header`.
pub fn hmac_sha256_header_matches(secret: &str, body: &[u8], presented: &str) -> bool {
    use hmac::Mac;
    let Some(hex_digest) = presented.trim().strip_prefix("sha256=") else {
        return false;
    };
    let Ok(presented) = hex::decode(hex_digest) else {
        return false;
    };
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes any key length");
    mac.update(body);
    mac.verify_slice(&presented).is_ok()
}

/// Lowercase hex SHA-512 of `text` (Legacy order signatures).
pub fn sha512_hex(text: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha512::digest(text.as_bytes()))
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_order_signature_matches_the_published_vector() {
        assert!(sha512_hex("CLIENT123|ORD-001|10000|s3cr3t").starts_with("73ef87ac7e0e4f20"));
    }
}
