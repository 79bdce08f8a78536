//! Webhooks against a real receiver on loopback started by the test:
//! events for status changes, V1 and Legacy bodies, Standard
//! Webhooks signatures checked with the `standardwebhooks` crate and the
//! `X-Signature` scheme, retries with the same `webhook-id`, delivery after
//! a SIGKILL, resends, the deliveries list, and isolation from a dead endpoint.
//! This file holds the receiver and the requests its modules share.

#[path = "../support/mod.rs"]
mod support;

mod delivery;
mod fairness;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::routing::post;
use axum::Router;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::disbursements::budi_body;
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

/// A receiver started with the default script, and its base URL.
fn receiving() -> (Receiver, String) {
    let receiver = Receiver::default();
    let base = start_receiver(receiver.clone());
    (receiver, base)
}

/// The merchant's delivery attempts of `event_id`, newest first, once
/// there are `count` of them (`Null` if never within 2 s).
async fn attempts_of(server: &TestServer, merchant: &TestMerchant, event_id: &str, count: u64) -> Value {
    let path = format!("/v1/webhooks/deliveries?event_id={event_id}");
    for _ in 0..100 {
        let reply = server.get(&path, &merchant.api_key).await;
        if reply.body["meta"]["total"] == json!(count) {
            return reply.body["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Value::Null
}

/// `POST /v1/webhooks/deliveries/{event_id}/resend` as the merchant whose key is `api_key`.
async fn resend(server: &TestServer, api_key: &str, event_id: &str) -> Reply {
    server
        .post(&format!("/v1/webhooks/deliveries/{event_id}/resend"), api_key, None)
        .await
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
    assert_eq!(header(received, "x-signature"), hmac_signature(secret, &received.body));
    assert_eq!(header(received, "content-type"), "application/json");
}

async fn create_order(server: &TestServer, merchant: &TestMerchant, id: &str, notify_url: &str) -> String {
    let reply = server
        .post("/v1/orders", &merchant.api_key, Some(json!({ "merchant_order_id": id, "amount_minor": 1_000_000, "payment_method": "QRIS", "notify_url": notify_url })))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body["data"]["ref_code"].as_str().unwrap().to_string()
}

async fn pay(server: &TestServer, merchant: &TestMerchant, ref_code: &str) {
    let reply = server.sandbox_order(&merchant.api_key, ref_code, "pay").await;
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

/// Creates `count` bank disbursements of IDR 10,000 for `merchant`, 16 at a
/// time (more than 200 need the merchant's rate limit raised).
async fn disburse_many(server: &TestServer, merchant: &TestMerchant, count: usize) {
    use futures::stream::{self, StreamExt};
    let replies: Vec<Reply> = stream::iter(0..count)
        .map(|i| server.disburse(&merchant.api_key, budi_body(&format!("many-{i}"), 1_000_000)))
        .buffer_unordered(16)
        .collect()
        .await;
    for reply in replies {
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }
}
