//! The write-ahead journal: append-only segments of length-prefixed,
//! CRC-32C-checked records, made durable by `fdatasync` with group commit.
//!
//! Frame: `len: u32 LE | crc32c(body): u32 LE | body`, body = `seq: u64 LE | payload`.
//! One writer thread batches every queued record into one write and one sync;
//! an applier thread then runs each record's completion in journal order, so
//! nothing a completion does (sled writes, replies) happens before the sync.
//! Completions apply their record; after a whole batch the applier runs the
//! continuations they returned (the replies), so no reply overtakes a record
//! of its own batch.

use crate::limits;
use crc::{Crc, CRC_32_ISCSI};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use tokio::sync::mpsc as tokio_mpsc;

const CRC32C: Crc<u32> = Crc::<u32>::new(&CRC_32_ISCSI);
const FRAME_HEADER_BYTES: usize = 8;
/// A frame's body starts with its record's sequence number and the
/// sequence number of the first record of the write it went out in.
const SEQ_BYTES: usize = 16;
const SEGMENT_PREFIX: &str = "journal-";
const SEGMENT_SUFFIX: &str = ".log";

/// Runs after every completion of its batch: the reply to a caller.
pub type Continuation = Box<dyn FnOnce() + Send>;

/// Runs once its record is durable, on the applier thread, with the
/// record's sequence number (for barriers: the last sequence before it) and
/// its payload (empty for barriers), handed back so callers need not keep a
/// copy. What it returns runs after the whole batch is applied.
pub type Completion = Box<dyn FnOnce(u64, &[u8]) -> Option<Continuation> + Send>;

/// A durable record on its way to the applier: sequence, payload, completion.
type Applied = (u64, Vec<u8>, Completion);

/// Journal failures. A failed sync is not among them: it aborts the process
/// (after fsync fails, the page cache can no longer be trusted to hold what
/// was written: the PostgreSQL "fsyncgate" lesson).
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Reading or writing the journal files failed.
    #[error("journal io: {0}")]
    Io(#[from] io::Error),
    /// A record in the middle of the journal is damaged: not a torn tail.
    #[error(
        "journal corrupt in {path} at byte {offset}: {reason} (restore a backup, or, losing every record from there on, \
         `paygate repair --data-dir <data dir> --cut-journal-at {path}:{offset}`)"
    )]
    Corrupt {
        /// The damaged segment.
        path: PathBuf,
        /// Where the bad frame starts.
        offset: u64,
        /// What was wrong.
        reason: String,
    },
    /// The journal has been shut down.
    #[error("journal closed")]
    Closed,
    /// A record bigger than replay would accept: refused before it is
    /// written, so nothing is acknowledged that a restart would drop.
    #[error("journal record of {0} bytes exceeds the limit")]
    TooLarge(usize),
}

enum Command {
    Append { payload: Vec<u8>, done: Completion },
    Barrier { done: Completion },
    Close,
}

/// What `replay` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayOutcome {
    /// The sequence number the next appended record gets.
    pub next_seq: u64,
    /// Records passed to the visitor.
    pub records_replayed: u64,
    /// Bytes cut from a torn or corrupt tail.
    pub torn_bytes_cut: u64,
}

/// Counters the journal keeps for `/metrics` and benchmarks.
#[derive(Debug, Default)]
pub struct JournalStats {
    /// Syncs performed.
    pub syncs: AtomicU64,
    /// Records made durable.
    pub records: AtomicU64,
    /// Bytes made durable.
    pub bytes: AtomicU64,
}

/// A handle to the running journal; cheap to clone.
#[derive(Clone)]
pub struct Journal {
    inner: Arc<JournalInner>,
}

struct JournalInner {
    dir: PathBuf,
    queue: tokio_mpsc::Sender<Command>,
    durable_seq: Arc<AtomicU64>,
    stats: Arc<JournalStats>,
    threads: Mutex<Vec<JoinHandle<()>>>,
}

/// Replay takes a frame longer than `JOURNAL_RECORD_BYTES_MAX` for a torn
/// tail, so the writer must never write one.
fn check_record_size(payload: &[u8]) -> Result<(), JournalError> {
    if payload.len() > limits::JOURNAL_RECORD_BYTES_MAX {
        return Err(JournalError::TooLarge(payload.len()));
    }
    Ok(())
}

/// Runs a journal thread's body; a panic in it aborts the process. Without
/// these threads nothing becomes durable or visible, yet requests would go on
/// being taken and answered with errors while their records sat in the
/// journal: a crash and a replay at the next start is the honest outcome.
fn fail_stop(name: &str, body: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).is_err() {
        tracing::error!(
            thread = name,
            "journal thread panicked; aborting (the journal will replay)"
        );
        std::process::abort();
    }
}

fn segment_path(dir: &Path, first_seq: u64) -> PathBuf {
    dir.join(format!("{SEGMENT_PREFIX}{first_seq:020}{SEGMENT_SUFFIX}"))
}

/// The segments in `dir` as `(first_seq, path)`, oldest first.
pub fn list_segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut segments = Vec::new();
    for item in fs::read_dir(dir)? {
        let item = item?;
        let name = item.file_name();
        let name = name.to_string_lossy();
        if let Some(number) = name
            .strip_prefix(SEGMENT_PREFIX)
            .and_then(|n| n.strip_suffix(SEGMENT_SUFFIX))
        {
            if let Ok(first_seq) = number.parse::<u64>() {
                segments.push((first_seq, item.path()));
            }
        }
    }
    segments.sort();
    Ok(segments)
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Encodes one frame into `out`: record `seq`, sent in the write whose
/// first record is `write_first`. Writes go out one at a time, each synced
/// before the next, so a whole frame of a later write after damaged bytes
/// proves the damaged record's write was synced: corruption, not a torn tail.
pub fn encode_frame(seq: u64, write_first: u64, payload: &[u8], out: &mut Vec<u8>) {
    let body_len = SEQ_BYTES + payload.len();
    let mut digest = CRC32C.digest();
    digest.update(&seq.to_le_bytes());
    digest.update(&write_first.to_le_bytes());
    digest.update(payload);
    out.extend_from_slice(&(body_len as u32).to_le_bytes());
    out.extend_from_slice(&digest.finalize().to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&write_first.to_le_bytes());
    out.extend_from_slice(payload);
}

/// Reads every record with `seq >= from_seq` in order and passes it to
/// `visit`. A damaged frame at the tail of the last segment (a write the
/// crash interrupted) is cut off the file; damage anywhere else is an error,
/// because records after it were acknowledged and must not be dropped.
pub fn replay(
    dir: &Path,
    from_seq: u64,
    mut visit: impl FnMut(u64, &[u8]) -> Result<(), JournalError>,
) -> Result<ReplayOutcome, JournalError> {
    fs::create_dir_all(dir)?;
    let segments = list_segments(dir)?;
    let mut outcome = ReplayOutcome {
        next_seq: from_seq.max(1),
        records_replayed: 0,
        torn_bytes_cut: 0,
    };
    let mut expected_seq: Option<u64> = None;
    let count = segments.len();
    for (index, (first_seq, path)) in segments.iter().enumerate() {
        let is_last = index + 1 == count;
        // A whole segment below the checkpoint needs no reading, as long as
        // the next one starts at or below `from_seq`.
        if let Some((next_first, _)) = segments.get(index + 1) {
            if *next_first <= from_seq {
                continue;
            }
        }
        let mut bytes = Vec::new();
        File::open(path)?.read_to_end(&mut bytes)?;
        let mut offset = 0usize;
        let mut damage: Option<String> = None;
        // A whole frame with the wrong sequence number is not torn: records are missing.
        let mut out_of_sequence = false;
        while offset < bytes.len() {
            match decode_frame(&bytes[offset..]) {
                Ok((seq, _, payload, frame_len)) => {
                    let want = expected_seq.unwrap_or(*first_seq);
                    if seq != want {
                        damage = Some(format!("sequence {seq} where {want} was expected"));
                        out_of_sequence = true;
                        break;
                    }
                    expected_seq = Some(seq + 1);
                    if seq >= from_seq {
                        visit(seq, payload)?;
                        outcome.records_replayed += 1;
                    }
                    offset += frame_len;
                }
                Err(reason) => {
                    damage = Some(reason);
                    break;
                }
            }
        }
        if let Some(reason) = damage {
            let corrupt = |reason: String| JournalError::Corrupt {
                path: path.clone(),
                offset: offset as u64,
                reason,
            };
            if !is_last || out_of_sequence {
                return Err(corrupt(reason));
            }
            // Only the one write not yet synced when the process died can be
            // torn. Records a checkpoint covers were synced long before, and a
            // whole record past what that write can hold was synced after it
            // (and `fdatasync` had made this one durable too): either way the
            // damage is not a torn tail, and cutting would drop acknowledged records.
            let want = expected_seq.unwrap_or(*first_seq);
            if want < from_seq {
                return Err(corrupt(format!(
                    "{reason}, in record {want}, below the checkpoint at {from_seq}"
                )));
            }
            if let Some((at, seq)) = later_write_frame(&bytes, offset, want) {
                return Err(corrupt(format!(
                    "{reason}; a whole record {seq} follows at byte {at}, written after the damaged one was synced"
                )));
            }
            tracing::warn!(path = %path.display(), offset, reason, "cutting torn journal tail");
            let file = OpenOptions::new().write(true).open(path)?;
            file.set_len(offset as u64)?;
            file.sync_all()?;
            outcome.torn_bytes_cut = (bytes.len() - offset) as u64;
        }
        if expected_seq.is_none() {
            // An empty segment still fixes where numbering continues.
            expected_seq = Some(*first_seq);
        }
    }
    if let Some(next) = expected_seq {
        outcome.next_seq = outcome.next_seq.max(next);
    }
    Ok(outcome)
}

/// True when a record of `payload_len` bytes must wait for the next write:
/// it would take a batch already holding `buffered` bytes past the cap. A
/// record alone may exceed it.
fn opens_next_batch(buffered: usize, payload_len: usize) -> bool {
    buffered > 0 && buffered + FRAME_HEADER_BYTES + SEQ_BYTES + payload_len > limits::JOURNAL_BATCH_BYTES_MAX
}

/// A whole frame after the damage at `damage_at` (whose record would have
/// been `want`) that cannot be part of the same write: one that says it
/// went out in a later write, or one further than one write's bytes
/// (`JOURNAL_BATCH_BYTES_MAX`, or the damaged record's own length when its
/// header is whole and it was bigger) or records (`JOURNAL_BATCH_RECORDS_MAX`)
/// away. Returns its offset and sequence.
///
/// A record's payload may hold anything a merchant sent, frames included,
/// so the search starts after the damaged record's own length when its
/// header is whole (a crash tears a record's end, not its header: a record
/// cut short by the end of the file is never searched), and a frame counts
/// only if every record between could fit before it (16 bytes at least each).
fn later_write_frame(bytes: &[u8], damage_at: usize, want: u64) -> Option<(usize, u64)> {
    const SMALLEST_FRAME: usize = FRAME_HEADER_BYTES + SEQ_BYTES;
    let damaged_len = bytes
        .get(damage_at..damage_at + 4)
        .map(|b| FRAME_HEADER_BYTES + u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
        .filter(|len| (SMALLEST_FRAME..=SMALLEST_FRAME + limits::JOURNAL_RECORD_BYTES_MAX).contains(len));
    let search_from = damage_at + damaged_len.unwrap_or(1);
    let bytes_bound = damage_at + limits::JOURNAL_BATCH_BYTES_MAX.max(damaged_len.unwrap_or(0));
    let records_bound = want.saturating_add(limits::JOURNAL_BATCH_RECORDS_MAX as u64);
    let last_start = bytes.len().checked_sub(SMALLEST_FRAME)?;
    (search_from..=last_start).find_map(|at| {
        // The sequence number first: it rules out nearly every offset cheaply.
        let seq = u64::from_le_bytes(
            bytes[at + FRAME_HEADER_BYTES..at + FRAME_HEADER_BYTES + 8]
                .try_into()
                .ok()?,
        );
        let records_before = seq.checked_sub(want).filter(|gap| *gap > 0)?;
        if records_before > ((at - damage_at) / SMALLEST_FRAME) as u64 {
            return None;
        }
        match decode_frame(&bytes[at..]) {
            Ok((decoded, write_first, _, _)) if decoded == seq => {
                let later_write = write_first > want && write_first <= seq;
                (later_write || at >= bytes_bound || seq >= records_bound).then_some((at, seq))
            }
            _ => None,
        }
    })
}

/// Decodes the frame at the start of `bytes`: `(seq, its write's first
/// seq, payload, frame length)`.
fn decode_frame(bytes: &[u8]) -> Result<(u64, u64, &[u8], usize), String> {
    if bytes.len() < FRAME_HEADER_BYTES {
        return Err("truncated frame header".into());
    }
    let body_len = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if !(SEQ_BYTES..=limits::JOURNAL_RECORD_BYTES_MAX + SEQ_BYTES).contains(&body_len) {
        return Err(format!("implausible frame length {body_len}"));
    }
    let end = FRAME_HEADER_BYTES + body_len;
    if bytes.len() < end {
        return Err("truncated frame body".into());
    }
    let body = &bytes[FRAME_HEADER_BYTES..end];
    if CRC32C.checksum(body) != crc {
        return Err("checksum mismatch".into());
    }
    let seq = u64::from_le_bytes(body[0..8].try_into().expect("8 bytes"));
    let write_first = u64::from_le_bytes(body[8..16].try_into().expect("8 bytes"));
    Ok((seq, write_first, &body[SEQ_BYTES..], end))
}

impl Journal {
    /// Starts the writer and applier threads, appending after `next_seq - 1`
    /// (as returned by `replay`, which must have run first).
    pub fn start(dir: &Path, next_seq: u64) -> Result<Journal, JournalError> {
        Journal::start_with_segment_limit(dir, next_seq, limits::JOURNAL_SEGMENT_BYTES_MAX)
    }

    /// `start` with segments closed past `segment_bytes_max` (tests use small ones).
    pub fn start_with_segment_limit(
        dir: &Path,
        next_seq: u64,
        segment_bytes_max: u64,
    ) -> Result<Journal, JournalError> {
        fs::create_dir_all(dir)?;
        let segments = list_segments(dir)?;
        let path = match segments.last() {
            Some((_, path)) => path.clone(),
            None => segment_path(dir, next_seq),
        };
        let mut file = OpenOptions::new().create(true).append(true).open(&path)?;
        file.seek(SeekFrom::End(0))?;
        let segment_bytes = file.metadata()?.len();
        sync_dir(dir)?;

        let (queue, receiver) = tokio_mpsc::channel(limits::JOURNAL_QUEUE_RECORDS_MAX);
        let (applier_sender, applier_receiver) = mpsc::channel::<Vec<Applied>>();
        let durable_seq = Arc::new(AtomicU64::new(next_seq.saturating_sub(1)));
        let stats = Arc::new(JournalStats::default());
        let writer = Writer {
            dir: dir.to_path_buf(),
            segment_bytes_max,
            file,
            segment_bytes,
            next_seq,
            durable_seq: durable_seq.clone(),
            stats: stats.clone(),
            applier: applier_sender,
        };
        let writer_thread = std::thread::Builder::new()
            .name("journal-writer".into())
            .spawn(move || fail_stop("journal writer", move || writer.run(receiver)))?;
        let applier_thread = std::thread::Builder::new()
            .name("journal-applier".into())
            .spawn(move || {
                fail_stop("journal applier", move || {
                    let mut continuations = Vec::new();
                    while let Ok(batch) = applier_receiver.recv() {
                        let started = std::time::Instant::now();
                        let records = batch.len();
                        continuations.extend(batch.into_iter().filter_map(|(seq, payload, done)| done(seq, &payload)));
                        continuations.drain(..).for_each(|then| then());
                        let took = started.elapsed();
                        if took >= SLOW_STEP {
                            tracing::warn!(ms = took.as_millis() as u64, records, "journal apply slow");
                        }
                    }
                })
            })?;
        Ok(Journal {
            inner: Arc::new(JournalInner {
                dir: dir.to_path_buf(),
                queue,
                durable_seq,
                stats,
                threads: Mutex::new(vec![writer_thread, applier_thread]),
            }),
        })
    }

    /// Queues `payload`; `done` runs once it is durable. Waits for queue space.
    pub async fn append(&self, payload: Vec<u8>, done: Completion) -> Result<(), JournalError> {
        check_record_size(&payload)?;
        self.inner
            .queue
            .send(Command::Append { payload, done })
            .await
            .map_err(|_| JournalError::Closed)
    }

    /// `append` for code outside the async runtime (startup, tests).
    pub fn append_blocking(&self, payload: Vec<u8>, done: Completion) -> Result<(), JournalError> {
        check_record_size(&payload)?;
        self.inner
            .queue
            .blocking_send(Command::Append { payload, done })
            .map_err(|_| JournalError::Closed)
    }

    /// Runs `done` once everything queued before it is durable and every
    /// earlier completion has run.
    pub async fn barrier(&self, done: Completion) -> Result<(), JournalError> {
        self.inner
            .queue
            .send(Command::Barrier { done })
            .await
            .map_err(|_| JournalError::Closed)
    }

    /// Waits until everything queued so far is durable and applied.
    pub async fn sync_point(&self) -> Result<u64, JournalError> {
        let (tell, told) = tokio::sync::oneshot::channel();
        self.barrier(Box::new(move |seq, _| {
            Some(Box::new(move || {
                let _ = tell.send(seq);
            }))
        }))
        .await?;
        told.await.map_err(|_| JournalError::Closed)
    }

    /// The highest sequence number known durable.
    pub fn durable_seq(&self) -> u64 {
        self.inner.durable_seq.load(Ordering::Acquire)
    }

    /// Counters for metrics.
    pub fn stats(&self) -> &JournalStats {
        &self.inner.stats
    }

    /// Deletes closed segments all of whose records are below `seq`: call
    /// only once a checkpoint covering everything below `seq` is on disk.
    pub fn drop_segments_below(&self, seq: u64) -> Result<usize, JournalError> {
        let segments = list_segments(&self.inner.dir)?;
        let mut dropped = 0;
        for window in segments.windows(2) {
            let (_, path) = &window[0];
            let (next_first, _) = &window[1];
            if *next_first <= seq {
                fs::remove_file(path)?;
                dropped += 1;
            }
        }
        if dropped > 0 {
            sync_dir(&self.inner.dir)?;
        }
        Ok(dropped)
    }

    /// Finishes what is queued, stops the threads and waits for them.
    /// Safe to call more than once; appends after it fail with `Closed`.
    pub async fn shutdown(&self) {
        let _ = self.inner.queue.send(Command::Close).await;
        let threads = std::mem::take(&mut *self.inner.threads.lock().expect("journal threads lock"));
        let _ = tokio::task::spawn_blocking(move || threads.into_iter().for_each(|t| drop(t.join()))).await;
    }

    /// `shutdown` for code outside the async runtime.
    pub fn shutdown_blocking(&self) {
        let _ = self.inner.queue.blocking_send(Command::Close);
        let threads = std::mem::take(&mut *self.inner.threads.lock().expect("journal threads lock"));
        threads.into_iter().for_each(|t| drop(t.join()));
    }
}

/// A write, sync or apply this slow is logged: it holds up every reply.
const SLOW_STEP: std::time::Duration = std::time::Duration::from_millis(50);

struct Writer {
    dir: PathBuf,
    segment_bytes_max: u64,
    file: File,
    segment_bytes: u64,
    next_seq: u64,
    durable_seq: Arc<AtomicU64>,
    stats: Arc<JournalStats>,
    applier: mpsc::Sender<Vec<Applied>>,
}

impl Writer {
    fn run(mut self, mut receiver: tokio_mpsc::Receiver<Command>) {
        let mut buffer: Vec<u8> = Vec::with_capacity(1 << 20);
        // A record that would have taken its batch past the byte cap opens the next.
        let mut held_over: Option<Command> = None;
        while let Some(first) = held_over.take().or_else(|| receiver.blocking_recv()) {
            let mut completions: Vec<Applied> = Vec::new();
            let mut closing = false;
            let mut next = Some(first);
            let mut records = 0usize;
            let write_first = self.next_seq;
            while let Some(command) = next.take() {
                match command {
                    Command::Close => closing = true,
                    // A batch stays within the cap unless it is one record,
                    // which bounds what a crash can tear (see `replay`).
                    Command::Append { payload, done } if opens_next_batch(buffer.len(), payload.len()) => {
                        held_over = Some(Command::Append { payload, done });
                        break;
                    }
                    Command::Append { payload, done } => {
                        let seq = self.next_seq;
                        self.next_seq += 1;
                        encode_frame(seq, write_first, &payload, &mut buffer);
                        completions.push((seq, payload, done));
                        records += 1;
                    }
                    Command::Barrier { done } => completions.push((self.next_seq - 1, Vec::new(), done)),
                }
                if closing
                    || buffer.len() >= limits::JOURNAL_BATCH_BYTES_MAX
                    || records >= limits::JOURNAL_BATCH_RECORDS_MAX
                {
                    break;
                }
                next = receiver.try_recv().ok();
            }
            if !buffer.is_empty() {
                let started = std::time::Instant::now();
                let written = self.write_and_sync(&buffer);
                let took = started.elapsed();
                if took >= SLOW_STEP {
                    tracing::warn!(
                        ms = took.as_millis() as u64,
                        bytes = buffer.len(),
                        records,
                        "journal write and sync slow"
                    );
                }
                if let Err(error) = written {
                    tracing::error!(%error, "journal write or sync failed; aborting to protect acknowledged data");
                    std::process::abort();
                }
                self.stats.syncs.fetch_add(1, Ordering::Relaxed);
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

    fn write_and_sync(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.file.write_all(bytes)?;
        self.file.sync_data()?;
        self.segment_bytes += bytes.len() as u64;
        if self.segment_bytes >= self.segment_bytes_max {
            let path = segment_path(&self.dir, self.next_seq);
            self.file = OpenOptions::new().create(true).append(true).open(&path)?;
            sync_dir(&self.dir)?;
            self.segment_bytes = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay_all(dir: &Path) -> (Vec<(u64, Vec<u8>)>, ReplayOutcome) {
        let mut seen = Vec::new();
        let outcome = replay(dir, 0, |seq, payload| {
            seen.push((seq, payload.to_vec()));
            Ok(())
        })
        .unwrap();
        (seen, outcome)
    }

    fn write_records(dir: &Path, count: u64) {
        let outcome = replay(dir, 0, |_, _| Ok(())).unwrap();
        let journal = Journal::start(dir, outcome.next_seq).unwrap();
        let (tell, told) = mpsc::channel();
        for i in 0..count {
            let tell = tell.clone();
            journal
                .append_blocking(
                    format!("record-{i}").into_bytes(),
                    Box::new(move |seq, _| {
                        tell.send(seq).unwrap();
                        None
                    }),
                )
                .unwrap();
        }
        for _ in 0..count {
            told.recv().unwrap();
        }
        journal.shutdown_blocking();
    }

    #[test]
    fn records_come_back_in_order_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        write_records(dir.path(), 100);
        write_records(dir.path(), 5);
        let (seen, outcome) = replay_all(dir.path());
        assert_eq!(seen.len(), 105);
        assert_eq!(seen[0], (1, b"record-0".to_vec()));
        assert_eq!(seen[104], (105, b"record-4".to_vec()));
        assert_eq!(outcome.next_seq, 106);
    }

    /// A record above the old 16 MiB replay limit (a big settlement) is
    /// written and comes back; one above the limit is refused before it is
    /// written, so no acknowledged record is ever cut at replay.
    #[test]
    fn big_records_replay_and_oversized_ones_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::start(dir.path(), 1).unwrap();
        let big = vec![7u8; 20 * 1024 * 1024];
        let (tell, told) = mpsc::channel();
        journal
            .append_blocking(
                big.clone(),
                Box::new(move |seq, _| {
                    tell.send(seq).unwrap();
                    None
                }),
            )
            .unwrap();
        assert_eq!(told.recv().unwrap(), 1);
        let oversized = vec![0u8; limits::JOURNAL_RECORD_BYTES_MAX + 1];
        let refused = journal.append_blocking(oversized, Box::new(|_, _| None));
        assert!(matches!(refused, Err(JournalError::TooLarge(n)) if n == limits::JOURNAL_RECORD_BYTES_MAX + 1));
        journal.shutdown_blocking();
        let (seen, outcome) = replay_all(dir.path());
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].1, big);
        assert_eq!(outcome.torn_bytes_cut, 0);
    }

    #[test]
    fn a_truncated_last_record_is_cut_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        write_records(dir.path(), 10);
        let (_, path) = list_segments(dir.path()).unwrap().pop().unwrap();
        let len = fs::metadata(&path).unwrap().len();
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(len - 3)
            .unwrap();
        let (seen, outcome) = replay_all(dir.path());
        assert_eq!(seen.len(), 9);
        assert_eq!(outcome.next_seq, 10);
        assert!(outcome.torn_bytes_cut > 0);
        // Appending after the cut continues the numbering cleanly.
        write_records(dir.path(), 1);
        let (seen, _) = replay_all(dir.path());
        assert_eq!(seen.len(), 10);
        assert_eq!(seen[9], (10, b"record-0".to_vec()));
    }

    #[test]
    fn a_corrupted_last_record_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        write_records(dir.path(), 4);
        let (_, path) = list_segments(dir.path()).unwrap().pop().unwrap();
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xFF;
        fs::write(&path, &bytes).unwrap();
        let (seen, outcome) = replay_all(dir.path());
        assert_eq!(seen.len(), 3);
        assert_eq!(outcome.next_seq, 4);
    }

    /// A segment of `count` records of `payload_len` bytes written directly,
    /// as frames of one write; returns its path and each frame's offset.
    fn segment_of(dir: &Path, count: u64, payload_len: usize) -> (PathBuf, Vec<usize>) {
        let mut bytes = Vec::new();
        let mut offsets = Vec::new();
        for seq in 1..=count {
            offsets.push(bytes.len());
            encode_frame(seq, 1, &vec![(seq % 251) as u8; payload_len], &mut bytes);
        }
        let path = segment_path(dir, 1);
        fs::write(&path, &bytes).unwrap();
        (path, offsets)
    }

    fn flip_byte(path: &Path, at: usize) {
        let mut bytes = fs::read(path).unwrap();
        bytes[at] ^= 0xFF;
        fs::write(path, &bytes).unwrap();
    }

    fn corrupt_at(result: Result<ReplayOutcome, JournalError>, frame_offset: usize) -> String {
        match result {
            Err(JournalError::Corrupt { offset, reason, .. }) => {
                assert_eq!(offset, frame_offset as u64, "{reason}");
                reason
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
    }

    #[test]
    fn a_write_stays_within_the_batch_cap_unless_it_is_one_record() {
        let cap = limits::JOURNAL_BATCH_BYTES_MAX;
        let frame = FRAME_HEADER_BYTES + SEQ_BYTES;
        assert!(!opens_next_batch(0, 3 * cap), "a record alone goes, however big");
        assert!(!opens_next_batch(100, cap - 100 - frame), "exactly at the cap");
        assert!(opens_next_batch(100, cap - 100 - frame + 1));
        assert!(opens_next_batch(cap / 2, cap));
    }

    #[test]
    fn damage_followed_by_more_records_than_one_write_holds_is_corruption_not_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let records = limits::JOURNAL_BATCH_RECORDS_MAX as u64 + 100;
        let (path, offsets) = segment_of(dir.path(), records, 8);
        flip_byte(&path, offsets[50] + FRAME_HEADER_BYTES + SEQ_BYTES);
        let before = fs::metadata(&path).unwrap().len();
        let reason = corrupt_at(replay(dir.path(), 0, |_, _| Ok(())), offsets[50]);
        assert!(reason.contains("checksum mismatch"), "{reason}");
        assert_eq!(fs::metadata(&path).unwrap().len(), before, "nothing is cut");
    }

    #[test]
    fn damage_followed_by_records_further_than_one_write_reaches_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        // 2 KiB records: 8 MiB of them is far fewer than the record bound.
        let count = (limits::JOURNAL_BATCH_BYTES_MAX / 2048) as u64 + 200;
        let (path, offsets) = segment_of(dir.path(), count, 2048);
        flip_byte(&path, offsets[10] + 100);
        corrupt_at(replay(dir.path(), 0, |_, _| Ok(())), offsets[10]);
    }

    #[test]
    fn damage_in_records_a_checkpoint_covers_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let (path, offsets) = segment_of(dir.path(), 10, 8);
        flip_byte(&path, offsets[5] + FRAME_HEADER_BYTES + SEQ_BYTES);
        // Record 6 is damaged; the checkpoint covers up to 7.
        corrupt_at(replay(dir.path(), 8, |_, _| Ok(())), offsets[5]);
    }

    #[test]
    fn a_whole_record_out_of_sequence_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = Vec::new();
        for seq in [1, 2, 3, 7, 8] {
            encode_frame(seq, seq, b"payload", &mut bytes);
        }
        fs::write(segment_path(dir.path(), 1), &bytes).unwrap();
        let reason = match replay(dir.path(), 0, |_, _| Ok(())) {
            Err(JournalError::Corrupt { reason, .. }) => reason,
            other => panic!("expected Corrupt, got {other:?}"),
        };
        assert!(reason.contains("sequence 7 where 4 was expected"), "{reason}");
    }

    /// A record whose payload holds what look like whole frames, as a
    /// merchant's text may: `count` fake frames with sequences from `first_fake_seq`.
    fn payload_of_fake_frames(first_fake_seq: u64, count: u64) -> Vec<u8> {
        let mut payload = Vec::new();
        for seq in first_fake_seq..first_fake_seq + count {
            encode_frame(seq, seq, b"fake", &mut payload);
        }
        payload
    }

    #[test]
    fn frames_inside_a_record_cut_short_by_a_crash_are_not_taken_for_later_writes() {
        let dir = tempfile::tempdir().unwrap();
        let mut bytes = Vec::new();
        for seq in 1..=3 {
            encode_frame(seq, seq, b"whole", &mut bytes);
        }
        let whole = bytes.len();
        // A far-off sequence, and one as far on as whole records between could reach.
        let mut payload = payload_of_fake_frames(0x7f7f_7f7f, 10);
        payload.extend(vec![b' '; 600 * 1024]);
        payload.extend(payload_of_fake_frames(4 + limits::JOURNAL_BATCH_RECORDS_MAX as u64, 10));
        encode_frame(4, 4, &payload, &mut bytes);
        // The crash cut the record short, just before its end.
        bytes.truncate(bytes.len() - 3);
        fs::write(segment_path(dir.path(), 1), &bytes).unwrap();
        let (seen, outcome) = replay_all(dir.path());
        assert_eq!(seen.len(), 3);
        assert_eq!(outcome.next_seq, 4);
        assert_eq!(fs::metadata(segment_path(dir.path(), 1)).unwrap().len(), whole as u64);
    }

    #[test]
    fn a_frame_whose_sequence_no_records_between_could_reach_is_not_a_later_write() {
        let dir = tempfile::tempdir().unwrap();
        let (path, offsets) = segment_of(dir.path(), 10, 8);
        // A damaged header (no usable length), then a fake frame far ahead in sequence.
        let mut bytes = fs::read(&path).unwrap();
        bytes.truncate(offsets[5]);
        bytes.extend_from_slice(&[0xFF; 8]);
        bytes.extend(payload_of_fake_frames(6 + limits::JOURNAL_BATCH_RECORDS_MAX as u64, 1));
        fs::write(&path, &bytes).unwrap();
        let (seen, _) = replay_all(dir.path());
        assert_eq!(seen.len(), 5, "cut as a torn tail");
    }

    /// Records 1-5 went out in one write and 6-10 in the next.
    fn two_writes(dir: &Path) -> (PathBuf, Vec<usize>) {
        let mut bytes = Vec::new();
        let mut offsets = Vec::new();
        for seq in 1..=10u64 {
            offsets.push(bytes.len());
            encode_frame(seq, if seq <= 5 { 1 } else { 6 }, b"a record", &mut bytes);
        }
        let path = segment_path(dir, 1);
        fs::write(&path, &bytes).unwrap();
        (path, offsets)
    }

    #[test]
    fn damage_followed_by_a_record_of_a_later_write_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let (path, offsets) = two_writes(dir.path());
        flip_byte(&path, offsets[2] + FRAME_HEADER_BYTES + SEQ_BYTES);
        let before = fs::metadata(&path).unwrap().len();
        let reason = corrupt_at(replay(dir.path(), 0, |_, _| Ok(())), offsets[2]);
        assert!(reason.contains("a whole record 6 follows"), "{reason}");
        assert_eq!(fs::metadata(&path).unwrap().len(), before, "nothing is cut");
        // The same damage in the last write is its torn tail.
        let dir = tempfile::tempdir().unwrap();
        let (path, offsets) = two_writes(dir.path());
        flip_byte(&path, offsets[7] + FRAME_HEADER_BYTES + SEQ_BYTES);
        let (seen, _) = replay_all(dir.path());
        assert_eq!(seen.len(), 7);
        assert_eq!(fs::metadata(&path).unwrap().len(), offsets[7] as u64);
    }

    #[test]
    fn damage_inside_the_last_write_is_a_torn_tail_even_with_whole_records_after_it() {
        // Pages of one unsynced write may reach the disk out of order.
        let dir = tempfile::tempdir().unwrap();
        let (path, offsets) = segment_of(dir.path(), 40, 64);
        flip_byte(&path, offsets[30] + FRAME_HEADER_BYTES + SEQ_BYTES);
        let (seen, outcome) = replay_all(dir.path());
        assert_eq!(seen.len(), 30);
        assert_eq!(outcome.next_seq, 31);
        assert_eq!(fs::metadata(&path).unwrap().len(), offsets[30] as u64);
    }

    #[test]
    fn garbage_zeroes_after_the_last_record_are_cut() {
        let dir = tempfile::tempdir().unwrap();
        write_records(dir.path(), 2);
        let (_, path) = list_segments(dir.path()).unwrap().pop().unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(&[0u8; 64]).unwrap();
        let (seen, outcome) = replay_all(dir.path());
        assert_eq!(seen.len(), 2);
        assert_eq!(outcome.torn_bytes_cut, 64);
    }

    #[test]
    fn replay_skips_records_below_the_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        write_records(dir.path(), 10);
        let mut seen = Vec::new();
        let outcome = replay(dir.path(), 8, |seq, _| {
            seen.push(seq);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, vec![8, 9, 10]);
        assert_eq!(outcome.next_seq, 11);
    }

    #[test]
    fn segments_rotate_and_covered_ones_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let journal = Journal::start_with_segment_limit(dir.path(), 1, 64).unwrap();
        let (tell, told) = mpsc::channel();
        for i in 0..40u64 {
            let tell = tell.clone();
            let done: Completion = Box::new(move |seq, payload| {
                tell.send((seq, payload.to_vec())).unwrap();
                None
            });
            journal
                .append_blocking(format!("record-{i:02}-padding").into_bytes(), done)
                .unwrap();
            told.recv().unwrap();
        }
        let segments = list_segments(dir.path()).unwrap();
        assert!(segments.len() > 5, "{segments:?}");
        // Everything below 21 is covered: only segments ending below it go.
        journal.drop_segments_below(21).unwrap();
        let left = list_segments(dir.path()).unwrap();
        assert!(left.len() < segments.len());
        assert!(left[0].0 <= 21, "a segment holding record 21 was dropped: {left:?}");
        journal.shutdown_blocking();
        let mut seen = Vec::new();
        let outcome = replay(dir.path(), 21, |seq, _| {
            seen.push(seq);
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, (21..=40).collect::<Vec<_>>());
        assert_eq!(outcome.next_seq, 41);
    }

    #[test]
    fn frames_reject_bad_checksums() {
        let mut frame = Vec::new();
        encode_frame(5, 5, b"hello", &mut frame);
        assert_eq!(decode_frame(&frame).unwrap().0, 5);
        frame[9] ^= 1;
        assert!(decode_frame(&frame).is_err());
    }
}
