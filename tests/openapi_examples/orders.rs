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
    let order = tour.keep(
        "create_order",
        &server
            .call(Method::POST, "/v1/orders", key, Some(order_body.clone()))
            .await,
    );
    let ref_code = order["data"]["ref_code"].as_str().unwrap().to_string();
    tour.keep(
        "create_order",
        &server.call(Method::POST, "/v1/orders", key, Some(order_body)).await,
    );
    tour.keep(
        "create_order",
        &server
            .call(Method::POST, "/v1/orders", key, Some(json!({ "amount_minor": 100 })))
            .await,
    );
    tour.keep(
        "get_order",
        &server
            .call(Method::GET, &format!("/v1/orders/{ref_code}"), key, None)
            .await,
    );
    tour.keep(
        "get_order",
        &server
            .call(Method::GET, "/v1/orders/ORD-000000000000-XXXX", key, None)
            .await,
    );
    let order_id = order["data"]["id"].as_str().unwrap();
    tour.keep(
        "checkout_status",
        &server
            .call(Method::GET, &format!("/checkout/{order_id}/status"), None, None)
            .await,
    );
    tour.keep(
        "checkout_status",
        &server
            .call(
                Method::GET,
                "/checkout/00000000-0000-4000-8000-000000000000/status",
                None,
                None,
            )
            .await,
    );
    tour.keep(
        "list_orders",
        &server.call(Method::GET, "/v1/orders?limit=2", key, None).await,
    );
    tour.keep(
        "list_orders",
        &server.call(Method::GET, "/v1/orders?page=0", key, None).await,
    );
    tour.keep(
        "get_balance",
        &server.call(Method::GET, "/v1/balance", None, None).await,
    );
    tour.keep("get_balance", &server.get("/v1/balance", "pk_not_a_key").await);
    tour.keep(
        "sandbox_pay",
        &server
            .call(Method::POST, &format!("/v1/sandbox/orders/{ref_code}/pay"), key, None)
            .await,
    );
    tour.keep(
        "sandbox_pay",
        &server
            .call(Method::POST, &format!("/v1/sandbox/orders/{ref_code}/pay"), key, None)
            .await,
    );
    let refund = tour.keep(
        "create_refund",
        &server
            .call(
                Method::POST,
                &format!("/v1/orders/{ref_code}/refund"),
                key,
                Some(json!({ "amount_minor": 500_000, "reason": "customer request", "idempotency_key": "refund-1" })),
            )
            .await,
    );
    tour.keep(
        "create_refund",
        &server
            .call(
                Method::POST,
                &format!("/v1/orders/{ref_code}/refund"),
                key,
                Some(json!({ "amount_minor": 900_000_000, "reason": "too much", "idempotency_key": "refund-2" })),
            )
            .await,
    );
    tour.keep(
        "list_refunds",
        &server
            .call(Method::GET, &format!("/v1/orders/{ref_code}/refunds"), key, None)
            .await,
    );
    let refund_id = refund["data"]["id"].as_str().unwrap().to_string();
    tour.keep(
        "sandbox_complete_refund",
        &server
            .call(
                Method::POST,
                &format!("/v1/sandbox/refunds/{refund_id}/complete"),
                key,
                Some(json!({ "status": "SUCCESS" })),
            )
            .await,
    );
    let second = tour.keep(
        "create_order",
        &server
            .call(
                Method::POST,
                "/v1/orders",
                key,
                Some(json!({ "merchant_order_id": "INV-1002", "amount_minor": 1_000_000, "payment_method": "BANK_TRANSFER" })),
            )
            .await,
    );
    let second_ref = second["data"]["ref_code"].as_str().unwrap().to_string();
    tour.keep(
        "sandbox_expire",
        &server
            .call(
                Method::POST,
                &format!("/v1/sandbox/orders/{second_ref}/expire"),
                key,
                None,
            )
            .await,
    );
    let third = server
        .call(
            Method::POST,
            "/v1/orders",
            key,
            Some(json!({ "merchant_order_id": "INV-1003", "amount_minor": 1_000_000, "payment_method": "QRIS" })),
        )
        .await;
    let third_ref = third.body["data"]["ref_code"].as_str().unwrap().to_string();
    tour.keep(
        "sandbox_fail",
        &server
            .call(Method::POST, &format!("/v1/sandbox/orders/{third_ref}/fail"), key, None)
            .await,
    );
}
