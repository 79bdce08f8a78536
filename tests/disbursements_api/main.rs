//! V1 disbursements over HTTP against the real binary: creation, every
//! refusal `POST /v1/disbursements` documents (the wallet left untouched),
//! the idempotency key, the lifecycle with the sandbox vendor, operator
//! review, sandbox completion, listing, the optional `X-Signature`, and
//! the banks and e-wallets a disbursement can go to.
//! This file holds the requests and checks the modules share.

#[path = "../support/mod.rs"]
mod support;

mod creation;
mod destinations;
mod lifecycle;
mod listing;
mod refusals;
mod review;
mod signature;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::disbursements::*;
use support::*;

/// How long a lifecycle may take to reach the awaited status.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(5);

/// Every field of the single-record response, in its order.
const FIELDS: [&str; 17] = [
    "id",
    "ref_code",
    "idempotency_key",
    "channel",
    "bank_id",
    "account_number",
    "account_name",
    "ewallet_provider",
    "ewallet_phone",
    "request_amount_minor",
    "fee_minor",
    "final_amount_minor",
    "vendor_disbursement_id",
    "source",
    "status",
    "requested_at",
    "created_at",
];

async fn create(server: &TestServer, merchant: &TestMerchant, body: Value) -> Reply {
    server.post("/v1/disbursements", &merchant.api_key, Some(body)).await
}

/// Creates a disbursement that must be accepted; returns the creation `data`.
async fn create_ok(server: &TestServer, merchant: &TestMerchant, body: Value) -> Value {
    let reply = create(server, merchant, body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true), "{}", reply.body);
    assert_eq!(reply.body["data"]["status"], json!("PENDING"), "{}", reply.body);
    reply.body["data"].clone()
}

async fn get(server: &TestServer, merchant: &TestMerchant, id: &str) -> Reply {
    server.get(&format!("/v1/disbursements/{id}"), &merchant.api_key).await
}

async fn fetch(server: &TestServer, merchant: &TestMerchant, id: &str) -> Value {
    let reply = get(server, merchant, id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true), "{}", reply.body);
    reply.body["data"].clone()
}

/// Polls `GET /v1/disbursements/{id}` until it shows `status`; fails at once
/// if it reaches another final status, and after `SETTLE_TIMEOUT`.
async fn wait_for(server: &TestServer, merchant: &TestMerchant, id: &str, status: &str) -> Value {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let record = fetch(server, merchant, id).await;
        let now = record["status"].as_str().unwrap_or_default().to_string();
        if now == status {
            return record;
        }
        if ["SUCCESS", "FAILED", "REJECTED"].contains(&now.as_str()) {
            panic!("disbursement {id} ended {now} while waiting for {status}: {record}");
        }
        if Instant::now() > deadline {
            panic!("disbursement {id} still {now} after {SETTLE_TIMEOUT:?}, expected {status}: {record}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn list(server: &TestServer, merchant: &TestMerchant, query: &str) -> Reply {
    server
        .get(&format!("/v1/disbursements{query}"), &merchant.api_key)
        .await
}

/// `meta.total` of the merchant's unfiltered list.
async fn count(server: &TestServer, merchant: &TestMerchant) -> i64 {
    let reply = list(server, merchant, "").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["meta"]["total"].as_i64().expect("meta.total integer")
}

fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .unwrap_or_else(|| panic!("data array expected: {page}"))
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect()
}

async fn entries(server: &TestServer) -> u64 {
    server.verify().await["entries"].as_u64().expect("entries integer")
}

/// Sends a creation that must be refused with `status`/`code`; the wallet,
/// the merchant's disbursements and the ledger must stay as they were.
async fn assert_refused(server: &TestServer, merchant: &TestMerchant, body: Value, status: u16, code: &str) -> Reply {
    let balance = server.balance(&merchant.api_key).await;
    let disbursements = count(server, merchant).await;
    let entries_before = entries(server).await;
    let reply = create(server, merchant, body).await;
    assert_v1_error(&reply, status, code);
    assert_eq!(
        server.balance(&merchant.api_key).await,
        balance,
        "a refused disbursement ({code}) must not move money"
    );
    assert_eq!(
        count(server, merchant).await,
        disbursements,
        "a refused disbursement ({code}) must not be stored"
    );
    assert_eq!(entries(server).await, entries_before, "{code}: no ledger entry");
    reply
}

/// `assert_refused` for 400 `INVALID_BODY` whose message names `field`.
async fn assert_invalid_body(server: &TestServer, merchant: &TestMerchant, body: Value, field: &str) {
    let reply = assert_refused(server, merchant, body, 400, "INVALID_BODY").await;
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(message.contains(field), "message {message:?} should name {field:?}");
}

async fn patch_merchant(server: &TestServer, id: &str, body: Value) {
    let reply = server.patch_merchant(id, body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

async fn approve(server: &TestServer, id: &str) -> Reply {
    server
        .admin(Method::POST, &format!("/admin/v1/disbursements/{id}/approve"), None)
        .await
}

async fn reject(server: &TestServer, id: &str) -> Reply {
    server
        .admin_post(
            &format!("/admin/v1/disbursements/{id}/reject"),
            json!({ "reason": "suspicious beneficiary" }),
        )
        .await
}

async fn complete(server: &TestServer, merchant: &TestMerchant, id: &str, status: &str) -> Reply {
    server
        .post(
            &format!("/v1/sandbox/disbursements/{id}/complete"),
            &merchant.api_key,
            Some(json!({ "status": status })),
        )
        .await
}

async fn bank_id(server: &TestServer, merchant: &TestMerchant, code: &str) -> Value {
    let reply = server.get("/v1/banks", &merchant.api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let bank = reply.body["data"]
        .as_array()
        .expect("banks array")
        .iter()
        .find(|b| b["short_code"] == json!(code))
        .unwrap_or_else(|| panic!("{code} listed in {}", reply.body))
        .clone();
    assert!(is_uuid(&bank["id"]), "{bank}");
    bank["id"].clone()
}

fn assert_timestamp(value: &Value) -> chrono::DateTime<chrono::FixedOffset> {
    let text = value
        .as_str()
        .unwrap_or_else(|| panic!("timestamp string expected: {value}"));
    assert!(text.ends_with('Z'), "{text} must be UTC with Z");
    chrono::DateTime::parse_from_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// `^DSB-\d{12}-[A-Z0-9]{4}$`, the 12 digits being `created_at` as
/// `yymmddHHMMSS` in WIB.
fn assert_ref_code(ref_code: &Value, created_at: &Value) {
    let code = ref_code
        .as_str()
        .unwrap_or_else(|| panic!("ref_code string: {ref_code}"));
    let parts: Vec<&str> = code.split('-').collect();
    assert_eq!(parts.len(), 3, "{code}");
    assert_eq!(parts[0], "DSB", "{code}");
    assert!(
        parts[1].len() == 12 && parts[1].bytes().all(|b| b.is_ascii_digit()),
        "{code}"
    );
    assert!(
        parts[2].len() == 4 && parts[2].bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()),
        "{code}"
    );
    let wib = chrono::FixedOffset::east_opt(7 * 3600).unwrap();
    let stamp = assert_timestamp(created_at)
        .with_timezone(&wib)
        .format("%y%m%d%H%M%S")
        .to_string();
    assert_eq!(parts[1], stamp, "{code} vs created_at {created_at}");
}

async fn post_raw(server: &TestServer, merchant: &TestMerchant, body: &[u8], signature: Option<&str>) -> Reply {
    let mut request = server
        .client
        .post(server.url("/v1/disbursements"))
        .header("X-API-Key", &merchant.api_key)
        .header("Content-Type", "application/json")
        .body(body.to_vec());
    if let Some(signature) = signature {
        request = request.header("X-Signature", signature);
    }
    into_reply(request.send().await.expect("request sent")).await
}
