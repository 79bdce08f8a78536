//! Disbursements under concurrency and across restarts: never overspent,
//! one idempotency key moves money once, the daily limit holds, and
//! disbursements in flight resume after a restart (also after SIGKILL).

mod support;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::json;
use std::time::Duration;
use support::disbursements::{bank_body, BANK_FEE};
use support::*;

const AMOUNT: i64 = 10_000;

async fn raise_rate_limit(server: &TestServer, merchant: &TestMerchant, daily_minor: i64) {
    let reply = server.patch_merchant(&merchant.id, json!({ "limits": { "rate_limit_per_second": 100000, "rate_limit_burst": 100000, "daily_minor": daily_minor } })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
}

async fn status_of(server: &TestServer, api_key: &str, id: &str) -> String {
    let reply = server.get(&format!("/v1/disbursements/{id}"), api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["data"]["status"].as_str().unwrap().to_string()
}

async fn wait_for_status(server: &TestServer, api_key: &str, id: &str, want: &str) {
    for _ in 0..200 {
        if status_of(server, api_key, id).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "disbursement {id} never became {want}; it is {}",
        status_of(server, api_key, id).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_disbursements_against_funds_for_one_hundred_create_exactly_one_hundred() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "60000"]);
    let merchant = server.create_wallet_merchant().await;
    raise_rate_limit(&server, &merchant, 50_000_000_000).await;
    let funding = 100 * (AMOUNT + BANK_FEE);
    assert_eq!(server.credit(&merchant.id, funding).await, funding);

    let requests = (0..200).map(|i| {
        server.post(
            "/v1/disbursements",
            &merchant.api_key,
            Some(bank_body(&format!("c-{i}"), AMOUNT)),
        )
    });
    let replies = join_all(requests).await;
    let created = replies.iter().filter(|r| r.status == StatusCode::CREATED).count();
    for reply in replies.iter().filter(|r| r.status != StatusCode::CREATED) {
        assert_v1_error(reply, 422, "INSUFFICIENT_BALANCE");
    }
    assert_eq!(created, 100);
    assert_eq!(server.balance(&merchant.api_key).await, 0);
    // The statement: the funding, then each created one's two lines.
    let lines = server.statement(&merchant.api_key).await;
    assert_eq!(lines.len(), 1 + 2 * 100);
    for reply in replies.iter().filter(|r| r.status == StatusCode::CREATED) {
        let id = &reply.body["data"]["id"];
        let own: Vec<_> = lines.iter().filter(|l| &l["resource"]["id"] == id).collect();
        let kinds: Vec<_> = own
            .iter()
            .map(|l| (l["type"].clone(), l["amount_minor"].clone()))
            .collect();
        assert_eq!(
            kinds,
            [
                (json!("DISBURSEMENT_FEE"), json!(-BANK_FEE)),
                (json!("DISBURSEMENT"), json!(-AMOUNT))
            ]
        );
    }
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_requests_with_one_idempotency_key_create_one_and_debit_once() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "60000"]);
    let merchant = server.create_wallet_merchant().await;
    raise_rate_limit(&server, &merchant, 50_000_000_000).await;
    server.credit(&merchant.id, 10_000_000).await;

    let requests =
        (0..50).map(|_| server.post("/v1/disbursements", &merchant.api_key, Some(bank_body("same", AMOUNT))));
    let replies = join_all(requests).await;
    let created: Vec<_> = replies.iter().filter(|r| r.status == StatusCode::CREATED).collect();
    assert_eq!(created.len(), 1);
    let id = created[0].body["data"]["id"].clone();
    for reply in replies.iter().filter(|r| r.status != StatusCode::CREATED) {
        assert_v1_error(reply, 409, "DUPLICATE_IDEMPOTENCY_KEY");
        assert_eq!(reply.body["data"]["id"], id, "409 carries the one disbursement created");
    }
    assert_eq!(server.balance(&merchant.api_key).await, 10_000_000 - AMOUNT - BANK_FEE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daily_limit_holds_under_concurrency() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "60000"]);
    let merchant = server.create_wallet_merchant().await;
    // Room for exactly 30 requests of AMOUNT today; funds for all 100.
    raise_rate_limit(&server, &merchant, 30 * AMOUNT).await;
    server.credit(&merchant.id, 100 * (AMOUNT + BANK_FEE)).await;

    let requests = (0..100).map(|i| {
        server.post(
            "/v1/disbursements",
            &merchant.api_key,
            Some(bank_body(&format!("d-{i}"), AMOUNT)),
        )
    });
    let replies = join_all(requests).await;
    let created = replies.iter().filter(|r| r.status == StatusCode::CREATED).count();
    for reply in replies.iter().filter(|r| r.status != StatusCode::CREATED) {
        assert_v1_error(reply, 422, "DAILY_LIMIT_EXCEEDED");
    }
    assert_eq!(created, 30);
    assert_eq!(server.balance(&merchant.api_key).await, 70 * (AMOUNT + BANK_FEE));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_disbursement_frees_its_share_of_the_daily_limit() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "60000"]);
    let merchant = server.create_wallet_merchant().await;
    raise_rate_limit(&server, &merchant, 2 * AMOUNT).await;
    server.credit(&merchant.id, 10_000_000).await;
    let first = server
        .post("/v1/disbursements", &merchant.api_key, Some(bank_body("a", AMOUNT)))
        .await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let second = server
        .post("/v1/disbursements", &merchant.api_key, Some(bank_body("b", AMOUNT)))
        .await;
    assert_eq!(second.status, StatusCode::CREATED, "{}", second.body);
    let third = server
        .post("/v1/disbursements", &merchant.api_key, Some(bank_body("c", AMOUNT)))
        .await;
    assert_v1_error(&third, 422, "DAILY_LIMIT_EXCEEDED");
    let id = first.body["data"]["id"].as_str().unwrap();
    let failed = server.complete_disbursement(&merchant.api_key, id, "FAILED").await;
    assert_eq!(failed.status, StatusCode::OK, "{}", failed.body);
    let retry = server
        .post("/v1/disbursements", &merchant.api_key, Some(bank_body("c", AMOUNT)))
        .await;
    assert_eq!(retry.status, StatusCode::CREATED, "{}", retry.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disbursements_in_flight_resume_after_a_restart_and_after_sigkill() {
    let mut server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "60000"]);
    let merchant = server.create_wallet_merchant().await;
    let funding = 10_000_000;
    server.credit(&merchant.id, funding).await;
    let mut ids = Vec::new();
    for (key, account) in [("ok", "1234567890"), ("fails", "0000000000")] {
        let mut body = bank_body(key, AMOUNT);
        body["account_number"] = json!(account);
        let reply = server.post("/v1/disbursements", &merchant.api_key, Some(body)).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        let id = reply.body["data"]["id"].as_str().unwrap().to_string();
        wait_for_status(&server, &merchant.api_key, &id, "ON_PROCESS").await;
        ids.push(id);
    }
    // Killed while both wait on the vendor; restarted with a short delay.
    server.kill();
    server.restart_with(&["--sandbox-disbursement-delay-ms", "200"]);
    wait_for_status(&server, &merchant.api_key, &ids[0], "SUCCESS").await;
    wait_for_status(&server, &merchant.api_key, &ids[1], "FAILED").await;
    // Only the successful one's full amount is gone; the failed one came back once.
    assert_eq!(server.balance(&merchant.api_key).await, funding - (AMOUNT + BANK_FEE));
    server.stop();
    server.restart();
    assert_eq!(server.balance(&merchant.api_key).await, funding - (AMOUNT + BANK_FEE));
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
}
