//! What is delivered and how: the signed V1 and Legacy bodies, retries
//! with one webhook id, delivery after a kill, every event type, order.

use super::*;

#[tokio::test]
async fn a_paid_order_is_delivered_signed_with_its_v1_fields() {
    let (receiver, base) = receiving();
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
    let listed = attempts_of(&server, &merchant, &event_id, 1).await[0].clone();
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
    let resent = resend(&server, &merchant.api_key, &event_id).await;
    assert_eq!(resent.status, StatusCode::OK, "{}", resent.body);
    assert_eq!(resent.body["data"]["attempt"], json!(2));
    assert_eq!(resent.body["data"]["delivered"], json!(true));
    let got = wait_for(&receiver, "/orders", 2).await;
    assert_eq!(header(&got[1], "webhook-id"), event_id);
    assert_signed(&got[1], &merchant.webhook_secret);
    let bad = resend(&server, &merchant.api_key, "not-a-uuid").await;
    assert_v1_error(&bad, 400, "INVALID_ID");
    let other = server.create_wallet_merchant().await;
    let foreign = resend(&server, &other.api_key, &event_id).await;
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
    let attempts = attempts_of(&server, &merchant, ids[0], 3).await;
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
        .get("/v1/webhooks/deliveries?delivered=false", &merchant.api_key)
        .await;
    assert_eq!(undelivered.body["meta"]["total"], json!(2));
    let bad = server
        .get("/v1/webhooks/deliveries?delivered=maybe", &merchant.api_key)
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
    let (receiver, base) = receiving();
    let server = TestServer::start_with(FAST_RETRIES);
    let merchant = server.create_wallet_merchant().await;
    let signature = support::legacy::sha512_hex(&format!(
        "{}|LEG-1|25000|{}",
        merchant.client_id, merchant.client_secret
    ));
    let created = server
        .client
        .post(server.url("/api/order/create"))
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
    let (receiver, base) = receiving();
    let server = TestServer::start_with(FAST_RETRIES);
    let merchant = server
        .create_merchant_with("WALLET", json!({ "default_notify_url": format!("{base}/default") }))
        .await;
    server.credit(&merchant.id, 10_000_000).await;
    let created = server.disburse(&merchant.api_key, budi_body("wh-d-1", 1_000_000)).await;
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
    // Flat: the header, then the disbursement as GET shows it, field for
    // field and in the same order.
    let id = created.body["data"]["id"].as_str().unwrap();
    let shown = server.get(&format!("/v1/disbursements/{id}"), &merchant.api_key).await;
    let mut expected = serde_json::Map::new();
    expected.insert("event".into(), json!("disbursement.success"));
    expected.insert("event_id".into(), last["event_id"].clone());
    expected.insert("event_at".into(), last["event_at"].clone());
    expected.extend(shown.body["data"].as_object().unwrap().clone());
    let keys = |object: &serde_json::Map<String, Value>| object.keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(last.as_object().unwrap()), keys(&expected));
    assert_eq!(last, Value::Object(expected));

    // An order paid then partly refunded; the refund succeeds by itself.
    let order = server
        .post(
            "/v1/orders",
            &merchant.api_key,
            Some(json!({ "merchant_order_id": "WH-RF", "amount_minor": 1_000_000, "payment_method": "QRIS" })),
        )
        .await;
    let ref_code = order.body["data"]["ref_code"].as_str().unwrap();
    pay(&server, &merchant, ref_code).await;
    let refund = server.refund_of(&merchant.api_key, ref_code, 100_000, "wh-rf").await;
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
async fn expired_and_failed_orders_are_events() {
    let (receiver, base) = receiving();
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
        let reply = server.sandbox_order(&merchant.api_key, ref_code, action).await;
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
    let (receiver, base) = receiving();
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
            .disburse(&merchant.api_key, budi_body(&format!("order-{i}"), 1_000_000))
            .await;
        assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
        let id = created.body["data"]["id"].as_str().unwrap().to_string();
        // Wait for the hand-over, then complete at once: both events are due together.
        for _ in 0..200 {
            let got = server.get(&format!("/v1/disbursements/{id}"), &merchant.api_key).await;
            if got.body["data"]["status"] == json!("ON_PROCESS") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let completed = server.complete_disbursement(&merchant.api_key, &id, "SUCCESS").await;
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
    let (receiver, base) = receiving();
    let server = TestServer::start_with(FAST_RETRIES);
    let merchant = server.create_wallet_merchant().await;
    let body = format!(
        r#"{{"merchant_order_id":"META-1","amount_minor":100000,"payment_method":"QRIS","notify_url":"{base}/meta","metadata":{{"big":1e400,"k":"v"}}}}"#
    );
    let created = server
        .client
        .post(server.url("/v1/orders"))
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
