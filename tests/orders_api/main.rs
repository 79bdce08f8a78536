//! V1 orders over HTTP against the real binary: QRIS and bank transfers,
//! validation, idempotency, signatures, reads and lists, payment and the
//! sandbox routes, refunds and their vendor outcome, concurrency, restarts.
//! This file holds the requests and decoders its modules share.

#[path = "../support/mod.rs"]
mod support;

mod creation;
mod payment;
mod refunds;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
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
        .post(server.url(path))
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
    let reply = server.post("/v1/orders", api_key, Some(body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body["data"].clone()
}

async fn order_count(server: &TestServer, api_key: &str) -> i64 {
    let reply = server.get("/v1/orders", api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["meta"]["total"].as_i64().unwrap()
}

async fn pay(server: &TestServer, api_key: &str, ref_code: &str) -> Reply {
    sandbox_order(server, api_key, ref_code, "pay", None).await
}

async fn refund(server: &TestServer, api_key: &str, ref_code: &str, amount: i64, key: &str) -> Reply {
    server
        .post(
            &format!("/v1/orders/{ref_code}/refund"),
            api_key,
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

/// `GET /v1/orders/{ref_code}` as the merchant of `api_key`.
async fn get_order(server: &TestServer, api_key: &str, ref_code: &str) -> Reply {
    server.get(&format!("/v1/orders/{ref_code}"), api_key).await
}

/// `GET /v1/orders{query}` as the merchant of `api_key`.
async fn list_orders(server: &TestServer, api_key: &str, query: &str) -> Reply {
    server.get(&format!("/v1/orders{query}"), api_key).await
}

/// `POST /v1/sandbox/orders/{ref_code}/{action}` (pay, expire, fail).
async fn sandbox_order(server: &TestServer, api_key: &str, ref_code: &str, action: &str, body: Option<Value>) -> Reply {
    server
        .post(&format!("/v1/sandbox/orders/{ref_code}/{action}"), api_key, body)
        .await
}

/// `POST /v1/sandbox/refunds/{id}/complete` with `status`.
async fn complete_refund(server: &TestServer, api_key: &str, id: &str, status: &str) -> Reply {
    server
        .post(
            &format!("/v1/sandbox/refunds/{id}/complete"),
            api_key,
            Some(json!({ "status": status })),
        )
        .await
}
