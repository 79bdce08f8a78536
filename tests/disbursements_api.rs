//! V1 disbursements over HTTP against the real binary: creation, every
//! refusal `POST /v1/disbursements` documents (the wallet left untouched),
//! the idempotency key, the lifecycle with the sandbox vendor, operator
//! review, sandbox completion, listing and the optional `X-Signature`.

mod support;

use hmac::{Hmac, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::Sha256;
use std::time::{Duration, Instant};
use support::*;
use uuid::Uuid;

/// The default `fees.disbursement_fee_bank_minor`.
const BANK_FEE: i64 = 250_000;
/// The default `limits.review_threshold_minor`.
const REVIEW_THRESHOLD: i64 = 2_500_000_000;
/// The sandbox vendor settles after 300 ms: lifecycle tests.
const FAST: &[&str] = &["--sandbox-disbursement-delay-ms", "300"];
/// The sandbox vendor waits a minute: disbursements stay ON_PROCESS.
const SLOW: &[&str] = &["--sandbox-disbursement-delay-ms", "60000"];
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

fn bank_body(key: &str, amount: i64) -> Value {
    json!({
        "idempotency_key": key,
        "channel": "BANK",
        "bank_short_code": "BCA",
        "account_number": "1234567890",
        "account_name": "Budi Santoso",
        "amount_minor": amount,
    })
}

fn bank_body_to(key: &str, bank: &str, account_number: &str, amount: i64) -> Value {
    let mut body = bank_body(key, amount);
    body["bank_short_code"] = json!(bank);
    body["account_number"] = json!(account_number);
    body
}

fn ewallet_body(key: &str, provider: &str, phone: &str, amount: i64) -> Value {
    json!({
        "idempotency_key": key,
        "channel": "EWALLET",
        "ewallet_provider": provider,
        "ewallet_phone": phone,
        "amount_minor": amount,
    })
}

/// `body` without `field`.
fn without(mut body: Value, field: &str) -> Value {
    body.as_object_mut().unwrap().remove(field);
    body
}

async fn create(server: &TestServer, merchant: &TestMerchant, body: Value) -> Reply {
    server
        .call(Method::POST, "/v1/disbursements", Some(&merchant.api_key), Some(body))
        .await
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
    server
        .call(
            Method::GET,
            &format!("/v1/disbursements/{id}"),
            Some(&merchant.api_key),
            None,
        )
        .await
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
        .call(
            Method::GET,
            &format!("/v1/disbursements{query}"),
            Some(&merchant.api_key),
            None,
        )
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

async fn assert_ledger_clean(server: &TestServer) {
    let report = server.verify().await;
    assert_eq!(report["balanced"], json!(true), "{report}");
    assert_eq!(report["problems"], json!([]), "{report}");
}

/// A WALLET merchant funded with `amount` (skipped when 0).
async fn funded_merchant(server: &TestServer, amount: i64) -> TestMerchant {
    let merchant = server.create_wallet_merchant().await;
    if amount > 0 {
        assert_eq!(server.credit(&merchant.id, amount).await, amount);
    }
    assert_eq!(server.balance(&merchant.api_key).await, amount);
    merchant
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
    let reply = server
        .admin(Method::PATCH, &format!("/admin/v1/merchants/{id}"), Some(body))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

async fn approve(server: &TestServer, id: &str) -> Reply {
    server
        .admin(Method::POST, &format!("/admin/v1/disbursements/{id}/approve"), None)
        .await
}

async fn reject(server: &TestServer, id: &str) -> Reply {
    server
        .admin(
            Method::POST,
            &format!("/admin/v1/disbursements/{id}/reject"),
            Some(json!({ "reason": "suspicious beneficiary" })),
        )
        .await
}

async fn complete(server: &TestServer, merchant: &TestMerchant, id: &str, status: &str) -> Reply {
    server
        .call(
            Method::POST,
            &format!("/v1/sandbox/disbursements/{id}/complete"),
            Some(&merchant.api_key),
            Some(json!({ "status": status })),
        )
        .await
}

async fn bank_id(server: &TestServer, merchant: &TestMerchant, code: &str) -> Value {
    let reply = server
        .call(Method::GET, "/v1/banks", Some(&merchant.api_key), None)
        .await;
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

/// `sha256=<lowercase hex HMAC-SHA256(secret, body)>`.
fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

async fn post_raw(server: &TestServer, merchant: &TestMerchant, body: &[u8], signature: Option<&str>) -> Reply {
    let mut request = server
        .client
        .post(format!("{}/v1/disbursements", server.base))
        .header("X-API-Key", &merchant.api_key)
        .header("Content-Type", "application/json")
        .body(body.to_vec());
    if let Some(signature) = signature {
        request = request.header("X-Signature", signature);
    }
    into_reply(request.send().await.expect("request sent")).await
}

// ---------------------------------------------------------------- creation

#[tokio::test]
async fn bank_disbursement_is_201_pending_with_exactly_the_spec_fields_and_debits_request_plus_fee() {
    let server = TestServer::start_with(SLOW);
    let funding = 10_000_000;
    let merchant = funded_merchant(&server, funding).await;
    let bca = bank_id(&server, &merchant, "BCA").await;

    let reply = create(&server, &merchant, bank_body("dsb-bank-1", 1_000_000)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(sorted_keys(&reply.body), strings(&["data", "success"]));
    assert_eq!(reply.body["success"], json!(true));
    let data = &reply.body["data"];
    assert_eq!(sorted_keys(data), strings(&FIELDS));
    assert!(is_uuid(&data["id"]), "{data}");
    assert_eq!(data["idempotency_key"], json!("dsb-bank-1"));
    assert_eq!(data["channel"], json!("BANK"));
    assert_eq!(data["bank_id"], bca);
    assert_eq!(data["account_number"], json!("1234567890"));
    assert_eq!(data["account_name"], json!("Budi Santoso"));
    assert_eq!(data["ewallet_provider"], Value::Null);
    assert_eq!(data["ewallet_phone"], Value::Null);
    assert_eq!(data["request_amount_minor"], json!(1_000_000));
    assert_eq!(data["fee_minor"], json!(BANK_FEE));
    assert_eq!(data["final_amount_minor"], json!(1_000_000 + BANK_FEE));
    assert_eq!(data["vendor_disbursement_id"], Value::Null);
    assert_eq!(data["source"], json!("API"));
    assert_eq!(data["status"], json!("PENDING"));
    assert_timestamp(&data["requested_at"]);
    assert_timestamp(&data["created_at"]);
    assert_ref_code(&data["ref_code"], &data["created_at"]);

    assert_eq!(
        server.balance(&merchant.api_key).await,
        funding - 1_000_000 - BANK_FEE,
        "the wallet is debited by final_amount_minor"
    );

    // The stored record is the same disbursement, handed to the vendor.
    let id = data["id"].as_str().unwrap();
    let stored = wait_for(&server, &merchant, id, "ON_PROCESS").await;
    assert_eq!(sorted_keys(&stored), strings(&FIELDS));
    assert_eq!(keys_in_order(&stored), ordered(&FIELDS), "SPEC.md 2.3 order");
    assert!(
        stored["vendor_disbursement_id"].as_str().is_some_and(|v| !v.is_empty()),
        "{stored}"
    );
    for field in FIELDS {
        if !["status", "vendor_disbursement_id"].contains(&field) {
            assert_eq!(stored[field], data[field], "{field} changed");
        }
    }
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_000_000 - BANK_FEE);
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn ewallet_disbursement_normalizes_the_phone_has_no_fee_and_omits_vendor_disbursement_id_at_creation() {
    let server = TestServer::start_with(SLOW);
    let funding = 5_000_000;
    let merchant = funded_merchant(&server, funding).await;

    let reply = create(
        &server,
        &merchant,
        ewallet_body("dsb-ovo-1", "OVO", "0812-3456-7890", 1_500_000),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    let data = &reply.body["data"];
    let creation_fields: Vec<&str> = FIELDS
        .iter()
        .copied()
        .filter(|f| *f != "vendor_disbursement_id")
        .collect();
    assert_eq!(
        sorted_keys(data),
        strings(&creation_fields),
        "SPEC.md 2.3: vendor_disbursement_id is absent from the e-wallet creation response"
    );
    assert!(is_uuid(&data["id"]), "{data}");
    assert_eq!(data["channel"], json!("EWALLET"));
    assert_eq!(data["ewallet_provider"], json!("OVO"));
    assert_eq!(data["ewallet_phone"], json!("6281234567890"));
    assert_eq!(data["bank_id"], Value::Null);
    assert_eq!(data["account_number"], Value::Null);
    assert_eq!(data["account_name"], Value::Null);
    assert_eq!(data["request_amount_minor"], json!(1_500_000));
    assert_eq!(data["fee_minor"], json!(0));
    assert_eq!(data["final_amount_minor"], json!(1_500_000));
    assert_eq!(data["source"], json!("API"));
    assert_eq!(data["status"], json!("PENDING"));
    assert_eq!(data["idempotency_key"], json!("dsb-ovo-1"));
    assert_ref_code(&data["ref_code"], &data["created_at"]);
    assert_timestamp(&data["requested_at"]);
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_500_000);

    // The single-record response has the field.
    let stored = fetch(&server, &merchant, data["id"].as_str().unwrap()).await;
    assert_eq!(sorted_keys(&stored), strings(&FIELDS));
    assert_eq!(stored["ewallet_phone"], json!("6281234567890"));
}

// ---------------------------------------------------------------- refusals

#[tokio::test]
async fn manual_merchant_disbursement_is_403_not_wallet_merchant_and_moves_nothing() {
    let server = TestServer::start_with(SLOW);
    let merchant = server.create_merchant_with("MANUAL", json!({})).await;
    let entries_before = entries(&server).await;
    for body in [
        bank_body("manual-1", 1_000_000),
        ewallet_body("manual-2", "OVO", "081234567890", 1_000_000),
    ] {
        let reply = create(&server, &merchant, body).await;
        assert_v1_error(&reply, 403, "NOT_WALLET_MERCHANT");
    }
    let reply = server
        .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
        .await;
    assert_v1_error(&reply, 403, "NOT_WALLET_MERCHANT");
    assert_eq!(count(&server, &merchant).await, 0);
    assert_eq!(entries(&server).await, entries_before);
}

#[tokio::test]
async fn unknown_bank_short_code_is_400_bank_not_found() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let body = bank_body_to("no-bank", "NOSUCHBANK", "1234567890", 1_000_000);
    assert_refused(&server, &merchant, body, 400, "BANK_NOT_FOUND").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn disabled_bank_is_422_bank_disabled_until_enabled_again() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let bni = bank_id(&server, &merchant, "BNI").await;
    let reply = server
        .admin(Method::PUT, "/admin/v1/banks/BNI", Some(json!({ "is_enabled": false })))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);

    let body = bank_body_to("bni-1", "BNI", "1234567890", 1_000_000);
    assert_refused(&server, &merchant, body.clone(), 422, "BANK_DISABLED").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);

    let reply = server
        .admin(Method::PUT, "/admin/v1/banks/BNI", Some(json!({ "is_enabled": true })))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // The refusal did not use up the key.
    let data = create_ok(&server, &merchant, body).await;
    assert_eq!(data["bank_id"], bni);
    assert_eq!(
        server.balance(&merchant.api_key).await,
        5_000_000 - 1_000_000 - BANK_FEE
    );
}

#[tokio::test]
async fn bank_disbursement_without_account_name_or_number_is_400_missing_bank_info() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    for field in ["account_name", "account_number"] {
        let body = without(bank_body(&format!("missing-{field}"), 1_000_000), field);
        assert_refused(&server, &merchant, body, 400, "MISSING_BANK_INFO").await;
    }
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn ewallet_disbursement_without_phone_or_provider_is_400_missing_ewallet_info() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    for field in ["ewallet_phone", "ewallet_provider"] {
        let body = without(
            ewallet_body(&format!("missing-{field}"), "OVO", "081234567890", 1_000_000),
            field,
        );
        assert_refused(&server, &merchant, body, 400, "MISSING_EWALLET_INFO").await;
    }
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn ewallet_phones_are_11_to_14_digits_after_normalization() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    // Valid once normalized: ^628[1-35-9][0-9]{7,10}$.
    for (key, phone, stored) in [
        ("p-11", "62812345678", "62812345678"),
        ("p-11-local", "0812345678", "62812345678"),
        ("p-14", "62812345678901", "62812345678901"),
    ] {
        let data = create_ok(&server, &merchant, ewallet_body(key, "OVO", phone, 100_000)).await;
        assert_eq!(data["ewallet_phone"], json!(stored), "{phone}");
    }
    for (key, phone) in [
        ("p-10", "6281234567"),
        ("p-15", "628123456789012"),
        ("p-15-local", "08123456789012"),
    ] {
        let body = ewallet_body(key, "OVO", phone, 100_000);
        assert_invalid_body(&server, &merchant, body, "ewallet_phone").await;
    }
}

#[tokio::test]
async fn unknown_ewallet_code_is_400_ewallet_not_found() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let body = ewallet_body("paypal-1", "PAYPAL", "081234567890", 1_000_000);
    assert_refused(&server, &merchant, body, 400, "EWALLET_NOT_FOUND").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn disabled_ewallet_is_422_ewallet_disabled() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let reply = server
        .admin(
            Method::PUT,
            "/admin/v1/ewallets/LINKAJA",
            Some(json!({ "is_enabled": false })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let body = ewallet_body("linkaja-1", "LINKAJA", "081234567890", 1_000_000);
    assert_refused(&server, &merchant, body, 422, "EWALLET_DISABLED").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn dana_below_idr_20000_is_422_amount_below_minimum_and_exactly_20000_is_accepted() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let body = ewallet_body("dana-1", "DANA", "081234567890", 1_999_900);
    assert_refused(&server, &merchant, body, 422, "AMOUNT_BELOW_MINIMUM").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);

    let data = create_ok(
        &server,
        &merchant,
        ewallet_body("dana-1", "DANA", "081234567890", 2_000_000),
    )
    .await;
    assert_eq!(data["ewallet_provider"], json!("DANA"));
    assert_eq!(data["request_amount_minor"], json!(2_000_000));
    assert_eq!(data["fee_minor"], json!(0));
    assert_eq!(data["final_amount_minor"], json!(2_000_000));
    assert_eq!(server.balance(&merchant.api_key).await, 3_000_000);

    // Other e-wallets have no such minimum.
    let data = create_ok(
        &server,
        &merchant,
        ewallet_body("ovo-small", "OVO", "081234567890", 100),
    )
    .await;
    assert_eq!(data["final_amount_minor"], json!(100));
    assert_eq!(server.balance(&merchant.api_key).await, 2_999_900);
}

#[tokio::test]
async fn invalid_ewallet_phone_is_400_invalid_body_naming_ewallet_phone() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    for phone in ["12345", "0712345678", "08123"] {
        let body = ewallet_body("bad-phone", "OVO", phone, 1_000_000);
        assert_invalid_body(&server, &merchant, body, "ewallet_phone").await;
    }
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn zero_negative_or_string_amount_is_400_invalid_body_naming_amount_minor() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    for amount in [json!(0), json!(-100), json!("1000000"), json!(1000.5)] {
        let mut body = bank_body("bad-amount", 1);
        body["amount_minor"] = amount;
        assert_invalid_body(&server, &merchant, body, "amount_minor").await;
    }
    let body = without(bank_body("no-amount", 1), "amount_minor");
    assert_invalid_body(&server, &merchant, body, "amount_minor").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn missing_or_empty_idempotency_key_is_400_invalid_body_naming_it() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let body = without(bank_body("x", 1_000_000), "idempotency_key");
    assert_invalid_body(&server, &merchant, body, "idempotency_key").await;
    assert_invalid_body(&server, &merchant, bank_body("", 1_000_000), "idempotency_key").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn unknown_or_missing_channel_is_400_invalid_body_naming_channel() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let mut body = bank_body("cash-1", 1_000_000);
    body["channel"] = json!("CASH");
    assert_invalid_body(&server, &merchant, body, "channel").await;
    let body = without(bank_body("cash-2", 1_000_000), "channel");
    assert_invalid_body(&server, &merchant, body, "channel").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn malformed_json_is_400_invalid_body() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    for raw in [
        &br#"{"idempotency_key": "k", "channel": "BANK", "amount_minor": "#[..],
        &b"not json"[..],
        &b"[1, 2]"[..],
    ] {
        let reply = post_raw(&server, &merchant, raw, None).await;
        assert_v1_error(&reply, 400, "INVALID_BODY");
    }
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
    assert_eq!(count(&server, &merchant).await, 0);
}

#[tokio::test]
async fn wallet_below_request_plus_fee_is_422_insufficient_balance() {
    let server = TestServer::start_with(SLOW);
    // Exactly the request amount: the fee does not fit.
    let merchant = funded_merchant(&server, 1_000_000).await;
    let body = bank_body("poor-1", 1_000_000);
    assert_refused(&server, &merchant, body.clone(), 422, "INSUFFICIENT_BALANCE").await;
    assert_eq!(server.balance(&merchant.api_key).await, 1_000_000);

    // One minor unit short.
    assert_eq!(
        server.credit(&merchant.id, BANK_FEE - 1).await,
        1_000_000 + BANK_FEE - 1
    );
    assert_refused(&server, &merchant, body.clone(), 422, "INSUFFICIENT_BALANCE").await;
    assert_eq!(server.balance(&merchant.api_key).await, 1_000_000 + BANK_FEE - 1);

    // Exactly enough, with the same key (a refusal does not use it up).
    assert_eq!(server.credit(&merchant.id, 1).await, 1_000_000 + BANK_FEE);
    let data = create_ok(&server, &merchant, body).await;
    assert_eq!(data["final_amount_minor"], json!(1_000_000 + BANK_FEE));
    assert_eq!(server.balance(&merchant.api_key).await, 0);

    // An empty wallet refuses even the smallest e-wallet payout.
    let body = ewallet_body("poor-2", "OVO", "081234567890", 1);
    assert_refused(&server, &merchant, body, 422, "INSUFFICIENT_BALANCE").await;
    assert_eq!(server.balance(&merchant.api_key).await, 0);
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn amount_over_the_per_transaction_limit_is_422_and_exactly_the_limit_is_accepted() {
    let server = TestServer::start_with(SLOW);
    let funding = 5_000_000;
    let merchant = funded_merchant(&server, funding).await;
    patch_merchant(
        &server,
        &merchant.id,
        json!({ "limits": { "per_transaction_minor": 1_000_000 } }),
    )
    .await;

    // The limit applies to the request amount, fee excluded.
    let body = bank_body("limit-1", 1_000_001);
    assert_refused(&server, &merchant, body, 422, "AMOUNT_EXCEEDS_LIMIT").await;
    let body = ewallet_body("limit-2", "OVO", "081234567890", 1_000_001);
    assert_refused(&server, &merchant, body, 422, "AMOUNT_EXCEEDS_LIMIT").await;
    assert_eq!(server.balance(&merchant.api_key).await, funding);

    let data = create_ok(&server, &merchant, bank_body("limit-1", 1_000_000)).await;
    assert_eq!(data["request_amount_minor"], json!(1_000_000));
    assert_eq!(data["final_amount_minor"], json!(1_000_000 + BANK_FEE));
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_000_000 - BANK_FEE);
}

#[tokio::test]
async fn default_per_transaction_limit_is_idr_50_million() {
    let server = TestServer::start_with(SLOW);
    let funding = 6_000_000_000;
    let merchant = funded_merchant(&server, funding).await;
    let body = bank_body("big-1", 5_000_000_001);
    assert_refused(&server, &merchant, body, 422, "AMOUNT_EXCEEDS_LIMIT").await;
    assert_eq!(server.balance(&merchant.api_key).await, funding);
}

#[tokio::test]
async fn daily_limit_counts_the_days_requests_and_a_failed_one_frees_its_share() {
    let server = TestServer::start_with(SLOW);
    let funding = 10_000_000;
    let merchant = funded_merchant(&server, funding).await;
    patch_merchant(&server, &merchant.id, json!({ "limits": { "daily_minor": 3_000_000 } })).await;

    let first = create_ok(&server, &merchant, bank_body("day-1", 1_500_000)).await;
    create_ok(&server, &merchant, bank_body("day-2", 1_500_000)).await;
    let after_two = funding - 2 * (1_500_000 + BANK_FEE);
    assert_eq!(server.balance(&merchant.api_key).await, after_two);

    let body = ewallet_body("day-3", "OVO", "081234567890", 1);
    assert_refused(&server, &merchant, body.clone(), 422, "DAILY_LIMIT_EXCEEDED").await;
    assert_eq!(server.balance(&merchant.api_key).await, after_two);

    // A FAILED disbursement no longer counts toward the daily limit.
    let reply = complete(&server, &merchant, first["id"].as_str().unwrap(), "FAILED").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let restored = after_two + 1_500_000 + BANK_FEE;
    assert_eq!(server.balance(&merchant.api_key).await, restored);
    create_ok(&server, &merchant, bank_body("day-4", 1_499_999)).await;
    create_ok(&server, &merchant, body).await;
    assert_eq!(
        server.balance(&merchant.api_key).await,
        restored - 1_499_999 - BANK_FEE - 1
    );
    let body = ewallet_body("day-5", "OVO", "081234567890", 1);
    assert_refused(&server, &merchant, body, 422, "DAILY_LIMIT_EXCEEDED").await;
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn unknown_beneficiary_id_is_404_beneficiary_not_found() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let body = json!({
        "idempotency_key": "bene-1",
        "beneficiary_id": Uuid::new_v4().to_string(),
        "amount_minor": 1_000_000,
    });
    assert_refused(&server, &merchant, body, 404, "BENEFICIARY_NOT_FOUND").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn repeated_idempotency_key_is_409_with_the_existing_disbursement_and_debits_once() {
    let server = TestServer::start_with(SLOW);
    let funding = 10_000_000;
    let merchant = funded_merchant(&server, funding).await;
    let first = create_ok(&server, &merchant, bank_body("dup-1", 1_000_000)).await;
    let id = first["id"].as_str().unwrap();
    let debited = funding - 1_000_000 - BANK_FEE;
    assert_eq!(server.balance(&merchant.api_key).await, debited);
    let stored = wait_for(&server, &merchant, id, "ON_PROCESS").await;

    // Same body, then another amount and channel under the same key.
    for body in [
        bank_body("dup-1", 1_000_000),
        bank_body("dup-1", 2_000_000),
        ewallet_body("dup-1", "OVO", "081234567890", 5_000),
    ] {
        let reply = assert_refused(&server, &merchant, body, 409, "DUPLICATE_IDEMPOTENCY_KEY").await;
        let data = &reply.body["data"];
        assert_eq!(data["id"], json!(id), "{}", reply.body);
        assert_eq!(data, &stored, "the 409 carries the existing disbursement");
    }
    assert_eq!(server.balance(&merchant.api_key).await, debited);
    assert_eq!(count(&server, &merchant).await, 1);
    assert_ledger_clean(&server).await;
}

// ---------------------------------------------------------------- lifecycle

#[tokio::test]
async fn sandbox_vendor_completes_a_bank_disbursement_as_success_with_a_vendor_id() {
    let server = TestServer::start_with(FAST);
    let funding = 10_000_000;
    let merchant = funded_merchant(&server, funding).await;
    let created = create_ok(&server, &merchant, bank_body("life-ok", 2_000_000)).await;
    let id = created["id"].as_str().unwrap();
    let debited = funding - 2_000_000 - BANK_FEE;
    assert_eq!(server.balance(&merchant.api_key).await, debited);

    let done = wait_for(&server, &merchant, id, "SUCCESS").await;
    assert!(
        done["vendor_disbursement_id"].as_str().is_some_and(|v| !v.is_empty()),
        "{done}"
    );
    assert_eq!(done["final_amount_minor"], json!(2_000_000 + BANK_FEE));
    assert_eq!(done["ref_code"], created["ref_code"]);
    assert_eq!(server.balance(&merchant.api_key).await, debited);

    // By ref code: the same record.
    let by_ref = fetch(&server, &merchant, created["ref_code"].as_str().unwrap()).await;
    assert_eq!(by_ref, done);

    // Stays SUCCESS, and nothing comes back.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(fetch(&server, &merchant, id).await, done);
    assert_eq!(server.balance(&merchant.api_key).await, debited);
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn sandbox_failing_account_ends_failed_and_returns_the_full_amount_once() {
    let server = TestServer::start_with(FAST);
    let funding = 10_000_000;
    let merchant = funded_merchant(&server, funding).await;
    let entries_before = entries(&server).await;
    let body = bank_body_to("life-fail", "BCA", "0000000000", 3_000_000);
    let created = create_ok(&server, &merchant, body).await;
    assert_eq!(created["account_number"], json!("0000000000"));
    let id = created["id"].as_str().unwrap();
    // The debit may already be undone by now on a slow machine; it is at most the full amount.
    let balance = server.balance(&merchant.api_key).await;
    assert!(
        balance == funding - 3_000_000 - BANK_FEE || balance == funding,
        "{balance}"
    );

    let failed = wait_for(&server, &merchant, id, "FAILED").await;
    assert_eq!(failed["final_amount_minor"], json!(3_000_000 + BANK_FEE));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        funding,
        "FAILED gives request + fee back"
    );
    // One debit and one reversal entry, and no second credit later.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(server.balance(&merchant.api_key).await, funding);
    assert_eq!(fetch(&server, &merchant, id).await["status"], json!("FAILED"));
    assert_eq!(entries(&server).await, entries_before + 2);
    let report = server.verify().await;
    assert_eq!(report["balanced"], json!(true), "{report}");
    assert_eq!(report["problems"], json!([]), "{report}");

    // The wallet is whole again: a second payout of all of it is accepted.
    create_ok(&server, &merchant, bank_body("life-after", funding - BANK_FEE)).await;
    assert_eq!(server.balance(&merchant.api_key).await, 0);
}

#[tokio::test]
async fn another_merchants_disbursement_or_an_unknown_id_is_404_disbursement_not_found() {
    let server = TestServer::start_with(SLOW);
    let owner = funded_merchant(&server, 5_000_000).await;
    let stranger = funded_merchant(&server, 5_000_000).await;
    let created = create_ok(&server, &owner, bank_body("mine", 1_000_000)).await;

    for id in [
        created["id"].as_str().unwrap().to_string(),
        created["ref_code"].as_str().unwrap().to_string(),
        Uuid::new_v4().to_string(),
        "DSB-000000000000-XXXX".to_string(),
    ] {
        let reply = get(&server, &stranger, &id).await;
        assert_v1_error(&reply, 404, "DISBURSEMENT_NOT_FOUND");
    }
    let reply = get(&server, &owner, &Uuid::new_v4().to_string()).await;
    assert_v1_error(&reply, 404, "DISBURSEMENT_NOT_FOUND");
    // The stranger cannot complete it either.
    let reply = complete(&server, &stranger, created["id"].as_str().unwrap(), "FAILED").await;
    assert_v1_error(&reply, 404, "DISBURSEMENT_NOT_FOUND");
    assert_eq!(server.balance(&stranger.api_key).await, 5_000_000);
    assert_eq!(server.balance(&owner.api_key).await, 5_000_000 - 1_000_000 - BANK_FEE);
    assert_eq!(count(&server, &stranger).await, 0);
}

// ---------------------------------------------------------------- review

#[tokio::test]
async fn amount_at_the_review_threshold_waits_in_review_until_approved_then_succeeds() {
    let server = TestServer::start_with(FAST);
    let funding = REVIEW_THRESHOLD + BANK_FEE + 1_000;
    let merchant = funded_merchant(&server, funding).await;
    let created = create_ok(&server, &merchant, bank_body("review-1", REVIEW_THRESHOLD)).await;
    let id = created["id"].as_str().unwrap();
    assert_eq!(server.balance(&merchant.api_key).await, 1_000);

    let in_review = wait_for(&server, &merchant, id, "IN_REVIEW").await;
    assert_eq!(in_review["vendor_disbursement_id"], Value::Null);
    // Well past the vendor delay it is still waiting for the operator.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(fetch(&server, &merchant, id).await, in_review);
    assert_eq!(server.balance(&merchant.api_key).await, 1_000);

    let reply = approve(&server, id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    let approved = &reply.body["data"];
    assert_eq!(approved["id"], json!(id));
    assert_eq!(approved["status"], json!("ON_PROCESS"));
    assert!(
        approved["vendor_disbursement_id"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{approved}"
    );

    let done = wait_for(&server, &merchant, id, "SUCCESS").await;
    assert_eq!(done["vendor_disbursement_id"], approved["vendor_disbursement_id"]);
    assert_eq!(server.balance(&merchant.api_key).await, 1_000);

    // Final: neither approvable nor rejectable, and no money moves.
    assert_v1_error(&approve(&server, id).await, 422, "INVALID_STATUS");
    assert_v1_error(&reject(&server, id).await, 422, "INVALID_STATUS");
    assert_eq!(fetch(&server, &merchant, id).await["status"], json!("SUCCESS"));
    assert_eq!(server.balance(&merchant.api_key).await, 1_000);
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn review_threshold_is_inclusive_and_follows_the_merchants_patched_limit() {
    let server = TestServer::start_with(FAST);
    let funding = 5_000_000;
    let merchant = funded_merchant(&server, funding).await;
    patch_merchant(
        &server,
        &merchant.id,
        json!({ "limits": { "review_threshold_minor": 1_000_000 } }),
    )
    .await;
    let below = create_ok(
        &server,
        &merchant,
        ewallet_body("below", "OVO", "081234567890", 999_999),
    )
    .await;
    let at = create_ok(&server, &merchant, ewallet_body("at", "OVO", "081234567890", 1_000_000)).await;
    wait_for(&server, &merchant, below["id"].as_str().unwrap(), "SUCCESS").await;
    wait_for(&server, &merchant, at["id"].as_str().unwrap(), "IN_REVIEW").await;
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_999_999);
}

#[tokio::test]
async fn rejecting_a_disbursement_in_review_returns_the_full_amount_exactly_once() {
    let server = TestServer::start_with(FAST);
    let funding = REVIEW_THRESHOLD + BANK_FEE + 500;
    let merchant = funded_merchant(&server, funding).await;
    let entries_before = entries(&server).await;
    let created = create_ok(&server, &merchant, bank_body("review-2", REVIEW_THRESHOLD)).await;
    let id = created["id"].as_str().unwrap();
    wait_for(&server, &merchant, id, "IN_REVIEW").await;
    assert_eq!(server.balance(&merchant.api_key).await, 500);

    let reply = reject(&server, id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["id"], json!(id));
    assert_eq!(reply.body["data"]["status"], json!("REJECTED"));
    assert_eq!(reply.body["data"]["vendor_disbursement_id"], Value::Null);
    assert_eq!(server.balance(&merchant.api_key).await, funding);

    // A second rejection and a late approval are refused; the money came back once.
    assert_v1_error(&reject(&server, id).await, 422, "INVALID_STATUS");
    assert_v1_error(&approve(&server, id).await, 422, "INVALID_STATUS");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(server.balance(&merchant.api_key).await, funding);
    let stored = fetch(&server, &merchant, id).await;
    assert_eq!(stored["status"], json!("REJECTED"));
    assert_eq!(stored["final_amount_minor"], json!(REVIEW_THRESHOLD + BANK_FEE));
    assert_eq!(entries(&server).await, entries_before + 2);
    assert_ledger_clean(&server).await;

    // A body-less rejection works too, on another one.
    let other = create_ok(&server, &merchant, bank_body("review-3", REVIEW_THRESHOLD)).await;
    let other_id = other["id"].as_str().unwrap();
    wait_for(&server, &merchant, other_id, "IN_REVIEW").await;
    let reply = server
        .admin(
            Method::POST,
            &format!("/admin/v1/disbursements/{other_id}/reject"),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["status"], json!("REJECTED"));
    assert_eq!(server.balance(&merchant.api_key).await, funding);
}

#[tokio::test]
async fn approve_or_reject_with_a_non_uuid_is_400_invalid_id_and_unknown_is_404() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let created = create_ok(&server, &merchant, bank_body("not-review", 1_000_000)).await;
    let id = created["id"].as_str().unwrap();
    wait_for(&server, &merchant, id, "ON_PROCESS").await;

    for bad in ["not-a-uuid", "12345", created["ref_code"].as_str().unwrap()] {
        assert_v1_error(&reject(&server, bad).await, 400, "INVALID_ID");
        assert_v1_error(&approve(&server, bad).await, 400, "INVALID_ID");
    }
    let unknown = Uuid::new_v4().to_string();
    assert_v1_error(&reject(&server, &unknown).await, 404, "DISBURSEMENT_NOT_FOUND");
    assert_v1_error(&approve(&server, &unknown).await, 404, "DISBURSEMENT_NOT_FOUND");

    // ON_PROCESS is past review: neither approvable nor rejectable.
    assert_v1_error(&approve(&server, id).await, 422, "INVALID_STATUS");
    assert_v1_error(&reject(&server, id).await, 422, "INVALID_STATUS");
    assert_eq!(fetch(&server, &merchant, id).await["status"], json!("ON_PROCESS"));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        5_000_000 - 1_000_000 - BANK_FEE
    );
}

// ---------------------------------------------------------------- sandbox

#[tokio::test]
async fn sandbox_complete_failed_returns_the_money_and_a_second_complete_is_422_invalid_status() {
    let server = TestServer::start_with(SLOW);
    let funding = 5_000_000;
    let merchant = funded_merchant(&server, funding).await;
    let created = create_ok(&server, &merchant, bank_body("complete-fail", 1_000_000)).await;
    let id = created["id"].as_str().unwrap();
    wait_for(&server, &merchant, id, "ON_PROCESS").await;
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_000_000 - BANK_FEE);

    let reply = complete(&server, &merchant, id, "FAILED").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    assert_eq!(reply.body["data"]["id"], json!(id));
    assert_eq!(reply.body["data"]["status"], json!("FAILED"));
    assert_eq!(sorted_keys(&reply.body["data"]), strings(&FIELDS));
    assert_eq!(server.balance(&merchant.api_key).await, funding);

    for status in ["FAILED", "SUCCESS"] {
        let reply = complete(&server, &merchant, id, status).await;
        assert_v1_error(&reply, 422, "INVALID_STATUS");
        assert_eq!(server.balance(&merchant.api_key).await, funding);
    }
    assert_eq!(fetch(&server, &merchant, id).await["status"], json!("FAILED"));
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn sandbox_complete_success_keeps_the_debit_and_an_unknown_status_is_400_invalid_body() {
    let server = TestServer::start_with(SLOW);
    let funding = 5_000_000;
    let merchant = funded_merchant(&server, funding).await;
    let first = create_ok(&server, &merchant, bank_body("complete-ok", 1_000_000)).await;
    let second = create_ok(
        &server,
        &merchant,
        ewallet_body("complete-nope", "GOPAY", "081234567890", 700_000),
    )
    .await;
    let after = funding - 1_000_000 - BANK_FEE - 700_000;
    assert_eq!(server.balance(&merchant.api_key).await, after);

    // By ref code.
    let reply = complete(&server, &merchant, first["ref_code"].as_str().unwrap(), "SUCCESS").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["id"], first["id"]);
    assert_eq!(reply.body["data"]["status"], json!("SUCCESS"));
    assert!(
        reply.body["data"]["vendor_disbursement_id"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{}",
        reply.body
    );
    assert_eq!(server.balance(&merchant.api_key).await, after);

    let second_id = second["id"].as_str().unwrap();
    wait_for(&server, &merchant, second_id, "ON_PROCESS").await;
    for status in ["NOPE", "success", "REJECTED", "ON_PROCESS"] {
        let reply = complete(&server, &merchant, second_id, status).await;
        assert_v1_error(&reply, 400, "INVALID_BODY");
    }
    let reply = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/disbursements/{second_id}/complete"),
            Some(&merchant.api_key),
            Some(json!({})),
        )
        .await;
    assert_v1_error(&reply, 400, "INVALID_BODY");
    assert_eq!(
        fetch(&server, &merchant, second_id).await["status"],
        json!("ON_PROCESS")
    );
    assert_eq!(server.balance(&merchant.api_key).await, after);

    let reply = complete(&server, &merchant, &Uuid::new_v4().to_string(), "SUCCESS").await;
    assert_v1_error(&reply, 404, "DISBURSEMENT_NOT_FOUND");
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn live_mode_has_no_payout_vendor_and_no_sandbox_completion_route() {
    let server = TestServer::start_with(&["--mode", "live"]);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let body = bank_body("live-1", 1_000_000);
    assert_refused(&server, &merchant, body, 503, "NO_VENDOR").await;
    let body = ewallet_body("live-2", "OVO", "081234567890", 1_000_000);
    assert_refused(&server, &merchant, body, 503, "NO_VENDOR").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);

    let reply = complete(&server, &merchant, &Uuid::new_v4().to_string(), "SUCCESS").await;
    assert_v1_error(&reply, 404, "NOT_FOUND");
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn live_mode_sandbox_completion_route_is_404_not_found_whatever_the_body() {
    let server = TestServer::start_with(&["--mode", "live"]);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let path = format!("{}/v1/sandbox/disbursements/{}/complete", server.base, Uuid::new_v4());
    // The route does not exist in live mode (sandbox only): like any unknown
    // route it is 404, not a validation error that reveals it.
    for body in [&b"{}"[..], &b"{\"status\": 1}"[..], &b"not json"[..], &b""[..]] {
        let response = server
            .client
            .post(&path)
            .header("X-API-Key", &merchant.api_key)
            .header("Content-Type", "application/json")
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        let reply = into_reply(response).await;
        assert_v1_error(&reply, 404, "NOT_FOUND");
    }
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

// ---------------------------------------------------------------- listing

/// Creates `n` BANK disbursements a few ms apart; returns them oldest first.
async fn create_several(server: &TestServer, merchant: &TestMerchant, n: usize) -> Vec<Value> {
    let mut created = Vec::new();
    for i in 0..n {
        created.push(create_ok(server, merchant, bank_body(&format!("list-{i}"), 100_000 + i as i64)).await);
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    created
}

#[tokio::test]
async fn list_is_newest_first_with_integer_meta_and_pages_without_overlap() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 10_000_000).await;
    let other = funded_merchant(&server, 10_000_000).await;
    let created = create_several(&server, &merchant, 5).await;
    let newest_first: Vec<String> = created
        .iter()
        .rev()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();

    let reply = list(&server, &merchant, "").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(sorted_keys(&reply.body), strings(&["data", "meta", "success"]));
    assert_eq!(reply.body["success"], json!(true));
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 1, "limit": 10, "total": 5, "total_pages": 1 })
    );
    assert_eq!(ids(&reply.body), newest_first);
    for item in reply.body["data"].as_array().unwrap() {
        assert_eq!(sorted_keys(item), strings(&FIELDS));
        assert_eq!(item["channel"], json!("BANK"));
    }
    let times: Vec<_> = reply.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| assert_timestamp(&d["created_at"]))
        .collect();
    assert!(times.windows(2).all(|w| w[0] > w[1]), "{times:?}");

    // limit=2: pages 1..3 cover everything once, in order.
    let mut paged = Vec::new();
    for (page, len) in [(1, 2), (2, 2), (3, 1)] {
        let reply = list(&server, &merchant, &format!("?page={page}&limit=2")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(
            reply.body["meta"],
            json!({ "page": page, "limit": 2, "total": 5, "total_pages": 3 })
        );
        let page_ids = ids(&reply.body);
        assert_eq!(page_ids.len(), len, "page {page}");
        paged.extend(page_ids);
    }
    assert_eq!(paged, newest_first);
    let reply = list(&server, &merchant, "?page=4&limit=2").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"], json!([]));
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 4, "limit": 2, "total": 5, "total_pages": 3 })
    );

    // limit over 50 is served as 50.
    // Above 50 (even past what an integer type holds) is served as 50.
    for limit in ["500", "1000000000000000000000"] {
        let reply = list(&server, &merchant, &format!("?limit={limit}")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(
            reply.body["meta"],
            json!({ "page": 1, "limit": 50, "total": 5, "total_pages": 1 })
        );
        assert_eq!(ids(&reply.body), newest_first);
    }

    // Another merchant sees none of them.
    let reply = list(&server, &other, "").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"], json!([]));
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 1, "limit": 10, "total": 0, "total_pages": 0 })
    );
    assert_eq!(server.balance(&other.api_key).await, 10_000_000);
    let spent: i64 = (0..5).map(|i| 100_000 + i + BANK_FEE).sum();
    assert_eq!(server.balance(&merchant.api_key).await, 10_000_000 - spent);
}

#[tokio::test]
async fn list_filters_by_status_and_created_range_and_refuses_bad_queries() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded_merchant(&server, 10_000_000).await;
    let created = create_several(&server, &merchant, 5).await;
    let id = |i: usize| created[i]["id"].as_str().unwrap().to_string();
    for i in 0..5 {
        wait_for(&server, &merchant, &id(i), "ON_PROCESS").await;
    }
    for i in [1, 3] {
        let reply = complete(&server, &merchant, &id(i), "FAILED").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    }

    let reply = list(&server, &merchant, "?status=FAILED").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(ids(&reply.body), vec![id(3), id(1)]);
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 1, "limit": 10, "total": 2, "total_pages": 1 })
    );
    for item in reply.body["data"].as_array().unwrap() {
        assert_eq!(item["status"], json!("FAILED"));
    }
    let reply = list(&server, &merchant, "?status=ON_PROCESS&limit=2").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(ids(&reply.body), vec![id(4), id(2)]);
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 1, "limit": 2, "total": 3, "total_pages": 2 })
    );

    // Time range.
    let reply = list(&server, &merchant, "?created_from=2999-01-01T00:00:00Z").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"], json!([]));
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 1, "limit": 10, "total": 0, "total_pages": 0 })
    );
    let reply = list(&server, &merchant, "?created_to=2000-01-01T00:00:00Z").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["meta"]["total"], json!(0));
    let reply = list(&server, &merchant, "?created_from=2000-01-01T00:00:00Z").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["meta"]["total"], json!(5));
    // Strictly between the 2nd and the 4th: only the 3rd.
    let millis = chrono::Duration::milliseconds(1);
    let from = assert_timestamp(&created[1]["created_at"]) + millis;
    let to = assert_timestamp(&created[3]["created_at"]) - millis;
    let query = format!(
        "?created_from={}&created_to={}",
        from.with_timezone(&chrono::Utc)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        to.with_timezone(&chrono::Utc)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    );
    let reply = list(&server, &merchant, &query).await;
    assert_eq!(reply.status, StatusCode::OK, "{query}: {}", reply.body);
    assert_eq!(ids(&reply.body), vec![id(2)], "{query}");

    // Bad queries.
    for query in [
        "?page=0",
        "?limit=abc",
        "?limit=0",
        "?page=-1",
        "?page=1.5",
        "?status=BOGUS",
        "?created_from=yesterday",
        "?created_to=2024-13-01",
    ] {
        let reply = list(&server, &merchant, query).await;
        assert_v1_error(&reply, 400, "INVALID_QUERY");
    }
    let spent: i64 = [0, 2, 4].iter().map(|i| 100_000 + i + BANK_FEE).sum();
    assert_eq!(server.balance(&merchant.api_key).await, 10_000_000 - spent);
    assert_ledger_clean(&server).await;
}

// ---------------------------------------------------------------- X-Signature

#[tokio::test]
async fn correct_x_signature_is_201_and_a_wrong_one_is_401_invalid_signature_creating_nothing() {
    let server = TestServer::start_with(SLOW);
    let funding = 10_000_000;
    let merchant = funded_merchant(&server, funding).await;

    let body = serde_json::to_vec(&bank_body("signed-1", 1_000_000)).unwrap();
    let signature = sign(&merchant.webhook_secret, &body);
    let reply = post_raw(&server, &merchant, &body, Some(&signature)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["idempotency_key"], json!("signed-1"));
    let after = funding - 1_000_000 - BANK_FEE;
    assert_eq!(server.balance(&merchant.api_key).await, after);

    let body = serde_json::to_vec(&bank_body("signed-2", 1_000_000)).unwrap();
    let tampered = serde_json::to_vec(&bank_body("signed-2", 2_000_000)).unwrap();
    let other_secret = server.create_wallet_merchant().await.webhook_secret;
    for (raw, signature) in [
        (&body, sign(&other_secret, &body)),
        (&tampered, sign(&merchant.webhook_secret, &body)),
        (&body, "sha256=deadbeef".to_string()),
        (&body, "sha256=not-hex".to_string()),
        // The digest without its `sha256=` prefix.
        (
            &body,
            sign(&merchant.webhook_secret, &body)
                .trim_start_matches("sha256=")
                .to_string(),
        ),
        (&body, String::new()),
    ] {
        let reply = post_raw(&server, &merchant, raw, Some(&signature)).await;
        assert_v1_error(&reply, 401, "INVALID_SIGNATURE");
        assert_eq!(server.balance(&merchant.api_key).await, after, "{signature}");
        assert_eq!(count(&server, &merchant).await, 1, "{signature}");
    }

    // Without require_signature, an unsigned request is still fine.
    let reply = post_raw(&server, &merchant, &body, None).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(server.balance(&merchant.api_key).await, after - 1_000_000 - BANK_FEE);
}

#[tokio::test]
async fn required_signature_refuses_an_unsigned_disbursement_with_401_invalid_signature() {
    let server = TestServer::start_with(SLOW);
    let funding = 10_000_000;
    let merchant = funded_merchant(&server, funding).await;
    patch_merchant(&server, &merchant.id, json!({ "require_signature": true })).await;

    let body = serde_json::to_vec(&bank_body("must-sign", 1_000_000)).unwrap();
    let reply = post_raw(&server, &merchant, &body, None).await;
    assert_v1_error(&reply, 401, "INVALID_SIGNATURE");
    let reply = post_raw(&server, &merchant, &body, Some("sha256=00")).await;
    assert_v1_error(&reply, 401, "INVALID_SIGNATURE");
    assert_eq!(server.balance(&merchant.api_key).await, funding);
    assert_eq!(count(&server, &merchant).await, 0);

    let reply = post_raw(&server, &merchant, &body, Some(&sign(&merchant.webhook_secret, &body))).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_000_000 - BANK_FEE);
    assert_eq!(count(&server, &merchant).await, 1);
}
