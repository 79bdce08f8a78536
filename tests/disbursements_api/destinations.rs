//! `GET /v1/banks` and `GET /v1/ewallets`: where a disbursement can go,
//! with stable ids.

use super::*;

const BANK_CODES: [&str; 10] = [
    "BCA", "MANDIRI", "BNI", "BRI", "CIMB", "PERMATA", "BTN", "DANAMON", "PANIN", "MAYBANK",
];

const EWALLET_CODES: [&str; 7] = ["GOPAY", "GOPAYDRIVER", "OVO", "SHOPEEPAY", "LINKAJA", "DANA", "KASPRO"];

/// `GET /v1/banks` as (short_code, id) pairs sorted by code, checking each record's shape.
async fn bank_ids(server: &TestServer, api_key: &str) -> Vec<(String, String)> {
    let reply = server.get("/v1/banks", api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    let mut pairs: Vec<(String, String)> = reply.body["data"]
        .as_array()
        .expect("data array")
        .iter()
        .map(|bank| {
            assert_eq!(sorted_keys(bank), strings(&["id", "is_enabled", "name", "short_code"]));
            assert!(is_uuid(&bank["id"]), "{bank}");
            assert!(bank["name"].as_str().is_some_and(|n| !n.is_empty()), "{bank}");
            assert_eq!(bank["is_enabled"], json!(true), "{bank}");
            (
                bank["short_code"].as_str().unwrap().to_string(),
                bank["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    pairs.sort();
    pairs
}

#[tokio::test]
async fn banks_lists_exactly_the_ten_seeded_banks_with_their_fields() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let banks = bank_ids(&server, &merchant.api_key).await;
    let codes: Vec<&str> = banks.iter().map(|(code, _)| code.as_str()).collect();
    let mut expected = BANK_CODES.to_vec();
    expected.sort();
    assert_eq!(codes, expected);
    let mut ids: Vec<&str> = banks.iter().map(|(_, id)| id.as_str()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 10, "bank ids must be distinct");
}

#[tokio::test]
async fn bank_ids_are_stable_across_restarts_and_servers() {
    let mut first = TestServer::start();
    let merchant = first.create_wallet_merchant().await;
    let before = bank_ids(&first, &merchant.api_key).await;
    assert_eq!(before.len(), 10);

    first.stop();
    first.restart();
    assert_eq!(bank_ids(&first, &merchant.api_key).await, before);

    let second = TestServer::start();
    let other = second.create_wallet_merchant().await;
    assert_eq!(bank_ids(&second, &other.api_key).await, before);
}

#[tokio::test]
async fn ewallets_lists_the_seven_seeded_ewallets_sorted_by_sort_order() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let reply = server.get("/v1/ewallets", &merchant.api_key).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["success"], json!(true));
    let list = reply.body["data"].as_array().expect("data array");
    assert_eq!(list.len(), 7, "{}", reply.body);
    for ewallet in list {
        assert_eq!(
            sorted_keys(ewallet),
            strings(&["id", "is_enabled", "logo_url", "name", "short_code", "sort_order"])
        );
        assert!(is_uuid(&ewallet["id"]), "{ewallet}");
        assert!(ewallet["name"].as_str().is_some_and(|n| !n.is_empty()), "{ewallet}");
        assert!(
            ewallet["logo_url"]
                .as_str()
                .is_some_and(|u| u.starts_with("https://") || u.starts_with("http://")),
            "{ewallet}"
        );
        assert_eq!(ewallet["is_enabled"], json!(true), "{ewallet}");
        assert!(ewallet["sort_order"].is_i64(), "{ewallet}");
    }
    let mut codes: Vec<&str> = list.iter().map(|e| e["short_code"].as_str().unwrap()).collect();
    let orders: Vec<i64> = list.iter().map(|e| e["sort_order"].as_i64().unwrap()).collect();
    assert!(
        orders.windows(2).all(|pair| pair[0] <= pair[1]),
        "not sorted by sort_order: {orders:?}"
    );
    codes.sort();
    let mut expected = EWALLET_CODES.to_vec();
    expected.sort();
    assert_eq!(codes, expected);
}
