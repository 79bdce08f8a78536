//! The payer's checkout page in a real browser (headless
//! Chromium, `support::browser`; skipped with a note where none is
//! installed) and over plain HTTP: the amount, the QR or the virtual
//! account, the countdown, the live turn to paid and the redirect, the
//! expired and failed states, both languages, the 404 page, escaping, the
//! phone width, and the headers. `PAYGATE_SCREENSHOTS=1` also saves the
//! README's screenshots to docs/screenshots/.

mod support;

use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::PathBuf;
use support::browser::{Browser, Options, DESKTOP, PHONE};
use support::{assert_v1_error, openapi, TestMerchant, TestServer};

/// The CSP the pages are sent with.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
     connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";

/// A merchant named `name`.
async fn merchant_named(server: &TestServer, name: &str) -> TestMerchant {
    server.create_merchant_with("WALLET", json!({ "name": name })).await
}

/// Creates an order with `extra` fields; returns its V1 view.
async fn create_order(server: &TestServer, merchant: &TestMerchant, method: &str, extra: Value) -> Value {
    let mut body = json!({
        "merchant_order_id": format!("INV-{}", uuid::Uuid::new_v4().simple()),
        "amount_minor": 2_500_000,
        "payment_method": method,
        "expire_minutes": 15,
    });
    if let Value::Object(fields) = extra {
        for (key, value) in fields {
            body[key] = value;
        }
    }
    let reply = server.post("/v1/orders", &merchant.api_key, Some(body)).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body["data"].clone()
}

/// Pays, expires or fails an order through the sandbox.
async fn sandbox(server: &TestServer, merchant: &TestMerchant, order: &Value, action: &str) {
    let path = format!("/v1/sandbox/orders/{}/{action}", order["ref_code"].as_str().unwrap());
    let reply = server.post(&path, &merchant.api_key, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{action}: {}", reply.body);
}

/// GETs a page (checked against the API document): status, headers, text.
async fn get_page(server: &TestServer, path: &str, accept_language: Option<&str>) -> (StatusCode, HeaderMap, String) {
    let mut request = server.client.get(server.url(path));
    if let Some(languages) = accept_language {
        request = request.header("Accept-Language", languages);
    }
    let response = request.send().await.expect("page answered");
    let (status, headers) = (response.status(), response.headers().clone());
    let url_path = response.url().path().to_string();
    let bytes = response.bytes().await.expect("page read");
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    openapi::check(Some("GET"), &url_path, status, content_type, &bytes);
    (status, headers, String::from_utf8(bytes.to_vec()).expect("UTF-8 page"))
}

/// The checkout page's path of an order view.
fn page_path(server: &TestServer, order: &Value) -> String {
    let url = order["checkout_url"].as_str().expect("checkout_url");
    url.strip_prefix(&server.base)
        .expect("checkout_url on this server")
        .to_string()
}

/// Where `PAYGATE_SCREENSHOTS=1` saves a screenshot; `None` otherwise.
fn screenshot_path(name: &str) -> Option<PathBuf> {
    (std::env::var("PAYGATE_SCREENSHOTS").as_deref() == Ok("1")).then(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("docs/screenshots")
            .join(name)
    })
}

/// A phone whose browser asks for Bahasa Indonesia (Chromium's own default
/// is English, which the page would follow).
async fn indonesian_phone() -> Option<Browser> {
    Browser::start(Options {
        size: PHONE,
        accept_language: Some("id-ID,id".into()),
    })
    .await
}

/// The page is no wider than the viewport: nothing scrolls sideways.
async fn assert_fits(browser: &Browser, width: u32) {
    let widths = browser
        .script("return [document.documentElement.scrollWidth, window.innerWidth];")
        .await;
    assert_eq!(widths[1], json!(width), "viewport width");
    assert!(
        widths[0].as_u64().unwrap() <= u64::from(width),
        "the page is {} px wide in a {width} px viewport",
        widths[0]
    );
}

#[tokio::test]
async fn a_qris_order_paid_while_its_page_is_open_turns_paid_and_returns_to_the_merchant() {
    let server = TestServer::start();
    let merchant = merchant_named(&server, "Toko Kopi Senja").await;
    let return_url = server.url("/healthz?from=checkout");
    let order = create_order(&server, &merchant, "QRIS", json!({ "return_url": return_url })).await;
    let Some(browser) = indonesian_phone().await else {
        return;
    };
    browser.goto(order["checkout_url"].as_str().unwrap()).await;

    assert_eq!(
        browser.script("return document.documentElement.lang;").await,
        json!("id")
    );
    browser.wait_for_text("h1", "Toko Kopi Senja").await;
    browser.wait_for_text(".amount", "Rp 25.000").await;
    browser.wait_for_text("#status-text", "Menunggu pembayaran").await;
    let qr = browser.wait_for("img.qr").await;
    let alt = qr.attr("alt").await.unwrap().unwrap_or_default();
    assert!(
        alt.contains("QRIS") && alt.contains("Rp 25.000") && alt.contains("Toko Kopi Senja"),
        "{alt}"
    );
    // The image loaded (same origin, allowed by the CSP) and is a QR's square.
    let size = browser
        .script("const i = document.querySelector('img.qr'); return [i.complete, i.naturalWidth, i.naturalHeight];")
        .await;
    assert_eq!(size[0], json!(true));
    assert!(size[1].as_u64().unwrap() > 0 && size[1] == size[2], "{size}");
    // The countdown runs down from 15 minutes.
    let first = browser.wait_for_text("#countdown", ":").await;
    assert!(first.starts_with("14:") || first == "15:00", "{first}");
    let (shown, before) = (&browser, first.as_str());
    let later = shown
        .poll(move || async move {
            let now = shown.find("#countdown").await?.text().await.ok()?;
            (now != before).then_some(now)
        })
        .await;
    assert!(later.is_some_and(|later| later < first), "the countdown does not move");
    assert_fits(&browser, PHONE.0).await;

    sandbox(&server, &merchant, &order, "pay").await;
    browser.wait_for_text("#status-text", "Pembayaran berhasil").await;
    browser.wait_until_displayed("#result-paid", true).await;
    browser.wait_until_displayed("#pay", false).await;
    let link = browser.wait_for("#return-link").await;
    assert_eq!(link.attr("href").await.unwrap().as_deref(), Some(return_url.as_str()));
    // Within 5 s the page sends the payer back to the merchant.
    let started = std::time::Instant::now();
    let landed = browser.wait_for_url(&server.url("/healthz")).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(landed, return_url);
    assert!(browser.open_dialog().await.is_none());
    browser.close().await;
}

#[tokio::test]
async fn a_bank_transfer_page_shows_the_virtual_account_with_a_copy_button() {
    let server = TestServer::start();
    let merchant = merchant_named(&server, "Toko Buku Nusantara").await;
    let order = create_order(&server, &merchant, "BANK_TRANSFER", json!({})).await;
    let number = order["virtual_account"]["account_number"].as_str().unwrap().to_string();
    let Some(browser) = indonesian_phone().await else {
        return;
    };
    browser.goto(order["checkout_url"].as_str().unwrap()).await;

    browser.wait_for_text(".va-bank", "BCA").await;
    assert_eq!(browser.wait_for(".va-number").await.text().await.unwrap(), number);
    assert!(browser.find("img.qr").await.is_none(), "no QR for a transfer");
    browser.wait_until_displayed("#copy-va", true).await;
    let copy = browser.wait_for("#copy-va").await;
    assert_eq!(copy.text().await.unwrap(), "Salin nomor");
    copy.click().await.unwrap();
    // Copied by the clipboard API or, where the browser refuses it, by the
    // selection: either way the payer is told.
    let said = browser.wait_for_text("#copy-result", ".").await;
    assert!(
        said == "Nomor virtual account disalin." || said.starts_with("Tidak dapat menyalin"),
        "{said}"
    );
    assert_fits(&browser, PHONE.0).await;
    // At desktop width the page stays a centred column.
    browser.resize(DESKTOP).await;
    assert_fits(&browser, DESKTOP.0).await;
    browser.close().await;
}

#[tokio::test]
async fn the_page_is_in_english_by_query_or_by_accept_language() {
    let server = TestServer::start();
    let merchant = merchant_named(&server, "Warung Makan").await;
    let order = create_order(&server, &merchant, "QRIS", json!({})).await;
    let path = page_path(&server, &order);

    for (query, languages, english) in [
        ("", None, false),
        ("?lang=en", None, true),
        ("?lang=en", Some("id-ID,id"), true),
        ("", Some("en-US,en;q=0.9,id;q=0.8"), true),
        ("", Some("id-ID,id;q=0.9,en;q=0.8"), false),
        ("", Some("fr-FR, en;q=0.5"), true),
        ("", Some("en;q=0, id"), false),
        ("?lang=id", Some("en-US,en"), false),
        ("?lang=xx", Some("en"), true),
    ] {
        let (status, headers, page) = get_page(&server, &format!("{path}{query}"), languages).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers["vary"], "Accept-Language");
        let case = format!("{query} {languages:?}");
        if english {
            assert!(page.contains(r#"<html lang="en">"#), "{case}");
            assert!(
                page.contains("Waiting for payment") && page.contains("Pay with QRIS"),
                "{case}"
            );
        } else {
            assert!(page.contains(r#"<html lang="id">"#), "{case}");
            assert!(
                page.contains("Menunggu pembayaran") && page.contains("Bayar dengan QRIS"),
                "{case}"
            );
        }
    }

    // In the browser, both ways; the status words swap in the page's language.
    let Some(browser) = Browser::start(Options {
        size: PHONE,
        accept_language: Some("en-US,en".into()),
    })
    .await
    else {
        return;
    };
    browser.goto(order["checkout_url"].as_str().unwrap()).await;
    browser.wait_for_text("#status-text", "Waiting for payment").await;
    browser.wait_for_text("#pay h2", "Pay with QRIS").await;
    browser.goto(&format!("{}{path}?lang=id", server.base)).await;
    browser.wait_for_text("#status-text", "Menunggu pembayaran").await;
    browser.goto(&format!("{}{path}?lang=en", server.base)).await;
    sandbox(&server, &merchant, &order, "pay").await;
    browser.wait_for_text("#status-text", "Payment received").await;
    browser.close().await;
}

#[tokio::test]
async fn expired_and_failed_orders_say_so() {
    let server = TestServer::start();
    let merchant = merchant_named(&server, "Toko Sepatu").await;
    let expired = create_order(&server, &merchant, "QRIS", json!({})).await;
    sandbox(&server, &merchant, &expired, "expire").await;
    let failing = create_order(&server, &merchant, "BANK_TRANSFER", json!({})).await;

    // Rendered on the server, so right without the script too.
    let (_, _, page) = get_page(&server, &page_path(&server, &expired), None).await;
    assert!(page.contains("Waktu pembayaran habis"));

    let Some(browser) = indonesian_phone().await else {
        return;
    };
    browser.goto(expired["checkout_url"].as_str().unwrap()).await;
    browser.wait_for_text("#status-text", "Waktu pembayaran habis").await;
    browser.wait_until_displayed("#result-expired", true).await;
    browser.wait_until_displayed("#pay", false).await;
    browser.wait_until_displayed("#result-paid", false).await;

    // Failed while open: the page turns live.
    browser.goto(failing["checkout_url"].as_str().unwrap()).await;
    browser.wait_for_text("#status-text", "Menunggu pembayaran").await;
    sandbox(&server, &merchant, &failing, "fail").await;
    browser.wait_for_text("#status-text", "Pembayaran gagal").await;
    browser.wait_until_displayed("#result-failed", true).await;
    browser.wait_until_displayed("#pay", false).await;
    browser.close().await;
}

#[tokio::test]
async fn an_unknown_or_malformed_id_is_a_404_page_in_the_chosen_language() {
    let server = TestServer::start();
    let unknown = format!("/checkout/{}", uuid::Uuid::new_v4());
    for (path, languages, words, lang) in [
        (unknown.clone(), None, "Halaman tidak ditemukan", "id"),
        (format!("{unknown}?lang=en"), None, "Page not found", "en"),
        ("/checkout/not-an-order".to_string(), Some("en"), "Page not found", "en"),
        (
            "/checkout/%3Cscript%3E".to_string(),
            None,
            "Halaman tidak ditemukan",
            "id",
        ),
    ] {
        let (status, headers, page) = get_page(&server, &path, languages).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert!(headers["content-type"].to_str().unwrap().starts_with("text/html"));
        assert_eq!(headers["content-security-policy"], CSP);
        assert!(
            page.contains(&format!(r#"<html lang="{lang}">"#)) && page.contains(words),
            "{path}"
        );
        assert!(!page.contains("<script"), "{path}");
    }
    let status = server.call(Method::GET, &format!("{unknown}/status"), None, None).await;
    assert_v1_error(&status, 404, "ORDER_NOT_FOUND");
    let malformed = server.call(Method::GET, "/checkout/42/status", None, None).await;
    assert_v1_error(&malformed, 404, "ORDER_NOT_FOUND");

    let Some(browser) = indonesian_phone().await else {
        return;
    };
    browser.goto(&server.url(&unknown)).await;
    browser.wait_for_text("h1", "Halaman tidak ditemukan").await;
    assert_fits(&browser, PHONE.0).await;
    browser.close().await;
}

#[tokio::test]
async fn a_merchant_named_like_a_script_shows_as_text() {
    let server = TestServer::start();
    let name = "<script>alert(1)</script>";
    let merchant = merchant_named(&server, name).await;
    let order = create_order(&server, &merchant, "QRIS", json!({})).await;

    let (_, _, page) = get_page(&server, &page_path(&server, &order), None).await;
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!page.contains(name), "the name is escaped everywhere");

    let Some(browser) = indonesian_phone().await else {
        return;
    };
    browser.goto(order["checkout_url"].as_str().unwrap()).await;
    assert!(browser.open_dialog().await.is_none(), "an alert fired");
    assert_eq!(browser.wait_for("h1").await.text().await.unwrap(), name);
    let title = browser.script("return document.title;").await;
    assert!(title.as_str().unwrap().ends_with(name), "{title}");
    let alt = browser.wait_for("img.qr").await.attr("alt").await.unwrap().unwrap();
    assert!(alt.ends_with(name), "{alt}");
    assert!(browser.open_dialog().await.is_none(), "an alert fired");
    browser.close().await;
}

#[tokio::test]
async fn pages_and_assets_are_sent_with_their_security_headers() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let order = create_order(&server, &merchant, "QRIS", json!({})).await;
    let (status, headers, page) = get_page(&server, &page_path(&server, &order), None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(headers["content-security-policy"], CSP);
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["cache-control"], "no-store");
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.contains(r#"<meta name="viewport" content="width=device-width, initial-scale=1">"#));
    // The CSP allows no inline script or style: the page has none.
    assert_eq!(page.matches("<script").count(), 1);
    assert!(page.contains(r#"<script src="/assets/checkout.js?v="#));
    assert!(!page.contains(" style=") && !page.contains("<style"));
    for handler in ["onclick=", "onload=", "onerror="] {
        assert!(!page.contains(handler), "{handler}");
    }
    assert!(page.contains(r#"aria-live="polite""#));
    // Without the script: the state and a refresh link.
    assert!(page.contains(r#"id="refresh" href="/checkout/"#));

    for (name, content_type) in [
        ("checkout.js", "text/javascript; charset=utf-8"),
        ("checkout.css", "text/css; charset=utf-8"),
    ] {
        let start = page.find(&format!("/assets/{name}?v=")).expect("the page links it");
        let link = &page[start..page[start..].find('"').unwrap() + start];
        let (status, headers, body) = get_page(&server, link, None).await;
        assert_eq!(status, StatusCode::OK, "{link}");
        assert_eq!(headers["content-type"], content_type);
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["cache-control"], "public, max-age=31536000, immutable");
        assert!(!body.is_empty());
        let (_, headers, _) = get_page(&server, &format!("/assets/{name}"), None).await;
        assert_eq!(headers["cache-control"], "public, max-age=300", "unversioned: short");
    }
    let (status, headers, _) = get_page(&server, "/assets/nothing.js", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(headers["content-type"].to_str().unwrap().starts_with("text/plain"));
}

#[tokio::test]
async fn the_status_endpoint_follows_the_order() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let return_url = "https://shop.example/thanks?order=1";
    let order = create_order(&server, &merchant, "QRIS", json!({ "return_url": return_url })).await;
    let path = format!("{}/status", page_path(&server, &order));

    let reply = server.call(Method::GET, &path, None, None).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.headers["cache-control"], "no-store");
    assert_eq!(
        reply.body,
        json!({ "status": "PENDING", "paid": false, "expires_at": order["expires_at"], "return_url": return_url })
    );
    sandbox(&server, &merchant, &order, "pay").await;
    let reply = server.call(Method::GET, &path, None, None).await;
    assert_eq!(
        (reply.body["status"].clone(), reply.body["paid"].clone()),
        (json!("PAID"), json!(true))
    );

    // A refund comes after the payment: still paid, for the payer.
    let refund = server
        .post(
            &format!("/v1/orders/{}/refund", order["ref_code"].as_str().unwrap()),
            &merchant.api_key,
            Some(json!({ "amount_minor": 100_000, "idempotency_key": "R-1", "reason": "CUSTOMER_REQUEST" })),
        )
        .await;
    assert_eq!(refund.status, StatusCode::CREATED, "{}", refund.body);
    let reply = server.call(Method::GET, &path, None, None).await;
    assert_eq!(reply.body["status"], json!("PARTIALLY_REFUNDED"));
    assert_eq!(reply.body["paid"], json!(true));
    let (_, _, page) = get_page(&server, &page_path(&server, &order), None).await;
    assert!(page.contains("Pembayaran berhasil"));
    assert!(page.contains(&format!(
        r#"<meta http-equiv="refresh" content="3;url={}">"#,
        return_url.replace('&', "&amp;")
    )));
}

#[tokio::test]
async fn every_order_answer_carries_its_checkout_url() {
    let (server, merchant) = TestServer::start_with_merchant().await;
    let order = create_order(&server, &merchant, "BANK_TRANSFER", json!({})).await;
    let expected = json!(format!("{}/checkout/{}", server.base, order["id"].as_str().unwrap()));
    assert_eq!(order["checkout_url"], expected, "create");
    let ref_code = order["ref_code"].as_str().unwrap();
    let got = server.get(&format!("/v1/orders/{ref_code}"), &merchant.api_key).await;
    assert_eq!(got.body["data"]["checkout_url"], expected, "get");
    let list = server.get("/v1/orders", &merchant.api_key).await;
    assert_eq!(list.body["data"][0]["checkout_url"], expected, "list");
    let (status, _, page) = get_page(&server, &page_path(&server, &order), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(page.contains(order["virtual_account"]["account_number"].as_str().unwrap()));
}

/// The README's screenshots (`PAYGATE_SCREENSHOTS=1`), at phone width: a
/// pending QRIS order, the same order paid, and a bank transfer.
#[tokio::test]
async fn screenshots_of_the_checkout_page() {
    let Some(pending_path) = screenshot_path("checkout-pending-phone.png") else {
        return;
    };
    let server = TestServer::start();
    let merchant = merchant_named(&server, "Toko Kopi Senja").await;
    let order = create_order(&server, &merchant, "QRIS", json!({})).await;
    let transfer = create_order(&server, &merchant, "BANK_TRANSFER", json!({})).await;
    let Some(browser) = indonesian_phone().await else {
        return;
    };
    browser.goto(order["checkout_url"].as_str().unwrap()).await;
    browser.wait_for_text("#countdown", "14:").await;
    let shown = &browser;
    shown
        .poll(move || async move {
            let loaded = shown.script("return document.querySelector('img.qr').complete;").await;
            (loaded == json!(true)).then_some(())
        })
        .await
        .expect("the QR loads");
    browser.save_screenshot(&pending_path).await;
    sandbox(&server, &merchant, &order, "pay").await;
    browser.wait_for_text("#status-text", "Pembayaran berhasil").await;
    browser
        .save_screenshot(&screenshot_path("checkout-paid-phone.png").unwrap())
        .await;
    browser.goto(transfer["checkout_url"].as_str().unwrap()).await;
    browser.wait_until_displayed("#copy-va", true).await;
    browser
        .save_screenshot(&screenshot_path("checkout-bank-transfer-phone.png").unwrap())
        .await;
    browser.close().await;
}
