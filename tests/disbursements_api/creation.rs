//! Accepted creations: the response's fields, the debit, the stored record,
//! e-wallet phone normalization, and the idempotency key's replay.

use super::*;

#[tokio::test]
async fn bank_disbursement_is_201_pending_with_exactly_the_spec_fields_and_debits_request_plus_fee() {
    let funding = 10_000_000;
    let (server, merchant) = funded_server(SLOW, funding).await;
    let bca = bank_id(&server, &merchant, "BCA").await;

    let reply = create(&server, &merchant, bank_body("dsb-bank-1", 1_000_000)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(sorted_keys(&reply.body), strings(&["data", "success"]));
    assert_eq!(reply.body["success"], json!(true));
    let data = &reply.body["data"];
    assert_eq!(sorted_keys(data), strings(&FIELDS));
    assert!(is_uuid(&data["id"]), "{data}");
    assert_eq!(data["idempotency_key"], json!("dsb-bank-1"));
    assert_eq!(data["channel"], json!("BANK"));
    assert_eq!(data["bank_id"], bca);
    assert_eq!(data["account_number"], json!("1234567890"));
    assert_eq!(data["account_name"], json!("Budi Santoso"));
    assert_eq!(data["ewallet_provider"], Value::Null);
    assert_eq!(data["ewallet_phone"], Value::Null);
    assert_eq!(data["request_amount_minor"], json!(1_000_000));
    assert_eq!(data["fee_minor"], json!(BANK_FEE));
    assert_eq!(data["final_amount_minor"], json!(1_000_000 + BANK_FEE));
    assert_eq!(data["vendor_disbursement_id"], Value::Null);
    assert_eq!(data["source"], json!("API"));
    assert_eq!(data["status"], json!("PENDING"));
    assert_timestamp(&data["requested_at"]);
    assert_timestamp(&data["created_at"]);
    assert_ref_code(&data["ref_code"], &data["created_at"]);

    assert_eq!(
        server.balance(&merchant.api_key).await,
        funding - 1_000_000 - BANK_FEE,
        "the wallet is debited by final_amount_minor"
    );

    // The stored record is the same disbursement, handed to the vendor.
    let id = data["id"].as_str().unwrap();
    let stored = wait_for(&server, &merchant, id, "ON_PROCESS").await;
    assert_eq!(sorted_keys(&stored), strings(&FIELDS));
    assert_eq!(keys_in_order(&stored), ordered(&FIELDS), "the documented field order");
    assert!(
        stored["vendor_disbursement_id"].as_str().is_some_and(|v| !v.is_empty()),
        "{stored}"
    );
    for field in FIELDS {
        if !["status", "vendor_disbursement_id"].contains(&field) {
            assert_eq!(stored[field], data[field], "{field} changed");
        }
    }
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_000_000 - BANK_FEE);
    assert_ledger_clean(&server).await;
}

#[tokio::test]
async fn ewallet_disbursement_normalizes_the_phone_has_no_fee_and_omits_vendor_disbursement_id_at_creation() {
    let funding = 5_000_000;
    let (server, merchant) = funded_server(SLOW, funding).await;

    let reply = create(
        &server,
        &merchant,
        ewallet_body("dsb-ovo-1", "OVO", "0812-3456-7890", 1_500_000),
    )
    .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    let data = &reply.body["data"];
    let creation_fields: Vec<&str> = FIELDS
        .iter()
        .copied()
        .filter(|f| *f != "vendor_disbursement_id")
        .collect();
    assert_eq!(
        sorted_keys(data),
        strings(&creation_fields),
        "vendor_disbursement_id is absent from the e-wallet creation response"
    );
    assert!(is_uuid(&data["id"]), "{data}");
    assert_eq!(data["channel"], json!("EWALLET"));
    assert_eq!(data["ewallet_provider"], json!("OVO"));
    assert_eq!(data["ewallet_phone"], json!("6281234567890"));
    assert_eq!(data["bank_id"], Value::Null);
    assert_eq!(data["account_number"], Value::Null);
    assert_eq!(data["account_name"], Value::Null);
    assert_eq!(data["request_amount_minor"], json!(1_500_000));
    assert_eq!(data["fee_minor"], json!(0));
    assert_eq!(data["final_amount_minor"], json!(1_500_000));
    assert_eq!(data["source"], json!("API"));
    assert_eq!(data["status"], json!("PENDING"));
    assert_eq!(data["idempotency_key"], json!("dsb-ovo-1"));
    assert_ref_code(&data["ref_code"], &data["created_at"]);
    assert_timestamp(&data["requested_at"]);
    assert_eq!(server.balance(&merchant.api_key).await, funding - 1_500_000);

    // The single-record response has the field.
    let stored = fetch(&server, &merchant, data["id"].as_str().unwrap()).await;
    assert_eq!(sorted_keys(&stored), strings(&FIELDS));
    assert_eq!(stored["ewallet_phone"], json!("6281234567890"));
}

#[tokio::test]
async fn ewallet_phones_are_11_to_14_digits_after_normalization() {
    let (server, merchant) = funded_server(SLOW, 5_000_000).await;
    // Valid once normalized: ^628[1-35-9][0-9]{7,10}$.
    for (key, phone, stored) in [
        ("p-11", "62812345678", "62812345678"),
        ("p-11-local", "0812345678", "62812345678"),
        ("p-14", "62812345678901", "62812345678901"),
    ] {
        let data = create_ok(&server, &merchant, ewallet_body(key, "OVO", phone, 100_000)).await;
        assert_eq!(data["ewallet_phone"], json!(stored), "{phone}");
    }
    for (key, phone) in [
        ("p-10", "6281234567"),
        ("p-15", "628123456789012"),
        ("p-15-local", "08123456789012"),
    ] {
        let body = ewallet_body(key, "OVO", phone, 100_000);
        assert_invalid_body(&server, &merchant, body, "ewallet_phone").await;
    }
}

#[tokio::test]
async fn manual_merchant_disbursement_is_403_not_wallet_merchant_and_moves_nothing() {
    let server = TestServer::start_with(SLOW);
    let merchant = server.create_merchant_with("MANUAL", json!({})).await;
    let entries_before = entries(&server).await;
    for body in [
        bank_body("manual-1", 1_000_000),
        ewallet_body("manual-2", "OVO", "081234567890", 1_000_000),
    ] {
        let reply = create(&server, &merchant, body).await;
        assert_v1_error(&reply, 403, "NOT_WALLET_MERCHANT");
    }
    let reply = server.get("/v1/balance", &merchant.api_key).await;
    assert_v1_error(&reply, 403, "NOT_WALLET_MERCHANT");
    assert_eq!(count(&server, &merchant).await, 0);
    assert_eq!(entries(&server).await, entries_before);
}

#[tokio::test]
async fn repeated_idempotency_key_is_409_with_the_existing_disbursement_and_debits_once() {
    let funding = 10_000_000;
    let (server, merchant) = funded_server(SLOW, funding).await;
    let first = create_ok(&server, &merchant, bank_body("dup-1", 1_000_000)).await;
    let id = first["id"].as_str().unwrap();
    let debited = funding - 1_000_000 - BANK_FEE;
    assert_eq!(server.balance(&merchant.api_key).await, debited);
    let stored = wait_for(&server, &merchant, id, "ON_PROCESS").await;

    // Same body, then another amount and channel under the same key.
    for body in [
        bank_body("dup-1", 1_000_000),
        bank_body("dup-1", 2_000_000),
        ewallet_body("dup-1", "OVO", "081234567890", 5_000),
    ] {
        let reply = assert_refused(&server, &merchant, body, 409, "DUPLICATE_IDEMPOTENCY_KEY").await;
        let data = &reply.body["data"];
        assert_eq!(data["id"], json!(id), "{}", reply.body);
        assert_eq!(data, &stored, "the 409 carries the existing disbursement");
    }
    assert_eq!(server.balance(&merchant.api_key).await, debited);
    assert_eq!(count(&server, &merchant).await, 1);
    assert_ledger_clean(&server).await;
}
