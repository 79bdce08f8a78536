//! `GET /v1/balance` and `GET /v1/balance/history` over HTTP against the
//! real server: the API key every V1 route asks for and the balance's exact
//! shape; in the history, every line type with its exact amount, balance
//! and resource; the chain and its end at `GET /v1/balance`; cursor walks
//! with no gap or repeat; filters; CSV equal to JSON; isolation between
//! merchants; the statement after a restart.

mod support;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use support::disbursements::{bank_body, BANK_FEE};
use support::{assert_v1_error, sorted_keys, strings, TestMerchant, TestServer};

fn qris_mdr(amount: i64) -> i64 {
    (amount * 70 + 5_000) / 10_000
}

async fn history(server: &TestServer, merchant: &TestMerchant, query: &str) -> support::Reply {
    server
        .get(&format!("/v1/balance/history{query}"), &merchant.api_key)
        .await
}

async fn lines(server: &TestServer, merchant: &TestMerchant, query: &str) -> (Vec<Value>, bool) {
    let reply = history(server, merchant, query).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    let has_more = reply.body["meta"]["has_more"].as_bool().expect("meta.has_more");
    (reply.body["data"].as_array().unwrap().clone(), has_more)
}

/// Every line, walked a page of `limit` at a time.
async fn walk(server: &TestServer, merchant: &TestMerchant, limit: usize, filter: &str) -> Vec<Value> {
    let mut all: Vec<Value> = Vec::new();
    loop {
        let cursor = match all.last() {
            Some(line) => format!("&starting_after={}", line["id"].as_str().unwrap()),
            None => String::new(),
        };
        let (page, has_more) = lines(server, merchant, &format!("?limit={limit}{cursor}{filter}")).await;
        assert!(page.len() <= limit);
        all.extend(page.iter().cloned());
        if !has_more {
            return all;
        }
        assert_eq!(page.len(), limit, "a page short of its limit says it has more");
    }
}

async fn post(server: &TestServer, merchant: &TestMerchant, path: &str, body: Value) -> Value {
    let reply = server.post(path, &merchant.api_key, Some(body)).await;
    assert!(reply.status.is_success(), "{path}: {} {}", reply.status, reply.body);
    reply.body["data"].clone()
}

/// What a line should be: type, amount, resource type and id, ref code.
type Expected = (&'static str, i64, Option<(&'static str, String, String)>);

/// Makes one line of every type and returns them oldest first.
async fn every_line_type(server: &TestServer, merchant: &TestMerchant) -> Vec<Expected> {
    let mut expected = Vec::new();
    server.credit(&merchant.id, 10_000_000).await;
    expected.push(("WALLET_CREDIT", 10_000_000, None));

    let paid = post(
        server,
        merchant,
        "/v1/orders",
        json!({ "merchant_order_id": "H-1", "amount_minor": 1_000_000, "payment_method": "QRIS" }),
    )
    .await;
    let order_ref = paid["ref_code"].as_str().unwrap().to_string();
    post(
        server,
        merchant,
        &format!("/v1/sandbox/orders/{order_ref}/pay"),
        json!({}),
    )
    .await;
    let order = ("order", paid["id"].as_str().unwrap().to_string(), order_ref.clone());
    expected.push(("ORDER_PAYMENT", 1_000_000 - qris_mdr(1_000_000), Some(order)));

    for (key, amount) in [("rf-kept", 200_000), ("rf-failed", 300_000)] {
        let refund = post(
            server,
            merchant,
            &format!("/v1/orders/{order_ref}/refund"),
            json!({ "amount_minor": amount, "idempotency_key": key, "reason": "CUSTOMER_REQUEST" }),
        )
        .await;
        let resource = ("refund", refund["id"].as_str().unwrap().to_string(), order_ref.clone());
        expected.push(("REFUND", -amount, Some(resource.clone())));
        if key == "rf-failed" {
            let id = refund["id"].as_str().unwrap();
            post(
                server,
                merchant,
                &format!("/v1/sandbox/refunds/{id}/complete"),
                json!({ "status": "FAILED" }),
            )
            .await;
            expected.push(("REFUND_REVERSAL", amount, Some(resource)));
        }
    }

    let kept = post(server, merchant, "/v1/disbursements", bank_body("d-kept", 1_500_000)).await;
    let resource = (
        "disbursement",
        kept["id"].as_str().unwrap().to_string(),
        kept["ref_code"].as_str().unwrap().to_string(),
    );
    expected.push(("DISBURSEMENT", -1_500_000, Some(resource.clone())));
    expected.push(("DISBURSEMENT_FEE", -BANK_FEE, Some(resource)));

    let ewallet = post(
        server,
        merchant,
        "/v1/disbursements",
        json!({
            "idempotency_key": "d-ovo",
            "channel": "EWALLET",
            "ewallet_provider": "OVO",
            "ewallet_phone": "081234567890",
            "amount_minor": 700_000,
        }),
    )
    .await;
    let resource = (
        "disbursement",
        ewallet["id"].as_str().unwrap().to_string(),
        ewallet["ref_code"].as_str().unwrap().to_string(),
    );
    // No fee for e-wallets: no fee line.
    expected.push(("DISBURSEMENT", -700_000, Some(resource)));

    let failed = post(server, merchant, "/v1/disbursements", bank_body("d-failed", 2_000_000)).await;
    let id = failed["id"].as_str().unwrap().to_string();
    let resource = (
        "disbursement",
        id.clone(),
        failed["ref_code"].as_str().unwrap().to_string(),
    );
    expected.push(("DISBURSEMENT", -2_000_000, Some(resource.clone())));
    expected.push(("DISBURSEMENT_FEE", -BANK_FEE, Some(resource.clone())));
    post(
        server,
        merchant,
        &format!("/v1/sandbox/disbursements/{id}/complete"),
        json!({ "status": "FAILED" }),
    )
    .await;
    expected.push(("DISBURSEMENT_REVERSAL", 2_000_000 + BANK_FEE, Some(resource)));
    expected
}

/// Checks every line against what was done, newest first, and the chain.
fn assert_statement(lines: &[Value], expected: &[Expected], balance: i64) {
    assert_eq!(lines.len(), expected.len(), "{lines:#?}");
    let mut running = balance;
    for (line, (line_type, amount, resource)) in lines.iter().zip(expected.iter().rev()) {
        let fields: Vec<_> = line.as_object().unwrap().keys().cloned().collect();
        let wanted = [
            "id",
            "type",
            "amount_minor",
            "balance_after_minor",
            "resource",
            "created_at",
        ];
        assert_eq!(fields, wanted, "{line}");
        assert_eq!(line["type"], json!(line_type), "{line}");
        assert_eq!(line["amount_minor"], json!(amount), "{line}");
        assert_eq!(line["balance_after_minor"], json!(running), "{line}");
        running -= amount;
        match resource {
            None => assert_eq!(line["resource"], Value::Null),
            Some((kind, id, ref_code)) => assert_eq!(
                line["resource"],
                json!({ "type": kind, "id": id, "ref_code": ref_code }),
                "{line}"
            ),
        }
        chrono::DateTime::parse_from_rfc3339(line["created_at"].as_str().unwrap()).expect("RFC 3339");
    }
    assert_eq!(running, 0, "the oldest line starts from an empty wallet");
}

#[tokio::test]
async fn every_line_type_chains_to_the_balance_and_walks_without_gaps() {
    // Payouts wait for the test's sandbox call.
    let mut server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = server.create_wallet_merchant().await;
    let expected = every_line_type(&server, &merchant).await;
    let balance = server.balance(&merchant.api_key).await;
    assert_eq!(balance, expected.iter().map(|e| e.1).sum::<i64>());

    let (all, has_more) = lines(&server, &merchant, "?limit=100").await;
    assert!(!has_more);
    assert_statement(&all, &expected, balance);
    // The default page is 20 lines; this statement has fewer.
    assert_eq!(lines(&server, &merchant, "").await.0, all);
    for limit in [1, 2, 3, 5] {
        assert_eq!(walk(&server, &merchant, limit, "").await, all, "pages of {limit}");
    }
    // Above 100 is served as 100.
    assert_eq!(lines(&server, &merchant, "?limit=1000").await.0, all);

    // Type and time filters.
    let fees: Vec<_> = all
        .iter()
        .filter(|l| l["type"] == "DISBURSEMENT_FEE")
        .cloned()
        .collect();
    assert_eq!(fees.len(), 2);
    assert_eq!(walk(&server, &merchant, 1, "&type=DISBURSEMENT_FEE").await, fees);
    let newest = all[0]["created_at"].as_str().unwrap();
    let oldest = all.last().unwrap()["created_at"].as_str().unwrap();
    let after_newest = (chrono::DateTime::parse_from_rfc3339(newest).unwrap() + chrono::Duration::milliseconds(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    assert_eq!(
        lines(&server, &merchant, &format!("?limit=100&created_from={after_newest}"))
            .await
            .0,
        Vec::<Value>::new()
    );
    assert_eq!(
        lines(&server, &merchant, &format!("?limit=100&created_to={oldest}"))
            .await
            .0,
        Vec::<Value>::new()
    );
    assert_eq!(
        lines(
            &server,
            &merchant,
            &format!("?limit=100&created_from={oldest}&created_to={after_newest}")
        )
        .await
        .0,
        all
    );

    // The same statement after a crash and a restart (entries from sled).
    server.kill();
    server.restart();
    assert_eq!(lines(&server, &merchant, "?limit=100").await.0, all);
    assert_eq!(walk(&server, &merchant, 4, "").await, all);
}

#[tokio::test]
async fn csv_has_the_same_lines_as_json() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = server.create_wallet_merchant().await;
    every_line_type(&server, &merchant).await;
    let (json_lines, _) = lines(&server, &merchant, "?limit=7").await;
    let response = server
        .client
        .get(server.url("/v1/balance/history?limit=7"))
        .header("X-API-Key", &merchant.api_key)
        .header("Accept", "text/csv")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/csv; charset=utf-8");
    let text = response.text().await.unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        [
            "id",
            "type",
            "amount_minor",
            "balance_after_minor",
            "resource_type",
            "resource_id",
            "resource_ref_code",
            "created_at"
        ]
    );
    let rows: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    assert_eq!(rows.len(), json_lines.len());
    for (row, line) in rows.iter().zip(&json_lines) {
        let text = |v: &Value| v.as_str().map(String::from).unwrap_or_default();
        let expected = vec![
            text(&line["id"]),
            text(&line["type"]),
            line["amount_minor"].to_string(),
            line["balance_after_minor"].to_string(),
            text(&line["resource"]["type"]),
            text(&line["resource"]["id"]),
            text(&line["resource"]["ref_code"]),
            text(&line["created_at"]),
        ];
        assert_eq!(row, &expected);
    }
}

#[tokio::test]
async fn cursors_and_queries_are_checked_and_merchants_see_only_their_own() {
    let server = TestServer::start();
    let first = server.create_wallet_merchant().await;
    let second = server.create_wallet_merchant().await;
    server.credit(&first.id, 1_000).await;
    server.credit(&first.id, 2_000).await;
    let (mine, _) = lines(&server, &first, "").await;
    assert_eq!(mine.len(), 2);
    assert_eq!(lines(&server, &second, "").await, (Vec::new(), false));

    let first_id = mine[0]["id"].as_str().unwrap().to_string();
    let bad_queries = [
        format!("?starting_after={first_id}x"),
        "?starting_after=nonsense".to_string(),
        // Well formed, but no such line: sequence 99 of this merchant.
        format!(
            "?starting_after={}{}",
            &first_id[..first_id.len() - 17],
            "00000000000000630"
        ),
        "?limit=0".to_string(),
        "?limit=ten".to_string(),
        "?type=PAYOUT".to_string(),
        "?created_from=yesterday".to_string(),
    ];
    for query in &bad_queries {
        assert_v1_error(&history(&server, &first, query).await, 400, "INVALID_QUERY");
    }
    // Another merchant's line id is no cursor here.
    assert_v1_error(
        &history(&server, &second, &format!("?starting_after={first_id}")).await,
        400,
        "INVALID_QUERY",
    );
    assert_eq!(
        lines(&server, &first, &format!("?starting_after={first_id}")).await.0,
        vec![mine[1].clone()]
    );

    let manual = server.create_merchant_with("MANUAL", json!({})).await;
    assert_v1_error(&history(&server, &manual, "").await, 403, "NOT_WALLET_MERCHANT");
    let anonymous = server.call(Method::GET, "/v1/balance/history", None, None).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
}

// ---------------------------------------------------------------- GET /v1/balance and its API key

#[tokio::test]
async fn missing_api_key_is_401_unauthorized() {
    let server = TestServer::start();
    for path in ["/v1/balance", "/v1/banks", "/v1/ewallets"] {
        let reply = server.call(Method::GET, path, None, None).await;
        assert_v1_error(&reply, 401, "UNAUTHORIZED");
        assert_eq!(sorted_keys(&reply.body), strings(&["error", "success"]));
    }
    // An empty key is no key.
    let reply = server.get("/v1/balance", "").await;
    assert_v1_error(&reply, 401, "UNAUTHORIZED");
}

#[tokio::test]
async fn unknown_api_key_is_401_invalid_api_key() {
    let server = TestServer::start();
    let unknown = "ab".repeat(32);
    for path in ["/v1/balance", "/v1/banks", "/v1/ewallets"] {
        let reply = server.get(path, &unknown).await;
        assert_v1_error(&reply, 401, "INVALID_API_KEY");
    }
    let reply = server.get("/v1/balance", "not-even-hex").await;
    assert_v1_error(&reply, 401, "INVALID_API_KEY");
}

#[tokio::test]
async fn api_key_query_parameter_works_like_the_header() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    server.credit(&merchant.id, 777).await;
    let reply = server
        .call(
            Method::GET,
            &format!("/v1/balance?api_key={}", merchant.api_key),
            None,
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["merchant_id"], json!(merchant.id));
    assert_eq!(reply.body["data"]["balance_minor"], json!(777));

    let reply = server
        .call(
            Method::GET,
            &format!("/v1/balance?api_key={}", "cd".repeat(32)),
            None,
            None,
        )
        .await;
    assert_v1_error(&reply, 401, "INVALID_API_KEY");
}

#[tokio::test]
async fn wallet_balance_is_exactly_merchant_id_balance_minor_and_currency() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let reply = server.get("/v1/balance", &merchant.api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(sorted_keys(&reply.body), strings(&["data", "success"]));
    assert_eq!(reply.body["success"], json!(true));
    assert_eq!(
        reply.body["data"],
        json!({ "merchant_id": merchant.id, "balance_minor": 0, "currency": "IDR" })
    );

    server.credit(&merchant.id, 1_500_000).await;
    let reply = server.get("/v1/balance", &merchant.api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(
        sorted_keys(&reply.body["data"]),
        strings(&["balance_minor", "currency", "merchant_id"])
    );
    assert_eq!(
        reply.body["data"],
        json!({ "merchant_id": merchant.id, "balance_minor": 1_500_000, "currency": "IDR" })
    );
}

#[tokio::test]
async fn manual_merchant_balance_is_403_not_wallet_merchant() {
    let server = TestServer::start();
    let merchant = server.create_merchant_with("MANUAL", json!({})).await;
    let reply = server.get("/v1/balance", &merchant.api_key).await;
    assert_v1_error(&reply, 403, "NOT_WALLET_MERCHANT");
}
