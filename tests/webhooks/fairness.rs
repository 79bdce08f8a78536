//! Delivery under pressure and policy: one merchant's dead or backed-up
//! endpoint never holds up another's, private URLs in live mode, retention.

use super::*;

/// Each thread of process `pid`: its name, without a pool's `-N`, and its
/// nice value.
fn threads_and_nice(pid: u32) -> Vec<(String, i32)> {
    let mut threads = Vec::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).expect("the server's threads") {
        let Ok(stat) = std::fs::read_to_string(task.expect("a thread").path().join("stat")) else {
            continue; // ended meanwhile
        };
        let (name_end, after_name) = (stat.rfind(')').expect("comm"), stat.find('(').expect("comm"));
        let name = stat[after_name + 1..name_end].trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
        // Fields after the name: state is the first, nice the 17th.
        let nice = stat[name_end + 2..].split(' ').nth(16).expect("nice field");
        threads.push((name.to_string(), nice.parse().expect("a number")));
    }
    threads
}

#[test]
fn the_request_workers_yield_the_cpu_to_the_webhooks_and_the_journal() {
    let server = TestServer::start();
    let own_nice = unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) };
    let threads = threads_and_nice(server.pid());
    let nice_of = |name: &str| -> Vec<i32> {
        threads
            .iter()
            .filter(|(thread, _)| thread == name)
            .map(|(_, nice)| *nice)
            .collect()
    };
    assert_eq!(nice_of("webhooks"), vec![own_nice], "{threads:?}");
    assert_eq!(nice_of("journal-writer"), vec![own_nice], "{threads:?}");
    assert_eq!(nice_of("journal-applier"), vec![own_nice], "{threads:?}");
    let workers = nice_of("tokio-rt-worker");
    assert!(!workers.is_empty(), "{threads:?}");
    assert!(
        workers.iter().all(|&nice| nice == (own_nice + 10).min(19)),
        "{threads:?}"
    );
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
            .post("/v1/orders", &merchant.api_key, Some(json!({ "merchant_order_id": "SSRF", "amount_minor": 10_000, "payment_method": "QRIS", "notify_url": url })))
            .await;
        assert_v1_error(&order, 400, "INVALID_BODY");
        assert!(order.body["error"]["message"].as_str().unwrap().contains("notify_url"));
        let mut body = budi_body("ssrf", 10_000);
        body["notify_url"] = json!(url);
        let disbursement = live.disburse(&merchant.api_key, body).await;
        assert_v1_error(&disbursement, 400, "INVALID_BODY");
        let patch = live
            .patch_merchant(&merchant.id, json!({ "default_notify_url": url }))
            .await;
        assert_v1_error(&patch, 400, "INVALID_BODY");
    }
    // A public address passes validation (then live mode has no vendor configured).
    let public = live
        .post("/v1/orders", &merchant.api_key, Some(json!({ "merchant_order_id": "OK", "amount_minor": 10_000, "payment_method": "QRIS", "notify_url": "https://merchant.example/hook" })))
        .await;
    assert_v1_error(&public, 503, "NO_VENDOR");

    let sandbox = TestServer::start();
    let merchant = sandbox.create_wallet_merchant().await;
    let order = sandbox
        .post("/v1/orders", &merchant.api_key, Some(json!({ "merchant_order_id": "LOCAL", "amount_minor": 10_000, "payment_method": "QRIS", "notify_url": "http://127.0.0.1:9/hook" })))
        .await;
    assert_eq!(order.status, StatusCode::CREATED, "{}", order.body);
}

/// A delivered event and its attempts are listed and can be
/// resent inside the retention window, and are dropped after it.
#[tokio::test]
async fn delivered_events_are_dropped_once_past_the_retention_window() {
    let (receiver, base) = receiving();
    // 0.0002 days: 17.28 s, room for a slow machine inside the window.
    let server = TestServer::start_with(&["--webhook-retry-scale", "0.001", "--webhook-retention-days", "0.0002"]);
    let merchant = server.create_wallet_merchant().await;
    let ref_code = create_order(&server, &merchant, "RETAINED-1", &format!("{base}/retained")).await;
    pay(&server, &merchant, &ref_code).await;
    let got = wait_for(&receiver, "/retained", 1).await;
    let event_id = json_body(&got[0])["event_id"].as_str().unwrap().to_string();
    let list = format!("/v1/webhooks/deliveries?event_id={event_id}");

    let listed = !attempts_of(&server, &merchant, &event_id, 1).await.is_null();
    assert!(listed, "the attempt is listed inside the window");
    let resent = resend(&server, &merchant.api_key, &event_id).await;
    assert_eq!(resent.status, StatusCode::OK, "{}", resent.body);
    assert_eq!(resent.body["data"]["attempt"], json!(2));

    // Past the window the attempts leave the list at once, and the event
    // goes at the next checkpoint.
    let mut unlisted = false;
    for _ in 0..300 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let reply = server.get(&list, &merchant.api_key).await;
        assert_eq!(reply.status, StatusCode::OK);
        if reply.body["meta"]["total"] == json!(0) {
            assert_eq!(reply.body["data"], json!([]));
            unlisted = true;
            break;
        }
    }
    assert!(unlisted, "the attempts leave the list after the window");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let gone = resend(&server, &merchant.api_key, &event_id).await;
    assert_v1_error(&gone, 404, "EVENT_NOT_FOUND");
}
