//! sled's handles behind one slot the store can close and reopen while it
//! runs. sled 0.34 writes the snapshot its recovery starts from only as it
//! opens, and an open reads everything sled logged since that snapshot: on
//! a server that never restarts, a start after a crash would read the whole
//! history's log (gigabytes, many seconds). Reopening after a checkpoint
//! now and then bounds that read by what was logged since.
//!
//! Invariant: sled is closed only when no handle is out. Every tree handle
//! given out (`HeldTree`) holds a token, and a reopen proceeds only under
//! the slot's write lock (so no new handle is given out) once no token but
//! the slot's own is alive. It waits a bounded time for that and otherwise
//! leaves the reopen to the next checkpoint, so a reader that holds one
//! handle while it asks for another delays a reopen but cannot deadlock it.
//!
//! A reader that finds a reopen under way waits for it off the async
//! runtime's worker (`wait_off_the_runtime`): its worker's other tasks move
//! to another thread, so a reopen holds up the reads that need sled and
//! nothing else (requests answered from memory, the journal, replies).

use super::StoreError;
use crate::limits;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, RwLockReadGuard, TryLockError};
use std::time::{Duration, Instant};

// sled must be the copy in vendor/sled (its PATCHED.md): the published
// 0.34.7 can deadlock under a long load, every write waiting for ever. This
// fails the build against any other.
const _: () = assert!(sled::TRUNCATES_ON_ITS_OWN_THREAD);

/// How long a reopen waits for the handles out to come back.
const QUIET_WAIT_MAX: Duration = Duration::from_millis(100);
/// How often it looks meanwhile.
const QUIET_POLL: Duration = Duration::from_micros(200);
/// How long a reopen keeps retrying sled's open once sled is closed.
const OPEN_RETRY_FOR: Duration = Duration::from_secs(60);

/// The open sled database and the trees the store uses.
struct Handles {
    db: sled::Db,
    ledger: sled::Tree,
    merchants: sled::Tree,
    catalog: sled::Tree,
}

impl Handles {
    fn open(path: &Path) -> Result<Handles, StoreError> {
        let db = open_sled(path)?;
        Ok(Handles {
            ledger: db.open_tree("ledger")?,
            merchants: db.open_tree("merchants")?,
            catalog: db.open_tree("catalog")?,
            db,
        })
    }
}

/// The slot: sled's handles, and the tokens of those given out.
pub struct SledSlot {
    path: PathBuf,
    handles: RwLock<Option<Handles>>,
    /// One clone per handle out, plus this one.
    tokens: Arc<()>,
    /// For tests of what must not wait on a reopen: a reopen that finds
    /// one says so on the first channel once it holds the slot, and waits
    /// on the second before it opens sled again.
    #[cfg(test)]
    pause_reopen: std::sync::Mutex<Option<ReopenPause>>,
}

/// Where a paused reopen tells it holds the slot, and waits to go on.
#[cfg(test)]
pub type ReopenPause = (std::sync::mpsc::Sender<()>, std::sync::mpsc::Receiver<()>);

/// A tree handle, holding sled open while it lives. Held for one operation
/// (or one loop over an iterator), never kept: a kept handle only delays
/// reopens, which wait for a moment with none out.
pub struct HeldTree {
    tree: sled::Tree,
    _token: Arc<()>,
}

impl Deref for HeldTree {
    type Target = sled::Tree;

    fn deref(&self) -> &sled::Tree {
        &self.tree
    }
}

impl SledSlot {
    /// Opens (or creates) sled at `path`.
    pub fn open(path: &Path) -> Result<SledSlot, StoreError> {
        Ok(SledSlot {
            path: path.to_path_buf(),
            handles: RwLock::new(Some(Handles::open(path)?)),
            tokens: Arc::new(()),
            #[cfg(test)]
            pause_reopen: std::sync::Mutex::new(None),
        })
    }

    /// The slot, read-locked: at once outside a reopen, else once the
    /// reopen is done, waited for off the runtime's worker.
    fn read(&self) -> RwLockReadGuard<'_, Option<Handles>> {
        match self.handles.try_read() {
            Ok(handles) => handles,
            Err(TryLockError::WouldBlock) => wait_off_the_runtime(|| self.handles.read().expect("sled slot lock")),
            Err(TryLockError::Poisoned(_)) => panic!("sled slot lock poisoned"),
        }
    }

    fn held(&self, pick: impl Fn(&Handles) -> &sled::Tree) -> HeldTree {
        let handles = self.read();
        // Only a reopen empties the slot, and it fills it again before it
        // lets go of the write lock (or ends the process).
        let handles = handles.as_ref().expect("sled is open outside a reopen");
        HeldTree {
            tree: pick(handles).clone(),
            _token: self.tokens.clone(),
        }
    }

    /// The tree of every versioned record, run and book.
    pub fn ledger(&self) -> HeldTree {
        self.held(|handles| &handles.ledger)
    }

    /// The tree of merchants.
    pub fn merchants(&self) -> HeldTree {
        self.held(|handles| &handles.merchants)
    }

    /// The tree of the catalog.
    pub fn catalog(&self) -> HeldTree {
        self.held(|handles| &handles.catalog)
    }

    /// Flushes sled's buffers to its files (not an fsync).
    pub fn flush(&self) -> Result<(), StoreError> {
        let handles = self.read();
        handles.as_ref().expect("sled is open outside a reopen").db.flush()?;
        Ok(())
    }

    /// Holds the slot as a reopen does, for tests of what must not wait on
    /// one: every sled read waits until the guard is dropped.
    #[cfg(test)]
    pub fn hold_as_a_reopen(&self) -> impl Sized + '_ {
        self.handles.write().expect("sled slot lock")
    }

    /// Makes the next reopen pause while it holds the slot (see
    /// `pause_reopen`).
    #[cfg(test)]
    pub fn pause_next_reopen(&self, pause: ReopenPause) {
        *self.pause_reopen.lock().expect("pause lock") = Some(pause);
    }

    /// Closes sled and opens it again, which writes the snapshot the next
    /// recovery starts from. Call it with no write to sled under way (the
    /// checkpointer, between checkpoints). Readers wait meanwhile. Returns
    /// how long they waited, or `None` when a handle stayed out too long
    /// (the next call tries again).
    pub fn reopen(&self) -> Result<Option<Duration>, StoreError> {
        // New handles wait from here; those out are each one operation, done
        // in microseconds. One held by a thread now waiting for another (a
        // nested read) would never be returned while this waits: past
        // `QUIET_WAIT_MAX` the slot is let go and the reopen left for later.
        let mut slot = self.handles.write().expect("sled slot lock");
        let waiting = Instant::now();
        while Arc::strong_count(&self.tokens) > 1 {
            if waiting.elapsed() > QUIET_WAIT_MAX {
                return Ok(None);
            }
            std::thread::sleep(QUIET_POLL);
        }
        let quiet = waiting.elapsed();
        #[cfg(test)]
        if let Some((holding, go_on)) = self.pause_reopen.lock().expect("pause lock").take() {
            let _ = holding.send(());
            let _ = go_on.recv();
        }
        let handles = slot.take().expect("sled is open outside a reopen");
        if let Err(error) = handles.db.flush() {
            *slot = Some(handles);
            return Err(error.into());
        }
        let flushed = waiting.elapsed();
        drop(handles);
        let closed = waiting.elapsed();
        let deadline = Instant::now() + OPEN_RETRY_FOR;
        loop {
            match Handles::open(&self.path) {
                Ok(handles) => {
                    *slot = Some(handles);
                    let waited = waiting.elapsed();
                    tracing::debug!(
                        quiet_ms = quiet.as_millis() as u64,
                        flush_ms = (flushed - quiet).as_millis() as u64,
                        close_ms = (closed - flushed).as_millis() as u64,
                        open_ms = (waited - closed).as_millis() as u64,
                        "sled reopened; readers waited from quiet on"
                    );
                    return Ok(Some(waited));
                }
                Err(error) if Instant::now() < deadline => {
                    tracing::error!(%error, "reopening the state store failed; retrying");
                    std::thread::sleep(Duration::from_millis(500));
                }
                Err(error) => {
                    // Every reader would wait forever. What sled held is
                    // durable (the last checkpoint) and the journal holds
                    // the rest, so a restart loses nothing.
                    tracing::error!(%error, "the state store cannot be reopened; stopping the process");
                    std::process::abort();
                }
            }
        }
    }
}

/// Runs `wait`, which blocks, where it cannot hold up other tasks: on a
/// worker of a multi-threaded tokio runtime through `block_in_place` (the
/// worker's other tasks go to another thread first); anywhere else (a
/// plain thread, the blocking pool, a current-thread runtime) as it is.
fn wait_off_the_runtime<T>(wait: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current() {
        Ok(runtime) if runtime.runtime_flavor() == RuntimeFlavor::MultiThread => tokio::task::block_in_place(wait),
        _ => wait(),
    }
}

/// Opens sled, waiting briefly while a previous instance in this process
/// still holds the file lock: sled's I/O threads can outlive a dropped `Db`
/// by a few milliseconds.
pub fn open_sled(path: &Path) -> Result<sled::Db, StoreError> {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(5);
    let mut lock_refused = false;
    loop {
        // Background flushing is off: sled is made durable only at
        // checkpoints, where it is also fsynced.
        let config = sled::Config::new()
            .path(path)
            .flush_every_ms(None)
            .cache_capacity(limits::SLED_CACHE_BYTES);
        let attempt = Instant::now();
        match config.open() {
            Err(sled::Error::Io(error))
                if error.to_string().contains("could not acquire lock") && Instant::now() < deadline =>
            {
                lock_refused = true;
                std::thread::sleep(Duration::from_millis(10));
            }
            other => {
                if lock_refused {
                    tracing::info!(
                        waited_ms = attempt.duration_since(started).as_millis() as u64,
                        "waited for sled's lock, held by a closing instance in this process"
                    );
                }
                return Ok(other?);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::wait_off_the_runtime;
    use std::time::{Duration, Instant};

    /// A read that waits on a reopen holds up only itself: on a runtime of
    /// one worker, a task that needs no storage runs meanwhile.
    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_read_waiting_on_a_reopen_leaves_the_worker_to_other_tasks() {
        let (started, has_started) = tokio::sync::oneshot::channel();
        let waiting = tokio::spawn(async move {
            let _ = started.send(());
            wait_off_the_runtime(|| std::thread::sleep(Duration::from_secs(2)));
            Instant::now()
        });
        has_started.await.expect("the waiting task started");
        let other = tokio::spawn(async { Instant::now() });
        let other_done = tokio::time::timeout(Duration::from_secs(1), other)
            .await
            .expect("another task ran while a read waited")
            .expect("the other task");
        let waiting_done = waiting.await.expect("the waiting task");
        assert!(other_done < waiting_done);
    }

    /// The vendored sled keeps counts of its free and inactive log segments
    /// and, in a debug build, checks them against a scan of every segment
    /// each time a segment is deactivated (vendor/sled/PATCHED.md). Writes
    /// that fill, replace and free many segments, then reopens that read
    /// them back, take the counts through every transition. A wrong count
    /// panics one of sled's IO threads, and sled then waits for ever: the
    /// work runs on a thread of its own and must finish in time.
    #[test]
    #[cfg_attr(not(debug_assertions), ignore = "sled checks its counts in debug builds only")]
    fn sleds_segment_counts_stay_true_through_writes_frees_and_a_reopen() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().to_path_buf();
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let value = |round: u8| vec![round; 2048];
            for round in 0..3u8 {
                let db = super::open_sled(&path).expect("sled opens");
                // Each pass replaces the last: whole segments fall dead.
                for pass in 0..4u8 {
                    for key in 0..6_000u32 {
                        db.insert(key.to_be_bytes(), value(round * 4 + pass)).expect("insert");
                    }
                }
                for key in (0..6_000u32).step_by(3) {
                    db.remove(key.to_be_bytes()).expect("remove");
                }
                db.flush().expect("flush");
                assert_eq!(
                    db.get(1u32.to_be_bytes()).expect("get").as_deref(),
                    Some(&value(round * 4 + 3)[..])
                );
                assert_eq!(db.get(3u32.to_be_bytes()).expect("get"), None);
            }
            let _ = done.send(());
        });
        finished
            .recv_timeout(Duration::from_secs(120))
            .expect("sled's writes and reopens finish (a stall is a panicked IO thread: see the output above)");
    }
}
