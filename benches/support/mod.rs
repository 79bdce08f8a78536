//! What the benches (and `benches/restart/fill.rs`) share: where their data
//! goes, the runtime they measure on, the engine and its WALLET merchants,
//! the disbursement request, the journal baseline, and the loops that time
//! an iteration or spread calls over concurrent callers.
// Each bench uses a part of this module.
#![allow(dead_code)]

use criterion::measurement::WallTime;
use criterion::BenchmarkGroup;
use paygate_engine::clock::SystemClock;
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::domain::SettlementType;
use paygate_engine::store::journal::{self, Journal};
use paygate_engine::{Engine, EngineConfig, MinorUnits, NewMerchant};
use paygate_engine::{LimitField, LimitOverrides};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::runtime::Runtime;
use uuid::Uuid;

/// Concurrent callers of `from_callers`, as many HTTP connections would be.
pub const CALLERS: usize = 1024;
/// What a merchant that pays out is credited with, and its daily limit:
/// more than any run spends, so neither refuses a bench's volume.
const FUNDING_MINOR: i64 = i64::MAX / 4;

/// A fresh directory under `PAYGATE_BENCH_DIR` (default
/// `target/bench-data`): on the work disk, not tmpfs, so fsync costs what
/// it costs in service.
pub fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var("PAYGATE_BENCH_DIR").unwrap_or_else(|_| "target/bench-data".into());
    std::fs::create_dir_all(&base).unwrap();
    tempfile::tempdir_in(base).unwrap()
}

/// The runtime every criterion bench measures on: two worker threads, the
/// cores of the machine BENCHMARKS.md's figures come from.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Opens the engine `config` describes, on the system clock.
pub async fn open_engine(config: EngineConfig) -> Engine {
    Engine::open(config, Arc::new(SystemClock)).await.unwrap()
}

/// Limits with a daily total no bench reaches, and `more`.
pub fn no_daily_limit(more: &[(LimitField, i64)]) -> LimitOverrides {
    let daily = (LimitField::DailyMinor, Some(FUNDING_MINOR));
    LimitOverrides::parse(std::iter::once(daily).chain(more.iter().map(|&(field, value)| (field, Some(value)))))
        .expect("valid limits")
}

/// Creates a WALLET merchant named `name` with `limits`; with
/// `funding_reason`, credits its wallet with more than a run pays out.
/// Returns its id and API key.
pub async fn wallet_merchant(
    engine: &Engine,
    name: String,
    limits: LimitOverrides,
    funding_reason: Option<&str>,
) -> (Uuid, String) {
    let new = NewMerchant {
        limits,
        ..NewMerchant::new(name, SettlementType::Wallet)
    };
    let (merchant, credentials) = engine.merchants().create_merchant(new).await.unwrap();
    if let Some(reason) = funding_reason {
        engine
            .merchants()
            .credit_wallet(merchant.id, MinorUnits::new(FUNDING_MINOR), reason, None)
            .await
            .unwrap();
    }
    (merchant.id, credentials.api_key)
}

/// `count` merchants as `wallet_merchant` makes them, the `index`th named
/// `name(index)`: their ids.
pub async fn wallet_merchants(
    engine: &Engine,
    count: usize,
    name: impl Fn(usize) -> String,
    limits: LimitOverrides,
    funding_reason: Option<&str>,
) -> Vec<Uuid> {
    let mut ids = Vec::with_capacity(count);
    for index in 0..count {
        let (id, _) = wallet_merchant(engine, name(index), limits.clone(), funding_reason).await;
        ids.push(id);
    }
    ids
}

/// The disbursement the benches ask for: IDR 10,000 by bank transfer to
/// Budi Santoso's BCA account `account_number`. The one place that builds
/// the engine's request, so a change to its type is made here alone.
pub fn disbursement_request(idempotency_key: String, account_number: String) -> NewDisbursement {
    NewDisbursement::to_bank(idempotency_key, "BCA", &account_number, "Budi Santoso", 1_000_000)
        .expect("the benches' disbursement is valid")
}

/// A batch's key, checked as the API checks it.
pub fn batch_key(key: String) -> paygate_engine::input::IdempotencyKey {
    paygate_engine::input::IdempotencyKey::parse(key).expect("the benches' batch keys are valid")
}

/// Adds `name` to `group`: an iteration is one `iteration().await`, and
/// counts the time it returns, so that what it does outside its own
/// timing (setup, waiting for the previous batch's work) is left out.
pub fn timed<F, Fut>(group: &mut BenchmarkGroup<'_, WallTime>, runtime: &Runtime, name: impl Into<String>, iteration: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Duration>,
{
    group.bench_function(name.into(), |b| {
        b.to_async(runtime).iter_custom(|iters| {
            let iteration = &iteration;
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += iteration().await;
                }
                total
            }
        })
    });
}

/// Adds `journal_append_sync_baseline` to `group`, the baseline of the
/// same run: a journal in `dir` alone, an iteration appending `records`
/// records of `record_bytes` (all queued at once) and syncing them. The
/// journal is shut down afterwards; `dir` stays the caller's.
pub fn journal_baseline(
    group: &mut BenchmarkGroup<'_, WallTime>,
    runtime: &Runtime,
    dir: &std::path::Path,
    records: usize,
    record_bytes: usize,
) {
    let outcome = journal::replay(dir, 0, |_, _| Ok(())).unwrap();
    let journal = Journal::start(dir, outcome.next_seq).unwrap();
    timed(group, runtime, "journal_append_sync_baseline", || async {
        let started = Instant::now();
        for _ in 0..records {
            journal
                .append(vec![7u8; record_bytes], Box::new(|_, _| None))
                .await
                .unwrap();
        }
        journal.sync_point().await.unwrap();
        started.elapsed()
    });
    runtime.block_on(journal.shutdown());
}

/// One call of a bench's kind, as `from_callers` makes it.
pub trait Call {
    /// Makes the call for `merchant` with the bench's request of `key`;
    /// any failure fails the bench.
    fn call(engine: &Engine, merchant: Uuid, key: u64) -> impl Future<Output = ()> + Send;
}

/// Makes `count` calls of `C` from `CALLERS` concurrent tasks and returns
/// once every one is answered. Caller `c` makes calls `c`, `c + CALLERS`,
/// and so on; call `i` is for merchant `ids[i % ids.len()]`, with key
/// `base + i` where `base` is the caller's own take of `count` keys from
/// `next_key`, so no key is used twice in a run.
pub async fn from_callers<C: Call + 'static>(engine: &Engine, ids: &[Uuid], count: usize, next_key: &AtomicU64) {
    let mut tasks = Vec::with_capacity(CALLERS);
    for caller in 0..CALLERS {
        let engine = engine.clone();
        let ids = ids.to_vec();
        let base = next_key.fetch_add(count as u64, Ordering::Relaxed);
        tasks.push(tokio::spawn(async move {
            let mut i = caller;
            while i < count {
                C::call(&engine, ids[i % ids.len()], base + i as u64).await;
                i += CALLERS;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}
