//! `/api/disbursement/*`: bank and e-wallet payouts out of the wallet V1
//! sees, the balance, and every refusal with its exact message.

use super::*;

#[tokio::test]
async fn bank_disbursement_debits_the_wallet_v1_sees() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = merchant_with_key(&server, 100_000_000).await;
    let body = bank_body(&merchant, "DSB-001", 50000, "BCA");
    let created = signed_post(&server, "/api/disbursement/create", &merchant, &body).await;
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
    let again = signed_post(&server, "/api/disbursement/create", &merchant, &body).await;
    assert_eq!(assert_ok(&again)["refCode"], data["refCode"]);
    assert_eq!(server.balance(&merchant.api_key).await, 100_000_000 - 5_250_000);
    let other = bank_body(&merchant, "DSB-001", 60000, "BCA");
    let conflict = signed_post(&server, "/api/disbursement/create", &merchant, &other).await;
    assert_legacy_error(&conflict, 409, "Order ID already used");

    // Query, and the balance through Legacy.
    let query = json!({ "clientId": merchant.client_id, "orderId": "DSB-001" }).to_string();
    let queried = signed_post(&server, "/api/disbursement/query", &merchant, &query).await;
    let queried = assert_ok(&queried);
    assert_eq!(sorted_keys(queried), strings(&DISBURSEMENT_FIELDS));
    assert_eq!(queried["refCode"], data["refCode"]);
    assert!(matches!(queried["status"].as_str(), Some("PENDING" | "ON_PROCESS")));
    let missing = json!({ "clientId": merchant.client_id, "orderId": "nope" }).to_string();
    let reply = signed_post(&server, "/api/disbursement/query", &merchant, &missing).await;
    assert_legacy_error(&reply, 404, "Order ID not found");
    let balance_body = json!({ "clientId": merchant.client_id }).to_string();
    let balance = signed_post(&server, "/api/disbursement/get-balance", &merchant, &balance_body).await;
    assert_eq!(
        assert_ok(&balance),
        &json!({ "clientId": merchant.client_id, "balance": "947500.00" })
    );
    assert_eq!(keys_in_order(assert_ok(&balance)), ordered(&["clientId", "balance"]));
    let v1 = server
        .get(&format!("/v1/disbursements/{ref_code}"), &merchant.api_key)
        .await;
    assert_eq!(v1.body["data"]["source"], json!("LEGACY"));
}

/// Signed disbursement requests the merchant's settings refuse (PANIN
/// disabled first), in the order they are sent.
fn disbursement_refusals(merchant: &TestMerchant) -> Vec<LegacyRefusal> {
    const BANK: &str = "/api/disbursement/create";
    const EWALLET: &str = "/api/disbursement/create-ewallet";
    let mut unknown: Value = serde_json::from_str(&bank_body(merchant, "K-2", 10000, "BCA")).unwrap();
    unknown["clientId"] = json!("nobody");
    let mut no_name: Value = serde_json::from_str(&bank_body(merchant, "K-5", 10000, "BCA")).unwrap();
    no_name.as_object_mut().unwrap().remove("accountName");
    vec![
        refusal("unknown clientId", BANK, unknown.to_string(), 401, "Invalid Client ID"),
        refusal(
            "unknown bank NOPE",
            BANK,
            bank_body(merchant, "K-3", 10000, "NOPE"),
            422,
            "Bank Cannot be used for Disbursement",
        ),
        refusal(
            "disabled bank PANIN",
            BANK,
            bank_body(merchant, "K-4", 10000, "PANIN"),
            422,
            "Bank Cannot be used for Disbursement",
        ),
        refusal(
            "no accountName",
            BANK,
            no_name.to_string(),
            400,
            "Invalid request parameters",
        ),
        // 1,000,000 minor = IDR 10,000 funds; IDR 8,000 + 2,500 fee does not fit.
        refusal(
            "IDR 8,000 plus fee over IDR 10,000 funds",
            BANK,
            bank_body(merchant, "K-6", 8000, "BCA"),
            422,
            "Insufficient Balance",
        ),
        // Default per-transaction limit: IDR 50,000,000.
        refusal(
            "over the default per-transaction limit",
            BANK,
            bank_body(merchant, "K-7", 50_000_001, "BCA"),
            422,
            "Maximum Request Amount Exceeded",
        ),
        refusal(
            "unknown ewalletCode PAYPAL",
            EWALLET,
            ewallet_body(merchant, "K-8", 20000, "PAYPAL"),
            400,
            "Invalid ewalletCode",
        ),
        refusal(
            "DANA under IDR 20,000",
            EWALLET,
            ewallet_body(merchant, "K-9", 19999, "DANA"),
            422,
            "Minimum requestAmount for DANA is 20000",
        ),
    ]
}

#[tokio::test]
async fn disbursement_errors_carry_the_exact_messages_and_change_nothing() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let no_key = server.create_wallet_merchant().await;
    let body = bank_body(&no_key, "K-1", 10000, "BCA");
    assert_legacy_error(
        &signed_post(&server, "/api/disbursement/create", &no_key, &body).await,
        422,
        "Public Key is not set",
    );

    let merchant = merchant_with_key(&server, 1_000_000).await;
    let funded = server.balance(&merchant.api_key).await;
    let reply = server.set_bank_enabled("PANIN", false).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    for row in disbursement_refusals(&merchant) {
        table::row(&row.name, async {
            let reply = signed_post(&server, row.path, &merchant, &row.body).await;
            assert_legacy_error(&reply, row.status, row.message);
        })
        .await;
    }
    assert_eq!(
        server.balance(&merchant.api_key).await,
        funded,
        "refusals change nothing"
    );

    // The daily limit, with a merchant whose day allows IDR 30,000.
    let limited = server
        .create_merchant_with("WALLET", json!({ "limits": { "daily_minor": 3_000_000 } }))
        .await;
    put_public_key(&server, &limited, &spki_pem()).await;
    server.credit(&limited.id, 100_000_000).await;
    let first = bank_body(&limited, "D-1", 20000, "BCA");
    assert_ok(&signed_post(&server, "/api/disbursement/create", &limited, &first).await);
    let second = bank_body(&limited, "D-2", 20000, "BCA");
    let reply = signed_post(&server, "/api/disbursement/create", &limited, &second).await;
    assert_legacy_error(&reply, 422, "Daily Limit Exceeded");

    // MANUAL merchants have no wallet to pay out of.
    let manual = server.create_merchant_with("MANUAL", json!({})).await;
    put_public_key(&server, &manual, &spki_pem()).await;
    let body = bank_body(&manual, "M-1", 10000, "BCA");
    let reply = signed_post(&server, "/api/disbursement/create", &manual, &body).await;
    assert_legacy_error(&reply, 422, "Merchant setting is not Valid");
}

#[tokio::test]
async fn ewallet_disbursement_has_no_bank_and_a_normalized_phone() {
    let server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = merchant_with_key(&server, 10_000_000).await;
    let body = ewallet_body(&merchant, "EW-1", 20000, "DANA");
    let created = signed_post(&server, "/api/disbursement/create-ewallet", &merchant, &body).await;
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
    let reply = signed_post(&server, "/api/disbursement/create", &merchant, &bank).await;
    assert_legacy_error(&reply, 409, "Order ID already used");
}
