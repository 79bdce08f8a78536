//! V1 orders over HTTP against the real binary: creation, the QRIS string
//! and its PNG, validation, duplicates, `Idempotency-Key`, `X-Signature`,
//! reads and lists, the sandbox lifecycle (pay, expire, fail), money on
//! payment (MDR and fees) and refunds, with the wallet checked after every
//! case.

mod support;

use hmac::{Hmac, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::Sha256;
use std::time::Duration;
use support::*;

/// The default QRIS MDR: 70 bps, rounded half up to a minor unit.
fn qris_mdr(amount: i64) -> i64 {
    (amount * 70 + 5_000) / 10_000
}

/// The default bank-transfer MDR: IDR 4,000.
const BANK_TRANSFER_MDR: i64 = 400_000;

/// The fields of a V1 order, its stored input attributes included.
const ORDER_FIELDS: [&str; 24] = [
    "id",
    "ref_code",
    "merchant_order_id",
    "amount_minor",
    "currency_code",
    "payment_method",
    "status",
    "qris_string",
    "qr_url",
    "checkout_url",
    "virtual_account",
    "expires_at",
    "paid_at",
    "is_settled",
    "vendor_rrn",
    "customer_name",
    "customer_email",
    "customer_phone",
    "notify_url",
    "return_url",
    "metadata",
    "refunded_amount_minor",
    "created_at",
    "updated_at",
];

fn qris_body(id: &str, amount: i64) -> Value {
    json!({ "merchant_order_id": id, "amount_minor": amount, "payment_method": "QRIS" })
}

/// POSTs a raw body with extra headers; returns the reply and the raw text.
async fn post_raw(
    server: &TestServer,
    path: &str,
    api_key: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (Reply, String) {
    let mut request = server
        .client
        .post(format!("{}{path}", server.base))
        .header("X-API-Key", api_key)
        .header("Content-Type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("request sent");
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body read");
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    (Reply { status, body, headers }, text)
}

async fn create_order(server: &TestServer, api_key: &str, body: Value) -> Value {
    let reply = server.call(Method::POST, "/v1/orders", Some(api_key), Some(body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body["data"].clone()
}

async fn order_count(server: &TestServer, api_key: &str) -> i64 {
    let reply = server.call(Method::GET, "/v1/orders", Some(api_key), None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["meta"]["total"].as_i64().unwrap()
}

async fn pay(server: &TestServer, api_key: &str, ref_code: &str) -> Reply {
    server
        .call(
            Method::POST,
            &format!("/v1/sandbox/orders/{ref_code}/pay"),
            Some(api_key),
            None,
        )
        .await
}

async fn refund(server: &TestServer, api_key: &str, ref_code: &str, amount: i64, key: &str) -> Reply {
    server
        .call(
            Method::POST,
            &format!("/v1/orders/{ref_code}/refund"),
            Some(api_key),
            Some(json!({ "amount_minor": amount, "idempotency_key": key, "reason": "CUSTOMER_REQUEST" })),
        )
        .await
}

fn ms(timestamp: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(timestamp.as_str().expect("timestamp string"))
        .expect("RFC 3339")
        .timestamp_millis()
}

/// An independent EMVCo TLV parse: (tag, value) pairs, checking lengths.
fn parse_tlv(data: &str) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        assert!(rest.len() >= 4, "truncated TLV at {rest}");
        let tag = &rest[..2];
        let len: usize = rest[2..4].parse().expect("2-digit length");
        assert!(rest.len() >= 4 + len, "value of {tag} overruns");
        fields.push((tag.to_string(), rest[4..4 + len].to_string()));
        rest = &rest[4 + len..];
    }
    fields
}

/// CRC-16/CCITT-FALSE written out bit by bit, independent of the server's.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0xFFFF;
    for byte in bytes {
        crc ^= (*byte as u16) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

fn field<'a>(fields: &'a [(String, String)], tag: &str) -> &'a str {
    &fields
        .iter()
        .find(|(t, _)| t == tag)
        .unwrap_or_else(|| panic!("tag {tag} missing"))
        .1
}

/// Decodes a PNG QR code back to its text with rqrr.
fn decode_qr_png(png_bytes: &[u8]) -> String {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().expect("PNG header");
    let mut pixels = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut pixels).expect("PNG frame");
    assert_eq!(info.color_type, png::ColorType::Grayscale);
    let (width, height) = (info.width as usize, info.height as usize);
    let mut image = rqrr::PreparedImage::prepare_from_greyscale(width, height, |x, y| pixels[y * width + x]);
    let grids = image.detect_grids();
    assert_eq!(grids.len(), 1, "one QR code in the image");
    let (_, content) = grids[0].decode().expect("QR decodes");
    content
}

#[tokio::test]
async fn qris_order_has_every_field_a_valid_qris_and_a_readable_png() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
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
    assert_eq!(qr_url, format!("{}/v1/orders/{ref_code}/qr.png", server.base));
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
    let got = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(&got.body["data"], order);
    let missing = server
        .client
        .get(format!("{}/v1/orders/ORD-000000000000-XXXX/qr.png", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_empty_customer_name_is_null() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
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
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
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
        .get(format!("{}/v1/orders/{ref_code}/qr.png", server.base))
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
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let long_id = "x".repeat(256);
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({ "amount_minor": 100, "payment_method": "QRIS" }),
            "merchant_order_id",
        ),
        (
            json!({ "merchant_order_id": "a", "payment_method": "QRIS" }),
            "amount_minor",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 100 }),
            "payment_method",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": "100", "payment_method": "QRIS" }),
            "amount_minor",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 10.5, "payment_method": "QRIS" }),
            "amount_minor",
        ),
        (
            json!({ "merchant_order_id": 7, "amount_minor": 100, "payment_method": "QRIS" }),
            "merchant_order_id",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 0, "payment_method": "QRIS" }),
            "amount_minor",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": -5, "payment_method": "QRIS" }),
            "amount_minor",
        ),
        (
            json!({ "merchant_order_id": long_id, "amount_minor": 100, "payment_method": "QRIS" }),
            "merchant_order_id",
        ),
        (
            json!({ "merchant_order_id": "", "amount_minor": 100, "payment_method": "QRIS" }),
            "merchant_order_id",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 100, "payment_method": "CASH" }),
            "payment_method",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 100, "payment_method": "QRIS", "expire_minutes": 0 }),
            "expire_minutes",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 100, "payment_method": "QRIS", "expire_minutes": 1441 }),
            "expire_minutes",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 100, "payment_method": "QRIS", "customer_phone": "12ab" }),
            "customer_phone",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 100, "payment_method": "QRIS", "customer_phone": "0812" }),
            "customer_phone",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 100, "payment_method": "QRIS", "customer_email": "nope" }),
            "customer_email",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 100, "payment_method": "QRIS", "notify_url": "ftp://x" }),
            "notify_url",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 100, "payment_method": "QRIS", "metadata": [1, 2] }),
            "metadata",
        ),
        (
            json!({ "merchant_order_id": "a", "amount_minor": 100, "payment_method": "QRIS", "metadata": "text" }),
            "metadata",
        ),
    ];
    for (body, field) in cases {
        let reply = server
            .call(Method::POST, "/v1/orders", Some(&merchant.api_key), Some(body.clone()))
            .await;
        assert_v1_error(&reply, 400, "INVALID_BODY");
        let message = reply.body["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(field),
            "message {message:?} should name {field} for {body}"
        );
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
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let first = create_order(&server, &merchant.api_key, qris_body("DUP-1", 100_000)).await;
    let again = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(qris_body("DUP-1", 999_999)),
        )
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
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let body = r#"{"merchant_order_id":"IK-1","amount_minor":50000,"payment_method":"QRIS","metadata":{"b":2,"a":1}}"#;
    let (first, first_text) = post_raw(
        &server,
        "/v1/orders",
        &merchant.api_key,
        body,
        &[("Idempotency-Key", "key-1")],
    )
    .await;
    assert_eq!(first.status, StatusCode::CREATED, "{first_text}");
    let (replay, replay_text) = post_raw(
        &server,
        "/v1/orders",
        &merchant.api_key,
        body,
        &[("Idempotency-Key", "key-1")],
    )
    .await;
    assert_eq!(replay.status, StatusCode::CREATED);
    assert_eq!(replay_text, first_text, "the first response, byte for byte");
    // Still the first response after the order moved on.
    let ref_code = first.body["data"]["ref_code"].as_str().unwrap();
    assert_eq!(pay(&server, &merchant.api_key, ref_code).await.status, StatusCode::OK);
    let (late, late_text) = post_raw(
        &server,
        "/v1/orders",
        &merchant.api_key,
        body,
        &[("Idempotency-Key", "key-1")],
    )
    .await;
    assert_eq!(late.status, StatusCode::CREATED);
    assert_eq!(late_text, first_text);

    let other_body = r#"{"merchant_order_id":"IK-2","amount_minor":50000,"payment_method":"QRIS"}"#;
    let (reused, _) = post_raw(
        &server,
        "/v1/orders",
        &merchant.api_key,
        other_body,
        &[("Idempotency-Key", "key-1")],
    )
    .await;
    assert_v1_error(&reused, 422, "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(order_count(&server, &merchant.api_key).await, 1);
    // Survives a restart.
    let mut server = server;
    let old_base = server.base.clone();
    server.stop();
    server.restart();
    let (after, after_text) = post_raw(
        &server,
        "/v1/orders",
        &merchant.api_key,
        body,
        &[("Idempotency-Key", "key-1")],
    )
    .await;
    assert_eq!(after.status, StatusCode::CREATED);
    // The port changed with the restart, and `qr_url` with it.
    assert_eq!(
        after_text.replace(&server.base, "BASE"),
        first_text.replace(&old_base, "BASE")
    );
    let (reused, _) = post_raw(
        &server,
        "/v1/orders",
        &merchant.api_key,
        other_body,
        &[("Idempotency-Key", "key-1")],
    )
    .await;
    assert_v1_error(&reused, 422, "IDEMPOTENCY_KEY_REUSED");
}

fn sign(secret: &str, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[tokio::test]
async fn x_signature_is_checked_and_can_be_mandatory() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let body = r#"{"merchant_order_id":"SIG-1","amount_minor":10000,"payment_method":"QRIS"}"#;
    let (bad, _) = post_raw(
        &server,
        "/v1/orders",
        &merchant.api_key,
        body,
        &[("X-Signature", &sign("wrong", body))],
    )
    .await;
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
    let (good, text) = post_raw(
        &server,
        "/v1/orders",
        &merchant.api_key,
        body,
        &[("X-Signature", &sign(&merchant.webhook_secret, body))],
    )
    .await;
    assert_eq!(good.status, StatusCode::CREATED, "{text}");

    let patched = server
        .admin(
            Method::PATCH,
            &format!("/admin/v1/merchants/{}", merchant.id),
            Some(json!({ "require_signature": true })),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK);
    let body2 = r#"{"merchant_order_id":"SIG-2","amount_minor":10000,"payment_method":"QRIS"}"#;
    let (unsigned, _) = post_raw(&server, "/v1/orders", &merchant.api_key, body2, &[]).await;
    assert_v1_error(&unsigned, 401, "INVALID_SIGNATURE");
    assert_eq!(
        unsigned.body["error"]["message"],
        json!("X-Signature is required for this merchant")
    );
    let (signed, _) = post_raw(
        &server,
        "/v1/orders",
        &merchant.api_key,
        body2,
        &[("X-Signature", &sign(&merchant.webhook_secret, body2))],
    )
    .await;
    assert_eq!(signed.status, StatusCode::CREATED);
    assert_eq!(order_count(&server, &merchant.api_key).await, 2);
}

#[tokio::test]
async fn reads_are_per_merchant_and_lists_paginate_and_filter() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let other = server.create_wallet_merchant().await;
    let mut refs = Vec::new();
    for i in 0..12 {
        let order = create_order(&server, &merchant.api_key, qris_body(&format!("L-{i}"), 10_000 + i)).await;
        refs.push(order["ref_code"].as_str().unwrap().to_string());
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let unknown = server
        .call(
            Method::GET,
            "/v1/orders/ORD-000000000000-ZZZZ",
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_v1_error(&unknown, 404, "ORDER_NOT_FOUND");
    let foreign = server
        .call(
            Method::GET,
            &format!("/v1/orders/{}", refs[0]),
            Some(&other.api_key),
            None,
        )
        .await;
    assert_v1_error(&foreign, 404, "ORDER_NOT_FOUND");
    let no_key = server.call(Method::GET, "/v1/orders", None, None).await;
    assert_v1_error(&no_key, 401, "UNAUTHORIZED");

    let page1 = server
        .call(Method::GET, "/v1/orders?limit=5", Some(&merchant.api_key), None)
        .await;
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
    let page3 = server
        .call(Method::GET, "/v1/orders?limit=5&page=3", Some(&merchant.api_key), None)
        .await;
    assert_eq!(page3.body["data"].as_array().unwrap().len(), 2);
    assert_eq!(sorted_keys(&page3.body["data"][0]), strings(&ORDER_FIELDS));

    assert_eq!(pay(&server, &merchant.api_key, &refs[3]).await.status, StatusCode::OK);
    let paid = server
        .call(Method::GET, "/v1/orders?status=PAID", Some(&merchant.api_key), None)
        .await;
    assert_eq!(paid.body["meta"]["total"], json!(1));
    assert_eq!(paid.body["data"][0]["ref_code"], json!(refs[3]));
    let pending = server
        .call(Method::GET, "/v1/orders?status=PENDING", Some(&merchant.api_key), None)
        .await;
    assert_eq!(pending.body["meta"]["total"], json!(11));
    let bad_status = server
        .call(Method::GET, "/v1/orders?status=NOPE", Some(&merchant.api_key), None)
        .await;
    assert_v1_error(&bad_status, 400, "INVALID_QUERY");
    let bad_page = server
        .call(Method::GET, "/v1/orders?page=0", Some(&merchant.api_key), None)
        .await;
    assert_v1_error(&bad_page, 400, "INVALID_QUERY");
    let capped = server
        .call(Method::GET, "/v1/orders?limit=500", Some(&merchant.api_key), None)
        .await;
    assert_eq!(capped.body["meta"]["limit"], json!(50));

    // created_from / created_to bound by the creation time of orders 5 and 8.
    let all = server
        .call(Method::GET, "/v1/orders?limit=50", Some(&merchant.api_key), None)
        .await;
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
        .call(
            Method::GET,
            &format!("/v1/orders?created_from={from}&created_to={to}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(window.body["meta"]["total"], json!(4), "{}", window.body);
    let other_list = server.call(Method::GET, "/v1/orders", Some(&other.api_key), None).await;
    assert_eq!(other_list.body["meta"]["total"], json!(0));
}

#[tokio::test]
async fn payment_credits_the_wallet_once_and_manual_merchants_wait_for_settlement() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let order = create_order(&server, &merchant.api_key, qris_body("PAY-1", 10_000_000)).await;
    let ref_code = order["ref_code"].as_str().unwrap();
    let paid = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/orders/{ref_code}/pay"),
            Some(&merchant.api_key),
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
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let a = create_order(&server, &merchant.api_key, qris_body("EXP-1", 10_000)).await;
    let b = create_order(&server, &merchant.api_key, qris_body("FAIL-1", 10_000)).await;
    let (a_ref, b_ref) = (a["ref_code"].as_str().unwrap(), b["ref_code"].as_str().unwrap());
    let expired = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/orders/{a_ref}/expire"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(expired.status, StatusCode::OK);
    assert_eq!(expired.body["data"]["status"], json!("EXPIRED"));
    let failed = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/orders/{b_ref}/fail"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(failed.body["data"]["status"], json!("FAILED"));
    assert_v1_error(&pay(&server, &merchant.api_key, a_ref).await, 422, "INVALID_STATUS");
    assert_v1_error(&pay(&server, &merchant.api_key, b_ref).await, 422, "INVALID_STATUS");
    let again = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/orders/{a_ref}/fail"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_v1_error(&again, 422, "INVALID_STATUS");
    assert_eq!(server.balance(&merchant.api_key).await, 0);
    let unknown = server
        .call(
            Method::POST,
            "/v1/sandbox/orders/ORD-000000000000-ZZZZ/pay",
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_v1_error(&unknown, 404, "ORDER_NOT_FOUND");
    let bad_rrn = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/orders/{a_ref}/pay"),
            Some(&merchant.api_key),
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
            .call(
                Method::POST,
                &format!("/v1/sandbox/orders/ORD-000000000000-AAAA/{action}"),
                Some(&merchant.api_key),
                None,
            )
            .await;
        assert_v1_error(&reply, 404, "NOT_FOUND");
    }
    // Live mode has no sandbox vendor: with nothing configured, NO_VENDOR.
    let reply = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(qris_body("LIVE-1", 10_000)),
        )
        .await;
    assert_v1_error(&reply, 503, "NO_VENDOR");
}

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
    let order_now = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
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
        .call(
            Method::POST,
            &format!("/v1/orders/{ref_code}/refund"),
            Some(&merchant.api_key),
            Some(json!({ "amount_minor": 5 })),
        )
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
    let order_now = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(order_now.body["data"]["status"], json!("REFUNDED"));
    assert_v1_error(
        &refund(&server, &merchant.api_key, &ref_code, 1, "r6").await,
        422,
        "INVALID_STATUS",
    );
    assert_eq!(server.balance(&merchant.api_key).await, funded - 1_000_000);

    // The vendor fails the second one: money back, status recomputed, refundable again.
    let rest_id = rest.body["data"]["id"].as_str().unwrap();
    let failed = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/refunds/{rest_id}/complete"),
            Some(&merchant.api_key),
            Some(json!({ "status": "FAILED" })),
        )
        .await;
    assert_eq!(failed.status, StatusCode::OK, "{}", failed.body);
    assert_eq!(failed.body["data"]["status"], json!("FAILED"));
    assert_eq!(server.balance(&merchant.api_key).await, funded - 300_000);
    let order_now = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(order_now.body["data"]["status"], json!("PARTIALLY_REFUNDED"));
    let again = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/refunds/{rest_id}/complete"),
            Some(&merchant.api_key),
            Some(json!({ "status": "SUCCESS" })),
        )
        .await;
    assert_v1_error(&again, 422, "INVALID_STATUS");
    let first_id = first.body["data"]["id"].as_str().unwrap();
    let succeeded = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/refunds/{first_id}/complete"),
            Some(&merchant.api_key),
            Some(json!({ "status": "SUCCESS" })),
        )
        .await;
    assert_eq!(succeeded.body["data"]["status"], json!("SUCCESS"));
    assert_eq!(server.balance(&merchant.api_key).await, funded - 300_000);
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn a_refund_the_wallet_cannot_cover_is_refused() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let order = create_order(&server, &merchant.api_key, qris_body("RF-IB", 1_000_000)).await;
    let ref_code = order["ref_code"].as_str().unwrap();
    pay(&server, &merchant.api_key, ref_code).await;
    // The wallet holds the amount minus MDR: a full refund does not fit.
    let reply = refund(&server, &merchant.api_key, ref_code, 1_000_000, "full").await;
    assert_v1_error(&reply, 422, "INSUFFICIENT_BALANCE");
    assert_eq!(server.balance(&merchant.api_key).await, 1_000_000 - qris_mdr(1_000_000));
    let order_now = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
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
            .call(
                Method::GET,
                &format!("/v1/orders/{ref_code}/refunds"),
                Some(&merchant.api_key),
                None,
            )
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
    let order_now = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
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
    let got = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(got.body["data"]["status"], json!("PARTIALLY_REFUNDED"));
    assert_eq!(got.body["data"]["refunded_amount_minor"], json!(250_000));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        1_000_000 - qris_mdr(1_000_000) - 250_000
    );
    let again = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(qris_body("K-2", 5_000)),
        )
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
