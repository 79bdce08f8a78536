//! Unknown outcomes: a payout stays with the vendor that may have taken
//! it, is submitted again only after a 404, and survives a SIGKILL.

use super::*;

#[tokio::test]
async fn an_unknown_answer_from_a_vendor_that_took_it_stays_with_that_vendor_until_inquiry_settles_it() {
    let alpha = PayoutDouble::start("alpha", "/alpha").await;
    let bravo = PayoutDouble::start("bravo", "/bravo").await;
    let (server, merchant) = live_bank_route(&[&alpha, &bravo]).await;
    bravo.set_answer(Answer::Succeed);
    alpha.set_hang(Duration::from_millis(VENDOR_TIMEOUT_MS * 4));

    // A 502 after taking it, an answer past the timeout, and a 200 that is not JSON.
    let cases = [
        (Answer::ErrorTaken, Final::Success),
        (Answer::HangTaken, Final::Failed),
        (Answer::GarbageTaken, Final::Success),
    ];
    let mut ids = Vec::new();
    for (n, (answer, _)) in cases.iter().enumerate() {
        alpha.set_answer(*answer);
        let id = id_of(&create(&server, &merchant, bank_body(&format!("unknown-{n}"), 1_000_000)).await);
        wait_for_status(&server, &merchant, &id, "ON_PROCESS").await;
        // Asked, answered ACCEPTED: still ON_PROCESS, never FAILED on a guess.
        wait_until(&format!("paygate inquires about {id}"), || alpha.gets(&id) >= 1).await;
        let data = fetch(&server, &merchant, &id).await;
        assert_eq!(data["status"], json!("ON_PROCESS"), "{answer:?}: {data}");
        ids.push(id);
    }
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 3 * 1_250_000);
    for (id, (_, done)) in ids.iter().zip(cases) {
        alpha.settle(id, done);
    }
    for (id, (answer, done)) in ids.iter().zip(cases) {
        let data = wait_for_status(&server, &merchant, id, done.as_str()).await;
        assert_eq!(
            data["vendor_disbursement_id"],
            json!(alpha.payout(id).reference.unwrap()),
            "{answer:?}"
        );
        assert_eq!(alpha.posts(id), 1, "{answer:?}: never submitted again");
        assert_eq!(bravo.posts(id), 0, "{answer:?}: never another vendor");
    }
    assert_eq!(bravo.total_posts(), 0);
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 2 * 1_250_000);
    alpha.assert_protocol_kept();
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn a_payout_the_vendor_never_took_is_submitted_again_to_it_only_after_a_404() {
    let alpha = PayoutDouble::start("alpha", "/alpha").await;
    let bravo = PayoutDouble::start("bravo", "/bravo").await;
    let (server, merchant) = live_bank_route(&[&alpha, &bravo]).await;
    alpha.set_answer(Answer::Succeed);
    bravo.set_answer(Answer::Succeed);
    alpha.set_hang(Duration::from_millis(VENDOR_TIMEOUT_MS * 4));

    for (n, first) in [Answer::ErrorUntaken, Answer::HangUntaken].into_iter().enumerate() {
        alpha.script(&[first]);
        let id = id_of(&create(&server, &merchant, bank_body(&format!("untaken-{n}"), 1_000_000)).await);
        let done = wait_for_status(&server, &merchant, &id, "SUCCESS").await;
        assert_eq!(
            done["vendor_disbursement_id"],
            json!(alpha.payout(&id).reference.unwrap())
        );
        assert_submitted_again_only_after_404(&alpha.events_for(&id), first);
        assert_eq!(bravo.posts(&id), 0, "{first:?}: never another vendor");
    }
    // The hanging answer comes back after paygate gave up; nothing changes.
    tokio::time::sleep(Duration::from_millis(VENDOR_TIMEOUT_MS * 5)).await;
    assert_eq!(bravo.total_posts(), 0);
    assert_eq!(alpha.total_posts(), 4);
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 2 * 1_250_000);
    alpha.assert_protocol_kept();
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn after_a_sigkill_paygate_inquires_its_open_payouts_and_never_resubmits_one_the_vendor_took() {
    let acme = PayoutDouble::start("acme", "/acme").await;
    let mut server = TestServer::start_with(LIVE_REAL_SCHEDULE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &acme).await;
    routed(&server, &organization, "BANK", &["acme"]).await;

    let mut held = Vec::new();
    for n in 0..3 {
        let id = id_of(&create(&server, &merchant, bank_body(&format!("held-{n}"), 1_000_000)).await);
        wait_for_status(&server, &merchant, &id, "ON_PROCESS").await;
        held.push(id);
    }
    // A 500 without taking it; on the real schedule the inquiry is 10 s away.
    acme.script(&[Answer::ErrorUntaken]);
    let untaken = id_of(&create(&server, &merchant, bank_body("untaken", 1_000_000)).await);
    wait_for_status(&server, &merchant, &untaken, "ON_PROCESS").await;
    acme.set_answer(Answer::Succeed);
    let gets_before: Vec<u32> = held.iter().map(|id| acme.gets(id)).collect();
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 4 * 1_250_000);

    server.kill();
    // While paygate is down the vendor finishes two of them.
    acme.settle(&held[0], Final::Success);
    acme.settle(&held[1], Final::Failed);
    server.restart();

    wait_for_status(&server, &merchant, &held[0], "SUCCESS").await;
    wait_for_status(&server, &merchant, &held[1], "FAILED").await;
    wait_for_status(&server, &merchant, &untaken, "SUCCESS").await;
    wait_until("paygate inquires about every open payout after the start", || {
        held.iter()
            .zip(&gets_before)
            .all(|(id, before)| acme.gets(id) > *before)
    })
    .await;
    assert_eq!(fetch(&server, &merchant, &held[2]).await["status"], json!("ON_PROCESS"));
    for id in &held {
        assert_eq!(acme.posts(id), 1, "{id} was taken: never submitted again");
    }
    assert_submitted_again_only_after_404(&acme.events_for(&untaken), Answer::ErrorUntaken);

    acme.settle(&held[2], Final::Success);
    let reply = callback(&server, "acme", &acme.callback_body(&held[2]), Some(&acme.secret)).await;
    assert_eq!(reply.body, received("SUCCESS"));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        FUNDING - 3 * 1_250_000,
        "only the failed one came back"
    );
    acme.assert_protocol_kept();
    assert_eq!(server.verify().await["balanced"], json!(true));
}
