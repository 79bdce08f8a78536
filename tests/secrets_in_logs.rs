//! No secret, key or signature reaches the logs at any level: the real
//! server runs with `PAYGATE_LOG=trace` (every crate, every level) through
//! credentials made and rotated, keyed and signed V1 calls, a Legacy call,
//! and signed webhook deliveries to a local receiver; then its whole log is
//! searched for every secret and signature that crossed it. The admin
//! token file is private (0600).

use hmac::{Hmac, Mac};
use reqwest::Method;
use serde_json::{json, Value};
use sha2::Sha256;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A receiver answering 200 to every request; keeps what it was sent.
fn receiver() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let kept = kept.clone();
            std::thread::spawn(move || {
                stream.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
                let mut buffer = vec![0u8; 1 << 16];
                loop {
                    match stream.read(&mut buffer) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            kept.lock()
                                .unwrap()
                                .push(String::from_utf8_lossy(&buffer[..n]).into_owned());
                            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
                        }
                    }
                }
            });
        }
    });
    (url, seen)
}

/// Header values named `name` in the requests the receiver saw.
fn header_values(requests: &[String], name: &str) -> Vec<String> {
    requests
        .iter()
        .flat_map(|r| r.lines())
        .filter_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim().to_string())
        })
        .collect()
}

/// The server at `base`, asked as a merchant (`X-API-Key`) or the
/// operator (a bearer token); each answer's JSON (`Null` when not JSON).
struct Api {
    client: reqwest::Client,
    base: String,
}

impl Api {
    async fn merchant(&self, method: Method, path: &str, key: &str, body: Option<Value>) -> Value {
        let request = self.client.request(method, format!("{}{path}", self.base));
        Api::send(request.header("X-API-Key", key), body).await
    }

    async fn admin(&self, method: Method, path: &str, token: &str, body: Option<Value>) -> Value {
        let request = self.client.request(method, format!("{}{path}", self.base));
        Api::send(request.bearer_auth(token), body).await
    }

    async fn send(mut request: reqwest::RequestBuilder, body: Option<Value>) -> Value {
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send().await.unwrap().json().await.unwrap_or(Value::Null)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_key_or_signature_is_logged_at_any_level() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let data_dir = dir.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_paygate"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--sandbox-disbursement-delay-ms",
            "200",
            "--data-dir",
        ])
        .arg(&data_dir)
        .env("PAYGATE_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().unwrap().unwrap();
        if let Some(rest) = line.strip_prefix("paygate listening on ") {
            break rest.trim().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    let token_file = data_dir.join("admin-token");
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let token = std::fs::read_to_string(&token_file).unwrap().trim().to_string();
    let demo: Value =
        serde_json::from_str(&std::fs::read_to_string(data_dir.join("demo-credentials.json")).unwrap()).unwrap();

    let (hook_url, received) = receiver();
    let client = reqwest::Client::new();
    let api = Api {
        client: client.clone(),
        base: base.clone(),
    };
    let created = api
        .admin(
            Method::POST,
            "/admin/v1/merchants",
            &token,
            Some(json!({ "name": "Toko Rahasia", "settlement_type": "WALLET", "default_notify_url": hook_url })),
        )
        .await;
    let merchant_id = created["data"]["merchant"]["id"].as_str().unwrap().to_string();
    let first = created["data"]["credentials"].clone();
    let api_key = first["api_key"].as_str().unwrap().to_string();
    let webhook_secret = first["webhook_secret"].as_str().unwrap().to_string();
    api.admin(
        Method::POST,
        &format!("/admin/v1/merchants/{merchant_id}/wallet/credit"),
        &token,
        Some(json!({ "amount_minor": 10_000_000, "reason": "fund" })),
    )
    .await;

    // A signed disbursement; an order paid; each makes webhooks.
    let body = json!({
        "idempotency_key": "secret-1", "channel": "BANK", "bank_short_code": "BCA",
        "account_number": "1234567890", "account_name": "Budi", "amount_minor": 1_000_000,
    })
    .to_string();
    let mut mac = Hmac::<Sha256>::new_from_slice(webhook_secret.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let x_signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    let reply = client
        .post(format!("{base}/v1/disbursements"))
        .header("X-API-Key", &api_key)
        .header("X-Signature", &x_signature)
        .header("Content-Type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), 201);
    let order = api
        .merchant(
            Method::POST,
            "/v1/orders",
            &api_key,
            Some(json!({ "merchant_order_id": "S-1", "amount_minor": 100_000, "payment_method": "QRIS" })),
        )
        .await;
    let ref_code = order["data"]["ref_code"].as_str().unwrap();
    let pay = format!("/v1/sandbox/orders/{ref_code}/pay");
    api.merchant(Method::POST, &pay, &api_key, None).await;
    // A wrong key and a wrong token are not echoed either.
    api.merchant(Method::GET, "/v1/balance", "pk_wrong_key_0123456789", None)
        .await;
    api.admin(Method::GET, "/admin/v1/ledger/verify", "wrong-admin-token-0123", None)
        .await;
    // A Legacy call with a signature that does not verify.
    let legacy_signature = "f".repeat(128);
    client
        .post(format!("{base}/api/order/query"))
        .header("X-SIGNATURE", &legacy_signature)
        .json(&json!({ "clientId": first["client_id"], "orderId": "x", "signature": legacy_signature }))
        .send()
        .await
        .unwrap();
    // Rotation: new secrets shown once.
    let rotate = format!("/admin/v1/merchants/{merchant_id}/rotate-credentials");
    let rotated = api.admin(Method::POST, &rotate, &token, None).await;
    // The webhooks of the payment and the disbursement arrive.
    for _ in 0..100 {
        if header_values(&received.lock().unwrap(), "webhook-signature").len() >= 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    child.wait().unwrap();

    let requests = received.lock().unwrap().clone();
    let mut secrets: Vec<(String, String)> = vec![
        ("admin token".into(), token),
        ("X-Signature".into(), x_signature),
        ("wrong API key".into(), "pk_wrong_key_0123456789".into()),
        ("wrong admin token".into(), "wrong-admin-token-0123".into()),
        ("Legacy signature".into(), legacy_signature),
    ];
    for credentials in [&first, &rotated["data"]["credentials"], &demo] {
        for field in ["api_key", "client_secret", "webhook_secret"] {
            if let Some(value) = credentials[field].as_str() {
                secrets.push((field.to_string(), value.to_string()));
            }
        }
    }
    let signatures = header_values(&requests, "webhook-signature");
    assert!(signatures.len() >= 3, "webhooks were delivered: {requests:?}");
    for value in signatures.iter().chain(&header_values(&requests, "x-signature")) {
        // Each signature in the header (`v1,<base64>`), and its hex/base64 body.
        for part in value.split([' ', ',', '=']).filter(|p| p.len() >= 16) {
            secrets.push(("webhook signature".into(), part.to_string()));
        }
    }
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(
        log.lines().count() > 100,
        "trace logging was on: {} lines",
        log.lines().count()
    );
    for (what, secret) in &secrets {
        assert!(secret.len() >= 16, "{what} is a real secret");
        if let Some(line) = log.lines().find(|line| line.contains(secret.as_str())) {
            panic!("the {what} is in the log: {line}");
        }
    }
}
