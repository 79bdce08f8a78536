//! `paygate benchmark` runs a small load through whole disbursement or
//! order lifecycles against its in-process server, prints the figures (with
//! its baseline and phases) and passes its own checks, with the real binary
//! the other tests start.

mod support;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Asserts that `stdout` holds each of `expected`.
fn assert_all_in(stdout: &str, expected: &[&str]) {
    for part in expected {
        assert!(stdout.contains(part), "no {part:?} in\n{stdout}");
    }
}

/// Runs `paygate benchmark` with `args`; returns (exit success, stdout, stderr).
/// A run still going after a minute is killed and counted as a failure.
fn benchmark(args: &[&str]) -> (bool, String, String) {
    let mut child = support::paygate("benchmark")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paygate runs");
    let mut stdout_pipe = child.stdout.take().unwrap();
    let mut stderr_pipe = child.stderr.take().unwrap();
    // Read both pipes while it runs, so neither fills and blocks it.
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        stdout_pipe.read_to_string(&mut text).unwrap();
        text
    });
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        stderr_pipe.read_to_string(&mut text).unwrap();
        text
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let success = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.success();
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            break false;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (success, stdout.join().unwrap(), stderr.join().unwrap())
}

#[test]
fn a_small_benchmark_prints_its_figures_and_passes_every_check() {
    let (success, stdout, stderr) = benchmark(&[
        "--disbursements",
        "300",
        "--merchants",
        "3",
        "--connections",
        "8",
        "--sandbox-delay-ms",
        "50",
    ]);
    assert!(success, "benchmark failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let figures = [
        "created       300 in ",
        " disbursements/s (process CPU ",
        "latency       p50 ",
        "  p99 ",
        "  p999 ",
        "  max ",
        "all final     300 in ",
        " disbursements/s end to end",
        "webhooks      600 events",
        "lag from event_at to receipt: p50 ",
        "last webhook  ",
        " MiB after creation, ",
        "listening again after ",
        "latency p99 against the baseline",
        "× the baseline); floor ",
    ];
    assert_all_in(&stdout, &figures);
    let checks = [
        "ok    every creation answered 201: 300 of 300",
        "ok    every 201 found by GET: 300 of 300",
        "ok    every disbursement final and SUCCESS: 300 of 300",
        "ok    each balance = funding - final amounts paid: 3 of 3 merchants",
        "ok    ledger verify: balanced true",
        "ok    final webhook received for every disbursement, signature checked: 300 of 300",
        "ok    every 201 found again with its status: 300 of 300",
    ];
    assert_all_in(&stdout, &checks);
    assert!(!stdout.contains("FAIL"), "{stdout}");
    assert!(stdout.contains("all 9 checks passed"), "{stdout}");

    // The temporary data dir it named is gone.
    let data_dir = stdout
        .lines()
        .find_map(|line| line.strip_prefix("data dir: ")?.strip_suffix(" (temporary)"))
        .unwrap_or_else(|| panic!("no temporary data dir line in\n{stdout}"));
    assert!(!std::path::Path::new(data_dir).exists(), "{data_dir} left behind");
}

#[test]
fn a_paced_benchmark_keeps_a_data_dir_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("bench");
    let (success, stdout, stderr) = benchmark(&[
        "--disbursements",
        "20",
        "--merchants",
        "2",
        "--connections",
        "4",
        "--sandbox-delay-ms",
        "0",
        "--rate",
        "100",
        "--data-dir",
        data_dir.to_str().unwrap(),
    ]);
    assert!(success, "benchmark failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stdout.contains("(kept)"), "{stdout}");
    // Paced at 100 a second, the last of 20 is not sent before 0.19 s.
    assert!(stdout.contains(" 4 connections, 100/s, "), "{stdout}");
    let seconds: f64 = stdout
        .split("created       20 in ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|figure| figure.parse().ok())
        .unwrap_or_else(|| panic!("no creation time in\n{stdout}"));
    assert!(seconds >= 0.18, "20 created in {seconds} s at 100/s");
    assert!(data_dir.join("journal").is_dir(), "the data dir holds the journal");
}

#[test]
fn an_orders_paid_benchmark_in_two_phases_prints_its_baseline_and_each_phase() {
    let (success, stdout, stderr) = benchmark(&[
        "--workload",
        "orders-paid",
        "--items",
        "200",
        "--merchants",
        "2",
        "--phases",
        "2",
        "--connections",
        "4",
    ]);
    assert!(success, "benchmark failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let figures = [
        "200 paid orders (POST /v1/orders, then POST /v1/sandbox/orders/{ref_code}/pay) over 2 merchants, 2 phases,",
        "baseline (bare axum handlers in this process",
        "  requests      200 in ",
        "floor (the HTTP an item's whole life needs",
        "  items         100 in ",
        " 100 webhooks checked by its sink\n",
        "phase 1 of 2: 100 paid orders",
        "phase 2 of 2: 100 paid orders",
        " since before the load, ",
        " since phase 1, ",
        "  of which      the load generator's and sink's own records ",
        "created       200 in ",
        "webhooks      200 events (0 repeated; 200 expected: 1 a paid order)",
        "  paygate       server ",
        "  by thread     ",
        " µs, other and ended threads ",
        "  baseline      server ",
        "  ratio         ",
        "  floor         server ",
        " MiB after the last drain and 3 s idle: ",
    ];
    assert_all_in(&stdout, &figures);
    let checks = [
        "ok    every item answered 201, and 200 to its payment: 200 of 200",
        "ok    every order found by GET with its status (PAID once paid, else PENDING): 200 of 200 sampled of 200",
        "ok    each balance = funding - final amounts paid + orders paid in: 2 of 2 merchants",
        "ok    order.paid webhook received for every paid order, signature checked: 200 of 200",
        "ok    every order found by GET again with its status (PAID once paid, else PENDING): 200 of 200",
    ];
    assert_all_in(&stdout, &checks);
    assert!(stdout.contains("all 8 checks passed"), "{stdout}");
}

#[test]
fn baseline_items_sets_what_the_baseline_and_the_floor_take() {
    let (success, stdout, stderr) = benchmark(&[
        "--items",
        "60",
        "--merchants",
        "2",
        "--phases",
        "2",
        "--baseline-items",
        "10",
        "--connections",
        "4",
    ]);
    assert!(success, "benchmark failed\nstdout:\n{stdout}\nstderr:\n{stderr}");
    let figures = [
        "  requests      10 in ",
        "  items         10 in ",
        " 20 webhooks checked by its sink\n",
        "phase 1 of 2: 30 disbursements",
        "phase 2 of 2: 30 disbursements",
    ];
    assert_all_in(&stdout, &figures);
}
