//! `POST /v1/disbursements/batch` and `GET /v1/disbursements/batch/{id}`
//! over HTTP against the real binary: items succeed and fail
//! on their own with the single route's codes, a reused item key is that
//! item's 409 with the existing disbursement, the batch key replays the
//! first answer (across a SIGKILL too), the envelope's refusals change
//! nothing, 1,000 items fit one request, and a batch's figures by status.

mod support;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use support::disbursements::{bank_body, BANK_FEE, REVIEW_THRESHOLD, SLOW};
use support::*;

/// The default `limits.per_transaction_minor`.
const PER_TRANSACTION: i64 = 5_000_000_000;

fn ewallet_item(key: &str, provider: &str, amount: i64) -> Value {
    support::disbursements::ewallet_body(key, provider, "081234567890", amount)
}

async fn post_batch(server: &TestServer, merchant: &TestMerchant, key: &str, items: Vec<Value>) -> Reply {
    let body = json!({ "idempotency_key": key, "items": items });
    server
        .post("/v1/disbursements/batch", &merchant.api_key, Some(body))
        .await
}

/// Posts a batch that must be answered 201; returns its `data`.
async fn batch_ok(server: &TestServer, merchant: &TestMerchant, key: &str, items: Vec<Value>) -> Value {
    let count = items.len();
    let reply = post_batch(server, merchant, key, items).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true), "{}", reply.body);
    let data = reply.body["data"].clone();
    assert!(is_uuid(&data["id"]), "{data}");
    assert_eq!(keys_in_order(&data), ordered(&["id", "items"]));
    let items = data["items"].as_array().expect("items");
    assert_eq!(items.len(), count);
    for (index, item) in items.iter().enumerate() {
        assert_eq!(item["index"], json!(index), "{item}");
    }
    data
}

async fn get_batch(server: &TestServer, merchant: &TestMerchant, id: &str) -> Reply {
    server
        .get(&format!("/v1/disbursements/batch/{id}"), &merchant.api_key)
        .await
}

async fn single(server: &TestServer, merchant: &TestMerchant, body: Value) -> Reply {
    server.post("/v1/disbursements", &merchant.api_key, Some(body)).await
}

/// A funded WALLET merchant on `server`.
async fn funded(server: &TestServer, amount: i64) -> TestMerchant {
    let merchant = server.create_wallet_merchant().await;
    server.credit(&merchant.id, amount).await;
    merchant
}

#[tokio::test]
async fn each_item_succeeds_or_fails_on_its_own_with_the_single_routes_answer() {
    let server = TestServer::start();
    let merchant = funded(&server, 10_000_000).await;
    let items = vec![
        bank_body("ok-bank", 1_000_000),
        bank_body("zero", 0),
        ewallet_item("ok-ovo", "OVO", 2_000_000),
        json!("not an object"),
        {
            let mut item = bank_body("unknown-bank", 1_000_000);
            item["bank_short_code"] = json!("NOPE");
            item
        },
        bank_body("too-much", 20_000_000),
        {
            let mut item = bank_body("typed", 1);
            item["amount_minor"] = json!("lots");
            item
        },
        json!({ "idempotency_key": "no-account", "channel": "BANK", "bank_short_code": "BCA", "amount_minor": 1_000_000 }),
        ewallet_item("dana-small", "DANA", 1_000_000),
        bank_body("above-limit", PER_TRANSACTION + 1),
        json!({ "idempotency_key": "bad-beneficiary", "beneficiary_id": "not-a-uuid", "amount_minor": 1_000_000 }),
        bank_body("ok-last", 3_000_000),
    ];
    let data = batch_ok(&server, &merchant, "batch-1", items.clone()).await;
    let answered = data["items"].as_array().unwrap();
    let expected = [
        (true, ""),
        (false, "INVALID_BODY"),
        (true, ""),
        (false, "INVALID_BODY"),
        (false, "BANK_NOT_FOUND"),
        (false, "INSUFFICIENT_BALANCE"),
        (false, "INVALID_BODY"),
        (false, "MISSING_BANK_INFO"),
        (false, "AMOUNT_BELOW_MINIMUM"),
        (false, "AMOUNT_EXCEEDS_LIMIT"),
        (false, "BENEFICIARY_NOT_FOUND"),
        (true, ""),
    ];
    for ((item, sent), (success, code)) in answered.iter().zip(&items).zip(expected) {
        assert_eq!(item["success"], json!(success), "{item}");
        if success {
            assert_eq!(keys_in_order(item), ordered(&["index", "success", "data"]), "{item}");
            assert_eq!(item["data"]["status"], json!("PENDING"), "{item}");
            assert_eq!(item["data"]["idempotency_key"], sent["idempotency_key"], "{item}");
            // The single route's creation shape: e-wallets leave out vendor_disbursement_id.
            let channel = item["data"]["channel"].as_str().unwrap();
            assert_eq!(item["data"].get("vendor_disbursement_id").is_some(), channel == "BANK");
            let got = server
                .get(
                    &format!("/v1/disbursements/{}", item["data"]["id"].as_str().unwrap()),
                    &merchant.api_key,
                )
                .await;
            assert_eq!(got.status, StatusCode::OK, "{}", got.body);
            continue;
        }
        assert_eq!(keys_in_order(item), ordered(&["index", "success", "error"]), "{item}");
        assert_eq!(item["error"]["code"], json!(code), "{item}");
        assert_eq!(sorted_keys(&item["error"]), strings(&["code", "message"]));
        // The same body alone gets the same error (none of these changed anything).
        if sent.is_object() {
            let alone = single(&server, &merchant, sent.clone()).await;
            assert_eq!(
                alone.body["error"], item["error"],
                "item {item} vs alone {}",
                alone.body
            );
        } else {
            assert_eq!(item["error"]["message"], json!("item: must be a JSON object"));
        }
    }
    assert!(answered[6]["error"]["message"]
        .as_str()
        .unwrap()
        .starts_with("amount_minor: "));
    let debited = (1_000_000 + BANK_FEE) + 2_000_000 + (3_000_000 + BANK_FEE);
    assert_eq!(server.balance(&merchant.api_key).await, 10_000_000 - debited);
    assert_eq!(server.verify().await["balanced"], json!(true));

    let summary = get_batch(&server, &merchant, data["id"].as_str().unwrap()).await;
    assert_eq!(summary.status, StatusCode::OK, "{}", summary.body);
    assert_eq!(summary.body["data"]["total_items"], json!(12));
    assert_eq!(summary.body["data"]["accepted"], json!(3));
    assert_eq!(summary.body["data"]["refused"], json!(9));
}

#[tokio::test]
async fn the_same_batch_key_replays_the_first_answer_even_after_a_crash() {
    let mut server = TestServer::start_with(SLOW);
    let merchant = funded(&server, 10_000_000).await;
    let items = vec![
        bank_body("a", 1_000_000),
        bank_body("b", 0),
        bank_body("c", 50_000_000),
        bank_body("a", 1_000_000),
    ];
    let first = batch_ok(&server, &merchant, "replayed", items).await;
    let balance = server.balance(&merchant.api_key).await;
    assert_eq!(balance, 10_000_000 - 1_000_000 - BANK_FEE);
    // Within one batch a repeated key is the later item's 409 with the earlier one.
    assert_eq!(first["items"][3]["error"]["code"], json!("DUPLICATE_IDEMPOTENCY_KEY"));
    assert_eq!(first["items"][3]["data"]["id"], first["items"][0]["data"]["id"]);

    let same_items = |answer: &Value| {
        let outcome = |item: &Value| {
            (
                item["index"].clone(),
                item["success"].clone(),
                item["error"].clone(),
                item["data"]["id"].clone(),
            )
        };
        assert_eq!(answer["id"], first["id"]);
        let (got, want) = (answer["items"].as_array().unwrap(), first["items"].as_array().unwrap());
        assert_eq!(
            got.iter().map(outcome).collect::<Vec<_>>(),
            want.iter().map(outcome).collect::<Vec<_>>()
        );
        // A created item is the disbursement as first answered (PENDING, no
        // vendor id), though it has been handed to the vendor since.
        assert_eq!(got[0]["data"], want[0]["data"]);
    };
    let created_id = first["items"][0]["data"]["id"].as_str().unwrap().to_string();
    assert_eq!(first["items"][0]["data"]["status"], json!("PENDING"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut handed = false;
    while !handed && Instant::now() < deadline {
        let path = format!("/v1/disbursements/{created_id}");
        let reply = server.get(&path, &merchant.api_key).await;
        handed = reply.body["data"]["status"] == json!("ON_PROCESS");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(handed, "the batch's disbursement was never handed to the vendor");
    // Other items under the same key change nothing: the first answer comes back.
    let again = batch_ok(
        &server,
        &merchant,
        "replayed",
        vec![
            bank_body("a", 1_000_000),
            bank_body("d", 1),
            bank_body("e", 1),
            bank_body("f", 1),
        ],
    )
    .await;
    same_items(&again);
    assert_eq!(server.balance(&merchant.api_key).await, balance);

    server.kill();
    server.restart();
    let after = batch_ok(
        &server,
        &merchant,
        "replayed",
        vec![
            bank_body("x", 1),
            bank_body("y", 1),
            bank_body("z", 1),
            bank_body("w", 1),
        ],
    )
    .await;
    same_items(&after);
    assert_eq!(server.balance(&merchant.api_key).await, balance);
    let summary = get_batch(&server, &merchant, first["id"].as_str().unwrap()).await;
    assert_eq!(summary.status, StatusCode::OK, "{}", summary.body);
    assert_eq!(summary.body["data"]["accepted"], json!(1));
    assert_eq!(summary.body["data"]["refused"], json!(3));
    assert_eq!(server.verify().await["balanced"], json!(true));
}

#[tokio::test]
async fn concurrent_requests_with_one_batch_key_make_one_batch() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded(&server, 100_000_000).await;
    let items: Vec<Value> = (0..50).map(|n| bank_body(&format!("c-{n}"), 1_000_000)).collect();
    let answers =
        futures::future::join_all((0..4).map(|_| post_batch(&server, &merchant, "raced", items.clone()))).await;
    for answer in &answers {
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        assert_eq!(answer.body["data"]["id"], answers[0].body["data"]["id"]);
        let accepted = answer.body["data"]["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["success"] == json!(true))
            .count();
        assert_eq!(accepted, 50, "{}", answer.body);
    }
    assert_eq!(
        server.balance(&merchant.api_key).await,
        100_000_000 - 50 * (1_000_000 + BANK_FEE)
    );
}

#[tokio::test]
async fn a_batch_of_none_or_over_a_thousand_items_or_a_bad_envelope_is_refused_and_changes_nothing() {
    let server = TestServer::start();
    let merchant = funded(&server, 10_000_000).await;
    let over: Vec<Value> = (0..1001).map(|n| bank_body(&format!("o-{n}"), 1)).collect();
    let cases = [
        (
            json!({ "idempotency_key": "k", "items": [] }),
            "items: must hold 1 to 1000 disbursements",
        ),
        (
            json!({ "idempotency_key": "k", "items": over }),
            "items: must hold 1 to 1000 disbursements",
        ),
        (json!({ "idempotency_key": "k" }), "items: is required"),
        (json!({ "items": [bank_body("a", 1)] }), "idempotency_key: is required"),
        (
            json!({ "idempotency_key": "", "items": [bank_body("a", 1)] }),
            "idempotency_key: must be 1 to 255 printable characters",
        ),
        (
            json!({ "idempotency_key": 7, "items": [bank_body("a", 1)] }),
            "idempotency_key: ",
        ),
        (
            json!({ "idempotency_key": "k", "items": { "0": bank_body("a", 1) } }),
            "items: ",
        ),
        (json!({ "idempotency_key": "k", "items": null }), "items: "),
        (json!([bank_body("a", 1)]), "request body must be a JSON object"),
    ];
    for (body, message) in cases {
        let reply = server
            .post("/v1/disbursements/batch", &merchant.api_key, Some(body))
            .await;
        assert_v1_error(&reply, 400, "INVALID_BODY");
        let said = reply.body["error"]["message"].as_str().unwrap();
        assert!(said.starts_with(message), "{said} vs {message}");
    }
    let malformed = server
        .client
        .post(server.url("/v1/disbursements/batch"))
        .header("X-API-Key", &merchant.api_key)
        .body("{\"idempotency_key\": \"k\", \"items\": [")
        .send()
        .await
        .unwrap();
    assert_v1_error(&into_reply(malformed).await, 400, "INVALID_BODY");
    // None of them made a batch under "k": it is free for a real one.
    let data = batch_ok(&server, &merchant, "k", vec![bank_body("a", 1_000_000)]).await;
    assert_eq!(data["items"][0]["success"], json!(true));
    assert_eq!(
        server.balance(&merchant.api_key).await,
        10_000_000 - 1_000_000 - BANK_FEE
    );

    let manual = server.create_merchant_with("MANUAL", json!({})).await;
    let reply = post_batch(&server, &manual, "m", vec![bank_body("a", 1_000_000)]).await;
    assert_v1_error(&reply, 403, "NOT_WALLET_MERCHANT");
    let unsigned = server
        .call(Method::POST, "/v1/disbursements/batch", None, Some(json!({})))
        .await;
    assert_v1_error(&unsigned, 401, "UNAUTHORIZED");
}

#[tokio::test]
async fn a_thousand_items_are_accepted_in_one_request_of_up_to_one_mebibyte() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded(&server, 10_000_000_000).await;
    let items: Vec<Value> = (0..1000)
        .map(|n| {
            let mut item = bank_body(&format!("thousand-{n:04}"), 1_000_000 + n);
            item["account_number"] = json!(format!("{:010}", 1_000_000_000 + n));
            item
        })
        .collect();
    let body = json!({ "idempotency_key": "thousand", "items": items });
    let bytes = serde_json::to_vec(&body).unwrap();
    assert!(bytes.len() > 64 * 1024, "over the other routes' limit: {}", bytes.len());
    let started = Instant::now();
    let reply = server
        .post("/v1/disbursements/batch", &merchant.api_key, Some(body))
        .await;
    eprintln!(
        "1,000-item batch of {} bytes answered in {:?} (debug build, over loopback)",
        bytes.len(),
        started.elapsed()
    );
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let answered = reply.body["data"]["items"].as_array().unwrap();
    assert_eq!(answered.len(), 1000);
    assert!(answered.iter().all(|item| item["success"] == json!(true)));
    let requested: i64 = (0..1000).map(|n| 1_000_000 + n).sum();
    let debited = requested + 1000 * BANK_FEE;
    assert_eq!(server.balance(&merchant.api_key).await, 10_000_000_000 - debited);
    let summary = get_batch(&server, &merchant, reply.body["data"]["id"].as_str().unwrap()).await;
    let by_status = summary.body["data"]["by_status"].as_object().unwrap();
    let count: i64 = by_status.values().map(|s| s["count"].as_i64().unwrap()).sum();
    let amount: i64 = by_status.values().map(|s| s["amount_minor"].as_i64().unwrap()).sum();
    assert_eq!((count, amount), (1000, requested), "{}", summary.body);
    assert_eq!(server.verify().await["balanced"], json!(true));
    // The statement: the funding, then each item's request and fee lines,
    // in the order of the items, chained to the balance.
    let lines = server.statement(&merchant.api_key).await;
    assert_eq!(lines.len(), 1 + 2 * 1000);
    let ids: Vec<&Value> = answered.iter().map(|item| &item["data"]["id"]).collect();
    for (n, pair) in lines[..2000].rchunks(2).enumerate() {
        assert_eq!(pair[1]["type"], json!("DISBURSEMENT"), "{}", pair[1]);
        assert_eq!(pair[1]["amount_minor"], json!(-(1_000_000 + n as i64)));
        assert_eq!(pair[0]["type"], json!("DISBURSEMENT_FEE"), "{}", pair[0]);
        assert_eq!(&pair[0]["resource"]["id"], ids[n]);
        assert_eq!(&pair[1]["resource"]["id"], ids[n]);
    }

    // Past 1 MiB: 413, naming this route's limit.
    let padded = json!({ "idempotency_key": "big", "items": [bank_body("big", 1)], "pad": "x".repeat(1024 * 1024) });
    let reply = server
        .post("/v1/disbursements/batch", &merchant.api_key, Some(padded))
        .await;
    assert_v1_error(&reply, 413, "PAYLOAD_TOO_LARGE");
    assert_eq!(reply.body["error"]["message"], json!("request body exceeds 1 MiB"));
    // The single route keeps its 64 KiB.
    let mut big = bank_body("big-single", 1_000_000);
    big["pad"] = json!("x".repeat(70 * 1024));
    let reply = single(&server, &merchant, big).await;
    assert_v1_error(&reply, 413, "PAYLOAD_TOO_LARGE");
    assert_eq!(reply.body["error"]["message"], json!("request body exceeds 64 KiB"));
}

#[tokio::test]
async fn an_item_whose_key_was_used_gets_the_single_routes_409_with_the_existing_disbursement() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded(&server, 10_000_000).await;
    let existing = single(&server, &merchant, bank_body("used", 1_000_000)).await;
    assert_eq!(existing.status, StatusCode::CREATED, "{}", existing.body);
    // Compared as it is once its vendor holds it, so it moves no more meanwhile.
    let path = format!("/v1/disbursements/{}", existing.body["data"]["id"].as_str().unwrap());
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.get(&path, &merchant.api_key).await.body["data"]["status"] != json!("ON_PROCESS") {
        assert!(Instant::now() < deadline, "never handed to the vendor");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let alone = single(&server, &merchant, bank_body("used", 2_000_000)).await;
    assert_v1_error(&alone, 409, "DUPLICATE_IDEMPOTENCY_KEY");

    let data = batch_ok(
        &server,
        &merchant,
        "reuse",
        vec![bank_body("fresh", 1_000_000), bank_body("used", 2_000_000)],
    )
    .await;
    let item = &data["items"][1];
    assert_eq!(item["success"], json!(false));
    assert_eq!(keys_in_order(item), ordered(&["index", "success", "error", "data"]));
    assert_eq!(item["error"], alone.body["error"]);
    assert_eq!(item["data"]["id"], existing.body["data"]["id"]);
    assert_eq!(item["data"]["request_amount_minor"], json!(1_000_000));
    assert_eq!(item["data"], alone.body["data"]);
    assert_eq!(
        server.balance(&merchant.api_key).await,
        10_000_000 - 2 * (1_000_000 + BANK_FEE)
    );
}

#[tokio::test]
async fn a_batch_is_found_only_by_its_own_merchant_and_by_a_valid_id() {
    let server = TestServer::start();
    let owner = funded(&server, 10_000_000).await;
    let other = funded(&server, 10_000_000).await;
    let data = batch_ok(&server, &owner, "mine", vec![bank_body("a", 1_000_000)]).await;
    let id = data["id"].as_str().unwrap();
    assert_eq!(get_batch(&server, &owner, id).await.status, StatusCode::OK);
    assert_v1_error(&get_batch(&server, &other, id).await, 404, "NOT_FOUND");
    assert_v1_error(
        &get_batch(&server, &owner, &uuid::Uuid::new_v4().to_string()).await,
        404,
        "NOT_FOUND",
    );
    assert_v1_error(&get_batch(&server, &owner, "not-a-uuid").await, 400, "INVALID_ID");
    // Another merchant's batch key is its own: the same key makes a new batch.
    let theirs = batch_ok(&server, &other, "mine", vec![bank_body("a", 1_000_000)]).await;
    assert_ne!(theirs["id"], data["id"]);
    assert_eq!(theirs["items"][0]["success"], json!(true));
}

#[tokio::test]
async fn get_counts_the_accepted_items_and_sums_their_request_amounts_by_current_status() {
    let server = TestServer::start_with(SLOW);
    let merchant = funded(&server, 10_000_000_000).await;
    let items = vec![
        bank_body("p-1", 1_000_000),
        bank_body("p-2", 2_000_000),
        bank_body("p-3", 3_000_000),
        bank_body("p-4", 4_000_000),
        bank_body("review", REVIEW_THRESHOLD),
        bank_body("refused", 0),
        ewallet_item("wallet", "OVO", 5_000_000),
    ];
    let data = batch_ok(&server, &merchant, "figures", items).await;
    let id_of = |n: usize| data["items"][n]["data"]["id"].as_str().unwrap().to_string();
    let complete = |n: usize, status: &'static str| {
        let (server, merchant, id) = (&server, &merchant, id_of(n));
        async move {
            // The vendor takes it first (ON_PROCESS); then the sandbox settles it.
            let deadline = Instant::now() + Duration::from_secs(5);
            loop {
                let reply = server
                    .post(
                        &format!("/v1/sandbox/disbursements/{id}/complete"),
                        &merchant.api_key,
                        Some(json!({ "status": status })),
                    )
                    .await;
                if reply.status == StatusCode::OK || Instant::now() > deadline {
                    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    };
    complete(0, "SUCCESS").await;
    complete(2, "FAILED").await;
    complete(3, "SUCCESS").await;
    let want = json!({
        "IN_REVIEW": { "count": 1, "amount_minor": REVIEW_THRESHOLD },
        "ON_PROCESS": { "count": 2, "amount_minor": 2_000_000 + 5_000_000 },
        "SUCCESS": { "count": 2, "amount_minor": 1_000_000 + 4_000_000 },
        "FAILED": { "count": 1, "amount_minor": 3_000_000 },
    });
    let id = data["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let summary = loop {
        let reply = get_batch(&server, &merchant, id).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        if reply.body["data"]["by_status"] == want || Instant::now() > deadline {
            break reply.body["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(
        keys_in_order(&summary),
        ordered(&["id", "created_at", "total_items", "accepted", "refused", "by_status"])
    );
    assert_eq!(summary["id"], data["id"]);
    assert!(summary["created_at"].as_str().unwrap().ends_with('Z'), "{summary}");
    assert_eq!(summary["total_items"], json!(7));
    assert_eq!(summary["accepted"], json!(6));
    assert_eq!(summary["refused"], json!(1));
    assert_eq!(summary["by_status"], want);
    assert_eq!(
        keys_in_order(&summary["by_status"]),
        ordered(&["IN_REVIEW", "ON_PROCESS", "SUCCESS", "FAILED"])
    );
}
