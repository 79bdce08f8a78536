//! Balance history pages deep in a long statement: one
//! merchant with `BENCH_HISTORY_ENTRIES` (default 1,000,000) wallet credits,
//! checkpointed to disk; then a 100-line page read at the top of the
//! statement (the baseline of the same run), in its middle and at its very
//! start, each through a cursor, as a client walking the statement would.
//! A page must cost the same wherever its cursor points: the cursor seeks
//! to its entry's block, it never walks from either end.
//!
//! Run: `cargo bench --bench history` (see BENCHMARKS.md).

use criterion::{criterion_group, criterion_main, Criterion};
use paygate_engine::ledger::statement::LineId;
use paygate_engine::ledger::{self, EntryProposal};
use paygate_engine::LimitOverrides;
use paygate_engine::{EngineConfig, HistoryQuery, MinorUnits};
use std::time::Duration;

#[path = "../src/allocator.rs"]
mod allocator;
#[path = "support/mod.rs"]
mod support;

/// Entries per posting message (the engine's batch cap is 8,192).
const POST_BATCH: usize = 8_192;
/// Lines a page holds: the API's largest.
const PAGE: usize = 100;

fn entries() -> u64 {
    std::env::var("BENCH_HISTORY_ENTRIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn history_pages(c: &mut Criterion) {
    allocator::keep_freed_memory();
    let runtime = support::runtime();
    let dir = support::bench_dir();
    let total = entries();
    let (engine, merchant_id) = runtime.block_on(async {
        let engine = support::open_engine(EngineConfig::new(dir.path())).await;
        let (merchant_id, _) =
            support::wallet_merchant(&engine, "history".into(), LimitOverrides::default(), None).await;
        let mut posted = 0u64;
        while posted < total {
            let n = POST_BATCH.min((total - posted) as usize);
            let proposals: Vec<EntryProposal> = (0..n)
                .map(|_| ledger::wallet_credit(MinorUnits::new(1), "bench".into(), None))
                .collect();
            for result in engine.merchants().post_entries(merchant_id, proposals).await.unwrap() {
                result.unwrap();
            }
            posted += n as u64;
        }
        // On disk, as a long statement is: out of the overlay, into sled.
        engine.operations().checkpoint().await.unwrap();
        (engine, merchant_id)
    });
    let cursor = |seq: u64| LineId {
        merchant_id,
        seq,
        part: 0,
    };
    let mut group = c.benchmark_group("balance_history_page");
    group.sample_size(50).measurement_time(Duration::from_secs(5));
    for (name, starting_after) in [
        ("top_baseline", None),
        ("middle", Some(cursor(total / 2))),
        ("oldest_page", Some(cursor(PAGE as u64 + 1))),
    ] {
        let query = HistoryQuery::page(starting_after, PAGE);
        group.bench_function(name, |b| {
            b.iter(|| {
                let page = engine.merchants().balance_history(merchant_id, &query).unwrap();
                assert_eq!(page.lines.len(), PAGE);
            })
        });
    }
    group.finish();
    runtime.block_on(engine.shutdown());
}

criterion_group!(benches, history_pages);
criterion_main!(benches);
