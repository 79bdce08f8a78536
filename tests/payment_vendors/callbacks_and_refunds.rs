//! Signed vendor callbacks, and refunds through the vendor: after a
//! restart, unsupported, of unknown outcome.

use super::*;

#[tokio::test]
async fn signed_callbacks_pay_once_and_refunds_come_back_through_them() {
    let (vendor_url, calls, server, organization, merchant) = setup().await;
    add_vendor(&server, "v-ok", format!("{vendor_url}/ok"), true).await;
    route(&server, &organization, "QRIS", &["v-ok"]).await;
    let created = new_order(&server, &merchant, "C-1", "QRIS").await;
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
    let order = server.get(&format!("/v1/orders/{ref_code}"), &merchant.api_key).await;
    assert_eq!(order.body["data"]["status"], json!("PAID"));
    assert_eq!(order.body["data"]["vendor_rrn"], json!("RRN000111222"));

    // Refund: the vendor is asked, answers PENDING, then calls back FAILED.
    let refund = server.refund_of(&merchant.api_key, &ref_code, 400_000, "rf-1").await;
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
        .get(&format!("/v1/orders/{ref_code}/refunds"), &merchant.api_key)
        .await;
    assert_eq!(refunds.body["data"][0]["status"], json!("FAILED"));
    assert_eq!(refunds.body["data"][0]["vendor_refund_id"], json!(reference));
    assert_eq!(server.verify().await["balanced"], json!(true));

    // Another vendor cannot confirm this vendor's orders.
    add_vendor(&server, "v-other", format!("{vendor_url}/ok"), true).await;
    let other = new_order(&server, &merchant, "C-2", "QRIS").await;
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

#[tokio::test]
async fn a_refund_the_vendor_took_is_not_asked_again_after_a_restart() {
    let (vendor_url, calls, mut server, organization, merchant) = setup().await;
    add_vendor(&server, "v-ok", format!("{vendor_url}/ok"), true).await;
    route(&server, &organization, "QRIS", &["v-ok"]).await;
    let created = new_order(&server, &merchant, "RS-1", "QRIS").await;
    let ref_code = created.body["data"]["ref_code"].as_str().unwrap().to_string();
    let paid = json!({ "type": "payment", "ref_code": ref_code, "status": "PAID" });
    assert_eq!(
        callback(&server, "v-ok", paid, Some(SECRET)).await.status,
        StatusCode::OK
    );
    let refund = server.refund_of(&merchant.api_key, &ref_code, 2_000, "rs-1").await;
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
        .get(&format!("/v1/orders/{ref_code}/refunds"), &merchant.api_key)
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
    let (vendor_url, _calls, server, organization, merchant) = setup().await;
    add_vendor(&server, "v-norefund", format!("{vendor_url}/ok"), false).await;
    route(&server, &organization, "QRIS", &["v-norefund"]).await;
    let created = new_order(&server, &merchant, "N-1", "QRIS").await;
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
    let refund = server.refund_of(&merchant.api_key, ref_code, 1_000, "nr").await;
    assert_v1_error(&refund, 422, "REFUND_NOT_SUPPORTED");
    assert_eq!(server.balance(&merchant.api_key).await, before);
}

#[tokio::test]
async fn a_refund_vendor_failure_of_unknown_outcome_is_asked_again_and_a_refusal_fails_it() {
    let (vendor_url, calls, server, organization, merchant) = setup().await;
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
        .get(&format!("/v1/orders/{ref_code}/refunds"), &merchant.api_key)
        .await;
    assert_eq!(refunds.body["data"][0]["status"], json!("PENDING"));
    assert_eq!(server.balance(&merchant.api_key).await, balance, "still debited");

    // A 4xx: the vendor refused; the refund fails and the money comes back.
    let (ref_code, _) = paid_order_refunded(&server, &organization, &merchant, "v-refuse", "RF-1", 3_000).await;
    let path = format!("/v1/orders/{ref_code}/refunds");
    let failed = eventually_async(Duration::from_secs(5), || async {
        let refunds = server.get(&path, &merchant.api_key).await;
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
