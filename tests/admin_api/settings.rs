//! A merchant's settings after creation: patches, activation, unknown ids,
//! public keys and credential rotation.

use super::*;
use rsa::pkcs1::EncodeRsaPublicKey;
use rsa::pkcs8::{EncodePublicKey, LineEnding};

#[tokio::test]
async fn patching_some_fees_and_limits_keeps_the_other_fields() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let original = get_merchant(&server, &merchant.id).await;

    let reply = server
        .patch_merchant(
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
    let reply = server
        .patch_merchant(&merchant.id, json!({ "fees": { "platform_fee_minor": 5000 } }))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    fees["platform_fee_minor"] = json!(5000);
    let stored = get_merchant(&server, &merchant.id).await;
    assert_eq!(stored["fees"], fees);
    assert_eq!(stored["limits"], limits);
    let unchanged =
        "id name settlement_type organization_id client_id is_active require_signature default_notify_url created_at";
    for field in unchanged.split_whitespace() {
        assert_eq!(stored[field], original[field], "{field} changed");
    }

    // An invalid change is refused whole.
    let reply = server
        .patch_merchant(
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
    let reply = server
        .patch_merchant(
            &merchant.id,
            json!({ "fees": { "disbursement_fee_bank_minor": 1_000_000_000_000i64 } }),
        )
        .await;
    assert_invalid_body_naming(&reply, "fees.disbursement_fee_bank_minor");
    assert_eq!(get_merchant(&server, &merchant.id).await["fees"], fees);
}

#[tokio::test]
async fn default_notify_url_is_set_then_cleared_with_null() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let url = "https://merchant.example/webhooks/paygate";

    let reply = server
        .patch_merchant(&merchant.id, json!({ "default_notify_url": url }))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["default_notify_url"], json!(url));

    // Absent means unchanged.
    let reply = server
        .patch_merchant(&merchant.id, json!({ "require_signature": true }))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["default_notify_url"], json!(url));
    assert_eq!(reply.body["data"]["require_signature"], json!(true));

    let reply = server
        .patch_merchant(&merchant.id, json!({ "default_notify_url": null }))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["default_notify_url"], Value::Null);
    assert_eq!(
        get_merchant(&server, &merchant.id).await["default_notify_url"],
        Value::Null
    );

    let reply = server
        .patch_merchant(&merchant.id, json!({ "default_notify_url": "ftp://nope" }))
        .await;
    assert_invalid_body_naming(&reply, "default_notify_url");
}

#[tokio::test]
async fn deactivated_merchant_gets_403_merchant_inactive_until_reactivated() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    assert_eq!(server.balance(&merchant.api_key).await, 0);

    let reply = server.patch_merchant(&merchant.id, json!({ "is_active": false })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["is_active"], json!(false));
    let reply = server.get("/v1/balance", &merchant.api_key).await;
    assert_v1_error(&reply, 403, "MERCHANT_INACTIVE");

    let reply = server.patch_merchant(&merchant.id, json!({ "is_active": true })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["is_active"], json!(true));
    let reply = server.get("/v1/balance", &merchant.api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

#[tokio::test]
async fn unknown_merchant_id_is_404_merchant_not_found() {
    let server = TestServer::start();
    let id = Uuid::new_v4();
    let reply = server
        .patch_merchant(&id.to_string(), json!({ "is_active": false }))
        .await;
    assert_v1_error(&reply, 404, "MERCHANT_NOT_FOUND");
    let reply = server
        .admin(Method::GET, &format!("/admin/v1/merchants/{id}"), None)
        .await;
    assert_v1_error(&reply, 404, "MERCHANT_NOT_FOUND");
    let reply = server.rotate_credentials(&id.to_string()).await;
    assert_v1_error(&reply, 404, "MERCHANT_NOT_FOUND");
    let reply = credit_reply(&server, &id.to_string(), json!({ "amount_minor": 100, "reason": "x" })).await;
    assert_v1_error(&reply, 404, "MERCHANT_NOT_FOUND");
}

#[tokio::test]
async fn non_uuid_merchant_id_is_400_invalid_id() {
    let server = TestServer::start();
    let reply = server.patch_merchant("not-a-uuid", json!({ "is_active": false })).await;
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
    let (server, merchant) = TestServer::start_with_merchant().await;
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
    let (server, merchant) = TestServer::start_with_merchant().await;
    assert_eq!(server.balance(&merchant.api_key).await, 0);

    let reply = server.rotate_credentials(&merchant.id).await;
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

    let reply = server.get("/v1/balance", &merchant.api_key).await;
    assert_v1_error(&reply, 401, "INVALID_API_KEY");
    let reply = server.get("/v1/balance", new_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["merchant_id"], json!(merchant.id));
}
