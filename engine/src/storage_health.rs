//! What the engine knows of its storage's health beyond the journal's own
//! flag: whether a checkpoint failed (then writes are refused until a
//! restart), whether checkpoints wait for free space, and when sled was
//! last reopened (`checkpoints`).

use crate::limits;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What the engine knows of its storage beyond the journal's own flag.
#[derive(Default)]
pub(crate) struct StorageHealth {
    /// Set for good by a failed checkpoint (see the module docs).
    pub(crate) state_store_failed: AtomicBool,
    /// The journal's byte count when the last good checkpoint began: the
    /// next one covers about what was written since.
    pub(crate) checkpointed_journal_bytes: AtomicU64,
    /// Checkpoints wait for free space (logged once per wait).
    pub(crate) checkpoint_postponed: AtomicBool,
    /// The journal's byte count when sled was last opened: what sled logged
    /// since grows with what the journal took since (`Store::reopen_sled`).
    sled_opened_at_journal_bytes: AtomicU64,
    /// No reopen before this: the last one's wait times
    /// `limits::SLED_REOPEN_SPACING` after it ended.
    pub(crate) sled_reopen_not_before: std::sync::Mutex<Option<std::time::Instant>>,
    /// Reopens of sled, and the milliseconds readers waited on them.
    pub(crate) sled_reopens: AtomicU64,
    pub(crate) sled_reopen_wait_ms: AtomicU64,
}

impl StorageHealth {
    /// Whether sled is to be reopened after this checkpoint: the journal
    /// took `budget` bytes since the last open, and the last reopen's
    /// spacing is over. Reads wait while sled reopens, longer as it holds
    /// more, so spacing reopens by their own wait bounds that share of the
    /// time; but the log a reopen reads grows with the spacing, and with it
    /// the next wait, so past `SLED_REOPEN_BUDGETS_MAX` budgets it is due
    /// anyway, which bounds both.
    pub(crate) fn sled_reopen_due(&self, journal_bytes: u64, budget: u64) -> bool {
        let spaced = self
            .sled_reopen_not_before
            .lock()
            .expect("reopen spacing lock")
            .is_none_or(|not_before| std::time::Instant::now() >= not_before);
        let since_open = journal_bytes.saturating_sub(self.sled_opened_at_journal_bytes.load(Ordering::Acquire));
        since_open >= budget && (spaced || since_open >= budget.saturating_mul(limits::SLED_REOPEN_BUDGETS_MAX))
    }

    /// Notes a reopen at `journal_bytes` that kept reads waiting `waited_ms`.
    pub(crate) fn note_sled_reopen(&self, journal_bytes: u64, waited_ms: u64) {
        self.sled_opened_at_journal_bytes
            .store(journal_bytes, Ordering::Release);
        self.sled_reopens.fetch_add(1, Ordering::Relaxed);
        self.sled_reopen_wait_ms.fetch_add(waited_ms, Ordering::Relaxed);
        let spacing = std::time::Duration::from_millis(waited_ms) * limits::SLED_REOPEN_SPACING;
        *self.sled_reopen_not_before.lock().expect("reopen spacing lock") = Some(std::time::Instant::now() + spacing);
    }

    /// Whether a checkpoint failed (writes are refused until a restart).
    pub(crate) fn state_store_failed(&self) -> bool {
        self.state_store_failed.load(Ordering::Acquire)
    }

    /// Whether checkpoints wait for free space now.
    pub(crate) fn checkpoint_postponed(&self) -> bool {
        self.checkpoint_postponed.load(Ordering::Acquire)
    }
}
