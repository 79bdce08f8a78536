//! Payment vendors against a real vendor server on loopback started by the
//! test: configuration per organization and payment method,
//! failover past a 5xx and a timeout, `VENDOR_ERROR` and `NO_VENDOR`, signed
//! requests, signed callbacks for payments and refunds, and
//! `REFUND_NOT_SUPPORTED`.
//! This file holds the vendor stand-in and the requests its modules share.

#[path = "../support/mod.rs"]
mod support;

mod callbacks_and_refunds;
mod payments;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::routing::post;
use axum::Router;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

const SECRET: &str = "vendor-shared-secret";

/// What the vendor server saw: (behaviour, operation, body, signature valid).
type Calls = Arc<Mutex<Vec<(String, String, Value, bool)>>>;

fn signature(body: &[u8]) -> String {
    hmac_signature(SECRET, body)
}

async fn vendor_endpoint(
    State(calls): State<Calls>,
    Path((behaviour, operation)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> (AxumStatus, String) {
    let signed = headers
        .get("x-paygate-signature")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|s| s == signature(&body));
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let asked_before = {
        let mut calls = calls.lock().unwrap();
        let before = calls
            .iter()
            .filter(|(b, o, body, _)| *b == behaviour && *o == operation && body["refund_id"] == parsed["refund_id"])
            .count();
        calls.push((behaviour.clone(), operation.clone(), parsed.clone(), signed));
        before
    };
    match behaviour.as_str() {
        // Refunds: a first answer of 500 (taken or not, the caller cannot tell), then accepted.
        "flaky" if operation == "refunds" && asked_before == 0 => (AxumStatus::BAD_GATEWAY, "try later".into()),
        // Payments answered after a while, so repeats of one order overlap.
        "unhurried" if operation == "payments" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let ref_code = parsed["ref_code"].as_str().unwrap_or_default();
            (AxumStatus::OK, json!({ "reference": format!("u-{ref_code}") }).to_string())
        }
        // Refunds refused outright.
        "refuse" if operation == "refunds" => (AxumStatus::UNPROCESSABLE_ENTITY, "no".into()),
        "broken" => (AxumStatus::INTERNAL_SERVER_ERROR, "down".into()),
        "garbage" => (AxumStatus::OK, "not json".into()),
        // Valid answers, but far too big to take.
        "huge" => (
            AxumStatus::OK,
            json!({ "reference": "huge", "padding": "A".repeat(1 << 20) }).to_string(),
        ),
        "longva" => (
            AxumStatus::OK,
            json!({ "reference": "longva", "virtual_account": { "bank_short_code": "BNI", "account_number": "9".repeat(10_000) } })
                .to_string(),
        ),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(6)).await;
            (AxumStatus::OK, json!({ "reference": "late" }).to_string())
        }
        _ if operation == "payments" => {
            let ref_code = parsed["ref_code"].as_str().unwrap_or_default();
            let mut answer = json!({ "reference": format!("{behaviour}-{ref_code}") });
            if parsed["payment_method"] == json!("BANK_TRANSFER") {
                answer["virtual_account"] = json!({ "bank_short_code": "BNI", "account_number": "988812345678" });
            }
            (AxumStatus::OK, answer.to_string())
        }
        _ => (
            AxumStatus::OK,
            json!({ "reference": format!("rf-{}", parsed["refund_id"].as_str().unwrap_or_default()), "status": "PENDING" })
                .to_string(),
        ),
    }
}

/// Starts the vendor server; returns its base URL and the call log.
async fn start_vendor() -> (String, Calls) {
    let calls: Calls = Arc::default();
    let app = Router::new()
        .route("/{behaviour}/{operation}", post(vendor_endpoint))
        .with_state(calls.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}"), calls)
}

async fn add_vendor(server: &TestServer, name: &str, url: String, supports_refund: bool) {
    let reply = server
        .admin_put(
            &format!("/admin/v1/vendors/{name}"),
            json!({ "url": url, "secret": SECRET, "timeout_ms": 1_500, "supports_refund": supports_refund }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

async fn route(server: &TestServer, organization: &str, method: &str, vendors: &[&str]) -> Reply {
    server.put_route(organization, "vendors", method, vendors).await
}

/// An organization with one WALLET merchant in it.
async fn organization_with_merchant(server: &TestServer) -> (String, TestMerchant) {
    server.merchant_in_new_organization("Aggregator").await
}

async fn callback(server: &TestServer, vendor: &str, body: Value, sign_with: Option<&str>) -> Reply {
    let bytes = body.to_string();
    let signature = sign_with.map(|secret| hmac_signature(secret, bytes.as_bytes()));
    vendor_callback(server, vendor, bytes, signature).await
}

/// `POST /v1/orders` of IDR 10,000 by `method` as `merchant`, with the id `id`.
async fn new_order(server: &TestServer, merchant: &TestMerchant, id: &str, method: &str) -> Reply {
    server
        .post("/v1/orders", &merchant.api_key, Some(order_body(id, method)))
        .await
}

/// What most tests start from: the scripted vendor (its base URL and call
/// log), a server, and a WALLET merchant in an organization of its own.
async fn setup() -> (String, Calls, TestServer, String, TestMerchant) {
    let (vendor_url, calls) = start_vendor().await;
    let server = TestServer::start();
    let (organization, merchant) = organization_with_merchant(&server).await;
    (vendor_url, calls, server, organization, merchant)
}

fn order_body(id: &str, method: &str) -> Value {
    json!({ "merchant_order_id": id, "amount_minor": 1_000_000, "payment_method": method })
}

/// The first refund's `vendor_refund_id` once the vendor's answer is
/// recorded (null if it never is within a few seconds).
async fn refund_reference(server: &TestServer, merchant: &TestMerchant, ref_code: &str) -> Value {
    let path = format!("/v1/orders/{ref_code}/refunds");
    for _ in 0..250 {
        let refunds = server.get(&path, &merchant.api_key).await;
        let reference = &refunds.body["data"][0]["vendor_refund_id"];
        if !reference.is_null() {
            return reference.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Value::Null
}

/// Pays a new order at vendor `vendor` (routed alone) and refunds `amount` of it.
async fn paid_order_refunded(
    server: &TestServer,
    organization: &str,
    merchant: &TestMerchant,
    vendor: &str,
    id: &str,
    amount: i64,
) -> (String, Reply) {
    route(server, organization, "QRIS", &[vendor]).await;
    let created = new_order(server, merchant, id, "QRIS").await;
    let ref_code = created.body["data"]["ref_code"].as_str().unwrap().to_string();
    let paid = json!({ "type": "payment", "ref_code": ref_code, "status": "PAID" });
    assert_eq!(
        callback(server, vendor, paid, Some(SECRET)).await.status,
        StatusCode::OK
    );
    let key = format!("{id}-refund");
    let refund = server.refund_of(&merchant.api_key, &ref_code, amount, &key).await;
    assert_eq!(refund.status, StatusCode::CREATED, "{}", refund.body);
    (ref_code, refund)
}

async fn eventually_async<F, Fut>(timeout: Duration, check: F) -> bool
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < deadline {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check().await
}
