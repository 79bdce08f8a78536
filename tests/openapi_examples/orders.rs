//! The tour's orders, payments and refunds, as a merchant makes them.

use super::*;

pub(super) async fn tour_orders(server: &TestServer, tour: &mut Tour, merchant: &TestMerchant) {
    let key = Some(merchant.api_key.as_str());
    // Orders, payment, refunds.
    let order_body = json!({
        "merchant_order_id": "INV-1001",
        "amount_minor": 2_500_000,
        "payment_method": "QRIS",
        "customer_name": "Budi Santoso",
        "customer_email": "budi@example.com",
        "customer_phone": "081234567890",
        "metadata": { "cart_id": "c-42" }
    });
    let order = tour
        .post(server, "create_order", "/v1/orders", key, Some(order_body.clone()))
        .await;
    let ref_code = order["data"]["ref_code"].as_str().unwrap().to_string();
    tour.post(server, "create_order", "/v1/orders", key, Some(order_body))
        .await;
    tour.post(
        server,
        "create_order",
        "/v1/orders",
        key,
        Some(json!({ "amount_minor": 100 })),
    )
    .await;
    tour.get(server, "get_order", &format!("/v1/orders/{ref_code}"), key)
        .await;
    tour.get(server, "get_order", "/v1/orders/ORD-000000000000-XXXX", key)
        .await;
    let order_id = order["data"]["id"].as_str().unwrap();
    tour.get(server, "checkout_status", &format!("/checkout/{order_id}/status"), None)
        .await;
    tour.get(
        server,
        "checkout_status",
        "/checkout/00000000-0000-4000-8000-000000000000/status",
        None,
    )
    .await;
    tour.get(server, "list_orders", "/v1/orders?limit=2", key).await;
    tour.get(server, "list_orders", "/v1/orders?page=0", key).await;
    tour.get(server, "get_balance", "/v1/balance", None).await;
    tour.keep("get_balance", &server.get("/v1/balance", "pk_not_a_key").await);
    // Paid, then paid again (refused).
    let pay = format!("/v1/sandbox/orders/{ref_code}/pay");
    tour.post(server, "sandbox_pay", &pay, key, None).await;
    tour.post(server, "sandbox_pay", &pay, key, None).await;
    // A refund, then one of more than is left (refused).
    let refund_path = format!("/v1/orders/{ref_code}/refund");
    let first = json!({ "amount_minor": 500_000, "reason": "customer request", "idempotency_key": "refund-1" });
    let refund = tour.post(server, "create_refund", &refund_path, key, Some(first)).await;
    let too_much = json!({ "amount_minor": 900_000_000, "reason": "too much", "idempotency_key": "refund-2" });
    tour.post(server, "create_refund", &refund_path, key, Some(too_much))
        .await;
    let refunds = format!("/v1/orders/{ref_code}/refunds");
    tour.get(server, "list_refunds", &refunds, key).await;
    let refund_id = refund["data"]["id"].as_str().unwrap().to_string();
    let complete = format!("/v1/sandbox/refunds/{refund_id}/complete");
    let success = Some(json!({ "status": "SUCCESS" }));
    tour.post(server, "sandbox_complete_refund", &complete, key, success)
        .await;
    let second = tour.post(server, "create_order", "/v1/orders", key, Some(json!({ "merchant_order_id": "INV-1002", "amount_minor": 1_000_000, "payment_method": "BANK_TRANSFER" }))).await;
    let second_ref = second["data"]["ref_code"].as_str().unwrap().to_string();
    tour.post(
        server,
        "sandbox_expire",
        &format!("/v1/sandbox/orders/{second_ref}/expire"),
        key,
        None,
    )
    .await;
    let third = server
        .call(
            Method::POST,
            "/v1/orders",
            key,
            Some(json!({ "merchant_order_id": "INV-1003", "amount_minor": 1_000_000, "payment_method": "QRIS" })),
        )
        .await;
    let third_ref = third.body["data"]["ref_code"].as_str().unwrap().to_string();
    tour.post(
        server,
        "sandbox_fail",
        &format!("/v1/sandbox/orders/{third_ref}/fail"),
        key,
        None,
    )
    .await;
}
