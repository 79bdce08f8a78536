//! Disbursement request bodies, sandbox settings and merchant funding that
//! the disbursement, batch, payout and balance tests all start from.

use super::{TestMerchant, TestServer};
use serde_json::{json, Value};

/// The default `fees.disbursement_fee_bank_minor`.
pub const BANK_FEE: i64 = 250_000;
/// The default `limits.review_threshold_minor`.
pub const REVIEW_THRESHOLD: i64 = 2_500_000_000;
/// The sandbox vendor settles after 300 ms: lifecycle tests.
pub const FAST: &[&str] = &["--sandbox-disbursement-delay-ms", "300"];
/// The sandbox vendor waits a minute: disbursements stay ON_PROCESS.
pub const SLOW: &[&str] = &["--sandbox-disbursement-delay-ms", "60000"];

/// A V1 BANK disbursement to BCA 1234567890 (Budi Santoso).
pub fn bank_body(key: &str, amount: i64) -> Value {
    json!({
        "idempotency_key": key,
        "channel": "BANK",
        "bank_short_code": "BCA",
        "account_number": "1234567890",
        "account_name": "Budi Santoso",
        "amount_minor": amount,
    })
}

/// `bank_body` with the holder named "Budi", as the load and webhook tests send it.
pub fn budi_body(key: &str, amount: i64) -> Value {
    let mut body = bank_body(key, amount);
    body["account_name"] = json!("Budi");
    body
}

/// `bank_body` to another bank and account.
pub fn bank_body_to(key: &str, bank: &str, account_number: &str, amount: i64) -> Value {
    let mut body = bank_body(key, amount);
    body["bank_short_code"] = json!(bank);
    body["account_number"] = json!(account_number);
    body
}

/// A V1 EWALLET disbursement.
pub fn ewallet_body(key: &str, provider: &str, phone: &str, amount: i64) -> Value {
    json!({
        "idempotency_key": key,
        "channel": "EWALLET",
        "ewallet_provider": provider,
        "ewallet_phone": phone,
        "amount_minor": amount,
    })
}

/// `body` without `field`.
pub fn without(mut body: Value, field: &str) -> Value {
    body.as_object_mut().unwrap().remove(field);
    body
}

/// A server started with `args` and a WALLET merchant on it funded with
/// `funding` (as `funded_merchant`).
pub async fn funded_server(args: &[&str], funding: i64) -> (TestServer, TestMerchant) {
    let server = TestServer::start_with(args);
    let merchant = funded_merchant(&server, funding).await;
    (server, merchant)
}

/// A WALLET merchant funded with `amount` (skipped when 0).
pub async fn funded_merchant(server: &TestServer, amount: i64) -> TestMerchant {
    let merchant = server.create_wallet_merchant().await;
    if amount > 0 {
        assert_eq!(server.credit(&merchant.id, amount).await, amount);
    }
    assert_eq!(server.balance(&merchant.api_key).await, amount);
    merchant
}

/// The ledger verifies: balanced, and no problem reported.
pub async fn assert_ledger_clean(server: &TestServer) {
    let report = server.verify().await;
    assert_eq!(report["balanced"], json!(true), "{report}");
    assert_eq!(report["problems"], json!([]), "{report}");
}
