//! Durable order creations per second through the engine: validation, the
//! sandbox payment vendor, the QRIS string, the merchant actor (uniqueness of
//! the merchant's order id and `Idempotency-Key`, one journal record) and
//! group commit. Next to it, the baseline of the same run: the journal
//! alone, appending and syncing records of an order record's size.
//!
//! Run: `cargo bench --bench orders` (see BENCHMARKS.md).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use paygate_engine::domain::PaymentMethod;
use paygate_engine::input::IdempotencyKey;
use paygate_engine::orders::{Customer, NewOrder};
use paygate_engine::LimitOverrides;
use paygate_engine::{Engine, EngineConfig};
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};
use uuid::Uuid;

// The allocator of the `paygate` binary, with its settings.
#[path = "../src/allocator.rs"]
mod allocator;
#[path = "support/mod.rs"]
mod support;

/// Orders per measured iteration.
const ORDERS: usize = 20_000;

async fn open_engine(dir: &std::path::Path, merchants: usize) -> (Engine, Vec<Uuid>) {
    let mut config = EngineConfig::new(dir);
    config.sandbox_refund_delay = Some(Duration::from_secs(3600));
    let engine = support::open_engine(config).await;
    let name = |index| format!("Toko Bench {index}");
    let ids = support::wallet_merchants(&engine, merchants, name, LimitOverrides::default(), None).await;
    (engine, ids)
}

fn order(key: u64) -> NewOrder {
    let idempotency_key = IdempotencyKey::parse(format!("idem-{key}")).expect("a valid key");
    NewOrder {
        customer: Customer::parse(None, None, Some("081234567890")).expect("a valid customer"),
        idempotency: Some((idempotency_key, [7; 32])),
        ..NewOrder::new(&format!("INV-{key}"), 2_500_000, PaymentMethod::Qris).expect("a valid order")
    }
}

/// An order creation, the call this bench makes.
struct CreateOrder;

impl support::Call for CreateOrder {
    async fn call(engine: &Engine, merchant: Uuid, key: u64) {
        engine.orders().create_order(merchant, order(key)).await.unwrap();
    }
}

async fn create_orders(engine: &Engine, ids: &[Uuid], next_key: &AtomicU64) -> Duration {
    let started = Instant::now();
    support::from_callers::<CreateOrder>(engine, ids, ORDERS, next_key).await;
    started.elapsed()
}

fn durable_orders(c: &mut Criterion) {
    allocator::keep_freed_memory();
    let runtime = support::runtime();
    let mut group = c.benchmark_group("durable_orders");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15))
        .throughput(Throughput::Elements(ORDERS as u64));

    // Baseline: the journal alone, records the size of an order's, all queued at once.
    let dir = support::bench_dir();
    let record_bytes = {
        let engine_dir = support::bench_dir();
        let (engine, ids) = runtime.block_on(open_engine(engine_dir.path(), 1));
        let (created, _) = runtime
            .block_on(engine.orders().create_order(ids[0], order(u64::MAX)))
            .unwrap();
        runtime.block_on(engine.shutdown());
        paygate_engine::store::record::JournalRecord::OrderCreated(Box::new(created))
            .encode()
            .len()
    };
    support::journal_baseline(&mut group, &runtime, dir.path(), ORDERS, record_bytes);

    for merchants in [1usize, 1000] {
        let dir = support::bench_dir();
        let (engine, ids) = runtime.block_on(open_engine(dir.path(), merchants));
        let next_key = AtomicU64::new(0);
        support::timed(&mut group, &runtime, format!("{merchants}_merchants"), || {
            create_orders(&engine, &ids, &next_key)
        });
        runtime.block_on(engine.shutdown());
    }
    group.finish();
}

criterion_group!(benches, durable_orders);
criterion_main!(benches);
