//! Settlements over HTTP: the admin run,
//! the settlement object, list and get with `INVALID_ID` and `NOT_FOUND`
//! (another merchant's included), nothing settled twice.

mod support;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use support::*;

const SETTLEMENT_FIELDS: [&str; 21] = [
    "id",
    "ref_code",
    "settlement_date",
    "period_start",
    "period_end",
    "gross_amount_minor",
    "mdr_total_minor",
    "platform_fee_minor",
    "aggregator_fee_minor",
    "refund_total_minor",
    "disbursement_fee_minor",
    "carried_over_minor",
    "net_payout_minor",
    "order_count",
    "bank_id",
    "account_number",
    "account_name",
    "status",
    "failure_reason",
    "created_at",
    "updated_at",
];

async fn paid_order(server: &TestServer, merchant: &TestMerchant, id: &str, amount: i64) -> String {
    let reply = server
        .post(
            "/v1/orders",
            &merchant.api_key,
            Some(json!({ "merchant_order_id": id, "amount_minor": amount, "payment_method": "QRIS" })),
        )
        .await;
    let ref_code = reply.body["data"]["ref_code"].as_str().unwrap().to_string();
    let paid = server
        .post(&format!("/v1/sandbox/orders/{ref_code}/pay"), &merchant.api_key, None)
        .await;
    assert_eq!(paid.status, StatusCode::OK, "{}", paid.body);
    ref_code
}

async fn run(server: &TestServer, body: Value) -> Reply {
    server
        .admin(Method::POST, "/admin/v1/settlements/run", Some(body))
        .await
}

#[tokio::test]
async fn the_admin_run_creates_settlements_merchants_can_read() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let bank = json!({ "settlement_bank": { "bank_short_code": "BNI", "account_number": "9876543210", "account_name": "Toko Manual" } });
    let merchant = server.create_merchant_with("MANUAL", bank.clone()).await;
    let other = server.create_merchant_with("MANUAL", bank).await;
    let ref_code = paid_order(&server, &merchant, "S-1", 10_000_000).await;
    paid_order(&server, &merchant, "S-2", 5_000_000).await;
    let refund = server.refund_of(&merchant.api_key, &ref_code, 2_000_000, "s-r1").await;
    assert_eq!(refund.status, StatusCode::CREATED, "{}", refund.body);

    let reply = run(&server, json!({ "merchant_id": merchant.id })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let created = reply.body["data"].as_array().unwrap();
    assert_eq!(created.len(), 1);
    let settlement = &created[0];
    assert_eq!(sorted_keys(settlement), strings(&SETTLEMENT_FIELDS));
    assert!(is_uuid(&settlement["id"]));
    let ref_code = settlement["ref_code"].as_str().unwrap();
    assert!(
        ref_code.starts_with("STL-") && ref_code.len() == "STL-yymmdd-00001".len(),
        "{ref_code}"
    );
    assert!(ref_code.ends_with("-00001"));
    assert_eq!(settlement["gross_amount_minor"], json!(15_000_000));
    assert_eq!(settlement["mdr_total_minor"], json!(70_000 + 35_000));
    assert_eq!(settlement["refund_total_minor"], json!(2_000_000));
    assert_eq!(settlement["disbursement_fee_minor"], json!(250_000));
    assert_eq!(
        settlement["net_payout_minor"],
        json!(15_000_000 - 105_000 - 2_000_000 - 250_000)
    );
    assert_eq!(settlement["order_count"], json!(2));
    assert_eq!(settlement["account_number"], json!("9876543210"));
    assert_eq!(settlement["account_name"], json!("Toko Manual"));
    assert!(is_uuid(&settlement["bank_id"]));
    assert_eq!(settlement["status"], json!("PENDING"));
    assert_eq!(settlement["settlement_date"].as_str().unwrap().len(), 10);

    let id = settlement["id"].as_str().unwrap();
    let got = server.get(&format!("/v1/settlements/{id}"), &merchant.api_key).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.body["data"]["id"], settlement["id"]);
    let list = server.get("/v1/settlements", &merchant.api_key).await;
    assert_eq!(
        list.body["meta"],
        json!({ "page": 1, "limit": 10, "total": 1, "total_pages": 1 })
    );
    let order = server
        .get(
            &format!("/v1/orders/{}", created_ref(&server, &merchant).await),
            &merchant.api_key,
        )
        .await;
    assert_eq!(order.body["data"]["is_settled"], json!(true));

    assert_v1_error(
        &server.get("/v1/settlements/nope", &merchant.api_key).await,
        400,
        "INVALID_ID",
    );
    let unknown = format!("/v1/settlements/{}", uuid::Uuid::new_v4());
    assert_v1_error(&server.get(&unknown, &merchant.api_key).await, 404, "NOT_FOUND");
    let foreign = server.get(&format!("/v1/settlements/{id}"), &other.api_key).await;
    assert_v1_error(&foreign, 404, "NOT_FOUND");

    // Nothing is settled twice; WALLET merchants have none; bad input is refused.
    let again = run(&server, json!({})).await;
    assert_eq!(again.body["data"], json!([]));
    let wallet = server.create_wallet_merchant().await;
    assert_v1_error(
        &run(&server, json!({ "merchant_id": wallet.id })).await,
        400,
        "INVALID_BODY",
    );
    // A body field, not a path id: INVALID_BODY, not INVALID_ID.
    assert_v1_error(&run(&server, json!({ "merchant_id": "x" })).await, 400, "INVALID_BODY");
    assert_v1_error(
        &run(&server, json!({ "period_end": "yesterday" })).await,
        400,
        "INVALID_BODY",
    );
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
}

async fn created_ref(server: &TestServer, merchant: &TestMerchant) -> String {
    let list = server.get("/v1/orders?limit=1", &merchant.api_key).await;
    list.body["data"][0]["ref_code"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn a_period_end_in_the_past_leaves_later_orders_for_later() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = server
        .create_merchant_with("MANUAL", json!({ "settlement_bank": { "bank_short_code": "BCA", "account_number": "1112223334", "account_name": "T" } }))
        .await;
    paid_order(&server, &merchant, "P-1", 1_000_000).await;
    let reply = run(&server, json!({ "period_end": "2020-01-01T00:00:00Z" })).await;
    assert_eq!(reply.body["data"], json!([]), "orders paid now are after that period");
    let reply = run(&server, json!({ "merchant_id": merchant.id })).await;
    assert_eq!(reply.body["data"][0]["order_count"], json!(1));
}

#[tokio::test]
async fn a_net_below_the_transfer_fee_is_carried_once_into_the_next_settlement() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = server
        .create_merchant_with("MANUAL", json!({ "settlement_bank": { "bank_short_code": "BCA", "account_number": "1112223334", "account_name": "T" } }))
        .await;
    // Rp 1,000 less 0.7% MDR is far below the Rp 2,500 transfer fee.
    paid_order(&server, &merchant, "C-1", 100_000).await;
    let reply = run(&server, json!({ "merchant_id": merchant.id })).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let small = &reply.body["data"][0];
    assert_eq!(small["status"], json!("CANCELLED"));
    assert_eq!(small["order_count"], json!(1));
    assert_eq!(small["disbursement_fee_minor"], json!(0));
    assert_eq!(small["carried_over_minor"], json!(0));
    let carry = small["net_payout_minor"].as_i64().unwrap();
    assert_eq!(carry, 100_000 - 700);

    // Nothing new and a carry still too small to pay: no settlement at all.
    for _ in 0..2 {
        let again = run(&server, json!({ "merchant_id": merchant.id })).await;
        assert_eq!(again.status, StatusCode::OK, "{}", again.body);
        assert_eq!(again.body["data"], json!([]));
    }

    paid_order(&server, &merchant, "C-2", 10_000_000).await;
    let reply = run(&server, json!({ "merchant_id": merchant.id })).await;
    let paid = &reply.body["data"][0];
    assert_eq!(paid["status"], json!("PENDING"));
    assert_eq!(paid["order_count"], json!(1));
    assert_eq!(paid["carried_over_minor"], json!(carry));
    assert_eq!(paid["net_payout_minor"], json!(10_000_000 - 70_000 + carry - 250_000));
    let list = server.get("/v1/settlements", &merchant.api_key).await;
    assert_eq!(list.body["meta"]["total"], json!(2));
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
}

#[tokio::test]
async fn a_refund_failing_after_its_settlement_deducted_it_is_given_back_by_the_next() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = server
        .create_merchant_with("MANUAL", json!({ "settlement_bank": { "bank_short_code": "BRI", "account_number": "1112224445", "account_name": "T" } }))
        .await;
    let ref_code = paid_order(&server, &merchant, "F-1", 20_000_000).await;
    let refund = server.refund_of(&merchant.api_key, &ref_code, 7_000_000, "f-r1").await;
    assert_eq!(refund.status, StatusCode::CREATED, "{}", refund.body);
    let first = run(&server, json!({ "merchant_id": merchant.id })).await;
    assert_eq!(first.body["data"][0]["refund_total_minor"], json!(7_000_000));
    assert_eq!(
        first.body["data"][0]["net_payout_minor"],
        json!(20_000_000 - 140_000 - 7_000_000 - 250_000)
    );

    // The vendor fails the refund after the settlement deducted it.
    let refund_id = refund.body["data"]["id"].as_str().unwrap();
    let failed = server
        .post(
            &format!("/v1/sandbox/refunds/{refund_id}/complete"),
            &merchant.api_key,
            Some(json!({ "status": "FAILED" })),
        )
        .await;
    assert_eq!(failed.status, StatusCode::OK, "{}", failed.body);
    assert_eq!(server.verify().await["balanced"], json!(true));

    // The next settlement gives it back: a negative refund total.
    paid_order(&server, &merchant, "F-2", 1_000_000).await;
    let second = run(&server, json!({ "merchant_id": merchant.id })).await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.body);
    let given_back = &second.body["data"][0];
    assert_eq!(given_back["order_count"], json!(1));
    assert_eq!(given_back["refund_total_minor"], json!(-7_000_000));
    assert_eq!(
        given_back["net_payout_minor"],
        json!(1_000_000 - 7_000 + 7_000_000 - 250_000)
    );
    // Given back once: a later settlement has no refund in it.
    paid_order(&server, &merchant, "F-3", 1_000_000).await;
    let third = run(&server, json!({ "merchant_id": merchant.id })).await;
    assert_eq!(third.body["data"][0]["refund_total_minor"], json!(0));
    assert_eq!(
        third.body["data"][0]["net_payout_minor"],
        json!(1_000_000 - 7_000 - 250_000)
    );
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
}
