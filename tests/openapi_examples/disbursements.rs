//! The tour's catalog, beneficiaries, disbursements, batches and balance
//! history.

use super::*;

pub(super) async fn tour_disbursements(server: &TestServer, tour: &mut Tour, merchant: &TestMerchant) {
    let key = Some(merchant.api_key.as_str());
    // Catalog, beneficiaries, disbursements, batches.
    tour.get(server, "list_banks", "/v1/banks", key).await;
    tour.get(server, "list_ewallets", "/v1/ewallets", key).await;
    let beneficiary = tour.post(server, "create_beneficiary", "/v1/beneficiaries", key, Some(json!({ "channel": "BANK", "label": "Supplier", "bank_short_code": "BCA", "account_number": "1234567890", "account_name": "PT Sumber Makmur" }))).await;
    tour.post(
        server,
        "create_beneficiary",
        "/v1/beneficiaries",
        key,
        Some(json!({ "channel": "BANK", "bank_short_code": "BCA" })),
    )
    .await;
    tour.get(server, "list_beneficiaries", "/v1/beneficiaries", key).await;
    let disbursement_body = json!({
        "idempotency_key": "payout-1",
        "channel": "BANK",
        "bank_short_code": "BCA",
        "account_number": "1234567890",
        "account_name": "PT Sumber Makmur",
        "amount_minor": 1_500_000
    });
    let disbursement = tour
        .post(
            server,
            "create_disbursement",
            "/v1/disbursements",
            key,
            Some(disbursement_body.clone()),
        )
        .await;
    tour.post(
        server,
        "create_disbursement",
        "/v1/disbursements",
        key,
        Some(disbursement_body),
    )
    .await;
    tour.post(server, "create_disbursement", "/v1/disbursements", key, Some(json!({ "idempotency_key": "payout-2", "channel": "BANK", "bank_short_code": "BCA", "account_number": "1234567890", "account_name": "PT Sumber Makmur", "amount_minor": 9_000_000_000i64 }))).await;
    let disbursement_id = disbursement["data"]["id"].as_str().unwrap().to_string();
    tour.get(
        server,
        "get_disbursement",
        &format!("/v1/disbursements/{disbursement_id}"),
        key,
    )
    .await;
    tour.post(
        server,
        "complete_disbursement",
        &format!("/v1/sandbox/disbursements/{disbursement_id}/complete"),
        key,
        Some(json!({ "status": "SUCCESS" })),
    )
    .await;
    tour.get(server, "list_disbursements", "/v1/disbursements?limit=5", key)
        .await;
    let beneficiary_id = beneficiary["data"]["id"].as_str().unwrap().to_string();
    let batch = tour.post(server, "create_disbursement_batch", "/v1/disbursements/batch", key, Some(json!({ "idempotency_key": "batch-1", "items": [ { "idempotency_key": "batch-1-a", "beneficiary_id": beneficiary_id, "amount_minor": 2_000_000 }, { "idempotency_key": "batch-1-b", "channel": "EWALLET", "ewallet_provider": "DANA", "ewallet_phone": "081234567890", "amount_minor": 5_000_000 }, { "idempotency_key": "batch-1-c", "channel": "BANK", "bank_short_code": "NOPE", "account_number": "1", "account_name": "X", "amount_minor": 1_000_000 } ] }))).await;
    let batch_id = batch["data"]["id"].as_str().unwrap().to_string();
    tour.get(
        server,
        "get_disbursement_batch",
        &format!("/v1/disbursements/batch/{batch_id}"),
        key,
    )
    .await;
    tour.keep(
        "delete_beneficiary",
        &server
            .call(
                Method::DELETE,
                &format!("/v1/beneficiaries/{beneficiary_id}"),
                key,
                None,
            )
            .await,
    );
    tour.keep(
        "delete_beneficiary",
        &server
            .call(Method::DELETE, "/v1/beneficiaries/not-a-uuid", key, None)
            .await,
    );
    tour.get(server, "get_balance", "/v1/balance", key).await;
    tour.get(server, "balance_history", "/v1/balance/history?limit=5", key)
        .await;
    tour.get(server, "balance_history", "/v1/balance/history?type=NOPE", key)
        .await;
}
