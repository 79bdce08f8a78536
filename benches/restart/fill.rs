//! Fills a data dir with completed disbursements for `benches/restart/run.sh`:
//! `restart_fill <data dir> <disbursements> [merchants]`. It drives the
//! engine directly (no HTTP), with the sandbox vendor settling each payout
//! at once, waits until every one is final, and shuts down with a
//! checkpoint, as a server stopped after that much history would.

use paygate_engine::vendor::SandboxPayoutVendor;
use paygate_engine::EngineConfig;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

// The allocator of the `paygate` binary, with its settings.
#[path = "../../src/allocator.rs"]
mod allocator;
#[path = "../support/mod.rs"]
mod support;

/// Concurrent callers.
const CALLERS: u64 = 512;

fn main() {
    allocator::keep_freed_memory();
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(count)) = (args.get(1), args.get(2).and_then(|n| n.parse::<u64>().ok())) else {
        eprintln!("usage: restart_fill <data dir> <disbursements> [merchants]");
        std::process::exit(2);
    };
    let merchants: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(100);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(fill(dir.into(), count, merchants));
}

async fn fill(dir: std::path::PathBuf, count: u64, merchants: usize) {
    let started = Instant::now();
    let mut config = EngineConfig::new(&dir);
    config.payout_vendor = Some(Arc::new(SandboxPayoutVendor { delay: Duration::ZERO }));
    let engine = support::open_engine(config).await;
    let name = |index| format!("history-{index}");
    let limits = support::no_daily_limit(&[]);
    let ids = support::wallet_merchants(&engine, merchants, name, limits, Some("history funding")).await;
    let ids = Arc::new(ids);
    let next = Arc::new(AtomicU64::new(0));
    let mut callers = Vec::new();
    for _ in 0..CALLERS {
        let (engine, ids, next) = (engine.clone(), ids.clone(), next.clone());
        callers.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    return;
                }
                let request = support::disbursement_request(format!("history-{n}"), "1234567890".into());
                engine
                    .disbursements()
                    .create_disbursement(ids[n as usize % ids.len()], request)
                    .await
                    .unwrap();
                if n % 100_000 == 0 && n > 0 {
                    eprintln!("  {n} created");
                }
            }
        }));
    }
    for caller in callers {
        caller.await.unwrap();
    }
    while engine.disbursements().open_disbursement_count() > 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    engine.shutdown().await;
    eprintln!(
        "filled {} with {count} completed disbursements of {merchants} merchants in {:.1} s",
        dir.display(),
        started.elapsed().as_secs_f64()
    );
    // For reads over this history through the API: an operator can give
    // this merchant a key with `rotate-credentials`.
    eprintln!("first merchant: {}", ids[0]);
}
