//! Routes per channel, beneficiary verification by the first vendor of a
//! channel, and the refusals of a payout route.

use super::*;

#[tokio::test]
async fn beneficiaries_are_verified_by_the_first_vendor_of_their_channel() {
    let acme = PayoutDouble::start("acme", "/acme").await;
    let bravo = PayoutDouble::start("bravo", "/bravo").await;
    let (server, merchant) = live_bank_route(&[&acme, &bravo]).await;

    acme.set_account_answer(AccountAnswer::Name("SITI RAHAYU".into()));
    let verified = create_beneficiary(&server, &merchant, bank_beneficiary("1111111111")).await;
    let found = wait_for_verification(&server, &merchant, &verified["id"], "VERIFIED").await;
    assert_eq!(found["verified_name"], json!("SITI RAHAYU"));
    let asked = inquiries_for(&acme, "1111111111");
    assert_eq!(
        asked,
        vec![json!({ "channel": "BANK", "bank_short_code": "MANDIRI", "account_number": "1111111111" })]
    );

    acme.set_account_answer(AccountAnswer::NotFound);
    let unknown = create_beneficiary(&server, &merchant, bank_beneficiary("2222222222")).await;
    let found = wait_for_verification(&server, &merchant, &unknown["id"], "FAILED").await;
    assert_eq!(found["verified_name"], Value::Null);

    // Anything else leaves it PENDING, and it is asked again.
    acme.set_account_answer(AccountAnswer::Error);
    let later = create_beneficiary(&server, &merchant, bank_beneficiary("3333333333")).await;
    wait_until("the account is asked about twice", || {
        inquiries_for(&acme, "3333333333").len() >= 2
    })
    .await;
    let pending = beneficiary(&server, &merchant, &later["id"]).await;
    assert_eq!(pending["verification_status"], json!("PENDING"), "{pending}");
    assert_eq!(pending["verified_name"], Value::Null);
    acme.set_account_answer(AccountAnswer::Name("JOKO WIDODO".into()));
    let found = wait_for_verification(&server, &merchant, &later["id"], "VERIFIED").await;
    assert_eq!(found["verified_name"], json!("JOKO WIDODO"));

    assert!(bravo.account_inquiries().is_empty(), "only the first vendor is asked");
    assert_eq!(inquiries_for(&acme, "2222222222").len(), 1, "a 404 is final");
    acme.assert_protocol_kept();
    bravo.assert_protocol_kept();
}

#[tokio::test]
async fn ewallet_payouts_are_routed_apart_from_bank_payouts() {
    let banks = PayoutDouble::start("bank-rail", "/bank-rail").await;
    let wallets = PayoutDouble::start("wallet-rail", "/wallet-rail").await;
    banks.set_answer(Answer::Succeed);
    wallets.set_answer(Answer::Succeed);
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &banks).await;
    add_payout_vendor(&server, &wallets).await;
    routed(&server, &organization, "BANK", &["bank-rail"]).await;

    let refused = server
        .post(
            "/v1/disbursements",
            &merchant.api_key,
            Some(ewallet_body("wallet-1", 2_500_000)),
        )
        .await;
    assert_v1_error(&refused, 503, "NO_VENDOR");
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING);

    routed(&server, &organization, "EWALLET", &["wallet-rail"]).await;
    let wallet = create(&server, &merchant, ewallet_body("wallet-1", 2_500_000)).await;
    assert_eq!(wallet["fee_minor"], json!(0));
    let wallet_id = id_of(&wallet);
    let bank_id = id_of(&create(&server, &merchant, bank_body("bank-1", 1_000_000)).await);
    wait_for_status(&server, &merchant, &wallet_id, "SUCCESS").await;
    wait_for_status(&server, &merchant, &bank_id, "SUCCESS").await;

    assert_eq!((wallets.posts(&wallet_id), banks.posts(&wallet_id)), (1, 0));
    assert_eq!((banks.posts(&bank_id), wallets.posts(&bank_id)), (1, 0));
    let sent = &wallets.payout(&wallet_id).bodies[0];
    assert_eq!(sorted_keys(sent), strings(&EWALLET_PAYOUT_FIELDS), "{sent}");
    assert_eq!(sent["payout_id"], json!(wallet_id));
    assert_eq!(sent["ref_code"], wallet["ref_code"]);
    assert_eq!(sent["channel"], json!("EWALLET"));
    assert_eq!(sent["ewallet_provider"], json!("OVO"));
    assert_eq!(sent["ewallet_phone"], json!("6281234567890"));
    assert_eq!(sent["amount_minor"], json!(2_500_000));
    assert_eq!(sent["currency"], json!("IDR"));
    let sent = &banks.payout(&bank_id).bodies[0];
    assert_eq!(sorted_keys(sent), strings(&BANK_PAYOUT_FIELDS), "{sent}");

    // An e-wallet beneficiary is asked of the EWALLET route's vendor.
    wallets.set_account_answer(AccountAnswer::Name("DEWI LESTARI".into()));
    let body = json!({ "channel": "EWALLET", "ewallet_provider": "DANA", "ewallet_phone": "+62 813-1111-2222" });
    let saved = create_beneficiary(&server, &merchant, body).await;
    let found = wait_for_verification(&server, &merchant, &saved["id"], "VERIFIED").await;
    assert_eq!(found["verified_name"], json!("DEWI LESTARI"));
    assert_eq!(
        wallets.account_inquiries(),
        vec![json!({ "channel": "EWALLET", "ewallet_provider": "DANA", "ewallet_phone": "6281311112222" })]
    );
    assert!(banks.account_inquiries().is_empty());

    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 2_500_000 - 1_250_000);
    banks.assert_protocol_kept();
    wallets.assert_protocol_kept();
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn a_payout_route_names_only_payout_vendors_and_a_refused_route_is_left_unchanged() {
    let acme = PayoutDouble::start("acme", "/acme").await;
    acme.set_answer(Answer::Succeed);
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &acme).await;
    // A payment vendor, not a payout vendor.
    let reply = server
        .admin_put(
            "/admin/v1/vendors/payments-only",
            json!({ "url": "http://127.0.0.1:9/pay", "secret": "s3cret" }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    routed(&server, &organization, "BANK", &["acme"]).await;

    for vendors in [
        vec!["acme", "nobody"],
        vec!["payments-only"],
        vec!["acme", "payments-only"],
    ] {
        let reply = route_payouts(&server, &organization, "BANK", &vendors).await;
        assert_v1_error(&reply, 400, "INVALID_BODY");
    }
    assert_v1_error(
        &route_payouts(&server, &organization, "CASH", &["acme"]).await,
        400,
        "INVALID_BODY",
    );
    // Still routed to acme alone.
    let id = id_of(&create(&server, &merchant, bank_body("still-routed", 1_000_000)).await);
    wait_for_status(&server, &merchant, &id, "SUCCESS").await;
    assert_eq!(acme.posts(&id), 1);

    // An empty route is no route.
    routed(&server, &organization, "BANK", &[]).await;
    let refused = server
        .post(
            "/v1/disbursements",
            &merchant.api_key,
            Some(bank_body("unrouted", 1_000_000)),
        )
        .await;
    assert_v1_error(&refused, 503, "NO_VENDOR");
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 1_250_000);
    acme.assert_protocol_kept();
}
