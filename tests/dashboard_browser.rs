//! The merchant dashboard in a real browser (Debian's Chromium through
//! ChromeDriver; skipped with a message where it is not installed): sign in,
//! the balance the API shows, credentials rotated in the browser killing the
//! old key, a merchant named like markup shown as text, and the pages at
//! phone and desktop widths. `PAYGATE_SCREENSHOTS=1` also saves the README's
//! screenshots of the main pages.

mod support;

use fantoccini::Locator;
use reqwest::Method;
use serde_json::json;
use std::path::PathBuf;
use support::browser::{Browser, Options, PHONE};
use support::*;

const PASSWORD: &str = "correct horse battery staple";

fn screenshot_path(name: &str) -> Option<PathBuf> {
    (std::env::var("PAYGATE_SCREENSHOTS").as_deref() == Ok("1")).then(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("docs/screenshots")
            .join(name)
    })
}

async fn user(server: &TestServer, merchant_id: &str, email: &str) {
    let reply = server
        .admin_post(
            &format!("/admin/v1/merchants/{merchant_id}/users"),
            json!({ "email": email, "password": PASSWORD }),
        )
        .await;
    assert_eq!(reply.status.as_u16(), 201, "{}", reply.body);
}

/// Signs in through the form, as a person would.
async fn sign_in(browser: &Browser, server: &TestServer, email: &str) {
    browser.goto(&format!("{}/dashboard", server.base)).await;
    browser
        .wait_for_url(&format!("{}/dashboard/sign-in", server.base))
        .await;
    browser.wait_for("#email").await.send_keys(email).await.unwrap();
    browser.wait_for("#password").await.send_keys(PASSWORD).await.unwrap();
    browser.wait_for("button[type=submit]").await.click().await.unwrap();
    browser.wait_for("#balance, .figure").await;
}

async fn fits(browser: &Browser, width: u32) {
    let scroll = browser.script("return document.documentElement.scrollWidth").await;
    assert!(
        scroll.as_u64().unwrap() <= width as u64,
        "the page is {scroll} px wide at {width} px ({})",
        browser.url().await
    );
}

#[tokio::test]
async fn sign_in_see_the_balance_and_rotate_credentials_in_the_browser() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    server.credit(&merchant.id, 12_345_600).await;
    user(&server, &merchant.id, "owner@toko.example").await;
    for n in 0..3 {
        let order = server
            .call(
                Method::POST,
                "/v1/orders",
                Some(&merchant.api_key),
                Some(json!({ "merchant_order_id": format!("INV-{n}"), "amount_minor": 2_500_000 + n * 1_000_000, "payment_method": "QRIS" })),
            )
            .await;
        let ref_code = order.body["data"]["ref_code"].as_str().unwrap().to_string();
        server
            .call(
                Method::POST,
                &format!("/v1/sandbox/orders/{ref_code}/pay"),
                Some(&merchant.api_key),
                None,
            )
            .await;
    }
    let Some(browser) = Browser::desktop().await else {
        return;
    };
    sign_in(&browser, &server, "owner@toko.example").await;
    let api_balance = server.balance(&merchant.api_key).await;
    let shown = browser.wait_for("#balance").await.text().await.unwrap();
    let digits: String = shown.chars().filter(|c| c.is_ascii_digit()).collect();
    assert_eq!(
        digits.parse::<i64>().unwrap() * 100,
        api_balance,
        "the page shows {shown}"
    );
    assert_eq!(browser.wait_for("#today-count").await.text().await.unwrap(), "3 orders");
    fits(&browser, 1280).await;
    if let Some(path) = screenshot_path("dashboard-overview-desktop.png") {
        browser.save_screenshot(&path).await;
    }
    browser.goto(&format!("{}/dashboard/orders", server.base)).await;
    browser.wait_for("table tbody tr").await;
    if let Some(path) = screenshot_path("dashboard-orders-desktop.png") {
        browser.save_screenshot(&path).await;
    }

    // Rotate in the browser: the old key dies, the new one works.
    browser.goto(&format!("{}/dashboard/developers", server.base)).await;
    browser.wait_for("#rotate").await.click().await.unwrap();
    let new_key = browser.wait_for("#new-api-key").await.text().await.unwrap();
    assert_ne!(new_key, merchant.api_key);
    assert_v1_error(
        &server
            .call(Method::GET, "/v1/balance", Some(&merchant.api_key), None)
            .await,
        401,
        "INVALID_API_KEY",
    );
    assert_eq!(server.balance(&new_key).await, api_balance);

    // Sign out: back to the form, and the dashboard needs signing in again.
    browser
        .client
        .find(Locator::Css(".sign-out button"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    browser
        .wait_for_url(&format!("{}/dashboard/sign-in", server.base))
        .await;
    browser.goto(&format!("{}/dashboard", server.base)).await;
    browser
        .wait_for_url(&format!("{}/dashboard/sign-in", server.base))
        .await;
    browser.close().await;
}

#[tokio::test]
async fn the_pages_fit_a_phone_and_markup_in_a_name_stays_text() {
    let server = TestServer::start();
    let merchant = server
        .create_merchant_with(
            "WALLET",
            json!({ "name": "<script>alert(1)</script><img src=x onerror=alert(2)>" }),
        )
        .await;
    user(&server, &merchant.id, "owner@toko.example").await;
    let Some(browser) = Browser::start(Options {
        size: PHONE,
        ..Options::default()
    })
    .await
    else {
        return;
    };
    sign_in(&browser, &server, "owner@toko.example").await;
    let heading = browser.wait_for("h1").await.text().await.unwrap();
    assert_eq!(heading, "<script>alert(1)</script><img src=x onerror=alert(2)>");
    assert_eq!(browser.open_dialog().await, None, "no script ran");
    assert!(
        browser.find("main img").await.is_none(),
        "no element was made from the name"
    );
    for path in [
        "/dashboard",
        "/dashboard/orders",
        "/dashboard/disbursements",
        "/dashboard/balance",
        "/dashboard/webhooks",
        "/dashboard/developers",
    ] {
        browser.goto(&format!("{}{path}", server.base)).await;
        browser.wait_for("h1").await;
        fits(&browser, PHONE.0).await;
        assert_eq!(browser.open_dialog().await, None, "no script ran on {path}");
    }
    if let Some(path) = screenshot_path("dashboard-developers-phone.png") {
        browser.save_screenshot(&path).await;
    }
    browser.close().await;
}
