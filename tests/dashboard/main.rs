//! The merchant dashboard over HTTP: users made by the
//! operator, sign-in with a session cookie, CSRF on every form, sign-in
//! throttling, sign-out and rotation ending sessions on the server, pages
//! showing what the API shows, escaped.
//! This file holds the browser-like client and the forms its modules share.

#[path = "../support/mod.rs"]
mod support;

mod pages;
mod sessions;

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
    send(browser().get(server.url(path)), cookie).await
}

async fn post_form(server: &TestServer, path: &str, cookie: Option<&str>, form: &[(&str, &str)]) -> (Reply, String) {
    send(browser().post(server.url(path)).form(form), cookie).await
}

/// Sends `request` with `cookie`, if any; the reply (no JSON body) and the page's text.
async fn send(mut request: reqwest::RequestBuilder, cookie: Option<&str>) -> (Reply, String) {
    if let Some(cookie) = cookie {
        request = request.header(COOKIE, cookie);
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let body = Value::Null;
    (Reply { status, body, headers }, text)
}

/// A server with a WALLET merchant funded with `funding`, and its owner
/// (`owner@toko.example`) signed in: the server, the merchant, the session cookie.
async fn funded_owner_signed_in(funding: i64) -> (TestServer, TestMerchant, String) {
    let (server, merchant) = TestServer::start_with_merchant().await;
    server.credit(&merchant.id, funding).await;
    create_user(&server, &merchant.id, "owner@toko.example").await;
    let session = sign_in(&server, "owner@toko.example", PASSWORD).await.unwrap();
    (server, merchant, session)
}

async fn create_user(server: &TestServer, merchant_id: &str, email: &str) -> Reply {
    server
        .admin_post(
            &format!("/admin/v1/merchants/{merchant_id}/users"),
            json!({ "email": email, "password": PASSWORD }),
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
