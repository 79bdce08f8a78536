//! Bearer auth, merchant creation with its defaults and overrides, and
//! every refused creation body.

use super::*;
use base64::Engine as _;

/// Merchant creations refused as 400 `INVALID_BODY`: a row's name, its
/// body, and the field its message must name.
fn merchant_creation_refusals() -> Vec<(String, Value, &'static str)> {
    let mut rows = vec![
        ("no name".to_string(), json!({ "settlement_type": "WALLET" }), "name"),
        (
            "blank name".to_string(),
            json!({ "name": "   ", "settlement_type": "WALLET" }),
            "name",
        ),
        (
            "unknown settlement_type".to_string(),
            json!({ "name": "Toko", "settlement_type": "FOO" }),
            "settlement_type",
        ),
    ];
    for value in [json!(5), Value::Null, json!(["WALLET"])] {
        rows.push((
            format!("settlement_type {value}"),
            json!({ "name": "Toko", "settlement_type": value }),
            "settlement_type",
        ));
    }
    rows.extend([
        (
            "fee as a string".to_string(),
            json!({ "name": "Toko", "settlement_type": "WALLET", "fees": { "qris_mdr_bps": "70" } }),
            "fees.qris_mdr_bps",
        ),
        (
            "negative fee".to_string(),
            json!({
                "name": "Toko",
                "settlement_type": "WALLET",
                "fees": { "disbursement_fee_bank_minor": -1 }
            }),
            "fees.disbursement_fee_bank_minor",
        ),
        (
            "zero rate limit".to_string(),
            json!({
                "name": "Toko",
                "settlement_type": "WALLET",
                "limits": { "rate_limit_per_second": 0 }
            }),
            "limits.rate_limit_per_second",
        ),
        (
            "unknown organization".to_string(),
            json!({
                "name": "Toko",
                "settlement_type": "WALLET",
                "organization_id": Uuid::new_v4().to_string()
            }),
            "organization_id",
        ),
        (
            "unknown settlement bank".to_string(),
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
        ),
        (
            "unknown field".to_string(),
            json!({ "name": "Toko", "settlement_type": "WALLET", "colour": "red" }),
            "colour",
        ),
    ]);
    rows
}

#[tokio::test]
async fn every_refused_merchant_creation_is_400_invalid_body_naming_the_field_and_stores_nothing() {
    let server = TestServer::start();
    for (name, body, field) in merchant_creation_refusals() {
        table::row(&name, async {
            let before = server.verify().await["merchants"].as_u64().unwrap();
            let reply = server.admin(Method::POST, "/admin/v1/merchants", Some(body)).await;
            assert_invalid_body_naming(&reply, field);
            assert_eq!(
                server.verify().await["merchants"].as_u64().unwrap(),
                before,
                "a rejected creation must store no merchant"
            );
        })
        .await;
    }
}

#[tokio::test]
async fn admin_request_without_authorization_header_is_401_unauthorized() {
    let server = TestServer::start();
    let reply = sent(server.request(Method::GET, "/admin/v1/ledger/verify")).await;
    assert_v1_error(&reply, 401, "UNAUTHORIZED");

    let reply = sent(
        server
            .request(Method::POST, "/admin/v1/merchants")
            .json(&json!({ "name": "Sneaky", "settlement_type": "WALLET" })),
    )
    .await;
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
        let verify = server.request(Method::GET, "/admin/v1/ledger/verify");
        let reply = sent(verify.bearer_auth(token)).await;
        assert_v1_error(&reply, 401, "UNAUTHORIZED");
    }
    // The right token without the `Bearer ` scheme is not accepted either.
    let verify = server.request(Method::GET, "/admin/v1/ledger/verify");
    let reply = sent(verify.header("Authorization", ADMIN_TOKEN)).await;
    assert_v1_error(&reply, 401, "UNAUTHORIZED");
}

#[tokio::test]
async fn creating_a_merchant_is_201_with_credentials_and_default_settings() {
    let server = TestServer::start();
    let reply = server
        .admin_post(
            "/admin/v1/merchants",
            json!({ "name": "Toko Sinar Jaya", "settlement_type": "WALLET" }),
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
async fn json_followed_by_anything_but_whitespace_is_400_and_changes_nothing() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let post = |path: String, body: &'static str| {
        server
            .client
            .post(server.url(&path))
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
        .admin_post("/admin/v1/settlements/run", json!({ "merchant_id": "bad" }))
        .await;
    assert_invalid_body_naming(&reply, "merchant_id");
}

#[tokio::test]
async fn malformed_merchant_json_is_400_invalid_body() {
    let server = TestServer::start();
    let reply = sent(
        server
            .request(Method::POST, "/admin/v1/merchants")
            .bearer_auth(ADMIN_TOKEN)
            .header("Content-Type", "application/json")
            .body(r#"{"name": "Toko", "settlement_type": "#),
    )
    .await;
    assert_v1_error(&reply, 400, "INVALID_BODY");
    let message = reply.body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("malformed JSON"), "{message}");
    assert_eq!(server.verify().await["merchants"], json!(1));
}
