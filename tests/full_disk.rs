//! A full disk, against the real binary on a small tmpfs the test mounts:
//! while the journal cannot be written, writes answer 503 and change
//! nothing and reads go on; once space returns the held write lands and
//! writes are taken again without a restart; after a SIGKILL every
//! acknowledged write is there and the ledger balances. Skipped, with a
//! message, where the machine does not allow mounting.

mod support;

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use support::{assert_v1_error, Reply, TestMerchant, TestServer};

/// Ample for a fresh data dir (well under 1 MiB) and far below the free
/// space a periodic checkpoint waits for, so no checkpoint runs into the
/// full disk: only the journal meets it.
const DISK_SIZE: &str = "16m";
const FUNDING_MINOR: i64 = 1_000_000_000;
const AMOUNT_MINOR: i64 = 1_000_000;
/// The amount plus the default bank disbursement fee.
const FINAL_AMOUNT_MINOR: i64 = AMOUNT_MINOR + 250_000;

/// A tmpfs mounted on a temporary directory for one test, unmounted when
/// dropped however the test ends (declare it before the server, so the
/// server is killed first).
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// None, with the reason printed, where this machine does not let the test mount.
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().expect("temp dir");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size},mode=0700"), "tmpfs"])
            .arg(dir.path())
            .output();
        match mounted {
            Ok(output) if output.status.success() => Some(SmallDisk { dir }),
            Ok(output) => {
                let reason = String::from_utf8_lossy(&output.stderr);
                eprintln!("SKIPPED: cannot mount a {size} tmpfs here: {}", reason.trim());
                None
            }
            Err(error) => {
                eprintln!("SKIPPED: cannot run mount here: {error}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let unmounted = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|status| status.success());
        if !unmounted {
            // Lazily, if a process still holds a file there.
            let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
        }
    }
}

/// Fills the disk with a ballast file until it takes not one more byte.
fn fill(path: &Path) {
    let mut file = File::create(path).expect("ballast file");
    for chunk in [1 << 20, 4096, 1] {
        let bytes = vec![0xA5u8; chunk];
        loop {
            match file.write(&bytes) {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) if error.kind() == ErrorKind::StorageFull => break,
                Err(error) => panic!("filling the disk: {error}"),
            }
        }
    }
}

async fn disburse(server: &TestServer, merchant: &TestMerchant, key: &str) -> Reply {
    let body = json!({
        "idempotency_key": key, "channel": "BANK", "bank_short_code": "BCA",
        "account_number": "1234567890", "account_name": "Budi Santoso", "amount_minor": AMOUNT_MINOR,
    });
    server
        .call(Method::POST, "/v1/disbursements", Some(&merchant.api_key), Some(body))
        .await
}

async fn order(server: &TestServer, merchant: &TestMerchant, id: &str) -> Reply {
    let body = json!({ "merchant_order_id": id, "amount_minor": 500_000, "payment_method": "QRIS" });
    server
        .call(Method::POST, "/v1/orders", Some(&merchant.api_key), Some(body))
        .await
}

async fn get(server: &TestServer, merchant: &TestMerchant, path: &str) -> Reply {
    server.call(Method::GET, path, Some(&merchant.api_key), None).await
}

/// A value of `/metrics`.
async fn metric(server: &TestServer, name: &str) -> u64 {
    let text = server
        .client
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .expect("metrics answer")
        .text()
        .await
        .expect("metrics text");
    text.lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} not in /metrics"))
}

async fn healthz(server: &TestServer) -> Value {
    let reply = server.call(Method::GET, "/healthz", None, None).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.body
}

fn assert_retry_after(reply: &Reply, seconds: &str) {
    let header = reply.headers.get("retry-after").map(|value| value.to_str().unwrap());
    assert_eq!(header, Some(seconds), "{}", reply.body);
}

/// Every acknowledged disbursement is found as created, the order too, the
/// balance is the funding less what they took, and the list holds exactly them.
async fn assert_acknowledged_found(server: &TestServer, merchant: &TestMerchant, ids: &[String], reference: &str) {
    for id in ids {
        let reply = get(server, merchant, &format!("/v1/disbursements/{id}")).await;
        assert_eq!(reply.status, StatusCode::OK, "disbursement {id} lost: {}", reply.body);
        assert_eq!(
            reply.body["data"]["request_amount_minor"],
            json!(AMOUNT_MINOR),
            "{}",
            reply.body
        );
    }
    let listed = get(server, merchant, "/v1/disbursements?limit=50").await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    assert_eq!(listed.body["meta"]["total"], json!(ids.len()), "{}", listed.body);
    let found = get(server, merchant, &format!("/v1/orders/{reference}")).await;
    assert_eq!(found.status, StatusCode::OK, "order {reference} lost: {}", found.body);
    let spent = ids.len() as i64 * FINAL_AMOUNT_MINOR;
    assert_eq!(server.balance(&merchant.api_key).await, FUNDING_MINOR - spent);
}

fn verify_offline(data_dir: &Path) {
    let output = Command::new(env!("CARGO_BIN_EXE_paygate"))
        .args(["verify", "--data-dir"])
        .arg(data_dir)
        .env("PAYGATE_LOG", "error")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "paygate verify: {out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_refuses_writes_keeps_reads_and_recovers_by_itself_losing_nothing() {
    let Some(disk) = SmallDisk::mount(DISK_SIZE) else {
        return;
    };
    let data_dir = disk.path().join("data");
    // Disbursements stay PENDING: nothing moves money in the background.
    let mut server = TestServer::start_in(&data_dir, &["--sandbox-disbursement-delay-ms", "3600000"]);
    let merchant = server.create_wallet_merchant().await;
    assert_eq!(server.credit(&merchant.id, FUNDING_MINOR).await, FUNDING_MINOR);
    let mut acknowledged: Vec<String> = Vec::new();
    for n in 0..5 {
        let reply = disburse(&server, &merchant, &format!("before-{n}")).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        acknowledged.push(reply.body["data"]["id"].as_str().unwrap().to_string());
    }
    let created = order(&server, &merchant, "before-order").await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let reference = created.body["data"]["ref_code"].as_str().unwrap().to_string();
    assert_eq!(healthz(&server).await, json!({ "status": "ok", "storage": "writable" }));

    let ballast = disk.path().join("ballast");
    fill(&ballast);

    // Writes that still fit in the journal's last page are taken. The first
    // that does not is held, unacknowledged: its caller hears 503 TIMEOUT
    // (retry with the same key), not a 201. Unless a background write (a
    // disbursement handed to the sandbox vendor) met the full disk first:
    // then it is refused up front like every write after it.
    let mut attempts = 0;
    let (key, first) = loop {
        attempts += 1;
        assert!(attempts <= 100, "the disk never refused the journal");
        let key = format!("during-{attempts}");
        let reply = disburse(&server, &merchant, &key).await;
        if reply.status != StatusCode::CREATED {
            break (key, reply);
        }
        acknowledged.push(reply.body["data"]["id"].as_str().unwrap().to_string());
    };
    let held_key = if first.body["error"]["code"] == json!("TIMEOUT") {
        assert_v1_error(&first, 503, "TIMEOUT");
        Some(key)
    } else {
        assert_v1_error(&first, 503, "UNAVAILABLE");
        assert_retry_after(&first, "5");
        None
    };
    assert_eq!(metric(&server, "paygate_journal_writable").await, 0);
    assert!(metric(&server, "paygate_journal_failed_writes_total").await >= 1);
    assert_eq!(
        healthz(&server).await,
        json!({ "status": "ok", "storage": "read_only" })
    );

    // New writes are refused at once, in the envelope, with Retry-After.
    let started = Instant::now();
    let refused = disburse(&server, &merchant, "refused").await;
    assert_v1_error(&refused, 503, "UNAVAILABLE");
    assert_retry_after(&refused, "5");
    assert!(started.elapsed() < Duration::from_secs(2), "refused up front");
    let refused = order(&server, &merchant, "refused-order").await;
    assert_v1_error(&refused, 503, "UNAVAILABLE");
    assert_retry_after(&refused, "5");
    let refused = server
        .admin_post(
            &format!("/admin/v1/merchants/{}/wallet/credit", merchant.id),
            json!({ "amount_minor": 1, "reason": "refused" }),
        )
        .await;
    assert_v1_error(&refused, 503, "UNAVAILABLE");

    // Reads go on, and show exactly what was acknowledged: the held and
    // refused writes changed nothing anyone can see.
    assert_acknowledged_found(&server, &merchant, &acknowledged, &reference).await;
    let missing = get(&server, &merchant, "/v1/orders/refused-order").await;
    assert_v1_error(&missing, 404, "ORDER_NOT_FOUND");

    // Space returns: the held write lands and writes are taken again, without a restart.
    std::fs::remove_file(&ballast).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while healthz(&server).await["storage"] != json!("writable") {
        assert!(
            Instant::now() < deadline,
            "the journal did not recover once space returned"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(metric(&server, "paygate_journal_writable").await, 1);
    assert_eq!(metric(&server, "paygate_state_store_failed").await, 0);
    // The checkpointer looks at the room again within its 100 ms poll.
    let deadline = Instant::now() + Duration::from_secs(5);
    while metric(&server, "paygate_checkpoint_postponed").await != 1 {
        assert!(
            Instant::now() < deadline,
            "a disk this small never has room for a periodic checkpoint"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if let Some(held_key) = held_key {
        // Landed: the same key now finds it.
        let repeated = disburse(&server, &merchant, &held_key).await;
        assert_v1_error(&repeated, 409, "DUPLICATE_IDEMPOTENCY_KEY");
        acknowledged.push(repeated.body["data"]["id"].as_str().unwrap().to_string());
    }
    let after = disburse(&server, &merchant, "after").await;
    assert_eq!(after.status, StatusCode::CREATED, "{}", after.body);
    acknowledged.push(after.body["data"]["id"].as_str().unwrap().to_string());
    assert_acknowledged_found(&server, &merchant, &acknowledged, &reference).await;

    // A crash then loses nothing acknowledged, and the ledger balances.
    server.kill();
    verify_offline(&data_dir);
    server.restart();
    assert_acknowledged_found(&server, &merchant, &acknowledged, &reference).await;
    let verified = server.verify().await;
    assert_eq!(verified["balanced"], json!(true), "{verified}");
    assert_eq!(verified["problems"], json!([]), "{verified}");
}
