//! Users made by the operator, sign-in and sign-out, CSRF on every form,
//! sign-in throttling, and rotation ending the other sessions.

use super::*;

#[tokio::test]
async fn the_operator_makes_users_and_bad_ones_change_nothing() {
    let (server, merchant) = TestServer::start_with_merchant().await;
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
        .admin_post(
            &format!("/admin/v1/merchants/{}/users", merchant.id),
            json!({ "email": "short@toko.example", "password": "elevenchars" }),
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
    let (server, merchant) = TestServer::start_with_merchant().await;
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
    let (server, merchant) = TestServer::start_with_merchant().await;
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
        server.get("/v1/balance", &merchant.api_key).await.status,
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
    let (server, merchant) = TestServer::start_with_merchant().await;
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
    let (server, merchant) = TestServer::start_with_merchant().await;
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
        &server.get("/v1/balance", &merchant.api_key).await,
        401,
        "INVALID_API_KEY",
    );
    assert_eq!(server.get("/v1/balance", &new_key).await.status, StatusCode::OK);
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
