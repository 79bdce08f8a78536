//! Refused creations: each leaves the wallet, the merchant's disbursements
//! and the ledger as they were. Refusals of the body alone are one table;
//! those that need a setting changed first (a disabled bank, a limit, live
//! mode) are tests of their own.

use super::*;
use uuid::Uuid;

/// A creation `POST /v1/disbursements` must refuse.
struct Refusal {
    name: String,
    body: Value,
    status: u16,
    code: &'static str,
    /// For `INVALID_BODY`: the field its message must name.
    names_field: Option<&'static str>,
}

fn refused(name: &str, body: Value, status: u16, code: &'static str) -> Refusal {
    Refusal {
        name: name.to_string(),
        body,
        status,
        code,
        names_field: None,
    }
}

fn invalid(name: &str, body: Value, field: &'static str) -> Refusal {
    Refusal {
        name: name.to_string(),
        body,
        status: 400,
        code: "INVALID_BODY",
        names_field: Some(field),
    }
}

fn body_refusals() -> Vec<Refusal> {
    let mut rows = vec![
        refused(
            "unknown bank short code",
            bank_body_to("no-bank", "NOSUCHBANK", "1234567890", 1_000_000),
            400,
            "BANK_NOT_FOUND",
        ),
        refused(
            "unknown e-wallet code",
            ewallet_body("paypal-1", "PAYPAL", "081234567890", 1_000_000),
            400,
            "EWALLET_NOT_FOUND",
        ),
        refused(
            "unknown beneficiary id",
            json!({
                "idempotency_key": "bene-1",
                "beneficiary_id": Uuid::new_v4().to_string(),
                "amount_minor": 1_000_000,
            }),
            404,
            "BENEFICIARY_NOT_FOUND",
        ),
    ];
    for field in ["account_name", "account_number"] {
        rows.push(refused(
            &format!("bank without {field}"),
            without(bank_body(&format!("missing-{field}"), 1_000_000), field),
            400,
            "MISSING_BANK_INFO",
        ));
    }
    for field in ["ewallet_phone", "ewallet_provider"] {
        rows.push(refused(
            &format!("e-wallet without {field}"),
            without(
                ewallet_body(&format!("missing-{field}"), "OVO", "081234567890", 1_000_000),
                field,
            ),
            400,
            "MISSING_EWALLET_INFO",
        ));
    }
    for phone in ["12345", "0712345678", "08123"] {
        rows.push(invalid(
            &format!("invalid e-wallet phone {phone}"),
            ewallet_body("bad-phone", "OVO", phone, 1_000_000),
            "ewallet_phone",
        ));
    }
    for amount in [json!(0), json!(-100), json!("1000000"), json!(1000.5)] {
        let mut body = bank_body("bad-amount", 1);
        body["amount_minor"] = amount.clone();
        rows.push(invalid(&format!("amount_minor {amount}"), body, "amount_minor"));
    }
    rows.push(invalid(
        "no amount_minor",
        without(bank_body("no-amount", 1), "amount_minor"),
        "amount_minor",
    ));
    rows.push(invalid(
        "no idempotency_key",
        without(bank_body("x", 1_000_000), "idempotency_key"),
        "idempotency_key",
    ));
    rows.push(invalid(
        "empty idempotency_key",
        bank_body("", 1_000_000),
        "idempotency_key",
    ));
    let mut cash = bank_body("cash-1", 1_000_000);
    cash["channel"] = json!("CASH");
    rows.push(invalid("unknown channel CASH", cash, "channel"));
    rows.push(invalid(
        "no channel",
        without(bank_body("cash-2", 1_000_000), "channel"),
        "channel",
    ));
    rows
}

#[tokio::test]
async fn every_refusal_of_the_body_alone_has_its_status_and_code_and_moves_nothing() {
    let (server, merchant) = funded_server(SLOW, 5_000_000).await;
    for row in body_refusals() {
        table::row(&row.name, async {
            let reply = assert_refused(&server, &merchant, row.body, row.status, row.code).await;
            if let Some(field) = row.names_field {
                let message = reply.body["error"]["message"].as_str().unwrap();
                assert!(message.contains(field), "message {message:?} should name {field:?}");
            }
            assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
        })
        .await;
    }
}

#[tokio::test]
async fn malformed_json_is_400_invalid_body() {
    let (server, merchant) = funded_server(SLOW, 5_000_000).await;
    for raw in [
        &br#"{"idempotency_key": "k", "channel": "BANK", "amount_minor": "#[..],
        &b"not json"[..],
        &b"[1, 2]"[..],
    ] {
        let reply = post_raw(&server, &merchant, raw, None).await;
        assert_v1_error(&reply, 400, "INVALID_BODY");
    }
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
    assert_eq!(count(&server, &merchant).await, 0);
}

#[tokio::test]
async fn disabled_bank_is_422_bank_disabled_until_enabled_again() {
    let (server, merchant) = funded_server(SLOW, 5_000_000).await;
    let bni = bank_id(&server, &merchant, "BNI").await;
    let reply = server.set_bank_enabled("BNI", false).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);

    let body = bank_body_to("bni-1", "BNI", "1234567890", 1_000_000);
    assert_refused(&server, &merchant, body.clone(), 422, "BANK_DISABLED").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);

    let reply = server.set_bank_enabled("BNI", true).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    // The refusal did not use up the key.
    let data = create_ok(&server, &merchant, body).await;
    assert_eq!(data["bank_id"], bni);
    assert_eq!(
        server.balance(&merchant.api_key).await,
        5_000_000 - 1_000_000 - BANK_FEE
    );
}

#[tokio::test]
async fn disabled_ewallet_is_422_ewallet_disabled() {
    let (server, merchant) = funded_server(SLOW, 5_000_000).await;
    let reply = server.set_ewallet_enabled("LINKAJA", false).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let body = ewallet_body("linkaja-1", "LINKAJA", "081234567890", 1_000_000);
    assert_refused(&server, &merchant, body, 422, "EWALLET_DISABLED").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
}

#[tokio::test]
async fn dana_below_idr_20000_is_422_amount_below_minimum_and_exactly_20000_is_accepted() {
    let (server, merchant) = funded_server(SLOW, 5_000_000).await;
    let body = ewallet_body("dana-1", "DANA", "081234567890", 1_999_900);
    assert_refused(&server, &merchant, body, 422, "AMOUNT_BELOW_MINIMUM").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);

    let data = create_ok(
        &server,
        &merchant,
        ewallet_body("dana-1", "DANA", "081234567890", 2_000_000),
    )
    .await;
    assert_eq!(data["ewallet_provider"], json!("DANA"));
    assert_eq!(data["request_amount_minor"], json!(2_000_000));
    assert_eq!(data["fee_minor"], json!(0));
    assert_eq!(data["final_amount_minor"], json!(2_000_000));
    assert_eq!(server.balance(&merchant.api_key).await, 3_000_000);

    // Other e-wallets have no such minimum.
    let data = create_ok(
        &server,
        &merchant,
        ewallet_body("ovo-small", "OVO", "081234567890", 100),
    )
    .await;
    assert_eq!(data["final_amount_minor"], json!(100));
    assert_eq!(server.balance(&merchant.api_key).await, 2_999_900);
}

#[tokio::test]
async fn wallet_below_request_plus_fee_is_422_insufficient_balance() {
    let server = TestServer::start_with(SLOW);
    // Exactly the request amount: the fee does not fit.
    let merchant = funded_merchant(&server, 1_000_000).await;
    let body = bank_body("poor-1", 1_000_000);
    assert_refused(&server, &merchant, body.clone(), 422, "INSUFFICIENT_BALANCE").await;
    assert_eq!(server.balance(&merchant.api_key).await, 1_000_000);

    // One minor unit short.
    assert_eq!(
        server.credit(&merchant.id, BANK_FEE - 1).await,
        1_000_000 + BANK_FEE - 1
    );
    assert_refused(&server, &merchant, body.clone(), 422, "INSUFFICIENT_BALANCE").await;
    assert_eq!(server.balance(&merchant.api_key).await, 1_000_000 + BANK_FEE - 1);

    // Exactly enough, with the same key (a refusal does not use it up).
    assert_eq!(server.credit(&merchant.id, 1).await, 1_000_000 + BANK_FEE);
    let data = create_ok(&server, &merchant, body).await;
    assert_eq!(data["final_amount_minor"], json!(1_000_000 + BANK_FEE));
    assert_eq!(server.balance(&merchant.api_key).await, 0);

    // An empty wallet refuses even the smallest e-wallet payout.
    let body = ewallet_body("poor-2", "OVO", "081234567890", 1);
    assert_refused(&server, &merchant, body, 422, "INSUFFICIENT_BALANCE").await;
    assert_eq!(server.balance(&merchant.api_key).await, 0);
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn amount_over_the_per_transaction_limit_is_422_and_exactly_the_limit_is_accepted() {
    let funding = 5_000_000;
    let (server, merchant) = funded_server(SLOW, funding).await;
    let limits = json!({ "limits": { "per_transaction_minor": 1_000_000 } });
    patch_merchant(&server, &merchant.id, limits).await;

    // The limit applies to the request amount, fee excluded.
    let body = bank_body("limit-1", 1_000_001);
    assert_refused(&server, &merchant, body, 422, "AMOUNT_EXCEEDS_LIMIT").await;
    let body = ewallet_body("limit-2", "OVO", "081234567890", 1_000_001);
    assert_refused(&server, &merchant, body, 422, "AMOUNT_EXCEEDS_LIMIT").await;
    assert_eq!(server.balance(&merchant.api_key).await, funding);

    let data = create_ok(&server, &merchant, bank_body("limit-1", 1_000_000)).await;
    assert_eq!(data["request_amount_minor"], json!(1_000_000));
    assert_eq!(data["final_amount_minor"], json!(1_000_000 + BANK_FEE));
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_000_000 - BANK_FEE);
}

#[tokio::test]
async fn default_per_transaction_limit_is_idr_50_million() {
    let funding = 6_000_000_000;
    let (server, merchant) = funded_server(SLOW, funding).await;
    let body = bank_body("big-1", 5_000_000_001);
    assert_refused(&server, &merchant, body, 422, "AMOUNT_EXCEEDS_LIMIT").await;
    assert_eq!(server.balance(&merchant.api_key).await, funding);
}

#[tokio::test]
async fn daily_limit_counts_the_days_requests_and_a_failed_one_frees_its_share() {
    let funding = 10_000_000;
    let (server, merchant) = funded_server(SLOW, funding).await;
    patch_merchant(&server, &merchant.id, json!({ "limits": { "daily_minor": 3_000_000 } })).await;

    let first = create_ok(&server, &merchant, bank_body("day-1", 1_500_000)).await;
    create_ok(&server, &merchant, bank_body("day-2", 1_500_000)).await;
    let after_two = funding - 2 * (1_500_000 + BANK_FEE);
    assert_eq!(server.balance(&merchant.api_key).await, after_two);

    let body = ewallet_body("day-3", "OVO", "081234567890", 1);
    assert_refused(&server, &merchant, body.clone(), 422, "DAILY_LIMIT_EXCEEDED").await;
    assert_eq!(server.balance(&merchant.api_key).await, after_two);

    // A FAILED disbursement no longer counts toward the daily limit.
    let reply = complete(&server, &merchant, first["id"].as_str().unwrap(), "FAILED").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let restored = after_two + 1_500_000 + BANK_FEE;
    assert_eq!(server.balance(&merchant.api_key).await, restored);
    create_ok(&server, &merchant, bank_body("day-4", 1_499_999)).await;
    create_ok(&server, &merchant, body).await;
    assert_eq!(
        server.balance(&merchant.api_key).await,
        restored - 1_499_999 - BANK_FEE - 1
    );
    let body = ewallet_body("day-5", "OVO", "081234567890", 1);
    assert_refused(&server, &merchant, body, 422, "DAILY_LIMIT_EXCEEDED").await;
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn live_mode_has_no_payout_vendor_and_no_sandbox_completion_route() {
    let server = TestServer::start_with(&["--mode", "live"]);
    let merchant = funded_merchant(&server, 5_000_000).await;
    let body = bank_body("live-1", 1_000_000);
    assert_refused(&server, &merchant, body, 503, "NO_VENDOR").await;
    let body = ewallet_body("live-2", "OVO", "081234567890", 1_000_000);
    assert_refused(&server, &merchant, body, 503, "NO_VENDOR").await;
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);

    let reply = complete(&server, &merchant, &Uuid::new_v4().to_string(), "SUCCESS").await;
    assert_v1_error(&reply, 404, "NOT_FOUND");
    assert_eq!(server.balance(&merchant.api_key).await, 5_000_000);
    assert_ledger_clean(&server).await;
}
