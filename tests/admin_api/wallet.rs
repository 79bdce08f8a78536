//! Wallet credits and their refusals, and the ledger's verification.

use super::*;

#[tokio::test]
async fn wallet_credit_returns_the_running_balance() {
    let (server, merchant) = TestServer::start_with_merchant().await;

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
    let (server, merchant) = TestServer::start_with_merchant().await;
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
    let (server, merchant) = TestServer::start_with_merchant().await;
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
