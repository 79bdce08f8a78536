//! What the crash and cluster tests under load share: requests that a
//! killed server may never answer, and a webhook receiver that records
//! every event it answered 2xx.

use super::{TestServer, ADMIN_TOKEN};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode as AxumStatus;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `POST url` with `body` as the merchant whose key is `api_key`, given
/// up after `timeout`; an error when the server did not answer.
pub async fn post_as(
    client: &reqwest::Client,
    url: String,
    api_key: &str,
    body: &Value,
    timeout: Duration,
) -> reqwest::Result<reqwest::Response> {
    let request = client.post(url).header("X-API-Key", api_key);
    request.json(body).timeout(timeout).send().await
}

/// `POST url` with `body` as the operator (the admin token), given up
/// after `timeout`; an error when the server did not answer.
pub async fn post_as_admin(
    client: &reqwest::Client,
    url: String,
    body: &Value,
    timeout: Duration,
) -> reqwest::Result<reqwest::Response> {
    let request = client.post(url).bearer_auth(ADMIN_TOKEN);
    request.json(body).timeout(timeout).send().await
}

/// `post_as` to `base` + `path`: the status and the JSON body, `None` when
/// no answer came or its body was not JSON.
pub async fn post_json(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    path: &str,
    body: Value,
    timeout: Duration,
) -> Option<(StatusCode, Value)> {
    let response = post_as(client, format!("{base}{path}"), key, &body, timeout)
        .await
        .ok()?;
    let status = response.status();
    Some((status, response.json().await.ok()?))
}

/// A webhook receiver: what it answered 2xx, as (resource id, event type).
#[derive(Default)]
pub struct Receiver {
    /// Answers 500 to one request in four.
    flaky: bool,
    requests: AtomicU64,
    pub delivered: Mutex<HashSet<(String, String)>>,
}

async fn receive(State(receiver): State<Arc<Receiver>>, body: Bytes) -> AxumStatus {
    // One request in four fails, picked by a multiplicative hash of the
    // request's number rather than every fourth: a strict period lines up
    // with the dispatcher's retry order, so the same event could take every
    // failure until its retries run out.
    let request = receiver.requests.fetch_add(1, Ordering::Relaxed);
    if receiver.flaky && request.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 62 == 3 {
        return AxumStatus::INTERNAL_SERVER_ERROR;
    }
    if let Ok(event) = serde_json::from_slice::<Value>(&body) {
        if let (Some(id), Some(kind)) = (event["id"].as_str(), event["event"].as_str()) {
            receiver
                .delivered
                .lock()
                .unwrap()
                .insert((id.to_string(), kind.to_string()));
        }
    }
    AxumStatus::OK
}

/// Starts a receiver on loopback (answering 500 to one request in four
/// when `flaky`); returns its URL and what it records.
pub async fn start_receiver(flaky: bool) -> (String, Arc<Receiver>) {
    let receiver = Arc::new(Receiver {
        flaky,
        ..Receiver::default()
    });
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(receive))
        .with_state(receiver.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, receiver)
}

impl Receiver {
    /// Waits until every `wanted` event was answered 2xx; fails the test
    /// at `deadline` naming the missing ones.
    pub async fn wait_for(&self, wanted: &HashSet<(String, String)>, deadline: Instant) {
        loop {
            let missing: Vec<_> = {
                let delivered = self.delivered.lock().unwrap();
                wanted.iter().filter(|w| !delivered.contains(*w)).cloned().collect()
            };
            if missing.is_empty() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} events never delivered, e.g. {:?}",
                missing.len(),
                &missing[..missing.len().min(3)]
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Polls the disbursement `id` through `server` until it is SUCCESS or
/// FAILED or `deadline` passes; asserts it is found and ends final, and
/// returns the event its end sends.
pub async fn final_event(server: &TestServer, key: &str, id: &str, deadline: Instant) -> (String, String) {
    let path = format!("/v1/disbursements/{id}");
    let status = loop {
        let reply = server.call(Method::GET, &path, Some(key), None).await;
        assert_eq!(reply.status, StatusCode::OK, "disbursement {id} lost: {}", reply.body);
        let status = reply.body["data"]["status"].as_str().unwrap().to_string();
        if status == "SUCCESS" || status == "FAILED" || Instant::now() > deadline {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status == "SUCCESS" || status == "FAILED", "{id} still {status}");
    (id.to_string(), format!("disbursement.{}", status.to_lowercase()))
}

/// The `order.paid` event of the order `reference`, read through `server`.
pub async fn paid_event(server: &TestServer, key: &str, reference: &str) -> (String, String) {
    let path = format!("/v1/orders/{reference}");
    let reply = server.call(Method::GET, &path, Some(key), None).await;
    let id = reply.body["data"]["id"].as_str().unwrap().to_string();
    (id, "order.paid".into())
}
