//! Paying through vendors: the order tried vendor by vendor, failures,
//! oversized answers, one order asked once, and the vendor settings refused.

use super::*;

#[tokio::test]
async fn vendors_are_tried_in_order_past_errors_and_timeouts() {
    let (vendor_url, calls, server, organization, merchant) = setup().await;
    add_vendor(&server, "v-broken", format!("{vendor_url}/broken"), true).await;
    add_vendor(&server, "v-slow", format!("{vendor_url}/slow"), true).await;
    add_vendor(&server, "v-garbage", format!("{vendor_url}/garbage"), true).await;
    add_vendor(&server, "v-ok", format!("{vendor_url}/ok"), true).await;
    let routed = route(
        &server,
        &organization,
        "QRIS",
        &["v-broken", "v-slow", "v-garbage", "v-ok"],
    )
    .await;
    assert_eq!(routed.status, StatusCode::OK, "{}", routed.body);
    assert_eq!(
        routed.body["data"]["vendors"],
        json!(["v-broken", "v-slow", "v-garbage", "v-ok"])
    );

    let created = new_order(&server, &merchant, "F-1", "QRIS").await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let ref_code = created.body["data"]["ref_code"].as_str().unwrap().to_string();
    assert!(created.body["data"]["qris_string"].as_str().is_some());
    let seen: Vec<(String, String, bool)> = calls
        .lock()
        .unwrap()
        .iter()
        .map(|(behaviour, operation, _, signed)| (behaviour.clone(), operation.clone(), *signed))
        .collect();
    let expected: Vec<(String, String, bool)> = ["broken", "slow", "garbage", "ok"]
        .iter()
        .map(|b| (b.to_string(), "payments".to_string(), true))
        .collect();
    assert_eq!(seen, expected, "tried in order, each request signed");
    let request = calls.lock().unwrap()[3].2.clone();
    assert_eq!(request["ref_code"], json!(ref_code));
    assert_eq!(request["amount_minor"], json!(1_000_000));
    assert_eq!(request["payment_method"], json!("QRIS"));

    // Bank transfers take the vendor's virtual account.
    route(&server, &organization, "BANK_TRANSFER", &["v-ok"]).await;
    let va = new_order(&server, &merchant, "F-2", "BANK_TRANSFER").await;
    assert_eq!(va.status, StatusCode::CREATED, "{}", va.body);
    assert_eq!(
        va.body["data"]["virtual_account"],
        json!({ "bank_short_code": "BNI", "account_number": "988812345678" })
    );
}

#[tokio::test]
async fn all_vendors_failing_is_vendor_error_and_none_configured_is_no_vendor() {
    let (vendor_url, _calls, server, organization, merchant) = setup().await;
    add_vendor(&server, "v-broken", format!("{vendor_url}/broken"), true).await;
    add_vendor(&server, "v-slow", format!("{vendor_url}/slow"), true).await;
    route(&server, &organization, "QRIS", &["v-broken", "v-slow"]).await;
    let failed = new_order(&server, &merchant, "E-1", "QRIS").await;
    assert_v1_error(&failed, 503, "VENDOR_ERROR");
    // A vendor that refuses connections.
    add_vendor(&server, "v-closed", "http://127.0.0.1:9/nothing".into(), true).await;
    route(&server, &organization, "QRIS", &["v-closed"]).await;
    let refused = new_order(&server, &merchant, "E-1", "QRIS").await;
    assert_v1_error(&refused, 503, "VENDOR_ERROR");

    route(&server, &organization, "QRIS", &[]).await;
    let none = new_order(&server, &merchant, "E-1", "QRIS").await;
    assert_v1_error(&none, 503, "NO_VENDOR");
    let list = server.get("/v1/orders", &merchant.api_key).await;
    assert_eq!(list.body["meta"]["total"], json!(0), "nothing was created");
    // The same id works once a vendor answers.
    route(&server, &organization, "QRIS", &["sandbox"]).await;
    let created = new_order(&server, &merchant, "E-1", "QRIS").await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
}

#[tokio::test]
async fn vendor_configuration_is_validated() {
    let server = TestServer::start();
    let (organization, _merchant) = organization_with_merchant(&server).await;
    let route = |organization: &str, method: &str, vendor: &str| {
        (
            format!("/admin/v1/organizations/{organization}/vendors/{method}"),
            json!({ "vendors": [vendor] }),
        )
    };
    let vendor = |name: &str, url: &str| {
        (
            format!("/admin/v1/vendors/{name}"),
            json!({ "url": url, "secret": "s" }),
        )
    };
    // A row's name, its `PUT`, and the error it must get.
    let refusals = [
        ("ftp vendor url", vendor("v-x", "ftp://x"), 400, "INVALID_BODY"),
        (
            "vendor name with a space",
            vendor("Bad%20Name", "http://x.example"),
            400,
            "INVALID_BODY",
        ),
        (
            "vendor named sandbox",
            vendor("sandbox", "http://x.example"),
            400,
            "INVALID_BODY",
        ),
        (
            "route to an unknown vendor",
            route(&organization, "QRIS", "v-missing"),
            400,
            "INVALID_BODY",
        ),
        (
            "route for payment method CASH",
            route(&organization, "CASH", "sandbox"),
            400,
            "INVALID_BODY",
        ),
        (
            "route of a non-uuid organization",
            route("not-a-uuid", "QRIS", "sandbox"),
            400,
            "INVALID_ID",
        ),
    ];
    for (name, (path, body), status, code) in refusals {
        table::row(name, async {
            let reply = server.admin(Method::PUT, &path, Some(body)).await;
            assert_v1_error(&reply, status, code);
        })
        .await;
    }
    let no_token = server
        .client
        .put(server.url("/admin/v1/vendors/v-x"))
        .json(&json!({ "url": "http://x.example", "secret": "s" }))
        .send()
        .await
        .unwrap();
    assert_eq!(no_token.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn oversized_vendor_answers_are_refused_and_the_next_vendor_tried() {
    let (vendor_url, calls, server, organization, merchant) = setup().await;
    add_vendor(&server, "v-huge", format!("{vendor_url}/huge"), true).await;
    add_vendor(&server, "v-longva", format!("{vendor_url}/longva"), true).await;
    add_vendor(&server, "v-ok", format!("{vendor_url}/ok"), true).await;
    route(&server, &organization, "QRIS", &["v-huge", "v-ok"]).await;
    let created = new_order(&server, &merchant, "H-1", "QRIS").await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let tried: Vec<String> = calls.lock().unwrap().iter().map(|c| c.0.clone()).collect();
    assert_eq!(tried, ["huge", "ok"]);

    route(&server, &organization, "BANK_TRANSFER", &["v-longva"]).await;
    let refused = new_order(&server, &merchant, "H-2", "BANK_TRANSFER").await;
    assert_v1_error(&refused, 503, "VENDOR_ERROR");
    let list = server.get("/v1/orders", &merchant.api_key).await;
    assert_eq!(list.body["meta"]["total"], json!(1), "the refused order is not stored");
}

#[tokio::test]
async fn concurrent_repeats_of_one_order_ask_the_vendor_once() {
    let (vendor_url, calls, server, organization, merchant) = setup().await;
    add_vendor(&server, "v-unhurried", format!("{vendor_url}/unhurried"), true).await;
    route(&server, &organization, "QRIS", &["v-unhurried"]).await;
    let body = order_body("SAME-1", "QRIS");
    let send = |with_key: bool| {
        let mut request = server
            .client
            .post(server.url("/v1/orders"))
            .header("X-API-Key", &merchant.api_key)
            .json(&body);
        if with_key {
            request = request.header("Idempotency-Key", "same-key-1");
        }
        async move { into_reply(request.send().await.unwrap()).await }
    };
    let replies = futures::future::join_all((0..5).map(|_| send(true))).await;
    let mut ref_codes: Vec<String> = replies
        .iter()
        .map(|reply| {
            assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
            reply.body["data"]["ref_code"].as_str().unwrap().to_string()
        })
        .collect();
    ref_codes.dedup();
    assert_eq!(ref_codes.len(), 1, "one order: {ref_codes:?}");
    // The same order id without the key: duplicates, still without asking the vendor.
    let repeats = futures::future::join_all((0..3).map(|_| send(false))).await;
    for reply in &repeats {
        assert_v1_error(reply, 409, "DUPLICATE_ORDER");
    }
    let asked = calls.lock().unwrap().iter().filter(|c| c.1 == "payments").count();
    assert_eq!(asked, 1, "the vendor took one payment for one order");
}
