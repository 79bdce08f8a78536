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
//! A checkpoint writes each merchant's book, entry blocks and idempotency
//! key run; the newest version of each disbursement into blocks, indexed in
//! memory for recent and open disbursements and in sorted runs on disk for
//! all history (`history.rs`); and orders, refunds, beneficiaries,
//! settlements and webhooks as resources: a record under its id, with
//! index keys beside it.
//!
//! Files: `keys.rs` (key prefixes and key building), `directory.rs` and
//! `catalog.rs` (kept in memory), `apply.rs` (records to trees and the
//! overlay), `books.rs` (ledger reads), `checkpoint.rs`, `queries/`
//! (disbursement and resource reads); beneath them `journal.rs`,
//! `record.rs`, `overlay.rs`, `disbursement_log.rs`, `history.rs` and
//! `runs.rs`.

mod apply;
mod books;
mod catalog;
mod checkpoint;
mod directory;
pub mod disbursement_log;
pub mod history;
pub mod journal;
mod keys;
pub mod overlay;
mod queries;
pub mod record;
pub mod runs;

pub use books::EntriesNewestFirst;
pub use directory::Directory;
pub use keys::{index_suffix_hash, order_id_suffix, KeyPrefix};

use crate::domain::Catalog;
use crate::domain::Disbursement;
use crate::limits;
use disbursement_log::Location;
use history::{DisbursementIndex, HistoryRuns, LoadedOpenSet, OpenSetWrite};
use keys::{read_u64, CHECKPOINT_SEQ_KEY, HASH_SEED_KEY};
use overlay::Overlay;
use record::decode_value;
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, RwLock};
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
/// and each journal frame the first sequence number of its write.
pub const DATA_FORMAT: u32 = 3;

/// Checks that `data_dir` holds data of `DATA_FORMAT` (a directory with a
/// journal or state but no `format` file is format 1), and marks a new one.
pub fn check_data_format(data_dir: &Path) -> Result<(), StoreError> {
    let marker = data_dir.join("format");
    let has_data = data_dir.join("journal").exists() || data_dir.join("state").exists();
    let found = match fs::read_to_string(&marker) {
        Ok(text) => text.trim().parse::<u32>().ok(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            if !has_data {
                // Whole or not at all: a marker cut short by a full disk
                // would make this directory unreadable ("format unknown").
                let temporary = data_dir.join("format.tmp");
                fs::write(&temporary, format!("{DATA_FORMAT}\n"))?;
                fs::File::open(&temporary)?.sync_all()?;
                fs::rename(&temporary, &marker)?;
                fs::File::open(data_dir)?.sync_all()?;
                return Ok(());
            }
            Some(1)
        }
        Err(error) => return Err(error.into()),
    };
    match found {
        Some(DATA_FORMAT) => Ok(()),
        other => Err(StoreError::Format(format!(
            "{} holds paygate data format {}; this build reads format {DATA_FORMAT} only. Start it on a new --data-dir (the old one is left untouched)",
            data_dir.display(),
            other.map_or_else(|| "unknown".to_string(), |f| f.to_string()),
        ))),
    }
}

/// sled trees, the overlay, and the in-memory directory and catalog.
pub struct Store {
    path: PathBuf,
    db: sled::Db,
    ledger: sled::Tree,
    merchants: sled::Tree,
    catalog: sled::Tree,
    directory: RwLock<Directory>,
    catalog_memory: RwLock<Catalog>,
    catalog_version: AtomicU64,
    overlay: Mutex<Overlay>,
    hash_seed: u64,
    key_runs_generation: AtomicU64,
    /// Recent and open disbursements' indexes. Lock order: the overlay, then this.
    disbursements: RwLock<DisbursementIndex>,
    /// Every checkpointed disbursement's indexes, on disk. Never held with
    /// the overlay or `disbursements`.
    history: RwLock<HistoryRuns>,
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
        let db = open_sled(path)?;
        let ledger = db.open_tree("ledger")?;
        let hash_seed = match ledger.get(HASH_SEED_KEY)? {
            Some(bytes) => read_u64(&bytes),
            None => {
                let seed = rand::random::<u64>();
                ledger.insert(HASH_SEED_KEY, &seed.to_be_bytes())?;
                seed
            }
        };
        let (history, open) = HistoryRuns::load(ledger.clone())?;
        let store = Store {
            path: path.to_path_buf(),
            merchants: db.open_tree("merchants")?,
            catalog: db.open_tree("catalog")?,
            ledger,
            db,
            directory: RwLock::new(Directory::default()),
            catalog_memory: RwLock::new(Catalog::default()),
            catalog_version: AtomicU64::new(0),
            overlay: Mutex::new(Overlay::default()),
            hash_seed,
            key_runs_generation: AtomicU64::new(0),
            disbursements: RwLock::new(DisbursementIndex::default()),
            history: RwLock::new(history),
            fresh_keys: AtomicBool::new(false),
            #[cfg(test)]
            fail_after_batches: std::sync::atomic::AtomicUsize::new(usize::MAX),
        };
        {
            let mut directory = store.directory.write().expect("directory lock");
            for item in store.merchants.iter() {
                let (_, value) = item?;
                directory.insert(decode_value(&value)?);
            }
        }
        for item in store.catalog.iter() {
            let (_, value) = item?;
            store.apply_to_catalog(decode_value(&value)?);
        }
        let checkpoint = store.checkpoint_seq()?;
        store.load_history(checkpoint, open)?;
        store.overlay.lock().expect("overlay lock").active.through_seq = checkpoint.saturating_sub(1);
        Ok(store)
    }

    /// Takes the open set the last checkpoint wrote, and drops blocks of a
    /// checkpoint cut short (the journal after the marker still holds what
    /// they held). A data dir written before the history runs (`open` is
    /// `None`) has its blocks read once, oldest first, into them.
    fn load_history(&self, checkpoint: u64, open: Option<LoadedOpenSet>) -> Result<(), StoreError> {
        let cut_short = disbursement_log::block_key(checkpoint.saturating_add(1), 0)
            ..=disbursement_log::block_key(u64::MAX, u32::MAX);
        let mut batch = sled::Batch::default();
        for item in self.ledger.range(cut_short) {
            batch.remove(item?.0);
        }
        self.ledger.apply_batch(batch)?;
        match open {
            Some(open) => self
                .disbursements
                .write()
                .expect("disbursement index lock")
                .set_open(open),
            None => self.fill_history(checkpoint)?,
        }
        Ok(())
    }

    /// Writes every checkpointed disbursement's index entries as the
    /// history's first runs, with the open set: the one time every block
    /// is read.
    fn fill_history(&self, checkpoint: u64) -> Result<(), StoreError> {
        let mut newest: HashMap<Uuid, (Disbursement, Location)> = HashMap::default();
        for item in self.ledger.scan_prefix([KeyPrefix::DisbursementBlock.byte()]) {
            let (key, block) = item?;
            let Some((written_by, part)) = disbursement_log::parse_block_key(&key) else {
                continue;
            };
            if written_by > checkpoint {
                continue;
            }
            let versions = disbursement_log::block_versions(&block).ok_or_else(|| corrupt_block(&key))?;
            for (offset, encoded) in versions {
                let disbursement: Disbursement = decode_value(encoded)?;
                let location = Location {
                    checkpoint: written_by,
                    part,
                    offset,
                };
                newest.insert(disbursement.id, (disbursement, location));
            }
        }
        let open: Vec<Uuid> = newest
            .values()
            .filter(|(disbursement, _)| !disbursement.status.is_terminal())
            .map(|(disbursement, _)| disbursement.id)
            .collect();
        let mut history = self.history.write().expect("history lock");
        let all = newest.into_values().map(|(disbursement, location)| {
            let key_hash = self.key_hash(&disbursement.idempotency_key);
            let ref_hash = self.key_hash(&disbursement.ref_code);
            (disbursement, key_hash, ref_hash, location)
        });
        let batch = history.batch_of_all(all);
        let mut sink = |key: Vec<u8>, chunk: Vec<u8>| {
            self.ledger.insert(key, chunk)?;
            Ok(())
        };
        let staged = history.stage(batch, &mut sink)?;
        let mut marker = sled::Batch::default();
        for (key, value) in HistoryRuns::marker_entries(&staged) {
            marker.insert(key, value);
        }
        OpenSetWrite::whole(&open).add_to(&mut marker, &self.ledger)?;
        self.ledger.apply_batch(marker)?;
        self.db.flush()?;
        history.add(staged);
        drop(history);
        self.disbursements
            .write()
            .expect("disbursement index lock")
            .set_open(LoadedOpenSet {
                ids: open,
                ..Default::default()
            });
        Ok(())
    }

    /// Recovery is over and checkpointed: from now on a webhook's new due
    /// key is one no checkpoint can hold (see `Layer::fresh`).
    pub fn allow_fresh_keys(&self) {
        self.fresh_keys.store(true, Ordering::Release);
    }

    /// The first journal sequence the last durable checkpoint does not cover.
    pub fn checkpoint_seq(&self) -> Result<u64, StoreError> {
        Ok(self.ledger.get(CHECKPOINT_SEQ_KEY)?.map(|b| read_u64(&b)).unwrap_or(0))
    }

    /// The hash under which an idempotency key is indexed (128-bit, seeded
    /// per installation, so collisions are out of practical reach).
    pub fn key_hash(&self, key: &str) -> u128 {
        xxhash_rust::xxh3::xxh3_128_with_seed(key.as_bytes(), self.hash_seed)
    }

    /// Tests: every checkpoint from now on fails after `batches` sled batches.
    #[cfg(test)]
    pub(crate) fn fail_checkpoints_after(&self, batches: usize) {
        self.fail_after_batches.store(batches, Ordering::Release);
    }

    /// Flushes sled without the fsync (on shutdown after a checkpoint).
    pub fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        Ok(())
    }
}

/// Opens sled, waiting briefly while a previous instance in this process
/// still holds the file lock: sled's I/O threads can outlive a dropped `Db`
/// by a few milliseconds.
fn open_sled(path: &Path) -> Result<sled::Db, StoreError> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        // Background flushing is off: sled is made durable only at
        // checkpoints, where it is also fsynced.
        let config = sled::Config::new()
            .path(path)
            .flush_every_ms(None)
            .cache_capacity(limits::SLED_CACHE_BYTES);
        match config.open() {
            Err(sled::Error::Io(error))
                if error.to_string().contains("could not acquire lock") && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return Ok(other?),
        }
    }
}

/// A disbursement block that is missing or does not parse.
fn corrupt_block(key: &[u8]) -> StoreError {
    StoreError::Io(io::Error::new(
        io::ErrorKind::InvalidData,
        format!("disbursement block {key:?} is missing or cut short"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Source;
    use crate::money::MinorUnits;

    #[test]
    fn a_new_data_dir_is_marked_and_one_of_another_format_is_refused_untouched() {
        let new = tempfile::tempdir().unwrap();
        check_data_format(new.path()).unwrap();
        assert_eq!(
            fs::read_to_string(new.path().join("format")).unwrap(),
            format!("{DATA_FORMAT}\n")
        );
        check_data_format(new.path()).expect("its own format opens again");

        let old = tempfile::tempdir().unwrap();
        fs::create_dir(old.path().join("journal")).unwrap();
        let refused = check_data_format(old.path()).unwrap_err().to_string();
        assert!(refused.contains("data format 1"), "{refused}");
        assert!(!old.path().join("format").exists(), "left untouched");

        for other in [DATA_FORMAT - 1, DATA_FORMAT + 1] {
            fs::write(new.path().join("format"), format!("{other}\n")).unwrap();
            let refused = check_data_format(new.path()).unwrap_err().to_string();
            assert!(refused.contains(&format!("data format {other}")), "{refused}");
        }
    }

    pub(super) fn test_disbursement(merchant_id: Uuid, n: usize) -> Disbursement {
        Disbursement {
            id: Uuid::new_v4(),
            ref_code: format!("DSB-261121000000-{n:04}"),
            merchant_id,
            idempotency_key: format!("key-{n}"),
            destination: crate::domain::Destination::Ewallet {
                provider: "OVO".into(),
                phone: format!("62812{n:08}"),
            },
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
