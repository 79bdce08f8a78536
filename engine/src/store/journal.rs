//! The write-ahead journal: append-only segments of length-prefixed,
//! CRC-32C-checked records, made durable by `fdatasync` with group commit.
//!
//! Frame: `len: u32 LE | crc32c(body): u32 LE | body`, body = `seq: u64 LE | payload`.
//! One writer thread (`writer.rs`) batches every queued record into one
//! write and one sync; an applier thread then runs each record's completion
//! in journal order, so nothing a completion does (sled writes, replies)
//! happens before the sync. Completions apply their record; after a whole
//! batch the applier runs the continuations they returned (the replies), so
//! no reply overtakes a record of its own batch.
//!
//! A disk that refuses a write (full, failing) never stops the process and
//! never gets a record acknowledged early: the writer holds the batch, and
//! everything queued behind it, and writes it again with backoff until the
//! disk takes it. Meanwhile `is_writable` is false, so the engine refuses
//! new writes up front; it turns true again by itself with the first batch
//! the disk takes.

use crate::limits;
use crc::{Crc, Table, CRC_32_ISCSI};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use tokio::sync::mpsc as tokio_mpsc;
use writer::{Segments, Sink, Writer};

mod replay;
mod shard;
#[cfg(test)]
mod tests;
mod writer;

#[cfg(test)]
use replay::decode_frame;
pub use replay::replay;
pub use shard::replay_shard;

/// CRC-32C of every frame, sliced by 16: the writer checksums every byte it
/// writes, and the byte-at-a-time table took several times as long. The
/// algorithm, and so the format, is the same whichever table computes it.
const CRC32C: Crc<u32, Table<16>> = Crc::<u32, Table<16>>::new(&CRC_32_ISCSI);
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

/// Why an attempt to make a batch durable failed, in either sink (the
/// segment files, a shard's journal of record).
enum SinkError {
    /// The disk or the database refused it for now: try again.
    Retry(String),
    /// The shard is owned under a newer epoch: this journal may never write
    /// again.
    Fenced,
}

/// Journal failures. A failed write or sync is not among them: the writer
/// holds its records and writes them again until the disk takes them (see
/// `writer.rs`), and `Journal::is_writable` says so meanwhile.
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
    /// A shard's journal of record in the cluster's database could not be read.
    #[error("journal of record: {0}")]
    Shared(String),
    /// A record bigger than replay would accept: refused before it is
    /// written, so nothing is acknowledged that a restart would drop.
    #[error("journal record of {0} bytes exceeds the limit")]
    TooLarge(usize),
}

enum Command {
    /// `waited`: someone waits on this record promptly (see
    /// `Journal::queue_append` for one nobody does).
    Append {
        payload: Vec<u8>,
        done: Completion,
        waited: bool,
    },
    Barrier {
        done: Completion,
    },
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
    /// Attempts to write and sync a batch that the disk refused.
    pub failed_writes: AtomicU64,
    /// Microseconds the successful writes took, each from the write to its
    /// `fdatasync` returning (or the database's commit): with `syncs`, the
    /// mean commit latency.
    pub sync_micros: AtomicU64,
}

/// What the writer and the handles share about the journal's state.
struct Health {
    /// False from a write the disk refused until one it takes.
    writable: AtomicBool,
    /// Set by `shutdown`: a writer waiting for the disk gives up, with its
    /// records unacknowledged, instead of holding the process open.
    closing: AtomicBool,
    /// Set for good when a shard's journal finds its shard owned under a
    /// newer epoch: it writes nothing more.
    fenced: AtomicBool,
}

/// A handle to the running journal; cheap to clone.
#[derive(Clone)]
pub struct Journal {
    inner: Arc<JournalInner>,
}

struct JournalInner {
    /// The segments' directory; none for a shard's journal in the cluster's
    /// database.
    dir: Option<PathBuf>,
    queue: tokio_mpsc::Sender<Command>,
    durable_seq: Arc<AtomicU64>,
    stats: Arc<JournalStats>,
    health: Arc<Health>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    /// Tests: failures injected into the writer's attempts.
    #[cfg(test)]
    faults: Arc<writer::Faults>,
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

/// True when a record of `payload_len` bytes must wait for the next write:
/// it would take a batch already holding `buffered` bytes past the cap. A
/// record alone may exceed it.
fn opens_next_batch(buffered: usize, payload_len: usize) -> bool {
    buffered > 0 && buffered + FRAME_HEADER_BYTES + SEQ_BYTES + payload_len > limits::JOURNAL_BATCH_BYTES_MAX
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

        #[cfg(test)]
        let faults = Arc::new(writer::Faults::default());
        let sink = Sink::Segments(Segments {
            dir: dir.to_path_buf(),
            segment_bytes_max,
            file,
            path,
            segment_bytes,
            damaged: false,
            #[cfg(test)]
            faults: faults.clone(),
        });
        Journal::launch(
            sink,
            Some(dir.to_path_buf()),
            next_seq,
            #[cfg(test)]
            faults,
        )
    }

    /// Starts the writer and applier threads over `sink`.
    fn launch(
        sink: Sink,
        dir: Option<PathBuf>,
        next_seq: u64,
        #[cfg(test)] faults: Arc<writer::Faults>,
    ) -> Result<Journal, JournalError> {
        let (queue, receiver) = tokio_mpsc::channel(limits::JOURNAL_QUEUE_RECORDS_MAX);
        let (applier_sender, applier_receiver) = mpsc::channel::<Vec<Applied>>();
        let durable_seq = Arc::new(AtomicU64::new(next_seq.saturating_sub(1)));
        let stats = Arc::new(JournalStats::default());
        let health = Arc::new(Health {
            writable: AtomicBool::new(true),
            closing: AtomicBool::new(false),
            fenced: AtomicBool::new(false),
        });
        let writer = Writer {
            sink,
            next_seq,
            durable_seq: durable_seq.clone(),
            stats: stats.clone(),
            health: health.clone(),
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
                dir,
                queue,
                durable_seq,
                stats,
                health,
                threads: Mutex::new(vec![writer_thread, applier_thread]),
                #[cfg(test)]
                faults,
            }),
        })
    }

    /// Queues `payload`; `done` runs once it is durable. Waits for queue space.
    pub async fn append(&self, payload: Vec<u8>, done: Completion) -> Result<(), JournalError> {
        self.queue_append(payload, done, true).await
    }

    /// `append`, or, unless `waited`, for a record nobody waits on promptly
    /// (a webhook attempt the schedule made, a disbursement's hand-over or
    /// its vendor's outcome with no caller waiting): a batch of only such
    /// records waits up to `limits::JOURNAL_BACKGROUND_WAIT` for another
    /// record to share its `fdatasync` with, and goes at once when a
    /// waited-on one arrives.
    pub async fn queue_append(&self, payload: Vec<u8>, done: Completion, waited: bool) -> Result<(), JournalError> {
        check_record_size(&payload)?;
        self.inner
            .queue
            .send(Command::Append { payload, done, waited })
            .await
            .map_err(|_| JournalError::Closed)
    }

    /// `append` for code outside the async runtime (startup, tests).
    pub fn append_blocking(&self, payload: Vec<u8>, done: Completion) -> Result<(), JournalError> {
        check_record_size(&payload)?;
        self.inner
            .queue
            .blocking_send(Command::Append {
                payload,
                done,
                waited: true,
            })
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

    /// False while the disk refuses the journal's writes (full or
    /// failing): records queued meanwhile wait, unacknowledged, and the
    /// engine takes no new writes. True again with the first write the
    /// disk takes.
    pub fn is_writable(&self) -> bool {
        self.inner.health.writable.load(Ordering::Acquire)
    }

    /// True for good once a shard's journal found its shard owned under a
    /// newer epoch (see `shard.rs`).
    pub fn is_fenced(&self) -> bool {
        self.inner.health.fenced.load(Ordering::Acquire)
    }

    /// Tests elsewhere in the engine: every write the journal attempts
    /// fails as on a full disk (half the batch written, then ENOSPC) until
    /// this is called with false.
    #[cfg(test)]
    pub(crate) fn refuse_writes(&self, refuse: bool) {
        self.inner.faults.set(refuse.then_some(writer::Fault::TornWrite));
    }

    /// Counters for metrics.
    pub fn stats(&self) -> &JournalStats {
        &self.inner.stats
    }

    /// Deletes closed segments all of whose records are below `seq`: call
    /// only once a checkpoint covering everything below `seq` is on disk.
    pub fn drop_segments_below(&self, seq: u64) -> Result<usize, JournalError> {
        let Some(dir) = &self.inner.dir else {
            return Ok(0);
        };
        let segments = list_segments(dir)?;
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
            sync_dir(dir)?;
        }
        Ok(dropped)
    }

    /// Finishes what is queued, stops the threads and waits for them.
    /// Safe to call more than once; appends after it fail with `Closed`.
    /// While the disk refuses writes, what is still queued is given up
    /// unacknowledged rather than waited for.
    pub async fn shutdown(&self) {
        self.inner.health.closing.store(true, Ordering::Release);
        let _ = self.inner.queue.send(Command::Close).await;
        let threads = std::mem::take(&mut *self.inner.threads.lock().expect("journal threads lock"));
        let _ = tokio::task::spawn_blocking(move || threads.into_iter().for_each(|t| drop(t.join()))).await;
    }

    /// `shutdown` for code outside the async runtime.
    pub fn shutdown_blocking(&self) {
        self.inner.health.closing.store(true, Ordering::Release);
        let _ = self.inner.queue.blocking_send(Command::Close);
        let threads = std::mem::take(&mut *self.inner.threads.lock().expect("journal threads lock"));
        threads.into_iter().for_each(|t| drop(t.join()));
    }
}

/// A write, sync or apply this slow is logged: it holds up every reply.
const SLOW_STEP: std::time::Duration = std::time::Duration::from_millis(50);
