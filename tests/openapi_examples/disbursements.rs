//! The tour's catalog, beneficiaries, disbursements, batches and balance
//! history.

use super::*;

pub(super) async fn tour_disbursements(server: &TestServer, tour: &mut Tour, merchant: &TestMerchant) {
    let key = Some(merchant.api_key.as_str());
    // Catalog, beneficiaries, disbursements, batches.
    tour.keep("list_banks", &server.call(Method::GET, "/v1/banks", key, None).await);
    tour.keep(
        "list_ewallets",
        &server.call(Method::GET, "/v1/ewallets", key, None).await,
    );
    let beneficiary = tour.keep(
        "create_beneficiary",
        &server
            .call(
                Method::POST,
                "/v1/beneficiaries",
                key,
                Some(json!({ "channel": "BANK", "label": "Supplier", "bank_short_code": "BCA", "account_number": "1234567890", "account_name": "PT Sumber Makmur" })),
            )
            .await,
    );
    tour.keep(
        "create_beneficiary",
        &server
            .call(
                Method::POST,
                "/v1/beneficiaries",
                key,
                Some(json!({ "channel": "BANK", "bank_short_code": "BCA" })),
            )
            .await,
    );
    tour.keep(
        "list_beneficiaries",
        &server.call(Method::GET, "/v1/beneficiaries", key, None).await,
    );
    let disbursement_body = json!({
        "idempotency_key": "payout-1",
        "channel": "BANK",
        "bank_short_code": "BCA",
        "account_number": "1234567890",
        "account_name": "PT Sumber Makmur",
        "amount_minor": 1_500_000
    });
    let disbursement = tour.keep(
        "create_disbursement",
        &server
            .call(Method::POST, "/v1/disbursements", key, Some(disbursement_body.clone()))
            .await,
    );
    tour.keep(
        "create_disbursement",
        &server
            .call(Method::POST, "/v1/disbursements", key, Some(disbursement_body))
            .await,
    );
    tour.keep(
        "create_disbursement",
        &server
            .call(
                Method::POST,
                "/v1/disbursements",
                key,
                Some(json!({ "idempotency_key": "payout-2", "channel": "BANK", "bank_short_code": "BCA", "account_number": "1234567890", "account_name": "PT Sumber Makmur", "amount_minor": 9_000_000_000i64 })),
            )
            .await,
    );
    let disbursement_id = disbursement["data"]["id"].as_str().unwrap().to_string();
    tour.keep(
        "get_disbursement",
        &server
            .call(Method::GET, &format!("/v1/disbursements/{disbursement_id}"), key, None)
            .await,
    );
    tour.keep(
        "complete_disbursement",
        &server
            .call(
                Method::POST,
                &format!("/v1/sandbox/disbursements/{disbursement_id}/complete"),
                key,
                Some(json!({ "status": "SUCCESS" })),
            )
            .await,
    );
    tour.keep(
        "list_disbursements",
        &server.call(Method::GET, "/v1/disbursements?limit=5", key, None).await,
    );
    let beneficiary_id = beneficiary["data"]["id"].as_str().unwrap().to_string();
    let batch = tour.keep(
        "create_disbursement_batch",
        &server
            .call(
                Method::POST,
                "/v1/disbursements/batch",
                key,
                Some(json!({ "idempotency_key": "batch-1", "items": [
                    { "idempotency_key": "batch-1-a", "beneficiary_id": beneficiary_id, "amount_minor": 2_000_000 },
                    { "idempotency_key": "batch-1-b", "channel": "EWALLET", "ewallet_provider": "DANA", "ewallet_phone": "081234567890", "amount_minor": 5_000_000 },
                    { "idempotency_key": "batch-1-c", "channel": "BANK", "bank_short_code": "NOPE", "account_number": "1", "account_name": "X", "amount_minor": 1_000_000 }
                ] })),
            )
            .await,
    );
    let batch_id = batch["data"]["id"].as_str().unwrap().to_string();
    tour.keep(
        "get_disbursement_batch",
        &server
            .call(Method::GET, &format!("/v1/disbursements/batch/{batch_id}"), key, None)
            .await,
    );
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
    tour.keep("get_balance", &server.call(Method::GET, "/v1/balance", key, None).await);
    tour.keep(
        "balance_history",
        &server.call(Method::GET, "/v1/balance/history?limit=5", key, None).await,
    );
    tour.keep(
        "balance_history",
        &server
            .call(Method::GET, "/v1/balance/history?type=NOPE", key, None)
            .await,
    );
}
