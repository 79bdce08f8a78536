//! `paygate serve` refuses settings it cannot honour, at startup, with a
//! message naming the flag, instead of starting and failing later.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs `paygate serve` with `args` on a fresh data dir; returns (exited
/// with success, stderr). A server still running after a few seconds took
/// the settings: it is killed and counted as a success.
fn serve(args: &[&str]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_paygate"))
        .arg("serve")
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .args(args)
        .env("PAYGATE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paygate runs");
    let deadline = Instant::now() + Duration::from_secs(10);
    let refused = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break !status.success();
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    (!refused, stderr)
}

#[test]
fn a_public_url_that_is_not_an_absolute_http_url_is_refused() {
    for bad in ["notaurl", "ftp://example.com", "https://example.com/?a=1", "http://"] {
        let (ok, stderr) = serve(&["--public-url", bad]);
        assert!(!ok, "{bad} accepted");
        assert!(stderr.contains("--public-url"), "{bad}: {stderr}");
    }
}

#[test]
fn an_admin_token_no_header_can_carry_is_refused() {
    for bad in [" padded", "two words", "tökén"] {
        let (ok, stderr) = serve(&["--admin-token", bad]);
        assert!(!ok, "{bad:?} accepted");
        assert!(stderr.contains("--admin-token"), "{bad:?}: {stderr}");
    }
}

#[test]
fn a_sandbox_delay_beyond_a_day_is_refused() {
    let (ok, stderr) = serve(&["--sandbox-disbursement-delay-ms", "18446744073709551615"]);
    assert!(!ok);
    assert!(stderr.contains("--sandbox-disbursement-delay-ms"), "{stderr}");
}
