//! `paygate serve` refuses settings it cannot honour, at startup, with a
//! message naming the flag, instead of starting and failing later; a
//! SIGTERM however soon after start stops it cleanly, and a second one
//! stops it at once.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Runs `paygate serve` with `args` on a fresh data dir; returns (exited
/// with success, stderr). A server still running after a few seconds took
/// the settings: it is killed and counted as a success.
fn serve(args: &[&str]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut child = support::paygate("serve")
        .args(["--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paygate runs");
    let refused = match exit_within(&mut child, Duration::from_secs(10)) {
        Some(status) => !status.success(),
        None => {
            child.kill().unwrap();
            child.wait().unwrap();
            false
        }
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    (!refused, stderr)
}

/// Waits up to `limit` for `child` to exit; `None` if it still runs.
fn exit_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads a started server's stdout up to its address line; the address.
fn address_of(child: &mut Child) -> String {
    let stdout = BufReader::new(child.stdout.take().unwrap());
    for line in stdout.lines() {
        if let Some(rest) = line.unwrap().strip_prefix("paygate listening on http://") {
            return rest.trim().to_string();
        }
    }
    panic!("the server printed no address");
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
fn a_cluster_node_without_its_secret_admin_token_or_a_fit_id_is_refused() {
    let url = ["--cluster-url", "postgres://paygate@127.0.0.1:1/paygate"];
    let secret = ["--cluster-secret", "a-secret-of-sixteen"];
    let token = ["--admin-token", "the-same-on-every-node"];
    let cases: [(Vec<&str>, &str); 5] = [
        ([&url[..], &token[..]].concat(), "--cluster-secret"),
        (
            [&url[..], &token[..], &["--cluster-secret", "short"]].concat(),
            "--cluster-secret",
        ),
        ([&url[..], &secret[..]].concat(), "--admin-token"),
        (
            [&url[..], &secret[..], &token[..], &["--node-id", "bad id"]].concat(),
            "--node-id",
        ),
        (
            [&url[..], &secret[..], &token[..], &["--advertise-url", "nowhere"]].concat(),
            "--advertise-url",
        ),
    ];
    for (args, named) in cases {
        let (ok, stderr) = serve(&args);
        assert!(!ok, "{args:?} accepted");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
    // All given, an unreachable database: refused with the reason.
    let (ok, stderr) = serve(&[&url[..], &secret[..], &token[..]].concat());
    assert!(!ok);
    assert!(stderr.contains("cluster database"), "{stderr}");
}

#[test]
fn a_sandbox_delay_beyond_a_day_is_refused() {
    let (ok, stderr) = serve(&["--sandbox-disbursement-delay-ms", "18446744073709551615"]);
    assert!(!ok);
    assert!(stderr.contains("--sandbox-disbursement-delay-ms"), "{stderr}");
}

#[test]
fn a_webhook_retention_that_is_not_a_number_of_days_is_refused() {
    for bad in ["-1", "NaN", "inf", "36501", "a month"] {
        let (ok, stderr) = serve(&[&format!("--webhook-retention-days={bad}")]);
        assert!(!ok, "{bad} accepted");
        assert!(stderr.contains("--webhook-retention-days"), "{bad}: {stderr}");
    }
    for good in ["0", "0.5"] {
        let (ok, stderr) = serve(&["--webhook-retention-days", good]);
        assert!(ok, "{good} refused: {stderr}");
    }
}

/// A SIGTERM sent the moment the address is printed stops the server
/// through its graceful stop (exit 0, "stopped" logged), whether the
/// parent left SIGTERM's default (death, without the final checkpoint) or
/// ignores it (a disposition children inherit: the server would serve on).
/// The signal is caught before the server starts, so it is never missed.
#[test]
fn a_sigterm_right_after_the_address_line_stops_the_server_gracefully() {
    for round in 0..20 {
        let parent_ignores_sigterm = round % 2 == 1;
        let dir = tempfile::tempdir().unwrap();
        let mut command = Command::new(env!("CARGO_BIN_EXE_paygate"));
        command
            .arg("serve")
            .args(["--listen", "127.0.0.1:0", "--mode", "live", "--data-dir"])
            .arg(dir.path())
            .env("PAYGATE_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if parent_ignores_sigterm {
            // SAFETY: between fork and exec only the async-signal-safe `signal` runs.
            unsafe {
                command.pre_exec(|| {
                    libc::signal(libc::SIGTERM, libc::SIG_IGN);
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().expect("paygate runs");
        address_of(&mut child);
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let Some(status) = exit_within(&mut child, Duration::from_secs(30)) else {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "round {round} (parent ignores SIGTERM: {parent_ignores_sigterm}): still serving 30 s after SIGTERM"
            );
        };
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        assert_eq!(status.signal(), None, "round {round}: killed by the signal: {stderr}");
        assert!(status.success(), "round {round}: {status}: {stderr}");
        assert!(
            stderr.contains("stopped"),
            "round {round}: no graceful stop logged: {stderr}"
        );
    }
}

/// A request in progress holds a graceful stop (up to its grace); a second
/// SIGTERM then stops the server at once, with a non-zero status and the
/// reason logged, rather than after the grace.
#[test]
fn a_second_sigterm_stops_the_server_at_once_while_a_request_holds_the_graceful_stop() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_paygate"))
        .arg("serve")
        .args([
            "--listen",
            "127.0.0.1:0",
            "--mode",
            "live",
            "--admin-token",
            "cli-admin",
            "--data-dir",
        ])
        .arg(dir.path())
        .env("PAYGATE_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paygate runs");
    let address = address_of(&mut child);
    // A request whose body never comes: its handler waits to read it.
    let mut held = std::net::TcpStream::connect(&address).unwrap();
    held.write_all(
        b"POST /admin/v1/merchants HTTP/1.1\r\nHost: paygate\r\nAuthorization: Bearer cli-admin\r\n\
          Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"na",
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = child.id() as i32;
    let signal = || unsafe {
        libc::kill(pid, libc::SIGTERM);
    };
    signal();
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the held request no longer holds the graceful stop"
    );
    signal();
    let Some(status) = exit_within(&mut child, Duration::from_secs(5)) else {
        child.kill().unwrap();
        child.wait().unwrap();
        panic!("still running 5 s after the second SIGTERM");
    };
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stopped at once on a second signal"), "{stderr}");
    drop(held);
}
