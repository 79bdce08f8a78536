//! The optional, and the required, `X-Signature` of a disbursement request.

use super::*;

#[tokio::test]
async fn correct_x_signature_is_201_and_a_wrong_one_is_401_invalid_signature_creating_nothing() {
    let funding = 10_000_000;
    let (server, merchant) = funded_server(SLOW, funding).await;

    let body = serde_json::to_vec(&bank_body("signed-1", 1_000_000)).unwrap();
    let signature = hmac_signature(&merchant.webhook_secret, &body);
    let reply = post_raw(&server, &merchant, &body, Some(&signature)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["idempotency_key"], json!("signed-1"));
    let after = funding - 1_000_000 - BANK_FEE;
    assert_eq!(server.balance(&merchant.api_key).await, after);

    let body = serde_json::to_vec(&bank_body("signed-2", 1_000_000)).unwrap();
    let tampered = serde_json::to_vec(&bank_body("signed-2", 2_000_000)).unwrap();
    let other_secret = server.create_wallet_merchant().await.webhook_secret;
    for (raw, signature) in [
        (&body, hmac_signature(&other_secret, &body)),
        (&tampered, hmac_signature(&merchant.webhook_secret, &body)),
        (&body, "sha256=deadbeef".to_string()),
        (&body, "sha256=not-hex".to_string()),
        // The digest without its `sha256=` prefix.
        (
            &body,
            hmac_signature(&merchant.webhook_secret, &body)
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
    let funding = 10_000_000;
    let (server, merchant) = funded_server(SLOW, funding).await;
    patch_merchant(&server, &merchant.id, json!({ "require_signature": true })).await;

    let body = serde_json::to_vec(&bank_body("must-sign", 1_000_000)).unwrap();
    let reply = post_raw(&server, &merchant, &body, None).await;
    assert_v1_error(&reply, 401, "INVALID_SIGNATURE");
    let reply = post_raw(&server, &merchant, &body, Some("sha256=00")).await;
    assert_v1_error(&reply, 401, "INVALID_SIGNATURE");
    assert_eq!(server.balance(&merchant.api_key).await, funding);
    assert_eq!(count(&server, &merchant).await, 0);

    let reply = post_raw(
        &server,
        &merchant,
        &body,
        Some(&hmac_signature(&merchant.webhook_secret, &body)),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_000_000 - BANK_FEE);
    assert_eq!(count(&server, &merchant).await, 1);
}
