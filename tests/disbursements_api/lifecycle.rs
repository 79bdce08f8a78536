//! The sandbox vendor's lifecycle, sandbox completion by the merchant, and
//! reads of a disbursement that is not the caller's.

use super::*;
use uuid::Uuid;

#[tokio::test]
async fn sandbox_vendor_completes_a_bank_disbursement_as_success_with_a_vendor_id() {
    let funding = 10_000_000;
    let (server, merchant) = funded_server(FAST, funding).await;
    let created = create_ok(&server, &merchant, bank_body("life-ok", 2_000_000)).await;
    let id = created["id"].as_str().unwrap();
    let debited = funding - 2_000_000 - BANK_FEE;
    assert_eq!(server.balance(&merchant.api_key).await, debited);

    let done = wait_for(&server, &merchant, id, "SUCCESS").await;
    assert!(
        done["vendor_disbursement_id"].as_str().is_some_and(|v| !v.is_empty()),
        "{done}"
    );
    assert_eq!(done["final_amount_minor"], json!(2_000_000 + BANK_FEE));
    assert_eq!(done["ref_code"], created["ref_code"]);
    assert_eq!(server.balance(&merchant.api_key).await, debited);

    // By ref code: the same record.
    let by_ref = fetch(&server, &merchant, created["ref_code"].as_str().unwrap()).await;
    assert_eq!(by_ref, done);

    // Stays SUCCESS, and nothing comes back.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(fetch(&server, &merchant, id).await, done);
    assert_eq!(server.balance(&merchant.api_key).await, debited);
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn sandbox_failing_account_ends_failed_and_returns_the_full_amount_once() {
    let funding = 10_000_000;
    let (server, merchant) = funded_server(FAST, funding).await;
    let entries_before = entries(&server).await;
    let body = bank_body_to("life-fail", "BCA", "0000000000", 3_000_000);
    let created = create_ok(&server, &merchant, body).await;
    assert_eq!(created["account_number"], json!("0000000000"));
    let id = created["id"].as_str().unwrap();
    // The debit may already be undone by now on a slow machine; it is at most the full amount.
    let balance = server.balance(&merchant.api_key).await;
    assert!(
        balance == funding - 3_000_000 - BANK_FEE || balance == funding,
        "{balance}"
    );

    let failed = wait_for(&server, &merchant, id, "FAILED").await;
    assert_eq!(failed["final_amount_minor"], json!(3_000_000 + BANK_FEE));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        funding,
        "FAILED gives request + fee back"
    );
    // One debit and one reversal entry, and no second credit later.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(server.balance(&merchant.api_key).await, funding);
    assert_eq!(fetch(&server, &merchant, id).await["status"], json!("FAILED"));
    assert_eq!(entries(&server).await, entries_before + 2);
    let report = server.verify().await;
    assert_eq!(report["balanced"], json!(true), "{report}");
    assert_eq!(report["problems"], json!([]), "{report}");

    // The wallet is whole again: a second payout of all of it is accepted.
    create_ok(&server, &merchant, bank_body("life-after", funding - BANK_FEE)).await;
    assert_eq!(server.balance(&merchant.api_key).await, 0);
}

#[tokio::test]
async fn another_merchants_disbursement_or_an_unknown_id_is_404_disbursement_not_found() {
    let server = TestServer::start_with(SLOW);
    let owner = funded_merchant(&server, 5_000_000).await;
    let stranger = funded_merchant(&server, 5_000_000).await;
    let created = create_ok(&server, &owner, bank_body("mine", 1_000_000)).await;

    for id in [
        created["id"].as_str().unwrap().to_string(),
        created["ref_code"].as_str().unwrap().to_string(),
        Uuid::new_v4().to_string(),
        "DSB-000000000000-XXXX".to_string(),
    ] {
        let reply = get(&server, &stranger, &id).await;
        assert_v1_error(&reply, 404, "DISBURSEMENT_NOT_FOUND");
    }
    let reply = get(&server, &owner, &Uuid::new_v4().to_string()).await;
    assert_v1_error(&reply, 404, "DISBURSEMENT_NOT_FOUND");
    // The stranger cannot complete it either.
    let reply = complete(&server, &stranger, created["id"].as_str().unwrap(), "FAILED").await;
    assert_v1_error(&reply, 404, "DISBURSEMENT_NOT_FOUND");
    assert_eq!(server.balance(&stranger.api_key).await, 5_000_000);
    assert_eq!(server.balance(&owner.api_key).await, 5_000_000 - 1_000_000 - BANK_FEE);
    assert_eq!(count(&server, &stranger).await, 0);
}

#[tokio::test]
async fn sandbox_complete_failed_returns_the_money_and_a_second_complete_is_422_invalid_status() {
    let funding = 5_000_000;
    let (server, merchant) = funded_server(SLOW, funding).await;
    let created = create_ok(&server, &merchant, bank_body("complete-fail", 1_000_000)).await;
    let id = created["id"].as_str().unwrap();
    wait_for(&server, &merchant, id, "ON_PROCESS").await;
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_000_000 - BANK_FEE);

    let reply = complete(&server, &merchant, id, "FAILED").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    assert_eq!(reply.body["data"]["id"], json!(id));
    assert_eq!(reply.body["data"]["status"], json!("FAILED"));
    assert_eq!(sorted_keys(&reply.body["data"]), strings(&FIELDS));
    assert_eq!(server.balance(&merchant.api_key).await, funding);

    for status in ["FAILED", "SUCCESS"] {
        let reply = complete(&server, &merchant, id, status).await;
        assert_v1_error(&reply, 422, "INVALID_STATUS");
        assert_eq!(server.balance(&merchant.api_key).await, funding);
    }
    assert_eq!(fetch(&server, &merchant, id).await["status"], json!("FAILED"));
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn sandbox_complete_success_keeps_the_debit_and_an_unknown_status_is_400_invalid_body() {
    let funding = 5_000_000;
    let (server, merchant) = funded_server(SLOW, funding).await;
    let first = create_ok(&server, &merchant, bank_body("complete-ok", 1_000_000)).await;
    let second = create_ok(
        &server,
        &merchant,
        ewallet_body("complete-nope", "GOPAY", "081234567890", 700_000),
    )
    .await;
    let after = funding - 1_000_000 - BANK_FEE - 700_000;
    assert_eq!(server.balance(&merchant.api_key).await, after);

    // By ref code.
    let reply = complete(&server, &merchant, first["ref_code"].as_str().unwrap(), "SUCCESS").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["id"], first["id"]);
    assert_eq!(reply.body["data"]["status"], json!("SUCCESS"));
    assert!(
        reply.body["data"]["vendor_disbursement_id"]
            .as_str()
            .is_some_and(|v| !v.is_empty()),
        "{}",
        reply.body
    );
    assert_eq!(server.balance(&merchant.api_key).await, after);

    let second_id = second["id"].as_str().unwrap();
    wait_for(&server, &merchant, second_id, "ON_PROCESS").await;
    for status in ["NOPE", "success", "REJECTED", "ON_PROCESS"] {
        table::row(status, async {
            let reply = complete(&server, &merchant, second_id, status).await;
            assert_v1_error(&reply, 400, "INVALID_BODY");
        })
        .await;
    }
    let reply = server
        .post(
            &format!("/v1/sandbox/disbursements/{second_id}/complete"),
            &merchant.api_key,
            Some(json!({})),
        )
        .await;
    assert_v1_error(&reply, 400, "INVALID_BODY");
    assert_eq!(
        fetch(&server, &merchant, second_id).await["status"],
        json!("ON_PROCESS")
    );
    assert_eq!(server.balance(&merchant.api_key).await, after);

    let reply = complete(&server, &merchant, &Uuid::new_v4().to_string(), "SUCCESS").await;
    assert_v1_error(&reply, 404, "DISBURSEMENT_NOT_FOUND");
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn live_mode_sandbox_completion_route_is_404_not_found_whatever_the_body() {
    let server = TestServer::start_with(&["--mode", "live"]);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let path = format!("{}/v1/sandbox/disbursements/{}/complete", server.base, Uuid::new_v4());
    // The route does not exist in live mode (sandbox only): like any unknown
    // route it is 404, not a validation error that reveals it.
    for body in [&b"{}"[..], &b"{\"status\": 1}"[..], &b"not json"[..], &b""[..]] {
        let response = server
            .client
            .post(&path)
            .header("X-API-Key", &merchant.api_key)
            .header("Content-Type", "application/json")
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        let reply = into_reply(response).await;
        assert_v1_error(&reply, 404, "NOT_FOUND");
    }
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}
