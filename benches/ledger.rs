//! Durable ledger throughput: raw journal append+sync (the baseline) next to
//! entries posted through `MerchantActor`, for 1 and 1,000 merchants, one
//! entry per message and in batches. Every counted entry is fsynced.
//!
//! Run: `cargo bench --bench ledger` (see BENCHMARKS.md).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use paygate_engine::ledger::{self, EntryProposal};
use paygate_engine::LimitOverrides;
use paygate_engine::{Engine, EngineConfig, MinorUnits};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use uuid::Uuid;

// The allocator of the `paygate` binary, with its settings.
#[path = "../src/allocator.rs"]
mod allocator;
#[path = "support/mod.rs"]
mod support;

/// Entries per measured iteration.
const ENTRIES: usize = 40_000;
/// Entries per message in batched runs.
const BATCH: usize = 256;

fn proposal(key: u64) -> EntryProposal {
    // PAYGATE_BENCH_NO_KEYS=1 measures entries without idempotency keys.
    let key = std::env::var_os("PAYGATE_BENCH_NO_KEYS")
        .is_none()
        .then(|| format!("bench-{key}"));
    ledger::wallet_credit(MinorUnits::new(1), "bench".into(), key)
}

async fn open_engine(dir: &std::path::Path, merchants: usize) -> (Engine, Vec<Uuid>) {
    let engine = support::open_engine(EngineConfig::new(dir)).await;
    let name = |index| format!("bench-{index}");
    let ids = support::wallet_merchants(&engine, merchants, name, LimitOverrides::default(), None).await;
    (engine, ids)
}

/// One entry posted in a message of its own, the call of the unbatched runs.
struct PostEntry;

impl support::Call for PostEntry {
    async fn call(engine: &Engine, merchant: Uuid, key: u64) {
        engine.merchants().post_entry(merchant, proposal(key)).await.unwrap();
    }
}

/// Posts `ENTRIES` entries, one per message, from `support::CALLERS`
/// concurrent tasks.
async fn post_singles(engine: &Engine, ids: &[Uuid], next_key: &AtomicU64) -> Duration {
    let started = Instant::now();
    support::from_callers::<PostEntry>(engine, ids, ENTRIES, next_key).await;
    started.elapsed()
}

/// Posts `ENTRIES` entries in messages of `BATCH`, all batches concurrently.
async fn post_batches(engine: &Engine, ids: &[Uuid], next_key: &AtomicU64) -> Duration {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for batch in 0..ENTRIES / BATCH {
        let engine = engine.clone();
        let merchant = ids[batch % ids.len()];
        let base = next_key.fetch_add(BATCH as u64, Ordering::Relaxed);
        tasks.push(tokio::spawn(async move {
            let proposals = (0..BATCH as u64).map(|i| proposal(base + i)).collect();
            let results = engine.merchants().post_entries(merchant, proposals).await.unwrap();
            assert!(results.iter().all(|r| r.is_ok()));
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    started.elapsed()
}

fn durable_entries(c: &mut Criterion) {
    allocator::keep_freed_memory();
    let runtime = support::runtime();
    let mut group = c.benchmark_group("durable_entries");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(12))
        .throughput(Throughput::Elements(ENTRIES as u64));

    // Baseline: the journal alone, records of an entry's size, all queued at once.
    let dir = support::bench_dir();
    let record_bytes = paygate_engine::store::record::JournalRecord::EntryPosted(
        paygate_engine::ledger::MerchantBook::new(Uuid::new_v4())
            .prepare(proposal(u64::MAX), 0)
            .unwrap(),
    )
    .encode()
    .len();
    support::journal_baseline(&mut group, &runtime, dir.path(), ENTRIES, record_bytes);

    for merchants in [1usize, 1000] {
        let dir = support::bench_dir();
        let (engine, ids) = runtime.block_on(open_engine(dir.path(), merchants));
        let next_key = AtomicU64::new(0);
        let singles = format!("merchant_actor_{merchants}_merchants_one_per_message");
        support::timed(&mut group, &runtime, singles, || post_singles(&engine, &ids, &next_key));
        let batched = format!("merchant_actor_{merchants}_merchants_batched_{BATCH}");
        support::timed(&mut group, &runtime, batched, || post_batches(&engine, &ids, &next_key));
        runtime.block_on(engine.shutdown());
    }
    group.finish();
}

criterion_group!(benches, durable_entries);
criterion_main!(benches);
