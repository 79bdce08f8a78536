//! The merchant dashboard over HTTP: users made by the
//! operator, sign-in with a session cookie, CSRF on every form, sign-in
//! throttling, sign-out and rotation ending sessions on the server, pages
//! showing what the API shows, escaped.

mod support;

use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use support::*;

const PASSWORD: &str = "correct horse battery staple";

/// A client that does not follow redirects: the tests look at them.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The `name=value` of cookie `name` set by `reply`.
fn set_cookie(reply: &Reply, name: &str) -> Option<String> {
    reply
        .headers
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(|v| v.to_string())
}

fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_string()
}

/// The hidden `csrf` input's value in a page.
fn csrf_in(page: &str) -> String {
    let at = page.find("name=\"csrf\" value=\"").expect("a csrf input") + "name=\"csrf\" value=\"".len();
    page[at..].split('"').next().unwrap().to_string()
}

async fn get(server: &TestServer, path: &str, cookie: Option<&str>) -> (Reply, String) {
    let mut request = browser().get(format!("{}{path}", server.base));
    if let Some(cookie) = cookie {
        request = request.header(COOKIE, cookie);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    (
        Reply {
            status,
            body: Value::Null,
            headers,
        },
        text,
    )
}

async fn post_form(server: &TestServer, path: &str, cookie: Option<&str>, form: &[(&str, &str)]) -> (Reply, String) {
    let mut request = browser().post(format!("{}{path}", server.base)).form(form);
    if let Some(cookie) = cookie {
        request = request.header(COOKIE, cookie);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    (
        Reply {
            status,
            body: Value::Null,
            headers,
        },
        text,
    )
}

async fn create_user(server: &TestServer, merchant_id: &str, email: &str) -> Reply {
    server
        .admin(
            Method::POST,
            &format!("/admin/v1/merchants/{merchant_id}/users"),
            Some(json!({ "email": email, "password": PASSWORD })),
        )
        .await
}

/// Signs in; returns the session cookie (`name=value`).
async fn sign_in(server: &TestServer, email: &str, password: &str) -> Result<String, (StatusCode, String)> {
    let (page, html) = get(server, "/dashboard/sign-in", None).await;
    assert_eq!(page.status, StatusCode::OK);
    let form_cookie = cookie_pair(&set_cookie(&page, "paygate_sign_in").expect("the form's cookie"));
    let csrf = csrf_in(&html);
    let (reply, html) = post_form(
        server,
        "/dashboard/sign-in",
        Some(&form_cookie),
        &[("email", email), ("password", password), ("csrf", &csrf)],
    )
    .await;
    if reply.status != StatusCode::SEE_OTHER {
        return Err((reply.status, html));
    }
    assert_eq!(reply.headers[LOCATION], "/dashboard");
    let session = set_cookie(&reply, "paygate_session").expect("a session cookie");
    assert!(
        session.contains("HttpOnly") && session.contains("SameSite=Lax"),
        "{session}"
    );
    assert!(session.contains("Path=/dashboard"), "{session}");
    Ok(cookie_pair(&session))
}

#[tokio::test]
async fn the_operator_makes_users_and_bad_ones_change_nothing() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    let reply = create_user(&server, &merchant.id, "Ops@Toko.example").await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["data"]["email"], "ops@toko.example");
    assert!(is_uuid(&reply.body["data"]["id"]));
    assert_eq!(keys_in_order(&reply.body["data"]), ordered(&["id", "email"]));
    assert_v1_error(
        &create_user(&server, &merchant.id, "ops@toko.example").await,
        409,
        "EMAIL_TAKEN",
    );
    let short = server
        .admin(
            Method::POST,
            &format!("/admin/v1/merchants/{}/users", merchant.id),
            Some(json!({ "email": "short@toko.example", "password": "elevenchars" })),
        )
        .await;
    assert_v1_error(&short, 400, "INVALID_BODY");
    assert!(short.body["error"]["message"].as_str().unwrap().contains("password"));
    assert_v1_error(
        &create_user(&server, "00000000-0000-4000-8000-000000000000", "x@toko.example").await,
        404,
        "MERCHANT_NOT_FOUND",
    );
    // The refused short password made no user.
    assert_eq!(
        sign_in(&server, "short@toko.example", "elevenchars")
            .await
            .unwrap_err()
            .0,
        StatusCode::UNAUTHORIZED
    );
    // Users survive a restart.
    let mut server = server;
    server.kill();
    server.restart();
    assert!(sign_in(&server, "ops@toko.example", PASSWORD).await.is_ok());
}

#[tokio::test]
async fn a_signed_in_user_sees_the_balance_the_api_shows_and_signs_out_for_good() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    server.credit(&merchant.id, 2_500_000).await;
    create_user(&server, &merchant.id, "owner@toko.example").await;
    // Not signed in: to the sign-in page.
    let (reply, _) = get(&server, "/dashboard", None).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    assert_eq!(reply.headers[LOCATION], "/dashboard/sign-in");

    let session = sign_in(&server, "owner@toko.example", PASSWORD).await.unwrap();
    let (reply, page) = get(&server, "/dashboard", Some(&session)).await;
    assert_eq!(reply.status, StatusCode::OK);
    let policy = reply.headers["content-security-policy"].to_str().unwrap();
    assert!(
        policy.contains("default-src 'none'") && policy.contains("frame-ancestors 'none'"),
        "{policy}"
    );
    // No script runs in a signed-in merchant's session.
    assert!(!policy.contains("script-src"), "{policy}");
    assert_eq!(reply.headers["x-content-type-options"], "nosniff");
    assert_eq!(reply.headers["x-frame-options"], "DENY");
    assert_eq!(reply.headers["referrer-policy"], "no-referrer");
    assert_eq!(reply.headers["cache-control"], "no-store");
    assert_eq!(server.balance(&merchant.api_key).await, 2_500_000);
    assert!(
        page.contains(r#"<p class="figure" id="balance">Rp 25.000</p>"#),
        "{page}"
    );
    assert!(!page.contains("<script"), "no script on the dashboard");

    // Sign-out ends the session on the server: the old cookie is dead.
    let (_, page) = get(&server, "/dashboard/developers", Some(&session)).await;
    let csrf = csrf_in(&page);
    let (reply, _) = post_form(&server, "/dashboard/sign-out", Some(&session), &[("csrf", &csrf)]).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    let (reply, _) = get(&server, "/dashboard", Some(&session)).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER, "the session ended on the server");
}

#[tokio::test]
async fn forms_without_their_csrf_token_are_refused_and_change_nothing() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    create_user(&server, &merchant.id, "owner@toko.example").await;
    // Sign-in without the form's token (a cross-site post).
    let (reply, _) = post_form(
        &server,
        "/dashboard/sign-in",
        None,
        &[
            ("email", "owner@toko.example"),
            ("password", PASSWORD),
            ("csrf", "guess"),
        ],
    )
    .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    assert!(set_cookie(&reply, "paygate_session").is_none());

    let session = sign_in(&server, "owner@toko.example", PASSWORD).await.unwrap();
    for form in [vec![], vec![("csrf", "wrong")]] {
        let (reply, _) = post_form(&server, "/dashboard/developers/rotate", Some(&session), &form).await;
        assert_eq!(reply.status, StatusCode::FORBIDDEN);
    }
    // Nothing rotated: the key still works.
    assert_eq!(
        server
            .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
            .await
            .status,
        StatusCode::OK
    );
    let (reply, _) = post_form(
        &server,
        "/dashboard/developers/settings",
        Some(&session),
        &[("default_notify_url", "https://evil.example/hook")],
    )
    .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    let stored = server
        .admin(Method::GET, &format!("/admin/v1/merchants/{}", merchant.id), None)
        .await;
    assert_eq!(stored.body["data"]["default_notify_url"], Value::Null);
}

#[tokio::test]
async fn ten_failed_sign_ins_lock_the_email_out_with_429() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    create_user(&server, &merchant.id, "owner@toko.example").await;
    for _ in 0..10 {
        let (status, _) = sign_in(&server, "owner@toko.example", "not the password!")
            .await
            .unwrap_err();
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    // Now even the right password waits.
    let (page, html) = get(&server, "/dashboard/sign-in", None).await;
    let form_cookie = cookie_pair(&set_cookie(&page, "paygate_sign_in").unwrap());
    let (reply, _) = post_form(
        &server,
        "/dashboard/sign-in",
        Some(&form_cookie),
        &[
            ("email", "OWNER@toko.example"),
            ("password", PASSWORD),
            ("csrf", &csrf_in(&html)),
        ],
    )
    .await;
    assert_eq!(reply.status, StatusCode::TOO_MANY_REQUESTS);
    let wait: u64 = reply.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=900).contains(&wait), "{wait}");
    assert!(set_cookie(&reply, "paygate_session").is_none());
}

#[tokio::test]
async fn rotating_in_the_dashboard_kills_the_old_key_and_the_other_sessions() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    create_user(&server, &merchant.id, "owner@toko.example").await;
    create_user(&server, &merchant.id, "clerk@toko.example").await;
    let owner = sign_in(&server, "owner@toko.example", PASSWORD).await.unwrap();
    let clerk = sign_in(&server, "clerk@toko.example", PASSWORD).await.unwrap();
    let (_, page) = get(&server, "/dashboard/developers", Some(&owner)).await;
    assert!(page.contains(&merchant.client_id), "the client id is shown");
    let (reply, page) = post_form(
        &server,
        "/dashboard/developers/rotate",
        Some(&owner),
        &[("csrf", &csrf_in(&page))],
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    let at =
        page.find(r#"<code id="new-api-key">"#).expect("the new key is shown") + r#"<code id="new-api-key">"#.len();
    let new_key = page[at..].split('<').next().unwrap().to_string();
    assert_ne!(new_key, merchant.api_key);
    assert_v1_error(
        &server
            .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
            .await,
        401,
        "INVALID_API_KEY",
    );
    assert_eq!(
        server
            .call(Method::GET, "/v1/balance", Some(&new_key), None)
            .await
            .status,
        StatusCode::OK
    );
    // The rotating session stays; the other one ended.
    assert_eq!(get(&server, "/dashboard", Some(&owner)).await.0.status, StatusCode::OK);
    assert_eq!(
        get(&server, "/dashboard", Some(&clerk)).await.0.status,
        StatusCode::SEE_OTHER
    );
    // Shown once: the page again shows no secret.
    let (_, page) = get(&server, "/dashboard/developers", Some(&owner)).await;
    assert!(!page.contains(&new_key));
}

#[tokio::test]
async fn settings_saved_in_the_dashboard_are_the_merchants() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    create_user(&server, &merchant.id, "owner@toko.example").await;
    let session = sign_in(&server, "owner@toko.example", PASSWORD).await.unwrap();
    let (_, page) = get(&server, "/dashboard/developers", Some(&session)).await;
    let csrf = csrf_in(&page);
    let (reply, _) = post_form(
        &server,
        "/dashboard/developers/settings",
        Some(&session),
        &[
            ("csrf", &csrf),
            ("default_notify_url", "https://toko.example/hooks"),
            ("require_signature", "on"),
        ],
    )
    .await;
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
async fn the_sandbox_demo_merchant_has_a_dashboard_user() {
    let temp = tempfile::tempdir().unwrap();
    let server = TestServer::start_in(temp.path(), &[]);
    let credentials: Value =
        serde_json::from_str(&std::fs::read_to_string(temp.path().join("demo-credentials.json")).unwrap()).unwrap();
    let email = credentials["dashboard_email"].as_str().unwrap();
    let password = credentials["dashboard_password"].as_str().unwrap();
    assert!(password.len() >= 12);
    let session = sign_in(&server, email, password).await.unwrap();
    let (reply, page) = get(&server, "/dashboard", Some(&session)).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(page.contains("Demo Merchant"));
    assert!(page.contains("Rp 100.000.000"), "the demo merchant's funding");
}

#[tokio::test]
async fn orders_money_and_webhooks_pages_act_through_the_engine() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    server.credit(&merchant.id, 100_000_000).await;
    create_user(&server, &merchant.id, "owner@toko.example").await;
    let session = sign_in(&server, "owner@toko.example", PASSWORD).await.unwrap();
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
    let (reply, _) = post_form(
        &server,
        "/dashboard/disbursements",
        Some(&session),
        &[
            ("csrf", &csrf),
            ("nonce", &nonce),
            ("channel", "BANK"),
            ("provider", "BCA"),
            ("account", "1234567890"),
            ("account_name", "PT Sumber Makmur"),
            ("amount", "150000"),
        ],
    )
    .await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    let (reply, page) = post_form(
        &server,
        "/dashboard/disbursements/batch",
        Some(&session),
        &[
            ("csrf", &csrf),
            ("nonce", "batch-nonce-1"),
            ("csv", "channel,provider,account,account_name,amount\nBANK,BCA,1234567891,Satu,20000\nEWALLET,DANA,081234567890,,25000\nBANK,NOPE,1,X,10000\n"),
        ],
    )
    .await;
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
    let (reply, _) = post_form(
        &server,
        "/dashboard/disbursements",
        Some(&session),
        &[
            ("nonce", "x"),
            ("channel", "BANK"),
            ("provider", "BCA"),
            ("account", "1"),
            ("amount", "10000"),
        ],
    )
    .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    let listed = server.call(Method::GET, "/v1/disbursements", key, None).await;
    assert_eq!(listed.body["meta"]["total"], 3);
}

/// A multipart body of text fields and one file.
fn multipart(fields: &[(&str, &str)], file: &str) -> (String, Vec<u8>) {
    let boundary = "paygate-test-boundary-7d1f";
    let mut body = String::new();
    for (name, value) in fields {
        body.push_str(&format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
        ));
    }
    body.push_str(&format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"batch.csv\"\r\nContent-Type: text/csv\r\n\r\n{file}\r\n--{boundary}--\r\n"
    ));
    (format!("multipart/form-data; boundary={boundary}"), body.into_bytes())
}

#[tokio::test]
async fn a_csv_file_uploads_as_one_batch_and_a_test_event_reaches_the_endpoint_signed() {
    let server = TestServer::start();
    let merchant = server.create_wallet_merchant().await;
    server.credit(&merchant.id, 100_000_000).await;
    create_user(&server, &merchant.id, "owner@toko.example").await;
    let session = sign_in(&server, "owner@toko.example", PASSWORD).await.unwrap();
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
                .post(format!("{}/dashboard/disbursements/upload", server.base))
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
    let listed = server
        .call(Method::GET, "/v1/disbursements", Some(&merchant.api_key), None)
        .await;
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
    let (reply, page_after) = post_form(
        &server,
        "/dashboard/webhooks/test",
        Some(&session),
        &[("csrf", &csrf_in(&page))],
    )
    .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST, "no default notify URL yet");
    assert!(page_after.contains("set a default notify URL first"));
    server
        .admin(
            Method::PATCH,
            &format!("/admin/v1/merchants/{}", merchant.id),
            Some(json!({ "default_notify_url": format!("http://{address}/hook") })),
        )
        .await;
    let (reply, page_after) = post_form(
        &server,
        "/dashboard/webhooks/test",
        Some(&session),
        &[("csrf", &csrf_in(&page))],
    )
    .await;
    assert_eq!(reply.status, StatusCode::OK);
    assert!(page_after.contains("answered HTTP 200"), "{page_after}");
    let (headers, body) = received.lock().unwrap().pop().expect("the endpoint got the test event");
    let event: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(event["event"], "test");
    assert_eq!(event["merchant_id"], merchant.id.as_str());
    let verifier = standardwebhooks::Webhook::new(&merchant.webhook_secret).unwrap();
    verifier
        .verify(body.as_bytes(), &headers)
        .expect("signed as every delivery is");
}
