//! Durable ledger throughput: raw journal append+sync (the baseline) next to
//! entries posted through `MerchantActor`, for 1 and 1,000 merchants, one
//! entry per message and in batches. Every counted entry is fsynced.
//!
//! Run: `cargo bench --bench ledger` (see BENCHMARKS.md).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use paygate_engine::clock::SystemClock;
use paygate_engine::domain::SettlementType;
use paygate_engine::ledger::{self, EntryProposal};
use paygate_engine::store::journal::{self, Journal};
use paygate_engine::{Engine, EngineConfig, MinorUnits, NewMerchant};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

// The allocator of the `paygate` binary, with its settings.
#[path = "../src/allocator.rs"]
mod allocator;

/// Entries per measured iteration.
const ENTRIES: usize = 40_000;
/// Concurrent callers for one-entry-per-message runs.
const CALLERS: usize = 1024;
/// Entries per message in batched runs.
const BATCH: usize = 256;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn bench_dir() -> tempfile::TempDir {
    // On the work disk, not tmpfs, so fsync costs what it costs in service.
    let base = std::env::var("PAYGATE_BENCH_DIR").unwrap_or_else(|_| "target/bench-data".into());
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

fn proposal(key: u64) -> EntryProposal {
    // PAYGATE_BENCH_NO_KEYS=1 measures entries without idempotency keys.
    let key = std::env::var_os("PAYGATE_BENCH_NO_KEYS")
        .is_none()
        .then(|| format!("bench-{key}"));
    ledger::wallet_credit(MinorUnits::new(1), "bench".into(), key)
}

async fn open_engine(dir: &std::path::Path, merchants: usize) -> (Engine, Vec<Uuid>) {
    let engine = Engine::open(EngineConfig::new(dir), Arc::new(SystemClock))
        .await
        .unwrap();
    let mut ids = Vec::with_capacity(merchants);
    for index in 0..merchants {
        let (merchant, _) = engine
            .merchants()
            .create_merchant(NewMerchant {
                name: format!("bench-{index}"),
                settlement_type: Some(SettlementType::Wallet),
                ..Default::default()
            })
            .await
            .unwrap();
        ids.push(merchant.id);
    }
    (engine, ids)
}

/// Posts `ENTRIES` entries, one per message, from `CALLERS` concurrent tasks.
async fn post_singles(engine: &Engine, ids: &[Uuid], next_key: &AtomicU64) -> Duration {
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(CALLERS);
    for caller in 0..CALLERS {
        let engine = engine.clone();
        let ids = ids.to_vec();
        let base = next_key.fetch_add(ENTRIES as u64, Ordering::Relaxed);
        tasks.push(tokio::spawn(async move {
            let mut i = caller;
            while i < ENTRIES {
                let merchant = ids[i % ids.len()];
                engine
                    .merchants()
                    .post_entry(merchant, proposal(base + i as u64))
                    .await
                    .unwrap();
                i += CALLERS;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
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
    let runtime = runtime();
    let mut group = c.benchmark_group("durable_entries");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(12))
        .throughput(Throughput::Elements(ENTRIES as u64));

    // Baseline: the journal alone, records of an entry's size, all queued at once.
    let dir = bench_dir();
    let outcome = journal::replay(dir.path(), 0, |_, _| Ok(())).unwrap();
    let journal = Journal::start(dir.path(), outcome.next_seq).unwrap();
    let record_bytes = paygate_engine::store::record::JournalRecord::EntryPosted(
        paygate_engine::ledger::MerchantBook::new(Uuid::new_v4())
            .prepare(proposal(u64::MAX), 0)
            .unwrap(),
    )
    .encode()
    .len();
    group.bench_function("journal_append_sync_baseline", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let journal = journal.clone();
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    for _ in 0..ENTRIES {
                        journal
                            .append(vec![7u8; record_bytes], Box::new(|_, _| None))
                            .await
                            .unwrap();
                    }
                    journal.sync_point().await.unwrap();
                    total += started.elapsed();
                }
                total
            }
        })
    });
    runtime.block_on(journal.shutdown());

    for merchants in [1usize, 1000] {
        let dir = bench_dir();
        let (engine, ids) = runtime.block_on(open_engine(dir.path(), merchants));
        let next_key = AtomicU64::new(0);
        group.bench_function(format!("merchant_actor_{merchants}_merchants_one_per_message"), |b| {
            b.to_async(&runtime).iter_custom(|iters| {
                let (engine, ids, next_key) = (&engine, &ids, &next_key);
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += post_singles(engine, ids, next_key).await;
                    }
                    total
                }
            })
        });
        group.bench_function(format!("merchant_actor_{merchants}_merchants_batched_{BATCH}"), |b| {
            b.to_async(&runtime).iter_custom(|iters| {
                let (engine, ids, next_key) = (&engine, &ids, &next_key);
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += post_batches(engine, ids, next_key).await;
                    }
                    total
                }
            })
        });
        runtime.block_on(engine.shutdown());
    }
    group.finish();
}

criterion_group!(benches, durable_entries);
criterion_main!(benches);
