//! What the server does around every V1 route, against the real binary:
//! rate limits, envelopes for unknown routes, wrong methods and oversized
//! bodies, request ids, the front page, operations endpoints, the sandbox
//! demo merchant, and list queries no resource should choke on.

mod support;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use support::disbursements::budi_body;
use support::*;

fn demo_credentials(server: &TestServer) -> Value {
    let text =
        std::fs::read_to_string(server.data_dir.join("demo-credentials.json")).expect("demo-credentials.json readable");
    serde_json::from_str(&text).expect("demo-credentials.json is JSON")
}

#[tokio::test]
async fn third_quick_request_over_a_burst_of_two_is_429_with_retry_after() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let reply = server
        .patch_merchant(
            &merchant.id,
            json!({ "limits": { "rate_limit_per_second": 1, "rate_limit_burst": 2 } }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);

    // Three requests well inside one second; on a machine so loaded that they
    // are not, a token may have come back, so wait for a full bucket and retry.
    let mut attempts = 0;
    let reply = loop {
        attempts += 1;
        let started = std::time::Instant::now();
        let mut replies = Vec::new();
        for _ in 0..3 {
            replies.push(server.get("/v1/balance", &merchant.api_key).await);
        }
        if started.elapsed() < std::time::Duration::from_millis(800) || attempts == 3 {
            for reply in &replies[..2] {
                assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
            }
            break replies.pop().unwrap();
        }
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    };
    assert_v1_error(&reply, 429, "RATE_LIMITED");
    let retry_after: u64 = reply
        .headers
        .get("retry-after")
        .expect("Retry-After header")
        .to_str()
        .unwrap()
        .parse()
        .expect("Retry-After is an integer number of seconds");
    assert!(retry_after >= 1, "{retry_after}");

    // The limit is per API key: another merchant is unaffected.
    let other = server.create_wallet_merchant().await;
    assert_eq!(server.balance(&other.api_key).await, 0);
}

#[tokio::test]
async fn unknown_route_is_404_not_found_envelope() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    for path in ["/v1/nothing-here", "/v2/balance", "/v1"] {
        let reply = server.get(path, &merchant.api_key).await;
        assert_v1_error(&reply, 404, "NOT_FOUND");
        assert_eq!(sorted_keys(&reply.body), strings(&["error", "success"]));
    }
}

/// `/` is a page for a browser (sandbox or live, the version, the links a
/// newcomer needs) and the same facts as JSON for a client asking for JSON.
#[tokio::test]
async fn the_front_page_links_the_docs_dashboard_document_and_health() {
    let server = TestServer::start();
    let front_page = |accept: &'static str| server.request(Method::GET, "/").header("accept", accept).send();
    let page = front_page("text/html,application/xhtml+xml,*/*;q=0.8").await.unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.headers()["content-type"], "text/html; charset=utf-8");
    assert!(page.headers().contains_key("content-security-policy"));
    let html = page.text().await.unwrap();
    for link in [
        "href=\"/docs\"",
        "href=\"/dashboard\"",
        "href=\"/openapi.json\"",
        "href=\"/healthz\"",
    ] {
        assert!(html.contains(link), "{link} missing from {html}");
    }
    assert!(html.contains("Sandbox"), "{html}");
    assert!(html.contains(env!("CARGO_PKG_VERSION")), "{html}");

    let reply = front_page("application/json").await.unwrap();
    assert_eq!(reply.status(), StatusCode::OK);
    assert_eq!(reply.headers()["content-type"], "application/json");
    let body: Value = reply.json().await.unwrap();
    assert_eq!(
        body,
        json!({
            "name": "paygate",
            "version": env!("CARGO_PKG_VERSION"),
            "mode": "sandbox",
            "links": {"docs": "/docs", "dashboard": "/dashboard", "openapi": "/openapi.json", "healthz": "/healthz"}
        })
    );
    // Every link answers.
    for path in ["/docs", "/openapi.json", "/healthz"] {
        let reply = server.client.get(server.url(path)).send().await.unwrap();
        assert_eq!(reply.status(), StatusCode::OK, "{path}");
    }
}

#[tokio::test]
async fn wrong_method_on_a_known_route_is_405_method_not_allowed_envelope() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let reply = server
        .call(Method::DELETE, "/v1/balance", Some(&merchant.api_key), None)
        .await;
    assert_v1_error(&reply, 405, "METHOD_NOT_ALLOWED");
    let reply = server.admin(Method::GET, "/admin/v1/organizations", None).await;
    assert_v1_error(&reply, 405, "METHOD_NOT_ALLOWED");
}

#[tokio::test]
async fn body_over_64_kib_is_413_payload_too_large() {
    let server = TestServer::start();
    let reply = server
        .admin_post("/admin/v1/organizations", json!({ "name": "x".repeat(70 * 1024) }))
        .await;
    assert_v1_error(&reply, 413, "PAYLOAD_TOO_LARGE");
    // Just under the limit is read (and refused on its merits, not its size).
    let reply = server
        .admin_post("/admin/v1/organizations", json!({ "name": "x".repeat(60 * 1024) }))
        .await;
    assert_v1_error(&reply, 400, "INVALID_BODY");
}

#[tokio::test]
async fn every_response_carries_an_x_request_id() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let replies = [
        server.get("/v1/balance", &merchant.api_key).await,
        server.call(Method::GET, "/v1/balance", None, None).await,
        server.call(Method::GET, "/v1/no-such-route", None, None).await,
        server.call(Method::GET, "/healthz", None, None).await,
    ];
    let expected = [200, 401, 404, 200];
    let mut ids = Vec::new();
    for (reply, status) in replies.iter().zip(expected) {
        assert_eq!(reply.status.as_u16(), status, "{}", reply.body);
        let id = reply
            .headers
            .get("x-request-id")
            .unwrap_or_else(|| panic!("no x-request-id on a {status}"))
            .to_str()
            .unwrap()
            .to_string();
        assert!(!id.is_empty());
        ids.push(id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "request ids must differ: {ids:?}");
}

#[tokio::test]
async fn client_sent_x_request_id_is_echoed_back() {
    let server = TestServer::start();
    for path in ["/v1/balance", "/healthz", "/v1/no-such-route"] {
        let response = server
            .client
            .get(server.url(path))
            .header("X-Request-Id", "trace-me-12345")
            .send()
            .await
            .unwrap();
        let reply = into_reply(response).await;
        assert_eq!(
            reply.headers.get("x-request-id").map(|v| v.to_str().unwrap()),
            Some("trace-me-12345"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn healthz_is_200() {
    let server = TestServer::start();
    let reply = server.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn metrics_exposes_journal_syncs_and_http_request_counts() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    server.balance(&merchant.api_key).await;
    // Invented methods are counted as OTHER, not as series of their own.
    for invented in ["ZZMETHOD1", "ZZMETHOD2"] {
        let method = reqwest::Method::from_bytes(invented.as_bytes()).unwrap();
        let reply = server
            .client
            .request(method, server.url("/healthz"))
            .send()
            .await
            .unwrap();
        assert_eq!(reply.status(), StatusCode::METHOD_NOT_ALLOWED);
    }
    let response = server.client.get(server.url("/metrics")).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let text = response.text().await.unwrap();
    let syncs = text
        .lines()
        .find(|l| l.starts_with("paygate_journal_syncs_total"))
        .unwrap_or_else(|| panic!("no paygate_journal_syncs_total sample in\n{text}"));
    let count: f64 = syncs.rsplit(' ').next().unwrap().parse().expect("numeric sample");
    assert!(count >= 1.0, "a merchant was written durably: {syncs}");
    let sync_micros: f64 = text
        .lines()
        .find(|l| l.starts_with("paygate_journal_sync_microseconds_total "))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no paygate_journal_sync_microseconds_total sample in\n{text}"));
    assert!(sync_micros > 0.0, "each sync takes some time");
    assert!(
        text.lines().any(|l| l.starts_with("paygate_http_requests_total{")
            && l.contains("route=\"/v1/balance\"")
            && l.contains("status=\"200\"")),
        "no paygate_http_requests_total sample for GET /v1/balance in\n{text}"
    );
    assert!(!text.contains("ZZMETHOD"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("paygate_http_requests_total{") && l.contains("method=\"OTHER\"")),
        "{text}"
    );
}

#[tokio::test]
async fn sandbox_demo_merchant_credentials_are_private_and_work() {
    let server = TestServer::start();
    let path = server.data_dir.join("demo-credentials.json");
    let mode = std::fs::metadata(&path)
        .expect("demo-credentials.json exists")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "mode {:o}", mode & 0o777);

    let credentials = demo_credentials(&server);
    let api_key = credentials["api_key"].as_str().expect("api_key");
    let reply = server.get("/v1/balance", api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["merchant_id"], credentials["merchant_id"]);
    assert_eq!(reply.body["data"]["currency"], json!("IDR"));
    let balance = reply.body["data"]["balance_minor"].as_i64().unwrap();
    assert!(balance > 0, "demo merchant must be funded: {balance}");
}

#[tokio::test]
async fn a_sandbox_start_on_a_data_dir_without_merchants_creates_the_demo_merchant() {
    // A data dir that exists but has no merchant, as a first start killed
    // before the demo merchant was made leaves it.
    let mut server = TestServer::start_with(&["--mode", "live"]);
    assert!(!server.data_dir.join("demo-credentials.json").exists());
    server.stop();
    server.restart_with(&[]);
    let credentials = demo_credentials(&server);
    let api_key = credentials["api_key"].as_str().expect("api_key");
    assert!(server.balance(api_key).await > 0, "funded");
    // Once there is a merchant, a restart makes no second one.
    server.stop();
    server.restart_with(&[]);
    assert_eq!(server.verify().await["merchants"], json!(1));
}

#[tokio::test]
async fn live_mode_creates_no_demo_credentials() {
    let server = TestServer::start_with(&["--mode", "live"]);
    assert!(!server.data_dir.join("demo-credentials.json").exists());
    let report = server.verify().await;
    assert_eq!(report["merchants"], json!(0), "{report}");
    assert_eq!(report["entries"], json!(0), "{report}");
    // The admin API works in live mode too.
    let merchant = server.create_wallet_merchant().await;
    assert_eq!(server.balance(&merchant.api_key).await, 0);
}

/// A list asked for `created_from` after `created_to`, right after writes
/// (so they are still in memory, not yet checkpointed), is an empty page.
/// It used to panic under the store's lock and wedge every later request.
#[tokio::test]
async fn an_inverted_created_range_is_an_empty_page_and_harms_nothing() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = server.create_wallet_merchant().await;
    server.credit(&merchant.id, 10_000_000).await;
    let inverted = "created_from=2027-01-01T00:00:00Z&created_to=2026-01-01T00:00:00Z";
    for round in 0..2 {
        let order = server
            .post("/v1/orders", &merchant.api_key, Some(json!({ "merchant_order_id": format!("INV-{round}"), "amount_minor": 100_000, "payment_method": "QRIS" })))
            .await;
        assert_eq!(order.status, StatusCode::CREATED, "{}", order.body);
        let disbursement = server
            .disburse(&merchant.api_key, budi_body(&format!("inv-{round}"), 100_000))
            .await;
        assert_eq!(disbursement.status, StatusCode::CREATED, "{}", disbursement.body);
        for list in [
            "/v1/orders",
            "/v1/disbursements",
            "/v1/settlements",
            "/v1/webhooks/deliveries",
        ] {
            let reply = server.get(&format!("{list}?{inverted}"), &merchant.api_key).await;
            assert_eq!(reply.status, StatusCode::OK, "{list}: {}", reply.body);
            assert_eq!(reply.body["data"], json!([]), "{list}");
            assert_eq!(reply.body["meta"]["total"], json!(0), "{list}");
        }
    }
    let all = server.get("/v1/orders", &merchant.api_key).await;
    assert_eq!(all.body["meta"]["total"], json!(2));
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
}
