//! The Legacy API over HTTP against the real binary, with real RSA keys made
//! in the test: every endpoint under `/api/`, every reachable message of
//! `legacy::messages` with its HTTP status, exact field sets and formats,
//! signatures over raw bytes, and the checks across APIs.

mod support;

use base64::Engine as _;
use reqwest::{Method, StatusCode};
use rsa::pkcs1::EncodeRsaPublicKey;
use rsa::pkcs8::{EncodePublicKey, LineEnding};
use rsa::signature::{SignatureEncoding, Signer};
use rsa::RsaPrivateKey;
use serde_json::{json, Value};
use sha2::{Digest, Sha256, Sha512};
use std::sync::OnceLock;
use support::*;

/// One 2048-bit key for the whole file: generating keys is slow.
fn private_key() -> &'static RsaPrivateKey {
    static KEY: OnceLock<RsaPrivateKey> = OnceLock::new();
    KEY.get_or_init(|| RsaPrivateKey::new(&mut rand::thread_rng(), 2048).expect("RSA key"))
}

fn spki_pem() -> String {
    private_key().to_public_key().to_public_key_pem(LineEnding::LF).unwrap()
}

fn sha512_hex(text: &str) -> String {
    hex::encode(Sha512::digest(text.as_bytes()))
}

/// `X-SIGNATURE` for `body`: base64 RSA-SHA256 over `clientId|clientSecret|sha256hex(body)`.
fn x_signature(merchant: &TestMerchant, body: &str) -> String {
    let message = format!(
        "{}|{}|{}",
        merchant.client_id,
        merchant.client_secret,
        hex::encode(Sha256::digest(body.as_bytes()))
    );
    let signer = rsa::pkcs1v15::SigningKey::<Sha256>::new(private_key().clone());
    base64::engine::general_purpose::STANDARD.encode(signer.sign(message.as_bytes()).to_bytes())
}

async fn post(server: &TestServer, path: &str, body: &str, signature: Option<&str>) -> Reply {
    let mut request = server
        .client
        .post(format!("{}{path}", server.base))
        .header("Content-Type", "application/json")
        .body(body.to_string());
    if let Some(signature) = signature {
        request = request.header("X-SIGNATURE", signature);
    }
    into_reply(request.send().await.unwrap()).await
}

/// A Legacy error: HTTP status equals `code`, exact message, `data: null`.
fn assert_legacy_error(reply: &Reply, status: u16, message: &str) {
    assert_eq!(reply.status.as_u16(), status, "{}", reply.body);
    assert_eq!(
        reply.body,
        json!({ "code": status, "message": message, "data": null }),
        "exact error body"
    );
}

fn assert_ok(reply: &Reply) -> &Value {
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["code"], json!(200));
    assert!(reply.body["message"].is_string());
    &reply.body["data"]
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

async fn merchant_with_key(server: &TestServer, funding: i64) -> TestMerchant {
    let merchant = server.create_wallet_merchant().await;
    let reply = server
        .admin(
            Method::PUT,
            &format!("/admin/v1/merchants/{}/public-key", merchant.id),
            Some(json!({ "pem": spki_pem() })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    if funding > 0 {
        server.credit(&merchant.id, funding).await;
    }
    merchant
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

#[tokio::test]
async fn order_create_and_query_in_legacy_shape() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let created = post(
        &server,
        "/api/order/create",
        &order_body(&merchant, "ORD-001", 50000, "QRIS"),
        None,
    )
    .await;
    let order = assert_ok(&created).clone();
    assert_eq!(sorted_keys(&order), strings(&ORDER_FIELDS));
    assert!(order["refCode"].as_str().unwrap().starts_with("ORD-"));
    assert!(is_wib(&order["transactionTime"]), "{}", order["transactionTime"]);
    assert_eq!(order["orderId"], json!("ORD-001"));
    assert_eq!(order["totalAmount"], json!(50000));
    assert_eq!(order["customerName"], json!("Budi"));
    assert_eq!(order["customerEmail"], Value::Null);
    assert_eq!(order["customerPhone"], json!("6281234567890"));
    assert_eq!(order["notifyUrl"], json!("https://merchant.example/notify"));
    assert_eq!(order["returnUrl"], Value::Null);
    assert_eq!(order["status"], json!("PENDING"));
    assert_eq!(order["paidAt"], Value::Null);
    assert!(order["qrString"].as_str().unwrap().starts_with("000201010212"));
    assert_eq!(order["virtualAccount"], Value::Null);

    // Stored x100, one engine: V1 sees the same order in minor units.
    let ref_code = order["refCode"].as_str().unwrap();
    let v1 = server
        .call(
            Method::GET,
            &format!("/v1/orders/{ref_code}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(v1.body["data"]["amount_minor"], json!(5_000_000));

    // Resubmitting returns the existing order, current status included.
    let paid = server
        .call(
            Method::POST,
            &format!("/v1/sandbox/orders/{ref_code}/pay"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(paid.status, StatusCode::OK);
    let again = post(
        &server,
        "/api/order/create",
        &order_body(&merchant, "ORD-001", 50000, "QRIS"),
        None,
    )
    .await;
    let again = assert_ok(&again);
    assert_eq!(again["refCode"], order["refCode"]);
    assert_eq!(again["status"], json!("PAID"));
    assert!(is_wib(&again["paidAt"]));
    let list = server
        .call(Method::GET, "/v1/orders", Some(&merchant.api_key), None)
        .await;
    assert_eq!(list.body["meta"]["total"], json!(1), "no duplicate");
    // The same orderId describing another order is taken.
    let conflict = post(
        &server,
        "/api/order/create",
        &order_body(&merchant, "ORD-001", 60000, "QRIS"),
        None,
    )
    .await;
    assert_legacy_error(&conflict, 409, "Order ID already used");

    let queried = post(&server, "/api/order/query", &query_body(&merchant, "ORD-001"), None).await;
    let queried = assert_ok(&queried);
    assert_eq!(sorted_keys(queried), strings(&ORDER_FIELDS));
    assert_eq!(queried["status"], json!("PAID"));
    assert_eq!(queried["paidAt"], again["paidAt"]);
    assert_eq!(
        queried["qrString"],
        Value::Null,
        "a paid order's code is no longer shown"
    );
    let missing = post(&server, "/api/order/query", &query_body(&merchant, "ORD-404"), None).await;
    assert_legacy_error(&missing, 404, "Order ID not found");

    // Bank transfer: no QR, a virtual account.
    let va = post(
        &server,
        "/api/order/create",
        &order_body(&merchant, "ORD-VA", 75000, "BANK_TRANSFER"),
        None,
    )
    .await;
    let va = assert_ok(&va);
    assert_eq!(va["qrString"], Value::Null);
    assert_eq!(
        sorted_keys(&va["virtualAccount"]),
        strings(&["bankShortCode", "accountNumber"])
    );

    // Failed and expired show as FAILED.
    let va_ref = va["refCode"].as_str().unwrap();
    server
        .call(
            Method::POST,
            &format!("/v1/sandbox/orders/{va_ref}/expire"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    let expired = post(&server, "/api/order/query", &query_body(&merchant, "ORD-VA"), None).await;
    assert_eq!(assert_ok(&expired)["status"], json!("FAILED"));
}

#[tokio::test]
async fn order_errors_carry_the_exact_messages() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let good = order_body(&merchant, "E-1", 10000, "QRIS");

    let mut unknown: Value = serde_json::from_str(&good).unwrap();
    unknown["clientId"] = json!("nobody");
    assert_legacy_error(
        &post(&server, "/api/order/create", &unknown.to_string(), None).await,
        401,
        "Invalid Client ID",
    );

    let mut bad_signature: Value = serde_json::from_str(&good).unwrap();
    bad_signature["signature"] = json!(sha512_hex("something else"));
    assert_legacy_error(
        &post(&server, "/api/order/create", &bad_signature.to_string(), None).await,
        401,
        "Invalid Signature",
    );

    for missing in ["orderId", "totalAmount", "paymentType", "signature"] {
        let mut body: Value = serde_json::from_str(&good).unwrap();
        body.as_object_mut().unwrap().remove(missing);
        let reply = post(&server, "/api/order/create", &body.to_string(), None).await;
        assert_legacy_error(&reply, 400, "Invalid request parameters");
    }
    let mut text_amount: Value = serde_json::from_str(&good).unwrap();
    text_amount["totalAmount"] = json!("10000");
    assert_legacy_error(
        &post(&server, "/api/order/create", &text_amount.to_string(), None).await,
        400,
        "Invalid request parameters",
    );
    let bad_type = order_body(&merchant, "E-2", 10000, "CASH");
    assert_legacy_error(
        &post(&server, "/api/order/create", &bad_type, None).await,
        400,
        "Invalid request parameters",
    );
    let zero = order_body(&merchant, "E-3", 0, "QRIS");
    assert_legacy_error(
        &post(&server, "/api/order/create", &zero, None).await,
        400,
        "Invalid request parameters",
    );
    assert_legacy_error(
        &post(&server, "/api/order/create", "{oops", None).await,
        400,
        "Invalid request parameters",
    );
    let mut bad_query: Value = serde_json::from_str(&query_body(&merchant, "E-1")).unwrap();
    bad_query["signature"] = json!("00");
    assert_legacy_error(
        &post(&server, "/api/order/query", &bad_query.to_string(), None).await,
        401,
        "Invalid Signature",
    );

    // No gateway for the payment type: the organization routes to none.
    let organization = "00000000-0000-4000-8000-000000000001";
    let routed = server
        .admin(
            Method::PUT,
            &format!("/admin/v1/organizations/{organization}/vendors/BANK_TRANSFER"),
            Some(json!({ "vendors": [] })),
        )
        .await;
    assert_eq!(routed.status, StatusCode::OK);
    let no_gateway = order_body(&merchant, "E-4", 10000, "BANK_TRANSFER");
    assert_legacy_error(
        &post(&server, "/api/order/create", &no_gateway, None).await,
        422,
        "Merchant setting is not Valid",
    );

    // Inactive merchants are unknown to Legacy clients.
    server
        .admin(
            Method::PATCH,
            &format!("/admin/v1/merchants/{}", merchant.id),
            Some(json!({ "is_active": false })),
        )
        .await;
    assert_legacy_error(
        &post(&server, "/api/order/create", &good, None).await,
        401,
        "Invalid Client ID",
    );
    let list = server
        .call(Method::GET, "/v1/orders", Some(&merchant.api_key), None)
        .await;
    assert_eq!(list.status.as_u16(), 403);
}

#[tokio::test]
async fn one_id_string_in_both_apis_makes_two_orders() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let legacy = post(
        &server,
        "/api/order/create",
        &order_body(&merchant, "SHARED-1", 10000, "QRIS"),
        None,
    )
    .await;
    let legacy_ref = assert_ok(&legacy)["refCode"].clone();
    let v1 = server
        .call(
            Method::POST,
            "/v1/orders",
            Some(&merchant.api_key),
            Some(json!({ "merchant_order_id": "SHARED-1", "amount_minor": 999_900, "payment_method": "QRIS" })),
        )
        .await;
    assert_eq!(v1.status, StatusCode::CREATED, "{}", v1.body);
    assert_ne!(v1.body["data"]["ref_code"], legacy_ref);
    let queried = post(&server, "/api/order/query", &query_body(&merchant, "SHARED-1"), None).await;
    assert_eq!(assert_ok(&queried)["refCode"], legacy_ref);
    assert_eq!(assert_ok(&queried)["totalAmount"], json!(10000));
}

fn bank_body(merchant: &TestMerchant, order_id: &str, amount: i64, bank: &str) -> String {
    json!({
        "clientId": merchant.client_id,
        "orderId": order_id,
        "bankCode": bank,
        "accountNumber": "1234567890",
        "accountName": "Budi Santoso",
        "requestAmount": amount,
    })
    .to_string()
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

#[tokio::test]
async fn bank_disbursement_debits_the_wallet_v1_sees() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = merchant_with_key(&server, 100_000_000).await;
    let body = bank_body(&merchant, "DSB-001", 50000, "BCA");
    let created = post(
        &server,
        "/api/disbursement/create",
        &body,
        Some(&x_signature(&merchant, &body)),
    )
    .await;
    let data = assert_ok(&created).clone();
    assert_eq!(sorted_keys(&data), strings(&DISBURSEMENT_FIELDS));
    let ref_code = data["refCode"].as_str().unwrap();
    assert!(ref_code.starts_with("DSB-") && ref_code.len() == 21, "{ref_code}");
    assert_eq!(data["orderId"], json!("DSB-001"));
    assert_eq!(data["accountNumber"], json!("1234567890"));
    assert_eq!(data["accountName"], json!("Budi Santoso"));
    assert_eq!(data["bank"], json!({ "name": "Bank Central Asia", "code": "BCA" }));
    assert_eq!(data["requestAmount"], json!("50000.00"));
    assert_eq!(data["disbursementFee"], json!("2500.00"));
    assert_eq!(data["disbursementAmount"], json!("52500.00"));
    assert_eq!(data["status"], json!("PENDING"));
    assert!(is_wib(&data["requestAt"]));
    // The same wallet as V1.
    assert_eq!(server.balance(&merchant.api_key).await, 100_000_000 - 5_250_000);

    // Resubmitted: the same one, nothing debited.
    let again = post(
        &server,
        "/api/disbursement/create",
        &body,
        Some(&x_signature(&merchant, &body)),
    )
    .await;
    assert_eq!(assert_ok(&again)["refCode"], data["refCode"]);
    assert_eq!(server.balance(&merchant.api_key).await, 100_000_000 - 5_250_000);
    let other = bank_body(&merchant, "DSB-001", 60000, "BCA");
    let conflict = post(
        &server,
        "/api/disbursement/create",
        &other,
        Some(&x_signature(&merchant, &other)),
    )
    .await;
    assert_legacy_error(&conflict, 409, "Order ID already used");

    // Query, and the balance through Legacy.
    let query = json!({ "clientId": merchant.client_id, "orderId": "DSB-001" }).to_string();
    let queried = post(
        &server,
        "/api/disbursement/query",
        &query,
        Some(&x_signature(&merchant, &query)),
    )
    .await;
    let queried = assert_ok(&queried);
    assert_eq!(sorted_keys(queried), strings(&DISBURSEMENT_FIELDS));
    assert_eq!(queried["refCode"], data["refCode"]);
    assert!(matches!(queried["status"].as_str(), Some("PENDING" | "ON_PROCESS")));
    let missing = json!({ "clientId": merchant.client_id, "orderId": "nope" }).to_string();
    let reply = post(
        &server,
        "/api/disbursement/query",
        &missing,
        Some(&x_signature(&merchant, &missing)),
    )
    .await;
    assert_legacy_error(&reply, 404, "Order ID not found");
    let balance_body = json!({ "clientId": merchant.client_id }).to_string();
    let balance = post(
        &server,
        "/api/disbursement/get-balance",
        &balance_body,
        Some(&x_signature(&merchant, &balance_body)),
    )
    .await;
    assert_eq!(
        assert_ok(&balance),
        &json!({ "clientId": merchant.client_id, "balance": "947500.00" })
    );
    assert_eq!(keys_in_order(assert_ok(&balance)), ordered(&["clientId", "balance"]));
    let v1 = server
        .call(
            Method::GET,
            &format!("/v1/disbursements/{ref_code}"),
            Some(&merchant.api_key),
            None,
        )
        .await;
    assert_eq!(v1.body["data"]["source"], json!("LEGACY"));
}

#[tokio::test]
async fn x_signature_is_over_the_raw_bytes() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = merchant_with_key(&server, 100_000_000).await;
    // Odd key order and whitespace, signed over exactly these bytes: accepted.
    let raw = format!(
        "{{ \"requestAmount\" : 15000,\n  \"accountName\":\"Sari\", \"orderId\": \"RAW-1\",\"bankCode\":\"BNI\",\t\"accountNumber\":\"5556667778\", \"clientId\": \"{}\" }}",
        merchant.client_id
    );
    let accepted = post(
        &server,
        "/api/disbursement/create",
        &raw,
        Some(&x_signature(&merchant, &raw)),
    )
    .await;
    assert_eq!(assert_ok(&accepted)["requestAmount"], json!("15000.00"));
    // Signed over the re-serialized JSON instead of the bytes sent: refused.
    let raw2 = raw.replace("RAW-1", "RAW-2");
    let reserialized = serde_json::to_string(&serde_json::from_str::<Value>(&raw2).unwrap()).unwrap();
    assert_ne!(reserialized, raw2);
    let refused = post(
        &server,
        "/api/disbursement/create",
        &raw2,
        Some(&x_signature(&merchant, &reserialized)),
    )
    .await;
    assert_legacy_error(&refused, 401, "Invalid X-SIGNATURE");
    let unsigned = post(&server, "/api/disbursement/create", &raw2, None).await;
    assert_legacy_error(&unsigned, 401, "Invalid X-SIGNATURE");
    let garbage = post(&server, "/api/disbursement/create", &raw2, Some("bm90IGEgc2lnbmF0dXJl")).await;
    assert_legacy_error(&garbage, 401, "Invalid X-SIGNATURE");
    assert_eq!(
        server.balance(&merchant.api_key).await,
        100_000_000 - 1_500_000 - 250_000
    );

    // A PKCS#1 PEM of the same key verifies the same way.
    let pkcs1 = private_key().to_public_key().to_pkcs1_pem(LineEnding::LF).unwrap();
    let reply = server
        .admin(
            Method::PUT,
            &format!("/admin/v1/merchants/{}/public-key", merchant.id),
            Some(json!({ "pem": pkcs1 })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let body = bank_body(&merchant, "PKCS1-1", 10000, "BRI");
    assert_ok(
        &post(
            &server,
            "/api/disbursement/create",
            &body,
            Some(&x_signature(&merchant, &body)),
        )
        .await,
    );

    // Parsed keys are kept, by their PEM: once the merchant's key changes,
    // signatures of the old one are refused at once.
    let other = RsaPrivateKey::new(&mut rand::thread_rng(), 2048).unwrap();
    let pem = other.to_public_key().to_pkcs1_pem(LineEnding::LF).unwrap();
    let reply = server
        .admin(
            Method::PUT,
            &format!("/admin/v1/merchants/{}/public-key", merchant.id),
            Some(json!({ "pem": pem })),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let body = bank_body(&merchant, "OLD-KEY-1", 10000, "BRI");
    let refused = post(
        &server,
        "/api/disbursement/create",
        &body,
        Some(&x_signature(&merchant, &body)),
    )
    .await;
    assert_legacy_error(&refused, 401, "Invalid X-SIGNATURE");
}

#[tokio::test]
async fn disbursement_errors_carry_the_exact_messages_and_change_nothing() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let no_key = server.create_wallet_merchant().await;
    let body = bank_body(&no_key, "K-1", 10000, "BCA");
    assert_legacy_error(
        &post(
            &server,
            "/api/disbursement/create",
            &body,
            Some(&x_signature(&no_key, &body)),
        )
        .await,
        422,
        "Public Key is not set",
    );

    let merchant = merchant_with_key(&server, 1_000_000).await;
    let funded = server.balance(&merchant.api_key).await;
    let send = |path: &'static str, body: String| {
        let signature = x_signature(&merchant, &body);
        let server = &server;
        async move { post(server, path, &body, Some(&signature)).await }
    };
    let mut unknown: Value = serde_json::from_str(&bank_body(&merchant, "K-2", 10000, "BCA")).unwrap();
    unknown["clientId"] = json!("nobody");
    assert_legacy_error(
        &send("/api/disbursement/create", unknown.to_string()).await,
        401,
        "Invalid Client ID",
    );
    assert_legacy_error(
        &send("/api/disbursement/create", bank_body(&merchant, "K-3", 10000, "NOPE")).await,
        422,
        "Bank Cannot be used for Disbursement",
    );
    server
        .admin(
            Method::PUT,
            "/admin/v1/banks/PANIN",
            Some(json!({ "is_enabled": false })),
        )
        .await;
    assert_legacy_error(
        &send("/api/disbursement/create", bank_body(&merchant, "K-4", 10000, "PANIN")).await,
        422,
        "Bank Cannot be used for Disbursement",
    );
    let mut no_name: Value = serde_json::from_str(&bank_body(&merchant, "K-5", 10000, "BCA")).unwrap();
    no_name.as_object_mut().unwrap().remove("accountName");
    assert_legacy_error(
        &send("/api/disbursement/create", no_name.to_string()).await,
        400,
        "Invalid request parameters",
    );
    // 1,000,000 minor = IDR 10,000 funds; IDR 8,000 + 2,500 fee does not fit.
    assert_legacy_error(
        &send("/api/disbursement/create", bank_body(&merchant, "K-6", 8000, "BCA")).await,
        422,
        "Insufficient Balance",
    );
    // Default per-transaction limit: IDR 50,000,000.
    assert_legacy_error(
        &send(
            "/api/disbursement/create",
            bank_body(&merchant, "K-7", 50_000_001, "BCA"),
        )
        .await,
        422,
        "Maximum Request Amount Exceeded",
    );
    assert_legacy_error(
        &send(
            "/api/disbursement/create-ewallet",
            ewallet_body(&merchant, "K-8", 20000, "PAYPAL"),
        )
        .await,
        400,
        "Invalid ewalletCode",
    );
    assert_legacy_error(
        &send(
            "/api/disbursement/create-ewallet",
            ewallet_body(&merchant, "K-9", 19999, "DANA"),
        )
        .await,
        422,
        "Minimum requestAmount for DANA is 20000",
    );
    assert_eq!(
        server.balance(&merchant.api_key).await,
        funded,
        "refusals change nothing"
    );

    // The daily limit, with a merchant whose day allows IDR 30,000.
    let limited = server
        .create_merchant_with("WALLET", json!({ "limits": { "daily_minor": 3_000_000 } }))
        .await;
    server
        .admin(
            Method::PUT,
            &format!("/admin/v1/merchants/{}/public-key", limited.id),
            Some(json!({ "pem": spki_pem() })),
        )
        .await;
    server.credit(&limited.id, 100_000_000).await;
    let first = bank_body(&limited, "D-1", 20000, "BCA");
    assert_ok(
        &post(
            &server,
            "/api/disbursement/create",
            &first,
            Some(&x_signature(&limited, &first)),
        )
        .await,
    );
    let second = bank_body(&limited, "D-2", 20000, "BCA");
    let reply = post(
        &server,
        "/api/disbursement/create",
        &second,
        Some(&x_signature(&limited, &second)),
    )
    .await;
    assert_legacy_error(&reply, 422, "Daily Limit Exceeded");

    // MANUAL merchants have no wallet to pay out of.
    let manual = server.create_merchant_with("MANUAL", json!({})).await;
    server
        .admin(
            Method::PUT,
            &format!("/admin/v1/merchants/{}/public-key", manual.id),
            Some(json!({ "pem": spki_pem() })),
        )
        .await;
    let body = bank_body(&manual, "M-1", 10000, "BCA");
    let reply = post(
        &server,
        "/api/disbursement/create",
        &body,
        Some(&x_signature(&manual, &body)),
    )
    .await;
    assert_legacy_error(&reply, 422, "Merchant setting is not Valid");
}

#[tokio::test]
async fn ewallet_disbursement_has_no_bank_and_a_normalized_phone() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = merchant_with_key(&server, 10_000_000).await;
    let body = ewallet_body(&merchant, "EW-1", 20000, "DANA");
    let created = post(
        &server,
        "/api/disbursement/create-ewallet",
        &body,
        Some(&x_signature(&merchant, &body)),
    )
    .await;
    let data = assert_ok(&created);
    assert_eq!(sorted_keys(data), strings(&DISBURSEMENT_FIELDS));
    assert_eq!(data["bank"], Value::Null);
    assert_eq!(data["accountName"], Value::Null);
    assert_eq!(data["accountNumber"], json!("6281234567890"));
    assert_eq!(data["requestAmount"], json!("20000.00"));
    assert_eq!(data["disbursementFee"], json!("0.00"));
    assert_eq!(data["disbursementAmount"], json!("20000.00"));
    assert_eq!(server.balance(&merchant.api_key).await, 10_000_000 - 2_000_000);
    // The same orderId through the bank endpoint is another disbursement: taken.
    let bank = bank_body(&merchant, "EW-1", 20000, "BCA");
    let reply = post(
        &server,
        "/api/disbursement/create",
        &bank,
        Some(&x_signature(&merchant, &bank)),
    )
    .await;
    assert_legacy_error(&reply, 409, "Order ID already used");
}

#[tokio::test]
async fn legacy_envelopes_for_unknown_routes_and_large_bodies() {
    let server = TestServer::start();
    let missing = post(&server, "/api/order/unknown", "{}", None).await;
    assert_legacy_error(&missing, 404, "Not Found");
    let wrong_method = into_reply(
        server
            .client
            .get(format!("{}/api/order/create", server.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_legacy_error(&wrong_method, 405, "Method Not Allowed");
    let huge = format!("{{\"clientId\":\"{}\"}}", "x".repeat(70 * 1024));
    let reply = post(&server, "/api/order/create", &huge, None).await;
    assert_legacy_error(&reply, 413, "Request body too large");

    // Byte for byte: the keys in the order of success bodies (code, message, data).
    let raw = server
        .client
        .post(format!("{}/api/order/unknown", server.base))
        .body("{}")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(raw, r#"{"code":404,"message":"Not Found","data":null}"#);
}

/// A webhook receiver on loopback: keeps every body it is sent.
async fn start_receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::routing::post;
    let received: std::sync::Arc<std::sync::Mutex<Vec<Value>>> = Default::default();
    let store = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(move |body: axum::body::Bytes| {
            let store = store.clone();
            async move {
                store
                    .lock()
                    .unwrap()
                    .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{address}/hook"), received)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_disbursement_webhooks_carry_a_valid_signature() {
    let (url, received) = start_receiver().await;
    let server = TestServer::start_with(&[
        "--sandbox-disbursement-delay-ms",
        "200",
        "--webhook-retry-scale",
        "0.001",
    ]);
    let merchant = merchant_with_key(&server, 10_000_000).await;
    let body = json!({
        "clientId": merchant.client_id, "orderId": "WH-DSB-1", "bankCode": "BCA",
        "accountNumber": "1234567890", "accountName": "Budi", "requestAmount": 25000, "notifyUrl": url,
    })
    .to_string();
    let created = post(
        &server,
        "/api/disbursement/create",
        &body,
        Some(&x_signature(&merchant, &body)),
    )
    .await;
    assert_ok(&created);
    let mut bodies = Vec::new();
    for _ in 0..250 {
        bodies = received.lock().unwrap().clone();
        if bodies.len() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(bodies.len(), 2, "ON_PROCESS then SUCCESS");
    let expected = sha512_hex(&format!(
        "{}|WH-DSB-1|25000|{}",
        merchant.client_id, merchant.client_secret
    ));
    for body in &bodies {
        assert_eq!(body["orderId"], json!("WH-DSB-1"));
        assert_eq!(body["requestAmount"], json!("25000.00"));
        assert_eq!(body["signature"], json!(expected));
    }
    assert_eq!(bodies[1]["status"], json!("SUCCESS"));
    // `bank` is `{name, code}` in that order, as in the create and query answers.
    assert_eq!(keys_in_order(&bodies[1]["bank"]), ordered(&["name", "code"]));
}
