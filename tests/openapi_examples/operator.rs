//! The tour's webhook deliveries and settlements, and the operator's calls.

use super::*;

pub(super) async fn tour_operator(server: &TestServer, tour: &mut Tour, merchant: &TestMerchant) {
    let key = Some(merchant.api_key.as_str());
    // Webhooks, settlements.
    tour.get(server, "list_deliveries", "/v1/webhooks/deliveries", key)
        .await;
    tour.get(server, "list_settlements", "/v1/settlements", key).await;
    tour.get(
        server,
        "get_settlement",
        "/v1/settlements/00000000-0000-4000-8000-000000000000",
        key,
    )
    .await;

    // Admin.
    tour.keep(
        "admin_create_organization",
        &server
            .admin_post("/admin/v1/organizations", json!({ "name": "Toko Group" }))
            .await,
    );
    let manual = tour.keep(
        "admin_create_merchant",
        &server
            .admin_post("/admin/v1/merchants", json!({ "name": "Toko Maju", "settlement_type": "MANUAL", "settlement_bank": { "bank_short_code": "BCA", "account_number": "5550001111", "account_name": "Toko Maju" } }))
            .await,
    );
    let manual_id = manual["data"]["merchant"]["id"].as_str().unwrap().to_string();
    tour.keep(
        "admin_update_merchant",
        &server
            .patch_merchant(
                &manual_id,
                json!({ "default_notify_url": "https://merchant.example/webhooks" }),
            )
            .await,
    );
    tour.keep("admin_rotate_credentials", &server.rotate_credentials(&manual_id).await);
    tour.keep(
        "admin_get_merchant",
        &server
            .admin(
                Method::GET,
                "/admin/v1/merchants/00000000-0000-4000-8000-000000000000",
                None,
            )
            .await,
    );
    tour.keep("admin_save_bank", &server.set_bank_enabled("BCA", true).await);
    tour.keep("admin_save_ewallet", &server.set_ewallet_enabled("DANA", true).await);
    tour.keep(
        "admin_run_settlements",
        &server
            .admin_post("/admin/v1/settlements/run", json!({ "merchant_id": manual_id }))
            .await,
    );
    tour.keep(
        "admin_verify_ledger",
        &server.admin(Method::GET, "/admin/v1/ledger/verify", None).await,
    );
}
