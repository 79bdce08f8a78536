//! `/api/order/create` and `/api/order/query`: the Legacy shape, the same
//! order seen through V1, and every refusal with its exact message.

use super::*;

#[tokio::test]
async fn order_create_and_query_in_legacy_shape() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let created = post(
        &server,
        "/api/order/create",
        &order_body(&merchant, "ORD-001", 50000, "QRIS"),
        None,
    )
    .await;
    let order = assert_ok(&created).clone();
    assert_eq!(sorted_keys(&order), strings(&ORDER_FIELDS));
    assert!(order["refCode"].as_str().unwrap().starts_with("ORD-"));
    assert!(is_wib(&order["transactionTime"]), "{}", order["transactionTime"]);
    assert_eq!(order["orderId"], json!("ORD-001"));
    assert_eq!(order["totalAmount"], json!(50000));
    assert_eq!(order["customerName"], json!("Budi"));
    assert_eq!(order["customerEmail"], Value::Null);
    assert_eq!(order["customerPhone"], json!("6281234567890"));
    assert_eq!(order["notifyUrl"], json!("https://merchant.example/notify"));
    assert_eq!(order["returnUrl"], Value::Null);
    assert_eq!(order["status"], json!("PENDING"));
    assert_eq!(order["paidAt"], Value::Null);
    assert!(order["qrString"].as_str().unwrap().starts_with("000201010212"));
    assert_eq!(order["virtualAccount"], Value::Null);

    // Stored x100, one engine: V1 sees the same order in minor units.
    let ref_code = order["refCode"].as_str().unwrap();
    let v1 = server.get(&format!("/v1/orders/{ref_code}"), &merchant.api_key).await;
    assert_eq!(v1.body["data"]["amount_minor"], json!(5_000_000));

    // Resubmitting returns the existing order, current status included.
    let paid = server
        .post(&format!("/v1/sandbox/orders/{ref_code}/pay"), &merchant.api_key, None)
        .await;
    assert_eq!(paid.status, StatusCode::OK);
    let again = post(
        &server,
        "/api/order/create",
        &order_body(&merchant, "ORD-001", 50000, "QRIS"),
        None,
    )
    .await;
    let again = assert_ok(&again);
    assert_eq!(again["refCode"], order["refCode"]);
    assert_eq!(again["status"], json!("PAID"));
    assert!(is_wib(&again["paidAt"]));
    let list = server.get("/v1/orders", &merchant.api_key).await;
    assert_eq!(list.body["meta"]["total"], json!(1), "no duplicate");
    // The same orderId describing another order is taken.
    let conflict = post(
        &server,
        "/api/order/create",
        &order_body(&merchant, "ORD-001", 60000, "QRIS"),
        None,
    )
    .await;
    assert_legacy_error(&conflict, 409, "Order ID already used");

    let queried = post(&server, "/api/order/query", &query_body(&merchant, "ORD-001"), None).await;
    let queried = assert_ok(&queried);
    assert_eq!(sorted_keys(queried), strings(&ORDER_FIELDS));
    assert_eq!(queried["status"], json!("PAID"));
    assert_eq!(queried["paidAt"], again["paidAt"]);
    assert_eq!(
        queried["qrString"],
        Value::Null,
        "a paid order's code is no longer shown"
    );
    let missing = post(&server, "/api/order/query", &query_body(&merchant, "ORD-404"), None).await;
    assert_legacy_error(&missing, 404, "Order ID not found");

    // Bank transfer: no QR, a virtual account.
    let va = post(
        &server,
        "/api/order/create",
        &order_body(&merchant, "ORD-VA", 75000, "BANK_TRANSFER"),
        None,
    )
    .await;
    let va = assert_ok(&va);
    assert_eq!(va["qrString"], Value::Null);
    assert_eq!(
        sorted_keys(&va["virtualAccount"]),
        strings(&["bankShortCode", "accountNumber"])
    );

    // Failed and expired show as FAILED.
    let va_ref = va["refCode"].as_str().unwrap();
    server
        .post(&format!("/v1/sandbox/orders/{va_ref}/expire"), &merchant.api_key, None)
        .await;
    let expired = post(&server, "/api/order/query", &query_body(&merchant, "ORD-VA"), None).await;
    assert_eq!(assert_ok(&expired)["status"], json!("FAILED"));
}

/// Order requests refused for their body alone, in the order they are sent.
fn order_refusals(merchant: &TestMerchant) -> Vec<LegacyRefusal> {
    const CREATE: &str = "/api/order/create";
    let good = order_body(merchant, "E-1", 10000, "QRIS");
    let with = |field: &str, value: Value| {
        let mut body: Value = serde_json::from_str(&good).unwrap();
        body[field] = value;
        body.to_string()
    };
    let mut rows = vec![
        refusal(
            "unknown clientId",
            CREATE,
            with("clientId", json!("nobody")),
            401,
            "Invalid Client ID",
        ),
        refusal(
            "signature over something else",
            CREATE,
            with("signature", json!(sha512_hex("something else"))),
            401,
            "Invalid Signature",
        ),
    ];
    for missing in ["orderId", "totalAmount", "paymentType", "signature"] {
        let mut body: Value = serde_json::from_str(&good).unwrap();
        body.as_object_mut().unwrap().remove(missing);
        rows.push(refusal(
            &format!("no {missing}"),
            CREATE,
            body.to_string(),
            400,
            "Invalid request parameters",
        ));
    }
    let mut bad_query: Value = serde_json::from_str(&query_body(merchant, "E-1")).unwrap();
    bad_query["signature"] = json!("00");
    rows.extend([
        refusal(
            "totalAmount as text",
            CREATE,
            with("totalAmount", json!("10000")),
            400,
            "Invalid request parameters",
        ),
        refusal(
            "paymentType CASH",
            CREATE,
            order_body(merchant, "E-2", 10000, "CASH"),
            400,
            "Invalid request parameters",
        ),
        refusal(
            "totalAmount 0",
            CREATE,
            order_body(merchant, "E-3", 0, "QRIS"),
            400,
            "Invalid request parameters",
        ),
        refusal(
            "malformed JSON",
            CREATE,
            "{oops".to_string(),
            400,
            "Invalid request parameters",
        ),
        refusal(
            "query with a wrong signature",
            "/api/order/query",
            bad_query.to_string(),
            401,
            "Invalid Signature",
        ),
    ]);
    rows
}

#[tokio::test]
async fn order_errors_carry_the_exact_messages() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let good = order_body(&merchant, "E-1", 10000, "QRIS");
    for row in order_refusals(&merchant) {
        table::row(&row.name, async {
            let reply = post(&server, row.path, &row.body, None).await;
            assert_legacy_error(&reply, row.status, row.message);
        })
        .await;
    }

    // No gateway for the payment type: the organization routes to none.
    let organization = "00000000-0000-4000-8000-000000000001";
    let routed = server
        .admin_put(
            &format!("/admin/v1/organizations/{organization}/vendors/BANK_TRANSFER"),
            json!({ "vendors": [] }),
        )
        .await;
    assert_eq!(routed.status, StatusCode::OK);
    let no_gateway = order_body(&merchant, "E-4", 10000, "BANK_TRANSFER");
    assert_legacy_error(
        &post(&server, "/api/order/create", &no_gateway, None).await,
        422,
        "Merchant setting is not Valid",
    );

    // Inactive merchants are unknown to Legacy clients.
    server.patch_merchant(&merchant.id, json!({ "is_active": false })).await;
    assert_legacy_error(
        &post(&server, "/api/order/create", &good, None).await,
        401,
        "Invalid Client ID",
    );
    let list = server.get("/v1/orders", &merchant.api_key).await;
    assert_eq!(list.status.as_u16(), 403);
}

#[tokio::test]
async fn one_id_string_in_both_apis_makes_two_orders() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let legacy = post(
        &server,
        "/api/order/create",
        &order_body(&merchant, "SHARED-1", 10000, "QRIS"),
        None,
    )
    .await;
    let legacy_ref = assert_ok(&legacy)["refCode"].clone();
    let v1 = server
        .post(
            "/v1/orders",
            &merchant.api_key,
            Some(json!({ "merchant_order_id": "SHARED-1", "amount_minor": 999_900, "payment_method": "QRIS" })),
        )
        .await;
    assert_eq!(v1.status, StatusCode::CREATED, "{}", v1.body);
    assert_ne!(v1.body["data"]["ref_code"], legacy_ref);
    let queried = post(&server, "/api/order/query", &query_body(&merchant, "SHARED-1"), None).await;
    assert_eq!(assert_ok(&queried)["refCode"], legacy_ref);
    assert_eq!(assert_ok(&queried)["totalAmount"], json!(10000));
}
