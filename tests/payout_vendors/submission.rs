//! Submitting payouts: no route, accepted then settled by callback or
//! inquiry, final answers, refusals that pass a payout on.

use super::*;

#[tokio::test]
async fn without_a_payout_route_live_disbursements_are_no_vendor_and_debit_nothing() {
    let acme = PayoutDouble::start("acme", "/acme").await;
    acme.set_answer(Answer::Succeed);
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &acme).await;
    upload_public_key(&server, &merchant).await;

    let refused = server
        .post(
            "/v1/disbursements",
            &merchant.api_key,
            Some(bank_body("no-route-1", 1_000_000)),
        )
        .await;
    assert_v1_error(&refused, 503, "NO_VENDOR");
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING, "nothing debited");
    let legacy = legacy_bank_body(&merchant, "LEGACY-NR-1", 10_000);
    let refused = legacy_post(&server, "/api/disbursement/create", &merchant, &legacy).await;
    assert_eq!(refused.status.as_u16(), 422, "{}", refused.body);
    assert_eq!(
        refused.body,
        json!({ "code": 422, "message": "Merchant setting is not Valid", "data": null })
    );
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING, "nothing debited");
    assert_eq!(acme.total_posts(), 0);

    // Once routed, the same keys work and both APIs reach the vendor.
    routed(&server, &organization, "BANK", &["acme"]).await;
    let v1 = create(&server, &merchant, bank_body("no-route-1", 1_000_000)).await;
    let v1_id = id_of(&v1);
    let legacy = legacy_post(&server, "/api/disbursement/create", &merchant, &legacy).await;
    assert_eq!(legacy.status, StatusCode::OK, "{}", legacy.body);
    assert_eq!(legacy.body["data"]["status"], json!("PENDING"), "{}", legacy.body);
    let legacy_ref = legacy.body["data"]["refCode"].as_str().unwrap().to_string();
    let legacy_id = id_of(&fetch(&server, &merchant, &legacy_ref).await);
    wait_for_status(&server, &merchant, &v1_id, "SUCCESS").await;
    let done = wait_for_status(&server, &merchant, &legacy_id, "SUCCESS").await;
    assert_eq!(done["source"], json!("LEGACY"));
    let sent = &acme.payout(&legacy_id).bodies[0];
    assert_eq!(sent["payout_id"], json!(legacy_id));
    assert_eq!(sent["ref_code"], json!(legacy_ref));
    assert_eq!(
        sent["amount_minor"],
        json!(1_000_000),
        "IDR 10,000 in minor units, without the fee"
    );
    assert_eq!(sent["account_name"], json!("Budi Santoso"));
    assert_eq!(acme.posts(&v1_id), 1);
    assert_eq!(acme.posts(&legacy_id), 1);
    assert_eq!(
        server.balance(&merchant.api_key).await,
        FUNDING - 2 * (1_000_000 + BANK_FEE)
    );
    acme.assert_protocol_kept();
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn an_accepted_payout_is_on_process_and_its_first_final_callback_settles_it_once() {
    let acme = PayoutDouble::start("acme", "/acme").await;
    let (server, merchant) = live_bank_route(&[&acme]).await;

    let created = create(&server, &merchant, bank_body("accepted-1", 1_500_000)).await;
    assert_eq!(created["request_amount_minor"], json!(1_500_000));
    assert_eq!(created["fee_minor"], json!(BANK_FEE));
    assert_eq!(created["final_amount_minor"], json!(1_750_000));
    let id = id_of(&created);
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 1_750_000);

    let on_process = wait_for_status(&server, &merchant, &id, "ON_PROCESS").await;
    let payout = acme.payout(&id);
    assert_eq!(payout.posts, 1);
    let reference = payout.reference.clone().expect("taken");
    assert_eq!(on_process["vendor_disbursement_id"], json!(reference));
    let sent = &payout.bodies[0];
    assert_eq!(sorted_keys(sent), strings(&BANK_PAYOUT_FIELDS), "{sent}");
    assert_eq!(sent["payout_id"], json!(id));
    assert_eq!(sent["ref_code"], created["ref_code"]);
    assert_eq!(sent["channel"], json!("BANK"));
    assert_eq!(sent["bank_short_code"], json!("BCA"));
    assert_eq!(sent["account_number"], json!("1234567890"));
    assert_eq!(sent["account_name"], json!("Budi Santoso"));
    assert_eq!(
        sent["amount_minor"],
        json!(1_500_000),
        "the request amount; the fee stays"
    );
    assert_eq!(sent["currency"], json!("IDR"));

    // Refused callbacks change nothing.
    let success = json!({ "type": "payout", "payout_id": id, "status": "SUCCESS", "reference": reference });
    let unsigned = callback(&server, "acme", &success, None).await;
    assert_v1_error(&unsigned, 401, "INVALID_SIGNATURE");
    let forged = callback(&server, "acme", &success, Some("not-the-vendor-secret")).await;
    assert_v1_error(&forged, 401, "INVALID_SIGNATURE");
    let unknown = json!({ "type": "payout", "payout_id": uuid::Uuid::new_v4(), "status": "SUCCESS" });
    let reply = callback(&server, "acme", &unknown, Some(&acme.secret)).await;
    assert_v1_error(&reply, 404, "DISBURSEMENT_NOT_FOUND");
    assert_eq!(fetch(&server, &merchant, &id).await["status"], json!("ON_PROCESS"));

    // The first final status settles it; a repeat changes nothing; the opposite conflicts.
    acme.settle(&id, Final::Success);
    let body = acme.callback_body(&id);
    let reply = callback(&server, "acme", &body, Some(&acme.secret)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body, received("SUCCESS"));
    let done = fetch(&server, &merchant, &id).await;
    assert_eq!(done["status"], json!("SUCCESS"));
    assert_eq!(done["vendor_disbursement_id"], json!(reference));
    let repeat = callback(&server, "acme", &body, Some(&acme.secret)).await;
    assert_eq!(repeat.status, StatusCode::OK, "{}", repeat.body);
    assert_eq!(repeat.body, received("SUCCESS"));
    let mut opposite = body.clone();
    opposite["status"] = json!("FAILED");
    opposite["failure_reason"] = json!("ACCOUNT_CLOSED");
    let conflict = callback(&server, "acme", &opposite, Some(&acme.secret)).await;
    assert_v1_error(&conflict, 409, "STATUS_CONFLICT");
    assert_eq!(fetch(&server, &merchant, &id).await["status"], json!("SUCCESS"));
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 1_750_000);

    // FAILED by callback: request + fee back; SUCCESS afterwards conflicts.
    let failing = id_of(&create(&server, &merchant, bank_body("accepted-2", 2_000_000)).await);
    wait_for_status(&server, &merchant, &failing, "ON_PROCESS").await;
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 1_750_000 - 2_250_000);
    acme.settle(&failing, Final::Failed);
    let body = acme.callback_body(&failing);
    assert_eq!(body["failure_reason"], json!("BENEFICIARY_BANK_REJECTED"));
    let reply = callback(&server, "acme", &body, Some(&acme.secret)).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body, received("FAILED"));
    assert_eq!(fetch(&server, &merchant, &failing).await["status"], json!("FAILED"));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        FUNDING - 1_750_000,
        "money back"
    );
    let mut opposite = body.clone();
    opposite["status"] = json!("SUCCESS");
    opposite.as_object_mut().unwrap().remove("failure_reason");
    let conflict = callback(&server, "acme", &opposite, Some(&acme.secret)).await;
    assert_v1_error(&conflict, 409, "STATUS_CONFLICT");
    let repeat = callback(&server, "acme", &body, Some(&acme.secret)).await;
    assert_eq!(repeat.body, received("FAILED"));
    assert_eq!(fetch(&server, &merchant, &failing).await["status"], json!("FAILED"));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        FUNDING - 1_750_000,
        "returned once"
    );

    assert_eq!(acme.posts(&id), 1);
    assert_eq!(acme.posts(&failing), 1);
    acme.assert_protocol_kept();
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn a_payout_the_vendor_finishes_without_a_callback_is_found_by_inquiry() {
    let acme = PayoutDouble::start("acme", "/acme").await;
    let (server, merchant) = live_bank_route(&[&acme]).await;

    let paid = id_of(&create(&server, &merchant, bank_body("quiet-1", 1_000_000)).await);
    let failed = id_of(&create(&server, &merchant, bank_body("quiet-2", 3_000_000)).await);
    wait_for_status(&server, &merchant, &paid, "ON_PROCESS").await;
    wait_for_status(&server, &merchant, &failed, "ON_PROCESS").await;
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 1_250_000 - 3_250_000);
    let paid_reference = acme.settle(&paid, Final::Success).reference.unwrap();
    acme.settle(&failed, Final::Failed);

    let done = wait_for_status(&server, &merchant, &paid, "SUCCESS").await;
    assert_eq!(done["vendor_disbursement_id"], json!(paid_reference));
    wait_for_status(&server, &merchant, &failed, "FAILED").await;
    for id in [&paid, &failed] {
        assert!(acme.gets(id) >= 1, "paygate asked the vendor about {id}");
        assert!(
            acme.events_for(id)
                .iter()
                .any(|event| matches!(event, Event::Get { status: 200, .. })),
            "{:?}",
            acme.events_for(id)
        );
        assert_eq!(acme.posts(id), 1);
    }
    // The inquiry GET was signed over the path with the URL's prefix
    // (`/acme/payouts/{id}`) and no request left the prefix.
    acme.assert_protocol_kept();
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 1_250_000);
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn final_answers_at_submission_settle_at_once_and_failed_gives_request_and_fee_back() {
    let acme = PayoutDouble::start("acme", "/acme").await;
    let (server, merchant) = live_bank_route(&[&acme]).await;

    acme.set_answer(Answer::Succeed);
    let paid = id_of(&create(&server, &merchant, bank_body("at-once-1", 4_000_000)).await);
    let done = wait_for_status(&server, &merchant, &paid, "SUCCESS").await;
    assert_eq!(
        done["vendor_disbursement_id"],
        json!(acme.payout(&paid).reference.unwrap())
    );
    assert_eq!(done["final_amount_minor"], json!(4_250_000));
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 4_250_000);

    acme.set_answer(Answer::Fail);
    let created = create(&server, &merchant, bank_body("at-once-2", 5_000_000)).await;
    // Debited at creation; the vendor's FAILED may already have given it
    // back by the time a balance could be read, so only the reply says so.
    assert_eq!(created["final_amount_minor"], json!(5_250_000));
    let failed = id_of(&created);
    wait_for_status(&server, &merchant, &failed, "FAILED").await;
    assert_eq!(
        server.balance(&merchant.api_key).await,
        FUNDING - 4_250_000,
        "request and fee back"
    );
    assert_eq!(acme.posts(&paid), 1);
    assert_eq!(acme.posts(&failed), 1);
    acme.assert_protocol_kept();
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn a_refusing_vendor_passes_the_payout_to_the_next_and_all_refusing_fails_it_with_the_money_back() {
    let alpha = PayoutDouble::start("alpha", "/alpha").await;
    let bravo = PayoutDouble::start("bravo", "/bravo/v2").await;
    let (server, merchant) = live_bank_route(&[&alpha, &bravo]).await;

    alpha.set_answer(Answer::Refuse);
    bravo.set_answer(Answer::Accept);
    let id = id_of(&create(&server, &merchant, bank_body("failover-1", 1_000_000)).await);
    let on_process = wait_for_status(&server, &merchant, &id, "ON_PROCESS").await;
    let at_bravo = bravo.payout(&id);
    assert_eq!(
        on_process["vendor_disbursement_id"],
        json!(at_bravo.reference.clone().unwrap())
    );
    assert_eq!((at_bravo.posts, at_bravo.taken()), (1, true));
    let at_alpha = alpha.payout(&id);
    assert_eq!((at_alpha.posts, at_alpha.refusals, at_alpha.taken()), (1, 1, false));
    assert_eq!(
        at_alpha.bodies[0], at_bravo.bodies[0],
        "the same request, payout_id included"
    );

    // Only the vendor holding it can settle it.
    let hijack = json!({ "type": "payout", "payout_id": id, "status": "FAILED" });
    let reply = callback(&server, "alpha", &hijack, Some(&alpha.secret)).await;
    assert_v1_error(&reply, 404, "DISBURSEMENT_NOT_FOUND");
    bravo.settle(&id, Final::Success);
    let reply = callback(&server, "bravo", &bravo.callback_body(&id), Some(&bravo.secret)).await;
    assert_eq!(reply.body, received("SUCCESS"));
    assert_eq!(alpha.posts(&id), 1, "a refusal is final for that vendor");

    // Every vendor refuses: FAILED, money back, nobody holds it.
    alpha.set_answer(Answer::Refuse);
    bravo.set_answer(Answer::Refuse);
    let before = server.balance(&merchant.api_key).await;
    assert_eq!(before, FUNDING - 1_250_000);
    let refused = id_of(&create(&server, &merchant, bank_body("failover-2", 2_000_000)).await);
    wait_for_status(&server, &merchant, &refused, "FAILED").await;
    assert_eq!(server.balance(&merchant.api_key).await, before, "balance restored");
    for double in [&alpha, &bravo] {
        let payout = double.payout(&refused);
        assert_eq!(
            (payout.posts, payout.refusals, payout.taken()),
            (1, 1, false),
            "{}",
            double.name
        );
        double.assert_protocol_kept();
    }
    assert_eq!(server.verify().await["balanced"], json!(true));
}
