//! `GET /v1/disbursements`: order, pagination, filters and refused queries.

use super::*;

/// Creates `n` BANK disbursements a few ms apart; returns them oldest first.
async fn create_several(server: &TestServer, merchant: &TestMerchant, n: usize) -> Vec<Value> {
    let mut created = Vec::new();
    for i in 0..n {
        created.push(create_ok(server, merchant, bank_body(&format!("list-{i}"), 100_000 + i as i64)).await);
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    created
}

#[tokio::test]
async fn list_is_newest_first_with_integer_meta_and_pages_without_overlap() {
    let (server, merchant) = funded_server(SLOW, 10_000_000).await;
    let other = funded_merchant(&server, 10_000_000).await;
    let created = create_several(&server, &merchant, 5).await;
    let newest_first: Vec<String> = created
        .iter()
        .rev()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();

    let reply = list(&server, &merchant, "").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(sorted_keys(&reply.body), strings(&["data", "meta", "success"]));
    assert_eq!(reply.body["success"], json!(true));
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 1, "limit": 10, "total": 5, "total_pages": 1 })
    );
    assert_eq!(ids(&reply.body), newest_first);
    for item in reply.body["data"].as_array().unwrap() {
        assert_eq!(sorted_keys(item), strings(&FIELDS));
        assert_eq!(item["channel"], json!("BANK"));
    }
    let times: Vec<_> = reply.body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| assert_timestamp(&d["created_at"]))
        .collect();
    assert!(times.windows(2).all(|w| w[0] > w[1]), "{times:?}");

    // limit=2: pages 1..3 cover everything once, in order.
    let mut paged = Vec::new();
    for (page, len) in [(1, 2), (2, 2), (3, 1)] {
        let reply = list(&server, &merchant, &format!("?page={page}&limit=2")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(
            reply.body["meta"],
            json!({ "page": page, "limit": 2, "total": 5, "total_pages": 3 })
        );
        let page_ids = ids(&reply.body);
        assert_eq!(page_ids.len(), len, "page {page}");
        paged.extend(page_ids);
    }
    assert_eq!(paged, newest_first);
    let reply = list(&server, &merchant, "?page=4&limit=2").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"], json!([]));
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 4, "limit": 2, "total": 5, "total_pages": 3 })
    );

    // limit over 50 is served as 50.
    // Above 50 (even past what an integer type holds) is served as 50.
    for limit in ["500", "1000000000000000000000"] {
        let reply = list(&server, &merchant, &format!("?limit={limit}")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(
            reply.body["meta"],
            json!({ "page": 1, "limit": 50, "total": 5, "total_pages": 1 })
        );
        assert_eq!(ids(&reply.body), newest_first);
    }

    // Another merchant sees none of them.
    let reply = list(&server, &other, "").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"], json!([]));
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 1, "limit": 10, "total": 0, "total_pages": 0 })
    );
    assert_eq!(server.balance(&other.api_key).await, 10_000_000);
    let spent: i64 = (0..5).map(|i| 100_000 + i + BANK_FEE).sum();
    assert_eq!(server.balance(&merchant.api_key).await, 10_000_000 - spent);
}

#[tokio::test]
async fn list_filters_by_status_and_created_range_and_refuses_bad_queries() {
    let (server, merchant) = funded_server(SLOW, 10_000_000).await;
    let created = create_several(&server, &merchant, 5).await;
    let id = |i: usize| created[i]["id"].as_str().unwrap().to_string();
    for i in 0..5 {
        wait_for(&server, &merchant, &id(i), "ON_PROCESS").await;
    }
    for i in [1, 3] {
        let reply = complete(&server, &merchant, &id(i), "FAILED").await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    }

    let reply = list(&server, &merchant, "?status=FAILED").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(ids(&reply.body), vec![id(3), id(1)]);
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 1, "limit": 10, "total": 2, "total_pages": 1 })
    );
    for item in reply.body["data"].as_array().unwrap() {
        assert_eq!(item["status"], json!("FAILED"));
    }
    let reply = list(&server, &merchant, "?status=ON_PROCESS&limit=2").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(ids(&reply.body), vec![id(4), id(2)]);
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 1, "limit": 2, "total": 3, "total_pages": 2 })
    );

    // Time range.
    let reply = list(&server, &merchant, "?created_from=2999-01-01T00:00:00Z").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["data"], json!([]));
    assert_eq!(
        reply.body["meta"],
        json!({ "page": 1, "limit": 10, "total": 0, "total_pages": 0 })
    );
    let reply = list(&server, &merchant, "?created_to=2000-01-01T00:00:00Z").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["meta"]["total"], json!(0));
    let reply = list(&server, &merchant, "?created_from=2000-01-01T00:00:00Z").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["meta"]["total"], json!(5));
    // Strictly between the 2nd and the 4th: only the 3rd.
    let millis = chrono::Duration::milliseconds(1);
    let from = assert_timestamp(&created[1]["created_at"]) + millis;
    let to = assert_timestamp(&created[3]["created_at"]) - millis;
    let query = format!(
        "?created_from={}&created_to={}",
        from.with_timezone(&chrono::Utc)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        to.with_timezone(&chrono::Utc)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    );
    let reply = list(&server, &merchant, &query).await;
    assert_eq!(reply.status, StatusCode::OK, "{query}: {}", reply.body);
    assert_eq!(ids(&reply.body), vec![id(2)], "{query}");

    // Bad queries.
    for query in [
        "?page=0",
        "?limit=abc",
        "?limit=0",
        "?page=-1",
        "?page=1.5",
        "?status=BOGUS",
        "?created_from=yesterday",
        "?created_to=2024-13-01",
    ] {
        table::row(query, async {
            let reply = list(&server, &merchant, query).await;
            assert_v1_error(&reply, 400, "INVALID_QUERY");
        })
        .await;
    }
    let spent: i64 = [0, 2, 4].iter().map(|i| 100_000 + i + BANK_FEE).sum();
    assert_eq!(server.balance(&merchant.api_key).await, 10_000_000 - spent);
    assert_ledger_clean(&server).await;
}
