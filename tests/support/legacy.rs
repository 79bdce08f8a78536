//! The Legacy API's client side: one RSA key for a whole test binary, the
//! merchant's `X-SIGNATURE`, the SHA-512 body signatures, and its envelope.

use super::{into_reply, Reply, TestMerchant, TestServer};
use base64::Engine as _;
use reqwest::StatusCode;
use rsa::pkcs8::{EncodePublicKey, LineEnding};
use rsa::signature::{SignatureEncoding, Signer};
use rsa::RsaPrivateKey;
use serde_json::{json, Value};
use sha2::{Digest, Sha256, Sha512};
use std::sync::OnceLock;

/// One 2048-bit key for the whole binary: generating keys is slow.
pub fn private_key() -> &'static RsaPrivateKey {
    static KEY: OnceLock<RsaPrivateKey> = OnceLock::new();
    KEY.get_or_init(|| RsaPrivateKey::new(&mut rand::thread_rng(), 2048).expect("RSA key"))
}

/// `private_key`'s public half as an SPKI PEM.
pub fn spki_pem() -> String {
    private_key().to_public_key().to_public_key_pem(LineEnding::LF).unwrap()
}

/// Lowercase hex SHA-512 of `text`: the Legacy body `signature`.
pub fn sha512_hex(text: &str) -> String {
    hex::encode(Sha512::digest(text.as_bytes()))
}

/// `X-SIGNATURE` for `body`: base64 RSA-SHA256 over `clientId|clientSecret|sha256hex(body)`.
pub fn x_signature(merchant: &TestMerchant, body: &str) -> String {
    let message = format!(
        "{}|{}|{}",
        merchant.client_id,
        merchant.client_secret,
        hex::encode(Sha256::digest(body.as_bytes()))
    );
    let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(private_key().clone());
    base64::engine::general_purpose::STANDARD.encode(signer.sign(message.as_bytes()).to_bytes())
}

/// Posts `body` as it is, with `signature` as `X-SIGNATURE` when given.
pub async fn post(server: &TestServer, path: &str, body: &str, signature: Option<&str>) -> Reply {
    let mut request = server
        .client
        .post(format!("{}{path}", server.base))
        .header("Content-Type", "application/json")
        .body(body.to_string());
    if let Some(signature) = signature {
        request = request.header("X-SIGNATURE", signature);
    }
    into_reply(request.send().await.expect("request sent")).await
}

/// Posts `body` signed by `merchant` with `private_key`.
pub async fn signed_post(server: &TestServer, path: &str, merchant: &TestMerchant, body: &str) -> Reply {
    post(server, path, body, Some(&x_signature(merchant, body))).await
}

/// Sets `merchant`'s public key to `pem`.
pub async fn put_public_key(server: &TestServer, merchant: &TestMerchant, pem: &str) {
    let reply = server
        .admin_put(
            &format!("/admin/v1/merchants/{}/public-key", merchant.id),
            json!({ "pem": pem }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

/// A Legacy error: HTTP status equals `code`, exact message, `data: null`.
pub fn assert_legacy_error(reply: &Reply, status: u16, message: &str) {
    assert_eq!(reply.status.as_u16(), status, "{}", reply.body);
    assert_eq!(
        reply.body,
        json!({ "code": status, "message": message, "data": null }),
        "exact error body"
    );
}

/// A Legacy success: 200, `code: 200`, a message; returns `data`.
pub fn assert_ok(reply: &Reply) -> &Value {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["code"], json!(200));
    assert!(reply.body["message"].is_string());
    &reply.body["data"]
}

/// A Legacy bank disbursement request body to BCA-style account 1234567890.
pub fn bank_body(merchant: &TestMerchant, order_id: &str, amount: i64, bank: &str) -> String {
    json!({
        "clientId": merchant.client_id,
        "orderId": order_id,
        "bankCode": bank,
        "accountNumber": "1234567890",
        "accountName": "Budi Santoso",
        "requestAmount": amount,
    })
    .to_string()
}
