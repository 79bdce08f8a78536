//! Durable journal records per second when the journal of record is a
//! shard's table in the cluster's PostgreSQL (one transaction a batch,
//! fenced by the lease epoch), next to the baseline of the same run: the
//! local journal (segment files, one fdatasync a batch) taking the same
//! records. Each iteration appends `RECORDS` records of a disbursement
//! record's size from `CALLERS` concurrent tasks and ends when all are
//! durable.
//!
//! The PostgreSQL server is a private one the bench starts from the
//! machine's install (`fsync` on, as a real one), on loopback.
//! Run: `cargo bench --bench cluster_journal` (see BENCHMARKS.md).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use paygate_engine::cluster::test_postgres::TestPostgres;
use paygate_engine::cluster::{Database, Leases, ShardRecords};
use paygate_engine::store::journal::{self, Journal};
use std::time::{Duration, Instant};

#[path = "support/mod.rs"]
mod support;

/// Records a measured iteration appends.
const RECORDS: usize = 20_000;
/// Concurrent appenders, as merchant actors would be.
const CALLERS: usize = 64;
/// About a created disbursement record's size.
const RECORD_BYTES: usize = 700;

async fn append_all(journal: &Journal) -> Duration {
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(CALLERS);
    for _ in 0..CALLERS {
        let journal = journal.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..RECORDS / CALLERS {
                let (durable, heard) = tokio::sync::oneshot::channel();
                journal
                    .append(
                        vec![7u8; RECORD_BYTES],
                        Box::new(move |_, _| {
                            let _ = durable.send(());
                            None
                        }),
                    )
                    .await
                    .unwrap();
                heard.await.unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    started.elapsed()
}

fn bench(c: &mut Criterion) {
    let Some(pg) = TestPostgres::start() else { return };
    let runtime = support::runtime();
    let mut group = c.benchmark_group("cluster_journal");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20))
        .throughput(Throughput::Elements((RECORDS / CALLERS * CALLERS) as u64));

    let dir = support::bench_dir();
    let outcome = journal::replay(dir.path(), 0, |_, _| Ok(())).unwrap();
    let local = Journal::start(dir.path(), outcome.next_seq).unwrap();
    support::timed(&mut group, &runtime, "local_journal_baseline", || append_all(&local));
    runtime.block_on(local.shutdown());

    let shard = runtime.block_on(async {
        let database = Database::connect(&pg.url()).await.unwrap();
        assert_eq!(
            Leases::new(database.clone(), "bench").acquire(&[0]).await.unwrap(),
            vec![(0, 1)]
        );
        let records = ShardRecords::new(database, "bench");
        Journal::start_on_shard(records, 0, 1, 1, tokio::runtime::Handle::current()).unwrap()
    });
    support::timed(&mut group, &runtime, "shard_journal_postgres", || append_all(&shard));
    let stats = shard.stats();
    let syncs = stats.syncs.load(std::sync::atomic::Ordering::Relaxed).max(1);
    println!(
        "shard journal: {} records in {syncs} transactions ({:.1} a transaction), mean commit {:.2} ms",
        stats.records.load(std::sync::atomic::Ordering::Relaxed),
        stats.records.load(std::sync::atomic::Ordering::Relaxed) as f64 / syncs as f64,
        stats.sync_micros.load(std::sync::atomic::Ordering::Relaxed) as f64 / syncs as f64 / 1000.0
    );
    runtime.block_on(shard.shutdown());
    drop(pg);
}

criterion_group!(benches, bench);
criterion_main!(benches);
