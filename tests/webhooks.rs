//! Webhooks against a real receiver on loopback started by the test:
//! events for status changes, V1 and Legacy bodies, Standard
//! Webhooks signatures checked with the `standardwebhooks` crate and the
//! `X-Signature` scheme, retries with the same `webhook-id`, delivery after
//! a SIGKILL, resends, the deliveries list, and isolation from a dead endpoint.

mod support;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::routing::post;
use axum::Router;
use hmac::{Hmac, Mac};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use sha2::{Digest, Sha256, Sha512};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

/// What the receiver answers: a queue of statuses (then 200), or hang;
/// `delay`: how long each answer takes.
#[derive(Default)]
struct Script {
    statuses: VecDeque<u16>,
    hang: bool,
    delay: Duration,
}

/// One received request: path, headers, raw body.
#[derive(Clone)]
struct Received {
    path: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

#[derive(Clone, Default)]
struct Receiver {
    script: Arc<Mutex<Script>>,
    received: Arc<Mutex<Vec<Received>>>,
    /// Requests being answered now, and the most there ever were at once.
    in_flight: Arc<AtomicUsize>,
    most_in_flight: Arc<AtomicUsize>,
}

impl Receiver {
    fn most_in_flight(&self) -> usize {
        self.most_in_flight.load(Ordering::SeqCst)
    }

    fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    fn on(&self, path: &str) -> Vec<Received> {
        self.received().into_iter().filter(|r| r.path == path).collect()
    }
}

async fn receive(
    State(receiver): State<Receiver>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> AxumStatus {
    let now_in_flight = receiver.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    receiver.most_in_flight.fetch_max(now_in_flight, Ordering::SeqCst);
    let (status, hang, delay) = {
        let mut script = receiver.script.lock().unwrap();
        (script.statuses.pop_front().unwrap_or(200), script.hang, script.delay)
    };
    if hang {
        tokio::time::sleep(Duration::from_secs(30)).await;
    }
    tokio::time::sleep(delay).await;
    receiver.in_flight.fetch_sub(1, Ordering::SeqCst);
    receiver.received.lock().unwrap().push(Received {
        path: uri.path().to_string(),
        headers,
        body: body.to_vec(),
    });
    AxumStatus::from_u16(status).unwrap()
}

/// Starts a receiver on a thread of its own (so it keeps answering while a
/// test blocks); returns its base URL.
fn start_receiver(receiver: Receiver) -> String {
    let (tell, told) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let app = Router::new().route("/{*path}", post(receive)).with_state(receiver);
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tell.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{}", told.recv().unwrap())
}

const FAST_RETRIES: &[&str] = &[
    "--webhook-retry-scale",
    "0.001",
    "--sandbox-disbursement-delay-ms",
    "200",
];

async fn wait_for(receiver: &Receiver, path: &str, count: usize) -> Vec<Received> {
    for _ in 0..300 {
        let got = receiver.on(path);
        if got.len() >= count {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("expected {count} deliveries to {path}, got {}", receiver.on(path).len());
}

fn json_body(received: &Received) -> Value {
    serde_json::from_slice(&received.body).expect("JSON body")
}

fn header<'a>(received: &'a Received, name: &str) -> &'a str {
    received
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Checks both signatures of a delivery with the merchant's webhook secret.
fn assert_signed(received: &Received, secret: &str) {
    let verifier = standardwebhooks::Webhook::new(secret).expect("whsec_ secret");
    verifier
        .verify(&received.body, &received.headers)
        .expect("Standard Webhooks signature verifies");
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(&received.body);
    let expected = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    assert_eq!(header(received, "x-signature"), expected);
    assert_eq!(header(received, "content-type"), "application/json");
}

async fn create_order(server: &TestServer, merchant: &TestMerchant, id: &str, notify_url: &str) -> String {
    let reply = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(json!({ "merchant_order_id": id, "amount_minor": 1_000_000, "payment_method": "QRIS", "notify_url": notify_url })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body["data"]["ref_code"].as_str().unwrap().to_string()
}

async fn pay(server: &TestServer, merchant: &TestMerchant, ref_code: &str) {
    let reply = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/orders/{ref_code}/pay"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

/// Creates and pays `count` orders of `merchant` with the notify URL
/// `notify_url`, their order ids `{prefix}-0`, `{prefix}-1`, ...
async fn pay_orders(server: &TestServer, merchant: &TestMerchant, prefix: &str, count: usize, notify_url: &str) {
    for i in 0..count {
        let ref_code = create_order(server, merchant, &format!("{prefix}-{i}"), notify_url).await;
        pay(server, merchant, &ref_code).await;
    }
}

/// A receiver that never answers and a healthy one, with their base URLs.
fn stuck_and_healthy_receivers() -> (Receiver, String, Receiver, String) {
    let stuck = Receiver::default();
    stuck.script.lock().unwrap().hang = true;
    let stuck_base = start_receiver(stuck.clone());
    let healthy = Receiver::default();
    let healthy_base = start_receiver(healthy.clone());
    (stuck, stuck_base, healthy, healthy_base)
}

#[tokio::test]
async fn a_paid_order_is_delivered_signed_with_its_v1_fields() {
    let receiver = Receiver::default();
    let base = start_receiver(receiver.clone());
    let server = TestServer::start_with(FAST_RETRIES);
    let merchant = server.create_wallet_merchant().await;
    let ref_code = create_order(&server, &merchant, "WH-1", &format!("{base}/orders")).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(receiver.received().is_empty(), "creation sends nothing");
    pay(&server, &merchant, &ref_code).await;
    let got = wait_for(&receiver, "/orders", 1).await;
    let delivery = &got[0];
    assert_signed(delivery, &merchant.webhook_secret);
    let body = json_body(delivery);
    assert_eq!(body["event"], json!("order.paid"));
    assert_eq!(body["event_id"], json!(header(delivery, "webhook-id")));
    assert!(body["event_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(body["ref_code"], json!(ref_code));
    assert_eq!(body["merchant_order_id"], json!("WH-1"));
    assert_eq!(body["amount_minor"], json!(1_000_000));
    assert_eq!(body["status"], json!("PAID"));
    assert!(body["paid_at"].as_str().unwrap().ends_with('Z'));

    let event_id = body["event_id"].as_str().unwrap().to_string();
    let mut listed = Value::Null;
    for _ in 0..100 {
        let reply = server
            .call(
                Method::GET,
                &format!("/v1/webhooks/deliveries?event_id={event_id}"),
                Some(&merchant.api_key),
                None,
            )
            .await;
        if reply.body["meta"]["total"] == json!(1) {
            listed = reply.body["data"][0].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for field in [
        "event_id",
        "event",
        "url",
        "attempt",
        "status_code",
        "latency_ms",
        "error",
        "next_retry_at",
        "delivered",
    ] {
        assert!(listed.get(field).is_some(), "{field} missing in {listed}");
    }
    assert_eq!(listed["event"], json!("order.paid"));
    assert_eq!(listed["url"], json!(format!("{base}/orders")));
    assert_eq!(listed["attempt"], json!(1));
    assert_eq!(listed["status_code"], json!(200));
    assert_eq!(listed["delivered"], json!(true));
    assert_eq!(listed["next_retry_at"], Value::Null);
    assert_eq!(listed["error"], Value::Null);

    // Resend: the same event id again, as a new attempt.
    let resent = server
        .call(
            Method::POST,
            &format!("/v1/webhooks/deliveries/{event_id}/resend"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(resent.status, StatusCode::OK, "{}", resent.body);
    assert_eq!(resent.body["data"]["attempt"], json!(2));
    assert_eq!(resent.body["data"]["delivered"], json!(true));
    let got = wait_for(&receiver, "/orders", 2).await;
    assert_eq!(header(&got[1], "webhook-id"), event_id);
    assert_signed(&got[1], &merchant.webhook_secret);
    let bad = server
        .call(
            Method::POST,
            "/v1/webhooks/deliveries/not-a-uuid/resend",
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_v1_error(&bad, 400, "INVALID_ID");
    let other = server.create_wallet_merchant().await;
    let foreign = server
        .call(
            Method::POST,
            &format!("/v1/webhooks/deliveries/{event_id}/resend"),
            Some(&other.api_key),
            None,
        )
        .await;
    assert_v1_error(&foreign, 404, "EVENT_NOT_FOUND");
}

#[tokio::test]
async fn failures_are_retried_with_the_same_webhook_id() {
    let receiver = Receiver::default();
    receiver.script.lock().unwrap().statuses = VecDeque::from([500, 500]);
    let base = start_receiver(receiver.clone());
    let server = TestServer::start_with(FAST_RETRIES);
    let merchant = server.create_wallet_merchant().await;
    let ref_code = create_order(&server, &merchant, "WH-R", &format!("{base}/retry")).await;
    pay(&server, &merchant, &ref_code).await;
    let got = wait_for(&receiver, "/retry", 3).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.on("/retry").len(), 3, "no attempt after the 2xx");
    let ids: Vec<&str> = got.iter().map(|r| header(r, "webhook-id")).collect();
    assert_eq!(ids[0], ids[1]);
    assert_eq!(ids[1], ids[2]);
    for delivery in &got {
        assert_signed(delivery, &merchant.webhook_secret);
    }
    let mut attempts = Value::Null;
    for _ in 0..100 {
        let reply = server
            .call(
                Method::GET,
                &format!("/v1/webhooks/deliveries?event_id={}", ids[0]),
                Some(&merchant.api_key),
                None,
            )
            .await;
        if reply.body["meta"]["total"] == json!(3) {
            attempts = reply.body["data"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Newest first: the delivered third attempt, then two failures with a next retry.
    assert_eq!(attempts[0]["attempt"], json!(3));
    assert_eq!(attempts[0]["delivered"], json!(true));
    for failed in [&attempts[1], &attempts[2]] {
        assert_eq!(failed["status_code"], json!(500));
        assert_eq!(failed["delivered"], json!(false));
        assert!(failed["next_retry_at"].is_string());
        assert!(failed["error"].is_string());
    }
    let undelivered = server
        .call(
            Method::GET,
            "/v1/webhooks/deliveries?delivered=false",
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(undelivered.body["meta"]["total"], json!(2));
    let bad = server
        .call(
            Method::GET,
            "/v1/webhooks/deliveries?delivered=maybe",
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_v1_error(&bad, 400, "INVALID_QUERY");
}

#[tokio::test]
async fn an_event_not_delivered_before_a_sigkill_is_delivered_after_restart() {
    let receiver = Receiver::default();
    receiver.script.lock().unwrap().hang = true;
    let base = start_receiver(receiver.clone());
    let mut server = TestServer::start_with(FAST_RETRIES);
    let merchant = server.create_wallet_merchant().await;
    let ref_code = create_order(&server, &merchant, "WH-K", &format!("{base}/kill")).await;
    pay(&server, &merchant, &ref_code).await;
    // The first attempt hangs in the receiver; the server dies under it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.kill();
    receiver.script.lock().unwrap().hang = false;
    server.restart();
    let got = wait_for(&receiver, "/kill", 1).await;
    let body = json_body(&got[0]);
    assert_eq!(body["event"], json!("order.paid"));
    assert_eq!(body["ref_code"], json!(ref_code));
    assert_signed(&got[0], &merchant.webhook_secret);
}

#[tokio::test]
async fn legacy_resources_get_the_legacy_body_with_a_valid_signature() {
    let receiver = Receiver::default();
    let base = start_receiver(receiver.clone());
    let server = TestServer::start_with(FAST_RETRIES);
    let merchant = server.create_wallet_merchant().await;
    let signature = hex::encode(Sha512::digest(
        format!("{}|LEG-1|25000|{}", merchant.client_id, merchant.client_secret).as_bytes(),
    ));
    let created = server
        .client
        .post(format!("{}/api/order/create", server.base))
        .json(&json!({
            "clientId": merchant.client_id, "orderId": "LEG-1", "totalAmount": 25000, "paymentType": "QRIS",
            "notifyUrl": format!("{base}/legacy"), "signature": signature,
        }))
        .send()
        .await
        .unwrap();
    let created: Value = created.json().await.unwrap();
    let ref_code = created["data"]["refCode"].as_str().unwrap().to_string();
    pay(&server, &merchant, &ref_code).await;
    let got = wait_for(&receiver, "/legacy", 1).await;
    let body = json_body(&got[0]);
    assert_eq!(body["refCode"], json!(ref_code));
    assert_eq!(body["orderId"], json!("LEG-1"));
    assert_eq!(body["totalAmount"], json!(25000));
    assert_eq!(body["status"], json!("PAID"));
    assert!(chrono::NaiveDateTime::parse_from_str(body["paidAt"].as_str().unwrap(), "%Y-%m-%d %H:%M:%S").is_ok());
    assert_eq!(
        body["signature"],
        json!(signature),
        "SHA-512 of clientId|orderId|totalAmount|clientSecret"
    );
    assert_signed(&got[0], &merchant.webhook_secret);
}

#[tokio::test]
async fn disbursement_and_refund_changes_are_events_too() {
    let receiver = Receiver::default();
    let base = start_receiver(receiver.clone());
    let server = TestServer::start_with(FAST_RETRIES);
    let merchant = server
        .create_merchant_with("WALLET", json!({ "default_notify_url": format!("{base}/default") }))
        .await;
    server.credit(&merchant.id, 10_000_000).await;
    let created = server
        .call(
            Method::POST,
            "/v1/disbursements",
            Some(&merchant.api_key),
            Some(json!({
                "idempotency_key": "wh-d-1", "channel": "BANK", "bank_short_code": "BCA",
                "account_number": "1234567890", "account_name": "Budi", "amount_minor": 1_000_000,
            })),
        )
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let got = wait_for(&receiver, "/default", 2).await;
    let events: Vec<Value> = got.iter().map(|r| json_body(r)["event"].clone()).collect();
    assert_eq!(
        events,
        vec![json!("disbursement.on_process"), json!("disbursement.success")]
    );
    let last = json_body(&got[1]);
    assert_eq!(last["ref_code"], created.body["data"]["ref_code"]);
    assert_eq!(last["status"], json!("SUCCESS"));

    // An order paid then partly refunded; the refund succeeds by itself.
    let order = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(json!({ "merchant_order_id": "WH-RF", "amount_minor": 1_000_000, "payment_method": "QRIS" })),
        )
        .await;
    let ref_code = order.body["data"]["ref_code"].as_str().unwrap();
    pay(&server, &merchant, ref_code).await;
    let refund = server
        .call(
            Method::POST,
            &format!("/v1/orders/{ref_code}/refund"),
            Some(&merchant.api_key),
            Some(json!({ "amount_minor": 100_000, "idempotency_key": "wh-rf" })),
        )
        .await;
    assert_eq!(refund.status, StatusCode::CREATED, "{}", refund.body);
    let got = wait_for(&receiver, "/default", 5).await;
    let mut events: Vec<String> = got[2..]
        .iter()
        .map(|r| json_body(r)["event"].as_str().unwrap().to_string())
        .collect();
    events.sort();
    assert_eq!(events, vec!["order.paid", "order.partially_refunded", "refund.success"]);
    let refund_body = got[2..]
        .iter()
        .map(json_body)
        .find(|b| b["event"] == json!("refund.success"))
        .unwrap();
    assert_eq!(refund_body["id"], refund.body["data"]["id"]);
    assert_eq!(refund_body["order_ref_code"], json!(ref_code));
    for delivery in &got {
        assert_signed(delivery, &merchant.webhook_secret);
    }
}

#[tokio::test]
async fn a_dead_endpoint_does_not_hold_up_other_merchants() {
    let (stuck, stuck_base, healthy, healthy_base) = stuck_and_healthy_receivers();
    let server = TestServer::start_with(FAST_RETRIES);
    let slow_merchant = server.create_wallet_merchant().await;
    let good_merchant = server.create_wallet_merchant().await;
    pay_orders(&server, &slow_merchant, "S", 12, &format!("{stuck_base}/stuck")).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    pay_orders(&server, &good_merchant, "G", 5, &format!("{healthy_base}/ok")).await;
    wait_for(&healthy, "/ok", 5).await;
    // The stuck endpoint answers nothing for 30 s: every one of its
    // deliveries is still hanging while the healthy ones all arrived, and
    // it never held more than the floor of 4 at once.
    assert!(stuck.received().is_empty());
    assert_eq!(stuck.most_in_flight(), 4);
}

/// Creates `count` bank disbursements of IDR 10,000 for `merchant`, 16 at a
/// time (more than 200 need the merchant's rate limit raised).
async fn disburse_many(server: &TestServer, merchant: &TestMerchant, count: usize) {
    use futures::stream::{self, StreamExt};
    let replies: Vec<Reply> = stream::iter(0..count)
        .map(|i| {
            server.call(
                Method::POST,
                "/v1/disbursements",
                Some(&merchant.api_key),
                Some(json!({
                    "idempotency_key": format!("many-{i}"), "channel": "BANK", "bank_short_code": "BCA",
                    "account_number": "1234567890", "account_name": "Budi", "amount_minor": 1_000_000,
                })),
            )
        })
        .buffer_unordered(16)
        .collect()
        .await;
    for reply in replies {
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }
}

#[tokio::test]
async fn a_healthy_endpoint_is_sent_more_than_the_floor_at_once() {
    let receiver = Receiver::default();
    receiver.script.lock().unwrap().delay = Duration::from_millis(40);
    let base = start_receiver(receiver.clone());
    let server = TestServer::start_with(FAST_RETRIES);
    let merchant = server
        .create_merchant_with("WALLET", json!({ "default_notify_url": format!("{base}/busy") }))
        .await;
    server.credit(&merchant.id, 200 * 1_000_000 + 10_000_000).await;
    disburse_many(&server, &merchant, 100).await;
    // Each disbursement goes ON_PROCESS, then SUCCESS 200 ms later.
    let got = wait_for(&receiver, "/busy", 200).await;
    assert_eq!(got.len(), 200);
    // Quick 2xx answers raised this merchant's pace above the floor of 4.
    assert!(
        receiver.most_in_flight() > 4,
        "at most {} at once",
        receiver.most_in_flight()
    );
    for delivery in &got {
        assert_signed(delivery, &merchant.webhook_secret);
    }
}

#[tokio::test]
async fn a_held_back_backlog_longer_than_a_page_does_not_hide_other_merchants() {
    let (stuck, stuck_base, healthy, healthy_base) = stuck_and_healthy_receivers();
    let server = TestServer::start_with(FAST_RETRIES);
    let slow_merchant = server
        .create_merchant_with(
            "WALLET",
            json!({
                "default_notify_url": format!("{stuck_base}/stuck"),
                "limits": { "rate_limit_per_second": 10_000, "rate_limit_burst": 10_000 },
            }),
        )
        .await;
    server.credit(&slow_merchant.id, 400 * 1_000_000 + 10_000_000).await;
    // 600 events due (ON_PROCESS and SUCCESS of 300), all but 4 held back
    // behind the hanging endpoint, ahead of the healthy merchant's in the outbox.
    disburse_many(&server, &slow_merchant, 300).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let good_merchant = server.create_wallet_merchant().await;
    pay_orders(&server, &good_merchant, "G", 3, &format!("{healthy_base}/ok")).await;
    wait_for(&healthy, "/ok", 3).await;
    assert!(stuck.received().is_empty());
    assert_eq!(stuck.most_in_flight(), 4);
}

#[tokio::test]
async fn live_mode_refuses_private_notify_urls_and_sandbox_allows_them() {
    let live = TestServer::start_with(&["--mode", "live"]);
    let merchant = live.create_wallet_merchant().await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://[::1]/hook",
        "http://169.254.169.254/latest",
    ] {
        let order = live
            .call(
                Method::POST,
                "/v1/orders",
                Some(&merchant.api_key),
                Some(json!({ "merchant_order_id": "SSRF", "amount_minor": 10_000, "payment_method": "QRIS", "notify_url": url })),
            )
            .await;
        assert_v1_error(&order, 400, "INVALID_BODY");
        assert!(order.body["error"]["message"].as_str().unwrap().contains("notify_url"));
        let disbursement = live
            .call(
                Method::POST,
                "/v1/disbursements",
                Some(&merchant.api_key),
                Some(json!({
                    "idempotency_key": "ssrf", "channel": "BANK", "bank_short_code": "BCA",
                    "account_number": "1234567890", "account_name": "Budi", "amount_minor": 10_000, "notify_url": url,
                })),
            )
            .await;
        assert_v1_error(&disbursement, 400, "INVALID_BODY");
        let patch = live
            .admin(
                Method::PATCH,
                &format!("/admin/v1/merchants/{}", merchant.id),
                Some(json!({ "default_notify_url": url })),
            )
            .await;
        assert_v1_error(&patch, 400, "INVALID_BODY");
    }
    // A public address passes validation (then live mode has no vendor configured).
    let public = live
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(json!({ "merchant_order_id": "OK", "amount_minor": 10_000, "payment_method": "QRIS", "notify_url": "https://merchant.example/hook" })),
        )
        .await;
    assert_v1_error(&public, 503, "NO_VENDOR");

    let sandbox = TestServer::start();
    let merchant = sandbox.create_wallet_merchant().await;
    let order = sandbox
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(json!({ "merchant_order_id": "LOCAL", "amount_minor": 10_000, "payment_method": "QRIS", "notify_url": "http://127.0.0.1:9/hook" })),
        )
        .await;
    assert_eq!(order.status, StatusCode::CREATED, "{}", order.body);
}

#[tokio::test]
async fn expired_and_failed_orders_are_events() {
    let receiver = Receiver::default();
    let base = start_receiver(receiver.clone());
    let server = TestServer::start_with(FAST_RETRIES);
    let merchant = server.create_wallet_merchant().await;
    let mut refs = Vec::new();
    for (id, path) in [("WH-EXP", "expired"), ("WH-FAIL", "failed")] {
        let order = server
            .call(
                Method::POST,
                "/v1/orders",
                Some(&merchant.api_key),
                Some(json!({
                    "merchant_order_id": id, "amount_minor": 1_000_000, "payment_method": "QRIS",
                    "notify_url": format!("{base}/{path}"),
                })),
            )
            .await;
        assert_eq!(order.status, StatusCode::CREATED, "{}", order.body);
        refs.push(order.body["data"]["ref_code"].as_str().unwrap().to_string());
    }
    for (ref_code, action) in refs.iter().zip(["expire", "fail"]) {
        let reply = server
            .call(
                Method::POST,
                &format!("/v1/sandbox/orders/{ref_code}/{action}"),
                Some(&merchant.api_key),
                None,
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    }
    for (ref_code, (path, event, status)) in refs.iter().zip([
        ("/expired", "order.expired", "EXPIRED"),
        ("/failed", "order.failed", "FAILED"),
    ]) {
        let got = wait_for(&receiver, path, 1).await;
        assert_eq!(got.len(), 1);
        let body = json_body(&got[0]);
        assert_eq!(body["event"], json!(event));
        assert_eq!(body["status"], json!(status));
        assert_eq!(body["ref_code"], json!(ref_code));
        assert_eq!(body["paid_at"], Value::Null);
        assert_signed(&got[0], &merchant.webhook_secret);
    }
}

/// Events of one resource go out one at a time, in the order they happened:
/// a disbursement completed at once by the sandbox still notifies
/// `on_process` before `success` (they used to race, and often did not).
#[tokio::test]
async fn events_of_one_disbursement_arrive_in_order() {
    let receiver = Receiver::default();
    let base = start_receiver(receiver.clone());
    let server = TestServer::start_with(&[
        "--webhook-retry-scale",
        "0.001",
        "--sandbox-disbursement-delay-ms",
        "600000",
    ]);
    let merchant = server
        .create_merchant_with("WALLET", json!({ "default_notify_url": format!("{base}/ordered") }))
        .await;
    server.credit(&merchant.id, 100_000_000).await;
    let mut ids = Vec::new();
    for i in 0..10 {
        let created = server
            .call(
                Method::POST,
                "/v1/disbursements",
                Some(&merchant.api_key),
                Some(json!({
                    "idempotency_key": format!("order-{i}"), "channel": "BANK", "bank_short_code": "BCA",
                    "account_number": "1234567890", "account_name": "Budi", "amount_minor": 1_000_000,
                })),
            )
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        let id = created.body["data"]["id"].as_str().unwrap().to_string();
        // Wait for the hand-over, then complete at once: both events are due together.
        for _ in 0..200 {
            let got = server
                .call(
                    Method::GET,
                    &format!("/v1/disbursements/{id}"),
                    Some(&merchant.api_key),
                    None,
                )
                .await;
            if got.body["data"]["status"] == json!("ON_PROCESS") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let completed = server
            .call(
                Method::POST,
                &format!("/v1/sandbox/disbursements/{id}/complete"),
                Some(&merchant.api_key),
                Some(json!({ "status": "SUCCESS" })),
            )
            .await;
        assert_eq!(completed.status, StatusCode::OK, "{}", completed.body);
        ids.push(id);
    }
    let got = wait_for(&receiver, "/ordered", 20).await;
    for id in &ids {
        let events: Vec<String> = got
            .iter()
            .map(json_body)
            .filter(|body| body["id"] == json!(id))
            .map(|body| body["event"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(events, vec!["disbursement.on_process", "disbursement.success"], "{id}");
    }
}

/// An order's metadata reaches the webhook byte for byte, even a number no
/// f64 holds (it used to empty the whole body but for the event fields).
#[tokio::test]
async fn order_metadata_is_delivered_byte_for_byte() {
    let receiver = Receiver::default();
    let base = start_receiver(receiver.clone());
    let server = TestServer::start_with(FAST_RETRIES);
    let merchant = server.create_wallet_merchant().await;
    let body = format!(
        r#"{{"merchant_order_id":"META-1","amount_minor":100000,"payment_method":"QRIS","notify_url":"{base}/meta","metadata":{{"big":1e400,"k":"v"}}}}"#
    );
    let created = server
        .client
        .post(format!("{}/v1/orders", server.base))
        .header("X-API-Key", &merchant.api_key)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    // serde_json cannot read 1e400 either: the ref code is cut out of the text.
    let created = created.text().await.unwrap();
    let ref_code = created
        .split(r#""ref_code":""#)
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_string();
    pay(&server, &merchant, &ref_code).await;
    let got = wait_for(&receiver, "/meta", 1).await;
    let raw = String::from_utf8(got[0].body.clone()).unwrap();
    assert!(raw.contains(r#""metadata":{"big":1e400,"k":"v"}"#), "{raw}");
    assert!(raw.contains(&format!(r#""ref_code":"{ref_code}""#)), "{raw}");
    assert!(raw.contains(r#""event":"order.paid""#), "{raw}");
    assert!(raw.contains(r#""status":"PAID""#), "{raw}");
    assert_signed(&got[0], &merchant.webhook_secret);
}

/// A delivered event and its attempts are listed and can be
/// resent inside the retention window, and are dropped after it.
#[tokio::test]
async fn delivered_events_are_dropped_once_past_the_retention_window() {
    let receiver = Receiver::default();
    let base = start_receiver(receiver.clone());
    // 0.0002 days: 17.28 s, room for a slow machine inside the window.
    let server = TestServer::start_with(&["--webhook-retry-scale", "0.001", "--webhook-retention-days", "0.0002"]);
    let merchant = server.create_wallet_merchant().await;
    let ref_code = create_order(&server, &merchant, "RETAINED-1", &format!("{base}/retained")).await;
    pay(&server, &merchant, &ref_code).await;
    let got = wait_for(&receiver, "/retained", 1).await;
    let event_id = json_body(&got[0])["event_id"].as_str().unwrap().to_string();
    let list = format!("/v1/webhooks/deliveries?event_id={event_id}");
    let resend = format!("/v1/webhooks/deliveries/{event_id}/resend");

    let mut listed = false;
    for _ in 0..100 {
        let reply = server.call(Method::GET, &list, Some(&merchant.api_key), None).await;
        if reply.body["meta"]["total"] == json!(1) {
            listed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(listed, "the attempt is listed inside the window");
    let resent = server.call(Method::POST, &resend, Some(&merchant.api_key), None).await;
    assert_eq!(resent.status, StatusCode::OK, "{}", resent.body);
    assert_eq!(resent.body["data"]["attempt"], json!(2));

    // Past the window the attempts leave the list at once, and the event
    // goes at the next checkpoint.
    let mut unlisted = false;
    for _ in 0..300 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let reply = server.call(Method::GET, &list, Some(&merchant.api_key), None).await;
        assert_eq!(reply.status, StatusCode::OK);
        if reply.body["meta"]["total"] == json!(0) {
            assert_eq!(reply.body["data"], json!([]));
            unlisted = true;
            break;
        }
    }
    assert!(unlisted, "the attempts leave the list after the window");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let gone = server.call(Method::POST, &resend, Some(&merchant.api_key), None).await;
    assert_v1_error(&gone, 404, "EVENT_NOT_FOUND");
}
