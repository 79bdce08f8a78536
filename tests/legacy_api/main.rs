//! The Legacy API over HTTP against the real binary, with real RSA keys made
//! in the test: every endpoint under `/api/`, every reachable message of
//! `legacy::messages` with its HTTP status, exact field sets and formats,
//! signatures over raw bytes, and the checks across APIs. This file holds
//! the bodies and checks its modules share.

#[path = "../support/mod.rs"]
mod support;

mod disbursements;
mod orders;
mod transport;

use reqwest::StatusCode;
use serde_json::{json, Value};
use support::legacy::*;
use support::*;

/// A request Legacy must refuse, with its exact status and message.
struct LegacyRefusal {
    name: String,
    path: &'static str,
    body: String,
    status: u16,
    message: &'static str,
}

fn refusal(name: &str, path: &'static str, body: String, status: u16, message: &'static str) -> LegacyRefusal {
    LegacyRefusal {
        name: name.to_string(),
        path,
        body,
        status,
        message,
    }
}

/// A WALLET merchant with `private_key`'s public half, funded with `funding` (skipped when 0).
async fn merchant_with_key(server: &TestServer, funding: i64) -> TestMerchant {
    let merchant = server.create_wallet_merchant().await;
    put_public_key(server, &merchant, &spki_pem()).await;
    if funding > 0 {
        server.credit(&merchant.id, funding).await;
    }
    merchant
}

fn is_wib(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|s| chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").is_ok() && s.len() == 19)
}

fn order_body(merchant: &TestMerchant, order_id: &str, total: i64, payment_type: &str) -> String {
    let signature = sha512_hex(&format!(
        "{}|{order_id}|{total}|{}",
        merchant.client_id, merchant.client_secret
    ));
    json!({
        "clientId": merchant.client_id,
        "orderId": order_id,
        "totalAmount": total,
        "paymentType": payment_type,
        "customerName": "Budi",
        "customerPhone": "0812-3456-7890",
        "notifyUrl": "https://merchant.example/notify",
        "signature": signature,
    })
    .to_string()
}

fn query_body(merchant: &TestMerchant, order_id: &str) -> String {
    let signature = sha512_hex(&format!("{}|{order_id}|{}", merchant.client_id, merchant.client_secret));
    json!({ "clientId": merchant.client_id, "orderId": order_id, "signature": signature }).to_string()
}

fn ewallet_body(merchant: &TestMerchant, order_id: &str, amount: i64, code: &str) -> String {
    json!({
        "clientId": merchant.client_id,
        "orderId": order_id,
        "ewalletCode": code,
        "accountNumber": "0812-3456-7890",
        "requestAmount": amount,
    })
    .to_string()
}

const ORDER_FIELDS: [&str; 13] = [
    "refCode",
    "transactionTime",
    "orderId",
    "totalAmount",
    "customerName",
    "customerEmail",
    "customerPhone",
    "notifyUrl",
    "returnUrl",
    "status",
    "paidAt",
    "qrString",
    "virtualAccount",
];

const DISBURSEMENT_FIELDS: [&str; 10] = [
    "refCode",
    "orderId",
    "accountNumber",
    "accountName",
    "bank",
    "requestAmount",
    "disbursementFee",
    "disbursementAmount",
    "status",
    "requestAt",
];
