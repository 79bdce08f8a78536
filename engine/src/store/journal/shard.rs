//! A journal whose batches go to one shard's journal of record in the
//! cluster's database instead of segment files: one transaction a batch
//! (group commit), each record under the shard's sequence and the lease
//! epoch the node holds it by, fenced by that epoch.
//!
//! The writer thread drives the database calls on the runtime whose handle
//! it was given, so the pool's connections stay driven by that runtime.
//! - A batch the database does not take (unreachable, timed out) is held
//!   and sent again, as a batch the disk refuses is: nothing behind it is
//!   acknowledged meanwhile, and the engine refuses new writes.
//! - A batch refused because the shard is owned under a newer epoch ends
//!   the journal for good (`is_fenced`): its records and everything queued
//!   behind them are never acknowledged.
//! - A batch sent again after an attempt whose commit may have gone
//!   through is not written twice: an append finding its records already
//!   there, byte for byte, counts them as written.

use super::{Journal, JournalError, ReplayOutcome, SinkError};
use crate::cluster::{Append, ClusterError, ShardRecords};
use std::time::Duration;

/// How long one batch's transaction may take before it is held and sent
/// again.
const APPEND_TIMEOUT: Duration = Duration::from_secs(5);
/// Records read from the database at a time during a replay.
const REPLAY_PAGE: i64 = 1_000;

/// The writer's database sink.
pub(super) struct ShardSink {
    records: ShardRecords,
    shard: u16,
    epoch: i64,
    runtime: tokio::runtime::Handle,
}

impl ShardSink {
    /// Appends one batch of (sequence, record) in one transaction.
    pub(super) fn write_once(&mut self, batch: &[(u64, &[u8])]) -> Result<(), SinkError> {
        let appends: Vec<Append> = batch
            .iter()
            .map(|&(seq, record)| Append {
                shard: self.shard,
                epoch: self.epoch,
                seq: seq as i64,
                record: record.to_vec(),
            })
            .collect();
        let records = &self.records;
        let attempt = self
            .runtime
            .block_on(async { tokio::time::timeout(APPEND_TIMEOUT, records.append(&appends)).await });
        match attempt {
            Ok(Ok(())) => Ok(()),
            Ok(Err(ClusterError::Fenced(_))) => Err(SinkError::Fenced),
            Ok(Err(error)) => Err(SinkError::Retry(error.to_string())),
            Err(_) => Err(SinkError::Retry(format!(
                "the database took longer than {APPEND_TIMEOUT:?}"
            ))),
        }
    }

    /// Where batches go, for logs.
    pub(super) fn describe(&self) -> String {
        format!("shard {} (epoch {}) in the cluster's database", self.shard, self.epoch)
    }
}

impl Journal {
    /// Starts a journal writing to `shard`'s journal of record under lease
    /// `epoch`, appending after `next_seq - 1` (as `replay_shard` returned);
    /// its database calls run on `runtime`.
    pub fn start_on_shard(
        records: ShardRecords,
        shard: u16,
        epoch: i64,
        next_seq: u64,
        runtime: tokio::runtime::Handle,
    ) -> Result<Journal, JournalError> {
        let sink = super::Sink::Shard(Box::new(ShardSink {
            records,
            shard,
            epoch,
            runtime,
        }));
        Journal::launch(
            sink,
            None,
            next_seq,
            #[cfg(test)]
            std::sync::Arc::default(),
        )
    }
}

/// Visits `shard`'s records after `after_seq` in order, as `replay` does
/// segment files; they must follow on without a gap (a gap means the
/// records were dropped behind a snapshot the caller should have loaded).
pub async fn replay_shard(
    records: &ShardRecords,
    shard: u16,
    after_seq: u64,
    mut visit: impl FnMut(u64, &[u8]) -> Result<(), JournalError>,
) -> Result<ReplayOutcome, JournalError> {
    let mut last = after_seq;
    let mut replayed = 0u64;
    loop {
        let page = records
            .read_after(shard, last as i64, REPLAY_PAGE)
            .await
            .map_err(|error| JournalError::Shared(error.to_string()))?;
        let full = page.len() as i64 == REPLAY_PAGE;
        for record in page {
            let seq = record.seq as u64;
            if seq != last + 1 {
                return Err(JournalError::Shared(format!(
                    "shard {shard}'s journal jumps from record {last} to {seq}: load its snapshot first"
                )));
            }
            visit(seq, &record.record)?;
            last = seq;
            replayed += 1;
        }
        if !full {
            break;
        }
    }
    Ok(ReplayOutcome {
        next_seq: last + 1,
        records_replayed: replayed,
        torn_bytes_cut: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::test_postgres::TestPostgres;
    use crate::cluster::{Database, Leases};
    use std::time::Instant;
    use tokio::sync::oneshot;

    /// Appends `payload`; the receiver hears its sequence number once durable.
    async fn append(journal: &Journal, payload: Vec<u8>) -> oneshot::Receiver<u64> {
        let (durable, heard) = oneshot::channel();
        journal
            .append(
                payload,
                Box::new(move |seq, _| {
                    let _ = durable.send(seq);
                    None
                }),
            )
            .await
            .unwrap();
        heard
    }

    async fn replayed(records: &ShardRecords, shard: u16, after: u64) -> (Vec<(u64, Vec<u8>)>, ReplayOutcome) {
        let mut seen = Vec::new();
        let outcome = replay_shard(records, shard, after, |seq, record| {
            seen.push((seq, record.to_vec()));
            Ok(())
        })
        .await
        .unwrap();
        (seen, outcome)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_shard_journal_commits_its_batches_to_the_database_and_replays_from_it() {
        let Some(pg) = TestPostgres::start() else { return };
        let database = Database::connect(&pg.url()).await.unwrap();
        assert_eq!(
            Leases::new(database.clone(), "a").acquire(&[3]).await.unwrap(),
            vec![(3, 1)]
        );
        let records = ShardRecords::new(database, "a");
        let journal = Journal::start_on_shard(records.clone(), 3, 1, 1, tokio::runtime::Handle::current()).unwrap();
        let mut heard = Vec::new();
        for n in 0..200u32 {
            heard.push(append(&journal, n.to_le_bytes().to_vec()).await);
        }
        for (n, durable) in heard.into_iter().enumerate() {
            assert_eq!(durable.await.unwrap(), n as u64 + 1);
        }
        assert_eq!(journal.durable_seq(), 200);
        assert!(
            journal.stats().syncs.load(std::sync::atomic::Ordering::Relaxed) < 200,
            "batches were grouped"
        );
        journal.shutdown().await;

        let (seen, outcome) = replayed(&records, 3, 0).await;
        assert_eq!(seen.len(), 200);
        assert!(seen
            .iter()
            .enumerate()
            .all(|(n, (seq, record))| *seq == n as u64 + 1 && record == &(n as u32).to_le_bytes().to_vec()));
        assert_eq!((outcome.next_seq, outcome.records_replayed), (201, 200));
        let (seen, outcome) = replayed(&records, 3, 150).await;
        assert_eq!((seen.len(), seen[0].0, outcome.next_seq), (50, 151, 201));

        // A new owner goes on after the last record, and a gap is refused.
        records.write_snapshot(3, 1, 120, b"state").await.unwrap();
        let gap = replay_shard(&records, 3, 100, |_, _| Ok(())).await;
        assert!(matches!(gap, Err(JournalError::Shared(_))), "{gap:?}");
        assert_eq!(replayed(&records, 3, 120).await.0.len(), 80);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fenced_shard_journal_acknowledges_nothing_more() {
        let Some(pg) = TestPostgres::start() else { return };
        let database = Database::connect(&pg.url()).await.unwrap();
        assert_eq!(
            Leases::new(database.clone(), "a").acquire(&[4]).await.unwrap(),
            vec![(4, 1)]
        );
        let records = ShardRecords::new(database.clone(), "a");
        let journal = Journal::start_on_shard(records.clone(), 4, 1, 1, tokio::runtime::Handle::current()).unwrap();
        assert_eq!(append(&journal, b"first".to_vec()).await.await.unwrap(), 1);

        // Node b takes the shard after a's lease ran out.
        database
            .client()
            .await
            .unwrap()
            .execute("UPDATE shard_leases SET expires_at = now() WHERE shard = 4", &[])
            .await
            .unwrap();
        assert_eq!(
            Leases::new(database.clone(), "b").acquire(&[4]).await.unwrap(),
            vec![(4, 2)]
        );

        let second = append(&journal, b"second".to_vec()).await;
        assert!(second.await.is_err(), "a fenced record is never acknowledged");
        assert!(journal.is_fenced() && !journal.is_writable());
        let started = Instant::now();
        while journal.append(b"third".to_vec(), Box::new(|_, _| None)).await.is_ok() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(5),
                "appends still taken"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let (seen, _) = replayed(&records, 4, 0).await;
        assert_eq!(seen, vec![(1, b"first".to_vec())]);
        journal.shutdown().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_the_database_could_not_take_waits_and_is_written_once_when_it_returns() {
        let Some(pg) = TestPostgres::start() else { return };
        let database = Database::connect(&pg.url()).await.unwrap();
        assert_eq!(
            Leases::new(database.clone(), "a").acquire(&[5]).await.unwrap(),
            vec![(5, 1)]
        );
        let records = ShardRecords::new(database, "a");
        let journal = Journal::start_on_shard(records.clone(), 5, 1, 1, tokio::runtime::Handle::current()).unwrap();
        assert_eq!(append(&journal, b"before".to_vec()).await.await.unwrap(), 1);

        pg.stop();
        let mut held = append(&journal, b"while away".to_vec()).await;
        let started = Instant::now();
        while journal.is_writable() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(15),
                "the failure was not seen"
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(
            held.try_recv().is_err(),
            "nothing is acknowledged while the database is away"
        );
        pg.start_again();
        assert_eq!(held.await.unwrap(), 2);
        assert!(journal.is_writable() && !journal.is_fenced());
        let (seen, _) = replayed(&records, 5, 0).await;
        assert_eq!(seen, vec![(1, b"before".to_vec()), (2, b"while away".to_vec())]);
        journal.shutdown().await;
    }
}
