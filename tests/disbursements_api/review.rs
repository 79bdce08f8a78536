//! Operator review: the threshold, approval, rejection and the refusals of
//! `/admin/v1/disbursements/{id}/approve` and `/reject`.

use super::*;
use uuid::Uuid;

#[tokio::test]
async fn amount_at_the_review_threshold_waits_in_review_until_approved_then_succeeds() {
    let server = TestServer::start_with(FAST);
    let funding = REVIEW_THRESHOLD + BANK_FEE + 1_000;
    let merchant = funded_merchant(&server, funding).await;
    let created = create_ok(&server, &merchant, bank_body("review-1", REVIEW_THRESHOLD)).await;
    let id = created["id"].as_str().unwrap();
    assert_eq!(server.balance(&merchant.api_key).await, 1_000);

    let in_review = wait_for(&server, &merchant, id, "IN_REVIEW").await;
    assert_eq!(in_review["vendor_disbursement_id"], Value::Null);
    // Well past the vendor delay it is still waiting for the operator.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(fetch(&server, &merchant, id).await, in_review);
    assert_eq!(server.balance(&merchant.api_key).await, 1_000);

    let reply = approve(&server, id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    let approved = &reply.body["data"];
    assert_eq!(approved["id"], json!(id));
    assert_eq!(approved["status"], json!("ON_PROCESS"));
    assert!(
        approved["vendor_disbursement_id"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{approved}"
    );

    let done = wait_for(&server, &merchant, id, "SUCCESS").await;
    assert_eq!(done["vendor_disbursement_id"], approved["vendor_disbursement_id"]);
    assert_eq!(server.balance(&merchant.api_key).await, 1_000);

    // Final: neither approvable nor rejectable, and no money moves.
    assert_v1_error(&approve(&server, id).await, 422, "INVALID_STATUS");
    assert_v1_error(&reject(&server, id).await, 422, "INVALID_STATUS");
    assert_eq!(fetch(&server, &merchant, id).await["status"], json!("SUCCESS"));
    assert_eq!(server.balance(&merchant.api_key).await, 1_000);
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn review_threshold_is_inclusive_and_follows_the_merchants_patched_limit() {
    let funding = 5_000_000;
    let (server, merchant) = funded_server(FAST, funding).await;
    let limits = json!({ "limits": { "review_threshold_minor": 1_000_000 } });
    patch_merchant(&server, &merchant.id, limits).await;
    let below = create_ok(
        &server,
        &merchant,
        ewallet_body("below", "OVO", "081234567890", 999_999),
    )
    .await;
    let at = create_ok(&server, &merchant, ewallet_body("at", "OVO", "081234567890", 1_000_000)).await;
    wait_for(&server, &merchant, below["id"].as_str().unwrap(), "SUCCESS").await;
    wait_for(&server, &merchant, at["id"].as_str().unwrap(), "IN_REVIEW").await;
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_999_999);
}

#[tokio::test]
async fn rejecting_a_disbursement_in_review_returns_the_full_amount_exactly_once() {
    let server = TestServer::start_with(FAST);
    let funding = REVIEW_THRESHOLD + BANK_FEE + 500;
    let merchant = funded_merchant(&server, funding).await;
    let entries_before = entries(&server).await;
    let created = create_ok(&server, &merchant, bank_body("review-2", REVIEW_THRESHOLD)).await;
    let id = created["id"].as_str().unwrap();
    wait_for(&server, &merchant, id, "IN_REVIEW").await;
    assert_eq!(server.balance(&merchant.api_key).await, 500);

    let reply = reject(&server, id).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["id"], json!(id));
    assert_eq!(reply.body["data"]["status"], json!("REJECTED"));
    assert_eq!(reply.body["data"]["vendor_disbursement_id"], Value::Null);
    assert_eq!(server.balance(&merchant.api_key).await, funding);

    // A second rejection and a late approval are refused; the money came back once.
    assert_v1_error(&reject(&server, id).await, 422, "INVALID_STATUS");
    assert_v1_error(&approve(&server, id).await, 422, "INVALID_STATUS");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(server.balance(&merchant.api_key).await, funding);
    let stored = fetch(&server, &merchant, id).await;
    assert_eq!(stored["status"], json!("REJECTED"));
    assert_eq!(stored["final_amount_minor"], json!(REVIEW_THRESHOLD + BANK_FEE));
    assert_eq!(entries(&server).await, entries_before + 2);
    assert_ledger_clean(&server).await;

    // A body-less rejection works too, on another one.
    let other = create_ok(&server, &merchant, bank_body("review-3", REVIEW_THRESHOLD)).await;
    let other_id = other["id"].as_str().unwrap();
    wait_for(&server, &merchant, other_id, "IN_REVIEW").await;
    let reply = server
        .admin(
            Method::POST,
            &format!("/admin/v1/disbursements/{other_id}/reject"),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["status"], json!("REJECTED"));
    assert_eq!(server.balance(&merchant.api_key).await, funding);
}

#[tokio::test]
async fn approve_or_reject_with_a_non_uuid_is_400_invalid_id_and_unknown_is_404() {
    let (server, merchant) = funded_server(SLOW, 5_000_000).await;
    let created = create_ok(&server, &merchant, bank_body("not-review", 1_000_000)).await;
    let id = created["id"].as_str().unwrap();
    wait_for(&server, &merchant, id, "ON_PROCESS").await;

    for bad in ["not-a-uuid", "12345", created["ref_code"].as_str().unwrap()] {
        assert_v1_error(&reject(&server, bad).await, 400, "INVALID_ID");
        assert_v1_error(&approve(&server, bad).await, 400, "INVALID_ID");
    }
    let unknown = Uuid::new_v4().to_string();
    assert_v1_error(&reject(&server, &unknown).await, 404, "DISBURSEMENT_NOT_FOUND");
    assert_v1_error(&approve(&server, &unknown).await, 404, "DISBURSEMENT_NOT_FOUND");

    // ON_PROCESS is past review: neither approvable nor rejectable.
    assert_v1_error(&approve(&server, id).await, 422, "INVALID_STATUS");
    assert_v1_error(&reject(&server, id).await, 422, "INVALID_STATUS");
    assert_eq!(fetch(&server, &merchant, id).await["status"], json!("ON_PROCESS"));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        5_000_000 - 1_000_000 - BANK_FEE
    );
}
