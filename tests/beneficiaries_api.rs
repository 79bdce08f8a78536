//! Beneficiaries over HTTP: per-channel
//! validation, verification by account inquiry, defaults, soft delete, and
//! disbursements that name a beneficiary.

mod support;

use hmac::{Hmac, Mac};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sha2::Sha256;
use std::time::Duration;
use support::*;

fn bank_beneficiary(account_number: &str, is_default: bool) -> Value {
    json!({
        "channel": "BANK", "label": "Supplier", "bank_short_code": "MANDIRI",
        "account_number": account_number, "account_name": "Siti Rahayu", "is_default": is_default,
    })
}

async fn create(server: &TestServer, merchant: &TestMerchant, body: Value) -> Reply {
    server.post("/v1/beneficiaries", &merchant.api_key, Some(body)).await
}

async fn list(server: &TestServer, merchant: &TestMerchant) -> Vec<Value> {
    let reply = server.get("/v1/beneficiaries", &merchant.api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["data"].as_array().unwrap().clone()
}

async fn wait_verified(server: &TestServer, merchant: &TestMerchant, id: &str, want: &str) -> Value {
    for _ in 0..100 {
        if let Some(found) = list(server, merchant).await.into_iter().find(|b| b["id"] == json!(id)) {
            if found["verification_status"] == json!(want) {
                return found;
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("beneficiary {id} never became {want}");
}

/// Every field of a beneficiary.
#[rustfmt::skip]
const BENEFICIARY_FIELDS: [&str; 16] = [
    "id", "organization_id", "merchant_id", "label", "channel", "bank_id", "account_number", "account_name",
    "ewallet_provider", "ewallet_phone", "verification_status", "verified_name", "is_default", "is_enabled",
    "created_at", "updated_at",
];

#[tokio::test]
async fn a_bank_beneficiary_is_created_pending_and_then_verified_with_the_holder_name() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let reply = create(&server, &merchant, bank_beneficiary("1234567890", false)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let data = &reply.body["data"];
    assert_eq!(sorted_keys(data), strings(&BENEFICIARY_FIELDS));
    assert!(is_uuid(&data["id"]) && is_uuid(&data["organization_id"]) && is_uuid(&data["bank_id"]));
    assert_eq!(data["merchant_id"], json!(merchant.id));
    assert_eq!(data["channel"], json!("BANK"));
    assert_eq!(data["verification_status"], json!("PENDING"));
    assert_eq!(data["verified_name"], Value::Null);
    assert_eq!(data["is_enabled"], json!(true));
    assert_eq!(data["ewallet_phone"], Value::Null);
    let verified = wait_verified(&server, &merchant, data["id"].as_str().unwrap(), "VERIFIED").await;
    assert_eq!(verified["verified_name"], json!("SITI RAHAYU"));
}

#[tokio::test]
async fn an_account_the_vendor_cannot_confirm_fails_verification() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let reply = create(&server, &merchant, bank_beneficiary("0000000000", false)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let failed = wait_verified(&server, &merchant, reply.body["data"]["id"].as_str().unwrap(), "FAILED").await;
    assert_eq!(failed["verified_name"], Value::Null);

    // Saved without a name and never verified: a disbursement to it must
    // bring the name, and then uses it.
    server.credit(&merchant.id, 5_000_000).await;
    let nameless = json!({ "channel": "BANK", "bank_short_code": "BCA", "account_number": "0000000000" });
    let reply = create(&server, &merchant, nameless).await;
    let id = reply.body["data"]["id"].as_str().unwrap().to_string();
    wait_verified(&server, &merchant, &id, "FAILED").await;
    let body = json!({ "beneficiary_id": id, "amount_minor": 100_000, "idempotency_key": "nameless-1" });
    let reply = server.post("/v1/disbursements", &merchant.api_key, Some(body)).await;
    assert_v1_error(&reply, 400, "MISSING_BANK_INFO");
    assert_eq!(
        reply.body["error"]["message"],
        json!("account_name is required: the beneficiary has no account name")
    );
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
    let body = json!({ "beneficiary_id": id, "amount_minor": 100_000, "idempotency_key": "nameless-2", "account_name": "Budi" });
    let reply = server.post("/v1/disbursements", &merchant.api_key, Some(body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["account_name"], json!("Budi"));
}

#[tokio::test]
async fn an_ewallet_beneficiary_has_its_phone_normalized() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let body = json!({ "channel": "EWALLET", "ewallet_provider": "GOPAY", "ewallet_phone": "+62 812-3456-7890" });
    let reply = create(&server, &merchant, body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["ewallet_phone"], json!("6281234567890"));
    assert_eq!(reply.body["data"]["ewallet_provider"], json!("GOPAY"));
    assert_eq!(reply.body["data"]["bank_id"], Value::Null);
    assert_eq!(reply.body["data"]["label"], Value::Null);
}

#[tokio::test]
async fn invalid_beneficiaries_are_refused_with_their_codes_and_nothing_is_saved() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    #[rustfmt::skip]
    let cases = [
        ("bank without account_number", json!({ "channel": "BANK", "bank_short_code": "BCA" }), 400, "MISSING_BANK_INFO"),
        ("unknown bank NOPE", json!({ "channel": "BANK", "bank_short_code": "NOPE", "account_number": "1234567890" }), 400, "BANK_NOT_FOUND"),
        ("e-wallet without phone", json!({ "channel": "EWALLET", "ewallet_provider": "OVO" }), 400, "MISSING_EWALLET_INFO"),
        ("unknown e-wallet XPAY", json!({ "channel": "EWALLET", "ewallet_provider": "XPAY", "ewallet_phone": "081234567890" }), 400, "EWALLET_NOT_FOUND"),
        ("e-wallet phone 0412", json!({ "channel": "EWALLET", "ewallet_provider": "OVO", "ewallet_phone": "0412" }), 400, "INVALID_BODY"),
        ("channel CASH", json!({ "channel": "CASH" }), 400, "INVALID_BODY"),
        ("account_number with letters", json!({ "channel": "BANK", "bank_short_code": "BCA", "account_number": "12ab" }), 400, "INVALID_BODY"),
    ];
    for (name, body, status, code) in cases {
        table::row(name, async {
            let reply = create(&server, &merchant, body.clone()).await;
            assert_v1_error(&reply, status, code);
        })
        .await;
    }
    assert!(list(&server, &merchant).await.is_empty());
    // A beneficiary's holder name is optional: not asked for.
    let reply = create(
        &server,
        &merchant,
        json!({ "channel": "BANK", "bank_short_code": "BCA" }),
    )
    .await;
    assert_eq!(
        reply.body["error"]["message"],
        json!("bank_short_code and account_number are required for BANK")
    );
}

#[tokio::test]
async fn a_new_default_unsets_the_previous_default() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let first = create(&server, &merchant, bank_beneficiary("1111111111", true)).await;
    let second = create(&server, &merchant, bank_beneficiary("2222222222", true)).await;
    assert_eq!(second.status, StatusCode::CREATED);
    let listed = list(&server, &merchant).await;
    let default_of = |id: &Value| listed.iter().find(|b| b["id"] == *id).unwrap()["is_default"].clone();
    assert_eq!(default_of(&first.body["data"]["id"]), json!(false));
    assert_eq!(default_of(&second.body["data"]["id"]), json!(true));
}

#[tokio::test]
async fn deleting_hides_a_beneficiary_and_keeps_the_disbursements_that_used_it() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "60000"]);
    let merchant = server.create_wallet_merchant().await;
    let other = server.create_wallet_merchant().await;
    server.credit(&merchant.id, 5_000_000).await;
    let created = create(&server, &merchant, bank_beneficiary("1234567890", false)).await;
    let id = created.body["data"]["id"].as_str().unwrap().to_string();

    // A disbursement naming it takes channel and account from it, whatever
    // account fields the request also carries.
    let body = json!({
        "beneficiary_id": id, "amount_minor": 100_000, "idempotency_key": "b-1",
        "bank_short_code": "BRI", "account_number": "5555555555", "account_name": "Mallory",
    });
    let paid = server.post("/v1/disbursements", &merchant.api_key, Some(body)).await;
    assert_eq!(paid.status, StatusCode::CREATED, "{}", paid.body);
    assert_eq!(paid.body["data"]["channel"], json!("BANK"));
    assert_eq!(paid.body["data"]["account_number"], json!("1234567890"));
    assert_eq!(paid.body["data"]["account_name"], json!("Siti Rahayu"));
    let banks = server.get("/v1/banks", &merchant.api_key).await;
    let bank_id_of = |code: &str| {
        banks.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["short_code"] == json!(code))
            .map(|b| b["id"].clone())
            .unwrap()
    };
    assert_eq!(paid.body["data"]["bank_id"], bank_id_of("MANDIRI"));
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000 - 100_000 - 250_000);
    let mismatch =
        json!({ "beneficiary_id": id, "channel": "EWALLET", "amount_minor": 100_000, "idempotency_key": "b-2" });
    let reply = server
        .post("/v1/disbursements", &merchant.api_key, Some(mismatch))
        .await;
    assert_v1_error(&reply, 400, "INVALID_BODY");

    // Another merchant cannot see or delete it.
    let reply = server.delete(&format!("/v1/beneficiaries/{id}"), &other.api_key).await;
    assert_v1_error(&reply, 404, "BENEFICIARY_NOT_FOUND");
    let reply = server
        .delete(&format!("/v1/beneficiaries/{id}"), &merchant.api_key)
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body, json!({ "success": true, "data": { "deleted": true } }));
    assert!(list(&server, &merchant).await.is_empty());
    let reply = server
        .delete(&format!("/v1/beneficiaries/{id}"), &merchant.api_key)
        .await;
    assert_v1_error(&reply, 404, "BENEFICIARY_NOT_FOUND");
    let reply = server.delete("/v1/beneficiaries/not-a-uuid", &merchant.api_key).await;
    assert_v1_error(&reply, 400, "INVALID_ID");

    // It can no longer be paid; the earlier disbursement is still there.
    let body = json!({ "beneficiary_id": id, "amount_minor": 100_000, "idempotency_key": "b-3" });
    let reply = server.post("/v1/disbursements", &merchant.api_key, Some(body)).await;
    assert_v1_error(&reply, 404, "BENEFICIARY_NOT_FOUND");
    let disbursement_id = paid.body["data"]["id"].as_str().unwrap();
    let reply = server
        .get(&format!("/v1/disbursements/{disbursement_id}"), &merchant.api_key)
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000 - 100_000 - 250_000);
}

/// `require_signature` covers every V1 write, a DELETE too:
/// its `X-Signature` is over the (empty) raw body.
#[tokio::test]
async fn a_required_signature_guards_deleting_a_beneficiary() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let created = create(&server, &merchant, bank_beneficiary("1234567890", false)).await;
    let id = created.body["data"]["id"].as_str().unwrap().to_string();
    let patched = server
        .patch_merchant(&merchant.id, json!({ "require_signature": true }))
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);

    let delete = |signature: Option<String>| {
        let mut request = server
            .client
            .delete(server.url(&format!("/v1/beneficiaries/{id}")))
            .header("X-API-Key", &merchant.api_key);
        if let Some(signature) = signature {
            request = request.header("X-Signature", signature);
        }
        async move { into_reply(request.send().await.expect("request sent")).await }
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(merchant.webhook_secret.as_bytes()).unwrap();
    mac.update(b"");
    let signed = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));

    for wrong in [None, Some("sha256=00".to_string())] {
        let reply = delete(wrong).await;
        assert_v1_error(&reply, 401, "INVALID_SIGNATURE");
        assert_eq!(list(&server, &merchant).await.len(), 1);
    }
    let reply = delete(Some(signed)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body, json!({ "success": true, "data": { "deleted": true } }));
    assert!(list(&server, &merchant).await.is_empty());
}

/// serde would read a struct from a JSON array by position: a body must be
/// an object, and an array changes nothing.
#[tokio::test]
async fn an_array_body_is_400_invalid_body_and_changes_nothing() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    server.credit(&merchant.id, 5_000_000).await;
    let array = json!(["k1", "BANK", "BCA", "1234567890", "Budi", null, null, 1000, null, null]);
    for path in ["/v1/disbursements", "/v1/beneficiaries"] {
        let reply = server.post(path, &merchant.api_key, Some(array.clone())).await;
        assert_v1_error(&reply, 400, "INVALID_BODY");
        assert_eq!(
            reply.body["error"]["message"],
            json!("request body must be a JSON object")
        );
    }
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
    assert!(list(&server, &merchant).await.is_empty());
    let listed = server.get("/v1/disbursements", &merchant.api_key).await;
    assert_eq!(listed.body["meta"]["total"], json!(0));
}
