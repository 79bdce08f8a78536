//! Durable disbursements per second through the engine, each through its
//! whole life: validation, the merchant actor (limits, balance, debit and
//! record in one journal entry), group commit, its disbursement actor's
//! first step (handed to the sandbox vendor, ON_PROCESS), and the sandbox's
//! settlement `SANDBOX_DELAY` later (SUCCESS). An iteration ends when every
//! disbursement it created is final, so completions run inside the measured
//! window. Every counted disbursement was fsynced before its caller heard.
//! (Webhooks are the API layer's: `benches/http/run.sh` and `paygate
//! benchmark` measure them.)
//! The same lives created through batches (`*_batched`: each merchant's
//! share of an iteration in batches of up to 1,000, one actor message and
//! one journal record each) stand beside the single-request path.
//! Next to them, the baseline of the same run: the journal alone, appending
//! and syncing three records of a disbursement record's size per
//! disbursement (created, handed over, settled); and the floor of the same
//! run (`life_floor_*`): merchant actors that only journal, taking the turns
//! and the three durable records a life cannot skip, with a checkpoint of
//! the final ones to sled each second (`support/life_floor.rs`).
//!
//! Run: `cargo bench --bench disbursements` (see BENCHMARKS.md).
//! `BENCH_HANDOVER_ONLY=1` is an extra, not the headline: the vendor holds
//! every payout an hour and an iteration ends once all are handed over:
//! creation and hand-over alone, without settlement or webhooks.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use life_floor::LifeFloor;
use paygate_engine::disbursements::NewDisbursement;
use paygate_engine::domain::BATCH_ITEMS_MAX;
use paygate_engine::vendor::SandboxPayoutVendor;
use paygate_engine::{Engine, EngineConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

// The allocator of the `paygate` binary, with its settings.
#[path = "../src/allocator.rs"]
mod allocator;
#[path = "support/life_floor.rs"]
mod life_floor;
// Its memory figures serve `paygate benchmark`, not this bench.
#[allow(dead_code)]
#[path = "../src/process_stats.rs"]
mod process_stats;
#[path = "support/mod.rs"]
mod support;

/// Disbursements per measured iteration.
const DISBURSEMENTS: usize = 20_000;
/// Disbursements created by every iteration so far.
static CREATED: AtomicU64 = AtomicU64::new(0);
/// How long the sandbox vendor keeps a payout ON_PROCESS: short enough that
/// most settle while the iteration is still creating.
const SANDBOX_DELAY: Duration = Duration::from_millis(100);
/// Journal records a disbursement's life takes: created, handed over, settled.
const RECORDS_PER_DISBURSEMENT: usize = 3;

/// The extra mode that stops at the hand-over (see the top of the file).
fn handover_only() -> bool {
    std::env::var_os("BENCH_HANDOVER_ONLY").is_some_and(|v| v == "1")
}

async fn open_engine(dir: &std::path::Path, merchants: usize) -> (Engine, Vec<Uuid>) {
    let mut config = EngineConfig::new(dir);
    let delay = if handover_only() {
        Duration::from_secs(3600)
    } else {
        SANDBOX_DELAY
    };
    config.payout_vendor = Some(Arc::new(SandboxPayoutVendor { delay }));
    if handover_only() {
        // Every payout stays open for the whole run: past the default bound
        // of open disbursements creation would be refused as Busy.
        config.disbursements_open_max = usize::MAX;
    }
    let engine = support::open_engine(config).await;
    let name = |index| format!("bench-{index}");
    let limits = support::no_daily_limit(&[]);
    let ids = support::wallet_merchants(&engine, merchants, name, limits, Some("bench funding")).await;
    (engine, ids)
}

fn disbursement(key: u64) -> NewDisbursement {
    support::disbursement_request(format!("bench-{key}"), "1234567890".into())
}

/// A disbursement created by a request of its own, the call of the
/// unbatched runs.
struct CreateDisbursement;

impl support::Call for CreateDisbursement {
    async fn call(engine: &Engine, merchant: Uuid, key: u64) {
        engine
            .disbursements()
            .create_disbursement(merchant, disbursement(key))
            .await
            .unwrap();
    }
}

async fn disburse(engine: &Engine, ids: &[Uuid], next_key: &AtomicU64) -> Duration {
    let started = Instant::now();
    support::from_callers::<CreateDisbursement>(engine, ids, DISBURSEMENTS, next_key).await;
    await_lives(engine).await;
    CREATED.fetch_add(DISBURSEMENTS as u64, Ordering::Relaxed);
    started.elapsed()
}

/// `disburse` through batches: each merchant's share of the iteration in
/// batches of up to `BATCH_ITEMS_MAX`, every batch its own caller.
async fn disburse_batched(engine: &Engine, ids: &[Uuid], next_key: &AtomicU64) -> Duration {
    let per_merchant = DISBURSEMENTS / ids.len();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for merchant in ids {
        let mut left = per_merchant;
        while left > 0 {
            let size = left.min(BATCH_ITEMS_MAX);
            left -= size;
            let base = next_key.fetch_add(size as u64, Ordering::Relaxed);
            let (engine, merchant) = (engine.clone(), *merchant);
            tasks.push(tokio::spawn(async move {
                let items = (0..size as u64).map(|n| Ok(disbursement(base + n))).collect();
                let answer = engine
                    .disbursements()
                    .create_disbursement_batch(merchant, support::batch_key(format!("bench-batch-{base}")), items)
                    .await
                    .unwrap();
                assert!(answer.items.iter().all(|item| item.is_ok()));
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    await_lives(engine).await;
    CREATED.fetch_add(DISBURSEMENTS as u64, Ordering::Relaxed);
    started.elapsed()
}

/// Waits until every disbursement created is final (or handed over, in
/// the hand-over-only extra).
async fn await_lives(engine: &Engine) {
    // Counted once final, so hand-overs or settlements falling behind show
    // here instead of piling up unseen. Every one created is durable by now,
    // so none is missing from the count.
    if handover_only() {
        while engine.disbursements().disbursements_awaiting_handoff() > 0 {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    } else {
        while engine.disbursements().open_disbursement_count() > 0 {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
    }
}

/// The process's CPU time so far (every thread): per disbursement, a
/// figure that a machine shared with other work disturbs less than
/// throughput.
fn process_cpu() -> Duration {
    Duration::from_secs_f64(process_stats::cpu_seconds())
}

/// Journal records written so far, as `/metrics` counts them.
fn journal_records(engine: &Engine) -> u64 {
    let metrics = engine.operations().metrics_text();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("paygate_journal_records_total "));
    line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// Where a case started: CPU used, disbursements created, journal records.
type Mark = (Duration, u64, u64);

fn mark(engine: &Engine) -> Mark {
    (process_cpu(), CREATED.load(Ordering::Relaxed), journal_records(engine))
}

/// Prints the CPU and journal records a disbursement of `case` took since
/// `from`, warm-up included.
fn report_cpu(case: &str, engine: &Engine, from: Mark) {
    let (cpu_before, created_before, records_before) = from;
    let disbursements = CREATED.load(Ordering::Relaxed) - created_before;
    let records = journal_records(engine) - records_before;
    print_cpu(case, process_cpu().saturating_sub(cpu_before), disbursements, records);
}

/// Prints `cpu` and `records` per life of `case`'s `lives`, warm-up included.
fn print_cpu(case: &str, cpu: Duration, lives: u64, records: u64) {
    if lives > 0 {
        let per = cpu.as_secs_f64() * 1e6 / lives as f64;
        let records = records as f64 / lives as f64;
        println!(
            "{case}: {per:.1} µs of CPU and {records:.2} journal records a life ({lives} lives, warm-up included)"
        );
    }
}

fn durable_disbursements(c: &mut Criterion) {
    allocator::keep_freed_memory();
    let runtime = support::runtime();
    let mut group = c.benchmark_group("durable_disbursements");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(15))
        .throughput(Throughput::Elements(DISBURSEMENTS as u64));

    // Baseline: the journal alone, three records a disbursement (created,
    // handed over, settled) of a created disbursement record's size; two
    // when nothing settles.
    let record_bytes = {
        let engine_dir = support::bench_dir();
        let (engine, ids) = runtime.block_on(open_engine(engine_dir.path(), 1));
        let created = runtime
            .block_on(
                engine
                    .disbursements()
                    .create_disbursement(ids[0], disbursement(u64::MAX)),
            )
            .unwrap();
        runtime.block_on(engine.shutdown());
        paygate_engine::store::record::JournalRecord::DisbursementUpdated(created)
            .encode()
            .len()
    };
    let records = if handover_only() { 2 } else { RECORDS_PER_DISBURSEMENT };
    let dir = support::bench_dir();
    support::journal_baseline(&mut group, &runtime, dir.path(), records * DISBURSEMENTS, record_bytes);

    // The floor of the same run: the actor turns, durable records and
    // checkpoint a life cannot skip, with none of its work. Not in the
    // hand-over-only extra, whose lives never settle.
    if !handover_only() {
        for merchants in [1usize, 1000] {
            let dir = support::bench_dir();
            let floor = runtime.block_on(LifeFloor::start(dir.path(), merchants, record_bytes, SANDBOX_DELAY));
            let case = format!("life_floor_{merchants}_merchants");
            let cpu_before = process_cpu();
            let lives = AtomicU64::new(0);
            support::timed(&mut group, &runtime, &case, || async {
                lives.fetch_add(DISBURSEMENTS as u64, Ordering::Relaxed);
                floor.lives(DISBURSEMENTS).await
            });
            let lives = lives.into_inner();
            print_cpu(
                &case,
                process_cpu().saturating_sub(cpu_before),
                lives,
                RECORDS_PER_DISBURSEMENT as u64 * lives,
            );
            runtime.block_on(floor.stop());
        }
    }

    for merchants in [1usize, 1000] {
        let dir = support::bench_dir();
        let (engine, ids) = runtime.block_on(open_engine(dir.path(), merchants));
        let next_key = AtomicU64::new(0);
        let case = format!("{merchants}_merchants");
        let from = mark(&engine);
        support::timed(&mut group, &runtime, &case, || disburse(&engine, &ids, &next_key));
        report_cpu(&case, &engine, from);
        let case = format!("{merchants}_merchants_batched");
        let from = mark(&engine);
        support::timed(&mut group, &runtime, &case, || {
            disburse_batched(&engine, &ids, &next_key)
        });
        report_cpu(&case, &engine, from);
        runtime.block_on(engine.shutdown());
    }
    group.finish();
}

criterion_group!(benches, durable_disbursements);
criterion_main!(benches);
