//! `POST /v1/orders`: the fields of each payment method, the QR code,
//! every refused body, duplicates, `Idempotency-Key` and `X-Signature`.

use super::*;

#[tokio::test]
async fn qris_order_has_every_field_a_valid_qris_and_a_readable_png() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let body = r#"{"merchant_order_id":"INV-001","amount_minor":2500050,"payment_method":"QRIS","customer_name":"Budi","customer_email":"budi@example.com","customer_phone":"+62 812-3456-7890","notify_url":"https://merchant.example/hook","return_url":"https://merchant.example/done","expire_minutes":15,"metadata":{"z":1,"a":[true,null],"nested":{"k":"v"},"f":1.50}}"#;
    let (reply, text) = post_raw(&server, "/v1/orders", &merchant.api_key, body, &[]).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{text}");
    assert_eq!(reply.body["success"], json!(true));
    let order = &reply.body["data"];
    assert_eq!(sorted_keys(order), strings(&ORDER_FIELDS));
    assert!(is_uuid(&order["id"]));
    let ref_code = order["ref_code"].as_str().unwrap();
    assert_eq!(ref_code.len(), "ORD-yymmddHHMMSS-XXXX".len());
    assert!(ref_code.starts_with("ORD-"));
    assert!(ref_code[17..]
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()));
    assert_eq!(order["merchant_order_id"], json!("INV-001"));
    assert_eq!(order["amount_minor"], json!(2500050));
    assert_eq!(order["currency_code"], json!("IDR"));
    assert_eq!(order["payment_method"], json!("QRIS"));
    assert_eq!(order["status"], json!("PENDING"));
    assert_eq!(order["paid_at"], Value::Null);
    assert_eq!(order["vendor_rrn"], Value::Null);
    assert_eq!(order["is_settled"], json!(false));
    assert_eq!(order["virtual_account"], Value::Null);
    assert_eq!(order["customer_name"], json!("Budi"));
    assert_eq!(order["customer_email"], json!("budi@example.com"));
    assert_eq!(order["customer_phone"], json!("6281234567890"));
    assert_eq!(order["notify_url"], json!("https://merchant.example/hook"));
    assert_eq!(order["return_url"], json!("https://merchant.example/done"));
    assert_eq!(ms(&order["expires_at"]) - ms(&order["created_at"]), 15 * 60_000);
    assert!(order["created_at"].as_str().unwrap().ends_with('Z'));
    // Metadata comes back as the same bytes, key order and number text included.
    assert!(
        text.contains(r#""metadata":{"z":1,"a":[true,null],"nested":{"k":"v"},"f":1.50}"#),
        "{text}"
    );

    let qris = order["qris_string"].as_str().unwrap();
    let fields = parse_tlv(qris);
    assert_eq!(field(&fields, "00"), "01");
    assert_eq!(field(&fields, "01"), "12", "dynamic QRIS");
    assert!(parse_tlv(field(&fields, "26")).iter().any(|(t, _)| t == "00"));
    assert_eq!(field(&parse_tlv(field(&fields, "51")), "00"), "ID.CO.QRIS.WWW");
    assert_eq!(field(&fields, "53"), "360");
    assert_eq!(field(&fields, "54"), "25000.50");
    assert_eq!(field(&fields, "58"), "ID");
    assert!(field(&fields, "59").len() <= 25 && field(&fields, "60").len() <= 15);
    assert_eq!(field(&parse_tlv(field(&fields, "62")), "05"), ref_code);
    let (signed, crc) = qris.split_at(qris.len() - 4);
    assert!(signed.ends_with("6304"));
    assert_eq!(crc, format!("{:04X}", crc16(signed.as_bytes())));
    assert_eq!(fields.last().unwrap().0, "63");

    let qr_url = order["qr_url"].as_str().unwrap();
    assert_eq!(qr_url, server.url(&format!("/v1/orders/{ref_code}/qr.png")));
    assert_eq!(
        order["checkout_url"],
        json!(format!("{}/checkout/{}", server.base, order["id"].as_str().unwrap()))
    );
    let image = server.client.get(qr_url).send().await.unwrap();
    assert_eq!(image.status(), StatusCode::OK);
    assert_eq!(image.headers()["content-type"], "image/png");
    let png_bytes = image.bytes().await.unwrap();
    assert_eq!(decode_qr_png(&png_bytes), qris);

    // The same order read back, and the unknown image.
    let got = get_order(&server, &merchant.api_key, ref_code).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(&got.body["data"], order);
    let missing = server
        .client
        .get(server.url("/v1/orders/ORD-000000000000-XXXX/qr.png"))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_empty_customer_name_is_null() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    for (id, name) in [("EMPTY-1", ""), ("EMPTY-2", "   ")] {
        let order = create_order(
            &server,
            &merchant.api_key,
            json!({ "merchant_order_id": id, "amount_minor": 100_000, "payment_method": "QRIS", "customer_name": name }),
        )
        .await;
        assert_eq!(order["customer_name"], Value::Null, "{name:?}");
    }
}

#[tokio::test]
async fn bank_transfer_order_has_a_virtual_account_and_no_qris() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let order = create_order(
        &server,
        &merchant.api_key,
        json!({ "merchant_order_id": "VA-1", "amount_minor": 10_000_000, "payment_method": "BANK_TRANSFER" }),
    )
    .await;
    assert_eq!(order["qris_string"], Value::Null);
    assert_eq!(order["qr_url"], Value::Null);
    assert_eq!(
        sorted_keys(&order["virtual_account"]),
        strings(&["bank_short_code", "account_number"])
    );
    assert_eq!(order["virtual_account"]["bank_short_code"], json!("BCA"));
    assert!(order["virtual_account"]["account_number"]
        .as_str()
        .unwrap()
        .chars()
        .all(|c| c.is_ascii_digit()));
    assert_eq!(
        ms(&order["expires_at"]) - ms(&order["created_at"]),
        60 * 60_000,
        "default 60 minutes"
    );
    let ref_code = order["ref_code"].as_str().unwrap();
    let image = server
        .client
        .get(server.url(&format!("/v1/orders/{ref_code}/qr.png")))
        .send()
        .await
        .unwrap();
    assert_eq!(image.status(), StatusCode::NOT_FOUND, "bank transfers have no QR");

    // Paid: the wallet gets the amount minus the flat MDR.
    let before = server.balance(&merchant.api_key).await;
    let paid = pay(&server, &merchant.api_key, ref_code).await;
    assert_eq!(paid.status, StatusCode::OK, "{}", paid.body);
    assert_eq!(
        server.balance(&merchant.api_key).await - before,
        10_000_000 - BANK_TRANSFER_MDR
    );
}

#[tokio::test]
async fn every_invalid_body_is_refused_and_creates_nothing() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let long_id = "x".repeat(256);
    // Each row: its name, the field it changes in a valid QRIS body (left
    // out when `None`), and so the field the message must name.
    let cases: Vec<(&str, &str, Option<Value>)> = vec![
        ("no merchant_order_id", "merchant_order_id", None),
        ("no amount_minor", "amount_minor", None),
        ("no payment_method", "payment_method", None),
        ("amount_minor as text", "amount_minor", Some(json!("100"))),
        ("fractional amount_minor", "amount_minor", Some(json!(10.5))),
        ("numeric merchant_order_id", "merchant_order_id", Some(json!(7))),
        ("amount_minor 0", "amount_minor", Some(json!(0))),
        ("negative amount_minor", "amount_minor", Some(json!(-5))),
        (
            "256-character merchant_order_id",
            "merchant_order_id",
            Some(json!(long_id)),
        ),
        ("empty merchant_order_id", "merchant_order_id", Some(json!(""))),
        ("payment_method CASH", "payment_method", Some(json!("CASH"))),
        ("expire_minutes 0", "expire_minutes", Some(json!(0))),
        ("expire_minutes 1441", "expire_minutes", Some(json!(1441))),
        ("customer_phone with letters", "customer_phone", Some(json!("12ab"))),
        ("customer_phone too short", "customer_phone", Some(json!("0812"))),
        ("customer_email without @", "customer_email", Some(json!("nope"))),
        ("notify_url with ftp", "notify_url", Some(json!("ftp://x"))),
        ("metadata as an array", "metadata", Some(json!([1, 2]))),
        ("metadata as text", "metadata", Some(json!("text"))),
    ];
    for (name, field, value) in cases {
        let mut body = qris_body("a", 100);
        match value {
            Some(value) => body[field] = value,
            None => body.as_object_mut().unwrap().retain(|key, _| key != field),
        }
        table::row(name, async {
            let reply = server.post("/v1/orders", &merchant.api_key, Some(body.clone())).await;
            assert_v1_error(&reply, 400, "INVALID_BODY");
            let message = reply.body["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(field),
                "message {message:?} should name {field} for {body}"
            );
        })
        .await;
    }
    let (malformed, _) = post_raw(&server, "/v1/orders", &merchant.api_key, "{not json", &[]).await;
    assert_v1_error(&malformed, 400, "INVALID_BODY");
    assert_eq!(order_count(&server, &merchant.api_key).await, 0);
    // Edge values that are valid.
    let edge = json!({ "merchant_order_id": "y".repeat(255), "amount_minor": 1, "payment_method": "QRIS", "expire_minutes": 1440, "customer_phone": "81234567890" });
    let order = create_order(&server, &merchant.api_key, edge).await;
    assert_eq!(order["customer_phone"], json!("6281234567890"));
    assert_eq!(ms(&order["expires_at"]) - ms(&order["created_at"]), 1440 * 60_000);
}

#[tokio::test]
async fn duplicate_merchant_order_id_is_409_with_the_existing_order() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let first = create_order(&server, &merchant.api_key, qris_body("DUP-1", 100_000)).await;
    let again = server
        .post("/v1/orders", &merchant.api_key, Some(qris_body("DUP-1", 999_999)))
        .await;
    assert_v1_error(&again, 409, "DUPLICATE_ORDER");
    assert_eq!(again.body["data"], first);
    assert_eq!(order_count(&server, &merchant.api_key).await, 1);
    // Another merchant may use the same id.
    let other = server.create_wallet_merchant().await;
    create_order(&server, &other.api_key, qris_body("DUP-1", 100_000)).await;
}

#[tokio::test]
async fn idempotency_key_replays_the_same_body_and_refuses_a_different_one() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let body = r#"{"merchant_order_id":"IK-1","amount_minor":50000,"payment_method":"QRIS","metadata":{"b":2,"a":1}}"#;
    let (first, first_text) = post_keyed(&server, &merchant.api_key, body).await;
    assert_eq!(first.status, StatusCode::CREATED, "{first_text}");
    let (replay, replay_text) = post_keyed(&server, &merchant.api_key, body).await;
    assert_eq!(replay.status, StatusCode::CREATED);
    assert_eq!(replay_text, first_text, "the first response, byte for byte");
    // Still the first response after the order moved on.
    let ref_code = first.body["data"]["ref_code"].as_str().unwrap();
    assert_eq!(pay(&server, &merchant.api_key, ref_code).await.status, StatusCode::OK);
    let (late, late_text) = post_keyed(&server, &merchant.api_key, body).await;
    assert_eq!(late.status, StatusCode::CREATED);
    assert_eq!(late_text, first_text);

    let other_body = r#"{"merchant_order_id":"IK-2","amount_minor":50000,"payment_method":"QRIS"}"#;
    let (reused, _) = post_keyed(&server, &merchant.api_key, other_body).await;
    assert_v1_error(&reused, 422, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(order_count(&server, &merchant.api_key).await, 1);
    // Survives a restart.
    let mut server = server;
    let old_base = server.base.clone();
    server.stop();
    server.restart();
    let (after, after_text) = post_keyed(&server, &merchant.api_key, body).await;
    assert_eq!(after.status, StatusCode::CREATED);
    // The port changed with the restart, and `qr_url` with it.
    assert_eq!(
        after_text.replace(&server.base, "BASE"),
        first_text.replace(&old_base, "BASE")
    );
    let (reused, _) = post_keyed(&server, &merchant.api_key, other_body).await;
    assert_v1_error(&reused, 422, "IDEMPOTENCY_KEY_REUSED");
}

#[tokio::test]
async fn x_signature_is_checked_and_can_be_mandatory() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let body = r#"{"merchant_order_id":"SIG-1","amount_minor":10000,"payment_method":"QRIS"}"#;
    let (bad, _) = post_signed(&server, &merchant.api_key, body, "wrong").await;
    assert_v1_error(&bad, 401, "INVALID_SIGNATURE");
    let (garbage, _) = post_raw(
        &server,
        "/v1/orders",
        &merchant.api_key,
        body,
        &[("X-Signature", "sha256=zz")],
    )
    .await;
    assert_v1_error(&garbage, 401, "INVALID_SIGNATURE");
    assert_eq!(order_count(&server, &merchant.api_key).await, 0);
    let (good, text) = post_signed(&server, &merchant.api_key, body, &merchant.webhook_secret).await;
    assert_eq!(good.status, StatusCode::CREATED, "{text}");

    let patched = server
        .patch_merchant(&merchant.id, json!({ "require_signature": true }))
        .await;
    assert_eq!(patched.status, StatusCode::OK);
    let body2 = r#"{"merchant_order_id":"SIG-2","amount_minor":10000,"payment_method":"QRIS"}"#;
    let (unsigned, _) = post_raw(&server, "/v1/orders", &merchant.api_key, body2, &[]).await;
    assert_v1_error(&unsigned, 401, "INVALID_SIGNATURE");
    assert_eq!(
        unsigned.body["error"]["message"],
        json!("X-Signature is required for this merchant")
    );
    let (signed, _) = post_signed(&server, &merchant.api_key, body2, &merchant.webhook_secret).await;
    assert_eq!(signed.status, StatusCode::CREATED);
    assert_eq!(order_count(&server, &merchant.api_key).await, 2);
}

/// `POST /v1/orders` with the raw `body` under `Idempotency-Key: key-1`.
async fn post_keyed(server: &TestServer, api_key: &str, body: &str) -> (Reply, String) {
    post_raw(server, "/v1/orders", api_key, body, &[("Idempotency-Key", "key-1")]).await
}

/// `POST /v1/orders` with the raw `body` and its `X-Signature` by `secret`.
async fn post_signed(server: &TestServer, api_key: &str, body: &str, secret: &str) -> (Reply, String) {
    let signature = hmac_signature(secret, body.as_bytes());
    post_raw(server, "/v1/orders", api_key, body, &[("X-Signature", &signature)]).await
}
