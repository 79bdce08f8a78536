//! Reads and lists of orders, payment into the wallet or pending
//! settlement, and the sandbox's pay, expire and fail routes.

use super::*;

#[tokio::test]
async fn reads_are_per_merchant_and_lists_paginate_and_filter() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let other = server.create_wallet_merchant().await;
    let mut refs = Vec::new();
    for i in 0..12 {
        let order = create_order(&server, &merchant.api_key, qris_body(&format!("L-{i}"), 10_000 + i)).await;
        refs.push(order["ref_code"].as_str().unwrap().to_string());
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let unknown = server.get("/v1/orders/ORD-000000000000-ZZZZ", &merchant.api_key).await;
    assert_v1_error(&unknown, 404, "ORDER_NOT_FOUND");
    let foreign = server.get(&format!("/v1/orders/{}", refs[0]), &other.api_key).await;
    assert_v1_error(&foreign, 404, "ORDER_NOT_FOUND");
    let no_key = server.call(Method::GET, "/v1/orders", None, None).await;
    assert_v1_error(&no_key, 401, "UNAUTHORIZED");

    let page1 = list_orders(&server, &merchant.api_key, "?limit=5").await;
    assert_eq!(
        page1.body["meta"],
        json!({ "page": 1, "limit": 5, "total": 12, "total_pages": 3 })
    );
    let listed: Vec<&str> = page1.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["ref_code"].as_str().unwrap())
        .collect();
    let newest: Vec<&str> = refs.iter().rev().take(5).map(String::as_str).collect();
    assert_eq!(listed, newest, "newest first");
    let page3 = list_orders(&server, &merchant.api_key, "?limit=5&page=3").await;
    assert_eq!(page3.body["data"].as_array().unwrap().len(), 2);
    assert_eq!(sorted_keys(&page3.body["data"][0]), strings(&ORDER_FIELDS));

    assert_eq!(pay(&server, &merchant.api_key, &refs[3]).await.status, StatusCode::OK);
    let paid = list_orders(&server, &merchant.api_key, "?status=PAID").await;
    assert_eq!(paid.body["meta"]["total"], json!(1));
    assert_eq!(paid.body["data"][0]["ref_code"], json!(refs[3]));
    let pending = list_orders(&server, &merchant.api_key, "?status=PENDING").await;
    assert_eq!(pending.body["meta"]["total"], json!(11));
    let bad_status = list_orders(&server, &merchant.api_key, "?status=NOPE").await;
    assert_v1_error(&bad_status, 400, "INVALID_QUERY");
    let bad_page = list_orders(&server, &merchant.api_key, "?page=0").await;
    assert_v1_error(&bad_page, 400, "INVALID_QUERY");
    let capped = list_orders(&server, &merchant.api_key, "?limit=500").await;
    assert_eq!(capped.body["meta"]["limit"], json!(50));

    // created_from / created_to bound by the creation time of orders 5 and 8.
    let all = list_orders(&server, &merchant.api_key, "?limit=50").await;
    let created = |ref_code: &str| {
        all.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["ref_code"] == json!(ref_code))
            .unwrap()["created_at"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (from, to) = (created(&refs[5]), created(&refs[8]));
    let window = server
        .get(
            &format!("/v1/orders?created_from={from}&created_to={to}"),
            &merchant.api_key,
        )
        .await;
    assert_eq!(window.body["meta"]["total"], json!(4), "{}", window.body);
    let other_list = list_orders(&server, &other.api_key, "").await;
    assert_eq!(other_list.body["meta"]["total"], json!(0));
}

#[tokio::test]
async fn payment_credits_the_wallet_once_and_manual_merchants_wait_for_settlement() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let order = create_order(&server, &merchant.api_key, qris_body("PAY-1", 10_000_000)).await;
    let ref_code = order["ref_code"].as_str().unwrap();
    let paid = sandbox_order(
        &server,
        &merchant.api_key,
        ref_code,
        "pay",
        Some(json!({ "vendor_rrn": "RRN123456789" })),
    )
    .await;
    assert_eq!(paid.status, StatusCode::OK, "{}", paid.body);
    let data = &paid.body["data"];
    assert_eq!(data["status"], json!("PAID"));
    assert_eq!(data["vendor_rrn"], json!("RRN123456789"));
    assert_eq!(data["is_settled"], json!(true));
    assert!(ms(&data["paid_at"]) >= ms(&data["created_at"]));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        10_000_000 - qris_mdr(10_000_000)
    );
    let twice = pay(&server, &merchant.api_key, ref_code).await;
    assert_v1_error(&twice, 422, "INVALID_STATUS");
    assert_eq!(
        server.balance(&merchant.api_key).await,
        10_000_000 - qris_mdr(10_000_000)
    );

    let manual = server.create_merchant_with("MANUAL", json!({})).await;
    let order = create_order(&server, &manual.api_key, qris_body("PAY-M", 10_000_000)).await;
    let paid = pay(&server, &manual.api_key, order["ref_code"].as_str().unwrap()).await;
    assert_eq!(paid.body["data"]["status"], json!("PAID"));
    assert_eq!(paid.body["data"]["is_settled"], json!(false));
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
    assert_eq!(
        verify["accounts"]["pending_settlement"],
        json!(10_000_000 - qris_mdr(10_000_000))
    );
    assert_eq!(verify["accounts"]["mdr_revenue"], json!(2 * qris_mdr(10_000_000)));

    // Fees from the merchant's settings: platform and aggregator fees too.
    let priced = server
        .create_merchant_with(
            "WALLET",
            json!({ "fees": { "qris_mdr_bps": 100, "platform_fee_minor": 1_000, "aggregator_fee_minor": 2_000 } }),
        )
        .await;
    let order = create_order(&server, &priced.api_key, qris_body("PAY-F", 1_000_050)).await;
    pay(&server, &priced.api_key, order["ref_code"].as_str().unwrap()).await;
    // 1% of 1,000,050 = 10,000.5 -> 10,001 (half up).
    assert_eq!(
        server.balance(&priced.api_key).await,
        1_000_050 - 10_001 - 1_000 - 2_000
    );
}

#[tokio::test]
async fn sandbox_expire_and_fail_end_pending_orders_only() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let a = create_order(&server, &merchant.api_key, qris_body("EXP-1", 10_000)).await;
    let b = create_order(&server, &merchant.api_key, qris_body("FAIL-1", 10_000)).await;
    let (a_ref, b_ref) = (a["ref_code"].as_str().unwrap(), b["ref_code"].as_str().unwrap());
    let expired = sandbox_order(&server, &merchant.api_key, a_ref, "expire", None).await;
    assert_eq!(expired.status, StatusCode::OK);
    assert_eq!(expired.body["data"]["status"], json!("EXPIRED"));
    let failed = sandbox_order(&server, &merchant.api_key, b_ref, "fail", None).await;
    assert_eq!(failed.body["data"]["status"], json!("FAILED"));
    assert_v1_error(&pay(&server, &merchant.api_key, a_ref).await, 422, "INVALID_STATUS");
    assert_v1_error(&pay(&server, &merchant.api_key, b_ref).await, 422, "INVALID_STATUS");
    let again = sandbox_order(&server, &merchant.api_key, a_ref, "fail", None).await;
    assert_v1_error(&again, 422, "INVALID_STATUS");
    assert_eq!(server.balance(&merchant.api_key).await, 0);
    let unknown = server
        .post("/v1/sandbox/orders/ORD-000000000000-ZZZZ/pay", &merchant.api_key, None)
        .await;
    assert_v1_error(&unknown, 404, "ORDER_NOT_FOUND");
    let bad_rrn = sandbox_order(
        &server,
        &merchant.api_key,
        a_ref,
        "pay",
        Some(json!({ "vendor_rrn": 5 })),
    )
    .await;
    assert_v1_error(&bad_rrn, 400, "INVALID_BODY");
}

#[tokio::test]
async fn sandbox_order_routes_do_not_exist_in_live_mode() {
    let server = TestServer::start_with(&["--mode", "live"]);
    let merchant = server.create_wallet_merchant().await;
    for action in ["pay", "expire", "fail"] {
        let reply = server
            .post(
                &format!("/v1/sandbox/orders/ORD-000000000000-AAAA/{action}"),
                &merchant.api_key,
                None,
            )
            .await;
        assert_v1_error(&reply, 404, "NOT_FOUND");
    }
    // Live mode has no sandbox vendor: with nothing configured, NO_VENDOR.
    let reply = server
        .post("/v1/orders", &merchant.api_key, Some(qris_body("LIVE-1", 10_000)))
        .await;
    assert_v1_error(&reply, 503, "NO_VENDOR");
}
