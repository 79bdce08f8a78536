//! Clients that hold the server rather than use it, against the real
//! binary: 2,000 connections that send their headers or body and never
//! finish are cut off while `/healthz` keeps answering; past the connection
//! cap a connection is answered 503 at once; unauthenticated requests are
//! limited per address.

mod support;

use reqwest::{Method, StatusCode};
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use support::{assert_v1_error, TestServer};

fn address(server: &TestServer) -> String {
    server.base.trim_start_matches("http://").to_string()
}

/// True while the server keeps `stream` open (nothing to read, no EOF).
fn still_open(stream: &mut TcpStream) -> bool {
    stream.set_nonblocking(true).unwrap();
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return false,
            // An answer (a 408, say) may come before the close: read on.
            Ok(_) => continue,
            Err(error) if error.kind() == ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}

async fn healthz_answers_quickly(server: &TestServer) {
    let started = Instant::now();
    let reply = tokio::time::timeout(Duration::from_secs(2), server.call(Method::GET, "/healthz", None, None))
        .await
        .expect("/healthz answers within 2 s");
    assert_eq!(reply.status, StatusCode::OK);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_slow_connections_are_cut_off_and_healthz_answers_meanwhile() {
    let server = TestServer::start();
    let address = address(&server);
    let mut slow = Vec::new();
    for n in 0..2_000 {
        let mut stream = TcpStream::connect(&address).unwrap();
        if n % 2 == 0 {
            // Headers that never end.
            stream
                .write_all(b"GET /v1/balance HTTP/1.1\r\nHost: paygate\r\nX-Slow: ")
                .unwrap();
        } else {
            // Whole headers, then 10 of the 1,000 body bytes promised.
            let head = "POST /api/order/create HTTP/1.1\r\nHost: paygate\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"clientId";
            stream.write_all(head.as_bytes()).unwrap();
        }
        slow.push(stream);
        if n % 500 == 499 {
            healthz_answers_quickly(&server).await;
        }
    }
    healthz_answers_quickly(&server).await;
    // Past the header and body deadlines (10 s, 20 s from each start) of
    // the last connection opened: on a loaded machine opening them all
    // takes seconds, and the last ones' deadlines come that much later.
    let last_opened = Instant::now();
    while last_opened.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_secs(2)).await;
        healthz_answers_quickly(&server).await;
    }
    let held = slow.iter_mut().map(still_open).filter(|open| *open).count();
    assert!(held <= 20, "{held} of 2,000 slow connections still held after 30 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_a_connection_is_answered_503_at_once() {
    let server = TestServer::start_with(&["--max-connections", "40"]);
    let address = address(&server);
    let mut held: Vec<TcpStream> = (0..40).map(|_| TcpStream::connect(&address).unwrap()).collect();
    // Each held connection is being served once the server has accepted it.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let mut extra = TcpStream::connect(&address).unwrap();
    extra.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut answer = String::new();
    let _ = extra.read_to_string(&mut answer);
    assert!(started.elapsed() < Duration::from_secs(1), "refused at once");
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer:?}");
    assert!(answer.to_ascii_lowercase().contains("retry-after: 1"), "{answer:?}");
    // Once connections are let go, new ones are served again.
    held.clear();
    let mut served = false;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let reply = server.client.get(format!("{}/healthz", server.base)).send().await;
        if reply.is_ok_and(|r| r.status() == StatusCode::OK) {
            served = true;
            break;
        }
    }
    assert!(served, "served again below the cap");
}

/// The per-address budget of unauthenticated requests: this many at once,
/// then one more every 10 ms.
const ADDRESS_BURST: u64 = 1_000;
const ADDRESS_REFILL_PER_SECOND: u64 = 100;

/// How long sending unknown keys may take before the address must have been
/// refused: far longer than the burst takes even on a loaded machine, where
/// each request may cost more than the 10 ms of a refill.
const REFUSAL_DEADLINE: Duration = Duration::from_secs(120);

/// Sends requests with an unknown key until the address is refused; returns
/// how many were answered 401 first and how long that took.
async fn refuse_address(server: &TestServer) -> (u64, Duration) {
    let started = Instant::now();
    let mut answered = 0;
    while started.elapsed() < REFUSAL_DEADLINE {
        let reply = server.call(Method::GET, "/v1/balance", Some("not-a-key"), None).await;
        if reply.status == StatusCode::TOO_MANY_REQUESTS {
            assert_v1_error(&reply, 429, "RATE_LIMITED");
            let retry: u64 = reply.headers["retry-after"].to_str().unwrap().parse().unwrap();
            assert!((1..=2).contains(&retry), "Retry-After {retry}");
            return (answered, started.elapsed());
        }
        assert_v1_error(&reply, 401, "INVALID_API_KEY");
        answered += 1;
    }
    panic!("not refused after {answered} requests with an unknown key in {REFUSAL_DEADLINE:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_requests_are_limited_per_address() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    // Within the burst every one is answered for what it is, and past the
    // burst and what refilled meanwhile none is.
    let (answered, took) = refuse_address(&server).await;
    assert!(
        answered >= ADDRESS_BURST,
        "the first {ADDRESS_BURST} are answered ({answered})"
    );
    let refilled = (took.as_secs_f64() * ADDRESS_REFILL_PER_SECOND as f64).ceil() as u64;
    assert!(
        answered <= ADDRESS_BURST + refilled + 1,
        "{answered} answered in {took:?}: more than the burst and {refilled} refilled"
    );
    // The address is refused whatever it sends, until its budget refills:
    // a token every 10 ms. So each check goes right after a refusal, and
    // again if a slow machine let those 10 ms pass in between (it is then
    // answered for what it is).
    let mut keyed_refused = false;
    for _ in 0..20 {
        refuse_address(&server).await;
        let keyed = server
            .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
            .await;
        if keyed.status == StatusCode::TOO_MANY_REQUESTS {
            assert_v1_error(&keyed, 429, "RATE_LIMITED");
            keyed_refused = true;
            break;
        }
        assert_eq!(keyed.status, StatusCode::OK, "{}", keyed.body);
    }
    assert!(
        keyed_refused,
        "a request with a valid key was never refused while its address was"
    );
    let mut legacy_refused = false;
    for _ in 0..20 {
        refuse_address(&server).await;
        let legacy = server
            .client
            .post(format!("{}/api/order/query", server.base))
            .body("{}")
            .send()
            .await
            .unwrap();
        if legacy.status() == StatusCode::TOO_MANY_REQUESTS {
            legacy_refused = true;
            break;
        }
        assert_eq!(legacy.status(), StatusCode::BAD_REQUEST);
    }
    assert!(
        legacy_refused,
        "a Legacy request was never refused while its address was"
    );
    // ...but health checks are exempt.
    assert_eq!(
        server.call(Method::GET, "/healthz", None, None).await.status,
        StatusCode::OK
    );
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    assert_eq!(server.balance(&merchant.api_key).await, 0);
}
