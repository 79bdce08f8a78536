//! Every bound and default of the engine, each with its reason.

use std::time::Duration;

/// A journal segment is closed and a new one started past this size, so
/// old segments can be dropped once a checkpoint covers them.
pub const JOURNAL_SEGMENT_BYTES_MAX: u64 = 64 * 1024 * 1024;

/// One group commit writes at most this many bytes before syncing, so a
/// burst cannot hold every waiter behind one giant write.
pub const JOURNAL_BATCH_BYTES_MAX: usize = 8 * 1024 * 1024;

/// One group commit takes at most this many records.
pub const JOURNAL_BATCH_RECORDS_MAX: usize = 32 * 1024;

/// A group commit that follows a batch of at least
/// `JOURNAL_BUSY_BATCH_RECORDS` records waits this long for more before it
/// writes: on a busy server one `fdatasync` then carries several times the
/// records, and each sync costs kernel CPU that request handling needs. A
/// quiet server's batches are smaller, so a lone request is never delayed.
/// On the order of one `fdatasync` itself: a busy request waits at most
/// about one sync longer, and the syncs it no longer triggers would have
/// queued it behind each other (a busy server's tail is those queues, not
/// this wait). PostgreSQL's `commit_delay` with `commit_siblings` is the
/// same trade.
pub const JOURNAL_COMMIT_DELAY: Duration = Duration::from_micros(1500);

/// See `JOURNAL_COMMIT_DELAY`: a batch this large means others are waiting
/// to commit too.
pub const JOURNAL_BUSY_BATCH_RECORDS: usize = 8;

/// A batch of only records nobody waits on promptly (webhook attempts the
/// schedule made, disbursement moves no caller waits on) waits at most this
/// long for another record to share its `fdatasync`: on a paced server a
/// disbursement's hand-over, outcome and attempts then ride with other
/// requests' syncs instead of each paying for one. A waited-on
/// record ends the wait at once, and a batch of
/// `JOURNAL_BUSY_BATCH_RECORDS` or more does not wait.
pub const JOURNAL_BACKGROUND_WAIT: Duration = Duration::from_millis(5);

/// A single journal record may not exceed this: a length prefix above it is
/// treated as a torn or corrupt tail rather than trusted for an allocation,
/// and the journal refuses to write a bigger record. A settlement record
/// carries every order it settles, so this is set far above what a day of a
/// busy merchant's orders takes.
pub const JOURNAL_RECORD_BYTES_MAX: usize = 256 * 1024 * 1024;

/// Records queued for the journal writer before appenders wait: bounds
/// memory under overload and pushes back on callers.
pub const JOURNAL_QUEUE_RECORDS_MAX: usize = 256 * 1024;

/// A journal write the disk refused (full, failing) is tried again after
/// this, then twice as long each time up to `JOURNAL_RETRY_DELAY_MAX`:
/// space coming back is noticed within a few seconds, and a dead disk is
/// not hammered.
pub const JOURNAL_RETRY_DELAY_FIRST: Duration = Duration::from_millis(100);

/// The longest pause between two attempts of a refused journal write.
pub const JOURNAL_RETRY_DELAY_MAX: Duration = Duration::from_secs(5);

/// `Retry-After` of a write refused while storage cannot take it: the
/// journal tries the disk again at least this often.
pub const STORAGE_RETRY_AFTER_SECONDS: u64 = 5;

/// A checkpoint starts only with at least this much free space on the data
/// dir's filesystem, and at least `CHECKPOINT_FREE_BYTES_PER_JOURNAL_BYTE`
/// times the journal bytes it would cover: sled 0.34 keeps the error of a
/// failed log write for good, so a checkpoint that fills the disk would
/// leave the state store unwritable until a restart. Postponed, it only
/// lets the journal (which recovers by itself) grow.
pub const CHECKPOINT_FREE_BYTES_MIN: u64 = 64 * 1024 * 1024;

/// See `CHECKPOINT_FREE_BYTES_MIN`: sled writes whole pages and a log, so a
/// checkpoint takes a few times the bytes of the records it covers.
pub const CHECKPOINT_FREE_BYTES_PER_JOURNAL_BYTE: u64 = 4;

/// How often the checkpointer writes the overlay to sled, fsyncs it and
/// drops covered journal segments.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

/// A checkpoint also starts early once this many entries wait in the
/// overlay: bounds its memory and the replay after a crash.
pub const CHECKPOINT_PENDING_ENTRIES_MAX: usize = 500_000;

/// How often the checkpointer looks at the overlay's size.
pub const CHECKPOINT_POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Every call into an actor gives up after this long (the operation may still
/// complete; callers rely on idempotency keys to retry safely).
pub const ACTOR_CALL_TIMEOUT: Duration = Duration::from_secs(15);

/// An actor with no message for this long stops; it is rebuilt from storage
/// on its next message, so memory follows live work rather than history.
pub const ACTOR_IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Idempotency key hashes a merchant actor keeps in its Bloom filters, half
/// for each kind it holds two of (about 3 bytes each): a key the filter
/// never saw is new without a storage read. Past it the filter is dropped
/// and every key is looked up in storage, which keeps a hot merchant's
/// memory bounded.
pub const IDEMPOTENCY_KEYS_IN_MEMORY_MAX: usize = 1_000_000;

/// Longest idempotency key accepted.
pub const IDEMPOTENCY_KEY_CHARS_MAX: usize = 255;

/// Longest merchant or organization name accepted.
pub const NAME_CHARS_MAX: usize = 255;

/// Longest free-text reason or memo stored on a ledger entry.
pub const MEMO_CHARS_MAX: usize = 1024;

/// Longest URL accepted (notify URLs).
pub const URL_CHARS_MAX: usize = 2048;

/// Smallest RSA modulus accepted for Legacy disbursement signatures.
pub const RSA_KEY_BITS_MIN: usize = 2048;

/// Retries of an actor call whose actor stopped (idle) between lookup and send.
pub const ACTOR_CALL_RETRIES_MAX: usize = 3;

/// A new merchant's fees and limits, unless the operator sets them
/// (`POST /admin/v1/merchants`, `PATCH /admin/v1/merchants/{id}`).
pub mod defaults {
    /// 0.7% QRIS MDR.
    pub const QRIS_MDR_BPS: i64 = 70;
    /// IDR 4,000 flat bank-transfer MDR.
    pub const BANK_TRANSFER_MDR_MINOR: i64 = 400_000;
    /// No platform fee per paid order by default.
    pub const PLATFORM_FEE_MINOR: i64 = 0;
    /// No aggregator fee per paid order by default.
    pub const AGGREGATOR_FEE_MINOR: i64 = 0;
    /// IDR 2,500 per bank disbursement.
    pub const DISBURSEMENT_FEE_BANK_MINOR: i64 = 250_000;
    /// Free e-wallet disbursements.
    pub const DISBURSEMENT_FEE_EWALLET_MINOR: i64 = 0;
    /// IDR 50,000,000 per disbursement.
    pub const PER_TRANSACTION_MINOR: i64 = 5_000_000_000;
    /// IDR 500,000,000 per WIB calendar day.
    pub const DAILY_MINOR: i64 = 50_000_000_000;
    /// IDR 25,000,000 and above goes to manual review.
    pub const REVIEW_THRESHOLD_MINOR: i64 = 2_500_000_000;
    /// Requests per second per API key.
    pub const RATE_LIMIT_PER_SECOND: i64 = 100;
    /// Burst per API key.
    pub const RATE_LIMIT_BURST: i64 = 200;
}

/// Ledger records one merchant may have queued for the journal before its
/// actor waits for them to become durable (a record carrying many entries,
/// a batch's, counts one per entry): backpressure per merchant, and
/// the bound that keeps every in-flight entry among the recent ones kept in
/// memory (see `RECENT_ENTRIES_MAX`).
pub const MERCHANT_IN_FLIGHT_MAX: usize = 4096;

/// Entries a merchant actor keeps in memory for reversals of entries that may
/// not have reached sled yet. Must be at least `MERCHANT_IN_FLIGHT_MAX`.
pub const RECENT_ENTRIES_MAX: usize = 4096;

/// Recent disbursements (or orders and refunds) a merchant actor keeps
/// before it forgets them at a moment nothing is in flight; an emptied map
/// with room for more than this is freed. Every active merchant holds up to
/// this many of each, so it is kept small: a forgotten record costs one
/// read of storage, where the journal's overlay still holds it.
pub const RECENT_ROOM_KEPT: usize = 32;

/// Disbursements not yet final the engine holds at most (each is in memory
/// while open: its index entry, its timers); past it creation answers 503
/// with `Retry-After` until some end.
pub const DISBURSEMENTS_OPEN_MAX: usize = 1_000_000;

/// New disbursements waiting for their first step at most; past it creation
/// answers 503 with `Retry-After`, so a hand-over slower than creation
/// pushes back on callers instead of queueing without end.
pub const DISBURSEMENTS_UNSTARTED_MAX: usize = 100_000;

/// Order actors live at once: one per order being paid, expired, failed or
/// refunded, kept while a refund waits for its vendor and for
/// `ACTOR_IDLE_TIMEOUT` after its last message. Past it, work that needs a
/// new one is `Busy` until some stop, rather than the process growing
/// without bound.
pub const ORDER_ACTORS_LIVE_MAX: usize = 1_000_000;

/// Proposals accepted in one batch message.
pub const POST_BATCH_MAX: usize = 8192;

/// How often PENDING orders past their expiry are expired (orders due while
/// the server was down are expired at start).
pub const ORDER_EXPIRY_SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// Orders expired per storage scan of a sweep.
pub const ORDER_EXPIRY_SWEEP_BATCH: usize = 1000;

/// How often the daily settlement run checks whether the WIB day changed.
pub const SETTLEMENT_CLOCK_POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Writes per sled batch at a checkpoint: sled blocks all readers for a
/// batch, so batches stay small and readers wait briefly.
pub const CHECKPOINT_BATCH_OPS: usize = 2048;

/// sled's page cache (its default is 1 GiB). Recent state lives in the
/// overlay and merchant actors, and the OS caches sled's file besides, so
/// what this holds is mostly the pages checkpoints write to: the newest
/// blocks and run chunks, a small set. sled counts a page at its size on
/// disk, and a page held decoded takes more than that, so every byte of
/// this is more than a byte of resident memory for good: it is kept small.
/// It bounds only the cached pages: sled's page table grows with what it
/// holds, whatever this is.
pub const SLED_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// Journal bytes after which the checkpointer closes and reopens sled
/// (`Store::reopen_sled`). sled 0.34 snapshots only as it opens, and its
/// open reads everything logged since: this bounds what a start after a
/// crash reads, at the price of the reads that wait while sled reopens,
/// which pays the same read.
pub const SLED_REOPEN_JOURNAL_BYTES: u64 = 256 * 1024 * 1024;

/// After a reopen, the next waits at least this many times as long as
/// reads waited on it, so reopens take at most about 1% of the time. A
/// reopen reads sled's snapshot, which grows with what sled holds: on a
/// large store reopens come further apart, and a start after a crash reads
/// more of sled's log.
pub const SLED_REOPEN_SPACING: u32 = 100;

/// Past this many `SLED_REOPEN_JOURNAL_BYTES` since the last open, sled is
/// reopened whatever the spacing: the log a reopen reads grows with the
/// time since the last, so spacing alone would feed each wait into the next.
pub const SLED_REOPEN_BUDGETS_MAX: u64 = 4;

/// A payout whose hand-over got no usable answer (timeout, 5xx) is
/// inquired this long after; so is an inquiry that failed.
pub const PAYOUT_UNKNOWN_INQUIRY_AFTER: Duration = Duration::from_secs(10);

/// An ON_PROCESS payout with no callback is inquired at these
/// times after it became ON_PROCESS, then hourly. Beneficiaries' accounts
/// still unverified are asked again on the same schedule from creation.
pub const PAYOUT_INQUIRY_SCHEDULE: [Duration; 3] = [
    Duration::from_secs(60),
    Duration::from_secs(5 * 60),
    Duration::from_secs(15 * 60),
];

/// Webhook events delivered (or given up) and their delivery attempts are
/// kept this long, then dropped (`--webhook-retention-days`), as payment
/// platforms keep a month of events; money records are kept forever.
pub const WEBHOOK_RETENTION: Duration = Duration::from_secs(30 * 86_400);
