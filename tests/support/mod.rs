//! Test harness: starts the real `paygate` binary on 127.0.0.1:0 with a
//! temporary data dir and talks HTTP to it, as a merchant or operator would.
#![allow(dead_code)]

pub mod browser;
pub mod cluster;
pub mod disbursements;
pub mod legacy;
pub mod load;
pub mod openapi;
pub mod table;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The admin token every test server is started with.
pub const ADMIN_TOKEN: &str = "test-admin-token";

/// Longest a graceful stop may take in a test: the server's own bounds
/// (requests in progress, disbursement messages, actors) add up to well under it.
const STOP_WAIT: Duration = Duration::from_secs(90);

/// Longest a start may take in a test, journal replay included.
const START_WAIT: Duration = Duration::from_secs(120);

/// Longest a request may take in a test: far beyond any answer's, so only
/// a hang reaches it, and then fails the test rather than the whole run.
const REQUEST_WAIT: Duration = Duration::from_secs(120);

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(REQUEST_WAIT)
        .build()
        .expect("HTTP client")
}

/// Log lines of a server kept for when its test fails.
const LOG_LINES_KEPT: usize = 400;

/// A server's log (its stderr), across its restarts: the last
/// `LOG_LINES_KEPT` lines, printed only when its test fails. A passing test
/// prints none of the warnings it provokes on purpose (a vendor that never
/// answers, a node killed under load).
#[derive(Clone, Default)]
struct ServerLog(Arc<Mutex<VecDeque<String>>>);

impl ServerLog {
    /// Reads `stderr` to its end on a thread, keeping its last lines.
    fn follow(&self, stderr: ChildStderr) {
        let lines = self.0.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { return };
                let mut lines = lines.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                if lines.len() == LOG_LINES_KEPT {
                    lines.pop_front();
                }
                lines.push_back(line);
            }
        });
    }

    /// The kept lines, to the test's own output (shown when it fails).
    fn print(&self) {
        let lines = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        eprintln!("--- the server's last {} log lines ---", lines.len());
        for line in lines.iter() {
            eprintln!("{line}");
        }
        eprintln!("--- end of the server's log ---");
    }
}

/// A running server process.
pub struct TestServer {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The data directory (kept across restarts).
    pub data_dir: PathBuf,
    /// Keeps a temporary data dir alive; `None` when the caller owns the dir.
    _temp: Option<tempfile::TempDir>,
    child: Child,
    extra_args: Vec<String>,
    log: ServerLog,
    /// HTTP client.
    pub client: reqwest::Client,
}

/// A response: status, parsed JSON body (Null when not JSON) and headers.
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
    pub headers: reqwest::header::HeaderMap,
}

/// A merchant created through the admin API.
pub struct TestMerchant {
    pub id: String,
    pub api_key: String,
    pub client_id: String,
    pub client_secret: String,
    pub webhook_secret: String,
}

/// The `paygate` binary cargo built for the tests, as a command running
/// `subcommand` and logging at `warn`.
pub fn paygate(subcommand: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_paygate"));
    command.arg(subcommand).env("PAYGATE_LOG", "warn");
    command
}

fn spawn(data_dir: &Path, extra_args: &[String], log: &ServerLog) -> (Child, String) {
    let mut child = paygate("serve")
        .arg("--listen")
        .arg("127.0.0.1:0")
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--admin-token")
        .arg(ADMIN_TOKEN)
        .args(extra_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paygate binary starts");
    log.follow(child.stderr.take().expect("stderr piped"));
    let stdout = child.stdout.take().expect("stdout piped");
    // Read on a thread, so a server that never gets to its address line
    // fails the test after `START_WAIT` instead of holding the whole run.
    let (told, address) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        for line in lines.by_ref() {
            let Ok(line) = line else { return };
            if let Some(rest) = line.strip_prefix("paygate listening on ") {
                let _ = told.send(rest.trim().to_string());
                break;
            }
        }
        // Keep draining stdout so the child never blocks on a full pipe.
        for _ in lines {}
    });
    let base = match address.recv_timeout(START_WAIT) {
        Ok(base) => base,
        Err(error) => {
            let _ = child.kill();
            let status = child.wait();
            log.print();
            panic!("the server printed no address within {START_WAIT:?} ({error}; {status:?})");
        }
    };
    (child, base)
}

impl TestServer {
    /// A server on a fresh temporary data dir.
    pub fn start() -> TestServer {
        TestServer::start_with(&[])
    }

    /// A server on a fresh temporary data dir and a WALLET merchant with
    /// default settings on it: the opening of most tests.
    pub async fn start_with_merchant() -> (TestServer, TestMerchant) {
        let server = TestServer::start();
        let merchant = server.create_wallet_merchant().await;
        (server, merchant)
    }

    /// A server on a fresh temporary data dir with extra flags.
    pub fn start_with(extra_args: &[&str]) -> TestServer {
        let temp = tempfile::tempdir().expect("temp dir");
        let data_dir = temp.path().to_path_buf();
        let extra_args: Vec<String> = extra_args.iter().map(|s| s.to_string()).collect();
        let log = ServerLog::default();
        let (child, base) = spawn(&data_dir, &extra_args, &log);
        TestServer {
            base,
            data_dir,
            _temp: Some(temp),
            child,
            extra_args,
            log,
            client: client(),
        }
    }

    /// A server on `data_dir`, which the caller owns (a filesystem it mounted, say).
    pub fn start_in(data_dir: &Path, extra_args: &[&str]) -> TestServer {
        let extra_args: Vec<String> = extra_args.iter().map(|s| s.to_string()).collect();
        let log = ServerLog::default();
        let (child, base) = spawn(data_dir, &extra_args, &log);
        TestServer {
            base,
            data_dir: data_dir.to_path_buf(),
            _temp: None,
            child,
            extra_args,
            log,
            client: client(),
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends the process a signal (`libc::SIGSTOP`, `libc::SIGCONT`...).
    pub fn signal(&self, signal: i32) {
        unsafe {
            libc::kill(self.child.id() as i32, signal);
        }
    }

    /// Kills the process with SIGKILL (no shutdown, no final checkpoint).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops the process with SIGTERM and waits for it to exit; one still
    /// running after `STOP_WAIT` is killed and fails the test, rather than
    /// holding the whole run.
    pub fn stop(&mut self) {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let deadline = Instant::now() + STOP_WAIT;
        while self.child.try_wait().expect("child status").is_none() {
            if Instant::now() > deadline {
                self.kill();
                panic!("the server was still running {STOP_WAIT:?} after SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts the server again on the same data dir with other extra flags.
    pub fn restart_with(&mut self, extra_args: &[&str]) {
        self.extra_args = extra_args.iter().map(|s| s.to_string()).collect();
        self.restart();
    }

    /// Starts the server again on the same data dir (after `kill` or `stop`).
    pub fn restart(&mut self) {
        let (child, base) = spawn(&self.data_dir, &self.extra_args, &self.log);
        self.child = child;
        self.base = base;
    }

    /// A request to `path` with no key or token, to send as it is built.
    pub fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, self.url(path))
    }

    /// The server's URL for `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends a request; `api_key` goes in `X-API-Key`, `body` as JSON.
    pub async fn call(&self, method: Method, path: &str, api_key: Option<&str>, body: Option<Value>) -> Reply {
        let mut request = self.client.request(method.clone(), format!("{}{}", self.base, path));
        if let Some(key) = api_key {
            request = request.header("X-API-Key", key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        reply_to(Some(&method), request.send().await.expect("request sent")).await
    }

    /// `GET path` as the merchant whose key is `api_key`.
    pub async fn get(&self, path: &str, api_key: &str) -> Reply {
        self.call(Method::GET, path, Some(api_key), None).await
    }

    /// `POST path` as the merchant whose key is `api_key`, `body` as JSON.
    pub async fn post(&self, path: &str, api_key: &str, body: Option<Value>) -> Reply {
        self.call(Method::POST, path, Some(api_key), body).await
    }

    /// `DELETE path` as the merchant whose key is `api_key`.
    pub async fn delete(&self, path: &str, api_key: &str) -> Reply {
        self.call(Method::DELETE, path, Some(api_key), None).await
    }

    /// Sends an admin request with the bearer token.
    pub async fn admin(&self, method: Method, path: &str, body: Option<Value>) -> Reply {
        let mut request = self
            .client
            .request(method.clone(), format!("{}{}", self.base, path))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        reply_to(Some(&method), request.send().await.expect("request sent")).await
    }

    /// `POST path` as the operator, `body` as JSON.
    pub async fn admin_post(&self, path: &str, body: Value) -> Reply {
        self.admin(Method::POST, path, Some(body)).await
    }

    /// `PUT path` as the operator, `body` as JSON.
    pub async fn admin_put(&self, path: &str, body: Value) -> Reply {
        self.admin(Method::PUT, path, Some(body)).await
    }

    /// `PATCH /admin/v1/merchants/{id}` with `body`.
    pub async fn patch_merchant(&self, id: &str, body: Value) -> Reply {
        self.admin(Method::PATCH, &format!("/admin/v1/merchants/{id}"), Some(body))
            .await
    }

    /// `POST /admin/v1/merchants/{id}/rotate-credentials`.
    pub async fn rotate_credentials(&self, id: &str) -> Reply {
        let path = format!("/admin/v1/merchants/{id}/rotate-credentials");
        self.admin(Method::POST, &path, None).await
    }

    /// Turns the bank `code` on or off for disbursements (`PUT /admin/v1/banks/{code}`).
    pub async fn set_bank_enabled(&self, code: &str, enabled: bool) -> Reply {
        let body = json!({ "is_enabled": enabled });
        self.admin(Method::PUT, &format!("/admin/v1/banks/{code}"), Some(body))
            .await
    }

    /// Turns the e-wallet `code` on or off (`PUT /admin/v1/ewallets/{code}`).
    pub async fn set_ewallet_enabled(&self, code: &str, enabled: bool) -> Reply {
        let body = json!({ "is_enabled": enabled });
        self.admin(Method::PUT, &format!("/admin/v1/ewallets/{code}"), Some(body))
            .await
    }

    /// `POST /v1/orders/{ref_code}/refund` with `body` as the merchant whose key is `api_key`.
    pub async fn refund(&self, api_key: &str, ref_code: &str, body: Value) -> Reply {
        self.post(&format!("/v1/orders/{ref_code}/refund"), api_key, Some(body))
            .await
    }

    /// `POST /v1/sandbox/orders/{ref_code}/{action}` (`pay`, `expire`, `fail`).
    pub async fn sandbox_order(&self, api_key: &str, ref_code: &str, action: &str) -> Reply {
        self.post(&format!("/v1/sandbox/orders/{ref_code}/{action}"), api_key, None)
            .await
    }

    /// `POST /v1/disbursements` with `body` as the merchant whose key is `api_key`.
    pub async fn disburse(&self, api_key: &str, body: Value) -> Reply {
        self.post("/v1/disbursements", api_key, Some(body)).await
    }

    /// `POST /v1/sandbox/disbursements/{id}/complete` with `status`.
    pub async fn complete_disbursement(&self, api_key: &str, id: &str, status: &str) -> Reply {
        let path = format!("/v1/sandbox/disbursements/{id}/complete");
        self.post(&path, api_key, Some(json!({ "status": status }))).await
    }

    /// `refund` of `amount_minor` under the idempotency key `key`.
    pub async fn refund_of(&self, api_key: &str, ref_code: &str, amount_minor: i64, key: &str) -> Reply {
        let body = json!({ "amount_minor": amount_minor, "idempotency_key": key });
        self.refund(api_key, ref_code, body).await
    }

    /// Creates a merchant of `settlement_type` with any extra fields.
    pub async fn create_merchant_with(&self, settlement_type: &str, extra: Value) -> TestMerchant {
        let mut body = json!({ "name": "Toko Test", "settlement_type": settlement_type });
        if let Value::Object(fields) = extra {
            for (key, value) in fields {
                body[key] = value;
            }
        }
        let reply = self.admin(Method::POST, "/admin/v1/merchants", Some(body)).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        let data = &reply.body["data"];
        TestMerchant {
            id: data["merchant"]["id"].as_str().unwrap().to_string(),
            api_key: data["credentials"]["api_key"].as_str().unwrap().to_string(),
            client_id: data["credentials"]["client_id"].as_str().unwrap().to_string(),
            client_secret: data["credentials"]["client_secret"].as_str().unwrap().to_string(),
            webhook_secret: data["credentials"]["webhook_secret"].as_str().unwrap().to_string(),
        }
    }

    /// Creates a WALLET merchant with default settings.
    pub async fn create_wallet_merchant(&self) -> TestMerchant {
        self.create_merchant_with("WALLET", json!({})).await
    }

    /// Creates an organization named `name`; returns its id.
    pub async fn create_organization(&self, name: &str) -> String {
        let reply = self
            .admin(Method::POST, "/admin/v1/organizations", Some(json!({ "name": name })))
            .await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        assert_eq!(reply.body["data"]["name"], json!(name));
        reply.body["data"]["id"].as_str().unwrap().to_string()
    }

    /// A new organization named `name` with one WALLET merchant in it.
    pub async fn merchant_in_new_organization(&self, name: &str) -> (String, TestMerchant) {
        let organization = self.create_organization(name).await;
        let merchant = self
            .create_merchant_with("WALLET", json!({ "organization_id": organization }))
            .await;
        (organization, merchant)
    }

    /// `PUT /admin/v1/organizations/{organization}/{routes}/{method}`: the
    /// organization's payment (`routes` = `vendors`) or payout
    /// (`payout-vendors`) route for a method or channel, `vendors` in order.
    pub async fn put_route(&self, organization: &str, routes: &str, method: &str, vendors: &[&str]) -> Reply {
        let path = format!("/admin/v1/organizations/{organization}/{routes}/{method}");
        self.admin(Method::PUT, &path, Some(json!({ "vendors": vendors })))
            .await
    }

    /// Credits a merchant's wallet through the admin API; returns the new balance.
    pub async fn credit(&self, merchant_id: &str, amount_minor: i64) -> i64 {
        let reply = self
            .admin(
                Method::POST,
                &format!("/admin/v1/merchants/{merchant_id}/wallet/credit"),
                Some(json!({ "amount_minor": amount_minor, "reason": "test funding" })),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body["data"]["balance_minor"].as_i64().unwrap()
    }

    /// `GET /v1/balance` for a merchant.
    pub async fn balance(&self, api_key: &str) -> i64 {
        let reply = self.call(Method::GET, "/v1/balance", Some(api_key), None).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body["data"]["balance_minor"].as_i64().unwrap()
    }

    /// A merchant's whole balance history, newest first, walked 100 lines
    /// a page; asserts that consecutive lines chain and that the newest
    /// ends at `GET /v1/balance` and the oldest starts from zero.
    pub async fn statement(&self, api_key: &str) -> Vec<Value> {
        let mut lines: Vec<Value> = Vec::new();
        loop {
            let cursor = match lines.last() {
                Some(line) => format!("&starting_after={}", line["id"].as_str().unwrap()),
                None => String::new(),
            };
            let path = format!("/v1/balance/history?limit=100{cursor}");
            let reply = self.call(Method::GET, &path, Some(api_key), None).await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
            lines.extend(reply.body["data"].as_array().unwrap().iter().cloned());
            if reply.body["meta"]["has_more"] != json!(true) {
                break;
            }
        }
        let mut balance = self.balance(api_key).await;
        for line in &lines {
            assert_eq!(line["balance_after_minor"].as_i64().unwrap(), balance, "{line}");
            balance -= line["amount_minor"].as_i64().unwrap();
        }
        assert_eq!(balance, 0, "the oldest line starts from an empty wallet");
        lines
    }

    /// `GET /admin/v1/ledger/verify`'s data.
    pub async fn verify(&self) -> Value {
        let reply = self.admin(Method::GET, "/admin/v1/ledger/verify", None).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body["data"].clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
        if std::thread::panicking() {
            self.log.print();
        }
    }
}

/// `POST /callbacks/{vendor}` with the JSON text `body` and, when given,
/// its `X-Paygate-Signature`.
pub async fn vendor_callback(server: &TestServer, vendor: &str, body: String, signature: Option<String>) -> Reply {
    let url = server.url(&format!("/callbacks/{vendor}"));
    let mut request = server.client.post(url).header("content-type", "application/json");
    if let Some(signature) = signature {
        request = request.header("X-Paygate-Signature", signature);
    }
    sent(request.body(body)).await
}

/// Sends `request` and turns its response into a `Reply`, checked
/// against the API document.
pub async fn sent(request: reqwest::RequestBuilder) -> Reply {
    into_reply(request.send().await.expect("request sent")).await
}

/// Turns a response into a `Reply`, checking it against the API document.
pub async fn into_reply(response: reqwest::Response) -> Reply {
    reply_to(None, response).await
}

/// Turns the response to a `method` request into a `Reply`, checking it
/// against the API document (`openapi::check`).
pub async fn reply_to(method: Option<&Method>, response: reqwest::Response) -> Reply {
    let status = response.status();
    let headers = response.headers().clone();
    let path = response.url().path().to_string();
    let bytes = response.bytes().await.expect("body read");
    let content_type = headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    openapi::check(method.map(Method::as_str), &path, status, content_type, &bytes);
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Reply { status, body, headers }
}

/// Asserts a V1 error envelope: exact status, code, and `success: false`.
pub fn assert_v1_error(reply: &Reply, status: u16, code: &str) {
    assert_eq!(reply.status.as_u16(), status, "unexpected status, body {}", reply.body);
    assert_eq!(reply.body["success"], json!(false), "{}", reply.body);
    assert_eq!(reply.body["error"]["code"], json!(code), "{}", reply.body);
    assert!(
        reply.body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{}",
        reply.body
    );
}

/// Polls until `check` passes or `timeout` elapses.
pub async fn eventually<F: Fn() -> bool>(timeout: Duration, check: F) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    check()
}

/// True for a JSON string holding a UUID.
pub fn is_uuid(value: &Value) -> bool {
    value.as_str().is_some_and(|s| uuid::Uuid::parse_str(s).is_ok())
}

/// The keys of a JSON object, sorted.
/// An object's keys in the order the server wrote them (serde_json keeps
/// that order here: the workspace enables its `preserve_order`).
pub fn keys_in_order(value: &Value) -> Vec<String> {
    value
        .as_object()
        .unwrap_or_else(|| panic!("expected an object, got {value}"))
        .keys()
        .cloned()
        .collect()
}

pub fn sorted_keys(value: &Value) -> Vec<String> {
    let object = value
        .as_object()
        .unwrap_or_else(|| panic!("expected an object, got {value}"));
    let mut keys: Vec<String> = object.keys().cloned().collect();
    keys.sort();
    keys
}

/// Owned, sorted copies of `names`, to compare with `sorted_keys`.
/// Names as owned strings, in the order given.
pub fn ordered(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

pub fn strings(names: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    names.sort();
    names
}

/// `sha256=<lowercase hex HMAC-SHA256(secret, body)>`: the optional
/// `X-Signature` of a V1 request.
pub fn hmac_signature(secret: &str, body: &[u8]) -> String {
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}
