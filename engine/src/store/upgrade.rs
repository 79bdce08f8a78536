//! Older data dirs brought to this layout when the store opens: the
//! disbursement runs filled from a dir that kept only blocks, and every
//! other kind moved from one sled key per record and index (orders,
//! webhook events and delivery attempts in data format 3; refunds,
//! settlements, beneficiaries and batches in format 4) into its blocks and
//! runs. Each step is whole or not at all: its runs' metadata
//! and format key go in one sled batch, flushed and fsynced, and a step cut
//! short is done again from the start at the next open.

use super::blocks::{self, BlockWriter, Location};
use super::checkpoint::fsync_tree;
use super::history::{self, Hashes, HistoryRuns, Indexed, Kind, LoadedOpenSet, OpenSetWrite};
use super::keys::KeyPrefix;
use super::record::decode_value;
use super::{corrupt_block, Store, StoreError};
use crate::domain::{
    Beneficiary, Disbursement, DisbursementBatch, Order, Refund, Settlement, WebhookAttempt, WebhookEvent,
};
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
            Kind::Orders => return self.move_keyed_orders_to_blocks(checkpoint),
            Kind::WebhookEvents => return self.move_keyed_events_to_blocks(checkpoint),
            Kind::WebhookAttempts => return self.move_keyed_attempts_to_blocks(checkpoint),
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

    /// Writes every checkpointed disbursement's index entries as the
    /// history's first runs, with the open set: the one time every block
    /// is read.
    pub(super) fn fill_disbursement_history(&self, checkpoint: u64) -> Result<(), StoreError> {
        let prefix = history::DISBURSEMENTS.blocks;
        let mut newest: HashMap<Uuid, (Disbursement, Location)> = HashMap::default();
        for item in self.ledger.scan_prefix([prefix.byte()]) {
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
            let version = Indexed {
                id: disbursement.id,
                merchant_id: disbursement.merchant_id,
                listed_under: disbursement.merchant_id,
                created_ms: disbursement.created_at_ms,
                new: true,
                terminal: disbursement.status.is_terminal(),
            };
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

    /// Moves the orders of a data dir that kept them as keys (format 3)
    /// into order blocks, indexed in the order runs, then removes the old
    /// keys.
    pub(super) fn move_keyed_orders_to_blocks(&self, checkpoint: u64) -> Result<(), StoreError> {
        let moved = self.move_keyed_to_blocks(Kind::Orders, KeyPrefix::Order, checkpoint, |order: &Order| {
            (Some(order.id), order_indexed(order, true), self.order_hashes(order))
        })?;
        self.remove_prefixes(&KEYED_ORDER_PREFIXES)?;
        if moved > 0 {
            tracing::info!(orders = moved, "orders kept as keys moved into order blocks");
        }
        Ok(())
    }

    /// The same for the webhook events of a data dir that kept them as keys.
    pub(super) fn move_keyed_events_to_blocks(&self, checkpoint: u64) -> Result<(), StoreError> {
        let moved = self.move_keyed_to_blocks(
            Kind::WebhookEvents,
            KeyPrefix::WebhookEvent,
            checkpoint,
            |event: &WebhookEvent| {
                let version = Indexed {
                    id: event.id,
                    merchant_id: event.merchant_id,
                    listed_under: event.merchant_id,
                    created_ms: event.occurred_at_ms,
                    new: false,
                    terminal: false,
                };
                (Some(event.id), version, history::NO_HASHES)
            },
        )?;
        self.remove_prefixes(&[KeyPrefix::WebhookEvent])?;
        if moved > 0 {
            tracing::info!(events = moved, "webhook events kept as keys moved into event blocks");
        }
        Ok(())
    }

    /// The same for delivery attempts, keyed by merchant, time, event and
    /// attempt: each gets an id as the applier draws one, in key order, so
    /// attempts of one millisecond keep their order.
    pub(super) fn move_keyed_attempts_to_blocks(&self, checkpoint: u64) -> Result<(), StoreError> {
        let moved = self.move_keyed_to_blocks(
            Kind::WebhookAttempts,
            KeyPrefix::WebhookAttempt,
            checkpoint,
            |attempt: &WebhookAttempt| {
                let version = Indexed {
                    id: Uuid::now_v7(),
                    merchant_id: attempt.merchant_id,
                    listed_under: attempt.merchant_id,
                    created_ms: attempt.attempted_at_ms,
                    new: true,
                    terminal: true,
                };
                (None, version, history::NO_HASHES)
            },
        )?;
        self.remove_prefixes(&[KeyPrefix::WebhookAttempt])?;
        if moved > 0 {
            tracing::info!(
                attempts = moved,
                "webhook delivery attempts kept as keys moved into attempt blocks"
            );
        }
        Ok(())
    }

    /// Moves every record under `record_prefix` into `kind`'s blocks under
    /// the last checkpoint's number and indexes each as `index` says (with
    /// the id its key must hold, `prefix`+id, when it is keyed by id);
    /// replay after the marker lays newer versions over them as usual.
    /// Returns how many moved.
    fn move_keyed_to_blocks<T: serde::de::DeserializeOwned>(
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
        for item in self.ledger.scan_prefix([prefix.byte()]).keys() {
            stale.remove(item?);
        }
        self.ledger.apply_batch(stale)?;
        let mut writer = BlockWriter::new(prefix, checkpoint);
        let mut versions = Vec::new();
        for item in self.ledger.scan_prefix([record_prefix.byte()]) {
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
                self.ledger.apply_batch(std::mem::take(&mut sink))?;
                pending = 0;
            }
        }
        self.ledger.apply_batch(sink)?;
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
            for key in self.ledger.scan_prefix([prefix.byte()]).keys() {
                batch.remove(key?);
                pending += 1;
                if pending == WRITES_PER_BATCH {
                    self.ledger.apply_batch(std::mem::take(&mut batch))?;
                    pending = 0;
                }
            }
            self.ledger.apply_batch(batch)?;
        }
        self.db.flush()?;
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
            self.ledger.insert(key, chunk)?;
            Ok(())
        };
        let staged = runs.stage(batch, &mut sink)?;
        let mut marker = sled::Batch::default();
        for (key, value) in runs.marker_entries(&staged) {
            marker.insert(key, value);
        }
        open.add_to(&mut marker, &self.ledger)?;
        self.ledger.apply_batch(marker)?;
        self.db.flush()?;
        fsync_tree(&self.path)?;
        runs.add(staged);
        Ok(())
    }
}

/// An order as the recent index and the runs take it.
pub(super) fn order_indexed(order: &Order, new: bool) -> Indexed {
    Indexed {
        id: order.id,
        merchant_id: order.merchant_id,
        listed_under: order.merchant_id,
        created_ms: order.created_at_ms,
        new,
        terminal: false,
    }
}

/// A refund as the recent index and the runs take it: listed under its
/// order. New to the index with every version (a refund's first version is
/// not always PENDING); one already indexed only writes the same entries.
pub(super) fn refund_indexed(refund: &Refund) -> Indexed {
    Indexed {
        id: refund.id,
        merchant_id: refund.merchant_id,
        listed_under: refund.order_id,
        created_ms: refund.created_at_ms,
        new: true,
        terminal: false,
    }
}

/// A settlement as the index takes it (`new`: its creation record).
pub(super) fn settlement_indexed(settlement: &Settlement, new: bool) -> Indexed {
    Indexed {
        id: settlement.id,
        merchant_id: settlement.merchant_id,
        listed_under: settlement.merchant_id,
        created_ms: settlement.created_at_ms,
        new,
        terminal: false,
    }
}

/// A beneficiary as the index takes it: every version is saved alike.
pub(super) fn beneficiary_indexed(beneficiary: &Beneficiary) -> Indexed {
    Indexed {
        id: beneficiary.id,
        merchant_id: beneficiary.merchant_id,
        listed_under: beneficiary.merchant_id,
        created_ms: beneficiary.created_at_ms,
        new: true,
        terminal: false,
    }
}

/// A batch as the index takes it (written once).
pub(super) fn batch_indexed(batch: &DisbursementBatch) -> Indexed {
    Indexed {
        id: batch.id,
        merchant_id: batch.merchant_id,
        listed_under: batch.merchant_id,
        created_ms: batch.created_at_ms,
        new: true,
        terminal: false,
    }
}
