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

pub mod disbursement_log;
pub mod history;
pub mod journal;
mod keys;
pub mod overlay;
pub mod record;
pub mod runs;

pub use keys::{index_suffix_hash, order_id_suffix, KeyPrefix};

use crate::domain::catalog::{PaymentVendorConfig, PayoutRouting, VendorRouting};
use crate::domain::{
    Bank, Beneficiary, Catalog, Disbursement, Ewallet, MerchantRecord, Order, OrderStatus, Organization, Refund,
    RefundStatus, Settlement, Source, WebhookAttempt, WebhookEvent,
};
use crate::ledger::{Entry, MerchantBook};
use crate::limits;
use disbursement_log::{BlockWriter, Location};
use history::{DisbursementIndex, HistoryRuns, StagedHistory};
use keys::{
    merchant_key, merchant_range, merchant_seq_key, order_id_key, prefix_range, prefixed, read_u64, KeyValue,
    CHECKPOINT_SEQ_KEY, HASH_SEED_KEY,
};
use overlay::{Layer, MerchantLayer, MerchantView, Overlay};
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
/// disbursements carry their payout vendor and ON_PROCESS time.
pub const DATA_FORMAT: u32 = 2;

/// Checks that `data_dir` holds data of `DATA_FORMAT` (a directory with a
/// journal or state but no `format` file is format 1), and marks a new one.
pub fn check_data_format(data_dir: &Path) -> Result<(), StoreError> {
    let marker = data_dir.join("format");
    let has_data = data_dir.join("journal").exists() || data_dir.join("state").exists();
    let found = match fs::read_to_string(&marker) {
        Ok(text) => text.trim().parse::<u32>().ok(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            if !has_data {
                fs::write(&marker, format!("{DATA_FORMAT}\n"))?;
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
    fn load_history(&self, checkpoint: u64, open: Option<Vec<Uuid>>) -> Result<(), StoreError> {
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
        for (key, value) in HistoryRuns::marker_entries(&staged, &open) {
            marker.insert(key, value);
        }
        self.ledger.apply_batch(marker)?;
        self.db.flush()?;
        history.add(staged);
        drop(history);
        self.disbursements
            .write()
            .expect("disbursement index lock")
            .set_open(open);
        Ok(())
    }

    fn index_disbursement(&self, index: &mut DisbursementIndex, disbursement: &Disbursement, created: bool) {
        index.index_version(disbursement, created, || {
            (
                self.key_hash(&disbursement.idempotency_key),
                self.key_hash(&disbursement.ref_code),
            )
        });
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

    /// Applies durable journal record `seq`. Idempotent: replay may offer
    /// records the checkpoint already holds. Everything a record puts in the
    /// overlay goes in under one lock, so no checkpoint can split a record.
    pub fn apply(&self, seq: u64, record: &JournalRecord, payload: &[u8]) -> Result<(), StoreError> {
        self.apply_encoded(seq, record, payload, &[])
    }

    /// `apply` for a record encoded by `JournalRecord::encode_with_spans`:
    /// `spans` locate its disbursement versions in `payload`, which a
    /// checkpoint then writes as they are.
    pub fn apply_encoded(
        &self,
        seq: u64,
        record: &JournalRecord,
        payload: &[u8],
        spans: &[std::ops::Range<usize>],
    ) -> Result<(), StoreError> {
        self.apply_to_trees(record, payload)?;
        let mut overlay = self.overlay.lock().expect("overlay lock");
        let mut encoded = EncodedVersions {
            payload,
            spans: spans.iter(),
        };
        self.apply_to_overlay(&mut overlay, record, payload, &mut encoded)?;
        overlay.active.through_seq = overlay.active.through_seq.max(seq);
        Ok(())
    }

    /// The parts of a record written straight to sled trees (merchants, catalog).
    fn apply_to_trees(&self, record: &JournalRecord, payload: &[u8]) -> Result<(), StoreError> {
        match record {
            JournalRecord::MerchantSaved(merchant) => {
                self.merchants.insert(merchant.id.as_bytes(), encode_value(merchant))?;
                self.directory
                    .write()
                    .expect("directory lock")
                    .insert((**merchant).clone());
            }
            JournalRecord::OrganizationSaved(_)
            | JournalRecord::BankSaved(_)
            | JournalRecord::EwalletSaved(_)
            | JournalRecord::PaymentVendorSaved(_)
            | JournalRecord::VendorRoutingSaved(_)
            | JournalRecord::PayoutRoutingSaved(_) => {
                self.catalog.insert(catalog_key(record), payload)?;
                self.apply_to_catalog(record.clone());
                self.catalog_version.fetch_add(1, Ordering::AcqRel);
            }
            // Wrapped records are order, refund and disbursement changes: none uses its bytes here.
            JournalRecord::Evented { record, .. } => self.apply_to_trees(record, &[])?,
            _ => {}
        }
        Ok(())
    }

    /// The parts of a record that go to the overlay, all under one lock so
    /// no checkpoint can split a record.
    fn apply_to_overlay(
        &self,
        overlay: &mut Overlay,
        record: &JournalRecord,
        payload: &[u8],
        encoded: &mut EncodedVersions<'_>,
    ) -> Result<(), StoreError> {
        match record {
            JournalRecord::EntryPosted(entry) => self.overlay_entry(overlay, entry, payload)?,
            JournalRecord::DisbursementCreated { disbursement, entry }
            | JournalRecord::DisbursementReversed { disbursement, entry } => {
                // Entry blocks hold plain entry records, whatever record carried the entry.
                self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                let created = matches!(record, JournalRecord::DisbursementCreated { .. });
                self.overlay_disbursement(overlay, disbursement, encoded.next(), created);
            }
            JournalRecord::DisbursementUpdated(disbursement) => {
                self.overlay_disbursement(overlay, disbursement, encoded.next(), false)
            }
            JournalRecord::DisbursementsUpdated(disbursements) => {
                for disbursement in disbursements {
                    self.overlay_disbursement(overlay, disbursement, encoded.next(), false);
                }
            }
            JournalRecord::OrderCreated(order) => self.overlay_order(overlay, order, true),
            JournalRecord::OrderUpdated(order) => self.overlay_order(overlay, order, false),
            JournalRecord::OrderPaid { order, entry } => {
                self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                self.overlay_order(overlay, order, false);
            }
            JournalRecord::RefundSaved { order, refund, entry } => {
                if let Some(entry) = entry {
                    self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                }
                self.overlay_order(overlay, order, false);
                self.overlay_refund(overlay, refund);
            }
            JournalRecord::BeneficiariesSaved(beneficiaries) => {
                for beneficiary in beneficiaries {
                    let id = beneficiary.id.as_bytes();
                    let created = (beneficiary.created_at_ms.max(0) as u64).to_be_bytes();
                    let writes = [
                        (prefixed(KeyPrefix::Beneficiary, &[id]), Some(encode_value(beneficiary))),
                        (
                            prefixed(
                                KeyPrefix::BeneficiaryByMerchant,
                                &[beneficiary.merchant_id.as_bytes(), &created, id],
                            ),
                            Some(Vec::new()),
                        ),
                    ];
                    overlay.active.put_resources(writes);
                }
            }
            JournalRecord::SettlementCreated {
                settlement,
                orders,
                refunds,
                entry,
            } => {
                if let Some(entry) = entry {
                    self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                }
                for order in orders {
                    self.overlay_order(overlay, order, false);
                }
                for refund in refunds {
                    self.overlay_refund(overlay, refund);
                }
                self.overlay_settlement(overlay, settlement);
            }
            JournalRecord::SettlementUpdated { settlement, entry } => {
                if let Some(entry) = entry {
                    self.overlay_entry(overlay, entry, &record::encode_entry(entry))?;
                }
                self.overlay_settlement(overlay, settlement);
            }
            JournalRecord::Evented { record, events } => {
                // Only an inner entry record would need its own bytes; none is ever wrapped.
                self.apply_to_overlay(overlay, record, &[], encoded)?;
                for event in events {
                    self.overlay_webhook_event(overlay, event, None);
                }
            }
            JournalRecord::WebhookAttempted {
                event,
                previously_due_ms,
                attempt,
            } => {
                self.overlay_webhook_event(overlay, event, *previously_due_ms);
                let key = prefixed(
                    KeyPrefix::WebhookAttempt,
                    &[
                        attempt.merchant_id.as_bytes(),
                        &(attempt.attempted_at_ms.max(0) as u64).to_be_bytes(),
                        attempt.event_id.as_bytes(),
                        &attempt.attempt.to_be_bytes(),
                    ],
                );
                overlay.active.put_resources([(key, Some(encode_value(attempt)))]);
            }
            _ => {}
        }
        Ok(())
    }

    fn overlay_webhook_event(&self, overlay: &mut Overlay, event: &WebhookEvent, previously_due_ms: Option<i64>) {
        let id = event.id.as_bytes();
        let due_key = |ms: i64| prefixed(KeyPrefix::WebhookEventDue, &[&(ms.max(0) as u64).to_be_bytes(), id]);
        let mut writes = vec![(prefixed(KeyPrefix::WebhookEvent, &[id]), Some(encode_value(event)))];
        if let Some(previous) = previously_due_ms {
            writes.push((due_key(previous), None));
        }
        if let Some(next) = event.next_attempt_at_ms {
            writes.push((due_key(next), Some(Vec::new())));
        }
        overlay.active.put_resources(writes);
    }

    /// Applies durable journal record `seq`, a ledger entry, to the overlay.
    /// Idempotent: entries the book already holds are skipped.
    pub fn apply_entry(&self, seq: u64, entry: &Entry, payload: &[u8]) -> Result<(), StoreError> {
        let mut overlay = self.overlay.lock().expect("overlay lock");
        self.overlay_entry(&mut overlay, entry, payload)?;
        overlay.active.through_seq = overlay.active.through_seq.max(seq);
        Ok(())
    }

    fn overlay_entry(&self, overlay: &mut Overlay, entry: &Entry, payload: &[u8]) -> Result<(), StoreError> {
        let key_hash = entry.idempotency_key.as_deref().map(|key| self.key_hash(key));
        if !overlay.active.merchants.contains_key(&entry.merchant_id) {
            let base = self.book_below_active(overlay, &entry.merchant_id)?;
            overlay
                .active
                .merchants
                .insert(entry.merchant_id, MerchantLayer::new(base));
        }
        let active = &mut overlay.active;
        let layer = active.merchants.get_mut(&entry.merchant_id).expect("inserted above");
        if entry.seq > layer.book.last_seq {
            layer.book.apply(entry).map_err(|error| StoreError::Corrupt {
                merchant_id: entry.merchant_id,
                reason: format!("entry {}: {error}", entry.seq),
            })?;
            layer.push_entry(entry, payload, key_hash);
            active.entry_count += 1;
        }
        Ok(())
    }

    /// A disbursement's newest version, indexed at once (readers find it
    /// in the overlay until a checkpoint has written it to a block).
    fn overlay_disbursement(
        &self,
        overlay: &mut Overlay,
        disbursement: &Arc<Disbursement>,
        encoded: Option<&[u8]>,
        created: bool,
    ) {
        overlay.active.put_disbursement(disbursement, encoded);
        let mut index = self.disbursements.write().expect("disbursement index lock");
        self.index_disbursement(&mut index, disbursement, created);
    }

    /// An order and its indexes; updates write only the record and the
    /// indexes that follow its status (expiry, unsettled).
    fn overlay_order(&self, overlay: &mut Overlay, order: &Order, created: bool) {
        let id = order.id.as_bytes();
        let merchant = order.merchant_id.as_bytes();
        let mut writes = vec![(prefixed(KeyPrefix::Order, &[id]), Some(encode_value(order)))];
        if created {
            let created_ms = (order.created_at_ms.max(0) as u64).to_be_bytes();
            writes.extend([
                (
                    prefixed(KeyPrefix::OrderByRefCode, &[order.ref_code.as_bytes()]),
                    Some(id.to_vec()),
                ),
                (
                    prefixed(KeyPrefix::OrderByMerchant, &[merchant, &created_ms, id]),
                    Some(Vec::new()),
                ),
                (
                    order_id_key(&order.merchant_id, order.source, &order.merchant_order_id),
                    Some(id.to_vec()),
                ),
            ]);
            if let Some((key, _)) = &order.idempotency {
                let key_hash = self.key_hash(key).to_be_bytes();
                writes.push((
                    prefixed(KeyPrefix::OrderByIdempotencyKey, &[merchant, &key_hash]),
                    Some(id.to_vec()),
                ));
            }
        }
        if let Some(expires) = order.expires_at_ms {
            let expires = (expires.max(0) as u64).to_be_bytes();
            let pending = (order.status == OrderStatus::Pending).then(Vec::new);
            writes.push((prefixed(KeyPrefix::PendingOrderByExpiry, &[&expires, id]), pending));
        }
        if let Some(paid_at) = order.paid_at_ms {
            let paid_at = (paid_at.max(0) as u64).to_be_bytes();
            let unsettled = (!order.is_settled).then(Vec::new);
            writes.push((
                prefixed(KeyPrefix::UnsettledOrder, &[merchant, &paid_at, id]),
                unsettled,
            ));
        }
        overlay.active.put_resources(writes);
    }

    fn overlay_settlement(&self, overlay: &mut Overlay, settlement: &Settlement) {
        let id = settlement.id.as_bytes();
        let created = (settlement.created_at_ms.max(0) as u64).to_be_bytes();
        let open = (!settlement.status.is_terminal()).then(Vec::new);
        let writes = [
            (prefixed(KeyPrefix::Settlement, &[id]), Some(encode_value(settlement))),
            (
                prefixed(
                    KeyPrefix::SettlementByMerchant,
                    &[settlement.merchant_id.as_bytes(), &created, id],
                ),
                Some(Vec::new()),
            ),
            (
                prefixed(KeyPrefix::SettlementByRefCode, &[settlement.ref_code.as_bytes()]),
                Some(id.to_vec()),
            ),
            (prefixed(KeyPrefix::OpenSettlement, &[id]), open),
        ];
        overlay.active.put_resources(writes);
    }

    fn overlay_refund(&self, overlay: &mut Overlay, refund: &Refund) {
        let id = refund.id.as_bytes();
        let created = (refund.created_at_ms.max(0) as u64).to_be_bytes();
        let key_hash = self.key_hash(&refund.idempotency_key).to_be_bytes();
        let open = (refund.status == RefundStatus::Pending).then(Vec::new);
        // MANUAL refunds (no wallet debit) wait for a settlement to deduct
        // them; one that failed after a settlement deducted it (it has a
        // reversal then) waits for the next to give it back.
        let unsettled = (refund.debit_seq.is_none()
            && refund.settlement_id.is_none()
            && (refund.status != RefundStatus::Failed || refund.reversal_seq.is_some()))
        .then(Vec::new);
        let writes = [
            (
                prefixed(
                    KeyPrefix::UnsettledRefund,
                    &[refund.merchant_id.as_bytes(), &created, id],
                ),
                unsettled,
            ),
            (prefixed(KeyPrefix::Refund, &[id]), Some(encode_value(refund))),
            (
                prefixed(
                    KeyPrefix::RefundByIdempotencyKey,
                    &[refund.merchant_id.as_bytes(), &key_hash],
                ),
                Some(id.to_vec()),
            ),
            (
                prefixed(KeyPrefix::RefundByOrder, &[refund.order_id.as_bytes(), &created, id]),
                Some(Vec::new()),
            ),
            (prefixed(KeyPrefix::PendingRefund, &[id]), open),
        ];
        overlay.active.put_resources(writes);
    }

    /// A resource value: the overlay's newest, else sled's.
    fn resource(&self, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let flushing = overlay.flushing.as_ref().and_then(|f| f.resources.get(key));
            if let Some(value) = overlay.active.resources.get(key).or(flushing) {
                return Ok(value.clone());
            }
        }
        Ok(self.ledger.get(key)?.map(|value| value.to_vec()))
    }

    /// Live resource keys and values in `[start, end)`, ascending: sled's,
    /// with the overlay's newer values and removals laid over them.
    fn resource_range(&self, start: &[u8], end: &[u8]) -> Result<Vec<KeyValue>, StoreError> {
        // An empty or inverted range (a list's created_from after its
        // created_to) holds nothing; BTreeMap::range would panic on it.
        if start >= end {
            return Ok(Vec::new());
        }
        let mut newer: std::collections::BTreeMap<Vec<u8>, Option<Vec<u8>>> = std::collections::BTreeMap::new();
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let range = (
                std::ops::Bound::Included(start.to_vec()),
                std::ops::Bound::Excluded(end.to_vec()),
            );
            if let Some(flushing) = overlay.flushing.as_ref() {
                newer.extend(
                    flushing
                        .resources
                        .range(range.clone())
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
            }
            newer.extend(
                overlay
                    .active
                    .resources
                    .range(range)
                    .map(|(k, v)| (k.clone(), v.clone())),
            );
        }
        let mut merged: std::collections::BTreeMap<Vec<u8>, Vec<u8>> = std::collections::BTreeMap::new();
        for item in self.ledger.range(start..end) {
            let (key, value) = item?;
            merged.insert(key.to_vec(), value.to_vec());
        }
        for (key, value) in newer {
            match value {
                Some(value) => merged.insert(key, value),
                None => merged.remove(&key),
            };
        }
        Ok(merged.into_iter().collect())
    }

    /// Decodes and applies journal record `seq` (recovery).
    pub fn apply_payload(&self, seq: u64, payload: &[u8]) -> Result<(), StoreError> {
        let record = JournalRecord::decode(payload)?;
        self.apply(seq, &record, payload)
    }

    /// The book of a merchant as of the layer being flushed, or sled.
    fn book_below_active(&self, overlay: &Overlay, merchant_id: &Uuid) -> Result<MerchantBook, StoreError> {
        if let Some(layer) = overlay.flushing.as_ref().and_then(|f| f.merchants.get(merchant_id)) {
            return Ok(layer.book.clone());
        }
        self.sled_book(merchant_id)
    }

    fn sled_book(&self, merchant_id: &Uuid) -> Result<MerchantBook, StoreError> {
        Ok(match self.ledger.get(merchant_key(KeyPrefix::Book, merchant_id))? {
            Some(bytes) => decode_value(&bytes)?,
            None => MerchantBook::new(*merchant_id),
        })
    }

    fn merchant_view(&self, merchant_id: &Uuid) -> MerchantView {
        let overlay = self.overlay.lock().expect("overlay lock");
        MerchantView {
            flushing: overlay
                .flushing
                .as_ref()
                .and_then(|f| f.merchants.get(merchant_id).cloned()),
            active: overlay.active.merchants.get(merchant_id).cloned(),
        }
    }

    /// A merchant's book as of every durable entry applied so far.
    pub fn durable_book(&self, merchant_id: &Uuid) -> Result<MerchantBook, StoreError> {
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let newest = overlay
                .active
                .merchants
                .get(merchant_id)
                .or_else(|| overlay.flushing.as_ref().and_then(|f| f.merchants.get(merchant_id)));
            if let Some(layer) = newest {
                return Ok(layer.book.clone());
            }
        }
        self.sled_book(merchant_id)
    }

    /// Entries applied into the overlay since the last checkpoint.
    pub fn pending_entries(&self) -> usize {
        self.overlay.lock().expect("overlay lock").active.entry_count
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
            JournalRecord::PaymentVendorSaved(vendor) => {
                catalog.payment_vendors.insert(vendor.name.clone(), vendor);
            }
            JournalRecord::VendorRoutingSaved(routing) => {
                catalog
                    .vendor_routes
                    .insert((routing.organization_id, routing.method), routing.vendors);
            }
            JournalRecord::PayoutRoutingSaved(routing) => {
                catalog
                    .payout_routes
                    .insert((routing.organization_id, routing.channel), routing.vendors);
            }
            _ => {}
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
        match self
            .entries_after(merchant_id, seq.saturating_sub(1))?
            .into_iter()
            .next()
        {
            Some(entry) if entry.seq == seq => Ok(Some(entry)),
            _ => Ok(None),
        }
    }

    /// Every durable entry of a merchant with `seq > after`, in order.
    pub fn entries_after(&self, merchant_id: &Uuid, after: u64) -> Result<Vec<Entry>, StoreError> {
        // The overlay first: anything a concurrent checkpoint moves to sled
        // after this point is then read from sled, and duplicates are dropped.
        let view = self.merchant_view(merchant_id);
        let first_wanted = after.saturating_add(1);
        let start = self
            .ledger
            .range(
                merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, 0)
                    ..=merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, first_wanted),
            )
            .next_back()
            .transpose()?
            .map(|(key, _)| key.to_vec())
            .unwrap_or_else(|| merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, first_wanted).to_vec());
        let mut entries = Vec::new();
        let mut last = after;
        let mut take = |block: &[u8]| -> Result<(), StoreError> {
            for entry in decode_block(merchant_id, block)? {
                if entry.seq > last {
                    last = entry.seq;
                    entries.push(entry);
                }
            }
            Ok(())
        };
        for item in self
            .ledger
            .range(start..=merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, u64::MAX).to_vec())
        {
            take(&item?.1)?;
        }
        for layer in view.layers() {
            for (_, block) in &layer.blocks {
                take(block)?;
            }
        }
        Ok(entries)
    }

    /// Every idempotency key hash of a merchant, or `None` when there are
    /// more than `limit` (the caller then looks keys up one at a time).
    pub fn idempotency_index(
        &self,
        merchant_id: &Uuid,
        limit: usize,
    ) -> Result<Option<HashMap<u128, u64>>, StoreError> {
        let mut index = HashMap::new();
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let flushing = overlay.flushing.as_ref().and_then(|f| f.merchants.get(merchant_id));
            for layer in flushing.into_iter().chain(overlay.active.merchants.get(merchant_id)) {
                index.extend(layer.keys.iter().map(|(hash, seq)| (*hash, *seq)));
            }
        }
        for run in self.key_runs(merchant_id)? {
            index.extend(overlay::decode_run(&run));
            if index.len() > limit {
                return Ok(None);
            }
        }
        Ok((index.len() <= limit).then_some(index))
    }

    /// The entry that used an idempotency key hash, among the keys not yet
    /// checkpointed.
    pub fn overlay_key_lookup(&self, merchant_id: &Uuid, hash: u128) -> Option<u64> {
        let overlay = self.overlay.lock().expect("overlay lock");
        let flushing = overlay.flushing.as_ref().and_then(|f| f.merchants.get(merchant_id));
        flushing
            .into_iter()
            .chain(overlay.active.merchants.get(merchant_id))
            .find_map(|layer| layer.keys.get(&hash).copied())
    }

    /// A merchant's checkpointed key runs (sorted hash, seq pairs).
    pub fn key_runs(&self, merchant_id: &Uuid) -> Result<Vec<sled::IVec>, StoreError> {
        self.ledger
            .scan_prefix(merchant_key(KeyPrefix::IdempotencyKeyRun, merchant_id))
            .map(|item| Ok(item?.1))
            .collect()
    }

    /// Changes whenever checkpointed key runs change, so cached runs can be refreshed.
    pub fn key_runs_generation(&self) -> u64 {
        self.key_runs_generation.load(Ordering::Acquire)
    }

    /// Writes the overlay to sled (small batches, the checkpoint marker
    /// last), flushes and fsyncs. Returns the first journal sequence not
    /// covered, below which journal segments may be dropped.
    pub fn checkpoint(&self) -> Result<u64, StoreError> {
        let layer = {
            let mut overlay = self.overlay.lock().expect("overlay lock");
            assert!(overlay.flushing.is_none(), "one checkpoint at a time");
            let through_seq = overlay.active.through_seq;
            let layer = Arc::new(std::mem::take(&mut overlay.active));
            overlay.active.through_seq = through_seq;
            overlay.flushing = Some(layer.clone());
            layer
        };
        let covers_below = layer.through_seq + 1;
        let result = self.write_layer(&layer, covers_below);
        // The overlay's reference is then the only one, so a failed layer
        // goes back without a copy.
        drop(layer);
        let result = result.map(|staged| {
            // Before the layer leaves the overlay, so no reader misses both:
            // the runs first, then the recent entries they now hold go.
            let covered = self.history.write().expect("history lock").add(staged);
            for chunk in covered.chunks(1024) {
                // In chunks, so the applier (which holds the overlay lock
                // while it waits for this one) is never held up for long.
                self.disbursements
                    .write()
                    .expect("disbursement index lock")
                    .forget_recent(chunk);
            }
        });
        // Whatever happened, the layer stays readable until it is in sled:
        // on failure it goes back under the active one.
        let written = {
            let mut overlay = self.overlay.lock().expect("overlay lock");
            let flushed = overlay.flushing.take();
            match (&result, flushed) {
                (Err(_), Some(flushed)) => {
                    let mut restored = Arc::try_unwrap(flushed).unwrap_or_else(|shared| Layer::clone_of(&shared));
                    for (merchant_id, newer) in std::mem::take(&mut overlay.active.merchants) {
                        restored.merge_newer(merchant_id, newer);
                    }
                    restored.resources.extend(std::mem::take(&mut overlay.active.resources));
                    restored
                        .disbursements
                        .extend(std::mem::take(&mut overlay.active.disbursements));
                    restored.through_seq = overlay.active.through_seq;
                    restored.entry_count += overlay.active.entry_count;
                    overlay.active = restored;
                    None
                }
                (_, flushed) => flushed,
            }
        };
        // Freed outside the lock: freeing a layer of tens of thousands of
        // records takes milliseconds, and every writer and reader waits on it.
        drop(written);
        result?;
        self.compact_history();
        Ok(covers_below)
    }

    /// Merges history runs where there are too many. Readers go on while a
    /// merge is written; it is put in place under the lock. A merge that
    /// fails is left to its intent (finished or undone at the next open).
    fn compact_history(&self) {
        loop {
            let plan = self.history.write().expect("history lock").plan_merge();
            let Some(plan) = plan else { return };
            let merged = plan.write().and_then(|merged| {
                let replaced = self.history.write().expect("history lock").install_merge(merged)?;
                plan.finish(&replaced)
            });
            if let Err(error) = merged {
                tracing::error!(%error, "merging disbursement history runs failed; retried at the next checkpoint");
                return;
            }
        }
    }

    /// Writes a layer in batches of about `CHECKPOINT_BATCH_OPS` writes,
    /// the checkpoint marker last. sled holds a process-wide write lock for
    /// a whole batch, stalling every reader; small batches keep those stalls
    /// short. Safe to stop anywhere before the marker: a merchant's book,
    /// entry blocks and key run always share one batch (so replay skips
    /// exactly the entries the stored book has), and resources are whole
    /// values that replay rewrites in order. Returns the history runs of
    /// the layer's disbursements, written but not yet visible.
    fn write_layer(&self, layer: &overlay::Layer, covers_below: u64) -> Result<StagedHistory, StoreError> {
        let mut batch = sled::Batch::default();
        let mut pending = 0usize;
        let batches_written = std::cell::Cell::new(0usize);
        let flush = |batch: &mut sled::Batch, pending: &mut usize, force: bool| -> Result<(), StoreError> {
            if *pending > 0 && (force || *pending >= limits::CHECKPOINT_BATCH_OPS) {
                #[cfg(test)]
                if batches_written.get() >= self.fail_after_batches.load(Ordering::Acquire) {
                    return Err(StoreError::Io(io::Error::other("checkpoint interrupted (test)")));
                }
                self.ledger.apply_batch(std::mem::take(batch))?;
                batches_written.set(batches_written.get() + 1);
                *pending = 0;
            }
            Ok(())
        };
        let mut compact = Vec::new();
        for (merchant_id, merchant) in &layer.merchants {
            batch.insert(
                &merchant_key(KeyPrefix::Book, merchant_id)[..],
                encode_value(&merchant.book),
            );
            pending += 1;
            for (first_seq, block) in &merchant.blocks {
                batch.insert(
                    &merchant_seq_key(KeyPrefix::EntryBlock, merchant_id, *first_seq)[..],
                    block.as_slice(),
                );
                pending += 1;
            }
            if !merchant.keys.is_empty() {
                let mut keys: Vec<(u128, u64)> = merchant.keys.iter().map(|(hash, seq)| (*hash, *seq)).collect();
                keys.sort_unstable();
                batch.insert(
                    &merchant_seq_key(KeyPrefix::IdempotencyKeyRun, merchant_id, layer.through_seq)[..],
                    overlay::encode_run(&keys),
                );
                pending += 1;
                compact.push(*merchant_id);
            }
            flush(&mut batch, &mut pending, false)?;
        }
        for (key, value) in &layer.resources {
            match value {
                Some(value) => batch.insert(key.as_slice(), value.as_slice()),
                None => batch.remove(key.as_slice()),
            }
            pending += 1;
            flush(&mut batch, &mut pending, false)?;
        }
        let mut blocks = BlockWriter::new(covers_below);
        if !layer.disbursements.is_empty() {
            // A layer that holds a record covers more of the journal than the
            // last marker, so blocks under its number can only be an earlier
            // failed attempt's, which would otherwise mix with this one's.
            let own_blocks =
                disbursement_log::block_key(covers_below, 0)..=disbursement_log::block_key(covers_below, u32::MAX);
            for item in self.ledger.range(own_blocks) {
                batch.remove(item?.0);
                pending += 1;
            }
        }
        for (id, disbursement) in &layer.disbursements {
            match &disbursement.encoded {
                Some(encoded) => blocks.push(*id, encoded),
                None => blocks.push(*id, &encode_value(&disbursement.version)),
            }
        }
        for (key, block) in blocks.blocks() {
            batch.insert(&key[..], block);
            pending += 1;
            flush(&mut batch, &mut pending, false)?;
        }
        let staged = {
            let history = self.history.read().expect("history lock");
            let mut runs = history.batch();
            {
                let index = self.disbursements.read().expect("disbursement index lock");
                for (id, location) in &blocks.locations {
                    runs.push(&index, *id, *location);
                }
            }
            let mut sink = |key: Vec<u8>, chunk: Vec<u8>| {
                batch.insert(key, chunk);
                pending += 1;
                flush(&mut batch, &mut pending, false)
            };
            history.stage(runs, &mut sink)?
        };
        flush(&mut batch, &mut pending, true)?;
        #[cfg(test)]
        if batches_written.get() >= self.fail_after_batches.load(Ordering::Acquire) {
            return Err(StoreError::Io(io::Error::other(
                "checkpoint interrupted before its marker (test)",
            )));
        }
        // The runs' metadata and the open set go with the marker: a
        // checkpoint cut short leaves neither behind.
        let open = self.disbursements.read().expect("disbursement index lock").open();
        let mut marker = sled::Batch::default();
        marker.insert(&CHECKPOINT_SEQ_KEY, &covers_below.to_be_bytes());
        for (key, value) in HistoryRuns::marker_entries(&staged, &open) {
            marker.insert(key, value);
        }
        self.ledger.apply_batch(marker)?;
        for merchant_id in compact {
            self.compact_key_runs(&merchant_id)?;
        }
        // Before the layer leaves the overlay: a reader that misses a key
        // there then sees the new generation and rereads the runs.
        self.key_runs_generation.fetch_add(1, Ordering::AcqRel);
        self.db.flush()?;
        fsync_tree(&self.path)?;
        Ok(staged)
    }

    /// Merges a merchant's key runs into one once there are too many, so a
    /// lookup reads a bounded number of runs.
    fn compact_key_runs(&self, merchant_id: &Uuid) -> Result<(), StoreError> {
        let runs: Vec<(sled::IVec, sled::IVec)> = self
            .ledger
            .scan_prefix(merchant_key(KeyPrefix::IdempotencyKeyRun, merchant_id))
            .collect::<Result<_, _>>()?;
        if runs.len() <= limits::IDEMPOTENCY_RUNS_MAX {
            return Ok(());
        }
        let mut keys: Vec<(u128, u64)> = runs.iter().flat_map(|(_, run)| overlay::decode_run(run)).collect();
        keys.sort_unstable();
        let mut batch = sled::Batch::default();
        for (key, _) in &runs[..runs.len() - 1] {
            batch.remove(key.clone());
        }
        let (newest, _) = &runs[runs.len() - 1];
        batch.insert(newest.clone(), overlay::encode_run(&keys));
        self.ledger.apply_batch(batch)?;
        Ok(())
    }

    /// A disbursement by id: the overlay's newest version, else the block
    /// the index points to.
    pub fn disbursement(&self, id: &Uuid) -> Result<Option<Disbursement>, StoreError> {
        {
            let overlay = self.overlay.lock().expect("overlay lock");
            let flushing = overlay.flushing.as_ref().and_then(|f| f.disbursements.get(id));
            if let Some(found) = overlay.active.disbursements.get(id).or(flushing) {
                return Ok(Some(Disbursement::clone(&found.version)));
            }
        }
        let location = self.history.read().expect("history lock").location(id)?;
        let Some(location) = location else {
            return Ok(None);
        };
        let key = location.block_key();
        let block = self.ledger.get(key)?.ok_or_else(|| corrupt_block(&key))?;
        let encoded = disbursement_log::version_at(&block, location.offset).ok_or_else(|| corrupt_block(&key))?;
        Ok(Some(decode_value(encoded)?))
    }

    /// A disbursement by ref code.
    pub fn disbursement_by_ref(&self, ref_code: &str) -> Result<Option<Disbursement>, StoreError> {
        match self.disbursement_id_by_ref(ref_code)? {
            Some(id) => Ok(self.disbursement(&id)?.filter(|d| d.ref_code == ref_code)),
            None => Ok(None),
        }
    }

    /// True when a ref code is taken (or shares its 128-bit hash with one that is).
    pub fn disbursement_ref_exists(&self, ref_code: &str) -> Result<bool, StoreError> {
        Ok(self.disbursement_id_by_ref(ref_code)?.is_some())
    }

    fn disbursement_id_by_ref(&self, ref_code: &str) -> Result<Option<Uuid>, StoreError> {
        let hash = self.key_hash(ref_code);
        let recent = self
            .disbursements
            .read()
            .expect("disbursement index lock")
            .id_by_ref(hash);
        match recent {
            Some(id) => Ok(Some(id)),
            None => self.history.read().expect("history lock").id_by_ref(hash),
        }
    }

    /// The disbursement a merchant created with an idempotency key.
    pub fn disbursement_by_key(&self, merchant_id: &Uuid, key: &str) -> Result<Option<Disbursement>, StoreError> {
        let hash = self.key_hash(key);
        let recent = self
            .disbursements
            .read()
            .expect("disbursement index lock")
            .id_by_key(merchant_id, hash);
        let id = match recent {
            Some(id) => Some(id),
            None => self
                .history
                .read()
                .expect("history lock")
                .id_by_key(merchant_id, hash)?,
        };
        match id {
            Some(id) => Ok(self.disbursement(&id)?.filter(|d| d.idempotency_key == key)),
            None => Ok(None),
        }
    }

    /// A merchant's disbursement idempotency key hashes, or `None` when
    /// there are more than `limit`.
    pub fn disbursement_key_hashes(
        &self,
        merchant_id: &Uuid,
        limit: usize,
    ) -> Option<crate::sharded::ShardedSet<u128>> {
        let recent = self
            .disbursements
            .read()
            .expect("disbursement index lock")
            .key_hashes(merchant_id);
        // An unreadable history only means "not all known": keys are then
        // looked up one by one.
        let stored = match self
            .history
            .read()
            .expect("history lock")
            .key_hashes(merchant_id, limit)
        {
            Ok(stored) => stored?,
            Err(error) => {
                tracing::error!(%error, "disbursement key history unreadable");
                return None;
            }
        };
        let all: crate::sharded::ShardedSet<u128> = recent.into_iter().chain(stored).collect();
        (all.len() <= limit).then_some(all)
    }

    /// A merchant's disbursements created in `[from_ms, to_ms)`, newest first,
    /// that pass `keep`: the `offset`..`offset + limit` slice and the total.
    pub fn merchant_disbursements(
        &self,
        merchant_id: &Uuid,
        from_ms: i64,
        to_ms: i64,
        keep: impl Fn(&Disbursement) -> bool,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Disbursement>, usize), StoreError> {
        let mut created = self
            .disbursements
            .read()
            .expect("disbursement index lock")
            .created_between(merchant_id, from_ms, to_ms);
        created.extend(
            self.history
                .read()
                .expect("history lock")
                .created_between(merchant_id, from_ms, to_ms)?,
        );
        created.sort_unstable();
        created.dedup();
        let ids = created.into_iter().map(|(_, id)| id);
        let mut page = Vec::new();
        let mut total = 0;
        for id in ids.into_iter().rev() {
            let Some(disbursement) = self.disbursement(&id)?.filter(&keep) else {
                continue;
            };
            if total >= offset && page.len() < limit {
                page.push(disbursement);
            }
            total += 1;
        }
        Ok((page, total))
    }

    /// How many durable disbursements are not yet final.
    pub fn open_disbursement_count(&self) -> usize {
        self.disbursements.read().expect("disbursement index lock").open_count()
    }

    /// Disbursements not yet in a final status, to resume after a restart.
    pub fn open_disbursements(&self) -> Result<Vec<Disbursement>, StoreError> {
        let ids = self.disbursements.read().expect("disbursement index lock").open();
        let mut open = Vec::with_capacity(ids.len());
        for id in ids {
            open.extend(self.disbursement(&id)?.filter(|d| !d.status.is_terminal()));
        }
        Ok(open)
    }

    /// A beneficiary by id (deleted ones included).
    pub fn beneficiary(&self, id: &Uuid) -> Result<Option<Beneficiary>, StoreError> {
        match self.resource(&prefixed(KeyPrefix::Beneficiary, &[id.as_bytes()]))? {
            Some(bytes) => Ok(Some(decode_value(&bytes)?)),
            None => Ok(None),
        }
    }

    /// A merchant's beneficiaries, deleted ones included, newest first.
    pub fn merchant_beneficiaries(&self, merchant_id: &Uuid) -> Result<Vec<Beneficiary>, StoreError> {
        let (start, end) = merchant_range(KeyPrefix::BeneficiaryByMerchant, merchant_id);
        let ids = self.indexed_ids(&start, &end)?;
        self.load_all(KeyPrefix::Beneficiary, ids.into_iter().rev())
    }

    fn decoded<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, StoreError> {
        match self.resource(key)? {
            Some(bytes) => Ok(Some(decode_value(&bytes)?)),
            None => Ok(None),
        }
    }

    fn by_index<T: serde::de::DeserializeOwned>(
        &self,
        index_key: &[u8],
        prefix: KeyPrefix,
    ) -> Result<Option<T>, StoreError> {
        match self.resource(index_key)? {
            Some(id) => self.decoded(&prefixed(prefix, &[&id])),
            None => Ok(None),
        }
    }

    /// An order by id.
    pub fn order(&self, id: &Uuid) -> Result<Option<Order>, StoreError> {
        self.decoded(&prefixed(KeyPrefix::Order, &[id.as_bytes()]))
    }

    /// An order by ref code.
    pub fn order_by_ref(&self, ref_code: &str) -> Result<Option<Order>, StoreError> {
        self.by_index(
            &prefixed(KeyPrefix::OrderByRefCode, &[ref_code.as_bytes()]),
            KeyPrefix::Order,
        )
    }

    /// True when an order ref code is taken.
    pub fn order_ref_exists(&self, ref_code: &str) -> Result<bool, StoreError> {
        Ok(self
            .resource(&prefixed(KeyPrefix::OrderByRefCode, &[ref_code.as_bytes()]))?
            .is_some())
    }

    /// A merchant's order by its own id, in one API.
    pub fn order_by_merchant_order_id(
        &self,
        merchant_id: &Uuid,
        source: Source,
        merchant_order_id: &str,
    ) -> Result<Option<Order>, StoreError> {
        self.by_index(&order_id_key(merchant_id, source, merchant_order_id), KeyPrefix::Order)
    }

    /// The order a merchant created with an `Idempotency-Key`.
    pub fn order_by_idempotency_key(&self, merchant_id: &Uuid, key: &str) -> Result<Option<Order>, StoreError> {
        let key_hash = self.key_hash(key).to_be_bytes();
        let found: Option<Order> = self.by_index(
            &prefixed(KeyPrefix::OrderByIdempotencyKey, &[merchant_id.as_bytes(), &key_hash]),
            KeyPrefix::Order,
        )?;
        Ok(found.filter(|o| o.idempotency.as_ref().is_some_and(|(k, _)| k == key)))
    }

    /// A merchant's orders created in `[from_ms, to_ms)`, newest first, that
    /// pass `keep`: the `offset`..`offset + limit` slice and the total.
    pub fn merchant_orders(
        &self,
        merchant_id: &Uuid,
        from_ms: i64,
        to_ms: i64,
        keep: impl Fn(&Order) -> bool,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Order>, usize), StoreError> {
        let ids = self.ids_in_time_range(KeyPrefix::OrderByMerchant, merchant_id, from_ms, to_ms)?;
        self.newest_page(KeyPrefix::Order, ids, keep, offset, limit)
    }

    /// PENDING orders whose expiry is at or before `now_ms`, oldest first, at most `limit`.
    pub fn orders_due(&self, now_ms: i64, limit: usize) -> Result<Vec<Uuid>, StoreError> {
        let end = prefixed(
            KeyPrefix::PendingOrderByExpiry,
            &[&((now_ms.max(0) as u64) + 1).to_be_bytes()],
        );
        let mut ids = self.indexed_ids(&[KeyPrefix::PendingOrderByExpiry.byte()], &end)?;
        ids.truncate(limit);
        Ok(ids)
    }

    /// A refund by id.
    pub fn refund(&self, id: &Uuid) -> Result<Option<Refund>, StoreError> {
        self.decoded(&prefixed(KeyPrefix::Refund, &[id.as_bytes()]))
    }

    /// The refund a merchant created with an idempotency key.
    pub fn refund_by_key(&self, merchant_id: &Uuid, key: &str) -> Result<Option<Refund>, StoreError> {
        let key_hash = self.key_hash(key).to_be_bytes();
        let found: Option<Refund> = self.by_index(
            &prefixed(KeyPrefix::RefundByIdempotencyKey, &[merchant_id.as_bytes(), &key_hash]),
            KeyPrefix::Refund,
        )?;
        Ok(found.filter(|r| r.idempotency_key == key))
    }

    /// An order's refunds, oldest first.
    pub fn order_refunds(&self, order_id: &Uuid) -> Result<Vec<Refund>, StoreError> {
        let (start, end) = merchant_range(KeyPrefix::RefundByOrder, order_id);
        let ids = self.indexed_ids(&start, &end)?;
        self.load_all(KeyPrefix::Refund, ids)
    }

    /// Refunds still PENDING, to resume after a restart.
    pub fn open_refunds(&self) -> Result<Vec<Refund>, StoreError> {
        let (start, end) = prefix_range(KeyPrefix::PendingRefund);
        let ids = self.indexed_ids(&start, &end)?;
        self.load_all(KeyPrefix::Refund, ids)
    }

    /// The hashes under which a merchant's keys of one kind are indexed
    /// (`prefix`: `OrderByMerchantOrderId` or `OrderByIdempotencyKey`), or
    /// `None` when there are more than `limit`.
    pub fn merchant_key_hashes(
        &self,
        prefix: KeyPrefix,
        merchant_id: &Uuid,
        limit: usize,
    ) -> Result<Option<crate::sharded::ShardedSet<u128>>, StoreError> {
        let start = prefixed(prefix, &[merchant_id.as_bytes()]);
        let mut end = start.clone();
        end.push(0xFF);
        end.extend_from_slice(&[0xFF; 32]);
        let mut hashes = crate::sharded::ShardedSet::default();
        for (key, _) in self.resource_range(&start, &end)? {
            if hashes.len() >= limit {
                return Ok(None);
            }
            hashes.insert(index_suffix_hash(prefix, &key[17..]));
        }
        Ok(Some(hashes))
    }

    /// A webhook event by id.
    pub fn webhook_event(&self, id: &Uuid) -> Result<Option<WebhookEvent>, StoreError> {
        self.decoded(&prefixed(KeyPrefix::WebhookEvent, &[id.as_bytes()]))
    }

    /// Events due at or before `now_ms`, with the time each is due, oldest first.
    pub fn webhooks_due(&self, now_ms: i64, limit: usize) -> Result<Vec<(i64, Uuid)>, StoreError> {
        let end = prefixed(
            KeyPrefix::WebhookEventDue,
            &[&((now_ms.max(0) as u64) + 1).to_be_bytes()],
        );
        Ok(self
            .resource_range(&[KeyPrefix::WebhookEventDue.byte()], &end)?
            .into_iter()
            .take(limit)
            .map(|(key, _)| {
                let due = read_u64(&key[1..9]) as i64;
                (due, Uuid::from_slice(&key[9..25]).unwrap_or_default())
            })
            .collect())
    }

    /// A merchant's delivery attempts, newest first, that pass `keep`: the
    /// `offset`..`offset + limit` slice and the total.
    pub fn merchant_webhook_attempts(
        &self,
        merchant_id: &Uuid,
        keep: impl Fn(&WebhookAttempt) -> bool,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<WebhookAttempt>, usize), StoreError> {
        let start = prefixed(KeyPrefix::WebhookAttempt, &[merchant_id.as_bytes()]);
        let end = prefixed(KeyPrefix::WebhookAttempt, &[merchant_id.as_bytes(), &[0xFF; 40]]);
        let mut page = Vec::new();
        let mut total = 0;
        for (_, value) in self.resource_range(&start, &end)?.into_iter().rev() {
            let attempt: WebhookAttempt = decode_value(&value)?;
            if !keep(&attempt) {
                continue;
            }
            if total >= offset && page.len() < limit {
                page.push(attempt);
            }
            total += 1;
        }
        Ok((page, total))
    }

    /// A merchant's paid orders no settlement has taken, paid before `before_ms`.
    pub fn unsettled_orders(&self, merchant_id: &Uuid, before_ms: i64) -> Result<Vec<Order>, StoreError> {
        let ids = self.ids_in_time_range(KeyPrefix::UnsettledOrder, merchant_id, 0, before_ms)?;
        self.load_all(KeyPrefix::Order, ids)
    }

    /// A MANUAL merchant's refunds no settlement has deducted, created before `before_ms`.
    pub fn unsettled_refunds(&self, merchant_id: &Uuid, before_ms: i64) -> Result<Vec<Refund>, StoreError> {
        let ids = self.ids_in_time_range(KeyPrefix::UnsettledRefund, merchant_id, 0, before_ms)?;
        self.load_all(KeyPrefix::Refund, ids)
    }

    /// A settlement by id.
    pub fn settlement(&self, id: &Uuid) -> Result<Option<Settlement>, StoreError> {
        self.decoded(&prefixed(KeyPrefix::Settlement, &[id.as_bytes()]))
    }

    /// True when a settlement ref code is taken.
    pub fn settlement_ref_exists(&self, ref_code: &str) -> Result<bool, StoreError> {
        Ok(self
            .resource(&prefixed(KeyPrefix::SettlementByRefCode, &[ref_code.as_bytes()]))?
            .is_some())
    }

    /// How many settlement ref codes start with `prefix`.
    pub fn settlement_refs_with_prefix(&self, prefix: &str) -> Result<usize, StoreError> {
        let start = prefixed(KeyPrefix::SettlementByRefCode, &[prefix.as_bytes()]);
        let end = prefixed(KeyPrefix::SettlementByRefCode, &[prefix.as_bytes(), &[0xFF]]);
        Ok(self.resource_range(&start, &end)?.len())
    }

    /// A merchant's settlements, newest first: the `offset`..`offset + limit` slice and the total.
    pub fn merchant_settlements(
        &self,
        merchant_id: &Uuid,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<Settlement>, usize), StoreError> {
        let (start, end) = merchant_range(KeyPrefix::SettlementByMerchant, merchant_id);
        let ids = self.indexed_ids(&start, &end)?;
        self.newest_page(KeyPrefix::Settlement, ids, |_| true, offset, limit)
    }

    /// Settlements not yet final, to resume after a restart.
    pub fn open_settlements(&self) -> Result<Vec<Settlement>, StoreError> {
        let (start, end) = prefix_range(KeyPrefix::OpenSettlement);
        let ids = self.indexed_ids(&start, &end)?;
        self.load_all(KeyPrefix::Settlement, ids)
    }

    /// The ids ending the index keys in `[start, end)`, in key order.
    fn indexed_ids(&self, start: &[u8], end: &[u8]) -> Result<Vec<Uuid>, StoreError> {
        Ok(self
            .resource_range(start, end)?
            .into_iter()
            .map(|(key, _)| Uuid::from_slice(&key[key.len() - 16..]).unwrap_or_default())
            .collect())
    }

    /// The ids of a `prefix`+owner+time ms+id index with times in `[from_ms, to_ms)`, oldest first.
    fn ids_in_time_range(
        &self,
        prefix: KeyPrefix,
        owner: &Uuid,
        from_ms: i64,
        to_ms: i64,
    ) -> Result<Vec<Uuid>, StoreError> {
        let from = (from_ms.max(0) as u64).to_be_bytes();
        let to = (to_ms.max(0) as u64).to_be_bytes();
        self.indexed_ids(
            &prefixed(prefix, &[owner.as_bytes(), &from]),
            &prefixed(prefix, &[owner.as_bytes(), &to]),
        )
    }

    /// The records `record_prefix`+id of `ids`, in order; ids without one are skipped.
    fn load_all<T: serde::de::DeserializeOwned>(
        &self,
        record_prefix: KeyPrefix,
        ids: impl IntoIterator<Item = Uuid>,
    ) -> Result<Vec<T>, StoreError> {
        let mut found = Vec::new();
        for id in ids {
            if let Some(record) = self.decoded(&prefixed(record_prefix, &[id.as_bytes()]))? {
                found.push(record);
            }
        }
        Ok(found)
    }

    /// Of the records of `ids_oldest_first` that pass `keep`, newest first:
    /// the `offset`..`offset + limit` slice and how many passed.
    fn newest_page<T: serde::de::DeserializeOwned>(
        &self,
        record_prefix: KeyPrefix,
        ids_oldest_first: Vec<Uuid>,
        keep: impl Fn(&T) -> bool,
        offset: usize,
        limit: usize,
    ) -> Result<(Vec<T>, usize), StoreError> {
        let mut page = Vec::new();
        let mut total = 0;
        for id in ids_oldest_first.into_iter().rev() {
            let Some(record) = self.decoded::<T>(&prefixed(record_prefix, &[id.as_bytes()]))? else {
                continue;
            };
            if !keep(&record) {
                continue;
            }
            if total >= offset && page.len() < limit {
                page.push(record);
            }
            total += 1;
        }
        Ok((page, total))
    }

    /// Flushes sled without the fsync (on shutdown after a checkpoint).
    pub fn flush(&self) -> Result<(), StoreError> {
        self.db.flush()?;
        Ok(())
    }
}

/// The encodings of the disbursement versions a record carries, in the
/// order the record lists them (none for a record read back from disk).
struct EncodedVersions<'a> {
    payload: &'a [u8],
    spans: std::slice::Iter<'a, std::ops::Range<usize>>,
}

impl<'a> EncodedVersions<'a> {
    fn next(&mut self) -> Option<&'a [u8]> {
        let span = self.spans.next()?;
        self.payload.get(span.clone())
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
        JournalRecord::PaymentVendorSaved(PaymentVendorConfig { name, .. }) => format!("vendor:{name}").into_bytes(),
        JournalRecord::VendorRoutingSaved(VendorRouting {
            organization_id,
            method,
            ..
        }) => format!("route:{organization_id}:{}", method.as_str()).into_bytes(),
        JournalRecord::PayoutRoutingSaved(PayoutRouting {
            organization_id,
            channel,
            ..
        }) => format!("payout-route:{organization_id}:{}", channel.as_str()).into_bytes(),
        _ => unreachable!("only catalog records have catalog keys"),
    }
}

/// fsyncs every file and directory under `path`: sled's flush uses
/// `sync_file_range`, which does not make data or metadata durable.
///
/// sled's own threads replace snapshot files while this runs, so a file
/// listed and then gone is skipped: what sled deleted holds nothing it needs.
fn fsync_tree(path: &Path) -> io::Result<()> {
    let skip_vanished = |result: io::Result<()>| match result {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    };
    for item in fs::read_dir(path)? {
        let item = item?;
        let Ok(kind) = item.file_type() else { continue };
        if kind.is_dir() {
            skip_vanished(fsync_tree(&item.path()))?;
        } else if kind.is_file() {
            skip_vanished(fs::File::open(item.path()).and_then(|file| file.sync_all()))?;
        }
    }
    fs::File::open(path)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::{wallet_credit, MerchantBook};
    use crate::money::MinorUnits;

    #[test]
    fn entries_split_into_blocks_read_back_in_order_across_checkpoints_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let merchant = Uuid::new_v4();
        let mut book = MerchantBook::new(merchant);
        let mut seq = 0u64;
        let mut post = |store: &Store, count: usize, book: &mut MerchantBook| {
            for _ in 0..count {
                let memo = "x".repeat(200);
                let entry = book.prepare(wallet_credit(MinorUnits::new(1), memo, None), 0).unwrap();
                book.apply(&entry).unwrap();
                seq += 1;
                store.apply_entry(seq, &entry, &record::encode_entry(&entry)).unwrap();
            }
        };
        {
            let store = Store::open(dir.path()).unwrap();
            post(&store, 1500, &mut book);
            store.checkpoint().unwrap();
            post(&store, 1500, &mut book);
            let layer_blocks = store.overlay.lock().unwrap().active.merchants[&merchant].blocks.len();
            assert!(layer_blocks > 1, "a busy merchant's entries are cut into blocks");
            let entries = store.entries_after(&merchant, 0).unwrap();
            assert_eq!(entries.len(), 3000);
            assert!(entries.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));
            assert_eq!(store.entries_after(&merchant, 2222).unwrap()[0].seq, 2223);
            store.checkpoint().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let entries = store.entries_after(&merchant, 0).unwrap();
        assert_eq!(entries.len(), 3000);
        assert!(entries.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));
        assert_eq!(store.entry(&merchant, 1777).unwrap().unwrap().seq, 1777);
        let blobs = fs::read_dir(dir.path().join("blobs")).map_or(0, |files| files.count());
        assert_eq!(blobs, 0, "no tree node grew past sled's blob threshold");
        assert_eq!(
            store
                .durable_book(&merchant)
                .unwrap()
                .balance(crate::ledger::Account::Wallet)
                .get(),
            3000
        );
    }

    /// A checkpoint that stops after some of its batches (as a crash would)
    /// leaves sled with part of a layer and the old marker; replaying the
    /// journal's records over it gives exactly the state of an unbroken run.
    #[test]
    fn a_checkpoint_cut_between_batches_is_repaired_by_replay() {
        use crate::domain::{Beneficiary, Destination, VerificationStatus};
        let dir = tempfile::tempdir().unwrap();
        let merchants = [Uuid::new_v4(), Uuid::new_v4()];
        // The journal, as the records it would hold.
        let mut records: Vec<JournalRecord> = Vec::new();
        for (index, merchant) in merchants.iter().enumerate() {
            let mut book = MerchantBook::new(*merchant);
            for n in 0..(1500 * (index + 1)) {
                let proposal = wallet_credit(MinorUnits::new(1), "x".repeat(100), Some(format!("k{n}")));
                let entry = book.prepare(proposal, 0).unwrap();
                book.apply(&entry).unwrap();
                records.push(JournalRecord::EntryPosted(entry));
            }
        }
        let beneficiaries: Vec<Beneficiary> = (0..1500)
            .map(|n| Beneficiary {
                id: Uuid::new_v4(),
                organization_id: Uuid::nil(),
                merchant_id: merchants[n % 2],
                label: None,
                destination: Destination::Ewallet {
                    provider: "OVO".into(),
                    phone: format!("62812{n:08}"),
                },
                verification_status: VerificationStatus::Pending,
                verified_name: None,
                is_default: false,
                is_enabled: true,
                deleted_at_ms: None,
                created_at_ms: n as i64,
                updated_at_ms: n as i64,
            })
            .collect();
        records.extend(
            beneficiaries
                .chunks(10)
                .map(|chunk| JournalRecord::BeneficiariesSaved(chunk.to_vec())),
        );
        // Disbursements: every one PENDING, then every third SUCCESS (a
        // second version, in the same layer).
        let disbursements: Vec<Disbursement> = (0..3000).map(|n| test_disbursement(merchants[n % 2], n)).collect();
        for disbursement in &disbursements {
            records.push(JournalRecord::DisbursementUpdated(Arc::new(disbursement.clone())));
        }
        for disbursement in disbursements.iter().step_by(3) {
            let mut done = disbursement.clone();
            done.status = crate::domain::DisbursementStatus::Success;
            records.push(JournalRecord::DisbursementUpdated(Arc::new(done)));
        }
        let apply_all = |store: &Store, from_seq: u64| {
            for (index, record) in records.iter().enumerate() {
                let seq = index as u64 + 1;
                if seq >= from_seq {
                    store.apply(seq, record, &record.encode()).unwrap();
                }
            }
        };
        {
            let store = Store::open(dir.path()).unwrap();
            apply_all(&store, 1);
            // The first batch holds both merchants and the first resources.
            store.fail_after_batches.store(1, Ordering::Release);
            assert!(
                store.checkpoint().is_err(),
                "the checkpoint is cut after its first batch"
            );
            assert_eq!(store.checkpoint_seq().unwrap(), 0, "the marker did not move");
        }
        // Restart: replay everything from the old marker, then checkpoint.
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(
            store.durable_book(&merchants[0]).unwrap().last_seq,
            1500,
            "the cut checkpoint left its first batch (books and entries) behind"
        );
        let from = store.checkpoint_seq().unwrap().max(1);
        apply_all(&store, from);
        store.checkpoint().unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        for (index, merchant) in merchants.iter().enumerate() {
            let expected = 1500 * (index as u64 + 1);
            let entries = store.entries_after(merchant, 0).unwrap();
            assert_eq!(entries.len() as u64, expected);
            assert!(entries.iter().enumerate().all(|(i, e)| e.seq == i as u64 + 1));
            let book = store.durable_book(merchant).unwrap();
            assert_eq!(book.last_seq, expected);
            assert_eq!(book.balance(crate::ledger::Account::Wallet).get(), expected as i64);
            let index_keys = store.idempotency_index(merchant, usize::MAX).unwrap().unwrap();
            assert_eq!(index_keys.len() as u64, expected, "every key indexed once");
            assert_eq!(store.merchant_beneficiaries(merchant).unwrap().len(), 750);
            let (page, total) = store
                .merchant_disbursements(merchant, 0, i64::MAX, |_| true, 0, 10)
                .unwrap();
            assert_eq!(total, 1500);
            assert_eq!(page[0].id, disbursements[2998 + index].id, "newest first");
            assert_eq!(store.disbursement_key_hashes(merchant, usize::MAX).unwrap().len(), 1500);
        }
        assert_disbursements_stored(&store, &disbursements);
    }

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

        fs::write(new.path().join("format"), "3\n").unwrap();
        let refused = check_data_format(new.path()).unwrap_err().to_string();
        assert!(refused.contains("data format 3"), "{refused}");
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

    /// Disbursements read the same from the overlay, from blocks after a
    /// checkpoint, with newer versions over older blocks, and after reopening.
    #[test]
    fn disbursements_are_found_in_the_overlay_in_blocks_and_after_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let merchant = Uuid::new_v4();
        let disbursements: Vec<Disbursement> = (0..3000).map(|n| test_disbursement(merchant, n)).collect();
        let mut seq = 0u64;
        let mut apply = |store: &Store, disbursement: &Disbursement| {
            seq += 1;
            let record = JournalRecord::DisbursementUpdated(Arc::new(disbursement.clone()));
            store.apply(seq, &record, &record.encode()).unwrap();
        };
        {
            let store = Store::open(dir.path()).unwrap();
            for disbursement in &disbursements {
                apply(&store, disbursement);
            }
            store.checkpoint().unwrap();
            // The second versions: half still in the overlay, half in newer blocks.
            for (n, disbursement) in disbursements.iter().enumerate().step_by(3) {
                let mut done = disbursement.clone();
                done.status = crate::domain::DisbursementStatus::Success;
                apply(&store, &done);
                if n == 1500 {
                    store.checkpoint().unwrap();
                }
            }
            assert_disbursements_stored(&store, &disbursements);
            store.checkpoint().unwrap();
            assert_disbursements_stored(&store, &disbursements);
            // Nothing new: the same checkpoint number, and its blocks stay.
            store.checkpoint().unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_disbursements_stored(&store, &disbursements);
        // Every second one FAILED, written to blocks by a checkpoint that
        // dies before its marker: after a restart the blocks are ignored,
        // and replaying the journal after the marker brings the versions back.
        let marker = store.checkpoint_seq().unwrap();
        let mut failed = Vec::new();
        for disbursement in disbursements.iter().skip(1).step_by(3).take(100) {
            let mut gone = disbursement.clone();
            gone.status = crate::domain::DisbursementStatus::Failed;
            apply(&store, &gone);
            failed.push(JournalRecord::DisbursementUpdated(Arc::new(gone)));
        }
        store.fail_after_batches.store(1, Ordering::Release);
        assert!(store.checkpoint().is_err());
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.checkpoint_seq().unwrap(), marker);
        let first_failed = disbursements[1].id;
        let status = store.disbursement(&first_failed).unwrap().unwrap().status;
        assert_eq!(
            status,
            crate::domain::DisbursementStatus::Pending,
            "the cut blocks are not read"
        );
        for (n, record) in failed.iter().enumerate() {
            store.apply(marker + n as u64, record, &record.encode()).unwrap();
        }
        let status = store.disbursement(&first_failed).unwrap().unwrap().status;
        assert_eq!(status, crate::domain::DisbursementStatus::Failed);
        assert_eq!(store.open_disbursements().unwrap().len(), 1900);
        store.checkpoint().unwrap();
        drop(store);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.open_disbursements().unwrap().len(), 1900);
        let status = store.disbursement(&first_failed).unwrap().unwrap().status;
        assert_eq!(status, crate::domain::DisbursementStatus::Failed);
        let (page, total) = store
            .merchant_disbursements(&merchant, 1000, 2000, |d| d.status.is_terminal(), 0, 5)
            .unwrap();
        assert_eq!(
            total, 333,
            "created in [1000, 2000) and final (the FAILED ones are all below 300)"
        );
        let created: Vec<i64> = page.iter().map(|d| d.created_at_ms).collect();
        assert_eq!(created, [1998, 1995, 1992, 1989, 1986]);
        // No tree node grew past sled's blob threshold (blob files pile up
        // and every checkpoint fsyncs each one).
        let blobs = fs::read_dir(dir.path().join("blobs")).map_or(0, |files| files.count());
        assert_eq!(blobs, 0, "sled wrote blob files");
    }
}
