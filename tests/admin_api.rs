//! The operator API under `/admin/v1/`: bearer auth, merchants,
//! keys, credentials, wallet credits, ledger verification and reference data,
//! spoken to over HTTP against the real binary.

mod support;

use base64::Engine as _;
use reqwest::{Method, StatusCode};
use rsa::pkcs1::EncodeRsaPublicKey;
use rsa::pkcs8::{EncodePublicKey, LineEnding};
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

async fn patch_merchant(server: &TestServer, id: &str, body: Value) -> Reply {
    server
        .admin(Method::PATCH, &format!("/admin/v1/merchants/{id}"), Some(body))
        .await
}

async fn put_public_key(server: &TestServer, id: &str, pem: &str) -> Reply {
    server
        .admin(
            Method::PUT,
            &format!("/admin/v1/merchants/{id}/public-key"),
            Some(json!({ "pem": pem })),
        )
        .await
}

async fn credit_reply(server: &TestServer, id: &str, body: Value) -> Reply {
    server
        .admin(
            Method::POST,
            &format!("/admin/v1/merchants/{id}/wallet/credit"),
            Some(body),
        )
        .await
}

async fn v1_banks(server: &TestServer, api_key: &str) -> Vec<Value> {
    let reply = server.call(Method::GET, "/v1/banks", Some(api_key), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["data"].as_array().expect("data array").clone()
}

async fn v1_ewallet_codes(server: &TestServer, api_key: &str) -> Vec<String> {
    let reply = server.call(Method::GET, "/v1/ewallets", Some(api_key), None).await;
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

/// Creation is expected to fail; nothing may be stored.
async fn assert_creation_rejected(body: Value, field: &str) {
    let server = TestServer::start();
    let before = server.verify().await["merchants"].as_u64().unwrap();
    let reply = server.admin(Method::POST, "/admin/v1/merchants", Some(body)).await;
    assert_invalid_body_naming(&reply, field);
    assert_eq!(
        server.verify().await["merchants"].as_u64().unwrap(),
        before,
        "a rejected creation must store no merchant"
    );
}

fn new_rsa_public_key(bits: usize) -> RsaPublicKey {
    let private = RsaPrivateKey::new(&mut rand::thread_rng(), bits).expect("RSA key generated");
    RsaPublicKey::from(&private)
}

#[tokio::test]
async fn admin_request_without_authorization_header_is_401_unauthorized() {
    let server = TestServer::start();
    let response = server
        .client
        .get(format!("{}/admin/v1/ledger/verify", server.base))
        .send()
        .await
        .unwrap();
    assert_v1_error(&into_reply(response).await, 401, "UNAUTHORIZED");

    let response = server
        .client
        .post(format!("{}/admin/v1/merchants", server.base))
        .json(&json!({ "name": "Sneaky", "settlement_type": "WALLET" }))
        .send()
        .await
        .unwrap();
    let reply = into_reply(response).await;
    assert_v1_error(&reply, 401, "UNAUTHORIZED");
    assert_eq!(sorted_keys(&reply.body), strings(&["error", "success"]));
    assert_eq!(
        server.verify().await["merchants"],
        json!(1),
        "only the demo merchant exists"
    );
}

#[tokio::test]
async fn admin_request_with_wrong_bearer_token_is_401_unauthorized() {
    let server = TestServer::start();
    for token in ["wrong-token", "test-admin-token-but-longer", "test-admin-toke"] {
        let response = server
            .client
            .get(format!("{}/admin/v1/ledger/verify", server.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_v1_error(&into_reply(response).await, 401, "UNAUTHORIZED");
    }
    // The right token without the `Bearer ` scheme is not accepted either.
    let response = server
        .client
        .get(format!("{}/admin/v1/ledger/verify", server.base))
        .header("Authorization", ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_v1_error(&into_reply(response).await, 401, "UNAUTHORIZED");
}

#[tokio::test]
async fn creating_a_merchant_is_201_with_credentials_and_default_settings() {
    let server = TestServer::start();
    let reply = server
        .admin(
            Method::POST,
            "/admin/v1/merchants",
            Some(json!({ "name": "Toko Sinar Jaya", "settlement_type": "WALLET" })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    let data = &reply.body["data"];
    assert_eq!(sorted_keys(data), strings(&["credentials", "merchant"]));

    let credentials = &data["credentials"];
    assert_eq!(
        sorted_keys(credentials),
        strings(&["api_key", "client_id", "client_secret", "webhook_secret"])
    );
    let api_key = credentials["api_key"].as_str().expect("api_key string");
    assert_eq!(api_key.len(), 64, "{api_key}");
    assert!(
        api_key.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)),
        "api_key must be lowercase hex: {api_key}"
    );
    let webhook_secret = credentials["webhook_secret"].as_str().expect("string");
    let encoded = webhook_secret
        .strip_prefix("whsec_")
        .unwrap_or_else(|| panic!("webhook_secret must start with whsec_: {webhook_secret}"));
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .expect("webhook secret is base64");
    assert_eq!(decoded.len(), 32);
    for field in ["client_id", "client_secret"] {
        assert!(
            credentials[field].as_str().is_some_and(|s| !s.is_empty()),
            "{field}: {credentials}"
        );
    }

    let merchant = &data["merchant"];
    assert!(is_uuid(&merchant["id"]), "{merchant}");
    assert!(is_uuid(&merchant["organization_id"]), "{merchant}");
    assert_eq!(merchant["name"], json!("Toko Sinar Jaya"));
    assert_eq!(merchant["settlement_type"], json!("WALLET"));
    assert_eq!(merchant["fees"], default_fees());
    assert_eq!(merchant["limits"], default_limits());
    assert_eq!(merchant["is_active"], json!(true));
    assert_eq!(merchant["require_signature"], json!(false));
    assert_eq!(merchant["has_public_key"], json!(false));
    assert_eq!(merchant["default_notify_url"], Value::Null);
    let created_at = merchant["created_at"].as_str().expect("created_at string");
    assert!(created_at.ends_with('Z') && created_at.contains('T'), "{created_at}");

    // The stored view matches, and never shows a secret again.
    let id = merchant["id"].as_str().unwrap();
    let stored = get_merchant(&server, id).await;
    assert_eq!(&stored, merchant);
    let text = stored.to_string();
    for secret in ["api_key", "client_secret", "webhook_secret"] {
        let value = credentials[secret].as_str().unwrap();
        assert!(!text.contains(value), "{secret} leaked in {text}");
    }
}

#[tokio::test]
async fn fee_and_limit_overrides_given_at_creation_are_applied() {
    let server = TestServer::start();
    let reply = server
        .admin(
            Method::POST,
            "/admin/v1/merchants",
            Some(json!({
                "name": "Warung Override",
                "settlement_type": "MANUAL",
                "settlement_bank": {
                    "bank_short_code": "BCA",
                    "account_number": "1234567890",
                    "account_name": "Warung Override"
                },
                "fees": { "qris_mdr_bps": 150, "platform_fee_minor": 10000 },
                "limits": { "per_transaction_minor": 100000000, "rate_limit_burst": 50 },
                "default_notify_url": "https://merchant.example/hooks",
                "require_signature": true
            })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let merchant = &reply.body["data"]["merchant"];
    let mut fees = default_fees();
    fees["qris_mdr_bps"] = json!(150);
    fees["platform_fee_minor"] = json!(10000);
    assert_eq!(merchant["fees"], fees);
    let mut limits = default_limits();
    limits["per_transaction_minor"] = json!(100000000);
    limits["rate_limit_burst"] = json!(50);
    assert_eq!(merchant["limits"], limits);
    assert_eq!(merchant["settlement_type"], json!("MANUAL"));
    assert_eq!(
        merchant["settlement_bank"],
        json!({
            "bank_short_code": "BCA",
            "account_number": "1234567890",
            "account_name": "Warung Override"
        })
    );
    assert_eq!(merchant["default_notify_url"], json!("https://merchant.example/hooks"));
    assert_eq!(merchant["require_signature"], json!(true));
    let stored = get_merchant(&server, merchant["id"].as_str().unwrap()).await;
    assert_eq!(stored["fees"], fees);
    assert_eq!(stored["limits"], limits);
}

#[tokio::test]
async fn merchant_without_name_is_400_invalid_body_naming_name() {
    assert_creation_rejected(json!({ "settlement_type": "WALLET" }), "name").await;
}

#[tokio::test]
async fn merchant_with_blank_name_is_400_invalid_body_naming_name() {
    assert_creation_rejected(json!({ "name": "   ", "settlement_type": "WALLET" }), "name").await;
}

#[tokio::test]
async fn merchant_with_unknown_settlement_type_is_400_invalid_body() {
    assert_creation_rejected(json!({ "name": "Toko", "settlement_type": "FOO" }), "settlement_type").await;
}

#[tokio::test]
async fn merchant_with_a_settlement_type_that_is_not_a_string_is_400_naming_it() {
    for value in [json!(5), Value::Null, json!(["WALLET"])] {
        assert_creation_rejected(json!({ "name": "Toko", "settlement_type": value }), "settlement_type").await;
    }
}

#[tokio::test]
async fn json_followed_by_anything_but_whitespace_is_400_and_changes_nothing() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let post = |path: String, body: &'static str| {
        server
            .client
            .post(format!("{}{path}", server.base))
            .bearer_auth(ADMIN_TOKEN)
            .header("Content-Type", "application/json")
            .body(body)
            .send()
    };
    let credit = format!("/admin/v1/merchants/{}/wallet/credit", merchant.id);
    for body in [
        r#"{"amount_minor":1,"reason":"x"}garbage"#,
        r#"{"amount_minor":1,"reason":"x"}{"a":1}"#,
    ] {
        let reply = into_reply(post(credit.clone(), body).await.unwrap()).await;
        assert_v1_error(&reply, 400, "INVALID_BODY");
    }
    assert_eq!(server.balance(&merchant.api_key).await, 0);
    let created = into_reply(
        post(
            "/admin/v1/merchants".into(),
            r#"{"name":"x","settlement_type":"WALLET"} trailing"#,
        )
        .await
        .unwrap(),
    )
    .await;
    assert_v1_error(&created, 400, "INVALID_BODY");
    assert_eq!(
        server.verify().await["merchants"],
        json!(2),
        "the demo merchant and this test's"
    );
    // Trailing whitespace is still JSON.
    let spaced = into_reply(post(credit, "{\"amount_minor\":1,\"reason\":\"x\"} \n").await.unwrap()).await;
    assert_eq!(spaced.status, StatusCode::OK, "{}", spaced.body);
}

#[tokio::test]
async fn a_settlement_run_for_a_merchant_id_that_is_not_a_uuid_is_400_invalid_body() {
    let server = TestServer::start();
    let reply = server
        .admin(
            Method::POST,
            "/admin/v1/settlements/run",
            Some(json!({ "merchant_id": "bad" })),
        )
        .await;
    assert_invalid_body_naming(&reply, "merchant_id");
}

#[tokio::test]
async fn merchant_with_a_string_fee_is_400_invalid_body_naming_the_fee() {
    assert_creation_rejected(
        json!({ "name": "Toko", "settlement_type": "WALLET", "fees": { "qris_mdr_bps": "70" } }),
        "fees.qris_mdr_bps",
    )
    .await;
}

#[tokio::test]
async fn merchant_with_a_negative_fee_is_400_invalid_body_naming_the_fee() {
    assert_creation_rejected(
        json!({
            "name": "Toko",
            "settlement_type": "WALLET",
            "fees": { "disbursement_fee_bank_minor": -1 }
        }),
        "fees.disbursement_fee_bank_minor",
    )
    .await;
}

#[tokio::test]
async fn merchant_with_a_zero_rate_limit_is_400_invalid_body_naming_the_limit() {
    assert_creation_rejected(
        json!({
            "name": "Toko",
            "settlement_type": "WALLET",
            "limits": { "rate_limit_per_second": 0 }
        }),
        "limits.rate_limit_per_second",
    )
    .await;
}

#[tokio::test]
async fn merchant_with_an_unknown_organization_is_400_invalid_body() {
    assert_creation_rejected(
        json!({
            "name": "Toko",
            "settlement_type": "WALLET",
            "organization_id": Uuid::new_v4().to_string()
        }),
        "organization_id",
    )
    .await;
}

#[tokio::test]
async fn merchant_with_an_unknown_settlement_bank_is_400_invalid_body() {
    assert_creation_rejected(
        json!({
            "name": "Toko",
            "settlement_type": "MANUAL",
            "settlement_bank": {
                "bank_short_code": "NOSUCHBANK",
                "account_number": "1234567890",
                "account_name": "Toko"
            }
        }),
        "settlement_bank.bank_short_code",
    )
    .await;
}

#[tokio::test]
async fn merchant_with_an_unknown_field_is_400_invalid_body_naming_it() {
    assert_creation_rejected(
        json!({ "name": "Toko", "settlement_type": "WALLET", "colour": "red" }),
        "colour",
    )
    .await;
}

#[tokio::test]
async fn malformed_merchant_json_is_400_invalid_body() {
    let server = TestServer::start();
    let response = server
        .client
        .post(format!("{}/admin/v1/merchants", server.base))
        .bearer_auth(ADMIN_TOKEN)
        .header("Content-Type", "application/json")
        .body(r#"{"name": "Toko", "settlement_type": "#)
        .send()
        .await
        .unwrap();
    let reply = into_reply(response).await;
    assert_v1_error(&reply, 400, "INVALID_BODY");
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("malformed JSON"), "{message}");
    assert_eq!(server.verify().await["merchants"], json!(1));
}

#[tokio::test]
async fn patching_some_fees_and_limits_keeps_the_other_fields() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let original = get_merchant(&server, &merchant.id).await;

    let reply = patch_merchant(
        &server,
        &merchant.id,
        json!({ "fees": { "qris_mdr_bps": 150 }, "limits": { "daily_minor": 123456789 } }),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let mut fees = default_fees();
    fees["qris_mdr_bps"] = json!(150);
    let mut limits = default_limits();
    limits["daily_minor"] = json!(123456789);
    assert_eq!(reply.body["data"]["fees"], fees);
    assert_eq!(reply.body["data"]["limits"], limits);

    // A second partial change keeps the first.
    let reply = patch_merchant(&server, &merchant.id, json!({ "fees": { "platform_fee_minor": 5000 } })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    fees["platform_fee_minor"] = json!(5000);
    let stored = get_merchant(&server, &merchant.id).await;
    assert_eq!(stored["fees"], fees);
    assert_eq!(stored["limits"], limits);
    for field in [
        "id",
        "name",
        "settlement_type",
        "organization_id",
        "client_id",
        "is_active",
        "require_signature",
        "default_notify_url",
        "created_at",
    ] {
        assert_eq!(stored[field], original[field], "{field} changed");
    }

    // An invalid change is refused whole.
    let reply = patch_merchant(
        &server,
        &merchant.id,
        json!({ "fees": { "qris_mdr_bps": 1 }, "limits": { "rate_limit_burst": 0 } }),
    )
    .await;
    assert_invalid_body_naming(&reply, "limits.rate_limit_burst");
    let stored = get_merchant(&server, &merchant.id).await;
    assert_eq!(stored["fees"], fees);
    assert_eq!(stored["limits"], limits);

    // No flat fee above the largest order (a fee near i64::MAX overflowed
    // the settlement arithmetic).
    let reply = patch_merchant(
        &server,
        &merchant.id,
        json!({ "fees": { "disbursement_fee_bank_minor": 1_000_000_000_000i64 } }),
    )
    .await;
    assert_invalid_body_naming(&reply, "fees.disbursement_fee_bank_minor");
    assert_eq!(get_merchant(&server, &merchant.id).await["fees"], fees);
}

#[tokio::test]
async fn default_notify_url_is_set_then_cleared_with_null() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let url = "https://merchant.example/webhooks/paygate";

    let reply = patch_merchant(&server, &merchant.id, json!({ "default_notify_url": url })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["default_notify_url"], json!(url));

    // Absent means unchanged.
    let reply = patch_merchant(&server, &merchant.id, json!({ "require_signature": true })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["default_notify_url"], json!(url));
    assert_eq!(reply.body["data"]["require_signature"], json!(true));

    let reply = patch_merchant(&server, &merchant.id, json!({ "default_notify_url": null })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["default_notify_url"], Value::Null);
    assert_eq!(
        get_merchant(&server, &merchant.id).await["default_notify_url"],
        Value::Null
    );

    let reply = patch_merchant(&server, &merchant.id, json!({ "default_notify_url": "ftp://nope" })).await;
    assert_invalid_body_naming(&reply, "default_notify_url");
}

#[tokio::test]
async fn deactivated_merchant_gets_403_merchant_inactive_until_reactivated() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    assert_eq!(server.balance(&merchant.api_key).await, 0);

    let reply = patch_merchant(&server, &merchant.id, json!({ "is_active": false })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["is_active"], json!(false));
    let reply = server
        .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
        .await;
    assert_v1_error(&reply, 403, "MERCHANT_INACTIVE");

    let reply = patch_merchant(&server, &merchant.id, json!({ "is_active": true })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["is_active"], json!(true));
    let reply = server
        .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

#[tokio::test]
async fn unknown_merchant_id_is_404_merchant_not_found() {
    let server = TestServer::start();
    let id = Uuid::new_v4();
    let reply = patch_merchant(&server, &id.to_string(), json!({ "is_active": false })).await;
    assert_v1_error(&reply, 404, "MERCHANT_NOT_FOUND");
    let reply = server
        .admin(Method::GET, &format!("/admin/v1/merchants/{id}"), None)
        .await;
    assert_v1_error(&reply, 404, "MERCHANT_NOT_FOUND");
    let reply = server
        .admin(
            Method::POST,
            &format!("/admin/v1/merchants/{id}/rotate-credentials"),
            None,
        )
        .await;
    assert_v1_error(&reply, 404, "MERCHANT_NOT_FOUND");
    let reply = credit_reply(&server, &id.to_string(), json!({ "amount_minor": 100, "reason": "x" })).await;
    assert_v1_error(&reply, 404, "MERCHANT_NOT_FOUND");
}

#[tokio::test]
async fn non_uuid_merchant_id_is_400_invalid_id() {
    let server = TestServer::start();
    let reply = patch_merchant(&server, "not-a-uuid", json!({ "is_active": false })).await;
    assert_v1_error(&reply, 400, "INVALID_ID");
    let reply = server.admin(Method::GET, "/admin/v1/merchants/12345", None).await;
    assert_v1_error(&reply, 400, "INVALID_ID");
}

#[tokio::test]
async fn public_key_is_accepted_as_spki_and_as_pkcs1_pem() {
    let server = TestServer::start();
    let key = new_rsa_public_key(2048);
    let spki = key.to_public_key_pem(LineEnding::LF).unwrap();
    let pkcs1 = key.to_pkcs1_pem(LineEnding::LF).unwrap();
    assert!(spki.starts_with("-----BEGIN PUBLIC KEY-----"));
    assert!(pkcs1.starts_with("-----BEGIN RSA PUBLIC KEY-----"));

    for pem in [spki, pkcs1] {
        let merchant = server.create_wallet_merchant().await;
        assert_eq!(
            get_merchant(&server, &merchant.id).await["has_public_key"],
            json!(false)
        );
        let reply = put_public_key(&server, &merchant.id, &pem).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.body["data"]["id"], json!(merchant.id));
        assert_eq!(reply.body["data"]["has_public_key"], json!(true));
        assert_eq!(get_merchant(&server, &merchant.id).await["has_public_key"], json!(true));
    }
}

#[tokio::test]
async fn public_key_under_2048_bits_or_garbage_is_400_invalid_body() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let small = new_rsa_public_key(1024).to_public_key_pem(LineEnding::LF).unwrap();
    let reply = put_public_key(&server, &merchant.id, &small).await;
    assert_invalid_body_naming(&reply, "pem");

    for garbage in [
        "not a key at all",
        "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
    ] {
        let reply = put_public_key(&server, &merchant.id, garbage).await;
        assert_invalid_body_naming(&reply, "pem");
    }
    assert_eq!(
        get_merchant(&server, &merchant.id).await["has_public_key"],
        json!(false)
    );
    let reply = put_public_key(&server, &Uuid::new_v4().to_string(), &small).await;
    assert_v1_error(&reply, 404, "MERCHANT_NOT_FOUND");
}

#[tokio::test]
async fn rotating_credentials_kills_the_old_api_key_at_once() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    assert_eq!(server.balance(&merchant.api_key).await, 0);

    let reply = server
        .admin(
            Method::POST,
            &format!("/admin/v1/merchants/{}/rotate-credentials", merchant.id),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let fresh = &reply.body["data"];
    assert_eq!(
        sorted_keys(fresh),
        strings(&["api_key", "client_id", "client_secret", "webhook_secret"])
    );
    let new_key = fresh["api_key"].as_str().unwrap();
    assert_eq!(new_key.len(), 64);
    assert!(new_key.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)));
    assert_ne!(new_key, merchant.api_key);
    assert_eq!(fresh["client_id"], json!(merchant.client_id));
    assert_ne!(fresh["client_secret"], json!(merchant.client_secret));
    assert_ne!(fresh["webhook_secret"], json!(merchant.webhook_secret));
    assert!(fresh["webhook_secret"].as_str().unwrap().starts_with("whsec_"));

    let reply = server
        .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
        .await;
    assert_v1_error(&reply, 401, "INVALID_API_KEY");
    let reply = server.call(Method::GET, "/v1/balance", Some(new_key), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["merchant_id"], json!(merchant.id));
}

#[tokio::test]
async fn wallet_credit_returns_the_running_balance() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;

    let reply = credit_reply(
        &server,
        &merchant.id,
        json!({ "amount_minor": 1000000, "reason": "top up" }),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    assert_eq!(
        reply.body["data"],
        json!({ "merchant_id": merchant.id, "balance_minor": 1000000 })
    );

    let reply = credit_reply(
        &server,
        &merchant.id,
        json!({ "amount_minor": 250, "reason": "second top up", "idempotency_key": "topup-2" }),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        reply.body["data"],
        json!({ "merchant_id": merchant.id, "balance_minor": 1000250 })
    );
    assert_eq!(server.balance(&merchant.api_key).await, 1000250);
}

#[tokio::test]
async fn wallet_credit_of_zero_or_less_is_400_invalid_body() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    for amount in [0, -500] {
        let reply = credit_reply(
            &server,
            &merchant.id,
            json!({ "amount_minor": amount, "reason": "nothing" }),
        )
        .await;
        assert_invalid_body_naming(&reply, "amount_minor");
    }
    let reply = credit_reply(&server, &merchant.id, json!({ "amount_minor": 100 })).await;
    assert_invalid_body_naming(&reply, "reason");
    assert_eq!(server.balance(&merchant.api_key).await, 0);
}

#[tokio::test]
async fn wallet_credit_to_a_manual_merchant_is_403_not_wallet_merchant() {
    let server = TestServer::start();
    let merchant = server.create_merchant_with("MANUAL", json!({})).await;
    let reply = credit_reply(
        &server,
        &merchant.id,
        json!({ "amount_minor": 1000, "reason": "top up" }),
    )
    .await;
    // The code's status everywhere, as on `GET /v1/balance`.
    assert_v1_error(&reply, 403, "NOT_WALLET_MERCHANT");
}

#[tokio::test]
async fn repeated_wallet_credit_idempotency_key_is_409_and_moves_no_money() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let body = json!({ "amount_minor": 70000, "reason": "top up", "idempotency_key": "credit-1" });
    let reply = credit_reply(&server, &merchant.id, body.clone()).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["balance_minor"], json!(70000));
    let entries = server.verify().await["entries"].as_u64().unwrap();

    // Same key again, even with another amount: refused, nothing moves.
    for amount in [70000, 99999] {
        let mut repeat = body.clone();
        repeat["amount_minor"] = json!(amount);
        let reply = credit_reply(&server, &merchant.id, repeat).await;
        assert_v1_error(&reply, 409, "DUPLICATE_IDEMPOTENCY_KEY");
        assert_eq!(
            reply.body["data"],
            json!({ "merchant_id": merchant.id, "balance_minor": 70000 })
        );
    }
    assert_eq!(server.balance(&merchant.api_key).await, 70000);
    let report = server.verify().await;
    assert_eq!(report["entries"].as_u64().unwrap(), entries);
    assert_eq!(report["balanced"], json!(true));
}

#[tokio::test]
async fn ledger_verify_counts_credits_and_balances_wallet_against_funding() {
    let server = TestServer::start();
    let before = server.verify().await;
    assert_eq!(before["balanced"], json!(true), "{before}");
    assert_eq!(before["problems"], json!([]));
    let entries_before = before["entries"].as_u64().expect("entries integer");
    let merchants_before = before["merchants"].as_u64().expect("merchants integer");
    // The sandbox demo merchant and its funding entry.
    assert!(merchants_before >= 1 && entries_before >= 1, "{before}");
    let wallet_before = before["accounts"]["wallet"].as_i64().unwrap();

    let wallet = server.create_wallet_merchant().await;
    server.create_merchant_with("MANUAL", json!({})).await;
    server.credit(&wallet.id, 12345).await;
    server.credit(&wallet.id, 55).await;

    let after = server.verify().await;
    assert_eq!(
        sorted_keys(&after),
        strings(&["accounts", "balanced", "entries", "merchants", "problems"])
    );
    assert_eq!(after["balanced"], json!(true), "{after}");
    assert_eq!(after["problems"], json!([]));
    assert_eq!(after["entries"].as_u64().unwrap(), entries_before + 2);
    assert_eq!(after["merchants"].as_u64().unwrap(), merchants_before + 2);
    let accounts = after["accounts"].as_object().expect("accounts object");
    let wallet_total = accounts["wallet"].as_i64().unwrap();
    let funding_total = accounts["funding"].as_i64().unwrap();
    assert_eq!(wallet_total, wallet_before + 12400);
    assert_eq!(wallet_total + funding_total, 0, "{after}");
    for (name, value) in accounts {
        if name != "wallet" && name != "funding" {
            assert_eq!(value, &json!(0), "account {name} moved: {after}");
        }
    }
}

/// Two wallets credited near i64::MAX: each book is fine, but the
/// platform-wide totals pass the i64 range. They are reported exactly (as
/// decimal strings), not wrapped around.
#[tokio::test]
async fn platform_totals_past_the_i64_range_are_reported_exactly() {
    let server = TestServer::start();
    let wallet_before = server.verify().await["accounts"]["wallet"].as_i64().unwrap() as i128;
    let big = i64::MAX - 1_000;
    for _ in 0..2 {
        let merchant = server.create_wallet_merchant().await;
        server.credit(&merchant.id, big).await;
    }
    let report = server.verify().await;
    assert_eq!(report["balanced"], json!(true), "{report}");
    let wallet = wallet_before + 2 * big as i128;
    assert_eq!(report["accounts"]["wallet"], json!(wallet.to_string()), "{report}");
    assert_eq!(report["accounts"]["funding"], json!((-wallet).to_string()), "{report}");
}

#[tokio::test]
async fn organization_is_created_and_merchants_can_belong_to_it() {
    let server = TestServer::start();
    let reply = server
        .admin(
            Method::POST,
            "/admin/v1/organizations",
            Some(json!({ "name": "PT Aggregator Nusantara" })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let organization = &reply.body["data"];
    assert_eq!(sorted_keys(organization), strings(&["created_at", "id", "name"]));
    assert!(is_uuid(&organization["id"]));
    assert_eq!(organization["name"], json!("PT Aggregator Nusantara"));
    assert!(organization["created_at"].as_str().is_some_and(|t| t.ends_with('Z')));

    let id = organization["id"].as_str().unwrap();
    let reply = server
        .admin(
            Method::POST,
            "/admin/v1/merchants",
            Some(json!({ "name": "Toko Anak", "settlement_type": "WALLET", "organization_id": id })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["merchant"]["organization_id"], json!(id));

    // A merchant without one belongs elsewhere.
    let other = server.create_wallet_merchant().await;
    assert_ne!(get_merchant(&server, &other.id).await["organization_id"], json!(id));
}

#[tokio::test]
async fn organization_with_empty_name_is_400_invalid_body() {
    let server = TestServer::start();
    for body in [json!({ "name": "" }), json!({ "name": "  " }), json!({})] {
        let reply = server.admin(Method::POST, "/admin/v1/organizations", Some(body)).await;
        assert_invalid_body_naming(&reply, "name");
    }
}

#[tokio::test]
async fn disabled_bank_leaves_v1_banks_and_returns_with_the_same_id() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let banks = v1_banks(&server, &merchant.api_key).await;
    let bni = bank_by_code(&banks, "BNI").expect("BNI listed").clone();

    let reply = server
        .admin(Method::PUT, "/admin/v1/banks/BNI", Some(json!({ "is_enabled": false })))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let mut disabled = bni.clone();
    disabled["is_enabled"] = json!(false);
    assert_eq!(reply.body["data"], disabled);
    assert_eq!(
        sorted_keys(&reply.body["data"]),
        strings(&["id", "is_enabled", "name", "short_code"])
    );
    let banks = v1_banks(&server, &merchant.api_key).await;
    assert_eq!(banks.len(), 9);
    assert!(bank_by_code(&banks, "BNI").is_none());

    let reply = server
        .admin(Method::PUT, "/admin/v1/banks/BNI", Some(json!({ "is_enabled": true })))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"], bni);
    let banks = v1_banks(&server, &merchant.api_key).await;
    assert_eq!(banks.len(), 10);
    assert_eq!(bank_by_code(&banks, "BNI"), Some(&bni));
}

#[tokio::test]
async fn new_bank_needs_a_name_and_is_listed_once_added() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let reply = server
        .admin(
            Method::PUT,
            "/admin/v1/banks/SEABANK",
            Some(json!({ "is_enabled": true })),
        )
        .await;
    assert_invalid_body_naming(&reply, "name");
    assert_eq!(v1_banks(&server, &merchant.api_key).await.len(), 10);

    let reply = server
        .admin(
            Method::PUT,
            "/admin/v1/banks/SEABANK",
            Some(json!({ "is_enabled": true, "name": "Bank Seabank Indonesia" })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let bank = reply.body["data"].clone();
    assert_eq!(sorted_keys(&bank), strings(&["id", "is_enabled", "name", "short_code"]));
    assert!(is_uuid(&bank["id"]));
    assert_eq!(bank["name"], json!("Bank Seabank Indonesia"));
    assert_eq!(bank["short_code"], json!("SEABANK"));
    assert_eq!(bank["is_enabled"], json!(true));

    let banks = v1_banks(&server, &merchant.api_key).await;
    assert_eq!(banks.len(), 11);
    assert_eq!(bank_by_code(&banks, "SEABANK"), Some(&bank));
}

#[tokio::test]
async fn disabled_ewallet_is_omitted_from_v1_ewallets_at_once() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    // Fill the one-hour cache first.
    let codes = v1_ewallet_codes(&server, &merchant.api_key).await;
    assert!(codes.contains(&"OVO".to_string()), "{codes:?}");
    assert_eq!(codes.len(), 7);

    let reply = server
        .admin(
            Method::PUT,
            "/admin/v1/ewallets/OVO",
            Some(json!({ "is_enabled": false })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["short_code"], json!("OVO"));
    assert_eq!(reply.body["data"]["is_enabled"], json!(false));
    let codes = v1_ewallet_codes(&server, &merchant.api_key).await;
    assert_eq!(codes.len(), 6, "{codes:?}");
    assert!(!codes.contains(&"OVO".to_string()), "{codes:?}");

    let reply = server
        .admin(
            Method::PUT,
            "/admin/v1/ewallets/OVO",
            Some(json!({ "is_enabled": true })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let codes = v1_ewallet_codes(&server, &merchant.api_key).await;
    assert_eq!(codes.len(), 7);
    assert!(codes.contains(&"OVO".to_string()), "{codes:?}");
}

#[tokio::test]
async fn unknown_ewallet_code_is_404_ewallet_not_found() {
    let server = TestServer::start();
    let reply = server
        .admin(
            Method::PUT,
            "/admin/v1/ewallets/PAYPAL",
            Some(json!({ "is_enabled": true })),
        )
        .await;
    assert_v1_error(&reply, 404, "EWALLET_NOT_FOUND");
}

#[tokio::test]
async fn merchant_balance_disabled_bank_and_admin_api_survive_a_restart() {
    let mut server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    server.credit(&merchant.id, 424242).await;
    let reply = patch_merchant(
        &server,
        &merchant.id,
        json!({ "fees": { "qris_mdr_bps": 99 }, "default_notify_url": "https://m.example/h" }),
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let reply = server
        .admin(
            Method::PUT,
            "/admin/v1/banks/PANIN",
            Some(json!({ "is_enabled": false })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let view_before = get_merchant(&server, &merchant.id).await;
    let report_before = server.verify().await;

    server.stop();
    server.restart();

    assert_eq!(get_merchant(&server, &merchant.id).await, view_before);
    assert_eq!(server.balance(&merchant.api_key).await, 424242);
    let banks = v1_banks(&server, &merchant.api_key).await;
    assert_eq!(banks.len(), 9);
    assert!(bank_by_code(&banks, "PANIN").is_none());
    assert_eq!(server.verify().await, report_before);

    // The admin API still writes.
    let other = server.create_wallet_merchant().await;
    assert_eq!(server.credit(&other.id, 1).await, 1);
    assert_eq!(server.credit(&merchant.id, 8).await, 424250);
    assert_eq!(server.verify().await["balanced"], json!(true));
}
