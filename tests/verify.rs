//! `paygate verify --data-dir D` against data dirs the real server left:
//! one killed mid-work verifies clean and is left untouched; one with a
//! damaged record in the middle of its journal is a problem named by file
//! and byte, with a non-zero exit.

mod support;

use reqwest::StatusCode;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use support::disbursements::bank_body;
use support::TestServer;

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                stack.push(entry.path());
            } else {
                let name = entry.path().strip_prefix(dir).unwrap().display().to_string();
                files.insert(name, std::fs::read(entry.path()).unwrap());
            }
        }
    }
    files
}

fn verify(dir: &Path) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_paygate"))
        .args(["verify", "--data-dir"])
        .arg(dir)
        .env("PAYGATE_LOG", "error")
        .output()
        .expect("paygate verify runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// A server with money moved every way, killed without a clean stop.
async fn killed_server_with_history() -> TestServer {
    let mut server = TestServer::start_with(&["--sandbox-disbursement-delay-ms", "600000"]);
    let merchant = server.create_wallet_merchant().await;
    server.credit(&merchant.id, 50_000_000).await;
    for n in 0..30 {
        let body = bank_body(&format!("v-{n}"), 100_000 + n);
        let reply = server.disburse(&merchant.api_key, body).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    }
    server.kill();
    server
}

#[tokio::test]
async fn a_killed_servers_data_dir_verifies_clean_and_is_left_untouched() {
    let server = killed_server_with_history().await;
    let before = snapshot(&server.data_dir);
    let (clean, out) = verify(&server.data_dir);
    assert!(clean, "{out}");
    assert!(out.contains("balanced: every invariant holds"), "{out}");
    // The demo merchant and ours; two credits and 30 debits.
    assert!(out.contains("merchants: 2, entries: 32"), "{out}");
    assert!(out.contains("wallet"), "{out}");
    assert_eq!(
        snapshot(&server.data_dir),
        before,
        "verify wrote to the directory it checked"
    );
}

#[tokio::test]
async fn a_damaged_record_mid_journal_is_a_problem_named_by_file_and_byte() {
    let server = killed_server_with_history().await;
    let journal = server.data_dir.join("journal");
    let segment = std::fs::read_dir(&journal)
        .unwrap()
        .map(|e| e.unwrap().path())
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap();
    let mut bytes = std::fs::read(&segment).unwrap();
    let middle = bytes.len() / 3;
    bytes[middle] ^= 0xff;
    std::fs::write(&segment, &bytes).unwrap();
    let (clean, out) = verify(&server.data_dir);
    assert!(!clean, "{out}");
    assert!(out.contains("PROBLEM"), "{out}");
    assert!(out.contains(&segment.display().to_string()), "names the segment: {out}");
    assert!(out.contains("at byte"), "names the byte: {out}");

    // The documented last resort: cut the journal where verify says.
    let byte: String = out
        .split("at byte ")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let place = format!("{}:{byte}", segment.display());
    let repaired = Command::new(env!("CARGO_BIN_EXE_paygate"))
        .args(["repair", "--data-dir"])
        .arg(&server.data_dir)
        .args(["--cut-journal-at", &place])
        .output()
        .unwrap();
    assert!(
        repaired.status.success(),
        "{}",
        String::from_utf8_lossy(&repaired.stderr)
    );
    assert_eq!(std::fs::metadata(&segment).unwrap().len(), byte.parse::<u64>().unwrap());
    let kept = std::fs::read_dir(server.data_dir.join("journal-cut")).unwrap().count();
    assert_eq!(kept, 1, "the cut bytes are kept aside");
    let (clean, out) = verify(&server.data_dir);
    assert!(clean, "{out}");
    assert!(!out.contains("entries: 32"), "records from the cut on are gone: {out}");
    // A place that is no segment of this journal is refused.
    let refused = Command::new(env!("CARGO_BIN_EXE_paygate"))
        .args(["repair", "--data-dir"])
        .arg(&server.data_dir)
        .args(["--cut-journal-at", "journal-99.log:1"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
}
