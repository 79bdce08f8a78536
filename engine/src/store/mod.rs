//! Durable state: the journal is the truth; sled holds the state and indexes
//! built from it, made durable at checkpoints.
//!
//! Only records already synced to the journal are applied (the journal's
//! applier runs after the sync). Merchant and catalog records go straight to
//! their sled trees. Ledger entries, books and idempotency keys go to the
//! in-memory overlay (`overlay.rs`), visible to readers at once, and a
//! checkpoint writes the overlay to the `ledger` tree in small batches, last
//! the first journal sequence it does not cover (the marker), flushes sled
//! and fsyncs its files (sled's own flush is not an fsync). Recovery = that
//! checkpoint + replay of the journal after it.
//!
//! Every key of the `ledger` tree starts with a `KeyPrefix` (`keys.rs`),
//! whose variants are the map of what is on disk, each with its key layout.
//! A checkpoint writes each merchant's book and entry blocks, one run of
//! every merchant's new entry idempotency keys (`entry_keys.rs`); the newest version of every resource (disbursements, orders,
//! refunds, settlements, beneficiaries, batches, webhook events, where each
//! event's delivery stands, and delivery attempts) into its kind's blocks, indexed in memory for recent
//! (and open) ones and in sorted runs on disk for all history
//! (`history.rs`, each kind declared once by a `KindSpec` and named by a
//! `Kind`); and the open-work keys (a PENDING order's expiry, what waits
//! for a settlement, open refunds and settlements, webhook due times), one
//! empty value each, removed when the work is done.
//!
//! What the journal, blocks and sled values hold are the store's own
//! versioned types (`stored/`), not the domain structs: each value carries
//! its layout, and a domain field changed has to say how it is stored. A
//! webhook event keeps its resource's id and the fields that change
//! (`domain::changes`), read back over the version its journal record
//! carries or, from a block, over the resource's newest version.
//!
//! Files: `keys.rs` (key prefixes and key building), `directory.rs` and
//! `catalog.rs` (kept in memory), `apply.rs` (records to trees and the
//! overlay), `indexing.rs` (what each kind is indexed under), `books.rs` (ledger reads), `entry_keys.rs`, `checkpoint.rs`, `queries/`
//! (one file of reads per kind, over `versions.rs`), `upgrade.rs` (older data
//! dirs brought to this layout); beneath them `journal.rs`, `record.rs`,
//! `stored/` (each record's layouts),
//! `overlay.rs`, `blocks.rs`, `history.rs` and `runs.rs`.

mod apply;
pub mod blocks;
mod books;
mod catalog;
mod checkpoint;
mod directory;
mod due;
mod entry_keys;
pub mod history;
mod indexing;
pub mod journal;
mod keys;
pub mod overlay;
mod queries;
pub mod record;
mod retention;
pub mod runs;
mod sled_slot;
pub mod snapshot;
pub mod stored;
mod upgrade;

pub use books::EntriesNewestFirst;
pub use checkpoint::fsync_tree;
pub use directory::Directory;
pub use keys::{order_id_suffix, KeyPrefix};
pub use queries::OrderLookup;
pub use sled_slot::open_sled;

use crate::domain::{Catalog, Source};
use history::{HistoryRuns, Kind, KindSpec, LoadedOpenSet, RecentIndex, KIND_COUNT};
use keys::{read_u64, CHECKPOINT_SEQ_KEY, HASH_SEED_KEY};
use overlay::Overlay;
use record::decode_value;
use sled_slot::{HeldTree, SledSlot};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use uuid::Uuid;

/// Storage failures: all of them mean the disk or the data is broken.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// sled failed.
    #[error("sled: {0}")]
    Sled(#[from] sled::Error),
    /// File IO failed.
    #[error("io: {0}")]
    Io(#[from] io::Error),
    /// A stored value did not decode.
    #[error(transparent)]
    Decode(#[from] record::DecodeError),
    /// The journal failed.
    #[error(transparent)]
    Journal(#[from] journal::JournalError),
    /// The data directory was written in another format.
    #[error("{0}")]
    Format(String),
    /// A shard snapshot could not be taken or restored.
    #[error("shard snapshot: {0}")]
    Snapshot(String),
    /// Stored entries break a ledger invariant.
    #[error("ledger corrupt for merchant {merchant_id}: {reason}")]
    Corrupt {
        /// Whose entries.
        merchant_id: Uuid,
        /// What broke.
        reason: String,
    },
}

/// The format of the records and state this build writes. Format 2
/// disbursements carry their payout vendor and ON_PROCESS time; format 3
/// ledger entries carry their resource and the wallet's balance after them,
/// and each journal frame the first sequence number of its write; format 4
/// keeps orders, webhook events and delivery attempts in blocks and runs
/// instead of keys, and format 5 every other kind too (refunds,
/// settlements, beneficiaries, batches). Format 6 tags each stored value
/// with its layout (`stored`); what older formats wrote reads as layout 1
/// where it lies. Format 7 keeps ledger entries' idempotency keys in runs
/// of all merchants (`entry_keys.rs`), not in values per merchant that a
/// build of format 6 would look for.
pub const DATA_FORMAT: u32 = 7;

/// Formats this build opens and brings to `DATA_FORMAT` (`upgrade.rs`).
const UPGRADED_FORMATS: [u32; 4] = [3, 4, 5, 6];

/// Checks that `data_dir` holds data this build reads (a directory whose
/// journal or state holds files but that has no `format` file is format 1),
/// marks a new one, and returns the format found. One of `UPGRADED_FORMATS`
/// is upgraded when the store opens; `mark_data_format` records that once
/// done.
pub fn check_data_format(data_dir: &Path) -> Result<u32, StoreError> {
    let marker = data_dir.join("format");
    let found = match fs::read_to_string(&marker) {
        Ok(text) => text.trim().parse::<u32>().ok(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            // Empty `journal` or `state` folders (a server stopping while
            // its data dir was deleted re-creates them) hold nothing to read.
            if !holds_files(&data_dir.join("journal"))? && !holds_files(&data_dir.join("state"))? {
                mark_data_format(data_dir)?;
                return Ok(DATA_FORMAT);
            }
            return Err(format_refused(
                data_dir,
                "a journal or state but no `format` file: paygate data format 1, or a data dir a server was \
                 stopped in while it was being deleted",
            ));
        }
        Err(error) => return Err(error.into()),
    };
    match found {
        Some(format) if format == DATA_FORMAT || UPGRADED_FORMATS.contains(&format) => Ok(format),
        other => {
            let found = other.map_or_else(|| "unknown".to_string(), |f| f.to_string());
            Err(format_refused(data_dir, &format!("paygate data format {found}")))
        }
    }
}

/// The refusal of a data dir holding `what`, naming the formats this build reads.
fn format_refused(data_dir: &Path, what: &str) -> StoreError {
    StoreError::Format(format!(
        "{} holds {what}; this build reads formats {} and {DATA_FORMAT} only. Start it on a new --data-dir \
         (the old one is left untouched)",
        data_dir.display(),
        UPGRADED_FORMATS.map(|f| f.to_string()).join(", "),
    ))
}

/// True when `path` is anything but a missing or empty folder: a file there,
/// or a folder with an entry, may be data.
fn holds_files(path: &Path) -> io::Result<bool> {
    match fs::read_dir(path) {
        Ok(mut entries) => Ok(entries.next().is_some()),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(error) if error.kind() == io::ErrorKind::NotADirectory => Ok(true),
        Err(error) => Err(error),
    }
}

/// Marks `data_dir` as holding `DATA_FORMAT`: whole or not at all, since a
/// marker cut short by a full disk would make it unreadable ("format unknown").
pub fn mark_data_format(data_dir: &Path) -> Result<(), StoreError> {
    let marker = data_dir.join("format");
    let temporary = data_dir.join("format.tmp");
    fs::write(&temporary, format!("{DATA_FORMAT}\n"))?;
    fs::File::open(&temporary)?.sync_all()?;
    fs::rename(&temporary, &marker)?;
    fs::File::open(data_dir)?.sync_all()?;
    Ok(())
}

/// One versioned kind's indexes: its recent (and open) versions in memory,
/// all its checkpointed history in runs on disk. Lock order: the overlay,
/// then `recent`; `runs` is never taken while holding the overlay.
struct KindIndexes {
    recent: RwLock<RecentIndex>,
    runs: RwLock<HistoryRuns>,
    /// Kinds kept for a retention window: every block before this
    /// (checkpoint, part) was dropped, so a location below it is gone.
    retained_from: RwLock<retention::BlockPosition>,
    /// The same kinds: versions created before this are past the window
    /// (set by each sweep; none until the first).
    retained_since_ms: std::sync::atomic::AtomicI64,
}

impl KindIndexes {
    /// The kind's runs in `tree`, with the open set (`None`: the runs were
    /// never filled, see `HistoryRuns::load`).
    fn load(sled: &Arc<SledSlot>, spec: &'static KindSpec) -> Result<(KindIndexes, Option<LoadedOpenSet>), StoreError> {
        let (runs, open) = HistoryRuns::load(sled.clone(), spec)?;
        let indexes = KindIndexes {
            recent: RwLock::new(RecentIndex::default()),
            runs: RwLock::new(runs),
            retained_from: RwLock::new(retention::load_retained_from(&sled.ledger(), spec)?),
            retained_since_ms: std::sync::atomic::AtomicI64::new(i64::MIN),
        };
        Ok((indexes, open))
    }

    fn spec(&self) -> &'static KindSpec {
        self.runs.read().expect("history lock").spec()
    }
}

/// sled trees, the overlay, and the in-memory directory and catalog.
pub struct Store {
    path: PathBuf,
    /// sled, reopened now and then (`sled_slot.rs`).
    sled: Arc<SledSlot>,
    directory: RwLock<Directory>,
    catalog_memory: RwLock<Catalog>,
    catalog_version: AtomicU64,
    overlay: Mutex<Overlay>,
    hash_seed: u64,
    /// The checkpointed idempotency keys of ledger entries.
    entry_keys: entry_keys::EntryKeys,
    /// Each versioned kind's indexes, indexed by `Kind`.
    kinds: [KindIndexes; KIND_COUNT],
    /// The webhook outbox's due keys, in memory while they fit.
    due: Mutex<due::DueIndex>,
    /// Whether new webhook due keys may be marked fresh (`Layer::fresh`):
    /// only once recovery's replay is checkpointed, since a checkpoint cut
    /// short may have left a replayed record's keys in sled already.
    fresh_keys: AtomicBool,
    /// Tests: a checkpoint fails after this many sled batches (a crash mid-checkpoint).
    #[cfg(test)]
    fail_after_batches: std::sync::atomic::AtomicUsize,
}

impl Store {
    /// Opens (or creates) the sled state at `path` and loads the directory
    /// and catalog into memory.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let opening = std::time::Instant::now();
        let sled = Arc::new(SledSlot::open(path)?);
        tracing::info!(elapsed_ms = opening.elapsed().as_millis() as u64, "storage log read");
        let ledger = sled.ledger();
        let hash_seed = match ledger.get(HASH_SEED_KEY)? {
            Some(bytes) => read_u64(&bytes),
            None => {
                let seed = rand::random::<u64>();
                ledger.insert(HASH_SEED_KEY, &seed.to_be_bytes())?;
                seed
            }
        };
        // Each kind's run metadata is many small sled reads, on a cold start
        // mostly from disk: the kinds are read side by side, so their reads
        // overlap.
        let shared_sled = &sled;
        let (entry_keys, loaded) = std::thread::scope(|scope| {
            let loading: Vec<_> = Kind::ALL
                .into_iter()
                .map(|kind| scope.spawn(move || KindIndexes::load(shared_sled, kind.spec())))
                .collect();
            let entry_keys = entry_keys::EntryKeys::load(&ledger);
            let loaded: Vec<_> = loading
                .into_iter()
                .map(|thread| thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
                .collect();
            (entry_keys, loaded)
        });
        let (entry_keys, entry_keys_filled) = entry_keys?;
        drop(ledger);
        let mut kinds = Vec::with_capacity(KIND_COUNT);
        let mut open_sets = Vec::with_capacity(KIND_COUNT);
        for kind_loaded in loaded {
            let (indexes, open) = kind_loaded?;
            kinds.push(indexes);
            open_sets.push(open);
        }
        let kinds: [KindIndexes; KIND_COUNT] = kinds.try_into().unwrap_or_else(|_| unreachable!("one per kind"));
        let store = Store {
            path: path.to_path_buf(),
            sled,
            directory: RwLock::new(Directory::default()),
            catalog_memory: RwLock::new(Catalog::default()),
            catalog_version: AtomicU64::new(0),
            overlay: Mutex::new(Overlay::default()),
            hash_seed,
            entry_keys,
            kinds,
            due: Mutex::default(),
            fresh_keys: AtomicBool::new(false),
            #[cfg(test)]
            fail_after_batches: std::sync::atomic::AtomicUsize::new(usize::MAX),
        };
        {
            let mut directory = store.directory.write().expect("directory lock");
            for item in store.merchants_tree().iter() {
                let (_, value) = item?;
                directory.insert(decode_value(&value)?);
            }
        }
        for item in store.catalog_tree().iter() {
            let (_, value) = item?;
            store.apply_to_catalog(decode_value(&value)?);
        }
        let checkpoint = store.checkpoint_seq()?;
        store.drop_cut_short_blocks(checkpoint)?;
        for (kind, open) in Kind::ALL.into_iter().zip(open_sets) {
            match open {
                Some(open) => store
                    .kind(kind)
                    .recent
                    .write()
                    .expect("recent index lock")
                    .set_open(open),
                // Runs never filled: a data dir from before they held the kind.
                None => store.fill_history(kind, checkpoint)?,
            }
        }
        if !entry_keys_filled {
            store.fill_entry_keys()?;
        }
        store.overlay.lock().expect("overlay lock").active.through_seq = checkpoint.saturating_sub(1);
        Ok(store)
    }

    /// Drops blocks of a checkpoint cut short: the journal after the marker
    /// still holds what they held.
    fn drop_cut_short_blocks(&self, checkpoint: u64) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        for spec in history::KINDS {
            let cut_short = blocks::block_key(spec.blocks, checkpoint.saturating_add(1), 0)
                ..=blocks::block_key(spec.blocks, u64::MAX, u32::MAX);
            for item in self.ledger_tree().range(cut_short) {
                batch.remove(item?.0);
            }
        }
        self.ledger_tree().apply_batch(batch)?;
        Ok(())
    }

    /// One versioned kind's indexes.
    fn kind(&self, kind: Kind) -> &KindIndexes {
        &self.kinds[kind as usize]
    }

    /// Recovery is over and checkpointed: from now on a webhook's new due
    /// key is one no checkpoint can hold (see `Layer::fresh`).
    pub fn allow_fresh_keys(&self) {
        self.fresh_keys.store(true, Ordering::Release);
    }

    /// The first journal sequence the last durable checkpoint does not cover.
    pub fn checkpoint_seq(&self) -> Result<u64, StoreError> {
        Ok(self
            .ledger_tree()
            .get(CHECKPOINT_SEQ_KEY)?
            .map(|b| read_u64(&b))
            .unwrap_or(0))
    }

    /// The hash under which an idempotency key is indexed (128-bit, seeded
    /// per installation, so collisions are out of practical reach).
    pub fn key_hash(&self, key: &str) -> u128 {
        xxhash_rust::xxh3::xxh3_128_with_seed(key.as_bytes(), self.hash_seed)
    }

    /// The hash under which a merchant's own order id in one API is indexed.
    pub fn order_id_hash(&self, source: Source, merchant_order_id: &str) -> u128 {
        xxhash_rust::xxh3::xxh3_128_with_seed(&order_id_suffix(source, merchant_order_id), self.hash_seed)
    }

    /// Tests: every checkpoint from now on fails after `batches` sled batches.
    #[cfg(test)]
    pub(crate) fn fail_checkpoints_after(&self, batches: usize) {
        self.fail_after_batches.store(batches, Ordering::Release);
    }

    /// Flushes sled without the fsync (on shutdown after a checkpoint).
    pub fn flush(&self) -> Result<(), StoreError> {
        self.sled.flush()
    }

    /// The tree of versioned records, runs and books.
    fn ledger_tree(&self) -> HeldTree {
        self.sled.ledger()
    }

    /// The tree of merchants.
    fn merchants_tree(&self) -> HeldTree {
        self.sled.merchants()
    }

    /// The tree of the catalog.
    fn catalog_tree(&self) -> HeldTree {
        self.sled.catalog()
    }

    /// Closes and reopens sled, so that a start after a crash reads only
    /// what sled logged since (see `sled_slot.rs`). Only between
    /// checkpoints, by the checkpointer: no write may be under way. Returns
    /// how long reads waited, or `None` when it found no moment without a
    /// reader and left the reopen to a later call.
    pub fn reopen_sled(&self) -> SledReopen {
        self.sled.reopen()
    }
}

/// How a reopen of sled went: how long readers of sled waited, or `None`
/// when a handle stayed out and the reopen was left for later.
pub type SledReopen = Result<Option<std::time::Duration>, StoreError>;

/// A version block that is missing or does not parse.
fn corrupt_block(key: &[u8]) -> StoreError {
    StoreError::Io(io::Error::new(
        io::ErrorKind::InvalidData,
        format!("version block {key:?} is missing or cut short"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Disbursement;
    use crate::money::MinorUnits;

    #[test]
    fn a_new_data_dir_is_marked_and_one_of_another_format_is_refused_untouched() {
        let new = tempfile::tempdir().unwrap();
        assert_eq!(check_data_format(new.path()).unwrap(), DATA_FORMAT);
        assert_eq!(
            fs::read_to_string(new.path().join("format")).unwrap(),
            format!("{DATA_FORMAT}\n")
        );
        assert_eq!(
            check_data_format(new.path()).expect("its own format opens again"),
            DATA_FORMAT
        );
        for older in UPGRADED_FORMATS {
            fs::write(new.path().join("format"), format!("{older}\n")).unwrap();
            assert_eq!(
                check_data_format(new.path()).expect("an older format is upgraded"),
                older
            );
        }

        let old = tempfile::tempdir().unwrap();
        fs::create_dir(old.path().join("journal")).unwrap();
        fs::write(old.path().join("journal").join("00000000000000000001.log"), b"x").unwrap();
        let refused = check_data_format(old.path()).unwrap_err().to_string();
        assert!(refused.contains("data format 1"), "{refused}");
        assert!(refused.contains("no `format` file"), "{refused}");
        assert!(!old.path().join("format").exists(), "left untouched");
        let state_only = tempfile::tempdir().unwrap();
        fs::create_dir(state_only.path().join("state")).unwrap();
        fs::write(state_only.path().join("state").join("db"), b"x").unwrap();
        assert!(
            check_data_format(state_only.path()).is_err(),
            "sled's files without a marker are data"
        );
        assert!(!state_only.path().join("format").exists(), "left untouched");

        for other in [2, DATA_FORMAT + 1] {
            fs::write(new.path().join("format"), format!("{other}\n")).unwrap();
            let refused = check_data_format(new.path()).unwrap_err().to_string();
            assert!(refused.contains(&format!("data format {other}")), "{refused}");
        }
    }

    /// What a server stopping while its data dir was deleted leaves: the
    /// dir and empty `journal` and `state` folders, no marker. Nothing is in
    /// them, so the dir starts as a new one instead of being refused as
    /// format 1.
    #[test]
    fn empty_journal_and_state_folders_without_a_marker_are_a_new_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("journal")).unwrap();
        fs::create_dir(dir.path().join("state")).unwrap();
        assert_eq!(check_data_format(dir.path()).unwrap(), DATA_FORMAT);
        assert_eq!(
            fs::read_to_string(dir.path().join("format")).unwrap(),
            format!("{DATA_FORMAT}\n")
        );
    }

    pub(super) fn test_disbursement(merchant_id: Uuid, n: usize) -> Disbursement {
        Disbursement {
            id: Uuid::new_v4(),
            ref_code: format!("DSB-261121000000-{n:04}"),
            merchant_id,
            idempotency_key: format!("key-{n}"),
            destination: std::sync::Arc::new(crate::domain::Destination::Ewallet {
                provider: "OVO".into(),
                phone: format!("62812{n:08}"),
            }),
            request_amount: MinorUnits::new(1_000_000),
            fee: MinorUnits::new(250_000),
            final_amount: MinorUnits::new(1_250_000),
            vendor_disbursement_id: None,
            payout_vendor: None,
            on_process_at_ms: None,
            source: Source::Api,
            status: crate::domain::DisbursementStatus::Pending,
            notify_url: None,
            beneficiary_id: None,
            failure_reason: None,
            debit_seq: n as u64 + 1,
            reversal_seq: None,
            wib_day: 0,
            created_at_ms: n as i64,
            updated_at_ms: n as i64,
        }
    }

    /// A beneficiary of `merchant_id`, the `n`th made.
    pub(super) fn test_beneficiary(merchant_id: Uuid, n: usize) -> crate::domain::Beneficiary {
        crate::domain::Beneficiary {
            id: Uuid::new_v4(),
            organization_id: Uuid::nil(),
            merchant_id,
            label: None,
            destination: crate::domain::Destination::Ewallet {
                provider: "OVO".into(),
                phone: format!("62812{n:08}"),
            },
            verification_status: crate::domain::VerificationStatus::Pending,
            verified_name: None,
            is_default: false,
            is_enabled: true,
            deleted_at_ms: None,
            created_at_ms: n as i64,
            updated_at_ms: n as i64,
        }
    }

    /// Every disbursement is found by id, ref code and key, in its newest
    /// version (every third SUCCESS), and exactly the others are open.
    pub(super) fn assert_disbursements_stored(store: &Store, disbursements: &[Disbursement]) {
        for (n, disbursement) in disbursements.iter().enumerate() {
            let found = store.disbursement(&disbursement.id).unwrap().unwrap();
            let expected = if n % 3 == 0 {
                crate::domain::DisbursementStatus::Success
            } else {
                crate::domain::DisbursementStatus::Pending
            };
            assert_eq!(found.status, expected, "disbursement {n}");
            let by_ref = store.disbursement_by_ref(&disbursement.ref_code).unwrap().unwrap();
            assert_eq!(by_ref.id, disbursement.id);
            let by_key = store.disbursement_by_key(&disbursement.merchant_id, &disbursement.idempotency_key);
            assert_eq!(by_key.unwrap().unwrap().id, disbursement.id);
            assert!(store.disbursement_ref_exists(&disbursement.ref_code).unwrap());
        }
        assert!(store.disbursement_by_ref("DSB-261121000000-XXXX").unwrap().is_none());
        let open = store.open_disbursements().unwrap();
        assert_eq!(open.len(), 2000);
        assert!(open
            .iter()
            .all(|d| d.status == crate::domain::DisbursementStatus::Pending));
    }
}
