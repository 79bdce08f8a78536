//! Payment vendors against a real vendor server on loopback started by the
//! test: configuration per organization and payment method,
//! failover past a 5xx and a timeout, `VENDOR_ERROR` and `NO_VENDOR`, signed
//! requests, signed callbacks for payments and refunds, and
//! `REFUND_NOT_SUPPORTED`.

mod support;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::routing::post;
use axum::Router;
use hmac::{Hmac, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::Sha256;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

const SECRET: &str = "vendor-shared-secret";

/// What the vendor server saw: (behaviour, operation, body, signature valid).
type Calls = Arc<Mutex<Vec<(String, String, Value, bool)>>>;

fn signature(body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
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
        .admin(
            Method::PUT,
            &format!("/admin/v1/vendors/{name}"),
            Some(json!({ "url": url, "secret": SECRET, "timeout_ms": 1_500, "supports_refund": supports_refund })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

async fn route(server: &TestServer, organization: &str, method: &str, vendors: &[&str]) -> Reply {
    server
        .admin(
            Method::PUT,
            &format!("/admin/v1/organizations/{organization}/vendors/{method}"),
            Some(json!({ "vendors": vendors })),
        )
        .await
}

/// An organization with one WALLET merchant in it.
async fn organization_with_merchant(server: &TestServer) -> (String, TestMerchant) {
    let reply = server
        .admin(
            Method::POST,
            "/admin/v1/organizations",
            Some(json!({ "name": "Aggregator" })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let organization = reply.body["data"]["id"].as_str().unwrap().to_string();
    let merchant = server
        .create_merchant_with("WALLET", json!({ "organization_id": organization }))
        .await;
    (organization, merchant)
}

async fn callback(server: &TestServer, vendor: &str, body: Value, sign_with: Option<&str>) -> Reply {
    let bytes = body.to_string();
    let mut request = server
        .client
        .post(format!("{}/callbacks/{vendor}", server.base))
        .header("content-type", "application/json")
        .body(bytes.clone());
    if let Some(secret) = sign_with {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(bytes.as_bytes());
        request = request.header(
            "X-Paygate-Signature",
            format!("sha256={}", hex::encode(mac.finalize().into_bytes())),
        );
    }
    into_reply(request.send().await.unwrap()).await
}

fn order_body(id: &str, method: &str) -> Value {
    json!({ "merchant_order_id": id, "amount_minor": 1_000_000, "payment_method": method })
}

#[tokio::test]
async fn vendors_are_tried_in_order_past_errors_and_timeouts() {
    let (vendor_url, calls) = start_vendor().await;
    let server = TestServer::start();
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_vendor(&server, "v-broken", format!("{vendor_url}/broken"), true).await;
    add_vendor(&server, "v-slow", format!("{vendor_url}/slow"), true).await;
    add_vendor(&server, "v-garbage", format!("{vendor_url}/garbage"), true).await;
    add_vendor(&server, "v-ok", format!("{vendor_url}/ok"), true).await;
    let routed = route(
        &server,
        &organization,
        "QRIS",
        &["v-broken", "v-slow", "v-garbage", "v-ok"],
    )
    .await;
    assert_eq!(routed.status, StatusCode::OK, "{}", routed.body);
    assert_eq!(
        routed.body["data"]["vendors"],
        json!(["v-broken", "v-slow", "v-garbage", "v-ok"])
    );

    let created = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("F-1", "QRIS")),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let ref_code = created.body["data"]["ref_code"].as_str().unwrap().to_string();
    assert!(created.body["data"]["qris_string"].as_str().is_some());
    let seen: Vec<(String, String, bool)> = calls
        .lock()
        .unwrap()
        .iter()
        .map(|(behaviour, operation, _, signed)| (behaviour.clone(), operation.clone(), *signed))
        .collect();
    let expected: Vec<(String, String, bool)> = ["broken", "slow", "garbage", "ok"]
        .iter()
        .map(|b| (b.to_string(), "payments".to_string(), true))
        .collect();
    assert_eq!(seen, expected, "tried in order, each request signed");
    let request = calls.lock().unwrap()[3].2.clone();
    assert_eq!(request["ref_code"], json!(ref_code));
    assert_eq!(request["amount_minor"], json!(1_000_000));
    assert_eq!(request["payment_method"], json!("QRIS"));

    // Bank transfers take the vendor's virtual account.
    route(&server, &organization, "BANK_TRANSFER", &["v-ok"]).await;
    let va = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("F-2", "BANK_TRANSFER")),
        )
        .await;
    assert_eq!(va.status, StatusCode::CREATED, "{}", va.body);
    assert_eq!(
        va.body["data"]["virtual_account"],
        json!({ "bank_short_code": "BNI", "account_number": "988812345678" })
    );
}

#[tokio::test]
async fn all_vendors_failing_is_vendor_error_and_none_configured_is_no_vendor() {
    let (vendor_url, _calls) = start_vendor().await;
    let server = TestServer::start();
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_vendor(&server, "v-broken", format!("{vendor_url}/broken"), true).await;
    add_vendor(&server, "v-slow", format!("{vendor_url}/slow"), true).await;
    route(&server, &organization, "QRIS", &["v-broken", "v-slow"]).await;
    let failed = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("E-1", "QRIS")),
        )
        .await;
    assert_v1_error(&failed, 503, "VENDOR_ERROR");
    // A vendor that refuses connections.
    add_vendor(&server, "v-closed", "http://127.0.0.1:9/nothing".into(), true).await;
    route(&server, &organization, "QRIS", &["v-closed"]).await;
    let refused = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("E-1", "QRIS")),
        )
        .await;
    assert_v1_error(&refused, 503, "VENDOR_ERROR");

    route(&server, &organization, "QRIS", &[]).await;
    let none = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("E-1", "QRIS")),
        )
        .await;
    assert_v1_error(&none, 503, "NO_VENDOR");
    let list = server
        .call(Method::GET, "/v1/orders", Some(&merchant.api_key), None)
        .await;
    assert_eq!(list.body["meta"]["total"], json!(0), "nothing was created");
    // The same id works once a vendor answers.
    route(&server, &organization, "QRIS", &["sandbox"]).await;
    let created = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("E-1", "QRIS")),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
}

#[tokio::test]
async fn signed_callbacks_pay_once_and_refunds_come_back_through_them() {
    let (vendor_url, calls) = start_vendor().await;
    let server = TestServer::start();
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_vendor(&server, "v-ok", format!("{vendor_url}/ok"), true).await;
    route(&server, &organization, "QRIS", &["v-ok"]).await;
    let created = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("C-1", "QRIS")),
        )
        .await;
    let ref_code = created.body["data"]["ref_code"].as_str().unwrap().to_string();
    let paid = json!({ "type": "payment", "ref_code": ref_code, "status": "PAID", "vendor_rrn": "RRN000111222" });

    let unsigned = callback(&server, "v-ok", paid.clone(), None).await;
    assert_v1_error(&unsigned, 401, "INVALID_SIGNATURE");
    let forged = callback(&server, "v-ok", paid.clone(), Some("other-secret")).await;
    assert_v1_error(&forged, 401, "INVALID_SIGNATURE");
    let unknown = callback(&server, "v-nobody", paid.clone(), Some(SECRET)).await;
    assert_v1_error(&unknown, 404, "NOT_FOUND");
    assert_eq!(server.balance(&merchant.api_key).await, 0);

    let accepted = callback(&server, "v-ok", paid.clone(), Some(SECRET)).await;
    assert_eq!(accepted.status, StatusCode::OK, "{}", accepted.body);
    assert_eq!(accepted.body["data"], json!({ "received": true, "status": "PAID" }));
    let repeated = callback(&server, "v-ok", paid.clone(), Some(SECRET)).await;
    assert_eq!(repeated.status, StatusCode::OK);
    let net = 1_000_000 - (1_000_000 * 70 + 5_000) / 10_000;
    assert_eq!(server.balance(&merchant.api_key).await, net, "credited once");
    let order = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(order.body["data"]["status"], json!("PAID"));
    assert_eq!(order.body["data"]["vendor_rrn"], json!("RRN000111222"));

    // Refund: the vendor is asked, answers PENDING, then calls back FAILED.
    let refund = server
        .call(
            Method::POST,
            &format!("/v1/orders/{ref_code}/refund"),
            Some(&merchant.api_key),
            Some(json!({ "amount_minor": 400_000, "idempotency_key": "rf-1" })),
        )
        .await;
    assert_eq!(refund.status, StatusCode::CREATED, "{}", refund.body);
    let refund_id = refund.body["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(server.balance(&merchant.api_key).await, net - 400_000);
    let asked = eventually(Duration::from_secs(5), || {
        calls.lock().unwrap().iter().any(|(_, operation, body, signed)| {
            operation == "refunds" && body["refund_id"] == json!(refund_id) && *signed
        })
    })
    .await;
    assert!(asked, "the vendor was asked to refund");
    let reference = format!("rf-{refund_id}");
    assert_eq!(
        refund_reference(&server, &merchant, &ref_code).await,
        json!(reference),
        "the vendor's reference is kept while it works"
    );
    let failed = json!({ "type": "refund", "refund_id": refund_id, "status": "FAILED" });
    let reply = callback(&server, "v-ok", failed.clone(), Some(SECRET)).await;
    assert_eq!(reply.body["data"]["status"], json!("FAILED"), "{}", reply.body);
    assert_eq!(server.balance(&merchant.api_key).await, net, "money back");
    let again = callback(
        &server,
        "v-ok",
        json!({ "type": "refund", "refund_id": refund_id, "status": "SUCCESS" }),
        Some(SECRET),
    )
    .await;
    assert_eq!(
        again.body["data"]["status"],
        json!("FAILED"),
        "a settled refund stays settled"
    );
    assert_eq!(server.balance(&merchant.api_key).await, net);
    let refunds = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}/refunds"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(refunds.body["data"][0]["status"], json!("FAILED"));
    assert_eq!(refunds.body["data"][0]["vendor_refund_id"], json!(reference));
    assert_eq!(server.verify().await["balanced"], json!(true));

    // Another vendor cannot confirm this vendor's orders.
    add_vendor(&server, "v-other", format!("{vendor_url}/ok"), true).await;
    let other = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("C-2", "QRIS")),
        )
        .await;
    let other_ref = other.body["data"]["ref_code"].as_str().unwrap();
    let hijack = callback(
        &server,
        "v-other",
        json!({ "type": "payment", "ref_code": other_ref, "status": "PAID" }),
        Some(SECRET),
    )
    .await;
    assert_v1_error(&hijack, 404, "ORDER_NOT_FOUND");
}

/// The first refund's `vendor_refund_id` once the vendor's answer is
/// recorded (null if it never is within a few seconds).
async fn refund_reference(server: &TestServer, merchant: &TestMerchant, ref_code: &str) -> Value {
    let path = format!("/v1/orders/{ref_code}/refunds");
    for _ in 0..250 {
        let refunds = server.call(Method::GET, &path, Some(&merchant.api_key), None).await;
        let reference = &refunds.body["data"][0]["vendor_refund_id"];
        if !reference.is_null() {
            return reference.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Value::Null
}

#[tokio::test]
async fn a_refund_the_vendor_took_is_not_asked_again_after_a_restart() {
    let (vendor_url, calls) = start_vendor().await;
    let mut server = TestServer::start();
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_vendor(&server, "v-ok", format!("{vendor_url}/ok"), true).await;
    route(&server, &organization, "QRIS", &["v-ok"]).await;
    let created = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("RS-1", "QRIS")),
        )
        .await;
    let ref_code = created.body["data"]["ref_code"].as_str().unwrap().to_string();
    let paid = json!({ "type": "payment", "ref_code": ref_code, "status": "PAID" });
    assert_eq!(
        callback(&server, "v-ok", paid, Some(SECRET)).await.status,
        StatusCode::OK
    );
    let refund = server
        .call(
            Method::POST,
            &format!("/v1/orders/{ref_code}/refund"),
            Some(&merchant.api_key),
            Some(json!({ "amount_minor": 2_000, "idempotency_key": "rs-1" })),
        )
        .await;
    assert_eq!(refund.status, StatusCode::CREATED, "{}", refund.body);
    let refund_id = refund.body["data"]["id"].as_str().unwrap().to_string();
    let reference = format!("rf-{refund_id}");
    assert_eq!(refund_reference(&server, &merchant, &ref_code).await, json!(reference));
    let balance = server.balance(&merchant.api_key).await;

    server.kill();
    server.restart();
    // Give the restart's resumption of open refunds time to act.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let asked = calls
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, operation, body, _)| operation == "refunds" && body["refund_id"] == json!(refund_id))
        .count();
    assert_eq!(asked, 1, "the vendor took it once; the restart waits for its callback");
    let refunds = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}/refunds"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(refunds.body["data"][0]["status"], json!("PENDING"));
    assert_eq!(server.balance(&merchant.api_key).await, balance);

    let success = json!({ "type": "refund", "refund_id": refund_id, "status": "SUCCESS" });
    let reply = callback(&server, "v-ok", success, Some(SECRET)).await;
    assert_eq!(reply.body["data"]["status"], json!("SUCCESS"), "{}", reply.body);
    assert_eq!(server.balance(&merchant.api_key).await, balance);
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn vendors_without_refunds_refuse_them() {
    let (vendor_url, _calls) = start_vendor().await;
    let server = TestServer::start();
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_vendor(&server, "v-norefund", format!("{vendor_url}/ok"), false).await;
    route(&server, &organization, "QRIS", &["v-norefund"]).await;
    let created = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("N-1", "QRIS")),
        )
        .await;
    let ref_code = created.body["data"]["ref_code"].as_str().unwrap();
    let paid = callback(
        &server,
        "v-norefund",
        json!({ "type": "payment", "ref_code": ref_code, "status": "PAID" }),
        Some(SECRET),
    )
    .await;
    assert_eq!(paid.status, StatusCode::OK);
    let before = server.balance(&merchant.api_key).await;
    let refund = server
        .call(
            Method::POST,
            &format!("/v1/orders/{ref_code}/refund"),
            Some(&merchant.api_key),
            Some(json!({ "amount_minor": 1_000, "idempotency_key": "nr" })),
        )
        .await;
    assert_v1_error(&refund, 422, "REFUND_NOT_SUPPORTED");
    assert_eq!(server.balance(&merchant.api_key).await, before);
}

#[tokio::test]
async fn vendor_configuration_is_validated() {
    let server = TestServer::start();
    let (organization, _merchant) = organization_with_merchant(&server).await;
    let bad_url = server
        .admin(
            Method::PUT,
            "/admin/v1/vendors/v-x",
            Some(json!({ "url": "ftp://x", "secret": "s" })),
        )
        .await;
    assert_v1_error(&bad_url, 400, "INVALID_BODY");
    let bad_name = server
        .admin(
            Method::PUT,
            "/admin/v1/vendors/Bad%20Name",
            Some(json!({ "url": "http://x.example", "secret": "s" })),
        )
        .await;
    assert_v1_error(&bad_name, 400, "INVALID_BODY");
    let sandbox = server
        .admin(
            Method::PUT,
            "/admin/v1/vendors/sandbox",
            Some(json!({ "url": "http://x.example", "secret": "s" })),
        )
        .await;
    assert_v1_error(&sandbox, 400, "INVALID_BODY");
    assert_v1_error(
        &route(&server, &organization, "QRIS", &["v-missing"]).await,
        400,
        "INVALID_BODY",
    );
    assert_v1_error(
        &route(&server, &organization, "CASH", &["sandbox"]).await,
        400,
        "INVALID_BODY",
    );
    assert_v1_error(
        &route(&server, "not-a-uuid", "QRIS", &["sandbox"]).await,
        400,
        "INVALID_ID",
    );
    let no_token = server
        .client
        .put(format!("{}/admin/v1/vendors/v-x", server.base))
        .json(&json!({ "url": "http://x.example", "secret": "s" }))
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn oversized_vendor_answers_are_refused_and_the_next_vendor_tried() {
    let (vendor_url, calls) = start_vendor().await;
    let server = TestServer::start();
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_vendor(&server, "v-huge", format!("{vendor_url}/huge"), true).await;
    add_vendor(&server, "v-longva", format!("{vendor_url}/longva"), true).await;
    add_vendor(&server, "v-ok", format!("{vendor_url}/ok"), true).await;
    route(&server, &organization, "QRIS", &["v-huge", "v-ok"]).await;
    let created = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("H-1", "QRIS")),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let tried: Vec<String> = calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert_eq!(tried, ["huge", "ok"]);

    route(&server, &organization, "BANK_TRANSFER", &["v-longva"]).await;
    let refused = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body("H-2", "BANK_TRANSFER")),
        )
        .await;
    assert_v1_error(&refused, 503, "VENDOR_ERROR");
    let list = server
        .call(Method::GET, "/v1/orders", Some(&merchant.api_key), None)
        .await;
    assert_eq!(list.body["meta"]["total"], json!(1), "the refused order is not stored");
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
    let created = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(order_body(id, "QRIS")),
        )
        .await;
    let ref_code = created.body["data"]["ref_code"].as_str().unwrap().to_string();
    let paid = json!({ "type": "payment", "ref_code": ref_code, "status": "PAID" });
    assert_eq!(
        callback(server, vendor, paid, Some(SECRET)).await.status,
        StatusCode::OK
    );
    let refund = server
        .call(
            Method::POST,
            &format!("/v1/orders/{ref_code}/refund"),
            Some(&merchant.api_key),
            Some(json!({ "amount_minor": amount, "idempotency_key": format!("{id}-refund") })),
        )
        .await;
    assert_eq!(refund.status, StatusCode::CREATED, "{}", refund.body);
    (ref_code, refund)
}

#[tokio::test]
async fn a_refund_vendor_failure_of_unknown_outcome_is_asked_again_and_a_refusal_fails_it() {
    let (vendor_url, calls) = start_vendor().await;
    let server = TestServer::start();
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_vendor(&server, "v-flaky", format!("{vendor_url}/flaky"), true).await;
    add_vendor(&server, "v-refuse", format!("{vendor_url}/refuse"), true).await;

    // A 5xx: the same refund id again a second later; it stays PENDING, debited.
    let (ref_code, refund) = paid_order_refunded(&server, &organization, &merchant, "v-flaky", "FL-1", 3_000).await;
    let refund_id = refund.body["data"]["id"].as_str().unwrap().to_string();
    let balance = server.balance(&merchant.api_key).await;
    let asked_twice = eventually(Duration::from_secs(5), || {
        calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, operation, body, _)| operation == "refunds" && body["refund_id"] == json!(refund_id))
            .count()
            == 2
    })
    .await;
    assert!(asked_twice, "asked again after the 5xx");
    assert_eq!(
        refund_reference(&server, &merchant, &ref_code).await,
        json!(format!("rf-{refund_id}"))
    );
    let refunds = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}/refunds"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(refunds.body["data"][0]["status"], json!("PENDING"));
    assert_eq!(server.balance(&merchant.api_key).await, balance, "still debited");

    // A 4xx: the vendor refused; the refund fails and the money comes back.
    let (ref_code, _) = paid_order_refunded(&server, &organization, &merchant, "v-refuse", "RF-1", 3_000).await;
    let path = format!("/v1/orders/{ref_code}/refunds");
    let failed = eventually_async(Duration::from_secs(5), || async {
        let refunds = server.call(Method::GET, &path, Some(&merchant.api_key), None).await;
        refunds.body["data"][0]["status"] == json!("FAILED")
    })
    .await;
    assert!(failed, "a refusal fails the refund at once");
    let refused_calls = calls
        .lock()
        .unwrap()
        .iter()
        .filter(|c| c.0 == "refuse" && c.1 == "refunds")
        .count();
    assert_eq!(refused_calls, 1, "a refusal is not asked again");
    assert_eq!(server.verify().await["balanced"], json!(true));
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

#[tokio::test]
async fn concurrent_repeats_of_one_order_ask_the_vendor_once() {
    let (vendor_url, calls) = start_vendor().await;
    let server = TestServer::start();
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_vendor(&server, "v-unhurried", format!("{vendor_url}/unhurried"), true).await;
    route(&server, &organization, "QRIS", &["v-unhurried"]).await;
    let body = order_body("SAME-1", "QRIS");
    let send = |with_key: bool| {
        let mut request = server
            .client
            .post(format!("{}/v1/orders", server.base))
            .header("X-API-Key", &merchant.api_key)
            .json(&body);
        if with_key {
            request = request.header("Idempotency-Key", "same-key-1");
        }
        async move { into_reply(request.send().await.unwrap()).await }
    };
    let replies = futures::future::join_all((0..5).map(|_| send(true))).await;
    let mut ref_codes: Vec<String> = replies
        .iter()
        .map(|reply| {
            assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
            reply.body["data"]["ref_code"].as_str().unwrap().to_string()
        })
        .collect();
    ref_codes.dedup();
    assert_eq!(ref_codes.len(), 1, "one order: {ref_codes:?}");
    // The same order id without the key: duplicates, still without asking the vendor.
    let repeats = futures::future::join_all((0..3).map(|_| send(false))).await;
    for reply in &repeats {
        assert_v1_error(reply, 409, "DUPLICATE_ORDER");
    }
    let asked = calls.lock().unwrap().iter().filter(|c| c.1 == "payments").count();
    assert_eq!(asked, 1, "the vendor took one payment for one order");
}
