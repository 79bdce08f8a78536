//! What the pages show and do: settings, escaped names, orders, money and
//! webhooks acting through the engine, batch uploads and test events.

use super::*;

#[tokio::test]
async fn settings_saved_in_the_dashboard_are_the_merchants() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    create_user(&server, &merchant.id, "owner@toko.example").await;
    let session = sign_in(&server, "owner@toko.example", PASSWORD).await.unwrap();
    let (_, page) = get(&server, "/dashboard/developers", Some(&session)).await;
    let csrf = csrf_in(&page);
    #[rustfmt::skip]
    let form: &[(&str, &str)] = &[("csrf", &csrf), ("default_notify_url", "https://toko.example/hooks"), ("require_signature", "on")];
    let (reply, _) = post_form(&server, "/dashboard/developers/settings", Some(&session), form).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    let stored = server
        .admin(Method::GET, &format!("/admin/v1/merchants/{}", merchant.id), None)
        .await;
    assert_eq!(stored.body["data"]["default_notify_url"], "https://toko.example/hooks");
    assert_eq!(stored.body["data"]["require_signature"], true);
    let (reply, page) = post_form(
        &server,
        "/dashboard/developers/public-key",
        Some(&session),
        &[("csrf", &csrf), ("pem", "not a key")],
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert!(page.contains("Key not saved"), "{page}");
}

#[tokio::test]
async fn a_merchant_named_like_markup_is_shown_as_text() {
    let server = TestServer::start();
    let merchant = server
        .create_merchant_with("WALLET", json!({ "name": "<script>alert(1)</script>" }))
        .await;
    create_user(&server, &merchant.id, "owner@toko.example").await;
    let session = sign_in(&server, "owner@toko.example", PASSWORD).await.unwrap();
    let (_, page) = get(&server, "/dashboard", Some(&session)).await;
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{page}");
    assert!(!page.contains("<script>alert(1)"));
}

#[tokio::test]
async fn orders_money_and_webhooks_pages_act_through_the_engine() {
    let (server, merchant, session) = funded_owner_signed_in(100_000_000).await;
    let key = Some(merchant.api_key.as_str());

    // An order paid through the sandbox, refunded in the dashboard.
    let order = server
        .call(
            Method::POST,
            "/v1/orders",
            key,
            Some(json!({ "merchant_order_id": "INV-7", "amount_minor": 2_500_000, "payment_method": "QRIS" })),
        )
        .await;
    let ref_code = order.body["data"]["ref_code"].as_str().unwrap().to_string();
    server
        .call(Method::POST, &format!("/v1/sandbox/orders/{ref_code}/pay"), key, None)
        .await;
    let (reply, page) = get(&server, "/dashboard/orders?status=PAID", Some(&session)).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(page.contains(&ref_code) && page.contains("Rp 25.000"), "{page}");
    let (reply, page) = get(&server, &format!("/dashboard/orders/{ref_code}"), Some(&session)).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(page.contains("Paid") && page.contains("Timeline"));
    let nonce_at = page.find("name=\"nonce\" value=\"").unwrap() + "name=\"nonce\" value=\"".len();
    let nonce = page[nonce_at..].split('"').next().unwrap().to_string();
    let csrf = csrf_in(&page);
    let refund_form = [
        ("csrf", csrf.as_str()),
        ("nonce", nonce.as_str()),
        ("amount", "5.000"),
        ("reason", "damaged"),
    ];
    let (reply, _) = post_form(
        &server,
        &format!("/dashboard/orders/{ref_code}/refund"),
        Some(&session),
        &refund_form,
    )
    .await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    // The same form posted twice is one refund.
    post_form(
        &server,
        &format!("/dashboard/orders/{ref_code}/refund"),
        Some(&session),
        &refund_form,
    )
    .await;
    let refunds = server
        .call(Method::GET, &format!("/v1/orders/{ref_code}/refunds"), key, None)
        .await;
    assert_eq!(refunds.body["data"].as_array().unwrap().len(), 1, "{}", refunds.body);
    assert_eq!(refunds.body["data"][0]["amount_minor"], 500_000);
    let (reply, _) = get(&server, "/dashboard/orders/ORD-000000000000-NONE", Some(&session)).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);

    // A disbursement from the form, and a batch from CSV text.
    let (_, page) = get(&server, "/dashboard/disbursements", Some(&session)).await;
    let nonce_at = page.find("name=\"nonce\" value=\"").unwrap() + "name=\"nonce\" value=\"".len();
    let nonce = page[nonce_at..].split('"').next().unwrap().to_string();
    #[rustfmt::skip]
    let form: &[(&str, &str)] = &[("csrf", &csrf), ("nonce", &nonce), ("channel", "BANK"), ("provider", "BCA"), ("account", "1234567890"), ("account_name", "PT Sumber Makmur"), ("amount", "150000")];
    let (reply, _) = post_form(&server, "/dashboard/disbursements", Some(&session), form).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    #[rustfmt::skip]
    let form: &[(&str, &str)] = &[("csrf", &csrf), ("nonce", "batch-nonce-1"), ("csv", "channel,provider,account,account_name,amount\nBANK,BCA,1234567891,Satu,20000\nEWALLET,DANA,081234567890,,25000\nBANK,NOPE,1,X,10000\n")];
    let (reply, page) = post_form(&server, "/dashboard/disbursements/batch", Some(&session), form).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(page.contains("Batch taken: 2 of 3 rows created."), "{page}");
    let listed = server.call(Method::GET, "/v1/disbursements", key, None).await;
    assert_eq!(listed.body["meta"]["total"], 3, "{}", listed.body);

    // The balance history page and its CSV, equal to the API's lines.
    let (reply, page) = get(&server, "/dashboard/balance", Some(&session)).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(
        page.contains("DISBURSEMENT") && page.contains("ORDER_PAYMENT"),
        "{page}"
    );
    let (reply, csv) = get(&server, "/dashboard/balance.csv", Some(&session)).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(reply.headers["content-type"].to_str().unwrap().starts_with("text/csv"));
    let statement = server.statement(&merchant.api_key).await;
    assert_eq!(
        csv.lines().count(),
        statement.len() + 1,
        "a header row and one row a line"
    );

    for path in [
        "/dashboard/beneficiaries",
        "/dashboard/settlements",
        "/dashboard/webhooks",
    ] {
        let (reply, page) = get(&server, path, Some(&session)).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert!(page.contains("<h1>"), "{path}");
    }
    // Money moves only with the session's token.
    #[rustfmt::skip]
    let form: &[(&str, &str)] = &[("nonce", "x"), ("channel", "BANK"), ("provider", "BCA"), ("account", "1"), ("amount", "10000")];
    let (reply, _) = post_form(&server, "/dashboard/disbursements", Some(&session), form).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    let listed = server.call(Method::GET, "/v1/disbursements", key, None).await;
    assert_eq!(listed.body["meta"]["total"], 3);
}

#[tokio::test]
async fn a_csv_file_uploads_as_one_batch_and_a_test_event_reaches_the_endpoint_signed() {
    let (server, merchant, session) = funded_owner_signed_in(100_000_000).await;
    let (_, page) = get(&server, "/dashboard/disbursements", Some(&session)).await;
    let csrf = csrf_in(&page);
    let upload = |fields: Vec<(&'static str, String)>| {
        let server = &server;
        let session = session.clone();
        async move {
            let borrowed: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let (content_type, body) = multipart(
                &borrowed,
                "BANK,BCA,1234567891,Satu,20000\nEWALLET,OVO,081234567890,,30000\n",
            );
            let response = browser()
                .post(server.url("/dashboard/disbursements/upload"))
                .header(COOKIE, session)
                .header("content-type", content_type)
                .body(body)
                .send()
                .await
                .unwrap();
            (response.status(), response.text().await.unwrap())
        }
    };
    let (status, _) = upload(vec![("nonce", "n1".into())]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "no CSRF token, no batch");
    let (status, page) = upload(vec![("csrf", csrf.clone()), ("nonce", "n1".into())]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains("Batch taken: 2 of 2 rows created."), "{page}");
    let listed = server.get("/v1/disbursements", &merchant.api_key).await;
    assert_eq!(listed.body["meta"]["total"], 2);

    // A test event, signed like a delivery, to a receiver on loopback.
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(reqwest::header::HeaderMap, String)>::new()));
    let sink = received.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: axum::http::HeaderMap, body: String| {
            let sink = sink.clone();
            async move {
                let mut converted = reqwest::header::HeaderMap::new();
                for (name, value) in headers.iter() {
                    converted.insert(
                        reqwest::header::HeaderName::from_bytes(name.as_str().as_bytes()).unwrap(),
                        reqwest::header::HeaderValue::from_bytes(value.as_bytes()).unwrap(),
                    );
                }
                sink.lock().unwrap().push((converted, body));
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let (_, page) = get(&server, "/dashboard/webhooks", Some(&session)).await;
    let test_event: &[(&str, &str)] = &[("csrf", &csrf_in(&page))];
    let (reply, page_after) = post_form(&server, "/dashboard/webhooks/test", Some(&session), test_event).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "no default notify URL yet");
    assert!(page_after.contains("set a default notify URL first"));
    server
        .patch_merchant(
            &merchant.id,
            json!({ "default_notify_url": format!("http://{address}/hook") }),
        )
        .await;
    let (reply, page_after) = post_form(&server, "/dashboard/webhooks/test", Some(&session), test_event).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(page_after.contains("answered HTTP 200"), "{page_after}");
    // The batch's disbursement events may reach the same endpoint now that
    // it is the default: the test event is the one whose type is `test`.
    let (headers, body) = received
        .lock()
        .unwrap()
        .iter()
        .find(|(_, body)| serde_json::from_str::<Value>(body).is_ok_and(|event| event["event"] == "test"))
        .cloned()
        .expect("the endpoint got the test event");
    let event: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(event["event"], "test");
    assert_eq!(event["merchant_id"], merchant.id.as_str());
    let verifier = standardwebhooks::Webhook::new(&merchant.webhook_secret).unwrap();
    verifier
        .verify(body.as_bytes(), &headers)
        .expect("signed as every delivery is");
}
