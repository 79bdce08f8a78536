//! How long one 1,000-item disbursement batch takes (target: at most
//! 50 ms of server time), one batch at a time:
//! - `http_1000_items`: server time, the whole route in process: the V1
//!   router gets the request (a JSON body of 1,000 bank disbursements,
//!   about 180 KB) and the time runs until its answer's body is read:
//!   authentication, parsing, each item's validation, the merchant actor,
//!   the fsynced record, the rendered 201. No socket: what a client adds
//!   over loopback is not the server's.
//! - `engine_1000_items`: the same batch from `Engine::create_disbursement_batch`.
//! - `journal_append_sync_baseline`: the same run's journal appending and
//!   syncing one record of that batch's record size.
//!
//! Between batches (not timed) the previous batch's hand-overs to the
//! vendor finish, so each batch is measured alone. The vendor then holds
//! every payout: nothing settles during the run.
//!
//! Run: `cargo bench --bench disbursement_batches` (see BENCHMARKS.md).

use axum::body::Body;
use axum::http::{Request, StatusCode};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use paygate_api::{router, ApiConfig, AppState, Mode};
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::vendor::SandboxPayoutVendor;
use paygate_engine::LimitField;
use paygate_engine::{Engine, EngineConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::Service;
use uuid::Uuid;

// The allocator of the `paygate` binary, with its settings.
#[path = "../src/allocator.rs"]
mod allocator;
#[path = "support/mod.rs"]
mod support;

/// Items of the measured batch.
const ITEMS: usize = 1000;

/// An engine whose vendor holds every payout, and one funded WALLET
/// merchant with no limit in the way: its id and API key.
async fn open_engine(dir: &std::path::Path) -> (Engine, Uuid, String) {
    let mut config = EngineConfig::new(dir);
    config.payout_vendor = Some(Arc::new(SandboxPayoutVendor {
        delay: Duration::from_secs(3600),
    }));
    // Every payout stays open for the whole run: past the default bound of
    // open disbursements (a million, about a thousand batches) a batch
    // would be refused as Busy.
    config.disbursements_open_max = usize::MAX;
    let engine = support::open_engine(config).await;
    let limits = support::no_daily_limit(&[
        (LimitField::RateLimitPerSecond, 1_000_000),
        (LimitField::RateLimitBurst, 1_000_000),
    ]);
    let (id, api_key) = support::wallet_merchant(&engine, "bench".into(), limits, Some("bench funding")).await;
    (engine, id, api_key)
}

/// The account an item pays to: one of a million, by its key.
fn account_number(key: u64) -> String {
    format!("{:010}", 1_000_000_000 + key % 1_000_000)
}

fn item(key: u64) -> NewDisbursement {
    support::disbursement_request(format!("bench-{key}"), account_number(key))
}

/// The JSON body of a batch of `ITEMS` items from key `base` on.
fn body(base: u64) -> Vec<u8> {
    let items: Vec<serde_json::Value> = (base..base + ITEMS as u64)
        .map(|key| {
            serde_json::json!({
                "idempotency_key": format!("bench-{key}"),
                "channel": "BANK",
                "bank_short_code": "BCA",
                "account_number": account_number(key),
                "account_name": "Budi Santoso",
                "amount_minor": 1_000_000,
            })
        })
        .collect();
    serde_json::to_vec(&serde_json::json!({ "idempotency_key": format!("batch-{base}"), "items": items })).unwrap()
}

/// Bytes the engine's journal made durable so far.
fn journal_bytes(engine: &Engine) -> u64 {
    let metrics = engine.operations().metrics_text();
    let line = metrics
        .lines()
        .find(|line| line.starts_with("paygate_journal_bytes_total "))
        .expect("the journal's byte counter");
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// Waits (untimed) until the last batch's disbursements are with the vendor.
async fn settle_handovers(engine: &Engine) {
    while engine.disbursements().disbursements_awaiting_handoff() > 0 {
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
}

/// One batch of `ITEMS` from key `base` on, through the engine; the
/// time its call took.
async fn engine_batch(engine: &Engine, merchant_id: Uuid, base: u64) -> Duration {
    // Reading the items into checked commands is the batch's work too, as
    // it is on the HTTP route: inside the timed window.
    let started = Instant::now();
    let items = (base..base + ITEMS as u64).map(|key| Ok(item(key))).collect();
    let answer = engine
        .disbursements()
        .create_disbursement_batch(merchant_id, support::batch_key(format!("batch-{base}")), items)
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert!(answer.items.iter().all(|item| item.is_ok()));
    elapsed
}

fn batch_latency(c: &mut Criterion) {
    allocator::keep_freed_memory();
    let runtime = support::runtime();
    let mut group = c.benchmark_group("disbursement_batch");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(ITEMS as u64));

    let dir = support::bench_dir();
    let (engine, merchant_id, api_key) = runtime.block_on(open_engine(dir.path()));
    let next_key = AtomicU64::new(0);

    // The baseline's record: what one 1,000-item batch journals, read from
    // the journal's byte counter around one (the hand-overs it starts come
    // after its reply, so they are not in it).
    let record_bytes = {
        let base = next_key.fetch_add(ITEMS as u64, Ordering::Relaxed);
        let before = journal_bytes(&engine);
        runtime.block_on(engine_batch(&engine, merchant_id, base));
        let bytes = journal_bytes(&engine) - before;
        runtime.block_on(settle_handovers(&engine));
        eprintln!("a {ITEMS}-item batch's journal record: {bytes} bytes");
        bytes as usize
    };
    let journal_dir = support::bench_dir();
    support::journal_baseline(&mut group, &runtime, journal_dir.path(), 1, record_bytes);

    support::timed(&mut group, &runtime, "engine_1000_items", || async {
        let base = next_key.fetch_add(ITEMS as u64, Ordering::Relaxed);
        let elapsed = engine_batch(&engine, merchant_id, base).await;
        settle_handovers(&engine).await;
        elapsed
    });

    let config = ApiConfig {
        mode: Mode::Sandbox,
        public_url: "http://127.0.0.1:0".into(),
        admin_token: "bench".into(),
        cdn_url: "http://127.0.0.1:0/cdn".into(),
        webhook_retry_scale: 1.0,
        sandbox_disbursement_delay_ms: 3_600_000,
    };
    let app = router(AppState::new(engine.clone(), config));
    support::timed(&mut group, &runtime, "http_1000_items", || async {
        let base = next_key.fetch_add(ITEMS as u64, Ordering::Relaxed);
        let request = Request::post("/v1/disbursements/batch")
            .header("x-api-key", api_key.as_str())
            .header("content-type", "application/json")
            .body(Body::from(body(base)))
            .unwrap();
        let started = Instant::now();
        let response = app.clone().call(request).await.unwrap();
        let status = response.status();
        let answer = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let elapsed = started.elapsed();
        assert_eq!(status, StatusCode::CREATED, "{}", String::from_utf8_lossy(&answer));
        settle_handovers(&engine).await;
        elapsed
    });
    group.finish();
    runtime.block_on(engine.shutdown());
}

criterion_group!(benches, batch_latency);
criterion_main!(benches);
