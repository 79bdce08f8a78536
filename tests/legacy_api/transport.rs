//! What surrounds a Legacy call: `X-SIGNATURE` over the raw bytes, the
//! envelope of unknown routes and large bodies, and signed webhooks.

use super::*;
use rsa::pkcs1::EncodeRsaPublicKey;
use rsa::pkcs8::LineEnding;
use rsa::RsaPrivateKey;

#[tokio::test]
async fn x_signature_is_over_the_raw_bytes() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = merchant_with_key(&server, 100_000_000).await;
    // Odd key order and whitespace, signed over exactly these bytes: accepted.
    let raw = format!(
        "{{ \"requestAmount\" : 15000,\n  \"accountName\":\"Sari\", \"orderId\": \"RAW-1\",\"bankCode\":\"BNI\",\t\"accountNumber\":\"5556667778\", \"clientId\": \"{}\" }}",
        merchant.client_id
    );
    let accepted = signed_post(&server, "/api/disbursement/create", &merchant, &raw).await;
    assert_eq!(assert_ok(&accepted)["requestAmount"], json!("15000.00"));
    // Signed over the re-serialized JSON instead of the bytes sent: refused.
    let raw2 = raw.replace("RAW-1", "RAW-2");
    let reserialized = serde_json::to_string(&serde_json::from_str::<Value>(&raw2).unwrap()).unwrap();
    assert_ne!(reserialized, raw2);
    let refused = post(
        &server,
        "/api/disbursement/create",
        &raw2,
        Some(&x_signature(&merchant, &reserialized)),
    )
    .await;
    assert_legacy_error(&refused, 401, "Invalid X-SIGNATURE");
    let unsigned = post(&server, "/api/disbursement/create", &raw2, None).await;
    assert_legacy_error(&unsigned, 401, "Invalid X-SIGNATURE");
    let garbage = post(&server, "/api/disbursement/create", &raw2, Some("bm90IGEgc2lnbmF0dXJl")).await;
    assert_legacy_error(&garbage, 401, "Invalid X-SIGNATURE");
    assert_eq!(
        server.balance(&merchant.api_key).await,
        100_000_000 - 1_500_000 - 250_000
    );

    // A PKCS#1 PEM of the same key verifies the same way.
    let pkcs1 = private_key().to_public_key().to_pkcs1_pem(LineEnding::LF).unwrap();
    put_public_key(&server, &merchant, &pkcs1).await;
    let body = bank_body(&merchant, "PKCS1-1", 10000, "BRI");
    assert_ok(&signed_post(&server, "/api/disbursement/create", &merchant, &body).await);

    // Parsed keys are kept, by their PEM: once the merchant's key changes,
    // signatures of the old one are refused at once.
    let other = RsaPrivateKey::new(&mut rand::thread_rng(), 2048).unwrap();
    let pem = other.to_public_key().to_pkcs1_pem(LineEnding::LF).unwrap();
    put_public_key(&server, &merchant, &pem).await;
    let body = bank_body(&merchant, "OLD-KEY-1", 10000, "BRI");
    let refused = signed_post(&server, "/api/disbursement/create", &merchant, &body).await;
    assert_legacy_error(&refused, 401, "Invalid X-SIGNATURE");
}

#[tokio::test]
async fn legacy_envelopes_for_unknown_routes_and_large_bodies() {
    let server = TestServer::start();
    let missing = post(&server, "/api/order/unknown", "{}", None).await;
    assert_legacy_error(&missing, 404, "Not Found");
    let wrong_method = into_reply(server.client.get(server.url("/api/order/create")).send().await.unwrap()).await;
    assert_legacy_error(&wrong_method, 405, "Method Not Allowed");
    let huge = format!("{{\"clientId\":\"{}\"}}", "x".repeat(70 * 1024));
    let reply = post(&server, "/api/order/create", &huge, None).await;
    assert_legacy_error(&reply, 413, "Request body too large");

    // Byte for byte: the keys in the order of success bodies (code, message, data).
    let raw = server
        .client
        .post(server.url("/api/order/unknown"))
        .body("{}")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(raw, r#"{"code":404,"message":"Not Found","data":null}"#);
}

/// A webhook receiver on loopback: keeps every body it is sent.
async fn start_receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::routing::post;
    let received: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let store = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(move |body: axum::body::Bytes| {
            let store = store.clone();
            async move {
                store
                    .lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}/hook"), received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_disbursement_webhooks_carry_a_valid_signature() {
    let (url, received) = start_receiver().await;
    let server = TestServer::start_with(&[
        "--sandbox-disbursement-delay-ms",
        "200",
        "--webhook-retry-scale",
        "0.001",
    ]);
    let merchant = merchant_with_key(&server, 10_000_000).await;
    let body = json!({
        "clientId": merchant.client_id, "orderId": "WH-DSB-1", "bankCode": "BCA",
        "accountNumber": "1234567890", "accountName": "Budi", "requestAmount": 25000, "notifyUrl": url,
    })
    .to_string();
    let created = signed_post(&server, "/api/disbursement/create", &merchant, &body).await;
    assert_ok(&created);
    let mut bodies = Vec::new();
    for _ in 0..250 {
        bodies = received.lock().unwrap().clone();
        if bodies.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(bodies.len(), 2, "ON_PROCESS then SUCCESS");
    let expected = sha512_hex(&format!(
        "{}|WH-DSB-1|25000|{}",
        merchant.client_id, merchant.client_secret
    ));
    for body in &bodies {
        assert_eq!(body["orderId"], json!("WH-DSB-1"));
        assert_eq!(body["requestAmount"], json!("25000.00"));
        assert_eq!(body["signature"], json!(expected));
    }
    assert_eq!(bodies[1]["status"], json!("SUCCESS"));
    // `bank` is `{name, code}` in that order, as in the create and query answers.
    assert_eq!(keys_in_order(&bodies[1]["bank"]), ordered(&["name", "code"]));
}
