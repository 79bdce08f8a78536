//! Crash tests: the server is killed with SIGKILL in the middle of a
//! concurrent load of ledger writes. After restart every acknowledged write
//! is present, nothing half-written is visible, and retrying every request
//! with its idempotency key lands each one exactly once. A clean stop
//! leaves storage the next start need not read through.

mod support;

use reqwest::{Method, StatusCode};
use serde_json::json;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::*;

struct Attempt {
    key: String,
    amount: i64,
    acknowledged: bool,
}

async fn credit_with_key(
    client: &reqwest::Client,
    base: &str,
    merchant_id: &str,
    key: &str,
    amount: i64,
) -> Option<StatusCode> {
    let url = format!("{base}/admin/v1/merchants/{merchant_id}/wallet/credit");
    let body = json!({ "amount_minor": amount, "reason": "crash load", "idempotency_key": key });
    let response = load::post_as_admin(client, url, &body, Duration::from_secs(10))
        .await
        .ok()?;
    Some(response.status())
}

/// A load on `count` tasks sharing one client and `shared`: each runs
/// `step(client, shared, worker, i)` (with clones of both) for i = 0, 1, ...
/// until the returned flag is set (`stop_load`) or a step answers false
/// (the server is gone).
fn spawn_load<S, F, Fut>(count: usize, shared: S, step: F) -> (Arc<AtomicBool>, Vec<tokio::task::JoinHandle<()>>)
where
    S: Clone + Send + 'static,
    F: Fn(reqwest::Client, S, usize, i64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = bool> + Send + 'static,
{
    let stop = Arc::new(AtomicBool::new(false));
    let client = reqwest::Client::new();
    let workers = (0..count)
        .map(|worker| {
            let (stop, step, client, shared) = (stop.clone(), step.clone(), client.clone(), shared.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    if !step(client.clone(), shared.clone(), worker, i).await {
                        return;
                    }
                    i += 1;
                }
            })
        })
        .collect();
    (stop, workers)
}

/// Stops the load and waits for each of its tasks to end.
async fn stop_load(stop: &AtomicBool, workers: Vec<tokio::task::JoinHandle<()>>) {
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await.unwrap();
    }
}

fn append_torn_tail(data_dir: &std::path::Path) {
    let journal = data_dir.join("journal");
    let mut segments: Vec<_> = std::fs::read_dir(&journal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segments.sort();
    let last = segments.last().expect("a journal segment exists");
    let mut file = std::fs::OpenOptions::new().append(true).open(last).unwrap();
    // A frame header promising 200 bytes, followed by only a few: a torn write.
    file.write_all(&200u32.to_le_bytes()).unwrap();
    file.write_all(&[0xAB; 11]).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_credit_survives_sigkill_and_retries_land_exactly_once() {
    let (mut server, merchant) = TestServer::start_with_merchant().await;
    let attempts: Arc<Mutex<Vec<Attempt>>> = Arc::default();
    let shared = (attempts.clone(), server.base.clone(), merchant.id.clone());
    let (stop, workers) = spawn_load(16, shared, |client, (attempts, base, merchant_id), worker, i| {
        async move {
            let key = format!("crash-{worker}-{i}");
            let amount = 1 + (worker as i64 * 31 + i) % 97;
            let status = credit_with_key(&client, &base, &merchant_id, &key, amount).await;
            let acknowledged = status == Some(StatusCode::OK);
            attempts.lock().unwrap().push(Attempt {
                key,
                amount,
                acknowledged,
            });
            status.is_some() // None: the server is gone
        }
    });
    // Let the load run, then kill the server while requests are in flight.
    let acknowledged_before_kill = loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let acked = attempts.lock().unwrap().iter().filter(|a| a.acknowledged).count();
        if acked >= 400 {
            break acked;
        }
    };
    server.kill();
    stop_load(&stop, workers).await;
    append_torn_tail(&server.data_dir);
    server.restart();

    let attempts = std::mem::take(&mut *attempts.lock().unwrap());
    let acknowledged_sum: i64 = attempts.iter().filter(|a| a.acknowledged).map(|a| a.amount).sum();
    let attempted_sum: i64 = attempts.iter().map(|a| a.amount).sum();
    assert!(acknowledged_before_kill >= 400);

    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
    let balance = server.balance(&merchant.api_key).await;
    assert!(
        balance >= acknowledged_sum,
        "lost acknowledged credits: balance {balance} < acknowledged {acknowledged_sum}"
    );
    assert!(
        balance <= attempted_sum,
        "invented money: balance {balance} > attempted {attempted_sum}"
    );

    // Every acknowledged key is already there: 409. Unacknowledged ones may or may not be.
    let client = reqwest::Client::new();
    for attempt in &attempts {
        let status = credit_with_key(&client, &server.base, &merchant.id, &attempt.key, attempt.amount)
            .await
            .unwrap();
        if attempt.acknowledged {
            assert_eq!(
                status,
                StatusCode::CONFLICT,
                "acknowledged key {} missing after restart",
                attempt.key
            );
        } else {
            assert!(status == StatusCode::OK || status == StatusCode::CONFLICT, "{status}");
        }
    }
    assert_eq!(server.balance(&merchant.api_key).await, attempted_sum);

    // And once more after a clean restart: the same, from the checkpoint.
    server.stop();
    server.restart();
    assert_eq!(server.balance(&merchant.api_key).await, attempted_sum);
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
    let reply = server.admin(Method::GET, "/admin/v1/ledger/verify", None).await;
    assert_eq!(reply.body["data"]["problems"], json!([]));
}

#[tokio::test]
async fn a_journal_with_a_corrupted_last_record_opens_without_it() {
    let (mut server, merchant) = TestServer::start_with_merchant().await;
    assert_eq!(server.credit(&merchant.id, 500).await, 500);
    assert_eq!(server.credit(&merchant.id, 700).await, 1200);
    server.kill();
    // Flip a byte inside the last record (the 700 credit): its checksum fails.
    let journal = server.data_dir.join("journal");
    let mut segments: Vec<_> = std::fs::read_dir(&journal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    segments.sort();
    let last = segments.last().unwrap();
    let mut bytes = std::fs::read(last).unwrap();
    let end = bytes.len() - 1;
    bytes[end] ^= 0x5A;
    std::fs::write(last, &bytes).unwrap();
    // sled may already hold the record (applied after its sync); remove the
    // state so the journal alone decides, as after losing unflushed sled pages.
    std::fs::remove_dir_all(server.data_dir.join("state")).unwrap();
    server.restart();
    assert_eq!(server.balance(&merchant.api_key).await, 500);
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
    // The journal continues cleanly after the cut.
    assert_eq!(server.credit(&merchant.id, 1).await, 501);
}

struct SentDisbursement {
    key: String,
    body: serde_json::Value,
    acknowledged_id: Option<String>,
}

async fn all_disbursements(server: &TestServer, api_key: &str) -> Vec<serde_json::Value> {
    let mut all = Vec::new();
    for page in 1.. {
        let path = format!("/v1/disbursements?limit=50&page={page}");
        let reply = server.call(Method::GET, &path, Some(api_key), None).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        let items = reply.body["data"].as_array().unwrap().clone();
        all.extend(items);
        if page >= reply.body["meta"]["total_pages"].as_u64().unwrap() as usize {
            return all;
        }
    }
    unreachable!()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_disbursement_survives_sigkill_and_the_wallet_balances() {
    let mut server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "100"]);
    let merchant = server.create_wallet_merchant().await;
    let limits = json!({ "limits": { "rate_limit_per_second": 100000, "rate_limit_burst": 100000 } });
    let reply = server.patch_merchant(&merchant.id, limits).await;
    assert_eq!(reply.status, StatusCode::OK);
    let funding = 1_000_000_000_000i64;
    server.credit(&merchant.id, funding).await;

    let sent: Arc<Mutex<Vec<SentDisbursement>>> = Arc::default();
    let shared = (sent.clone(), server.base.clone(), merchant.api_key.clone());
    let (stop, workers) = spawn_load(12, shared, |client, (sent, base, api_key), worker, i| {
        async move {
            let key = format!("dsb-{worker}-{i}");
            // Every fifth goes to the sandbox's failing account.
            let account = if i % 5 == 0 { "0000000000" } else { "1234567890" };
            let body = json!({
                "idempotency_key": key, "channel": "BANK", "bank_short_code": "BCA",
                "account_number": account, "account_name": "Budi", "amount_minor": 100_000 + i,
            });
            let url = format!("{base}/v1/disbursements");
            let response = load::post_as(&client, url, &api_key, &body, Duration::from_secs(10)).await;
            let acknowledged_id = match response {
                Ok(r) if r.status() == StatusCode::CREATED => {
                    let value: serde_json::Value = r.json().await.unwrap();
                    Some(value["data"]["id"].as_str().unwrap().to_string())
                }
                Ok(r) => panic!("unexpected status {}", r.status()),
                Err(_) => None,
            };
            let gone = acknowledged_id.is_none();
            sent.lock().unwrap().push(SentDisbursement {
                key,
                body,
                acknowledged_id,
            });
            !gone
        }
    });
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if sent
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.acknowledged_id.is_some())
            .count()
            >= 300
        {
            break;
        }
    }
    server.kill();
    stop_load(&stop, workers).await;
    server.restart();

    // Every acknowledged disbursement is there; retrying the others lands each once.
    let sent = std::mem::take(&mut *sent.lock().unwrap());
    for item in &sent {
        let reply = server
            .call(
                Method::POST,
                "/v1/disbursements",
                Some(&merchant.api_key),
                Some(item.body.clone()),
            )
            .await;
        match &item.acknowledged_id {
            Some(id) => {
                assert_eq!(
                    reply.status,
                    StatusCode::CONFLICT,
                    "acknowledged {} missing: {}",
                    item.key,
                    reply.body
                );
                assert_eq!(reply.body["data"]["id"].as_str(), Some(id.as_str()));
            }
            None => assert!(reply.status == StatusCode::CREATED || reply.status == StatusCode::CONFLICT),
        }
    }
    // Let every one settle, then the wallet is the funding minus what succeeded.
    let mut settled = Vec::new();
    for _ in 0..200 {
        settled = all_disbursements(&server, &merchant.api_key).await;
        if settled
            .iter()
            .all(|d| matches!(d["status"].as_str(), Some("SUCCESS") | Some("FAILED")))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(settled.len(), sent.len(), "one disbursement per key");
    let paid_out: i64 = settled
        .iter()
        .filter(|d| d["status"] == json!("SUCCESS"))
        .map(|d| d["final_amount_minor"].as_i64().unwrap())
        .sum();
    assert!(settled.iter().any(|d| d["status"] == json!("FAILED")));
    assert_eq!(server.balance(&merchant.api_key).await, funding - paid_out);
    let verify = server.verify().await;
    assert_eq!(verify["balanced"], json!(true), "{verify}");
}

/// The LSN of the storage snapshot in `data_dir` (sled names each
/// `snap.<LSN in hex>` and keeps the newest), if one was written.
fn storage_snapshot(data_dir: &std::path::Path) -> Option<u64> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(data_dir.join("state")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if let Some(lsn) = name.strip_prefix("snap.").filter(|lsn| !lsn.contains('.')) {
            found.push(u64::from_str_radix(lsn, 16).unwrap());
        }
    }
    assert!(found.len() <= 1, "{found:?}");
    found.pop()
}

/// A clean stop leaves a storage snapshot covering all it wrote, so the
/// next start has no storage log to read through: its open finds nothing
/// newer, writes no snapshot of its own, and every change is there.
#[tokio::test]
async fn a_clean_stop_leaves_storage_the_next_start_need_not_read_through() {
    let (mut server, merchant) = TestServer::start_with_merchant().await;
    server.credit(&merchant.id, 1_500_000).await;
    let while_running = storage_snapshot(&server.data_dir);
    server.stop();
    let after_stop = storage_snapshot(&server.data_dir);
    assert!(after_stop > while_running, "no snapshot at the stop: {after_stop:?}");
    server.restart();
    assert_eq!(
        storage_snapshot(&server.data_dir),
        after_stop,
        "the start read storage written after the snapshot"
    );
    assert_eq!(server.balance(&merchant.api_key).await, 1_500_000);
    assert_eq!(server.verify().await["balanced"], json!(true));
}
