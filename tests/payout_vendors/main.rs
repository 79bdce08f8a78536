//! Payout vendors in live mode against a vendor double on
//! loopback: routing per organization and channel, the signed protocol,
//! final answers, failover past refusals, unknown outcomes that stay with
//! their vendor until an inquiry settles them, signed callbacks, restarts,
//! and beneficiary account inquiries.
//! This file holds the vendor double and the requests its modules share.

#[path = "../payout_double/mod.rs"]
mod payout_double;
#[path = "../support/mod.rs"]
mod support;

mod routing;
mod submission;
mod unknown_outcomes;

use payout_double::{AccountAnswer, Answer, Event, Final, PayoutDouble};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::disbursements::{bank_body, BANK_FEE};
use support::*;

/// Live mode, with the vendor inquiry schedule a hundred times faster: the
/// first inquiry after an unknown answer comes 100 ms later, then 0.6 s, 3 s, 9 s.
const LIVE: &[&str] = &["--mode", "live", "--vendor-retry-scale", "0.01"];
/// Live mode on the real schedule: no inquiry within a minute of ON_PROCESS,
/// so an inquiry seen soon after a start is the start's own.
const LIVE_REAL_SCHEDULE: &[&str] = &["--mode", "live", "--vendor-retry-scale", "1"];
/// Each merchant's wallet at the start of a test.
const FUNDING: i64 = 100_000_000;
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
    server.put_route(organization, "payout-vendors", channel, vendors).await
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
    let (organization, merchant) = server.merchant_in_new_organization("Payout Aggregator").await;
    assert_eq!(server.credit(&merchant.id, FUNDING).await, FUNDING);
    (organization, merchant)
}

/// A live server whose organization's BANK payouts go to `doubles` in that
/// order, and the organization's funded merchant.
async fn live_bank_route(doubles: &[&PayoutDouble]) -> (TestServer, TestMerchant) {
    let server = TestServer::start_with(LIVE);
    let (organization, merchant) = organization_with_merchant(&server).await;
    for double in doubles {
        add_payout_vendor(&server, double).await;
    }
    let names: Vec<&str> = doubles.iter().map(|double| double.name.as_str()).collect();
    routed(&server, &organization, "BANK", &names).await;
    (server, merchant)
}

fn ewallet_body(key: &str, amount: i64) -> Value {
    support::disbursements::ewallet_body(key, "OVO", "0812-3456-7890", amount)
}

/// `POST /v1/disbursements`, expecting 201 `PENDING`; returns `data`.
async fn create(server: &TestServer, merchant: &TestMerchant, body: Value) -> Value {
    let reply = server.post("/v1/disbursements", &merchant.api_key, Some(body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["status"], json!("PENDING"), "{}", reply.body);
    reply.body["data"].clone()
}

fn id_of(disbursement: &Value) -> String {
    disbursement["id"].as_str().expect("a disbursement id").to_string()
}

/// `GET /v1/disbursements/{id}`'s `data`.
async fn fetch(server: &TestServer, merchant: &TestMerchant, id: &str) -> Value {
    let reply = server.get(&format!("/v1/disbursements/{id}"), &merchant.api_key).await;
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
    let signature = secret.map(|secret| payout_double::sign(secret, bytes.as_bytes()));
    vendor_callback(server, vendor, bytes, signature).await
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

fn bank_beneficiary(account_number: &str) -> Value {
    json!({
        "channel": "BANK", "label": "Supplier", "bank_short_code": "MANDIRI",
        "account_number": account_number, "account_name": "Siti R.",
    })
}

async fn create_beneficiary(server: &TestServer, merchant: &TestMerchant, body: Value) -> Value {
    let reply = server.post("/v1/beneficiaries", &merchant.api_key, Some(body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["verification_status"], json!("PENDING"));
    assert_eq!(reply.body["data"]["verified_name"], Value::Null);
    reply.body["data"].clone()
}

async fn beneficiary(server: &TestServer, merchant: &TestMerchant, id: &Value) -> Value {
    let reply = server.get("/v1/beneficiaries", &merchant.api_key).await;
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

async fn upload_public_key(server: &TestServer, merchant: &TestMerchant) {
    support::legacy::put_public_key(server, merchant, &support::legacy::spki_pem()).await;
}

fn legacy_bank_body(merchant: &TestMerchant, order_id: &str, amount: i64) -> String {
    support::legacy::bank_body(merchant, order_id, amount, "BCA")
}

/// A Legacy disbursement call with `X-SIGNATURE`.
async fn legacy_post(server: &TestServer, path: &str, merchant: &TestMerchant, body: &str) -> Reply {
    support::legacy::signed_post(server, path, merchant, body).await
}
