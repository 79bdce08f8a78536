//! Durable state: the journal is the truth; sled trees hold the state and
//! indexes built from it, made durable at checkpoints.
//!
//! Only records already synced to the journal are applied to sled (the
//! journal's applier runs after the sync), so sled never holds a change the
//! journal could lose. Ledger entries are staged and written once per journal
//! batch as one block per merchant (`entries` key = merchant ++ first seq),
//! because a sled insert per entry costs more than the rest of the path. A checkpoint flushes sled, fsyncs its files (sled's
//! own flush is not an fsync) and records the first journal sequence it does
//! not cover; recovery replays the journal from there.

pub mod journal;
pub mod record;

use crate::domain::{Bank, Catalog, Ewallet, MerchantRecord, Organization};
use crate::ledger::{Entry, MerchantBook};
use record::{decode_value, encode_value, JournalRecord};
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};
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
    /// Stored entries break a ledger invariant.
    #[error("ledger corrupt for merchant {merchant_id}: {reason}")]
    Corrupt {
        /// Whose entries.
        merchant_id: Uuid,
        /// What broke.
        reason: String,
    },
}

const CHECKPOINT_SEQ_KEY: &[u8] = b"checkpoint_seq";

/// Merchants by id and by credential, kept in memory for authentication.
#[derive(Default)]
pub struct Directory {
    merchants: HashMap<Uuid, Arc<MerchantRecord>>,
    by_api_key_hash: HashMap<[u8; 32], Uuid>,
    by_client_id: HashMap<String, Uuid>,
}

impl Directory {
    /// A merchant by id.
    pub fn get(&self, id: &Uuid) -> Option<Arc<MerchantRecord>> {
        self.merchants.get(id).cloned()
    }

    /// A merchant by the SHA-256 of its API key.
    pub fn by_api_key_hash(&self, hash: &[u8; 32]) -> Option<Arc<MerchantRecord>> {
        self.by_api_key_hash.get(hash).and_then(|id| self.get(id))
    }

    /// A merchant by Legacy client id.
    pub fn by_client_id(&self, client_id: &str) -> Option<Arc<MerchantRecord>> {
        self.by_client_id.get(client_id).and_then(|id| self.get(id))
    }

    /// Every merchant id.
    pub fn ids(&self) -> Vec<Uuid> {
        self.merchants.keys().copied().collect()
    }

    /// How many merchants exist.
    pub fn len(&self) -> usize {
        self.merchants.len()
    }

    /// True when no merchant exists yet.
    pub fn is_empty(&self) -> bool {
        self.merchants.is_empty()
    }

    fn insert(&mut self, record: MerchantRecord) {
        if let Some(old) = self.merchants.get(&record.id) {
            self.by_api_key_hash.remove(&old.credentials.api_key_sha256);
            self.by_client_id.remove(&old.credentials.client_id);
        }
        self.by_api_key_hash
            .insert(record.credentials.api_key_sha256, record.id);
        self.by_client_id
            .insert(record.credentials.client_id.clone(), record.id);
        self.merchants.insert(record.id, Arc::new(record));
    }
}

/// sled trees plus the in-memory directory and catalog built from them.
pub struct Store {
    path: PathBuf,
    db: sled::Db,
    entries: sled::Tree,
    idempotency: sled::Tree,
    merchants: sled::Tree,
    books: sled::Tree,
    catalog: sled::Tree,
    meta: sled::Tree,
    directory: RwLock<Directory>,
    catalog_memory: RwLock<Catalog>,
    catalog_version: AtomicU64,
    staged: Mutex<Staged>,
}

/// Entries waiting for the end of their journal batch.
#[derive(Default)]
struct Staged {
    /// Per merchant: encoded entry records, in sequence order.
    entries: HashMap<Uuid, StagedBlock>,
    idempotency: Vec<(Vec<u8>, u64)>,
}

struct StagedBlock {
    first_seq: u64,
    last_seq: u64,
    bytes: Vec<u8>,
}

fn entry_key(merchant_id: &Uuid, seq: u64) -> [u8; 24] {
    let mut key = [0u8; 24];
    key[..16].copy_from_slice(merchant_id.as_bytes());
    key[16..].copy_from_slice(&seq.to_be_bytes());
    key
}

fn idempotency_key(merchant_id: &Uuid, key: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + key.len());
    out.extend_from_slice(merchant_id.as_bytes());
    out.extend_from_slice(key.as_bytes());
    out
}

impl Store {
    /// Opens (or creates) the sled state at `path` and loads the directory
    /// and catalog into memory.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let db = open_sled(path)?;
        let store = Store {
            path: path.to_path_buf(),
            entries: db.open_tree("entries")?,
            idempotency: db.open_tree("idempotency")?,
            merchants: db.open_tree("merchants")?,
            books: db.open_tree("books")?,
            catalog: db.open_tree("catalog")?,
            meta: db.open_tree("meta")?,
            db,
            directory: RwLock::new(Directory::default()),
            catalog_memory: RwLock::new(Catalog::default()),
            catalog_version: AtomicU64::new(0),
            staged: Mutex::new(Staged::default()),
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
        Ok(store)
    }

    /// The first journal sequence the last durable checkpoint does not cover.
    pub fn checkpoint_seq(&self) -> Result<u64, StoreError> {
        Ok(match self.meta.get(CHECKPOINT_SEQ_KEY)? {
            Some(bytes) => u64::from_be_bytes(bytes.as_ref().try_into().unwrap_or([0; 8])),
            None => 0,
        })
    }

    /// Applies one durable journal record. Idempotent. Ledger entries are
    /// only staged: `flush_staged` writes them (the journal calls it after
    /// every batch, recovery after replay).
    pub fn apply(&self, record: &JournalRecord, payload: &[u8]) -> Result<(), StoreError> {
        match record {
            JournalRecord::EntryPosted(entry) => self.stage_entry(entry, payload),
            JournalRecord::MerchantSaved(merchant) => {
                self.merchants.insert(merchant.id.as_bytes(), encode_value(merchant))?;
                self.directory
                    .write()
                    .expect("directory lock")
                    .insert((**merchant).clone());
            }
            JournalRecord::OrganizationSaved(_) | JournalRecord::BankSaved(_) | JournalRecord::EwalletSaved(_) => {
                self.catalog.insert(catalog_key(record), payload)?;
                self.apply_to_catalog(record.clone());
                self.catalog_version.fetch_add(1, Ordering::AcqRel);
            }
        }
        Ok(())
    }

    fn stage_entry(&self, entry: &Entry, payload: &[u8]) {
        let mut staged = self.staged.lock().expect("staged lock");
        let block = staged.entries.entry(entry.merchant_id).or_insert_with(|| StagedBlock {
            first_seq: entry.seq,
            last_seq: entry.seq - 1,
            bytes: Vec::new(),
        });
        assert!(
            entry.seq == block.last_seq + 1,
            "a merchant's entries are staged in sequence"
        );
        block.last_seq = entry.seq;
        block.bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        block.bytes.extend_from_slice(payload);
        if let Some(key) = &entry.idempotency_key {
            staged
                .idempotency
                .push((idempotency_key(&entry.merchant_id, key), entry.seq));
        }
    }

    /// Writes every staged entry block and idempotency index entry to sled.
    pub fn flush_staged(&self) -> Result<(), StoreError> {
        let staged = std::mem::take(&mut *self.staged.lock().expect("staged lock"));
        for (merchant_id, block) in staged.entries {
            self.entries
                .insert(entry_key(&merchant_id, block.first_seq), block.bytes)?;
        }
        for (key, seq) in staged.idempotency {
            self.idempotency.insert(key, &seq.to_be_bytes())?;
        }
        Ok(())
    }

    /// Decodes and applies a journal payload (recovery). Entries already in
    /// sled are skipped, so replay never writes one twice.
    pub fn apply_payload(&self, payload: &[u8]) -> Result<(), StoreError> {
        let record = JournalRecord::decode(payload)?;
        if let JournalRecord::EntryPosted(entry) = &record {
            let staged_through = self
                .staged
                .lock()
                .expect("staged lock")
                .entries
                .get(&entry.merchant_id)
                .map(|b| b.last_seq);
            if staged_through.is_none() && self.entry(&entry.merchant_id, entry.seq)?.is_some() {
                return Ok(());
            }
        }
        self.apply(&record, payload)
    }

    fn apply_to_catalog(&self, record: JournalRecord) {
        let mut catalog = self.catalog_memory.write().expect("catalog lock");
        match record {
            JournalRecord::BankSaved(bank) => {
                catalog.banks.insert(bank.short_code.clone(), bank);
            }
            JournalRecord::EwalletSaved(ewallet) => {
                catalog.ewallets.insert(ewallet.short_code.clone(), ewallet);
            }
            JournalRecord::OrganizationSaved(organization) => {
                catalog.organizations.insert(organization.id, organization);
            }
            JournalRecord::MerchantSaved(_) | JournalRecord::EntryPosted(_) => {}
        }
    }

    /// The merchant directory.
    pub fn directory(&self) -> RwLockReadGuard<'_, Directory> {
        self.directory.read().expect("directory lock")
    }

    /// The bank, e-wallet and organization catalog.
    pub fn catalog(&self) -> RwLockReadGuard<'_, Catalog> {
        self.catalog_memory.read().expect("catalog lock")
    }

    /// Bumped on every catalog change, so caches know to rebuild.
    pub fn catalog_version(&self) -> u64 {
        self.catalog_version.load(Ordering::Acquire)
    }

    /// A stored entry.
    pub fn entry(&self, merchant_id: &Uuid, seq: u64) -> Result<Option<Entry>, StoreError> {
        // The block holding `seq` is the last one starting at or before it.
        let start = self
            .entries
            .range(entry_key(merchant_id, 0)..=entry_key(merchant_id, seq))
            .next_back();
        let Some(item) = start else { return Ok(None) };
        let (_, bytes) = item?;
        for entry in decode_block(merchant_id, &bytes)? {
            if entry.seq == seq {
                return Ok(Some(entry));
            }
        }
        Ok(None)
    }

    /// Every stored entry of a merchant with `seq > after`, in order.
    pub fn entries_after(
        &self,
        merchant_id: &Uuid,
        after: u64,
    ) -> impl Iterator<Item = Result<Entry, StoreError>> + '_ {
        let merchant_id = *merchant_id;
        let first_wanted = after.saturating_add(1);
        // Start at the block holding `first_wanted`, if it began earlier.
        let from = match self
            .entries
            .range(entry_key(&merchant_id, 0)..=entry_key(&merchant_id, first_wanted))
            .next_back()
        {
            Some(Ok((key, _))) => key.to_vec(),
            _ => entry_key(&merchant_id, first_wanted).to_vec(),
        };
        let blocks = self.entries.range(from..=entry_key(&merchant_id, u64::MAX).to_vec());
        let mut last_yielded = after;
        blocks
            .flat_map(move |item| {
                let decoded = item
                    .map_err(StoreError::from)
                    .and_then(|(_, bytes)| decode_block(&merchant_id, &bytes));
                match decoded {
                    Ok(entries) => entries.into_iter().map(Ok).collect::<Vec<_>>(),
                    Err(error) => vec![Err(error)],
                }
            })
            .filter(move |item| match item {
                Ok(entry) if entry.seq <= last_yielded => false,
                Ok(entry) => {
                    last_yielded = entry.seq;
                    true
                }
                Err(_) => true,
            })
    }

    /// Up to `limit` idempotency keys of a merchant with their entries; `None`
    /// when the merchant has more than `limit`.
    pub fn idempotency_keys(&self, merchant_id: &Uuid, limit: usize) -> Result<Option<Vec<(String, u64)>>, StoreError> {
        let mut keys = Vec::new();
        for item in self.idempotency.scan_prefix(merchant_id.as_bytes()) {
            let (key, value) = item?;
            if keys.len() == limit {
                return Ok(None);
            }
            let name = String::from_utf8_lossy(&key[16..]).into_owned();
            keys.push((name, u64::from_be_bytes(value.as_ref().try_into().unwrap_or([0; 8]))));
        }
        Ok(Some(keys))
    }

    /// The entry that used an idempotency key, if any.
    pub fn idempotency_lookup(&self, merchant_id: &Uuid, key: &str) -> Result<Option<u64>, StoreError> {
        Ok(self
            .idempotency
            .get(idempotency_key(merchant_id, key))?
            .map(|bytes| u64::from_be_bytes(bytes.as_ref().try_into().unwrap_or([0; 8]))))
    }

    /// A merchant's book: its last snapshot plus every stored entry after it.
    pub fn load_book(&self, merchant_id: &Uuid) -> Result<MerchantBook, StoreError> {
        let mut book = match self.books.get(merchant_id.as_bytes())? {
            Some(bytes) => decode_value::<MerchantBook>(&bytes)?,
            None => MerchantBook::new(*merchant_id),
        };
        for entry in self.entries_after(merchant_id, book.last_seq) {
            let entry = entry?;
            book.apply(&entry).map_err(|e| StoreError::Corrupt {
                merchant_id: *merchant_id,
                reason: e.to_string(),
            })?;
        }
        Ok(book)
    }

    /// Saves a book snapshot. Only books whose entries are all applied to
    /// sled may be saved, so a snapshot never runs ahead of the entries.
    pub fn save_book(&self, book: &MerchantBook) -> Result<(), StoreError> {
        self.books.insert(book.merchant_id.as_bytes(), encode_value(book))?;
        Ok(())
    }

    /// Makes everything applied so far durable and records that the journal
    /// before `covers_below_seq` is no longer needed.
    pub fn checkpoint(&self, covers_below_seq: u64) -> Result<(), StoreError> {
        self.meta.insert(CHECKPOINT_SEQ_KEY, &covers_below_seq.to_be_bytes())?;
        self.db.flush()?;
        fsync_tree(&self.path)?;
        Ok(())
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
        match sled::Config::new().path(path).flush_every_ms(None).open() {
            Err(sled::Error::Io(error))
                if error.to_string().contains("could not acquire lock") && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return Ok(other?),
        }
    }
}

/// Decodes an entry block: length-prefixed encoded `EntryPosted` records.
fn decode_block(merchant_id: &Uuid, bytes: &[u8]) -> Result<Vec<Entry>, StoreError> {
    let corrupt = |reason: &str| StoreError::Corrupt {
        merchant_id: *merchant_id,
        reason: reason.to_string(),
    };
    let mut entries = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        if rest.len() < 4 {
            return Err(corrupt("truncated entry block"));
        }
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let record = rest
            .get(4..4 + len)
            .ok_or_else(|| corrupt("truncated entry in block"))?;
        match JournalRecord::decode(record)? {
            JournalRecord::EntryPosted(entry) => entries.push(entry),
            _ => return Err(corrupt("non-entry in entries tree")),
        }
        rest = &rest[4 + len..];
    }
    Ok(entries)
}

fn catalog_key(record: &JournalRecord) -> Vec<u8> {
    match record {
        JournalRecord::BankSaved(Bank { short_code, .. }) => format!("bank:{short_code}").into_bytes(),
        JournalRecord::EwalletSaved(Ewallet { short_code, .. }) => format!("ewallet:{short_code}").into_bytes(),
        JournalRecord::OrganizationSaved(Organization { id, .. }) => format!("org:{id}").into_bytes(),
        _ => unreachable!("only catalog records have catalog keys"),
    }
}

/// fsyncs every file and directory under `path`: sled's flush uses
/// `sync_file_range`, which does not make data or metadata durable.
fn fsync_tree(path: &Path) -> io::Result<()> {
    for item in fs::read_dir(path)? {
        let item = item?;
        let kind = item.file_type()?;
        if kind.is_dir() {
            fsync_tree(&item.path())?;
        } else if kind.is_file() {
            fs::File::open(item.path())?.sync_all()?;
        }
    }
    fs::File::open(path)?.sync_all()
}
