//! Organizations, banks and e-wallets, and what survives a restart.

use super::*;

#[tokio::test]
async fn organization_is_created_and_merchants_can_belong_to_it() {
    let server = TestServer::start();
    let reply = server
        .admin_post("/admin/v1/organizations", json!({ "name": "PT Aggregator Nusantara" }))
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    let organization = &reply.body["data"];
    assert_eq!(sorted_keys(organization), strings(&["created_at", "id", "name"]));
    assert!(is_uuid(&organization["id"]));
    assert_eq!(organization["name"], json!("PT Aggregator Nusantara"));
    assert!(organization["created_at"].as_str().is_some_and(|t| t.ends_with('Z')));

    let id = organization["id"].as_str().unwrap();
    let reply = server
        .admin_post(
            "/admin/v1/merchants",
            json!({ "name": "Toko Anak", "settlement_type": "WALLET", "organization_id": id }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["merchant"]["organization_id"], json!(id));

    // A merchant without one belongs elsewhere.
    let other = server.create_wallet_merchant().await;
    assert_ne!(get_merchant(&server, &other.id).await["organization_id"], json!(id));
}

#[tokio::test]
async fn organization_with_empty_name_is_400_invalid_body() {
    let server = TestServer::start();
    for body in [json!({ "name": "" }), json!({ "name": "  " }), json!({})] {
        let reply = server.admin(Method::POST, "/admin/v1/organizations", Some(body)).await;
        assert_invalid_body_naming(&reply, "name");
    }
}

#[tokio::test]
async fn disabled_bank_leaves_v1_banks_and_returns_with_the_same_id() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let banks = v1_banks(&server, &merchant.api_key).await;
    let bni = bank_by_code(&banks, "BNI").expect("BNI listed").clone();

    let reply = server.set_bank_enabled("BNI", false).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let mut disabled = bni.clone();
    disabled["is_enabled"] = json!(false);
    assert_eq!(reply.body["data"], disabled);
    assert_eq!(
        sorted_keys(&reply.body["data"]),
        strings(&["id", "is_enabled", "name", "short_code"])
    );
    let banks = v1_banks(&server, &merchant.api_key).await;
    assert_eq!(banks.len(), 9);
    assert!(bank_by_code(&banks, "BNI").is_none());

    let reply = server.set_bank_enabled("BNI", true).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"], bni);
    let banks = v1_banks(&server, &merchant.api_key).await;
    assert_eq!(banks.len(), 10);
    assert_eq!(bank_by_code(&banks, "BNI"), Some(&bni));
}

#[tokio::test]
async fn new_bank_needs_a_name_and_is_listed_once_added() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let reply = server.set_bank_enabled("SEABANK", true).await;
    assert_invalid_body_naming(&reply, "name");
    assert_eq!(v1_banks(&server, &merchant.api_key).await.len(), 10);

    let reply = server
        .admin_put(
            "/admin/v1/banks/SEABANK",
            json!({ "is_enabled": true, "name": "Bank Seabank Indonesia" }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let bank = reply.body["data"].clone();
    assert_eq!(sorted_keys(&bank), strings(&["id", "is_enabled", "name", "short_code"]));
    assert!(is_uuid(&bank["id"]));
    assert_eq!(bank["name"], json!("Bank Seabank Indonesia"));
    assert_eq!(bank["short_code"], json!("SEABANK"));
    assert_eq!(bank["is_enabled"], json!(true));

    let banks = v1_banks(&server, &merchant.api_key).await;
    assert_eq!(banks.len(), 11);
    assert_eq!(bank_by_code(&banks, "SEABANK"), Some(&bank));
}

#[tokio::test]
async fn disabled_ewallet_is_omitted_from_v1_ewallets_at_once() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    // Fill the one-hour cache first.
    let codes = v1_ewallet_codes(&server, &merchant.api_key).await;
    assert!(codes.contains(&"OVO".to_string()), "{codes:?}");
    assert_eq!(codes.len(), 7);

    let reply = server.set_ewallet_enabled("OVO", false).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"]["short_code"], json!("OVO"));
    assert_eq!(reply.body["data"]["is_enabled"], json!(false));
    let codes = v1_ewallet_codes(&server, &merchant.api_key).await;
    assert_eq!(codes.len(), 6, "{codes:?}");
    assert!(!codes.contains(&"OVO".to_string()), "{codes:?}");

    let reply = server.set_ewallet_enabled("OVO", true).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let codes = v1_ewallet_codes(&server, &merchant.api_key).await;
    assert_eq!(codes.len(), 7);
    assert!(codes.contains(&"OVO".to_string()), "{codes:?}");
}

#[tokio::test]
async fn unknown_ewallet_code_is_404_ewallet_not_found() {
    let server = TestServer::start();
    let reply = server.set_ewallet_enabled("PAYPAL", true).await;
    assert_v1_error(&reply, 404, "EWALLET_NOT_FOUND");
}

#[tokio::test]
async fn merchant_balance_disabled_bank_and_admin_api_survive_a_restart() {
    let (mut server, merchant) = TestServer::start_with_merchant().await;
    server.credit(&merchant.id, 424242).await;
    let reply = server
        .patch_merchant(
            &merchant.id,
            json!({ "fees": { "qris_mdr_bps": 99 }, "default_notify_url": "https://m.example/h" }),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let reply = server.set_bank_enabled("PANIN", false).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let view_before = get_merchant(&server, &merchant.id).await;
    let report_before = server.verify().await;

    server.stop();
    server.restart();

    assert_eq!(get_merchant(&server, &merchant.id).await, view_before);
    assert_eq!(server.balance(&merchant.api_key).await, 424242);
    let banks = v1_banks(&server, &merchant.api_key).await;
    assert_eq!(banks.len(), 9);
    assert!(bank_by_code(&banks, "PANIN").is_none());
    assert_eq!(server.verify().await, report_before);

    // The admin API still writes.
    let other = server.create_wallet_merchant().await;
    assert_eq!(server.credit(&other.id, 1).await, 1);
    assert_eq!(server.credit(&merchant.id, 8).await, 424250);
    assert_eq!(server.verify().await["balanced"], json!(true));
}
