//! Signature schemes the engine verifies: RSA public keys for Legacy
//! disbursements (RSASSA-PKCS1-v1_5 with SHA-256).

use crate::error::EngineError;
use crate::limits;
use rsa::pkcs1::DecodeRsaPublicKey;
use rsa::pkcs8::DecodePublicKey;
use rsa::traits::PublicKeyParts;
use rsa::RsaPublicKey;

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
