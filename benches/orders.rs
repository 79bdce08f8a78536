//! Durable order creations per second through the engine: validation, the
//! sandbox payment vendor, the QRIS string, the merchant actor (uniqueness of
//! the merchant's order id and `Idempotency-Key`, one journal record) and
//! group commit. Next to it, the baseline of the same run: the journal
//! alone, appending and syncing records of an order record's size.
//!
//! Run: `cargo bench --bench orders` (see BENCHMARKS.md).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use paygate_engine::clock::SystemClock;
use paygate_engine::domain::SettlementType;
use paygate_engine::orders::NewOrder;
use paygate_engine::store::journal::{self, Journal};
use paygate_engine::{Engine, EngineConfig, NewMerchant};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

// The allocator of the `paygate` binary, with its settings.
#[path = "../src/allocator.rs"]
mod allocator;

/// Orders per measured iteration.
const ORDERS: usize = 20_000;
/// Concurrent callers, as many HTTP connections would be.
const CALLERS: usize = 1024;

fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var("PAYGATE_BENCH_DIR").unwrap_or_else(|_| "target/bench-data".into());
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

async fn open_engine(dir: &std::path::Path, merchants: usize) -> (Engine, Vec<Uuid>) {
    let mut config = EngineConfig::new(dir);
    config.sandbox_refund_delay = Some(Duration::from_secs(3600));
    let engine = Engine::open(config, Arc::new(SystemClock)).await.unwrap();
    let mut ids = Vec::with_capacity(merchants);
    for index in 0..merchants {
        let new = NewMerchant {
            name: format!("Toko Bench {index}"),
            settlement_type: Some(SettlementType::Wallet),
            ..Default::default()
        };
        ids.push(engine.merchants().create_merchant(new).await.unwrap().0.id);
    }
    (engine, ids)
}

fn order(key: u64) -> NewOrder {
    NewOrder {
        merchant_order_id: format!("INV-{key}"),
        amount_minor: 2_500_000,
        payment_method: "QRIS".into(),
        customer_phone: Some("081234567890".into()),
        idempotency: Some((format!("idem-{key}"), [7; 32])),
        ..Default::default()
    }
}

async fn create_orders(engine: &Engine, ids: &[Uuid], next_key: &AtomicU64) -> Duration {
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(CALLERS);
    for caller in 0..CALLERS {
        let engine = engine.clone();
        let ids = ids.to_vec();
        let base = next_key.fetch_add(ORDERS as u64, Ordering::Relaxed);
        tasks.push(tokio::spawn(async move {
            let mut i = caller;
            while i < ORDERS {
                engine
                    .orders()
                    .create_order(ids[i % ids.len()], order(base + i as u64))
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

fn durable_orders(c: &mut Criterion) {
    allocator::keep_freed_memory();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("durable_orders");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15))
        .throughput(Throughput::Elements(ORDERS as u64));

    // Baseline: the journal alone, records the size of an order's, all queued at once.
    let dir = bench_dir();
    let record_bytes = {
        let engine_dir = bench_dir();
        let (engine, ids) = runtime.block_on(open_engine(engine_dir.path(), 1));
        let (created, _) = runtime
            .block_on(engine.orders().create_order(ids[0], order(u64::MAX)))
            .unwrap();
        runtime.block_on(engine.shutdown());
        paygate_engine::store::record::JournalRecord::OrderCreated(Box::new(created))
            .encode()
            .len()
    };
    let outcome = journal::replay(dir.path(), 0, |_, _| Ok(())).unwrap();
    let journal = Journal::start(dir.path(), outcome.next_seq).unwrap();
    group.bench_function("journal_append_sync_baseline", |b| {
        b.to_async(&runtime).iter_custom(|iters| {
            let journal = journal.clone();
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let started = Instant::now();
                    for _ in 0..ORDERS {
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
        group.bench_function(format!("{merchants}_merchants"), |b| {
            b.to_async(&runtime).iter_custom(|iters| {
                let (engine, ids, next_key) = (&engine, &ids, &next_key);
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += create_orders(engine, ids, next_key).await;
                    }
                    total
                }
            })
        });
        runtime.block_on(engine.shutdown());
    }
    group.finish();
}

criterion_group!(benches, durable_orders);
criterion_main!(benches);
