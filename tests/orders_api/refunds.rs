//! `POST /v1/orders/{ref_code}/refund`: the refundable amount, refusals,
//! the vendor's outcome, concurrency, and a kill in between.

use super::*;

#[tokio::test]
async fn refunds_follow_the_refundable_amount_and_give_money_back_on_failure() {
    // Refunds stay PENDING until the test settles them.
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = server.create_wallet_merchant().await;
    server.credit(&merchant.id, 5_000_000).await;
    let order = create_order(&server, &merchant.api_key, qris_body("RF-1", 1_000_000)).await;
    let ref_code = order["ref_code"].as_str().unwrap().to_string();

    // Not paid yet.
    assert_v1_error(
        &refund(&server, &merchant.api_key, &ref_code, 100, "r0").await,
        422,
        "INVALID_STATUS",
    );
    pay(&server, &merchant.api_key, &ref_code).await;
    let funded = 5_000_000 + 1_000_000 - qris_mdr(1_000_000);
    assert_eq!(server.balance(&merchant.api_key).await, funded);

    let first = refund(&server, &merchant.api_key, &ref_code, 300_000, "r1").await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let data = &first.body["data"];
    for field in ["id", "order_ref_code", "amount_minor", "reason", "status", "created_at"] {
        assert!(data.get(field).is_some(), "refund field {field} missing: {data}");
    }
    assert!(is_uuid(&data["id"]));
    assert_eq!(data["order_ref_code"], json!(ref_code));
    assert_eq!(data["amount_minor"], json!(300_000));
    assert_eq!(data["reason"], json!("CUSTOMER_REQUEST"));
    assert_eq!(data["status"], json!("PENDING"));
    assert_eq!(server.balance(&merchant.api_key).await, funded - 300_000);
    let order_now = get_order(&server, &merchant.api_key, &ref_code).await;
    assert_eq!(order_now.body["data"]["status"], json!("PARTIALLY_REFUNDED"));
    assert_eq!(order_now.body["data"]["refunded_amount_minor"], json!(300_000));

    let duplicate = refund(&server, &merchant.api_key, &ref_code, 300_000, "r1").await;
    assert_v1_error(&duplicate, 409, "DUPLICATE_IDEMPOTENCY_KEY");
    assert_eq!(duplicate.body["data"], first.body["data"]);
    assert_v1_error(
        &refund(&server, &merchant.api_key, &ref_code, 700_001, "r2").await,
        422,
        "AMOUNT_EXCEEDS_ORDER",
    );
    assert_v1_error(
        &refund(&server, &merchant.api_key, "ORD-000000000000-ZZZZ", 1, "r3").await,
        404,
        "ORDER_NOT_FOUND",
    );
    let missing_key = server
        .refund(&merchant.api_key, &ref_code, json!({ "amount_minor": 5 }))
        .await;
    assert_v1_error(&missing_key, 400, "INVALID_BODY");
    assert_v1_error(
        &refund(&server, &merchant.api_key, &ref_code, 0, "r4").await,
        400,
        "INVALID_BODY",
    );
    assert_eq!(
        server.balance(&merchant.api_key).await,
        funded - 300_000,
        "refusals change nothing"
    );

    // The rest: REFUNDED, then nothing more.
    let rest = refund(&server, &merchant.api_key, &ref_code, 700_000, "r5").await;
    assert_eq!(rest.status, StatusCode::CREATED);
    let order_now = get_order(&server, &merchant.api_key, &ref_code).await;
    assert_eq!(order_now.body["data"]["status"], json!("REFUNDED"));
    assert_v1_error(
        &refund(&server, &merchant.api_key, &ref_code, 1, "r6").await,
        422,
        "INVALID_STATUS",
    );
    assert_eq!(server.balance(&merchant.api_key).await, funded - 1_000_000);

    // The vendor fails the second one: money back, status recomputed, refundable again.
    let rest_id = rest.body["data"]["id"].as_str().unwrap();
    let failed = complete_refund(&server, &merchant.api_key, rest_id, "FAILED").await;
    assert_eq!(failed.status, StatusCode::OK, "{}", failed.body);
    assert_eq!(failed.body["data"]["status"], json!("FAILED"));
    assert_eq!(server.balance(&merchant.api_key).await, funded - 300_000);
    let order_now = get_order(&server, &merchant.api_key, &ref_code).await;
    assert_eq!(order_now.body["data"]["status"], json!("PARTIALLY_REFUNDED"));
    let again = complete_refund(&server, &merchant.api_key, rest_id, "SUCCESS").await;
    assert_v1_error(&again, 422, "INVALID_STATUS");
    let first_id = first.body["data"]["id"].as_str().unwrap();
    let succeeded = complete_refund(&server, &merchant.api_key, first_id, "SUCCESS").await;
    assert_eq!(succeeded.body["data"]["status"], json!("SUCCESS"));
    assert_eq!(server.balance(&merchant.api_key).await, funded - 300_000);
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn a_refund_the_wallet_cannot_cover_is_refused() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let order = create_order(&server, &merchant.api_key, qris_body("RF-IB", 1_000_000)).await;
    let ref_code = order["ref_code"].as_str().unwrap();
    pay(&server, &merchant.api_key, ref_code).await;
    // The wallet holds the amount minus MDR: a full refund does not fit.
    let reply = refund(&server, &merchant.api_key, ref_code, 1_000_000, "full").await;
    assert_v1_error(&reply, 422, "INSUFFICIENT_BALANCE");
    assert_eq!(server.balance(&merchant.api_key).await, 1_000_000 - qris_mdr(1_000_000));
    let order_now = get_order(&server, &merchant.api_key, ref_code).await;
    assert_eq!(order_now.body["data"]["status"], json!("PAID"));
}

#[tokio::test]
async fn sandbox_refunds_succeed_by_themselves_after_the_delay() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "200"]);
    let merchant = server.create_wallet_merchant().await;
    let order = create_order(&server, &merchant.api_key, qris_body("RF-A", 1_000_000)).await;
    let ref_code = order["ref_code"].as_str().unwrap();
    pay(&server, &merchant.api_key, ref_code).await;
    let created = refund(&server, &merchant.api_key, ref_code, 100_000, "auto").await;
    assert_eq!(created.body["data"]["status"], json!("PENDING"));
    let id = created.body["data"]["id"].as_str().unwrap().to_string();
    let mut status = Value::Null;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let reply = server
            .get(&format!("/v1/orders/{ref_code}/refunds"), &merchant.api_key)
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.body["data"][0]["id"], json!(id));
        status = reply.body["data"][0]["status"].clone();
        if status != json!("PENDING") {
            break;
        }
    }
    assert_eq!(status, json!("SUCCESS"));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        1_000_000 - qris_mdr(1_000_000) - 100_000
    );
}

#[tokio::test]
async fn concurrent_refunds_never_exceed_the_order_and_payments_credit_once() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = server.create_wallet_merchant().await;
    server.credit(&merchant.id, 100_000_000).await;
    let order = create_order(&server, &merchant.api_key, qris_body("CC-1", 1_000_000)).await;
    let ref_code = order["ref_code"].as_str().unwrap().to_string();

    let pays = (0..20).map(|_| pay(&server, &merchant.api_key, &ref_code));
    let results = futures::future::join_all(pays).await;
    let ok = results.iter().filter(|r| r.status == StatusCode::OK).count();
    assert_eq!(ok, 1, "exactly one confirmation wins");
    assert!(results
        .iter()
        .all(|r| r.status == StatusCode::OK || r.status == StatusCode::UNPROCESSABLE_ENTITY));
    let after_pay = server.balance(&merchant.api_key).await;
    assert_eq!(after_pay, 100_000_000 + 1_000_000 - qris_mdr(1_000_000));

    // 50 refunds of 30,000 against 1,000,000: at most 33 fit.
    let refunds = (0..50).map(|i| {
        let (server, key, ref_code) = (&server, merchant.api_key.clone(), ref_code.clone());
        async move { refund(server, &key, &ref_code, 30_000, &format!("c-{i}")).await }
    });
    let results = futures::future::join_all(refunds).await;
    let created = results.iter().filter(|r| r.status == StatusCode::CREATED).count() as i64;
    for reply in &results {
        if reply.status != StatusCode::CREATED {
            assert_v1_error(reply, 422, "AMOUNT_EXCEEDS_ORDER");
        }
    }
    assert_eq!(created, 33);
    assert_eq!(server.balance(&merchant.api_key).await, after_pay - created * 30_000);
    let order_now = get_order(&server, &merchant.api_key, &ref_code).await;
    assert_eq!(order_now.body["data"]["refunded_amount_minor"], json!(created * 30_000));
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn orders_and_refunds_survive_a_kill() {
    let mut server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = server.create_wallet_merchant().await;
    let order = create_order(&server, &merchant.api_key, qris_body("K-1", 1_000_000)).await;
    let ref_code = order["ref_code"].as_str().unwrap().to_string();
    pay(&server, &merchant.api_key, &ref_code).await;
    let created = refund(&server, &merchant.api_key, &ref_code, 250_000, "k").await;
    assert_eq!(created.status, StatusCode::CREATED);
    let pending = create_order(&server, &merchant.api_key, qris_body("K-2", 5_000)).await;
    server.kill();
    server.restart();
    let got = get_order(&server, &merchant.api_key, &ref_code).await;
    assert_eq!(got.body["data"]["status"], json!("PARTIALLY_REFUNDED"));
    assert_eq!(got.body["data"]["refunded_amount_minor"], json!(250_000));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        1_000_000 - qris_mdr(1_000_000) - 250_000
    );
    let again = server
        .post("/v1/orders", &merchant.api_key, Some(qris_body("K-2", 5_000)))
        .await;
    assert_v1_error(&again, 409, "DUPLICATE_ORDER");
    assert_eq!(again.body["data"]["ref_code"], pending["ref_code"]);
    assert_v1_error(
        &refund(&server, &merchant.api_key, &ref_code, 250_000, "k").await,
        409,
        "DUPLICATE_IDEMPOTENCY_KEY",
    );
    assert_eq!(server.verify().await["balanced"], json!(true));
}
