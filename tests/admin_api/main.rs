//! The operator API under `/admin/v1/`: bearer auth, merchants,
//! keys, credentials, wallet credits, ledger verification and reference data,
//! spoken to over HTTP against the real binary. This file holds the requests
//! its modules share.

#[path = "../support/mod.rs"]
mod support;

mod catalog;
mod merchants;
mod settings;
mod wallet;

use reqwest::{Method, StatusCode};
use rsa::{RsaPrivateKey, RsaPublicKey};
use serde_json::{json, Value};
use support::*;
use uuid::Uuid;

/// The default fees (`limits::defaults`), as the merchant view shows them.
fn default_fees() -> Value {
    json!({
        "qris_mdr_bps": 70,
        "bank_transfer_mdr_minor": 400000,
        "platform_fee_minor": 0,
        "aggregator_fee_minor": 0,
        "disbursement_fee_bank_minor": 250000,
        "disbursement_fee_ewallet_minor": 0,
    })
}

/// The default limits (`limits::defaults`), as the merchant view shows them.
fn default_limits() -> Value {
    json!({
        "per_transaction_minor": 5000000000i64,
        "daily_minor": 50000000000i64,
        "review_threshold_minor": 2500000000i64,
        "rate_limit_per_second": 100,
        "rate_limit_burst": 200,
    })
}

/// Asserts 400 `INVALID_BODY` whose message names `field`.
fn assert_invalid_body_naming(reply: &Reply, field: &str) {
    assert_v1_error(reply, 400, "INVALID_BODY");
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(field), "message {message:?} should name {field:?}");
}

async fn get_merchant(server: &TestServer, id: &str) -> Value {
    let reply = server
        .admin(Method::GET, &format!("/admin/v1/merchants/{id}"), None)
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    reply.body["data"].clone()
}

async fn put_public_key(server: &TestServer, id: &str, pem: &str) -> Reply {
    server
        .admin_put(&format!("/admin/v1/merchants/{id}/public-key"), json!({ "pem": pem }))
        .await
}

async fn credit_reply(server: &TestServer, id: &str, body: Value) -> Reply {
    server
        .admin_post(&format!("/admin/v1/merchants/{id}/wallet/credit"), body)
        .await
}

async fn v1_banks(server: &TestServer, api_key: &str) -> Vec<Value> {
    let reply = server.get("/v1/banks", api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["data"].as_array().expect("data array").clone()
}

async fn v1_ewallet_codes(server: &TestServer, api_key: &str) -> Vec<String> {
    let reply = server.get("/v1/ewallets", api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["data"]
        .as_array()
        .expect("data array")
        .iter()
        .map(|e| e["short_code"].as_str().unwrap().to_string())
        .collect()
}

fn bank_by_code<'a>(banks: &'a [Value], code: &str) -> Option<&'a Value> {
    banks.iter().find(|b| b["short_code"] == json!(code))
}

fn new_rsa_public_key(bits: usize) -> RsaPublicKey {
    let private = RsaPrivateKey::new(&mut rand::thread_rng(), bits).expect("RSA key generated");
    RsaPublicKey::from(&private)
}
