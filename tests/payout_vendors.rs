//! Payout vendors in live mode against a vendor double on
//! loopback: routing per organization and channel, the signed protocol,
//! final answers, failover past refusals, unknown outcomes that stay with
//! their vendor until an inquiry settles them, signed callbacks, restarts,
//! and beneficiary account inquiries.

mod payout_double;
mod support;

use base64::Engine as _;
use payout_double::{AccountAnswer, Answer, Event, Final, PayoutDouble};
use reqwest::{Method, StatusCode};
use rsa::pkcs8::{EncodePublicKey, LineEnding};
use rsa::signature::{SignatureEncoding, Signer};
use rsa::RsaPrivateKey;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::{Duration, Instant};
use support::*;

/// Live mode, with the vendor inquiry schedule a hundred times faster: the
/// first inquiry after an unknown answer comes 100 ms later, then 0.6 s, 3 s, 9 s.
const LIVE: &[&str] = &["--mode", "live", "--vendor-retry-scale", "0.01"];
/// Live mode on the real schedule: no inquiry within a minute of ON_PROCESS,
/// so an inquiry seen soon after a start is the start's own.
const LIVE_REAL_SCHEDULE: &[&str] = &["--mode", "live", "--vendor-retry-scale", "1"];
/// Each merchant's wallet at the start of a test.
const FUNDING: i64 = 100_000_000;
/// The default `fees.disbursement_fee_bank_minor` (e-wallets: 0).
const BANK_FEE: i64 = 250_000;
/// paygate's per-request timeout at the double; its hangs last longer.
const VENDOR_TIMEOUT_MS: u64 = 300;
/// How long a disbursement may take to reach an awaited status.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(15);

/// Registers `double` at paygate as a payout vendor.
async fn add_payout_vendor(server: &TestServer, double: &PayoutDouble) {
    let body = json!({
        "url": double.url, "secret": double.secret, "timeout_ms": VENDOR_TIMEOUT_MS, "payouts": true,
    });
    let reply = server
        .admin(Method::PUT, &format!("/admin/v1/vendors/{}", double.name), Some(body))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true), "{}", reply.body);
    assert_eq!(reply.body["data"]["payouts"], json!(true), "{}", reply.body);
}

async fn route_payouts(server: &TestServer, organization: &str, channel: &str, vendors: &[&str]) -> Reply {
    server
        .admin(
            Method::PUT,
            &format!("/admin/v1/organizations/{organization}/payout-vendors/{channel}"),
            Some(json!({ "vendors": vendors })),
        )
        .await
}

/// Routes `channel` of `organization` to `vendors` and checks the answer.
async fn routed(server: &TestServer, organization: &str, channel: &str, vendors: &[&str]) {
    let reply = route_payouts(server, organization, channel, vendors).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        reply.body["data"],
        json!({ "organization_id": organization, "channel": channel, "vendors": vendors })
    );
}

/// An organization with one funded WALLET merchant in it.
async fn organization_with_merchant(server: &TestServer) -> (String, TestMerchant) {
    let reply = server
        .admin(
            Method::POST,
            "/admin/v1/organizations",
            Some(json!({ "name": "Payout Aggregator" })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["name"], json!("Payout Aggregator"));
    let organization = reply.body["data"]["id"].as_str().unwrap().to_string();
    let merchant = server
        .create_merchant_with("WALLET", json!({ "organization_id": organization }))
        .await;
    assert_eq!(server.credit(&merchant.id, FUNDING).await, FUNDING);
    (organization, merchant)
}

fn bank_body(key: &str, amount: i64) -> Value {
    json!({
        "idempotency_key": key,
        "channel": "BANK",
        "bank_short_code": "BCA",
        "account_number": "1234567890",
        "account_name": "Budi Santoso",
        "amount_minor": amount,
    })
}

fn ewallet_body(key: &str, amount: i64) -> Value {
    json!({
        "idempotency_key": key,
        "channel": "EWALLET",
        "ewallet_provider": "OVO",
        "ewallet_phone": "0812-3456-7890",
        "amount_minor": amount,
    })
}

/// `POST /v1/disbursements`, expecting 201 `PENDING`; returns `data`.
async fn create(server: &TestServer, merchant: &TestMerchant, body: Value) -> Value {
    let reply = server
        .call(Method::POST, "/v1/disbursements", Some(&merchant.api_key), Some(body))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["status"], json!("PENDING"), "{}", reply.body);
    reply.body["data"].clone()
}

fn id_of(disbursement: &Value) -> String {
    disbursement["id"].as_str().expect("a disbursement id").to_string()
}

/// `GET /v1/disbursements/{id}`'s `data`.
async fn fetch(server: &TestServer, merchant: &TestMerchant, id: &str) -> Value {
    let reply = server
        .call(
            Method::GET,
            &format!("/v1/disbursements/{id}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["data"].clone()
}

fn is_final(status: &Value) -> bool {
    matches!(status.as_str(), Some("SUCCESS" | "FAILED" | "REJECTED"))
}

/// Polls until the disbursement is `want`; panics at another final status or the timeout.
async fn wait_for_status(server: &TestServer, merchant: &TestMerchant, id: &str, want: &str) -> Value {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let data = fetch(server, merchant, id).await;
        if data["status"] == json!(want) {
            return data;
        }
        assert!(
            !is_final(&data["status"]),
            "disbursement {id} ended {} while {want} was awaited: {data}",
            data["status"]
        );
        assert!(
            Instant::now() < deadline,
            "disbursement {id} never became {want}: {data}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Waits until `check` holds, failing with `what`.
async fn wait_until(what: &str, check: impl Fn() -> bool) {
    assert!(
        eventually(SETTLE_TIMEOUT, check).await,
        "timed out waiting until {what}"
    );
}

/// `POST /callbacks/{vendor}` with `body`, signed with `secret` (None: unsigned).
async fn callback(server: &TestServer, vendor: &str, body: &Value, secret: Option<&str>) -> Reply {
    let bytes = body.to_string();
    let mut request = server
        .client
        .post(format!("{}/callbacks/{vendor}", server.base))
        .header("content-type", "application/json")
        .body(bytes.clone());
    if let Some(secret) = secret {
        request = request.header("X-Paygate-Signature", payout_double::sign(secret, bytes.as_bytes()));
    }
    into_reply(request.send().await.expect("callback sent")).await
}

fn received(status: &str) -> Value {
    json!({ "success": true, "data": { "received": true, "status": status } })
}

/// The keys a BANK payout request carries (the EWALLET fields omitted).
const BANK_PAYOUT_FIELDS: [&str; 8] = [
    "payout_id",
    "ref_code",
    "channel",
    "bank_short_code",
    "account_number",
    "account_name",
    "amount_minor",
    "currency",
];

/// The keys an EWALLET payout request carries (the BANK fields omitted).
const EWALLET_PAYOUT_FIELDS: [&str; 7] = [
    "payout_id",
    "ref_code",
    "channel",
    "ewallet_provider",
    "ewallet_phone",
    "amount_minor",
    "currency",
];

#[tokio::test]
async fn without_a_payout_route_live_disbursements_are_no_vendor_and_debit_nothing() {
    let acme = PayoutDouble::start("acme", "/acme").await;
    acme.set_answer(Answer::Succeed);
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &acme).await;
    upload_public_key(&server, &merchant).await;

    let refused = server
        .call(
            Method::POST,
            "/v1/disbursements",
            Some(&merchant.api_key),
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
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &acme).await;
    routed(&server, &organization, "BANK", &["acme"]).await;

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
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &acme).await;
    routed(&server, &organization, "BANK", &["acme"]).await;

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
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &acme).await;
    routed(&server, &organization, "BANK", &["acme"]).await;

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
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &alpha).await;
    add_payout_vendor(&server, &bravo).await;
    routed(&server, &organization, "BANK", &["alpha", "bravo"]).await;

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

#[tokio::test]
async fn an_unknown_answer_from_a_vendor_that_took_it_stays_with_that_vendor_until_inquiry_settles_it() {
    let alpha = PayoutDouble::start("alpha", "/alpha").await;
    let bravo = PayoutDouble::start("bravo", "/bravo").await;
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &alpha).await;
    add_payout_vendor(&server, &bravo).await;
    routed(&server, &organization, "BANK", &["alpha", "bravo"]).await;
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

/// The events of a payout the vendor first answered with `first` without
/// taking it: that POST, at least one inquiry answered 404, then exactly one
/// more POST (taken), and nothing submitted before a 404.
fn assert_submitted_again_only_after_404(events: &[Event], first: Answer) {
    let posts: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(_, event)| matches!(event, Event::Post { .. }))
        .map(|(index, _)| index)
        .collect();
    assert_eq!(posts.len(), 2, "{events:?}");
    assert_eq!(posts[0], 0, "nothing before the first submission: {events:?}");
    assert!(
        matches!(&events[0], Event::Post { answer: Some(answer), .. } if *answer == first),
        "{events:?}"
    );
    assert!(
        events[1..posts[1]]
            .iter()
            .any(|event| matches!(event, Event::Get { status: 404, .. })),
        "submitted again without a 404 first: {events:?}"
    );
    assert!(
        matches!(
            &events[posts[1]],
            Event::Post {
                answer: Some(Answer::Succeed),
                ..
            }
        ),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_payout_the_vendor_never_took_is_submitted_again_to_it_only_after_a_404() {
    let alpha = PayoutDouble::start("alpha", "/alpha").await;
    let bravo = PayoutDouble::start("bravo", "/bravo").await;
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &alpha).await;
    add_payout_vendor(&server, &bravo).await;
    routed(&server, &organization, "BANK", &["alpha", "bravo"]).await;
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

fn bank_beneficiary(account_number: &str) -> Value {
    json!({
        "channel": "BANK", "label": "Supplier", "bank_short_code": "MANDIRI",
        "account_number": account_number, "account_name": "Siti R.",
    })
}

async fn create_beneficiary(server: &TestServer, merchant: &TestMerchant, body: Value) -> Value {
    let reply = server
        .call(Method::POST, "/v1/beneficiaries", Some(&merchant.api_key), Some(body))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["verification_status"], json!("PENDING"));
    assert_eq!(reply.body["data"]["verified_name"], Value::Null);
    reply.body["data"].clone()
}

async fn beneficiary(server: &TestServer, merchant: &TestMerchant, id: &Value) -> Value {
    let reply = server
        .call(Method::GET, "/v1/beneficiaries", Some(&merchant.api_key), None)
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let all = reply.body["data"].as_array().unwrap();
    all.iter().find(|b| b["id"] == *id).expect("listed").clone()
}

async fn wait_for_verification(server: &TestServer, merchant: &TestMerchant, id: &Value, want: &str) -> Value {
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    loop {
        let found = beneficiary(server, merchant, id).await;
        if found["verification_status"] == json!(want) {
            return found;
        }
        assert!(Instant::now() < deadline, "beneficiary never became {want}: {found}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Account inquiries `double` received for `account_number`.
fn inquiries_for(double: &PayoutDouble, account_number: &str) -> Vec<Value> {
    double
        .account_inquiries()
        .into_iter()
        .filter(|body| body["account_number"] == json!(account_number))
        .collect()
}

#[tokio::test]
async fn beneficiaries_are_verified_by_the_first_vendor_of_their_channel() {
    let acme = PayoutDouble::start("acme", "/acme").await;
    let bravo = PayoutDouble::start("bravo", "/bravo").await;
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    add_payout_vendor(&server, &acme).await;
    add_payout_vendor(&server, &bravo).await;
    routed(&server, &organization, "BANK", &["acme", "bravo"]).await;

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
        .call(
            Method::POST,
            "/v1/disbursements",
            Some(&merchant.api_key),
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
        .admin(
            Method::PUT,
            "/admin/v1/vendors/payments-only",
            Some(json!({ "url": "http://127.0.0.1:9/pay", "secret": "s3cret" })),
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
        .call(
            Method::POST,
            "/v1/disbursements",
            Some(&merchant.api_key),
            Some(bank_body("unrouted", 1_000_000)),
        )
        .await;
    assert_v1_error(&refused, 503, "NO_VENDOR");
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING - 1_250_000);
    acme.assert_protocol_kept();
}

/// One 2048-bit key for the whole file: generating keys is slow.
fn private_key() -> &'static RsaPrivateKey {
    static KEY: std::sync::OnceLock<RsaPrivateKey> = std::sync::OnceLock::new();
    KEY.get_or_init(|| RsaPrivateKey::new(&mut rand::thread_rng(), 2048).expect("RSA key"))
}

async fn upload_public_key(server: &TestServer, merchant: &TestMerchant) {
    let pem = private_key().to_public_key().to_public_key_pem(LineEnding::LF).unwrap();
    let reply = server
        .admin(
            Method::PUT,
            &format!("/admin/v1/merchants/{}/public-key", merchant.id),
            Some(json!({ "pem": pem })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

fn legacy_bank_body(merchant: &TestMerchant, order_id: &str, amount: i64) -> String {
    json!({
        "clientId": merchant.client_id,
        "orderId": order_id,
        "bankCode": "BCA",
        "accountNumber": "1234567890",
        "accountName": "Budi Santoso",
        "requestAmount": amount,
    })
    .to_string()
}

/// A Legacy disbursement call with `X-SIGNATURE`: base64 RSA-SHA256 over
/// `clientId|clientSecret|sha256hex(body)`.
async fn legacy_post(server: &TestServer, path: &str, merchant: &TestMerchant, body: &str) -> Reply {
    let message = format!(
        "{}|{}|{}",
        merchant.client_id,
        merchant.client_secret,
        hex::encode(Sha256::digest(body.as_bytes()))
    );
    let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(private_key().clone());
    let signature = base64::engine::general_purpose::STANDARD.encode(signer.sign(message.as_bytes()).to_bytes());
    let request = server
        .client
        .post(format!("{}{path}", server.base))
        .header("Content-Type", "application/json")
        .header("X-SIGNATURE", signature)
        .body(body.to_string());
    into_reply(request.send().await.expect("request sent")).await
}
