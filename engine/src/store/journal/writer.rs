//! The journal's writer thread: batches queued records into one write and
//! one sync, holds a batch the disk refuses (full, failing) and writes it
//! again until the disk takes it, and only then hands it to the applier.
//!
//! Invariants:
//! - a record's completion runs only after the write and `fdatasync` that
//!   hold it succeeded: nothing is acknowledged that a crash could lose;
//! - batches reach the disk, and their completions the applier, in queue
//!   order: a batch the disk refused holds every later one behind it;
//! - after a failed attempt, the segment is cut back to its last length
//!   known durable before the batch is written again, so a failed attempt
//!   leaves no record twice and no torn frame in the middle of the journal.
//!
//! Linux marks pages whose writeback failed as clean even though the disk
//! lacks them, so a second `fsync` can succeed without writing them (the
//! PostgreSQL "fsyncgate" lesson). A retry therefore opens the segment
//! afresh, truncates it to the durable length and writes the whole batch
//! again: every page the batch touches is dirtied anew, and the sync that
//! follows writes them all.

use super::{
    encode_frame, opens_next_batch, segment_path, sync_dir, Applied, Command, Health, JournalStats, SinkError,
    SLOW_STEP,
};
use crate::limits;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use tokio::sync::mpsc as tokio_mpsc;

/// A backoff pause looks at the closing flag this often, so a shutdown
/// while the disk refuses does not wait out a long pause.
const CLOSING_POLL: Duration = Duration::from_millis(20);

/// How long a batch waits for more records after one of
/// `last_batch_records` (see `limits::JOURNAL_COMMIT_DELAY`).
fn commit_delay(last_batch_records: usize) -> Option<Duration> {
    (last_batch_records >= limits::JOURNAL_BUSY_BATCH_RECORDS).then_some(limits::JOURNAL_COMMIT_DELAY)
}

/// The next command queued before `until`, if any (none either when the
/// queue closed).
fn next_within(
    timer: &tokio::runtime::Runtime,
    receiver: &mut tokio_mpsc::Receiver<Command>,
    until: Instant,
) -> Option<Command> {
    // The timeout is made inside the runtime: its timer needs one.
    timer
        .block_on(async { tokio::time::timeout_at(until.into(), receiver.recv()).await })
        .ok()
        .flatten()
}

/// The writer thread's state.
pub(super) struct Writer {
    pub sink: Sink,
    pub next_seq: u64,
    pub durable_seq: Arc<AtomicU64>,
    pub stats: Arc<JournalStats>,
    pub health: Arc<Health>,
    pub applier: mpsc::Sender<Vec<Applied>>,
}

/// Where batches become durable.
pub(super) enum Sink {
    /// Segment files in the data dir, `fdatasync`ed.
    Segments(Segments),
    /// A shard's journal of record in the cluster's database.
    Shard(Box<super::shard::ShardSink>),
}

/// The local sink's state: the segment written to.
pub(super) struct Segments {
    pub dir: PathBuf,
    pub segment_bytes_max: u64,
    /// The segment records are appended to.
    pub file: File,
    pub path: PathBuf,
    /// How much of `path` is durable: a failed attempt is cut back to this.
    pub segment_bytes: u64,
    /// A failed attempt may have left part of its batch past
    /// `segment_bytes`, or pages whose writeback failed: the next attempt
    /// reopens the segment and cuts it first.
    pub damaged: bool,
    /// Tests: failures to inject into writes, syncs and new segments.
    #[cfg(test)]
    pub faults: Arc<Faults>,
}

impl Writer {
    pub(super) fn run(mut self, mut receiver: tokio_mpsc::Receiver<Command>) {
        let mut buffer: Vec<u8> = Vec::with_capacity(1 << 20);
        // A record that would have taken its batch past the byte cap opens the next.
        let mut held_over: Option<Command> = None;
        let mut last_batch_records = 0usize;
        // Only for waiting on the queue with a deadline (see `next_within`).
        let timer = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a timer runtime for the journal writer");
        while let Some(first) = held_over.take().or_else(|| receiver.blocking_recv()) {
            if let Some(delay) = commit_delay(last_batch_records) {
                std::thread::sleep(delay);
            }
            let mut completions: Vec<Applied> = Vec::new();
            // Which of `completions` are records (the rest are barriers).
            let mut appended: Vec<usize> = Vec::new();
            let mut closing = false;
            let mut next = Some(first);
            let mut records = 0usize;
            let write_first = self.next_seq;
            // Whether anyone waits on this batch promptly, and until when a
            // batch nobody does waits for company.
            let mut waited = false;
            let mut background_until: Option<Instant> = None;
            while let Some(command) = next.take() {
                match command {
                    Command::Close => closing = true,
                    // A batch stays within the cap unless it is one record,
                    // which bounds what a crash can tear (see `replay`).
                    Command::Append {
                        payload,
                        done,
                        waited: record_waited,
                    } if opens_next_batch(buffer.len(), payload.len()) => {
                        held_over = Some(Command::Append {
                            payload,
                            done,
                            waited: record_waited,
                        });
                        break;
                    }
                    Command::Append {
                        payload,
                        done,
                        waited: record_waited,
                    } => {
                        let seq = self.next_seq;
                        self.next_seq += 1;
                        encode_frame(seq, write_first, &payload, &mut buffer);
                        appended.push(completions.len());
                        completions.push((seq, payload, done));
                        records += 1;
                        waited |= record_waited;
                    }
                    Command::Barrier { done } => {
                        completions.push((self.next_seq - 1, Vec::new(), done));
                        waited = true;
                    }
                }
                if closing
                    || buffer.len() >= limits::JOURNAL_BATCH_BYTES_MAX
                    || records >= limits::JOURNAL_BATCH_RECORDS_MAX
                {
                    break;
                }
                next = receiver.try_recv().ok();
                // A batch already large shares its sync: a drain of
                // background records goes at the disk's pace, not the wait's.
                if next.is_none() && !waited && records < limits::JOURNAL_BUSY_BATCH_RECORDS {
                    let until =
                        *background_until.get_or_insert_with(|| Instant::now() + limits::JOURNAL_BACKGROUND_WAIT);
                    next = next_within(&timer, &mut receiver, until);
                }
            }
            if !buffer.is_empty() {
                let batch: Vec<(u64, &[u8])> = appended
                    .iter()
                    .map(|&index| (completions[index].0, completions[index].1.as_slice()))
                    .collect();
                if !self.write_until_durable(&buffer, &batch, write_first) {
                    // Closed while the disk refused: these records' completions
                    // are dropped unrun, so none of them was acknowledged.
                    return;
                }
                self.stats.syncs.fetch_add(1, Ordering::Relaxed);
                last_batch_records = records;
                self.stats.records.fetch_add(records as u64, Ordering::Relaxed);
                self.stats.bytes.fetch_add(buffer.len() as u64, Ordering::Relaxed);
                buffer.clear();
            }
            self.durable_seq.store(self.next_seq - 1, Ordering::Release);
            if !completions.is_empty() && self.applier.send(completions).is_err() {
                return;
            }
            if closing {
                return;
            }
        }
    }

    /// Makes one batch durable (`bytes`, its frames, whose first record is
    /// `write_first`; `batch`, its records), trying again with backoff until
    /// the sink takes it. False when the journal closed first, or was
    /// fenced: the batch is then not durable.
    fn write_until_durable(&mut self, bytes: &[u8], batch: &[(u64, &[u8])], write_first: u64) -> bool {
        let records = batch.len();
        let mut delay = limits::JOURNAL_RETRY_DELAY_FIRST;
        let mut failures = 0u64;
        loop {
            let started = Instant::now();
            let attempt = match &mut self.sink {
                Sink::Segments(segments) => segments
                    .write_once(bytes, write_first)
                    .map_err(|error| SinkError::Retry(error.to_string())),
                Sink::Shard(shard) => shard.write_once(batch),
            };
            let took = started.elapsed();
            if took >= SLOW_STEP {
                tracing::warn!(
                    ms = took.as_millis() as u64,
                    bytes = bytes.len(),
                    records,
                    "journal write and sync slow"
                );
            }
            if attempt.is_ok() {
                self.stats
                    .sync_micros
                    .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
            }
            let error = match attempt {
                Err(SinkError::Fenced) => {
                    self.health.fenced.store(true, Ordering::Release);
                    self.health.writable.store(false, Ordering::Release);
                    tracing::error!(
                        records,
                        "journal fenced: its shard is owned under a newer epoch, so this node writes nothing more \
                         to it; the records queued were never acknowledged"
                    );
                    return false;
                }
                Ok(()) => {
                    if !self.health.writable.swap(true, Ordering::AcqRel) {
                        tracing::info!(
                            failed_attempts = failures,
                            records,
                            "journal writable again; the records held meanwhile are durable and writes are taken"
                        );
                    }
                    return true;
                }
                Err(SinkError::Retry(error)) => error,
            };
            if let Sink::Segments(segments) = &mut self.sink {
                segments.damaged = true;
            }
            failures += 1;
            self.stats.failed_writes.fetch_add(1, Ordering::Relaxed);
            // Logged once when the journal goes down, not on every retry.
            if self.health.writable.swap(false, Ordering::AcqRel) {
                tracing::error!(
                    %error,
                    sink = %self.sink.describe(),
                    records,
                    "journal cannot be written (disk full or failing, or database away): writes are refused, \
                     those already queued wait unacknowledged, and the write is tried again until it is taken"
                );
            }
            if !self.pause(delay) {
                tracing::warn!(
                    records,
                    "journal closed while the disk refused a write: those records were never acknowledged"
                );
                return false;
            }
            delay = (delay * 2).min(limits::JOURNAL_RETRY_DELAY_MAX);
        }
    }

    /// Sleeps `delay`, waking early when the journal closes; false if it did.
    fn pause(&self, delay: Duration) -> bool {
        let deadline = Instant::now() + delay;
        while !self.health.closing.load(Ordering::Acquire) {
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            std::thread::sleep((deadline - now).min(CLOSING_POLL));
        }
        false
    }
}

impl Sink {
    /// Where batches go, for logs.
    fn describe(&self) -> String {
        match self {
            Sink::Segments(segments) => segments.path.display().to_string(),
            Sink::Shard(shard) => shard.describe(),
        }
    }
}

impl Segments {
    /// One attempt: repair what a failed attempt left, start a new segment
    /// if the current one is full, write, sync.
    fn write_once(&mut self, bytes: &[u8], write_first: u64) -> io::Result<()> {
        if self.damaged {
            let file = OpenOptions::new().append(true).open(&self.path)?;
            file.set_len(self.segment_bytes)?;
            self.file = file;
            self.damaged = false;
        }
        if self.segment_bytes >= self.segment_bytes_max {
            self.roll_over(write_first)?;
        }
        #[cfg(test)]
        match self.faults.current() {
            Some(Fault::TornWrite) => {
                self.file.write_all(&bytes[..bytes.len() / 2])?;
                return Err(io::Error::new(io::ErrorKind::StorageFull, "injected: torn write"));
            }
            Some(Fault::FailedSync) => {
                self.file.write_all(bytes)?;
                return Err(io::Error::other("injected: fdatasync failed"));
            }
            _ => {}
        }
        self.file.write_all(bytes)?;
        self.file.sync_data()?;
        self.segment_bytes += bytes.len() as u64;
        Ok(())
    }

    /// Starts the segment whose first record is `first_seq`. The writer
    /// moves to it only once its directory entry is durable: a record synced
    /// into a file whose name a crash could take back is not durable.
    fn roll_over(&mut self, first_seq: u64) -> io::Result<()> {
        let path = segment_path(&self.dir, first_seq);
        let file = OpenOptions::new().create(true).append(true).open(&path)?;
        // Only an earlier attempt of this roll-over can have made it, and
        // nothing is written to a segment before the writer moves to it.
        assert_eq!(file.metadata()?.len(), 0, "a new journal segment holds nothing");
        #[cfg(test)]
        if let Some(Fault::FailedRollOver) = self.faults.current() {
            return Err(io::Error::new(io::ErrorKind::StorageFull, "injected: new segment"));
        }
        sync_dir(&self.dir)?;
        self.file = file;
        self.path = path;
        self.segment_bytes = 0;
        Ok(())
    }
}

/// A failure the tests inject into every attempt until they clear it.
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Fault {
    /// Half the batch reaches the file, then the write fails (ENOSPC).
    TornWrite,
    /// The whole batch reaches the page cache, then `fdatasync` fails (EIO).
    FailedSync,
    /// A new segment is created, then syncing its directory entry fails.
    FailedRollOver,
}

/// The tests' fault seam: the failure every attempt meets now, if any.
#[cfg(test)]
#[derive(Default)]
pub(super) struct Faults {
    current: std::sync::Mutex<Option<Fault>>,
}

#[cfg(test)]
impl Faults {
    pub(super) fn set(&self, fault: Option<Fault>) {
        *self.current.lock().expect("faults lock") = fault;
    }

    fn current(&self) -> Option<Fault> {
        *self.current.lock().expect("faults lock")
    }
}

#[cfg(test)]
mod commit_delay_tests {
    use super::commit_delay;
    use crate::limits::{JOURNAL_BUSY_BATCH_RECORDS, JOURNAL_COMMIT_DELAY};

    #[test]
    fn only_a_batch_after_a_busy_one_waits() {
        assert_eq!(commit_delay(0), None);
        assert_eq!(commit_delay(1), None);
        assert_eq!(commit_delay(JOURNAL_BUSY_BATCH_RECORDS - 1), None);
        assert_eq!(commit_delay(JOURNAL_BUSY_BATCH_RECORDS), Some(JOURNAL_COMMIT_DELAY));
        assert_eq!(commit_delay(10_000), Some(JOURNAL_COMMIT_DELAY));
    }
}
