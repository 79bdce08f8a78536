//! Older data dirs brought to this layout when the store opens: the
//! disbursement runs filled from a dir that kept only blocks, every other
//! kind moved from one sled key per record and index (orders, webhook
//! events and delivery attempts in data format 3; refunds, settlements,
//! beneficiaries and batches in format 4) into its blocks and runs, and
//! ledger entries' idempotency keys (one value a merchant and checkpoint
//! up to format 6) into their runs. Each step is whole or not at all: its
//! runs' metadata and format key go in one sled batch, flushed and
//! fsynced, and a step cut short is done again from the start at the next
//! open.

use super::blocks::{self, BlockWriter, Location};
use super::checkpoint::fsync_tree;
use super::history::{self, Hashes, HistoryRuns, Indexed, Kind, LoadedOpenSet, OpenSetWrite};
use super::indexing::{
    attempt_indexed, batch_indexed, beneficiary_indexed, disbursement_indexed, event_indexed, order_indexed,
    refund_indexed, settlement_indexed,
};
use super::keys::KeyPrefix;
use super::record::decode_value;
use super::stored::StoredEvent;
use super::{corrupt_block, Store, StoreError};
use crate::domain::{Beneficiary, Disbursement, DisbursementBatch, Order, Refund, Settlement, WebhookAttempt};
use foldhash::HashMap;
use uuid::Uuid;

/// The prefixes under which data format 3 kept orders and their indexes.
const KEYED_ORDER_PREFIXES: [KeyPrefix; 5] = [
    KeyPrefix::Order,
    KeyPrefix::OrderByRefCode,
    KeyPrefix::OrderByMerchant,
    KeyPrefix::OrderByMerchantOrderId,
    KeyPrefix::OrderByIdempotencyKey,
];

/// Writes per sled batch while moving orders: sled stalls readers for a batch.
const WRITES_PER_BATCH: usize = 4096;

impl Store {
    /// Fills the runs of a kind the data dir's runs never held (its format
    /// key is absent): from its blocks, or from the keys it was kept in.
    /// A new data dir takes the same path, with nothing to move.
    pub(super) fn fill_history(&self, kind: Kind, checkpoint: u64) -> Result<(), StoreError> {
        let (moved, name) = match kind {
            Kind::Disbursements => return self.fill_disbursement_history(checkpoint),
            Kind::Orders => {
                let moved = self.move_keyed_to_blocks(kind, KeyPrefix::Order, checkpoint, |order: &Order| {
                    (Some(order.id), order_indexed(order, true), self.order_hashes(order))
                })?;
                self.remove_prefixes(&KEYED_ORDER_PREFIXES)?;
                (moved, "orders")
            }
            Kind::WebhookEvents => {
                let moved =
                    self.move_keyed_to_blocks(kind, KeyPrefix::WebhookEvent, checkpoint, |event: &StoredEvent| {
                        (Some(event.id), event_indexed(event), history::NO_HASHES)
                    })?;
                self.remove_prefixes(&[KeyPrefix::WebhookEvent])?;
                (moved, "webhook events")
            }
            Kind::WebhookAttempts => {
                // Keyed by merchant, time, event and attempt: each gets an
                // id as the applier draws one, in key order, so attempts of
                // one millisecond keep their order.
                let moved = self.move_keyed_to_blocks(
                    kind,
                    KeyPrefix::WebhookAttempt,
                    checkpoint,
                    |attempt: &WebhookAttempt| (None, attempt_indexed(Uuid::now_v7(), attempt), history::NO_HASHES),
                )?;
                self.remove_prefixes(&[KeyPrefix::WebhookAttempt])?;
                (moved, "webhook delivery attempts")
            }
            Kind::WebhookDeliveries => {
                // Never kept as keys: its first runs are empty.
                let mut runs = self.kind(kind).runs.write().expect("history lock");
                let batch = runs.batch();
                self.write_first_runs(&mut runs, batch, OpenSetWrite::Nothing)?;
                (0, "webhook deliveries")
            }
            Kind::Refunds => {
                let moved = self.move_keyed_to_blocks(kind, KeyPrefix::Refund, checkpoint, |refund: &Refund| {
                    (Some(refund.id), refund_indexed(refund), self.refund_hashes(refund))
                })?;
                self.remove_prefixes(&[
                    KeyPrefix::Refund,
                    KeyPrefix::RefundByIdempotencyKey,
                    KeyPrefix::RefundByOrder,
                ])?;
                (moved, "refunds")
            }
            Kind::Settlements => {
                let moved = self.move_keyed_to_blocks(kind, KeyPrefix::Settlement, checkpoint, |s: &Settlement| {
                    (Some(s.id), settlement_indexed(s, true), self.settlement_hashes(s))
                })?;
                self.remove_prefixes(&[
                    KeyPrefix::Settlement,
                    KeyPrefix::SettlementByMerchant,
                    KeyPrefix::SettlementByRefCode,
                ])?;
                (moved, "settlements")
            }
            Kind::Beneficiaries => {
                let moved =
                    self.move_keyed_to_blocks(kind, KeyPrefix::Beneficiary, checkpoint, |b: &Beneficiary| {
                        (Some(b.id), beneficiary_indexed(b), history::NO_HASHES)
                    })?;
                self.remove_prefixes(&[KeyPrefix::Beneficiary, KeyPrefix::BeneficiaryByMerchant])?;
                (moved, "beneficiaries")
            }
            Kind::Batches => {
                let moved = self.move_keyed_to_blocks(
                    kind,
                    KeyPrefix::DisbursementBatch,
                    checkpoint,
                    |batch: &DisbursementBatch| (Some(batch.id), batch_indexed(batch), self.batch_hashes(batch)),
                )?;
                self.remove_prefixes(&[KeyPrefix::DisbursementBatch, KeyPrefix::DisbursementBatchByKey])?;
                (moved, "disbursement batches")
            }
        };
        if moved > 0 {
            tracing::info!(moved, kind = name, "records kept as keys moved into blocks");
        }
        Ok(())
    }

    /// Moves the idempotency keys of ledger entries, kept in one value a
    /// merchant and checkpoint up to data format 6, into the entry key runs
    /// (`entry_keys.rs`); flushed and fsynced. A new data dir takes the same
    /// path, with nothing to move.
    pub(super) fn fill_entry_keys(&self) -> Result<(), StoreError> {
        let moved = self.entry_keys.fill_from_merchant_runs(&self.ledger_tree())?;
        self.sled.flush()?;
        fsync_tree(&self.path)?;
        if moved > 0 {
            tracing::info!(moved, "ledger entry idempotency keys moved into runs");
        }
        Ok(())
    }

    /// Writes every checkpointed disbursement's index entries as the
    /// history's first runs, with the open set: the one time every block
    /// is read.
    pub(super) fn fill_disbursement_history(&self, checkpoint: u64) -> Result<(), StoreError> {
        let prefix = history::DISBURSEMENTS.blocks;
        let mut newest: HashMap<Uuid, (Disbursement, Location)> = HashMap::default();
        for item in self.ledger_tree().scan_prefix([prefix.byte()]) {
            let (key, block) = item?;
            let Some((written_by, part)) = blocks::parse_block_key(prefix, &key) else {
                continue;
            };
            if written_by > checkpoint {
                continue;
            }
            let versions = blocks::block_versions(&block).ok_or_else(|| corrupt_block(&key))?;
            for (offset, encoded) in versions {
                let disbursement: Disbursement = decode_value(encoded)?;
                let location = Location {
                    blocks: prefix,
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
        let disbursements = self.kind(Kind::Disbursements);
        let mut runs = disbursements.runs.write().expect("history lock");
        let mut batch = runs.batch();
        for (disbursement, location) in newest.values() {
            let version = disbursement_indexed(disbursement, true);
            batch.push_new(&version, self.disbursement_hashes(disbursement), *location);
        }
        let whole_open = OpenSetWrite::whole(&open);
        self.write_first_runs(&mut runs, batch, whole_open)?;
        drop(runs);
        disbursements
            .recent
            .write()
            .expect("disbursement index lock")
            .set_open(LoadedOpenSet {
                ids: open,
                ..Default::default()
            });
        Ok(())
    }

    /// Moves every record under `record_prefix` into `kind`'s blocks under
    /// the last checkpoint's number and indexes each as `index` says (with
    /// the id its key must hold, `prefix`+id, when it is keyed by id);
    /// replay after the marker lays newer versions over them as usual.
    /// Returns how many moved.
    fn move_keyed_to_blocks<T: super::stored::Stored>(
        &self,
        kind: Kind,
        record_prefix: KeyPrefix,
        checkpoint: u64,
        index: impl Fn(&T) -> (Option<Uuid>, Indexed, Hashes),
    ) -> Result<usize, StoreError> {
        let kind = self.kind(kind);
        let prefix = kind.spec().blocks;
        // Only a move cut short can have left blocks of the kind behind.
        let mut stale = sled::Batch::default();
        for item in self.ledger_tree().scan_prefix([prefix.byte()]).keys() {
            stale.remove(item?);
        }
        self.ledger_tree().apply_batch(stale)?;
        let mut writer = BlockWriter::new(prefix, checkpoint);
        let mut versions = Vec::new();
        for item in self.ledger_tree().scan_prefix([record_prefix.byte()]) {
            let (key, value) = item?;
            let record: T = decode_value(&value)?;
            let (keyed_by, version, hashes) = index(&record);
            if keyed_by.is_some_and(|id| key.len() != 17 || key[1..] != *id.as_bytes()) {
                return Err(corrupt_block(&key));
            }
            writer.push(version.id, &value);
            versions.push((version, hashes));
        }
        let mut sink = sled::Batch::default();
        let mut pending = 0;
        for (key, block) in writer.blocks() {
            sink.insert(&key[..], block);
            pending += 1;
            if pending == WRITES_PER_BATCH {
                self.ledger_tree().apply_batch(std::mem::take(&mut sink))?;
                pending = 0;
            }
        }
        self.ledger_tree().apply_batch(sink)?;
        let mut runs = kind.runs.write().expect("history lock");
        let mut batch = runs.batch();
        for ((version, hashes), (id, location)) in versions.iter().zip(&writer.locations) {
            debug_assert_eq!(version.id, *id);
            batch.push_new(version, *hashes, *location);
        }
        self.write_first_runs(&mut runs, batch, OpenSetWrite::Nothing)?;
        Ok(versions.len())
    }

    /// Removes every key under `prefixes` (what data format 3 kept of a
    /// kind, once its blocks and runs hold it).
    fn remove_prefixes(&self, prefixes: &[KeyPrefix]) -> Result<(), StoreError> {
        for prefix in prefixes.iter().copied() {
            let mut batch = sled::Batch::default();
            let mut pending = 0;
            for key in self.ledger_tree().scan_prefix([prefix.byte()]).keys() {
                batch.remove(key?);
                pending += 1;
                if pending == WRITES_PER_BATCH {
                    self.ledger_tree().apply_batch(std::mem::take(&mut batch))?;
                    pending = 0;
                }
            }
            self.ledger_tree().apply_batch(batch)?;
        }
        self.sled.flush()?;
        Ok(())
    }

    /// Writes a kind's first runs: chunks, then their metadata, format key
    /// and open set in one batch, flushed and fsynced; then makes them visible.
    fn write_first_runs(
        &self,
        runs: &mut HistoryRuns,
        batch: history::HistoryBatch,
        open: OpenSetWrite,
    ) -> Result<(), StoreError> {
        let mut sink = |key: Vec<u8>, chunk: Vec<u8>| {
            self.ledger_tree().insert(key, chunk)?;
            Ok(())
        };
        let staged = runs.stage(batch, &mut sink)?;
        let mut marker = sled::Batch::default();
        for (key, value) in runs.marker_entries(&staged) {
            marker.insert(key, value);
        }
        open.add_to(&mut marker, &self.ledger_tree())?;
        self.ledger_tree().apply_batch(marker)?;
        self.sled.flush()?;
        fsync_tree(&self.path)?;
        runs.add(staged);
        Ok(())
    }
}
