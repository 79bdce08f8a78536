//! Data dirs of older formats, made by older binaries, open with this one
//! over HTTP, keep working, and say `CURRENT_FORMAT` once upgraded, across
//! restarts:
//! - format 3, before orders moved into blocks
//!   (`tests/fixtures/make-data-format-3.sh`: orders PENDING, PAID, partly
//!   refunded and EXPIRED, a MANUAL merchant's unsettled order, a
//!   disbursement): every order is found by id, ref code, listing,
//!   `Idempotency-Key` and merchant order id;
//! - format 4, before refunds, settlements, beneficiaries and batches did
//!   (`make-data-format-4-to-6.sh`): each is found, listed and replayed;
//! - format 5, the same records before stored values carried their layout;
//! - format 6, the same records before ledger entries' idempotency keys
//!   moved from one value a merchant and checkpoint into runs.
//!
//! Each fixture had a checkpoint, then a journal tail cut by SIGKILL.

mod support;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::Path;
use support::*;

/// The format this build writes.
const CURRENT_FORMAT: &str = "7";

/// Unpacks the fixture of data format `format` into `into` (it holds
/// `data/` and `expected.json`).
fn unpack_fixture(into: &Path, format: u32) -> Value {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/data-format-{format}.tar.gz"));
    let status = std::process::Command::new("tar")
        .arg("xzf")
        .arg(&fixture)
        .arg("-C")
        .arg(into)
        .status()
        .expect("tar runs");
    assert!(status.success(), "tar xzf {}", fixture.display());
    let expected = std::fs::read_to_string(into.join("expected.json")).expect("expected.json");
    serde_json::from_str(&expected).expect("expected.json parses")
}

/// POSTs `body` byte for byte, with an `Idempotency-Key`.
async fn post_order(server: &TestServer, api_key: &str, key: &str, body: &str) -> Reply {
    let response = server
        .client
        .post(format!("{}/v1/orders", server.base))
        .header("X-API-Key", api_key)
        .header("Content-Type", "application/json")
        .header("Idempotency-Key", key)
        .body(body.to_string())
        .send()
        .await
        .expect("request sent");
    reply_to(Some(&Method::POST), response).await
}

/// `GET /v1/orders/{ref_code}`.
async fn get_order(server: &TestServer, api_key: &str, ref_code: &str) -> Value {
    let reply = server
        .call(Method::GET, &format!("/v1/orders/{ref_code}"), Some(api_key), None)
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body["data"].clone()
}

/// Whether the fixture's PENDING order has expired by now. It was made
/// to wait 1440 minutes, the longest an order may, so a day after the
/// fixture was made it has: its expiry, kept due across the upgrade, must
/// then have run. (Within a few seconds of the expiry either may be seen.)
fn pending_expired(orders: &Value) -> Option<bool> {
    let expires_at = chrono::DateTime::parse_from_rfc3339(orders["pending"]["expires_at"].as_str().unwrap()).unwrap();
    let past = chrono::Utc::now().signed_duration_since(expires_at);
    if past > chrono::Duration::seconds(5) {
        Some(true)
    } else if past < chrono::Duration::seconds(-5) {
        Some(false)
    } else {
        None
    }
}

/// The status the fixture's PENDING order has now (see `pending_expired`).
fn pending_status(orders: &Value) -> &'static str {
    match pending_expired(orders) {
        Some(true) => "EXPIRED",
        Some(false) => "PENDING",
        None => panic!("the fixture's pending order expires just now: run again in a few seconds"),
    }
}

/// Every order of the fixture in the state its history left it.
async fn assert_orders_as_left(server: &TestServer, demo_key: &str, manual_key: &str, orders: &Value) {
    for (name, status, refunded) in [
        ("pending", pending_status(orders), 0),
        ("paid", "PAID", 0),
        ("refunded", "PARTIALLY_REFUNDED", 1_000_000),
        ("expired", "EXPIRED", 0),
        ("tail", "PAID", 0),
        ("manual", "PAID", 0),
    ] {
        let first = &orders[name];
        let key = if name == "manual" { manual_key } else { demo_key };
        let order = get_order(server, key, first["ref_code"].as_str().unwrap()).await;
        assert_eq!(order["id"], first["id"], "{name}");
        assert_eq!(order["status"], json!(status), "{name}: {order}");
        assert_eq!(order["ref_code"], first["ref_code"], "{name}");
        assert_eq!(order["merchant_order_id"], first["merchant_order_id"], "{name}");
        assert_eq!(order["amount_minor"], first["amount_minor"], "{name}");
        assert_eq!(order["refunded_amount_minor"], json!(refunded), "{name}");
        if name != "manual" {
            assert_eq!(order["is_settled"], json!(status == "PAID" || refunded > 0), "{name}");
        }
        // Without a key too: the checkout page's status route finds it.
        let page = server
            .call(
                Method::GET,
                &format!("/checkout/{}/status", first["id"].as_str().unwrap()),
                None,
                None,
            )
            .await;
        assert_eq!(page.status, StatusCode::OK, "{name}: {}", page.body);
    }
    let listed = server
        .call(Method::GET, "/v1/orders?limit=100", Some(demo_key), None)
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert_eq!(listed.body["meta"]["total"], json!(5), "{}", listed.body);
    let newest_first: Vec<&Value> = listed.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|order| &order["merchant_order_id"])
        .collect();
    assert_eq!(newest_first[0], &json!("INV-TAIL"), "newest first: {newest_first:?}");
    let pending = server
        .call(Method::GET, "/v1/orders?status=PENDING", Some(demo_key), None)
        .await;
    let still_pending = u64::from(pending_status(orders) == "PENDING");
    assert_eq!(pending.body["meta"]["total"], json!(still_pending), "{}", pending.body);
}

#[tokio::test]
async fn a_format_3_data_dir_opens_upgraded_with_every_order_found() {
    let temp = tempfile::tempdir().unwrap();
    let expected = unpack_fixture(temp.path(), 3);
    let data_dir = temp.path().join("data");
    assert_eq!(std::fs::read_to_string(data_dir.join("format")).unwrap().trim(), "3");
    let credentials: Value =
        serde_json::from_str(&std::fs::read_to_string(data_dir.join("demo-credentials.json")).unwrap()).unwrap();
    let demo_key = credentials["api_key"].as_str().unwrap().to_string();
    let manual_key = expected["manual_api_key"].as_str().unwrap().to_string();
    let orders = &expected["orders"];

    let mut server = TestServer::start_in(&data_dir, &[]);
    assert_eq!(
        std::fs::read_to_string(data_dir.join("format")).unwrap().trim(),
        CURRENT_FORMAT,
        "upgraded once open"
    );
    assert_orders_as_left(&server, &demo_key, &manual_key, orders).await;
    assert_eq!(server.verify().await["balanced"], json!(true));

    // Keys and ids made before the upgrade still hold: the same key and
    // body replay the first answer, the same order id is a duplicate.
    let body =
        r#"{"merchant_order_id":"INV-PENDING","amount_minor":2500000,"payment_method":"QRIS","expire_minutes":1440}"#;
    let replay = post_order(&server, &demo_key, "key-pending", body).await;
    assert_eq!(replay.status, StatusCode::CREATED, "{}", replay.body);
    assert_eq!(replay.body["data"]["id"], orders["pending"]["id"]);
    assert_eq!(replay.body["data"]["status"], json!("PENDING"));
    let reused = post_order(&server, &demo_key, "key-other", body).await;
    assert_v1_error(&reused, 409, "DUPLICATE_ORDER");
    assert_eq!(reused.body["data"]["id"], orders["pending"]["id"]);

    // The orders go on: the pending one is paid (while it has not expired),
    // the refunded one refunded again.
    let ref_code = orders["pending"]["ref_code"].as_str().unwrap();
    let paid = server.sandbox_order(&demo_key, ref_code, "pay").await;
    // Once the fixture's pending order expired, it can no longer be paid.
    let pending_paid = pending_status(orders) == "PENDING";
    if pending_paid {
        assert_eq!(paid.status, StatusCode::OK, "{}", paid.body);
        assert_eq!(paid.body["data"]["status"], json!("PAID"));
    } else {
        assert_v1_error(&paid, 422, "INVALID_STATUS");
    }
    let refunded_ref = orders["refunded"]["ref_code"].as_str().unwrap();
    let refund = server
        .refund_of(&demo_key, refunded_ref, 500_000, "refund-after-upgrade")
        .await;
    assert_eq!(refund.status, StatusCode::CREATED, "{}", refund.body);
    // A MANUAL merchant's order paid before the upgrade (on a WIB day now
    // over) is found by the daily settlement through its unsettled key and
    // taken by it.
    let manual_ref = orders["manual"]["ref_code"].as_str().unwrap();
    let mut settled = false;
    for _ in 0..500 {
        settled = get_order(&server, &manual_key, manual_ref).await["is_settled"] == json!(true);
        if settled {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(settled, "the settlement of the order's day took it");

    server.kill();
    server.restart();
    assert_eq!(
        std::fs::read_to_string(data_dir.join("format")).unwrap().trim(),
        CURRENT_FORMAT
    );
    let order = get_order(&server, &demo_key, ref_code).await;
    assert_eq!(order["status"], json!(if pending_paid { "PAID" } else { "EXPIRED" }));
    let order = get_order(&server, &demo_key, refunded_ref).await;
    assert_eq!(order["refunded_amount_minor"], json!(1_500_000));
    let listed = server
        .call(Method::GET, "/v1/orders?limit=1", Some(&demo_key), None)
        .await;
    assert_eq!(listed.body["meta"]["total"], json!(5));
    assert_eq!(server.verify().await["balanced"], json!(true));
}

/// The fixture's refunds, settlement, beneficiaries and batch, as a
/// merchant reads them: found, listed, and found again by their keys.
async fn assert_records_found(server: &TestServer, demo_key: &str, manual_key: &str, expected: &Value) {
    let settlement = &expected["settlement-run"]["data"][0];
    let settlements = server
        .call(Method::GET, "/v1/settlements", Some(manual_key), None)
        .await;
    assert_eq!(settlements.status, StatusCode::OK, "{}", settlements.body);
    let listed = settlements.body["data"].as_array().expect("settlements");
    let first = listed
        .iter()
        .find(|s| s["id"] == settlement["id"])
        .expect("the first settlement listed");
    let totals = "ref_code gross_amount_minor refund_total_minor net_payout_minor order_count";
    for field in totals.split_whitespace() {
        assert_eq!(first[field], settlement[field], "{field}");
    }

    let beneficiaries = server
        .call(Method::GET, "/v1/beneficiaries", Some(demo_key), None)
        .await;
    assert_eq!(beneficiaries.status, StatusCode::OK, "{}", beneficiaries.body);
    let ids: Vec<&Value> = beneficiaries.body["data"]
        .as_array()
        .expect("beneficiaries")
        .iter()
        .map(|b| &b["id"])
        .collect();
    let made = [
        &expected["beneficiary-2"]["data"]["id"],
        &expected["beneficiary-1"]["data"]["id"],
    ];
    assert_eq!(ids, made, "both, newest first");

    let batch = &expected["batch-1"]["data"];
    let path = format!("/v1/disbursements/batch/{}", batch["id"].as_str().unwrap());
    let found = server.call(Method::GET, &path, Some(demo_key), None).await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
    assert_eq!(found.body["data"]["id"], batch["id"]);
    let items = json!([
        {"idempotency_key":"batch-1-a","channel":"BANK","bank_short_code":"BCA","account_number":"1234567890","account_name":"Budi Santoso","amount_minor":1000000},
        {"idempotency_key":"batch-1-b","channel":"EWALLET","ewallet_provider":"OVO","ewallet_phone":"081234567890","amount_minor":20},
    ]);
    let body = json!({"idempotency_key": "batch-1", "items": items});
    let replay = server
        .call(Method::POST, "/v1/disbursements/batch", Some(demo_key), Some(body))
        .await;
    assert_eq!(replay.status, StatusCode::CREATED, "{}", replay.body);
    assert_eq!(replay.body["data"], *batch, "the batch key replays the first answer");

    for (name, api_key, order, amount) in [
        ("wallet-refund-1", demo_key, "wallet-1", 1_000_000),
        ("wallet-refund-2", demo_key, "wallet-1", 500_000),
        ("manual-refund-2", manual_key, "manual-2", 500_000),
    ] {
        let ref_code = expected["orders"][order].as_str().unwrap();
        let body = json!({"amount_minor": amount, "idempotency_key": name});
        let replay = server
            .call(
                Method::POST,
                &format!("/v1/orders/{ref_code}/refund"),
                Some(api_key),
                Some(body),
            )
            .await;
        // A refund's key, once used, answers the refund it made.
        assert_v1_error(&replay, 409, "DUPLICATE_IDEMPOTENCY_KEY");
        assert_eq!(
            replay.body["data"]["id"], expected[name]["data"]["id"],
            "{name} found by its key"
        );
    }
}

#[tokio::test]
async fn a_format_4_data_dir_opens_upgraded_with_refunds_settlements_beneficiaries_and_batches() {
    assert_records_survive_the_upgrade_from(4).await;
}

/// Format 5 values carry no layout tags: every one is read as layout 1
/// where it lies (blocks, sled values, the journal tail) while new ones are
/// written tagged beside them.
#[tokio::test]
async fn a_format_5_data_dir_opens_with_its_untagged_values_read_as_layout_1() {
    assert_records_survive_the_upgrade_from(5).await;
}

/// Format 6 kept ledger entries' idempotency keys in one value a merchant
/// and checkpoint: they move into runs, and the records of the entries
/// they guard stay as they were.
#[tokio::test]
async fn a_format_6_data_dir_opens_with_its_entry_keys_moved_into_runs() {
    assert_records_survive_the_upgrade_from(6).await;
}

/// Opens the fixture of `format` (`make-data-format-4-to-6.sh`): its
/// records are found and replayed, its open work finishes, the next
/// settlement takes what came after the first, and all of it holds after
/// SIGKILL and a restart.
async fn assert_records_survive_the_upgrade_from(format: u32) {
    let temp = tempfile::tempdir().unwrap();
    let expected = unpack_fixture(temp.path(), format);
    let data_dir = temp.path().join("data");
    assert_eq!(
        std::fs::read_to_string(data_dir.join("format")).unwrap().trim(),
        format.to_string()
    );
    let credentials: Value =
        serde_json::from_str(&std::fs::read_to_string(data_dir.join("demo-credentials.json")).unwrap()).unwrap();
    let demo_key = credentials["api_key"].as_str().unwrap().to_string();
    let manual_key = expected["manual_api_key"].as_str().unwrap().to_string();

    let mut server = TestServer::start_in(&data_dir, &[]);
    assert_eq!(
        std::fs::read_to_string(data_dir.join("format")).unwrap().trim(),
        CURRENT_FORMAT,
        "upgraded once open"
    );
    assert_records_found(&server, &demo_key, &manual_key, &expected).await;
    assert_eq!(server.verify().await["balanced"], json!(true));

    // The refunds left PENDING resume and succeed; the MANUAL merchant's
    // order and refund after its settlement go into the next one.
    let wallet_order = expected["orders"]["wallet-1"].as_str().unwrap();
    let mut refunded = Value::Null;
    for _ in 0..500 {
        refunded = get_order(&server, &demo_key, wallet_order).await["refunded_amount_minor"].clone();
        if refunded == json!(1_500_000) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(refunded, json!(1_500_000), "both refunds of the order");
    let manual_id = expected["manual_merchant_id"].clone();
    let run = server
        .admin_post("/admin/v1/settlements/run", json!({"merchant_id": manual_id}))
        .await;
    assert_eq!(run.status, StatusCode::OK, "{}", run.body);
    // What came after the fixture's settlement is settled once: by this run,
    // or, once the fixture's WIB day is over, partly or wholly by the daily
    // settlement that ran when the server opened. Either way the
    // settlements after the first add up to it.
    let first_id = expected["settlement-run"]["data"][0]["id"].clone();
    let mut after_first = Vec::new();
    for _ in 0..500 {
        let listed = server
            .call(Method::GET, "/v1/settlements?limit=100", Some(&manual_key), None)
            .await;
        after_first = listed.body["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["id"] != first_id)
            .cloned()
            .collect::<Vec<Value>>();
        let total = |field: &str| after_first.iter().map(|s| s[field].as_i64().unwrap()).sum::<i64>();
        if total("gross_amount_minor") == 3_000_000 && total("refund_total_minor") == 500_000 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let total = |field: &str| after_first.iter().map(|s| s[field].as_i64().unwrap()).sum::<i64>();
    assert_eq!(
        total("gross_amount_minor"),
        3_000_000,
        "{after_first:?} (run: {})",
        run.body
    );
    assert_eq!(
        total("refund_total_minor"),
        500_000,
        "{after_first:?} (run: {})",
        run.body
    );
    // By id: a settlement the run made may have moved on since (paid out).
    for next in run.body["data"].as_array().unwrap() {
        assert!(after_first.iter().any(|s| s["id"] == next["id"]), "{next}");
    }

    server.kill();
    server.restart();
    assert_records_found(&server, &demo_key, &manual_key, &expected).await;
    let settlements = server
        .call(Method::GET, "/v1/settlements", Some(&manual_key), None)
        .await;
    assert_eq!(
        settlements.body["meta"]["total"],
        json!(1 + after_first.len()),
        "{}",
        settlements.body
    );
    assert_eq!(server.verify().await["balanced"], json!(true));
}
